"""The ``cnsim`` command (typer).

``main`` defines the app and the run commands (``run``, ``validate``, ``describe``, ``docs``, ``selftest``, ...)
and ``main()`` the entry after :mod:`cnsim.entry`, ``sweep`` the experiment commands (``sweep``, ``summarize``,
``plot``, ``reproduce``, ``report``), ``model`` the analytical model's commands, and ``common`` what they share
(consoles, the error guard that turns a ConfigError into one line and exit status 2, ``--set`` parsing).
``runner`` is what ``run`` and ``demo`` do once parsed and ``process`` the process around any command
(signals, warnings, exit), both without typer: ``quickrun`` runs the plain forms of ``cnsim run`` with them
and no typer.
"""
