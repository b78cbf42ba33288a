"""Command line: ``cnsim run | validate | describe | list | schema | docs | demo``.

Exit status: 0 ok; 2 invalid input (one ``path: message (got value)`` line per problem on stderr,
no traceback, nothing written); 1 any other failure; 130 interrupted (Ctrl-C, nothing written).
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

import typer

from cnsim.cli.common import crash_log, err_console, guarded, os_error_line, out_console, parse_sets
from cnsim.cli.common import fail as _fail
from cnsim.cli.model import register as register_model_commands
from cnsim.cli.sweep import register as register_sweep_commands
from cnsim.compile.compiler import compile_ir_once
from cnsim.compile.loader import load_scenario
from cnsim.exceptions import CnsimError, ConfigError, ConfigWarning
from cnsim.results.outdir import check
from cnsim.scenario.presets import PRESETS
from cnsim.scenario.spec import Scenario

if TYPE_CHECKING:  # pragma: no cover — rich loads when a table is printed, not at import
    from rich.table import Table


class _LazyModule:
    """A module loaded on first use (``cnsim.api`` brings pyarrow): `--help`, `validate`, `describe`
    start without what they do not need."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        import importlib

        return getattr(importlib.import_module(self._name), attr)


api = _LazyModule("cnsim.api")
describe_mod = _LazyModule("cnsim.scenario.describe")  # the parameter reference: only `describe` and `docs`
schemes = _LazyModule("cnsim.schemes")

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="cnsim — packet-level simulator of congestion management in data-center Ethernet.",
)


def _version(value: bool) -> None:
    if value:
        from cnsim import (
            __version__,  # on first use: the version comes from the installed dist-info (cnsim/__init__.py)
        )

        out_console.print(f"cnsim {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _app_options(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="print the version and exit"
    ),
) -> None:
    """cnsim — packet-level simulator of congestion management in data-center Ethernet."""


MODEL_REFERENCE = (
    "§ = a section of the model reference, docs/model-reference.md in cnsim's source tree: the rules "
    "each mechanism follows, the readings chosen where the seeds are unclear (§12), their sources"
)
"""The line `describe` and `list` print under tables that cite the model reference."""

DEMO_SCENARIO = "seed-003/cnsim-1hop-none-hs0.5-pause.toml"
PROGRESS_AFTER_S = 1.5
"""A run shows its progress once it has lasted this long (s): short runs print nothing."""
PROGRESS_LINE_EVERY_S = 10.0
"""Off a terminal, a progress line at most this often (s)."""


def scenarios_dir() -> Path | None:
    """``./scenarios`` if present, else the repository's ``scenarios/`` beside the package."""
    for candidate in (Path.cwd() / "scenarios", Path(__file__).resolve().parents[3] / "scenarios"):
        if candidate.is_dir():
            return candidate
    return None


