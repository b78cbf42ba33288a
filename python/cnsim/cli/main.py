"""Command line: ``cnsim run | validate | describe | list | schema | docs | demo``.

Exit status: 0 ok; 2 invalid input (one ``path: message (got value)`` line per problem on stderr,
no traceback, nothing written); 1 any other failure; 130 interrupted (Ctrl-C, nothing written).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from cnsim.cli import process
from cnsim.cli.common import fail as _fail
from cnsim.cli.common import guarded, out_console
from cnsim.cli.model import register as register_model_commands
from cnsim.cli.process import _exit, _no_plugin_discovery  # noqa: F401 — part of this module's interface
from cnsim.cli.runner import (  # noqa: F401 — ProgressReporter, pfc_rows, summary_table: part of this module's interface
    ProgressReporter,
    pfc_rows,
    run_command,
    run_scenario,
    summary_table,
)
from cnsim.cli.sweep import register as register_sweep_commands
from cnsim.compile.compiler import compile_ir_once
from cnsim.compile.loader import load_scenario
from cnsim.exceptions import CnsimError, ConfigError
from cnsim.scenario.presets import PRESETS
from cnsim.scenario.spec import Scenario


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


def scenarios_dir() -> Path | None:
    """``./scenarios`` if present, else the repository's ``scenarios/`` beside the package."""
    for candidate in (Path.cwd() / "scenarios", Path(__file__).resolve().parents[3] / "scenarios"):
        if candidate.is_dir():
            return candidate
    return None


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
    run_command(scenario, seed, set_, out, quiet, no_progress, as_json, force, plots)


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
    run_scenario(root / DEMO_SCENARIO, None, [], out, quiet, False, lambda sc: out, plots=True, no_progress=no_progress)


register_sweep_commands(app)
register_model_commands(app)


def main() -> None:
    """Console entry point (``cnsim``) after :mod:`cnsim.entry`: the typer app, with the process set up
    and every exit taken as :mod:`cnsim.cli.process` does."""
    process.main(app)


if __name__ == "__main__":  # pragma: no cover
    main()
