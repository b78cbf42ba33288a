"""The consoles of the command line (rich, made on first use); no typer or click here, so that
``cnsim run`` on its fast path (:mod:`cnsim.cli_run`) can print through them without importing those."""

from __future__ import annotations

from typing import Any


class LazyConsole:
    """A rich ``Console`` made on first use: a quiet run that prints nothing does not import rich
    (about 30 ms of a short run's start-up). Attribute access is forwarded to the console."""

    def __init__(self, **options: Any):
        self._options = options
        self._console = None

    @property
    def console(self):
        """The rich Console itself (for rich objects that take one, e.g. ``Progress(console=...)``)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not set up (a copy): no console to forward to
            raise AttributeError(name)
        return getattr(self.console, name)


out_console = LazyConsole()
err_console = LazyConsole(stderr=True)
