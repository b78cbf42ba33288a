"""The ``cnsim`` command's entry point: what must happen before anything heavy is imported.

``cnsim --version`` answers here without loading the CLI (typer, pydantic, the scenario models); every
other command goes to :func:`cnsim.cli.main`. Loading the CLI's modules takes a few tenths of a
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
        from cnsim import __version__

        print(f"cnsim {__version__}")
        return
    try:
        from cnsim.cli import main as cli_main
    except KeyboardInterrupt:
        # os._exit: the interpreter's own exit after a KeyboardInterrupt re-raises SIGINT (status -2)
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
        os._exit(130)
    cli_main()
