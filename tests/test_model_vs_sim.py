"""Model vs packet-level simulation on the seed-000/002 BCN scenarios (issue 7), with stated bands.

Bands (why they are this wide): the aggregate is a conservation-level quantity (2 %); per-flow
rates converge to the equilibrium only through the model's slow fairness mode (decay ≈ 14 /s,
docs/model.md: a 70-ms time constant), so they are measured over 200–300 ms, three time constants
after the start (over 50–100 ms one flow in five seeds was still 38–39 % off under either RL initial
rate), and asserted within ±35 % of C/N; the negative-feedback
fraction of the model is N/(5+N) = 0.444 for N = 4 and the simulation over-represents negatives
because a released limiter receives no positive messages (docs/validation/bcn.md): band ±0.06.
"""

from pathlib import Path

import cnsim
import pytest
from cnsim.compile.compiler import compile_ir
from cnsim.model.compare import model_vs_sim

ROOT = Path(__file__).resolve().parents[1]
SYM = ROOT / "scenarios" / "seed-000" / "symmetric-bcn.toml"
PARK = ROOT / "scenarios" / "seed-000" / "parking-lot-bcn.toml"
ALWAYS_ON = {
    # the symmetric S-CONV form: h1..h4 always on (no 20-ms ON/OFF gate)
    "traffic.0": {"name": "onoff", "kind": "saturated", "src": ["h1", "h2"], "dst": "h5"},
    "run.duration": "300ms",
    "run.warmup": "200ms",
}


def _table(path, overrides):
    sc = cnsim.api.resolve(path, None, overrides)
    result = cnsim.run(sc)
    return model_vs_sim(compile_ir(sc), result.summary), result.summary


def _row(table, quantity, item=None):
    rows = table[table["quantity"] == quantity]
    if item is not None:
        rows = rows[rows["item"] == item]
    return rows


@pytest.mark.extensive  # a 100-ms packet-level run beside the model: statistical
def test_symmetric_bcn_matches_the_model_within_bands():
    table, summary = _table(SYM, ALWAYS_ON)
    agg = _row(table, "aggregate_bps").iloc[0]
    assert abs(agg["simulation"] - 10e9) / 10e9 < 0.02
    assert abs(agg["bcn_closed_form"] - 10e9) / 10e9 < 0.02
    rates = _row(table, "rate_bps")
    assert len(rates) == 4
    for _, r in rates.iterrows():
        assert r["bcn_closed_form"] == pytest.approx(2.5e9, rel=1e-3)
        assert abs(r["simulation"] - 2.5e9) / 2.5e9 < 0.35, r["item"]
    neg = _row(table, "negative_fraction").iloc[0]
    assert neg["bcn_closed_form"] == pytest.approx(4 / 9, abs=1e-3)  # N/(5+N), N = 4
    assert abs(neg["simulation"] - neg["bcn_closed_form"]) < 0.06
    q = _row(table, "queue_mean_bytes")
    assert len(q) >= 1
    # the model's queue settles near Qeq = 24 KB; the simulation around it (BCN keeps no standing
    # queue above a few Qeq without PAUSE ever being needed)
    assert 12e3 < q.iloc[0]["simulation"] < 48e3
    assert summary["pause"]["frames_sent"] == 0 or summary["frames"]["dropped"] == 0


@pytest.mark.extensive  # a long packet-level run beside the model: statistical
def test_parking_lot_bcn_lands_between_max_min_and_the_bcn_equilibrium():
    table, _ = _table(PARK, {"run.duration": "60ms", "run.warmup": "20ms"})
    ratio = _row(table, "parking_lot_ratio").iloc[0]
    assert ratio["max_min"] == pytest.approx(1.0)
    assert ratio["proportional"] == pytest.approx(2.0, rel=1e-3)
    assert ratio["bcn_closed_form"] == pytest.approx(3.5, rel=1e-2)
    # BCN is not max-min (FECN is): short flows get clearly more than long ones
    assert 1.3 < ratio["simulation"] < 3.6
    agg = _row(table, "aggregate_bps").iloc[0]
    assert agg["simulation"] > 0.9 * agg["max_min"]
