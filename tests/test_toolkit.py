"""The data-center researcher's toolkit (issue 36) through the scenario front end: TCP SACK, ECN and the
DCQCN congestion point per priority queue under PFC (pcap, timed events, INT bytes, presets and the
run-end note have their own files: test_pcap.py, test_events.py, test_hpcc_presets.py)."""

from __future__ import annotations

import warnings

import cnsim
from cnsim.exceptions import ConfigWarning
from conftest import ROOT, needs_core

pytestmark = needs_core
SACK = ROOT / "scenarios/baseline/tcp-sack-2.toml"
PRIO = ROOT / "scenarios/datacenter/pfc-ecn-per-priority.toml"


def run(sc, **overrides):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        return cnsim.run(sc, overrides=overrides, plots=False).summary


def test_sack_fills_a_deep_buffer_link_that_newreno_cannot():
    # issue 36: 2 flows, RTT ≈ 100 µs, 600 KB drop-tail, no initial ssthresh: the first slow start loses
    # hundreds of segments; NewReno repairs one per round trip, SACK all of them within a few
    line = 10e9 * 1460 / 1500
    with_sack = run(SACK)
    assert with_sack["tcp"]["goodput_bps"] >= 0.9 * 10e9
    assert with_sack["tcp"]["goodput_bps"] <= line + 1e6
    assert with_sack["tcp"]["retransmitted_segments"] == with_sack["frames"]["dropped"] > 300
    assert all(f["sack"] for f in with_sack["flows"])
    newreno = run(SACK, **{"tcp.sack": False})
    assert newreno["tcp"]["goodput_bps"] < 0.05 * line
    assert not any(f["sack"] for f in newreno["flows"])


def test_ecn_marks_the_priority_queue_not_the_port():
    # priority 3 holds a queue far above K at s1 → r1; the priority-1 DCTCP flow's own queue stays empty
    s = run(PRIO)
    q = next(q for q in s["queues"] if q["switch"] == "s1" and q["port"] == "r1")
    assert q["mean_bytes"] > 10 * 30_000
    assert q["ecn_marks"] == 0 and s["tcp"]["ecn_reductions"] == 0
    dctcp = next(f for f in s["flows"] if f["src"] == "h3")
    assert abs(dctcp["throughput_bps"] - 2e9) < 0.01 * 2e9
    # when priority 1 congests its own queue, it is marked
    s = run(PRIO, **{"traffic.1.rate": "9.9Gbps", "defaults.ecn_threshold": "2KB"})
    q = next(q for q in s["queues"] if q["switch"] == "s1" and q["port"] == "r1")
    assert q["ecn_marks"] > 0 and s["tcp"]["ecn_reductions"] > 0


def test_the_dcqcn_congestion_point_sees_the_priority_queue():
    # DCQCN marks the priority-3 frames (their queue is above kmax); the priority-1 CBR flow is never
    # marked, so its rate limiter never cuts it below its 2 Gb/s
    s = run(PRIO, **{"cm.scheme": "dcqcn", "traffic.1.transport": "udp"})
    assert s["control"]["messages"]["cnp"] > 0
    cbr = next(f for f in s["flows"] if f["src"] == "h3")
    assert abs(cbr["throughput_bps"] - 2e9) < 0.005 * 2e9