class ProgressReporter:
    """Progress of one run, shown once it has lasted ``after_s``: a rich bar over simulated time on a
    terminal, a plain line every ``every_s`` otherwise (a log file, a batch job); then the write phase
    (``writing``, called by :func:`cnsim.api.run` when the simulation has ended)."""

    def __init__(
        self,
        duration_s: float,
        enabled: bool,
        after_s: float = PROGRESS_AFTER_S,
        every_s: float = PROGRESS_LINE_EVERY_S,
        console: Any = None,
    ):
        self.duration_s = duration_s
        self.enabled = enabled
        self.after_s, self.every_s = after_s, every_s
        self.console = console  # None: stderr, made (rich imported) only once something is shown
        self.t0 = time.perf_counter()
        self.last = -float("inf")
        self.bar = None
        self.task = None

    def _console(self) -> Any:
        if self.console is None:
            self.console = err_console.console
        return self.console

    def _due(self) -> bool:
        return self.enabled and time.perf_counter() - self.t0 >= self.after_s

    def __call__(self, sim_s: float) -> None:
        if not self._due():
            return
        if self._console().is_terminal:
            self._bar("simulating", sim_s)
            return
        now = time.perf_counter()
        if now - self.last >= self.every_s:
            self.last = now
            elapsed = now - self.t0
            frac = sim_s / self.duration_s if self.duration_s else 1.0
            eta = f", ETA {elapsed / frac * (1 - frac):.0f} s" if frac > 0 else ""
            self._line(
                f"simulating: {sim_s * 1e3:.1f} / {self.duration_s * 1e3:.1f} ms ({100 * frac:.0f} %), "
                f"elapsed {elapsed:.0f} s{eta}"
            )

    def writing(self) -> None:
        """The simulation has ended; its tables are being written (one line or the bar's label)."""
        if not self._due():
            return
        if self._console().is_terminal:
            self._bar("writing outputs", self.duration_s)
        else:
            self._line(f"writing outputs (simulation took {time.perf_counter() - self.t0:.0f} s)")

    def _line(self, text: str) -> None:
        self._console().print(text, markup=False, highlight=False, soft_wrap=True)

    def _bar(self, label: str, sim_s: float) -> None:
        if self.bar is None:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[sim]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self._console(),
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task(label, total=self.duration_s, sim="")
        self.bar.update(
            self.task, description=label, completed=sim_s, sim=f"{sim_s * 1e3:.1f} / {self.duration_s * 1e3:.1f} ms"
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


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
            rows.append(
                (
                    f"PFC priority {k}",
                    f"{n:,} sent / {got:,} received; a port paused up to "
                    f"{100 * (frac[k] if k < len(frac) else 0.0):.2f} %",
                )
            )
    if not rows:
        rows.append(("PFC", "no pause frames"))
    if pfc.get("watchdog_trips") or pfc.get("headroom_drops"):
        rows.append(
            ("PFC watchdog / headroom drops", f"{pfc.get('watchdog_trips', 0):,} / {pfc.get('headroom_drops', 0):,}")
        )
    if pfc.get("cycles_detected"):
        first = pfc.get("first_cycle") or {}
        rows.append(
            (
                "PFC wait-for cycles",
                f"{pfc['cycles_detected']:,}; first at {1e3 * first.get('t_s', 0):.3f} ms: "
                + " → ".join(first.get("queues", [])[:6]),
            )
        )
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
    # generated = delivered + dropped + in flight + still queued at the sources (the engine checks it)
    t.add_row(
        "frames dropped / in flight / queued at hosts",
        f"{frames.get('dropped', 0):,} / {frames.get('in_flight', 0):,} / {frames.get('host_queued', 0):,}",
    )
    t.add_row("bytes delivered", f"{byts.get('delivered', 0):,}")
    t.add_row("aggregate throughput", f"{sum(f.get('throughput_bps', 0) for f in flows) / 1e9:.4f} Gb/s")
    queues = sorted(summary.get("queues", []), key=lambda q: -q.get("max_bytes", 0))
    for q in queues[:4]:
        if q.get("max_bytes", 0) == 0:
            continue
        t.add_row(
            f"queue {q.get('switch')} → {q.get('port')}",
            f"mean {q.get('mean_bytes', 0) / 1e3:.1f} KB, p99 {q.get('p99_bytes', 0) / 1e3:.1f} KB, "
            f"max {q.get('max_bytes', 0) / 1e3:.1f} KB, drops {q.get('drops', 0):,}",
        )
    marks = sum(q.get("ecn_marks", 0) for q in summary.get("queues", []))
    if marks:
        t.add_row("ECN marks", f"{marks:,}")
    pause = summary.get("pause", {})
    if pause:
        t.add_row(
            "hosts paused",
            f"{100 * pause.get('host_paused_fraction', 0):.2f} % ({pause.get('frames_sent', 0):,} PAUSE frames)",
        )
        if pause.get("deadlock"):
            t.add_row(
                "PAUSE deadlock", " → ".join(pause["deadlock"][:8]) + (" …" if len(pause["deadlock"]) > 8 else "")
            )
    for row in pfc_rows(summary.get("pfc")):
        t.add_row(*row)
    fct = summary.get("fct", {})
    if fct.get("count"):

        def us(k: str) -> str:
            v = fct.get(k)
            return "–" if v is None else f"{v:.1f}"

        t.add_row(
            "FCT",
            f"n {fct['count']:,}: min {us('min_us')}, mean {us('mean_us')}, "
            f"max {us('max_us')}, sd {us('std_us')} µs; bad {fct.get('bad_flows', 0):,}",
        )
    slow = (summary.get("fct_slowdown") or {}).get("all") or {}
    if slow.get("n"):
        t.add_row(
            "FCT slowdown", f"n {slow['n']:,}: p50 {slow['p50']:.2f}, p95 {slow['p95']:.2f}, p99 {slow['p99']:.2f}"
        )
    control = summary.get("control", {})
    if control.get("overhead_bps"):
        t.add_row("control overhead", f"{control['overhead_bps'] / 1e6:.3f} Mb/s")
    t.add_row("Jain's fairness", f"{summary.get('fairness', {}).get('jain', float('nan')):.4f}")
    for note in summary.get("notes") or []:
        t.add_row(
            "note",
            f"{note.get('from')} → {note.get('to')}: {100 * note.get('utilization', 0):.1f} % used, "
            f"{note.get('offered_bps', 0) / 1e9:.4g} Gb/s offered ({note.get('scheme')}; see the warning)",
        )
    return t


def _run(
    scenario: Any,
    seed: Optional[int],
    sets: list[str],
    out: Optional[Path],
    quiet: bool,
    as_json: bool,
    default_out: Callable[[Scenario], Path],
    force: bool = False,
    plots: bool = False,
    no_progress: bool = False,
) -> None:
    api.prefetch_provenance()  # the manifest's git describe and platform, beside validation and imports
    sc = api.resolve(scenario, seed, parse_sets(sets))
    target = out if out is not None else default_out(sc)
    check(target, force=force, scenario=scenario)  # before the simulation, with the --out field named
    reporter = ProgressReporter(sc.run.duration / 1e12, enabled=not (quiet or as_json or no_progress))
    try:
        result = api.run(sc, out=target, progress=reporter, force=force, plots=plots)
    finally:
        reporter.close()
    if as_json:
        sys.stdout.write(json.dumps(result.summary, indent=2, sort_keys=True) + "\n")
    elif not quiet:
        out_console.print(summary_table(result.summary))
        out_console.print(f"outputs: {target}", highlight=False)


@app.command()
@guarded
def run(
    scenario: Path = typer.Argument(..., metavar="SCENARIO", help="scenario TOML file"),
    seed: Optional[int] = typer.Option(None, "--seed", help="master seed (replaces run.seed)"),
    set_: list[str] = typer.Option(
        [], "--set", metavar="PATH=VALUE", help="override a scenario value (repeatable), e.g. run.duration=5ms"
    ),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="output directory (default results/<name>/)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bar and no summary table"),
    no_progress: bool = typer.Option(
        False, "--no-progress", help="no progress bar or progress lines (the summary table is still printed)"
    ),
    as_json: bool = typer.Option(False, "--json", help="print summary.json to stdout instead of the table"),
    force: bool = typer.Option(
        False,
        "--force",
        help="in a previous result that also holds files cnsim did not "
        "write, replace cnsim's files and keep the others (a folder that is not a cnsim "
        "result is never replaced)",
    ),
    plots: bool = typer.Option(
        False,
        "--plots",
        help="also draw plots/queue.png and plots/throughput.png "
        "(matplotlib; off by default so that short runs start fast)",
    ),
) -> None:
    """Run a scenario; write summary, manifest and Parquet tables (and plots with --plots) into the output directory."""
    _run(
        scenario,
        seed,
        set_,
        out,
        quiet,
        as_json,
        lambda sc: Path("results") / (sc.run.name or scenario.stem),
        force,
        plots,
        no_progress,
    )


