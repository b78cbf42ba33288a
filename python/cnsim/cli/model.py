"""``cnsim model SCENARIO``: the analytical side (issue 7) beside a packet-level run.

Prints the table of :func:`cnsim.model.compare.model_vs_sim` — per-flow rates of the BCN closed
form (§8), the fluid model, max-min and proportional fairness next to the simulation, the aggregate,
Jain's index, the parking-lot ratio, bottleneck queue means, settling time and the fraction of
negative feedback — and writes it as CSV with two plots.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from cnsim import api
from cnsim.cli.common import LazyConsole, guarded, parse_sets
from cnsim.compile.compiler import compile_ir
from cnsim.exceptions import ConfigError
from cnsim.results.outdir import usable_folder

console = LazyConsole()


def _fmt(quantity: str, value: float) -> str:
    if value != value:  # NaN
        return "—"
    if quantity.endswith("_bps"):
        return f"{value / 1e9:.3f} G"
    if quantity.endswith("_bytes"):
        return f"{value / 1e3:.1f} KB"
    if quantity.endswith("_s"):
        return f"{value * 1e3:.2f} ms"
    return f"{value:.3f}"


MODEL_FILES = frozenset({"model.csv", "model_vs_sim.png", "fluid.png"})
"""What ``cnsim model`` writes into its folder."""


def _check_out(out: Path) -> None:
    """Refuse (ConfigError, one line) a folder for ``cnsim model`` that holds anything it does not write,
    a file, a link to nothing, the current directory or one of its parents — before anything runs."""

    dest = usable_folder(out, "--out", "previous-model")
    others = sorted(p.name for p in dest.iterdir() if p.name not in MODEL_FILES) if dest.is_dir() else []
    if others:
        raise ConfigError.single(
            "--out",
            f"holds {', '.join(others[:3])}, which cnsim model did not write; "
            "nothing was replaced: choose a new or empty folder",
            str(out),
        )


def register(app: typer.Typer) -> None:
    """Add the ``model`` command to the CLI."""

    @app.command("model")
    def model_cmd(
        scenario: Path = typer.Argument(
            ..., metavar="SCENARIO", help="scenario TOML file (BCN parameters are read from its [cm])"
        ),
        seed: Optional[int] = typer.Option(None, "--seed", help="master seed"),
        set_: list[str] = typer.Option(
            [], "--set", metavar="PATH=VALUE", help="override a scenario value (repeatable)"
        ),
        out: Path = typer.Option(Path("results/model"), "--out", "-o", help="directory for model.csv and plots"),
        no_sim: bool = typer.Option(False, "--no-sim", help="model predictions only (no packet-level run)"),
    ) -> None:
        """Model vs simulation: BCN fluid model and fair allocations beside a packet-level run."""
        from cnsim.model.compare import (  # matplotlib, scipy, pandas
            model_vs_sim,
            plot_fluid,
            plot_model_vs_sim,
            predictions,
        )

        @guarded
        def body() -> None:
            sc = api.resolve(scenario, seed, parse_sets(set_))
            ir = compile_ir(sc)
            _check_out(out)
            out.mkdir(parents=True, exist_ok=True)
            if no_sim:
                topo, rates, fluid = predictions(ir)
                summary = {"flows": [], "queues": [], "control": {"messages": {}}}
            else:
                summary = api.run(sc).summary
                _, _, fluid = predictions(ir)
            table = model_vs_sim(ir, summary)
            table.to_csv(out / "model.csv", index=False)
            plot_model_vs_sim(table, out / "model_vs_sim.png")
            plot_fluid(fluid, out / "fluid.png")
            from rich.table import Table

            t = Table(title=f"model vs simulation — {scenario.name}")
            for c in table.columns:
                t.add_column(c, justify="left" if c in ("quantity", "item") else "right")
            for _, row in table.iterrows():
                q = row["quantity"]
                t.add_row(q, str(row["item"]), *[_fmt(q, float(row[c])) for c in table.columns[2:]])
            console.print(t)
            console.print(f"outputs: {out}", highlight=False)

        body()
