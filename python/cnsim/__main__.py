"""``python -m cnsim`` = the ``cnsim`` command."""

from cnsim._entry import main

main()
