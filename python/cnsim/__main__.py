"""``python -m cnsim`` = the ``cnsim`` command."""

from cnsim.cli_run import main

main()
