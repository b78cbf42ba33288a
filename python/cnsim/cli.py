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

from cnsim.exceptions import CnsimError, ConfigError
from cnsim.loader import load_scenario
from cnsim.presets import PRESETS
from cnsim.scenario import Scenario
from cnsim.cli_common import err_console, fail as _fail, guarded, out_console
from cnsim.cli_run import (  # noqa: F401 — re-exported: `cnsim run`'s pieces live there (no typer)
    PROGRESS_AFTER_S, ProgressReporter, _exit, _no_plugin_discovery, default_out, parse_sets, pfc_rows,
    prepare_process, run_scenario as _run, summary_table)
from cnsim.cli_sweep import register as register_sweep_commands
from cnsim.cli_model import register as register_model_commands

class _LazyModule:
    """A module loaded on first use (``cnsim.api`` brings pyarrow): `--help`, `validate`, `describe`
    start without what they do not need."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        import importlib

        return getattr(importlib.import_module(self._name), attr)


api = _LazyModule("cnsim.api")
describe_mod = _LazyModule("cnsim.describe")  # the parameter reference: only `describe` and `docs`
schemes = _LazyModule("cnsim.schemes")

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="cnsim — packet-level simulator of congestion management in data-center Ethernet.")


def _version(value: bool) -> None:
    if value:
        from cnsim import __version__

        out_console.print(f"cnsim {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="print the version and exit")) -> None:
    """cnsim — packet-level simulator of congestion management in data-center Ethernet."""

DEMO_SCENARIO = "seed-003/cnsim-1hop-none-hs0.5-pause.toml"


def scenarios_dir() -> Path | None:
    """``./scenarios`` if present, else the repository's ``scenarios/`` beside the package."""
    for candidate in (Path.cwd() / "scenarios", Path(__file__).resolve().parents[2] / "scenarios"):
        if candidate.is_dir():
            return candidate
    return None


@app.command()
@guarded
def run(
    scenario: Path = typer.Argument(..., metavar="SCENARIO", help="scenario TOML file"),
    seed: Optional[int] = typer.Option(None, "--seed", help="master seed (replaces run.seed)"),
    set_: list[str] = typer.Option([], "--set", metavar="PATH=VALUE", help="override a scenario value (repeatable), e.g. run.duration=5ms"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="output directory (default results/<name>/)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bar and no summary table"),
    as_json: bool = typer.Option(False, "--json", help="print summary.json to stdout instead of the table"),
    force: bool = typer.Option(False, "--force", help="replace the output folder even if it is not a cnsim result"),
    plots: bool = typer.Option(False, "--plots", help="also draw plots/queue.png and plots/throughput.png "
                               "(matplotlib; off by default so that short runs start fast)"),
) -> None:
    """Run a scenario; write summary, manifest and Parquet tables (and plots with --plots) into the output directory."""
    _run(scenario, seed, set_, out, quiet, as_json, default_out(scenario), force, plots)


@app.command()
@guarded
def validate(files: list[Path] = typer.Argument(..., metavar="SCENARIO", help="scenario TOML files")) -> None:
    """Check scenario files without running them (exit 2 if any is invalid)."""
    bad: list[str] = []
    for f in files:
        try:
            load_scenario(f)
        except ConfigError as exc:
            # a problem of the file itself (unreadable, TOML syntax) already names the file
            bad += [str(p) if str(p).startswith(f"{f}:") else f"{f}: {p}" for p in exc.problems]
        else:
            out_console.print(f"ok  {f}", highlight=False)
    if bad:
        _fail(2, bad)


@app.command("describe")
@guarded
def describe_cmd(topic: Optional[str] = typer.Argument(None, metavar="[TOPIC]", help="section (run, traffic.cbr, ...), preset or scheme")) -> None:
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
    for name in chosen:
        title, model = topics[name]
        doc = (model.__doc__ or "").strip().splitlines()
        t = Table(title=escape(title), caption=escape(doc[0].replace("``", "")) if doc else None)
        for col in ("key", "type", "default", "description"):
            t.add_column(col, overflow="fold")
        for row in describe_mod.rows(model):
            t.add_row(*(escape(str(c)) for c in row))
        out_console.print(t)


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
def docs(out: Path = typer.Option(Path("docs/reference"), "--out", help="directory for scenario.md")) -> None:
    """Generate the scenario reference (scenario.md) from the models."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "scenario.md").write_text(describe_mod.reference_markdown(), encoding="utf-8")
    out_console.print(f"wrote {out / 'scenario.md'}", highlight=False)


@app.command()
@guarded
def demo(
    out: Path = typer.Option(Path("results/demo-run"), "--out", "-o",
                             help="output directory (make demo's report lives in results/demo)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bar and no summary table"),
) -> None:
    """Run the CN-SIM single-hop hotspot (0.5 Gb/s, selective PAUSE, no CM) and write its outputs."""
    root = scenarios_dir()
    if root is None or not (root / DEMO_SCENARIO).exists():
        raise CnsimError(f"demo scenario scenarios/{DEMO_SCENARIO} not found; run from the repository root")
    _run(root / DEMO_SCENARIO, None, [], out, quiet, False, lambda sc: out, plots=True)


register_sweep_commands(app)
register_model_commands(app)


def main() -> None:
    """Console entry point (``cnsim``)."""
    try:
        _main()
    except SystemExit as exc:
        _exit(exc.code)
    _exit(0)


def _main() -> None:
    prepare_process()
    try:
        app()
    except KeyboardInterrupt:
        err_console.print("interrupted; no output written")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 — outside a command (option parsing, callbacks): still one line
        from cnsim.cli_common import crash_log, os_error_line

        if isinstance(exc, OSError):
            err_console.print(os_error_line(exc), markup=False, highlight=False, soft_wrap=True)
            sys.exit(1)
        log = crash_log(exc)
        err_console.print(f"error: {type(exc).__name__}: {exc}" + (f" (details in {log})" if log else ""),
                          markup=False, highlight=False, soft_wrap=True)
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