@app.command()
@guarded
def validate(files: list[Path] = typer.Argument(..., metavar="SCENARIO", help="scenario TOML files")) -> None:
    """Check scenario files without running them, the engine's own checks included (exit 2 if any is invalid)."""

    bad: list[str] = []
    for f in files:
        try:
            api.engine_check(compile_ir_once(load_scenario(f)))
        except ConfigError as exc:
            # a problem of the file itself (unreadable, TOML syntax) already names the file
            bad += [str(p) if str(p).startswith(f"{f}:") else f"{f}: {p}" for p in exc.problems]
        else:
            out_console.print(f"ok  {f}", highlight=False)
    if bad:
        _fail(2, bad)


@app.command("describe")
@guarded
def describe_cmd(
    topic: Optional[str] = typer.Argument(
        None, metavar="[TOPIC]", help="section (run, traffic.cbr, ...), preset or scheme"
    ),
) -> None:
    """Parameters, units, defaults and descriptions of a section, preset or scheme."""
    from rich.markup import escape
    from rich.table import Table

    topics = describe_mod.topics()
    if topic is None:
        t = Table(title="cnsim describe TOPIC", show_header=True)
        t.add_column("topic")
        t.add_column("what")
        for name, (title, _) in topics.items():
            t.add_row(name, title)
        out_console.print(t)
        return
    chosen = [k for k in topics if k == topic] or [k for k in topics if k.startswith(topic + ".")]
    if not chosen:
        raise ConfigError.single("topic", f"unknown; known: {', '.join(topics)}", topic)
    cited = False
    for name in chosen:
        title, model = topics[name]
        doc = (model.__doc__ or "").strip().splitlines()
        t = Table(title=escape(title), caption=escape(doc[0].replace("``", "")) if doc else None)
        for col in ("key", "type", "default", "description"):
            t.add_column(col, overflow="fold")
        for row in describe_mod.rows(model):
            t.add_row(*(escape(str(c)) for c in row))
            cited = cited or "§" in str(row[-1])
        out_console.print(t)
    if cited or "§" in title:
        out_console.print(MODEL_REFERENCE, highlight=False)


