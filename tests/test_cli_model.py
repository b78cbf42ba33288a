"""`cnsim model`: model predictions beside a short packet-level run (issue 7 integration)."""

from pathlib import Path

import pandas as pd
from cnsim.cli.main import app
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
PARKING = ROOT / "scenarios" / "seed-000" / "parking-lot-bcn.toml"


def test_model_command_writes_the_table(tmp_path):
    r = CliRunner().invoke(app, ["model", str(PARKING), "--set", "run.duration=5ms", "-o", str(tmp_path)])
    assert r.exit_code == 0, r.output
    table = pd.read_csv(tmp_path / "model.csv")
    rates = table[table["quantity"] == "rate_bps"]
    assert len(rates) == 6
    # max-min on the seed-000 parking lot: C/5 for every flow (model reference §9.3)
    assert (rates["max_min"] - 2e9).abs().max() < 1e6
    # proportional fairness: long flows C/6, short flows C/3
    assert sorted(round(x / 1e9, 3) for x in rates["proportional"]) == [1.667] * 4 + [3.333] * 2
    assert rates["simulation"].notna().all() and (rates["simulation"] > 0).all()
    assert (tmp_path / "model_vs_sim.png").stat().st_size > 0
    assert (tmp_path / "fluid.png").stat().st_size > 0


def test_model_command_rejects_bad_override(tmp_path):
    r = CliRunner().invoke(app, ["model", str(PARKING), "--set", "run.duration=-1ms", "-o", str(tmp_path)])
    assert r.exit_code == 2
