"""``cnsim run`` without typer: the run itself (shared by the typer command in :mod:`cnsim.cli`), the
process set-up and exit of every command, and the entry point ``cnsim`` (``main``).

A plain ``cnsim run SCENARIO [--seed N] [--set P=V]... [-o DIR] [-q] [--json] [--force] [--plots]``
is parsed here and run without importing typer and click and building the command tree (about 8 %
of the instructions of a 1-ms run); every other command line -- another command, ``--help``, an
option spelled ``--out=DIR``, anything unusual -- goes to the typer application, which parses it
as before. Both paths call :func:`run_scenario` with the same values and map errors to the same
messages and exit statuses (``cnsim.cli_common.guarded``, imported when an error is to be reported).
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from cnsim.console import err_console, out_console
from cnsim.exceptions import ConfigError
from cnsim.loader import parse_value

if TYPE_CHECKING:  # pragma: no cover — rich loads when a table is printed, not at import
    from rich.table import Table

    from cnsim.scenario import Scenario

PROGRESS_AFTER_S = 1.5


def parse_sets(items: list[str]) -> dict[str, Any]:
    """``["a.b=1", ...]`` → ``{"a.b": 1}``; a malformed item is a ConfigError."""
    out: dict[str, Any] = {}
    for item in items:
        path, sep, value = item.partition("=")
        if not sep or not path.strip():
            raise ConfigError.single(f"--set {item}", "expected PATH=VALUE, e.g. run.duration=5ms")
        out[path.strip()] = parse_value(value.strip())
    return out


class ProgressReporter:
    """Rich progress bar over simulated time, shown only once a run has lasted a moment."""

    def __init__(self, duration_s: float, enabled: bool):
        self.duration_s = duration_s
        self.enabled = enabled and err_console.is_terminal
        self.t0 = time.perf_counter()
        self.progress = None
        self.task = None

    def __call__(self, sim_s: float) -> None:
        if not self.enabled:
            return
        if self.progress is None:
            if time.perf_counter() - self.t0 < PROGRESS_AFTER_S:
                return
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self.progress = Progress(TextColumn("simulating"), BarColumn(), TextColumn("{task.fields[sim]}"),
                                     TimeElapsedColumn(), TimeRemainingColumn(), console=err_console.console,
                                     transient=True)
            self.progress.start()
            self.task = self.progress.add_task("run", total=self.duration_s, sim="")
        self.progress.update(self.task, completed=sim_s, sim=f"{sim_s * 1e3:.1f} / {self.duration_s * 1e3:.1f} ms")

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def pfc_rows(pfc: dict[str, Any] | None) -> list[tuple[str, str]]:
    """Run-summary rows of 802.1Qbb PFC (summary ``pfc``): per priority that paused, frames sent /
    received and the largest paused fraction of a port; watchdog, headroom drops, cycles."""
    if not pfc:
        return []
    rows = []
    sent, recv, frac = pfc.get("pause_sent", []), pfc.get("pause_received", []), pfc.get("max_paused_fraction", [])
    for k, n in enumerate(sent):
        got = recv[k] if k < len(recv) else 0
        if n or got:
            rows.append((f"PFC priority {k}", f"{n:,} sent / {got:,} received; a port paused up to "
                         f"{100 * (frac[k] if k < len(frac) else 0.0):.2f} %"))
    if not rows:
        rows.append(("PFC", "no pause frames"))
    if pfc.get("watchdog_trips") or pfc.get("headroom_drops"):
        rows.append(("PFC watchdog / headroom drops", f"{pfc.get('watchdog_trips', 0):,} / {pfc.get('headroom_drops', 0):,}"))
    if pfc.get("cycles_detected"):
        first = pfc.get("first_cycle") or {}
        rows.append(("PFC wait-for cycles", f"{pfc['cycles_detected']:,}; first at {1e3 * first.get('t_s', 0):.3f} ms: "
                     + " → ".join(first.get("queues", [])[:6])))
    return rows


def summary_table(summary: dict[str, Any]) -> Table:
    """The headline metrics of a run as a rich table."""
    from rich.table import Table

    t = Table(title=f"cnsim — {summary.get('scenario')} (seed {summary.get('seed')})", show_header=False)
    t.add_column("metric", style="bold")
    t.add_column("value", justify="right")
    frames, byts = summary.get("frames", {}), summary.get("bytes", {})
    flows = summary.get("flows", [])
    t.add_row("simulated / wall", f"{summary.get('sim_time_s', 0):.4g} s / {summary.get('wall_s', 0):.3g} s")
    t.add_row("events", f"{summary.get('events', 0):,}")
    t.add_row("frames generated / delivered", f"{frames.get('generated', 0):,} / {frames.get('delivered', 0):,}")
    t.add_row("frames dropped / in flight", f"{frames.get('dropped', 0):,} / {frames.get('in_flight', 0):,}")
    t.add_row("bytes delivered", f"{byts.get('delivered', 0):,}")
    t.add_row("aggregate throughput", f"{sum(f.get('throughput_bps', 0) for f in flows) / 1e9:.4f} Gb/s")
    queues = sorted(summary.get("queues", []), key=lambda q: -q.get("max_bytes", 0))
    for q in queues[:4]:
        if q.get("max_bytes", 0) == 0:
            continue
        t.add_row(f"queue {q.get('switch')} → {q.get('port')}",
                  f"mean {q.get('mean_bytes', 0) / 1e3:.1f} KB, p99 {q.get('p99_bytes', 0) / 1e3:.1f} KB, "
                  f"max {q.get('max_bytes', 0) / 1e3:.1f} KB, drops {q.get('drops', 0):,}")
    marks = sum(q.get("ecn_marks", 0) for q in summary.get("queues", []))
    if marks:
        t.add_row("ECN marks", f"{marks:,}")
    pause = summary.get("pause", {})
    if pause:
        t.add_row("hosts paused", f"{100 * pause.get('host_paused_fraction', 0):.2f} % "
                  f"({pause.get('frames_sent', 0):,} PAUSE frames)")
        if pause.get("deadlock"):
            t.add_row("PAUSE deadlock", " → ".join(pause["deadlock"][:8]) + (" …" if len(pause["deadlock"]) > 8 else ""))
    for row in pfc_rows(summary.get("pfc")):
        t.add_row(*row)
    fct = summary.get("fct", {})
    if fct.get("count"):
        def us(k: str) -> str:
            v = fct.get(k)
            return "–" if v is None else f"{v:.1f}"

        t.add_row("FCT", f"n {fct['count']:,}: min {us('min_us')}, mean {us('mean_us')}, "
                  f"max {us('max_us')}, sd {us('std_us')} µs; bad {fct.get('bad_flows', 0):,}")
    slow = (summary.get("fct_slowdown") or {}).get("all") or {}
    if slow.get("n"):
        t.add_row("FCT slowdown", f"n {slow['n']:,}: p50 {slow['p50']:.2f}, p95 {slow['p95']:.2f}, p99 {slow['p99']:.2f}")
    control = summary.get("control", {})
    if control.get("overhead_bps"):
        t.add_row("control overhead", f"{control['overhead_bps'] / 1e6:.3f} Mb/s")
    t.add_row("Jain's fairness", f"{summary.get('fairness', {}).get('jain', float('nan')):.4f}")
    return t


def run_scenario(scenario: Any, seed: Optional[int], sets: list[str], out: Optional[Path], quiet: bool,
                 as_json: bool, fallback_out: Callable[[Scenario], Path], force: bool = False,
                 plots: bool = False) -> None:
    """``cnsim run`` (and ``cnsim demo``): resolve, check the output folder, run, print; errors raised
    (the caller maps them to messages and exit statuses). ``fallback_out``: the folder without ``-o``."""
    from cnsim import api
    from cnsim.outdir import check

    sc = api.resolve(scenario, seed, parse_sets(sets))
    target = out if out is not None else fallback_out(sc)
    check(target, force=force, scenario=scenario)  # before the simulation, with the --out field named
    reporter = ProgressReporter(sc.run.duration / 1e12, enabled=not quiet and not as_json)
    try:
        result = api.run(sc, out=target, progress=reporter, force=force, plots=plots)
    finally:
        reporter.close()
    if as_json:
        sys.stdout.write(json.dumps(result.summary, indent=2, sort_keys=True) + "\n")
    elif not quiet:
        out_console.print(summary_table(result.summary))
        out_console.print(f"outputs: {target}", highlight=False)


def _show_config_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Configuration warnings as one line naming the field; other warnings as Python prints them."""
    from cnsim.exceptions import ConfigWarning

    if issubclass(category, ConfigWarning):
        text = str(message)
        if text not in _SHOWN:  # once per process: sweeps compile the same scenario for every point
            _SHOWN.add(text)
            err_console.print(f"warning: {text}", markup=False, highlight=False, soft_wrap=True)
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