@app.command("list")
@guarded
def list_cmd() -> None:
    """Congestion-management schemes, topology presets and scenario files."""
    from rich.table import Table

    try:
        engine_schemes = list(api.core().schemes())
        where = "engine"
    except CnsimError:
        engine_schemes, where = sorted(schemes.SCHEMES), "python registry; engine not built"
    t = Table(title=f"schemes ({where})")
    t.add_column("tag")
    t.add_column("summary")
    for tag in engine_schemes:
        t.add_row(tag, schemes.SCHEMES[tag].summary if tag in schemes.SCHEMES else "")
    out_console.print(t)
    t = Table(title="topology presets")
    t.add_column("preset")
    t.add_column("summary")
    for name, p in PRESETS.items():
        t.add_row(name, p.summary)
    out_console.print(t)
    out_console.print(MODEL_REFERENCE, highlight=False)
    root = scenarios_dir()
    if root is not None:
        t = Table(title=f"scenarios ({root})")
        t.add_column("file")
        for f in sorted(root.rglob("*.toml")):
            t.add_row(f.relative_to(root).as_posix())
        out_console.print(t)


@app.command()
@guarded
def schema() -> None:
    """JSON Schema of scenario files (for editors: Taplo, Even Better TOML)."""
    sys.stdout.write(json.dumps(Scenario.model_json_schema(), indent=2) + "\n")


@app.command()
@guarded
def docs(
    out: Path = typer.Option(
        Path("docs/reference"),
        "--out",
        help="directory for scenario.md (a scenario.md there is replaced only if cnsim generated it)",
    ),
) -> None:
    """Generate the scenario reference (scenario.md) from the models."""
    target = out / "scenario.md"
    if out.exists() and not out.is_dir():
        raise ConfigError.single("--out", "is a file, not a directory; nothing was overwritten", str(out))
    if target.exists() or target.is_symlink():
        try:
            with open(target, encoding="utf-8", errors="replace") as f:
                head = f.read(400)
        except OSError:
            head = ""
        if "Generated by `cnsim docs`" not in head:
            raise ConfigError.single(
                "--out",
                "holds a scenario.md that cnsim did not generate; nothing was replaced: choose another folder",
                str(out),
            )
    out.mkdir(parents=True, exist_ok=True)
    target.write_text(describe_mod.reference_markdown(), encoding="utf-8")
    out_console.print(f"wrote {out / 'scenario.md'}", highlight=False)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True}, add_help_option=False)
