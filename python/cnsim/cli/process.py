"""The ``cnsim`` process around a command: environment, signals, warnings, the last-resort error lines
and a fast exit. Shared by the typer app (:func:`cnsim.cli.main.main`) and the plain ``cnsim run``
forms that run without typer (:mod:`cnsim.cli.quickrun`), so both behave alike.
"""

from __future__ import annotations

import os
import signal
import sys
import warnings
from typing import Any, Callable

from cnsim.cli.common import INTERRUPTIONS_SAID, INTERRUPTS, crash_log, err_console, on_interrupt, os_error_line
from cnsim.exceptions import ConfigWarning


def _show_config_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Configuration warnings as one line naming the field; other warnings as Python prints them."""

    if issubclass(category, ConfigWarning):
        text = str(message)
        if text not in _SHOWN:  # once per process: sweeps compile the same scenario for every point
            _SHOWN.add(text)
            err_console.print(f"warning: {text}", markup=False, highlight=False, soft_wrap=True)
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


_default_showwarning = warnings.showwarning
_SHOWN: set[str] = set()


def main(command: Callable[[], Any]) -> None:
    """Run ``command`` (the typer app, or a plain ``cnsim run`` parsed by :mod:`cnsim.cli.quickrun`) in the
    process as set up here, and end the process with its exit status (:func:`_exit`)."""
    try:
        _run_app(command)
    except SystemExit as exc:
        _exit(exc.code)
    _exit(0)


def _run_app(command: Callable[[], Any]) -> None:
    # pydantic looks for plugins in every installed distribution's entry points when it builds the
    # first model (5-10 ms of a short run); cnsim uses none. `PYDANTIC_DISABLE_PLUGINS=` (empty)
    # in the environment turns them back on.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from cnsim.entry import set_environment  # as cnsim.entry does (python -m cnsim)

    set_environment()
    _no_plugin_discovery()
    # SIGTERM unwinds like Ctrl-C; both are noted (cnsim.cli.common.on_interrupt)
    signal.signal(signal.SIGTERM, on_interrupt)
    signal.signal(signal.SIGINT, on_interrupt)
    sys.unraisablehook = _on_unraisable
    warnings.showwarning = _show_config_warning
    try:
        command()
    except SystemExit as exc:
        # typer ends a KeyboardInterrupt raised outside a command's guard (while it parses the command
        # line, or a module the command imports loads) with status 130 and not a word: the one line
        if exc.code == 130 and not INTERRUPTIONS_SAID:
            err_console.print("interrupted; no output written")
        raise
    except KeyboardInterrupt:
        err_console.print("interrupted; no output written")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 — outside a command (option parsing, callbacks): still one line
        if INTERRUPTS:  # a KeyboardInterrupt that a library wrapped
            err_console.print("interrupted; no output written")
            sys.exit(130)
        if isinstance(exc, OSError):
            err_console.print(os_error_line(exc), markup=False, highlight=False, soft_wrap=True)
            sys.exit(1)
        log = crash_log(exc)
        err_console.print(
            f"error: {type(exc).__name__}: {exc}" + (f" (details in {log})" if log else ""),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        sys.exit(1)


def _on_unraisable(unraisable: Any) -> None:
    """A Ctrl-C that lands while Python runs a callback no caller waits for (a weakref callback such as
    the import system's module-lock clean-up, a ``__del__``, the garbage collector) cannot unwind from
    there: Python would print it as "Exception ignored in ..." with its traceback and carry on, the
    user's interruption lost (seen once in about 150 tries, 0.14 s into a ``cnsim sweep`` under load).
    Instead a helper thread delivers the signal again 5 ms later, once this hook has returned, and the
    command's guard gives the one line and status 130 (should it land in such a callback again, it comes
    back here). Any other unraisable exception is reported as Python reports it."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        import threading

        signum = signal.Signals(INTERRUPTS[-1]) if INTERRUPTS else signal.SIGINT
        try:
            threading.Thread(target=_interrupt_main_soon, args=(signum,), daemon=True).start()
        except RuntimeError:  # no new thread while the interpreter shuts down: the process is ending anyway
            pass
        return
    sys.__unraisablehook__(unraisable)


def _interrupt_main_soon(signum: signal.Signals) -> None:
    import _thread
    import time

    time.sleep(0.005)
    _thread.interrupt_main(signum)


def _no_plugin_discovery() -> None:
    """With pydantic's plugins disabled for the whole process (``PYDANTIC_DISABLE_PLUGINS=__all__``,
    ``1`` or ``true``), its plugin loader returns no plugins without looking; but importing that
    loader (``pydantic.plugin._loader``, when the first model is built) imports
    ``importlib.metadata`` (email, zipfile, csv, socket, ...): about 8 % of the instructions of a
    1-ms run. Here the loader is a module whose ``get_plugins()`` returns no plugins, as the real one
    does in this mode; any other name is taken from the real loader, imported then."""
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in ("__all__", "1", "true"):
        return
    name = "pydantic.plugin._loader"
    if name in sys.modules:
        return
    import types

    stub = types.ModuleType(name, "pydantic's plugin loader while plugins are disabled (cnsim.cli.process)")

    def get_plugins() -> tuple[()]:
        return ()

    def real(attr: str) -> Any:  # anything else pydantic may ask for: the real module
        import importlib

        if attr.startswith("__"):  # the import system probing a module (`__path__`, ...)
            raise AttributeError(attr)
        del sys.modules[name]
        return getattr(importlib.import_module(name), attr)

    stub.get_plugins = get_plugins  # type: ignore[attr-defined]
    stub.__getattr__ = real  # type: ignore[method-assign]
    sys.modules[name] = stub


def _exit(code: Any) -> None:
    """End the process with ``code`` (as ``sys.exit`` takes it) without the interpreter's teardown.

    Freeing every module and object at exit (pydantic's schemas, pyarrow, numpy) cost about 0.1 s of
    CPU time, a sixth of a short run, for memory the operating system reclaims anyway. Everything else
    an exit does still happens: the ``atexit`` handlers run and stdout/stderr are flushed (a failed flush
    exits with 120, as Python does). With other threads still running, the normal exit joins them
    (daemon threads, which neither exit waits for, do not count).
    """
    import atexit
    import signal
    import threading

    if any(t is not threading.main_thread() and not t.daemon for t in threading.enumerate()):
        sys.exit(code)  # a daemon thread (api.prefetch_provenance) is not waited for by either exit
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # no KeyboardInterrupt from here on
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): printed, status 1
        sys.stderr.write(f"{code}\n")
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # noqa: BLE001 — e.g. a closed pipe: Python exits with 120 then
            status = status or 120
    os._exit(status & 0xFF)
