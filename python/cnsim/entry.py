"""The ``cnsim`` command's entry point: what must happen before anything heavy is imported.

``cnsim --version`` answers here without loading the CLI (typer, pydantic, the scenario models); a plain
``cnsim run`` goes to :mod:`cnsim.cli.quickrun` (without typer), every other command to
:func:`cnsim.cli.main.main`. Loading the CLI's modules takes a few tenths of a
second: a Ctrl-C then is one line and exit status 130, as at any later moment, not a traceback.
"""

from __future__ import annotations

import gc
import os
import sys

ENVIRONMENT = {
    # numpy's OpenBLAS starts a thread per core that spins after each call: cnsim's array work is
    # small (a run's batches, sweeps' tables), and those threads took 6.5 % of a fan-in-100 run's CPU
    # from the engine and the writer
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    # pyarrow's default allocator (mimalloc) made the writer thread's Parquet writes 4x slower in about
    # one process in three (fan-in-100: 30-48 ms of writing against 8-13 ms, ending after the engine);
    # with the C library's allocator, 16 processes of 16 wrote in 9-13 ms
    "ARROW_DEFAULT_MEMORY_POOL": "system",
}
"""Environment the ``cnsim`` process sets before numpy and pyarrow load; the user's own settings win."""

YOUNG_GC_THRESHOLD = 100_000
"""Allocations between two passes of the cyclic garbage collector over the youngest objects, in ``cnsim run``
(Python's default: 700), set before anything but ``cnsim`` itself is imported. Its start-up makes some 65 000
objects that live until the process exits (modules, classes, the scenario's models and validators): at 700 the
collector went over them about 100 times, 15 ms of a 1-ms run (6 %), to free some 600 objects in cycles. The
run's own loop makes none (a 1-s fan-in-100 run left as many as a 1-ms one); any made later are collected at
this pace."""


def set_environment() -> None:
    for var, value in ENVIRONMENT.items():
        os.environ.setdefault(var, value)


def main() -> None:
    set_environment()
    if sys.argv[1:] == ["--version"]:
        from cnsim import __version__  # `cnsim --version` answers without loading the CLI

        print(f"cnsim {__version__}")
        return
    try:
        keywords = None
        run = sys.argv[1:2] == ["run"]
        if run:
            gc.set_threshold(YOUNG_GC_THRESHOLD, *gc.get_threshold()[1:])
        from cnsim.cli import codecache

        codecache.keep()  # before anything makes a dataclass or a string annotation
        if run:
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