def statreg(ctx: typer.Context) -> None:
    """Statistical regression check of a change meant to alter trajectories: `statreg record FILE` samples the
    reference metrics with this build, `statreg check FILE` samples again and compares (exit 1 if a metric
    differs; `cnsim statreg --help`)."""

    from cnsim.cli.statreg import main as statreg_main  # its statistics and reference cases: by this command only

    raise typer.Exit(statreg_main(ctx.args))


@app.command()
@guarded
def selftest(
    quick: bool = typer.Option(False, "--quick", help="the first seed of each case only"),
    update: bool = typer.Option(
        False,
        "--update-fingerprints",
        help="rewrite the fingerprint file with this build's values and list the rows that changed",
    ),
    file: Optional[Path] = typer.Option(
        None, "--file", help="fingerprint CSV (default tests/fingerprints.csv of the repository)"
    ),
) -> None:
    """Fingerprint regression: short reference runs whose results must match tests/fingerprints.csv (exit 1 if not)."""

    from cnsim.experiments import selftest as st  # by this command only

    root = scenarios_dir()
    if root is None:
        raise CnsimError("selftest needs the repository's scenarios/ folder; run it from the repository")
    path = file if file is not None else root.parent / "tests" / "fingerprints.csv"
    if update and quick:
        raise ConfigError.single("--update-fingerprints", "rewrites every row; drop --quick")
    if not update and not path.exists():
        raise ConfigError.single("--file", "no such fingerprint file; create it with --update-fingerprints", str(path))
    old = st.read(path) if path.exists() else []  # before the runs: a file that is not one fails at once
    rows = st.compute(root, quick=quick)
    if update:
        st.write(path, rows)
        changes = st.compare(old, rows) if old else []
        for line in changes:
            out_console.print(line, markup=False, highlight=False, soft_wrap=True)
        out_console.print(
            f"wrote {path}: {len(rows)} rows" + (f", {len(changes)} changed" if old else " (new file)"),
            highlight=False,
            soft_wrap=True,
        )
        return
    problems = st.compare(old, rows, complete=not quick)
    if problems:
        _fail(1, [f"fingerprint changed: {p}" for p in problems])
    out_console.print(f"selftest: {len(rows)} runs match {path}", highlight=False)


@app.command()
@guarded
def demo(
    out: Path = typer.Option(
        Path("results/demo-run"), "--out", "-o", help="output directory (make demo's report lives in results/demo)"
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bar and no summary table"),
    no_progress: bool = typer.Option(False, "--no-progress", help="no progress bar or progress lines"),
) -> None:
    """Run the CN-SIM single-hop hotspot (0.5 Gb/s, selective PAUSE, no CM) and write its outputs."""
    root = scenarios_dir()
    if root is None or not (root / DEMO_SCENARIO).exists():
        raise CnsimError(f"demo scenario scenarios/{DEMO_SCENARIO} not found; run from the repository root")
    _run(root / DEMO_SCENARIO, None, [], out, quiet, False, lambda sc: out, plots=True, no_progress=no_progress)


register_sweep_commands(app)
register_model_commands(app)


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


def _terminate(signum, frame) -> None:  # noqa: ARG001 — signal handler signature
    raise KeyboardInterrupt  # SIGTERM unwinds like Ctrl-C: temporaries are removed, exit 130


def main() -> None:
    """Console entry point (``cnsim``)."""
    try:
        _run_app()
    except SystemExit as exc:
        _exit(exc.code)
    _exit(0)


def _run_app() -> None:
    import signal

    # pydantic looks for plugins in every installed distribution's entry points when it builds the
    # first model (5-10 ms of a short run); cnsim uses none. `PYDANTIC_DISABLE_PLUGINS=` (empty)
    # in the environment turns them back on.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):  # as cnsim.entry does (python -m cnsim)
        os.environ.setdefault(var, "1")
    _no_plugin_discovery()
    signal.signal(signal.SIGTERM, _terminate)
    warnings.showwarning = _show_config_warning
    try:
        app()
    except KeyboardInterrupt:
        err_console.print("interrupted; no output written")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 — outside a command (option parsing, callbacks): still one line
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

    stub = types.ModuleType(name, "pydantic's plugin loader while plugins are disabled (cnsim.cli.main)")

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


if __name__ == "__main__":  # pragma: no cover
    main()
