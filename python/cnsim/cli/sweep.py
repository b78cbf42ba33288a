"""CLI commands ``sweep``, ``summarize``, ``plot``, ``reproduce`` and ``report`` (hooked in by ``register(app)``).

Exit status: 0 ok; 1 one or more runs failed (or another failure); 2 invalid input or a locked
output directory; 130 interrupted (finished runs are kept; rerun to resume).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from cnsim.cli.common import err_console, guarded_with, out_console, parse_sets
from cnsim.exceptions import ConfigError
from cnsim.results.outdir import check_sweep

#: Interrupted sweeps keep every finished run.
guarded = guarded_with("interrupted; finished runs are kept — rerun the same command to resume")


def sweep(
    spec_file: Path = typer.Argument(..., metavar="SWEEP.toml", help="sweep file (SWEEP.toml)"),
    out: Path = typer.Option(..., "--out", "-o", help="output directory (runs/<id>/, sweep.json)"),
    jobs: int = typer.Option(
        1, "--jobs", "-j", min=1, help="1: in-process; N: Dask LocalCluster of N workers on 127.0.0.1"
    ),
    scheduler: Optional[str] = typer.Option(
        None, "--scheduler", help="address of an existing Dask scheduler (tcp://host:8786)"
    ),
    force: bool = typer.Option(False, "--force", help="rerun every run, also finished ones"),
    dry_run: bool = typer.Option(
        False, "--dry-run", "-n", help="list the runs that would execute and why; run nothing"
    ),
    plots: bool = typer.Option(False, "--plots", help="also write per-run PNG plots (slower)"),
    no_progress: bool = typer.Option(False, "--no-progress", help="no progress bar or progress lines"),
    as_json: bool = typer.Option(False, "--json", help="print the outcome (counts, runs) as JSON on stdout"),
) -> None:
    """Run a parameter sweep with replications; resumable, parallel (Dask), output folder locked."""
    _sweep(spec_file, out, jobs, scheduler, force, dry_run, plots, no_progress, as_json)


@guarded
def _sweep(spec_file, out, jobs, scheduler, force, dry_run, plots, no_progress, as_json) -> None:
    from cnsim.experiments import sweep as sw  # builds pydantic models on import: by its commands only

    spec, root = sw.load_spec(spec_file)
    check_sweep(out)
    if dry_run:
        return _dry_run(sw, spec, root, out, force)
    outcome = sw.run_sweep(
        spec,
        out,
        root,
        jobs=jobs,
        scheduler=scheduler,
        force=force,
        progress=not no_progress and not as_json,
        plots=plots,
    )
    if as_json:
        sys.stdout.write(
            json.dumps(
                {
                    "out": str(out),
                    "total": outcome.total,
                    "executed": outcome.executed,
                    "skipped": outcome.skipped,
                    "failed": outcome.failed,
                    "runs": outcome.runs,
                },
                indent=2,
                default=str,
            )
            + "\n"
        )
    else:
        out_console.print(
            f"{outcome.total} runs: {outcome.executed} executed, {outcome.skipped} already done, "
            f"{outcome.failed} failed → {out}",
            highlight=False,
        )
        for e in outcome.runs:
            if e["status"] != "ok":
                err_console.print(
                    f"failed {e['id']} {e.get('parameters')} rep {e.get('replication')}: {e.get('error', '')}",
                    markup=False,
                    highlight=False,
                )
    if outcome.exit_code:
        raise typer.Exit(outcome.exit_code)


def _dry_run(sw, spec, root, out: Path, force: bool) -> None:
    """List the runs that would execute and why, as each point is resolved (a sweep of 10⁶ runs starts
    printing at once); the count first, the total last; invalid points as errors at the end (exit 2)."""

    n_points = spec.n_points()
    out_console.print(
        f"{n_points * spec.replications} runs ({n_points} points × {spec.replications} "
        "replications); those that would execute:",
        highlight=False,
    )
    write = sys.stdout.write
    todo = total = 0
    problems = []
    for runs, bad in sw.iter_expand(spec, root):
        problems += bad
        total += len(runs)
        for r, why in sw.plan(runs, out / "runs", force):
            params = ", ".join(f"{k}={v}" for k, v in r.parameters.items()) or "-"
            write(f"{r.run_id}  rep {r.replication}  {params}  ({why})\n")
            todo += 1
        sys.stdout.flush()
    if problems:
        raise ConfigError(problems)
    out_console.print(
        f"{todo} of {total} runs would execute ({n_points} points × {spec.replications} replications)", highlight=False
    )


def summarize(out: Path = typer.Argument(..., metavar="SWEEP_DIR", help="sweep output directory")) -> None:
    """Aggregate a sweep: summary.parquet / summary.csv (mean, std, 95 % CI half-width, n per point)."""
    _summarize(out)


@guarded
def _summarize(out: Path) -> None:
    from cnsim.experiments import sweep_summary as sws  # builds pydantic models on import: by its commands only

    pq, csv, table = sws.summarize(out)
    for msg in sws.run_problems(out):
        err_console.print(f"warning: {msg}", markup=False, highlight=False)
    n_points = (
        len(table.drop(columns=["metric", "mean", "std", "ci95", "n"]).drop_duplicates()) if not table.empty else 0
    )
    out_console.print(
        f"{n_points} points, {table['metric'].nunique() if not table.empty else 0} metrics → {pq}, {csv}",
        highlight=False,
    )


def reproduce(
    study: str = typer.Argument(..., metavar="STUDY", help="seed-000 … seed-004, or all"),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="parallel workers (Dask LocalCluster when > 1)"),
    quick: bool = typer.Option(False, "--quick", help="reduced configuration (fewer replications, shorter runs)"),
    out: Path = typer.Option(Path("results/reproduce"), "--out", "-o", help="output directory"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="existing Dask scheduler address"),
    force: bool = typer.Option(False, "--force", help="rerun finished runs"),
    no_progress: bool = typer.Option(False, "--no-progress", help="no progress bars"),
    set_: list[str] = typer.Option(
        [],
        "--set",
        metavar="PATH=VALUE",
        help="override of every sweep's base scenario (repeatable; e.g. cm.params.ru=1Mbps)",
    ),
    replications: Optional[int] = typer.Option(
        None, "--replications", min=1, help="replications per point instead of the study's"
    ),
    schemes: Optional[str] = typer.Option(
        None,
        "--schemes",
        help="comma-separated schemes whose sweeps take the "
        "--set overrides (default: every sweep); a scheme parameter cm.params.X "
        "exists only in its own scheme's sweeps",
    ),
) -> None:
    """Reproduce seed studies: run their sweeps, compare with the published numbers, write the report."""
    _reproduce(study, jobs, quick, out, scheduler, force, no_progress, set_, replications, schemes)


@guarded
def _reproduce(study, jobs, quick, out, scheduler, force, no_progress, set_, replications, schemes) -> None:
    from cnsim.experiments import reproduce as rp  # builds pydantic models on import: by its commands only

    if schemes is not None and not set_:
        raise ConfigError.single("--schemes", "needs --set PATH=VALUE (it says which sweeps take those overrides)")
    only = None if schemes is None else {s.strip() for s in schemes.split(",") if s.strip()}
    outcome = rp.reproduce(
        study,
        out,
        jobs=jobs,
        quick=quick,
        scheduler=scheduler,
        force=force,
        progress=not no_progress,
        log=lambda s: out_console.print(s, markup=False, highlight=False),
        overrides=parse_sets(set_) or None,
        replications=replications,
        override_schemes=only,
    )
    for line in rp.counts_lines(outcome["counts"], outcome["claim_counts"]):
        out_console.print(line, markup=False, highlight=False, soft_wrap=True)
    out_console.print(f"report: {outcome['report_html']}", highlight=False)
    out_console.print(f"        {outcome['report_md']}", highlight=False)
    if outcome["failed"]:
        raise typer.Exit(1)


def report(
    out: Path = typer.Argument(
        ..., metavar="DIR", help="directory written by `cnsim reproduce` (or a sweep directory)"
    ),
) -> None:
    """Write report.html (self-contained, offline) and report.md for a reproduction or sweep directory."""
    _report(out)


@guarded
def _report(out: Path) -> None:
    from cnsim.report import document as rep  # matplotlib and pandas: only for `cnsim report`

    html, md = rep.write_report(out)
    out_console.print(f"wrote {html}", highlight=False)
    out_console.print(f"wrote {md}", highlight=False)


def plot(
    sweep_dir: Path = typer.Argument(..., metavar="SWEEP_DIR", help="sweep output directory (from `cnsim sweep`)"),
    x: str = typer.Option(..., "--x", help="swept parameter on the x axis (numeric when its values have units)"),
    y: str = typer.Option(..., "--y", help="metric on the y axis (a name of summary.csv's metric column)"),
    hue: Optional[str] = typer.Option(None, "--hue", help="second swept parameter: one line per value"),
    out: Optional[Path] = typer.Option(
        None,
        "--out",
        "-o",
        help="PNG file to write (default: SWEEP_DIR/plots/<y>-vs-<x>.png); "
        "an existing file is replaced only if it is a plot cnsim drew",
    ),
) -> None:
    """Plot a sweep: mean ± 95 % CI of a metric against a parameter, numeric axes with units."""
    _plot(sweep_dir, x, y, hue, out)


@guarded
def _plot(sweep_dir, x, y, hue, out) -> None:
    from cnsim.experiments import sweep_summary as sws  # builds pydantic models on import: by its commands only
    from cnsim.report import sweep_plot  # matplotlib: only for `cnsim plot`

    if not (sweep_dir / "sweep.json").is_file():
        raise ConfigError.single(
            "SWEEP_DIR", "not a sweep directory (no sweep.json); run `cnsim sweep` first", str(sweep_dir)
        )
    if out is None:
        safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in f"{y}-vs-{x}")
        out = sweep_dir / "plots" / f"{safe}.png"
    if (out.exists() or out.is_symlink()) and not sweep_plot.is_own_plot(out):
        raise ConfigError.single(
            "--out", "exists and is not a plot cnsim drew; nothing was replaced: choose another file", str(out)
        )
    _, _, table = sws.summarize(sweep_dir)
    ax = sweep_plot.draw(table, x, y, hue)
    out.parent.mkdir(parents=True, exist_ok=True)
    sweep_plot.save(ax, out)
    out_console.print(f"wrote {out}", highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    """Add ``sweep``, ``summarize``, ``plot``, ``reproduce`` and ``report`` to the cnsim Typer app."""
    app.command("sweep")(sweep)
    app.command("summarize")(summarize)
    app.command("plot")(plot)
    app.command("reproduce")(reproduce)
    app.command("report")(report)
