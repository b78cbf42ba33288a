"""The ``cnsim`` command's entry point: what must happen before anything heavy is imported.

``cnsim --version`` answers here without loading the CLI (typer, pydantic, the scenario models); a plain
``cnsim run`` goes to :mod:`cnsim.cli.quickrun` (without typer), every other command to
:func:`cnsim.cli.main.main`. Loading the CLI's modules takes a few tenths of a
second: a Ctrl-C then is one line and exit status 130, as at any later moment, not a traceback.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    # numpy's OpenBLAS starts a thread per core that spins after each call: cnsim's array work is
    # small (a run's batches, sweeps' tables), and those threads took 6.5 % of a fan-in-100 run's CPU
    # from the engine and the writer. Set before numpy loads; the user's own setting wins.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    if sys.argv[1:] == ["--version"]:
        from cnsim import __version__  # `cnsim --version` answers without loading the CLI

        print(f"cnsim {__version__}")
        return
    try:
        keywords = None
        if sys.argv[1:2] == ["run"]:
            from cnsim.cli import quickrun  # `cnsim run` in its plain forms runs without typer

            keywords = quickrun.plain_run(sys.argv[2:])
        if keywords is not None:
            command = quickrun.command(keywords)
        else:
            from cnsim.cli.main import main as command  # typer, pydantic, the scenario models: after --version
    except KeyboardInterrupt:
        # os._exit: the interpreter's own exit after a KeyboardInterrupt re-raises SIGINT (status -2)
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
        os._exit(130)
    command()