_default_showwarning = warnings.showwarning
_SHOWN: set[str] = set()


def _terminate(signum, frame) -> None:  # noqa: ARG001 — signal handler signature
    raise KeyboardInterrupt  # SIGTERM unwinds like Ctrl-C: temporaries are removed, exit 130


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

    stub = types.ModuleType(name, "pydantic's plugin loader while plugins are disabled (cnsim.cli)")

    def get_plugins() -> tuple[()]:
        return ()

    def real(attr: str) -> Any:  # anything else pydantic may ask for: the real module
        import importlib

        if attr.startswith("__"):  # the import system probing a module (`__path__`, ...)
            raise AttributeError(attr)
        del sys.modules[name]
        return getattr(importlib.import_module(name), attr)

    stub.get_plugins = get_plugins  # type: ignore[attr-defined]
    stub.__getattr__ = real  # type: ignore[attr-defined]
    sys.modules[name] = stub


def _exit(code: Any) -> None:
    """End the process with ``code`` (as ``sys.exit`` takes it) without the interpreter's teardown.

    Freeing every module and object at exit (pydantic's schemas, pyarrow, numpy) cost about 0.1 s of
    CPU time, a sixth of a short run, for memory the operating system reclaims anyway. Everything else
    an exit does still happens: the ``atexit`` handlers run and stdout/stderr are flushed (a failed flush
    exits with 120, as Python does). With other threads still running, the normal exit joins them.
    """
    import atexit
    import signal
    import threading

    if threading.active_count() > 1:
        sys.exit(code)
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


