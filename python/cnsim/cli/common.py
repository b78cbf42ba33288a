"""Shared CLI plumbing: consoles and the error → exit-status mapping used by every command.

Exit status: 0 ok; 2 invalid input (one ``path: message (got value)`` line per problem, no
traceback) or any :class:`~cnsim.exceptions.CnsimError` whose ``exit_code`` is 2 (e.g. a locked
sweep directory); 1 any other failure; 130 interrupted.

No traceback reaches a user: an operating-system error (a full disk, a read-only folder) is one line
naming the path; any other unexpected error is one line naming the exception, and its traceback, the
command line and the versions go to a crash log (``$XDG_STATE_HOME/cnsim/`` or ``~/.local/state/cnsim/``,
else the system temp folder) whose path the line gives.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from cnsim.exceptions import CnsimError, ConfigError, InvariantError

UNWRAPPED_WIDTH = 10_000
"""Width of a console that is not a terminal (a pipe, a file): rich's 80 columns — or an inherited
``COLUMNS``, which describes some terminal, not the pipe — would split printed paths across lines and
cut table headers; a script or a log wants every line whole."""


def make_console(**options: Any):
    """A rich ``Console`` (``options`` as rich's) that wraps nothing when it does not write to a terminal
    (unless ``width`` says otherwise)."""
    from rich.console import Console

    console = Console(**options)
    if not console.is_terminal and "width" not in options:
        console.width = UNWRAPPED_WIDTH
    return console


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
            self._console = make_console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not set up (a copy): no console to forward to
            raise AttributeError(name)
        return getattr(self.console, name)


out_console = LazyConsole()
err_console = LazyConsole(stderr=True)


def fail(code: int, lines: list[str]) -> None:
    """Print ``lines`` on stderr (no markup) and exit with ``code`` (``SystemExit``, which typer passes
    on as it does its own ``typer.Exit``: this module works without typer, see :mod:`cnsim.cli.quickrun`)."""
    for line in lines:
        err_console.print(line, markup=False, highlight=False, soft_wrap=True)
    if code == 130:
        INTERRUPTIONS_SAID.extend(lines)
    raise SystemExit(code)


def _typer_control(exc: BaseException) -> bool:
    """``typer.Exit`` or ``typer.Abort`` (a command's own way out, passed on as it is); never when typer is
    not loaded (a plain ``cnsim run``), as nothing could have raised one."""
    typer = sys.modules.get("typer")
    return typer is not None and isinstance(exc, (typer.Exit, typer.Abort))


def crash_log(exc: BaseException) -> Path | None:
    """Write the traceback of an unexpected error, the command line and the versions to a new log file;
    its path (None if no folder is writable)."""
    from cnsim import __version__  # on first use: the version comes from the installed dist-info (cnsim/__init__.py)

    text = (
        f"cnsim {__version__}, Python {sys.version.split()[0]}, {sys.platform}\n"
        f"command: {' '.join(sys.argv)}\ncwd: {os.getcwd()}\ntime: {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n\n"
        + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    )
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    name = f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    for folder in (Path(state) / "cnsim", Path(tempfile.gettempdir()) / "cnsim"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / name
            path.write_text(text)
            return path
        except OSError:
            continue
    return None


def os_error_line(exc: OSError) -> str:
    """One line for an operating-system error: what failed and on which path."""
    what = exc.strerror or type(exc).__name__
    where = exc.filename if exc.filename is not None else ""
    return (
        f"error: {what}" + (f": {where}" if where != "" else "") + (f" (and {exc.filename2})" if exc.filename2 else "")
    )


#: Signals that have interrupted this process (:func:`on_interrupt`), and the interruption lines said
#: (:func:`fail` with status 130).
INTERRUPTS: list[int] = []
INTERRUPTIONS_SAID: list[str] = []


def on_interrupt(signum: int, frame: Any) -> None:  # noqa: ARG001 — signal handler signature
    """Ctrl-C (SIGINT) and SIGTERM unwind as ``KeyboardInterrupt`` (temporaries are removed, exit 130),
    and are noted: native code that calls back into Python — pydantic-core building a validator or
    running a serializer — may hand the ``KeyboardInterrupt`` on wrapped in an error of its own
    (``SchemaError``, ``PydanticSerializationError``), which is still the user's interruption."""
    INTERRUPTS.append(signum)
    raise KeyboardInterrupt


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
            except SystemExit:
                raise
            except Exception as exc:  # noqa: BLE001 — the last line of defence: never a traceback
                if _typer_control(exc):
                    raise
                if INTERRUPTS:  # a KeyboardInterrupt that a library wrapped (on_interrupt)
                    fail(130, [interrupted])
                import click

                if isinstance(exc, click.exceptions.ClickException):
                    raise
                if isinstance(exc, OSError):
                    fail(1, [os_error_line(exc)])
                log = crash_log(exc)
                where = f" (details in {log})" if log else ""
                fail(1, [f"error: {type(exc).__name__}: {exc}{where}"])

        return wrapper

    return decorate


#: For single runs: an interrupted run writes nothing.
guarded = guarded_with("interrupted; no output written")


def parse_sets(items: list[str]) -> dict[str, Any]:
    """``["a.b=1", ...]`` → ``{"a.b": 1}``; a malformed item is a ConfigError."""
    from cnsim.compile.loader import parse_value  # the scenario models: only once a value is parsed

    out: dict[str, Any] = {}
    for item in items:
        path, sep, value = item.partition("=")
        if not sep or not path.strip():
            raise ConfigError.single(f"--set {item}", "expected PATH=VALUE, e.g. run.duration=5ms")
        out[path.strip()] = parse_value(value.strip())
    return out
