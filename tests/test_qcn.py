"""QCN (IEEE 802.1Qau, model reference §6) end to end: parameters, single-bottleneck behaviour, seed scenarios.

The control-law clauses (decrease for q = 63, the recovery sequence, sampling by quantised Fb) are
unit-tested in ``crates/cnsim-core/src/cm/qcn.rs``; here the scheme runs inside the engine.
"""

from __future__ import annotations

import cnsim
import pytest
from cnsim import schemes
from cnsim.exceptions import ConfigError
from conftest import ROOT, needs_core

pytestmark = needs_core

QEQ = 26_000
LINE = 10e9


def single_bottleneck(
    n: int, duration: str = "40ms", warmup: str = "10ms", pause: bool = False, params: dict | None = None
) -> dict:
    """S-SYM topology (model reference §9.1) with n saturated sources h1..hn → h(n+1); bottleneck sw1 → sw2."""
    sc = {
        "run": {"name": f"qcn-single-{n}", "duration": duration, "warmup": warmup},
        "topology": {"preset": "symmetric", "params": {"n_sources": n}},
        "traffic": [
            {"name": "sat", "kind": "saturated", "src": [f"h{i}" for i in range(1, n + 1)], "dst": f"h{n + 1}"}
        ],
        "cm": {"scheme": "qcn", "params": params or {}},
    }
    if pause:
        sc["flow_control"] = {"mode": "global", "high": "140KB", "low": "130KB"}
    return sc


def bottleneck(summary: dict) -> dict:
    return next(q for q in summary["queues"] if q["switch"] == "sw1" and q["port"] == "sw2")


def test_defaults_are_the_standard_values():
    ir = schemes.get("qcn").to_ir(schemes.get("qcn").params())
    assert ir["qeq_bytes"] == 26_000 and ir["w"] == 2.0 and ir["fb_bits"] == 6
    assert ir["mark_table_bytes"] == [150e3, 75e3, 50e3, 37.5e3, 30e3, 25e3, 21.5e3, 18.5e3]
    assert ir["gd"] == 1 / 128 and ir["min_dec_factor"] == 0.5 and ir["min_rate_bps"] == 10e6
    assert ir["bc_limit_bytes"] == 150e3 and ir["fast_recovery_th"] == 5
    assert ir["r_ai_bps"] == 5e6 and ir["r_hai_bps"] == 50e6
    assert ir["timer_period_ps"] == 15 * 10**9 and ir["stage_boundary"] == "gt"
    assert ir["sample_jitter"] == ir["rp_jitter"] == 0.15


def test_units_and_bad_values_are_reported_with_paths():
    p = schemes.get("qcn").params(qeq="34KB", timer_period="1.5ms", r_ai="8Mbps")
    ir = schemes.get("qcn").to_ir(p)
    assert (ir["qeq_bytes"], ir["timer_period_ps"], ir["r_ai_bps"]) == (34_000, 1_500_000_000, 8e6)
    for key, value in [
        ("bogus", 1),
        ("gd", 0),
        ("mark_table", ["150KB"]),
        ("stage_boundary", "lt"),
        ("timer_period", "15"),
    ]:
        with pytest.raises(ConfigError) as e:
            cnsim.run(single_bottleneck(2, "1ms", "0ms", params={key: value}), plots=False)
        assert f"cm.params.{key}" in str(e.value)


@pytest.mark.parametrize("n", [2, 4, 10])
def test_single_bottleneck_queue_settles_near_qeq(n):
    """N greedy flows, 150 KB drop-tail: after 10 ms the queue averages ≈ Qeq, the link is full and
    nothing is dropped any more (all losses are in the start-up transient, when every source
    starts at line rate before its first CNM)."""
    r = cnsim.run(single_bottleneck(n), plots=False).summary
    q = bottleneck(r)
    assert 0.7 * QEQ <= q["mean_bytes"] <= 1.3 * QEQ, q
    agg = sum(f["throughput_bps"] for f in r["flows"])
    assert agg >= 0.98 * LINE, agg
    early = cnsim.run(single_bottleneck(n, "10ms", "0ms"), plots=False).summary
    assert r["frames"]["dropped"] == early["frames"]["dropped"], "drops after the first 10 ms"
    assert r["control"]["messages"]["cnm"] > 0
    assert r["control"]["overhead_bps"] < 5e6  # a few hundred 64-B CNMs per second