_FLAGS = {"-q": "quiet", "--quiet": "quiet", "--json": "as_json", "--force": "force", "--plots": "plots"}
_VALUED = {"--seed": "seed", "--set": "sets", "-o": "out", "--out": "out"}


def parse_plain_run(argv: list[str]) -> dict[str, Any] | None:
    """The arguments of a plain ``run`` command line as :func:`run_scenario` takes them, or None for
    anything else (typer parses it then): options only in their spaced form, each value not starting
    with ``-``, ``--seed`` in decimal digits, ``--seed`` and ``--out`` at most once, one scenario."""
    if not argv or argv[0] != "run":
        return None
    args: dict[str, Any] = {"scenario": None, "seed": None, "sets": [], "out": None, "quiet": False,
                            "as_json": False, "force": False, "plots": False}
    seen: set[str] = set()
    i = 1
    while i < len(argv):
        tok = argv[i]
        if tok in _FLAGS:
            args[_FLAGS[tok]] = True
        elif tok in _VALUED:
            key = _VALUED[tok]
            if i + 1 >= len(argv) or not argv[i + 1] or argv[i + 1].startswith("-") or (key != "sets" and key in seen):
                return None
            value = argv[i + 1]
            if key == "seed":
                if not (value.isascii() and value.isdigit()):
                    return None
                args["seed"] = int(value)
            elif key == "sets":
                args["sets"].append(value)
            else:
                args["out"] = Path(value)
            seen.add(key)
            i += 1
        elif tok and not tok.startswith("-") and args["scenario"] is None:
            args["scenario"] = Path(tok)
        else:
            return None
        i += 1
    return args if args["scenario"] is not None else None


def default_out(scenario: Path) -> Callable[[Scenario], Path]:
    """``results/<run.name or file stem>``: where ``cnsim run`` writes without ``--out``."""
    return lambda sc: Path("results") / (sc.run.name or scenario.stem)


def _run_plain(args: dict[str, Any]) -> int:
    """``run`` with parsed arguments; errors reported as the typer command reports them. Exit status."""
    try:
        run_scenario(args["scenario"], args["seed"], args["sets"], args["out"], args["quiet"], args["as_json"],
                     default_out(args["scenario"]), args["force"], args["plots"])
        return 0
    except (Exception, KeyboardInterrupt) as exc:
        import typer

        from cnsim.cli_common import guarded

        error = exc

        def reraise() -> None:
            raise error

        try:
            guarded(reraise)()
        except typer.Exit as done:  # what typer's main turns into the exit status
            return done.exit_code
        raise AssertionError("unreachable: guarded ends every error in typer.Exit") from exc  # pragma: no cover


def prepare_process() -> None:
    """What every command sets up first: no pydantic plugin discovery, SIGTERM unwinding like Ctrl-C,
    configuration warnings as one line."""
    import signal

    # pydantic looks for plugins in every installed distribution's entry points when it builds the
    # first model (5-10 ms of a short run); cnsim uses none. `PYDANTIC_DISABLE_PLUGINS=` (empty)
    # in the environment turns them back on.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    _no_plugin_discovery()
    signal.signal(signal.SIGTERM, _terminate)
    warnings.showwarning = _show_config_warning


def main() -> None:
    """Console entry point (``cnsim``): a plain ``run`` here, any other command line through typer."""
    args = parse_plain_run(sys.argv[1:])
    if args is None:
        from cnsim.cli import main as typer_main

        typer_main()
        return
    try:
        prepare_process()
        code = _run_plain(args)
    except SystemExit as exc:
        _exit(exc.code)
    _exit(code)
