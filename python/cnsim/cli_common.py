"""Shared CLI plumbing: consoles and the error → exit-status mapping used by every command.

Exit status: 0 ok; 2 invalid input (one ``path: message (got value)`` line per problem, no
traceback) or any :class:`~cnsim.exceptions.CnsimError` whose ``exit_code`` is 2 (e.g. a locked
sweep directory); 1 any other failure; 130 interrupted.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import typer
from rich.console import Console

from cnsim.exceptions import CnsimError, ConfigError, InvariantError

out_console = Console()
err_console = Console(stderr=True)


def fail(code: int, lines: list[str]) -> None:
    """Print ``lines`` on stderr (no markup) and exit with ``code``."""
    for line in lines:
        err_console.print(line, markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def guarded_with(interrupted: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator mapping cnsim errors to exit codes; ``interrupted`` is the Ctrl-C message."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except ConfigError as exc:
                fail(2, [str(p) for p in exc.problems])
            except KeyboardInterrupt:  # includes RunInterrupted
                fail(130, [interrupted])
            except InvariantError as exc:
                fail(1, [f"invariant violation (a model bug, please report): {exc}"])
            except CnsimError as exc:
                fail(getattr(exc, "exit_code", 1), [f"error: {exc}"])

        return wrapper

    return decorate


#: For single runs: an interrupted run writes nothing.
guarded = guarded_with("interrupted; no output written")
