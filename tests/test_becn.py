"""BECN (spec §5.3, §5.5) end to end: overhead ∝ 1/T across the four seed-000 intervals, the
asymmetric-topology domination effect, single-bottleneck equilibrium, every shipped scenario.

Published numbers ([A]) are *reported* beside cnsim's, never used to tune the broadcast (§12 A2);
docs/validation/fecn.md explains the difference.
"""

from __future__ import annotations

import pytest

import cnsim
from cnsim import schemes
from cnsim.describe import rows
from conftest import ROOT, needs_core

pytestmark = needs_core

LINE = 10e9
QEQ = 24_000
INTERVALS = {"30us": 30e-6, "300us": 300e-6, "3ms": 3e-3, "12ms": 12e-3}
PUBLISHED_OVERHEAD = {"30us": 1.63e9, "300us": 163e6, "3ms": 16.3e6, "12ms": 4.07e6}
BECN_FILES = sorted((ROOT / "scenarios").rglob("*becn*.toml"))


def test_defaults_are_seed000():
    p = schemes.get("becn").params()
    ir = schemes.get("becn").to_ir(p)
    assert ir == {"switch": {"interval_ps": 30 * 10**6, "qeq_bytes": 24_000.0, "a": 1.05, "b": 1.2, "c": 0.5,
                             "beta": 0.5, "n0": 1.0, "limit_increase": False, "capacity_estimation": True,
                             "variable_capacity": True},
                  "expiry_intervals": 2.0}


def test_describe_documents_every_parameter():
    model = schemes.get("becn").params
    documented = {name: desc for name, _, _, desc in rows(model)}
    assert set(documented) == set(model.model_fields) and all(documented.values())


def test_overhead_times_t_is_constant_across_the_four_intervals(capsys):
    """Symmetric topology, 100 ms: two ports carry data (sw1 → sw2, sw2 → h5) and broadcast to the
    5 hosts every T, i.e. 10 messages of 64 B = 640 B per interval whatever T."""
    out = {}
    for tag, t in INTERVALS.items():
        s = cnsim.run(ROOT / f"scenarios/seed-000/symmetric-becn-{tag}.toml").summary
        n_intervals = int(0.1 / t + 1e-9) - (1 if abs(0.1 / t - round(0.1 / t)) < 1e-9 else 0)
        out[tag] = (s["control"]["overhead_bps"], s["control"]["bytes"] / n_intervals)
    lines = ["T        cnsim overhead   x T (bits)   bytes/interval   published   published x T"]
    for tag, t in INTERVALS.items():
        ov, per = out[tag]
        lines.append(f"{tag:6s} {ov / 1e6:12.3f} Mb/s {ov * t:10.1f} {per:12.1f}   {PUBLISHED_OVERHEAD[tag] / 1e6:9.2f} Mb/s"
                     f" {PUBLISHED_OVERHEAD[tag] * t:10.1f}")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    per_interval = [per for _, per in out.values()]
    assert per_interval == pytest.approx([640.0] * 4)
    products = [out[tag][0] * t for tag, t in INTERVALS.items()]
    # exactly constant per interval; overhead x T differs only by the whole number of intervals in
    # 100 ms (8 at T = 12 ms, i.e. 8/8.33 = 0.96)
    assert products[:3] == pytest.approx([5120.0] * 3, rel=0.011)
    assert products[3] == pytest.approx(5120.0 * 8 / (0.1 / 12e-3), rel=0.001)


def test_asymmetric_300us_all_four_flows_share_the_1g_cp_rate():
    """The most severe CP (sw2 → h5, 1 Gb/s) dominates every source, also h3, h4 → h6 which never
    cross it: all four flows settle at the same rate ≈ (1 Gb/s − control load on that link)/2."""
    r = cnsim.run(ROOT / "scenarios/seed-000/asymmetric-becn-300us.toml", overrides={"run.warmup": "20ms"})
    s = r.summary
    tp = [f["throughput_bps"] for f in s["flows"]]
    assert max(tp) / min(tp) < 1.02, tp
    # control load on the 1G link: 3 broadcasting ports (sw1→sw2, sw2→h5, sw2→h6) x 64 B per T
    ctrl_1g = 3 * 64 * 8 / 300e-6
    expected = (1e9 - ctrl_1g) / 2
    assert tp == pytest.approx([expected] * 4, rel=0.02)
    rr = r.tables["rp_rate"]
    late = rr[rr.t_s >= 0.02].groupby("flow")["rate_bps"].mean()
    assert late.to_numpy() == pytest.approx([expected] * 4, rel=0.02)
    # h3, h4 → h6 could have had 4.5 Gb/s each under max-min: BECN gives them the 1G CP's rate
    assert all(f["throughput_bps"] < 0.6e9 for f in s["flows"] if f["dst"] == "h6")


def test_single_bottleneck_rate_c_over_n_queue_qeq():
    sc = {
        "run": {"name": "becn-single-4", "duration": "40ms", "warmup": "10ms"},
        "topology": {"preset": "symmetric", "params": {"n_sources": 4}},
        "traffic": [{"name": "sat", "kind": "saturated", "src": ["h1", "h2", "h3", "h4"], "dst": "h5"}],
        "cm": {"scheme": "becn", "params": {}},
    }
    r = cnsim.run(sc)
    s = r.summary
    # the edge port sw2 → h5 also carries the broadcasts addressed to h5 (2 ports x 64 B per 30 us),
    # so it is the tighter CP (the "CP moved to the edge switch" of [A])
    ctrl_h5 = 2 * 64 * 8 / 30e-6
    expected = (LINE - ctrl_h5) / 4
    tp = [f["throughput_bps"] for f in s["flows"]]
    assert tp == pytest.approx([expected] * 4, rel=0.02)
    q_edge = next(q for q in s["queues"] if q["switch"] == "sw2" and q["port"] == "h5")["mean_bytes"]
    assert q_edge == pytest.approx(QEQ, rel=0.15)


@pytest.mark.parametrize("path", BECN_FILES, ids=[p.name for p in BECN_FILES])
def test_shipped_becn_scenario_runs(path):
    s = cnsim.run(path, overrides={"run.duration": "30ms"}).summary
    assert s["frames"]["delivered"] > 0 and s["control"]["messages"]["becn"] > 0