@pytest.mark.parametrize("n", [2, 4])
def test_single_bottleneck_no_drops_with_the_seed_pause(n):
    """With the seed-000 configuration (4 sources, 150 KB per port, global PAUSE 140/130 KB) nothing
    is lost. (With 10 inputs the 10 KB of headroom above XOFF cannot hold the data in flight on 10
    links during the start-up burst — a PAUSE property, model reference §1.4, not a QCN one.)"""
    r = cnsim.run(single_bottleneck(n, pause=True), plots=False).summary
    assert r["frames"]["dropped"] == 0
    assert 0.7 * QEQ <= bottleneck(r)["mean_bytes"] <= 1.3 * QEQ


def test_rate_limiters_are_bounded_and_released():
    """RP rates stay in [MIN_RATE, line rate]; limiters are off before the first CNM."""
    r = cnsim.run(single_bottleneck(4, "20ms", "0ms"), plots=False)
    rates = r.tables["rp_rate"].dropna(subset=["rate_bps"])
    assert len(rates) > 0
    assert rates.rate_bps.min() >= 10e6 and rates.rate_bps.max() <= LINE
    first = r.tables["rp_rate"].sort_values("t_s").iloc[0]
    assert first.t_s == 0 and first.rate_bps != first.rate_bps  # NaN = no limiter at t = 0


def test_timer_period_is_a_parameter():
    """§12 Q1: the 1.5-ms ns-3 timer recovers faster after the ON/OFF sources switch off."""
    path = ROOT / "scenarios" / "seed-000" / "symmetric-qcn.toml"
    tp = {}
    for t in ("15ms", "1.5ms"):
        r = cnsim.run(
            path, overrides={"run.duration": "40ms", "run.warmup": "22ms", "cm.params.timer_period": t}, plots=False
        ).summary
        tp[t] = sum(f["throughput_bps"] for f in r["flows"])
    assert tp["1.5ms"] > tp["15ms"] * 1.2, tp


def test_seed_symmetric_runs_lossless_with_pause():
    r = cnsim.run(
        ROOT / "scenarios" / "seed-000" / "symmetric-qcn.toml", overrides={"run.duration": "20ms"}, plots=False
    ).summary
    assert r["frames"]["dropped"] == 0
    assert r["control"]["messages"]["cnm"] > 0


def test_seed_parking_lot_loses_only_at_start_up():
    """Parking lot (5 inputs on sw1): the seed's 10 KB PAUSE headroom is exceeded once at start-up
    (also without CM: 2850 drops in 20 ms); afterwards qcn keeps L1 loss-free."""
    path = ROOT / "scenarios" / "seed-000" / "parking-lot-qcn.toml"
    r = cnsim.run(path, overrides={"run.duration": "20ms"}, plots=False).summary
    early = cnsim.run(path, overrides={"run.duration": "2ms"}, plots=False).summary
    assert r["frames"]["dropped"] == early["frames"]["dropped"] <= 10
    assert min(f["throughput_bps"] for f in r["flows"]) > 0.1e9


@pytest.mark.extensive
def test_s100_qcn_settles_after_the_transient():
    """S-100 (seed 001): 100 Bernoulli sources at 2 % into one 10 Gb/s port, 150 KB, no PAUSE. All
    drops happen while the 100 limiters are being created; the last 100 ms are loss-free."""
    path = ROOT / "scenarios" / "seed-001" / "fan-in-100-qcn.toml"
    full = cnsim.run(path, plots=False).summary
    half = cnsim.run(path, overrides={"run.duration": "100ms"}, plots=False).summary
    assert full["frames"]["dropped"] == half["frames"]["dropped"]
    cs = next(q for q in full["queues"] if q["switch"] == "cs" and q["port"] == "ep0")
    assert cs["mean_bytes"] < 100_000
