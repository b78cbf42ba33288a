"""``python -m cnsim`` = the ``cnsim`` command."""

from cnsim.cli import main

main()
