"""Capped-Pareto ON periods (`pareto_onoff.max_on`): an opt-in shape for the model reference §12 D2 study.

The plain Pareto with the spec's x_m = 1.2 µs needs α ≈ 1.027 for a 45-µs mean and then realises
only ≈ 14 µs in a 100-ms run (docs/validation/cnsim-traffic.md). Capping the ON time makes the mean
finite for any α > 0, so one-frame flows (x_m = one frame time) and a realised 45-µs mean can
coexist.
"""

from pathlib import Path

import cnsim
import numpy as np
import pytest
from cnsim.scenario.spec import ParetoOnOff, capped_pareto_mean
from pydantic import ValidationError

ROOT = Path(__file__).resolve().parents[1]
CNSIM = ROOT / "scenarios" / "seed-003" / "cnsim-1hop-none-nohs-nopause.toml"
US = 10**6


def test_capped_mean_formula_matches_monte_carlo():
    rng = np.random.default_rng(1)
    for xm, alpha, cap in [(1.2, 0.74, 30_000.0), (1.2, 1.0, 3_000.0), (4.0, 1.5, 100.0)]:
        x = xm / rng.uniform(size=2_000_000) ** (1 / alpha)
        mc = np.minimum(x, cap).mean()
        assert capped_pareto_mean(xm, alpha, cap) == pytest.approx(mc, rel=0.01)
    # without a binding cap it tends to the plain Pareto mean alpha·xm/(alpha-1)
    assert capped_pareto_mean(1.0, 2.0, 1e12) == pytest.approx(2.0, rel=1e-9)


def test_alpha_is_solved_from_the_capped_mean():
    g = ParetoOnOff(kind="pareto_onoff", name="f", src="h1", dst="h2", max_on="30ms")
    xm, alpha = g.pareto()
    assert xm == 1_200_000
    assert 0.5 < alpha < 1.0
    assert capped_pareto_mean(xm, alpha, 30_000 * US) == pytest.approx(45 * US, rel=1e-6)


def test_alpha_at_most_one_needs_a_cap():
    with pytest.raises(ValidationError, match="max_on"):
        ParetoOnOff(kind="pareto_onoff", name="f", src="h1", dst="h2", alpha=0.8, xm="1.2us")
    with pytest.raises(ValidationError, match="max_on must be > xm"):
        ParetoOnOff(kind="pareto_onoff", name="f", src="h1", dst="h2", max_on="1us")


def test_capped_run_keeps_one_frame_flows_and_the_offered_load():
    # the model reference §12 D2 plain Pareto (x_m = 1.2 us), which the seed-003 files replaced by Lomax (§12 R2)
    base = {
        "run.duration": "30ms",
        "traffic.flows.distribution": "pareto",
        "traffic.flows.alpha": None,
        "traffic.flows.xm": "1.2us",
    }
    plain = cnsim.run(CNSIM, seed=1, overrides=base)
    capped = cnsim.run(CNSIM, seed=1, overrides=base | {"traffic.flows.max_on": "30ms"})
    for r in (plain, capped):
        assert r.summary["conservation"]["ok"]
        assert r.summary["fct"]["min_us"] == pytest.approx(3.5)  # one-frame flows exist in both
    sent = [r.summary["bytes"]["sent"] for r in (plain, capped)]
    # the cap turns the heavy tail into offered load: far more bytes within the same run
    assert sent[1] > 1.2 * sent[0]
    frames = capped.fct["frames"].to_numpy()
    assert frames.max() <= round(30e-3 * 10e9 / 12_000) + 1  # no flow longer than the cap
