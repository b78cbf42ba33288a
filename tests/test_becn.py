"""BECN (model reference §5.3, §5.5) end to end: overhead ∝ 1/T across the four seed-000 intervals, the
asymmetric-topology domination effect, single-bottleneck equilibrium, every shipped scenario.

Published numbers ([A]) are *reported* beside cnsim's, never used to tune the broadcast (§12 A2);
docs/validation/fecn.md explains the difference.
"""

from __future__ import annotations

import cnsim
import pytest
from cnsim import schemes
from cnsim.scenario.describe import rows
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
    assert ir == {
        "switch": {
            "interval_ps": 30 * 10**6,
            "qeq_bytes": 24_000.0,
            "a": 1.05,
            "b": 1.2,
            "c": 0.5,
            "beta": 0.5,
            "n0": 1.0,
            "limit_increase": False,
            "capacity_estimation": True,
            "variable_capacity": True,
        },
        "expiry": 2.0,
        "message_size_bytes": 1526,
        "announce": "flood_per_rp",
    }


def test_describe_documents_every_parameter():
    model = schemes.get("becn").params
    documented = {name: desc for name, _, _, desc in rows(model)}
    assert set(documented) == set(model.model_fields) and all(documented.values())


def _window(t: float) -> str:
    """The steady-state window of a per-interval quantity: the largest whole number of intervals
    ending at 100 ms that leaves out the first (start-up) interval, in which no port restricts."""
    n = int((0.1 - t) / t + 1e-9)
    return f"{(0.1 - n * t) * 1e6:.3f}us"


def test_overhead_is_four_full_size_broadcasts_per_interval(capsys):
    """Model reference §12 R1 ([A]): in S-SYM only sw1 → sw2 restricts; it floods one 1526-B broadcast per
    reaction point (h1..h4) every T: 6104 B per interval, i.e. 1.63 Gb/s / 163 / 16.3 / 4.07 Mb/s."""
    out = {}
    for tag, t in INTERVALS.items():
        s = cnsim.run(
            ROOT / f"scenarios/seed-000/symmetric-becn-{tag}.toml", overrides={"run.warmup": _window(t)}, plots=False
        ).summary
        out[tag] = s["control"]["overhead_bps"]
        assert s["control"]["broadcast_copies"] > 0 and s["conservation"]["ok"]
    lines = ["T        cnsim overhead   published"]
    for tag in INTERVALS:
        lines.append(f"{tag:6s} {out[tag] / 1e6:12.3f} Mb/s {PUBLISHED_OVERHEAD[tag] / 1e6:9.2f} Mb/s")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    for tag, t in INTERVALS.items():
        assert out[tag] == pytest.approx(4 * 1526 * 8 / t, rel=1e-3), tag
        assert out[tag] == pytest.approx(PUBLISHED_OVERHEAD[tag], rel=0.05), tag


def test_first_reading_every_host_unicast_is_still_available():
    """Model reference §12 A1 (announce = every_host, 64-B messages): two data-carrying ports x 5 hosts x 64 B."""
    s = cnsim.run(
        ROOT / "scenarios/seed-000/symmetric-becn-300us.toml",
        overrides={"cm.params.announce": "every_host", "cm.params.message_size": "64B", "run.warmup": _window(300e-6)},
        plots=False,
    ).summary
    assert s["control"]["overhead_bps"] == pytest.approx(640 * 8 / 300e-6, rel=1e-3)
    assert s["control"]["broadcast_copies"] == 0


def test_asymmetric_300us_all_four_flows_settle_at_418():
    """[A]: "4 flows settle around 418 Mbps [(1000 Mbps - 163 Mbps OH)/2]": the most severe CP
    (sw2 → h5, 1 Gb/s) dominates every source — also h3, h4 → h6, which never cross it — and its
    broadcasts, flooded to every host, take 163 Mb/s of the 1 Gb/s link to h5 (window 50–100 ms)."""
    r = cnsim.run(ROOT / "scenarios/seed-000/asymmetric-becn-300us.toml", overrides={"run.warmup": "50ms"})
    s = r.summary
    tp = [f["throughput_bps"] for f in s["flows"]]
    expected = (1e9 - 4 * 1526 * 8 / 300e-6) / 2
    assert tp == pytest.approx([expected] * 4, rel=0.01)
    assert tp == pytest.approx([418e6] * 4, rel=0.01)
    rr = r.tables["rp_rate"]
    late = rr[rr.t_s >= 0.05].groupby("flow")["rate_bps"].mean()
    assert late.to_numpy() == pytest.approx([expected] * 4, rel=0.02)


def test_asymmetric_30us_broadcasts_exceed_the_1g_link_and_collapse():
    """[A]: at T = 30 µs the signalling (1.63 Gb/s) exceeds the 1 Gb/s link to h5: "congestion
    spreading and associated collapse occurs" — global PAUSE spreads it back to every source."""
    s = cnsim.run(
        ROOT / "scenarios/seed-000/asymmetric-becn-30us.toml", overrides={"run.warmup": "50ms"}, plots=False
    ).summary
    assert sum(f["throughput_bps"] for f in s["flows"]) < 0.01e9
    assert s["pause"]["host_paused_fraction"] > 0.9


def test_single_bottleneck_rate_c_over_n_queue_qeq():
    sc = {
        "run": {"name": "becn-single-4", "duration": "40ms", "warmup": "10ms"},
        "topology": {"preset": "symmetric", "params": {"n_sources": 4}},
        "traffic": [{"name": "sat", "kind": "saturated", "src": ["h1", "h2", "h3", "h4"], "dst": "h5"}],
        "cm": {"scheme": "becn", "params": {}},
    }
    r = cnsim.run(sc)
    s = r.summary
    # the flooded broadcasts (4 x 1526 B per 30 us = 1.63 Gb/s) share the bottleneck sw1 → sw2 with
    # the data: its capacity estimate (data bits per busy second) leaves the flows what is left
    ctrl_h5 = 4 * 1526 * 8 / 30e-6
    expected = (LINE - ctrl_h5) / 4
    tp = [f["throughput_bps"] for f in s["flows"]]
    assert tp == pytest.approx([expected] * 4, rel=0.02)
    q_core = next(q for q in s["queues"] if q["switch"] == "sw1" and q["port"] == "sw2")["mean_bytes"]
    assert q_core == pytest.approx(QEQ, rel=0.15)


@pytest.mark.parametrize("path", BECN_FILES, ids=[p.name for p in BECN_FILES])
def test_shipped_becn_scenario_runs(path):
    s = cnsim.run(path, overrides={"run.duration": "30ms"}).summary
    assert s["frames"]["delivered"] > 0 and s["control"]["messages"]["becn"] > 0
