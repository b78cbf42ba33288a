"""The ``cnsim`` command's entry point.

Loading the CLI's modules (typer, rich, the scenario models) takes a few tenths of a second; a Ctrl-C
then is one line and exit status 130, as at any later moment (:func:`cnsim.cli.main`), not a traceback.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    """Console entry point (``cnsim``, ``python -m cnsim``)."""
    try:
        from cnsim.cli import main as cli_main
    except KeyboardInterrupt:
        # os._exit: the interpreter's own exit after a KeyboardInterrupt re-raises SIGINT (status -2)
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
        os._exit(130)
    cli_main()
