"""``python -m cnsim`` = the ``cnsim`` command."""

from cnsim.entry import main

main()
