"""What ``cnsim run`` (and ``cnsim demo``) does once its arguments are parsed, without typer: resolve, run,
print the summary table or JSON; the progress reporter and the summary table.

Typer-free so that :mod:`cnsim.cli.quickrun` can run the plain forms of ``cnsim run`` without loading
typer (a tenth of a 1-ms run's start-up); :mod:`cnsim.cli.main` declares the ``run`` command's options
and calls :func:`run_command` too.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from cnsim.cli.common import err_console, out_console, parse_sets
from cnsim.results.outdir import check

if TYPE_CHECKING:  # pragma: no cover — rich loads when a table is printed, not at import
    from rich.table import Table

    from cnsim.scenario.spec import Scenario


PROGRESS_AFTER_S = 1.5
"""A run shows its progress once it has lasted this long (s): short runs print nothing."""
PROGRESS_LINE_EVERY_S = 10.0
"""Off a terminal, a progress line at most this often (s)."""


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
        self.bar: Any = None  # a rich Progress once shown
        self.task: Any = None

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


def run_scenario(
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
    """Resolve ``scenario`` with ``seed`` and ``--set`` items ``sets``, check the output folder (``out``,
    else ``default_out`` of the scenario) before the simulation, run it with a progress reporter, then
    print the summary table (or summary.json with ``as_json``; nothing with ``quiet``)."""
    from cnsim import api  # the scenario models and the engine's API: once a run has been asked for

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
        from cnsim.results.result import indented_json

        sys.stdout.write(indented_json(result.summary) + "\n")
    elif not quiet:
        out_console.print(summary_table(result.summary))
        out_console.print(f"outputs: {target}", highlight=False)


def run_command(
    scenario: Path,
    seed: Optional[int] = None,
    sets: Optional[list[str]] = None,
    out: Optional[Path] = None,
    quiet: bool = False,
    no_progress: bool = False,
    as_json: bool = False,
    force: bool = False,
    plots: bool = False,
) -> None:
    """``cnsim run SCENARIO [options]`` (the options as :func:`cnsim.cli.main.run` declares them); the
    default output folder is ``results/<run.name or the file's stem>``."""
    run_scenario(
        scenario,
        seed,
        sets or [],
        out,
        quiet,
        as_json,
        lambda sc: Path("results") / (sc.run.name or scenario.stem),
        force,
        plots,
        no_progress,
    )
