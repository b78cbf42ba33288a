"""PFC (IEEE 802.1Qbb, issue 13): per-priority pause with per-(input, priority) accounting in a shared buffer,
headroom from the formula, per-priority counters, the cyclic-buffer-dependency deadlock and the watchdog."""

from __future__ import annotations

import warnings

import cnsim
import pytest
from cnsim.compile.compiler import compile_ir
from cnsim.compile.loader import load_scenario
from cnsim.compile.pfc import headroom_bytes
from cnsim.exceptions import ConfigError, ConfigWarning
from conftest import needs_core


def incast(headroom="auto", threshold="static", n=8, **fc) -> dict:
    """n saturated senders of priority 3 into one receiver through one switch; 5-µs cables, so the headroom
    formula gives 18.3 KB per (input, priority)."""
    hosts = [f"h{i}" for i in range(1, n + 1)] + ["r"]
    sc = {
        "run": {"duration": "5ms"},
        "topology": {"hosts": hosts, "switches": ["s1"], "links": [["s1", h] for h in hosts]},
        "defaults": {"link_delay": "5us", "buffer": {"policy": "shared", "size": "2MB"}},
        "traffic": [{"name": "incast", "kind": "saturated", "src": hosts[:-1], "dst": "r", "priority": 3}],
        "flow_control": {"mode": "pfc", "threshold": threshold, "headroom": headroom, **fc},
    }
    if threshold == "static":
        sc["flow_control"]["high"] = "40KB"
    return sc


def run_quiet(sc: dict, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        return cnsim.run(sc, **kw).summary


def test_headroom_formula():
    # 10 Gb/s, 5 us cable, 1 us switch latency: 10e9 x (2 x 5 + 0 + 1) us / 8 = 13 750 B in flight,
    # + 3 frames of 1500 B + the 64-B PFC frame
    assert headroom_bytes(10**10, 5 * 10**6, 0, 10**6, 1500, 64, 0) == 13_750 + 4_500 + 64
    # the peer's response time and the wire overhead count too
    assert headroom_bytes(10**10, 5 * 10**6, 2 * 10**6, 10**6, 1500, 64, 20) == 16_250 + 3 * 1520 + 84
    ir = compile_ir(load_scenario(incast()))
    sw = next(n for n in ir["nodes"] if n["kind"] == "switch")
    assert sw["pause"]["headroom_bytes"] == [18_314] * 9 and sw["pause"]["enabled"] == 1 << 3
    assert {f["priority"] for f in ir["flows"]} == {3}


@needs_core
@pytest.mark.parametrize("threshold", ["static", "dynamic"])
def test_incast_with_computed_headroom_loses_nothing(threshold):
    s = run_quiet(incast(threshold=threshold))
    assert s["frames"]["dropped"] == 0 and s["conservation"]["ok"]
    pfc = s["pfc"]
    assert pfc["cycles_detected"] == 0 and pfc["first_cycle"] is None and s["pause"]["deadlock"] == []
    assert pfc["pause_sent"][3] > 0 and sum(pfc["pause_sent"]) == pfc["pause_sent"][3]
    # every PFC frame reached its peer, but the last ones may still be on the wire at the end
    assert 0 <= pfc["pause_sent"][3] - pfc["pause_received"][3] <= len(pfc["ports"])
    used = max(p["headroom_max_bytes"][3] for p in pfc["ports"])
    assert 0 < used <= 18_314
    # the receiver's link stays busy: PFC moves the queue upstream without starving it
    r = next(lk for lk in s["links"] if lk["to"] == "r")
    assert r["utilization"] > 0.99


@needs_core
def test_incast_with_headroom_below_the_formula_loses_frames():
    with pytest.warns(ConfigWarning, match="flow_control.headroom: PFC headroom of switch 's1' is below the formula"):
        s = cnsim.run(incast(headroom="9KB")).summary
    assert s["frames"]["dropped"] > 100
    assert s["drops"]["by_reason"]["headroom_full"] == s["frames"]["dropped"] == s["pfc"]["headroom_drops"]
    assert s["conservation"]["ok"]


@needs_core
def test_the_peers_response_time_needs_more_headroom():
    """With an 8-µs response time the formula grows by 10 KB: the computed headroom is still lossless, the
    headroom computed without the response time is not."""
    slow = {"response_time": "8us"}
    assert run_quiet(incast(**slow))["frames"]["dropped"] == 0
    assert run_quiet(incast(headroom="18314B", **slow))["frames"]["dropped"] > 0


def two_priorities(mode: str) -> dict:
    """h1, h2 → r1 at priority 3 (20 Gb/s into a 10-Gb/s port of s2), h3 → r2 at 8 Gb/s on priority 1; both
    cross the 40-Gb/s s1 - s2 link, where only priority 3 is congested."""
    sc = {
        "run": {"duration": "5ms", "warmup": "1ms"},
        "topology": {
            "hosts": ["h1", "h2", "h3", "r1", "r2"],
            "switches": ["s1", "s2"],
            "links": [
                ["s1", "h1"],
                ["s1", "h2"],
                ["s1", "h3"],
                {"a": "s1", "b": "s2", "rate": "40Gbps"},
                ["s2", "r1"],
                ["s2", "r2"],
            ],
        },
        "defaults": {"link_delay": "2us", "buffer": {"policy": "shared", "size": "1MB"}},
        "traffic": [
            {"name": "hot", "kind": "saturated", "src": ["h1", "h2"], "dst": "r1", "priority": 3},
            {"name": "cold", "kind": "cbr", "src": "h3", "dst": "r2", "rate": "8Gbps", "priority": 1},
        ],
        "flow_control": {"mode": mode},
    }
    if mode == "selective":
        sc["defaults"]["buffer"] = {"policy": "ingress", "size": "150KB"}
        sc["flow_control"].update(high="100KB", low="80KB")
    return sc


@needs_core
def test_only_the_congested_priority_pauses():
    s = cnsim.run(two_priorities("pfc")).summary
    cold = next(f for f in s["flows"] if f["src"] == "h3")
    assert cold["throughput_bps"] > 0.99 * 8e9
    pfc = s["pfc"]
    assert pfc["pause_sent"][3] > 0 and sum(pfc["pause_sent"]) == pfc["pause_sent"][3]
    assert pfc["max_paused_fraction"][1] == 0 and pfc["max_paused_fraction"][3] > 0.3
    s1_s2 = next(p for p in pfc["ports"] if (p["node"], p["peer"]) == ("s1", "s2"))
    assert s1_s2["pause_received"][3] > 0 and s1_s2["paused_fraction"][3] > 0.3
    assert s["frames"]["dropped"] == 0 and pfc["cycles_detected"] == 0
    # the same with 802.3x PAUSE on the input: the whole s1 -> s2 link stops and the cold flow loses its rate
    legacy = cnsim.run(two_priorities("selective")).summary
    cold = next(f for f in legacy["flows"] if f["src"] == "h3")
    assert cold["throughput_bps"] < 0.7 * 8e9


def ring(watchdog: str | None = None, n: int = 5) -> dict:
    """Switches s1..s5 in a ring, host h_i on s_i, h_i → h_(i+2) at line rate: each flow takes the unique
    two-hop clockwise path, so every ring link carries two flows (overloaded) and every switch's buffer waits
    on the next one's — a cyclic buffer dependency."""
    sw, hosts = [f"s{i}" for i in range(1, n + 1)], [f"h{i}" for i in range(1, n + 1)]
    sc = {
        "run": {"duration": "5ms"},
        "topology": {
            "hosts": hosts,
            "switches": sw,
            "links": [[sw[i], sw[(i + 1) % n]] for i in range(n)] + [[sw[i], hosts[i]] for i in range(n)],
        },
        "defaults": {"buffer": {"policy": "shared", "size": "300KB"}},
        "traffic": [
            {"name": f"f{i}", "kind": "saturated", "src": hosts[i], "dst": hosts[(i + 2) % n], "priority": 3}
            for i in range(n)
        ],
        "flow_control": {"mode": "pfc", "threshold": "static", "high": "30KB"},
    }
    if watchdog:
        sc["flow_control"]["watchdog"] = watchdog
    return sc


@needs_core
def test_cyclic_buffer_dependency_deadlocks_and_the_watchdog_recovers():
    stuck = cnsim.run(ring()).summary
    cyc = stuck["pause"]["deadlock"]
    assert stuck["pause"]["stuck_ports"] == 5 and len(cyc) == 5, stuck["pause"]
    for a, b in zip(cyc, cyc[1:] + cyc[:1]):
        assert a.endswith(":p3") and a.split(">")[1].split(":")[0] == b.split(">")[0], cyc  # each waits on the next
    assert stuck["pfc"]["watchdog_trips"] == 0 and stuck["frames"]["dropped"] == 0
    # detected during the run, when the cycle closed (the wait-for graph is checked as queues block)
    first = stuck["pfc"]["first_cycle"]
    assert stuck["pfc"]["cycles_detected"] >= 1 and first["t_s"] < 0.5e-3 and set(first["queues"]) == set(cyc)
    freed = cnsim.run(ring(watchdog="200us")).summary
    assert freed["pause"]["deadlock"] == [] and freed["pause"]["stuck_ports"] == 0
    assert freed["frames"]["delivered"] > 10 * stuck["frames"]["delivered"]
    trips = [p["watchdog_trips"] for p in freed["pfc"]["ports"] if p["node"].startswith("s")]
    assert freed["pfc"]["watchdog_trips"] == freed["pause"]["watchdog_trips"] == sum(t[3] for t in trips) > 0
    assert all(sum(t) == t[3] for t in trips)
    assert freed["conservation"]["ok"]


@needs_core
@pytest.mark.parametrize("scheduler, expect", [("dwrr", 3.0), ("strict", None)])
def test_egress_scheduler_shares_a_port_between_priorities(scheduler, expect):
    """h1 (priority 5) and h2 (priority 2) saturate r's port; PFC keeps both queues backlogged without loss.
    DWRR with weights 3 : 1 splits the port 3 : 1; strict priority gives it all to priority 5."""
    sc = {
        "run": {"duration": "4ms", "warmup": "1ms"},
        "topology": {
            "hosts": ["h1", "h2", "r"],
            "switches": ["s1"],
            "links": [["s1", "h1"], ["s1", "h2"], ["s1", "r"]],
        },
        "defaults": {"buffer": {"policy": "shared", "size": "1MB"}},
        "traffic": [
            {"name": "a", "kind": "saturated", "src": "h1", "dst": "r", "priority": 5},
            {"name": "b", "kind": "saturated", "src": "h2", "dst": "r", "priority": 2},
        ],
        "flow_control": {"mode": "pfc", "scheduler": scheduler, "weights": [1, 1, 1, 1, 1, 3, 1, 1]},
    }
    s = cnsim.run(sc).summary
    tp = {f["src"]: f["throughput_bps"] for f in s["flows"]}
    assert s["frames"]["dropped"] == 0
    assert tp["h1"] + tp["h2"] > 0.99e10
    if expect is None:
        assert tp["h2"] < 0.01 * tp["h1"]
    else:
        assert abs(tp["h1"] / tp["h2"] - expect) < 0.05 * expect


@needs_core
def test_pfc_runs_are_deterministic():
    a, b = cnsim.run(ring(watchdog="200us")), cnsim.run(ring(watchdog="200us"))
    assert a.summary["pfc"] == b.summary["pfc"] and a.summary["frames"] == b.summary["frames"]


def test_pfc_errors_name_the_field():
    bad = incast()
    bad["defaults"]["buffer"]["policy"] = "egress"
    with pytest.raises(ConfigError, match="flow_control.mode.*allowed: 'shared'"):
        compile_ir(load_scenario(bad))
    with pytest.raises(ConfigError, match="traffic.0.priority"):
        load_scenario({**incast(), "traffic": [{**incast()["traffic"][0], "priority": 8}]})
    with pytest.raises(ConfigError, match="flow_control.headroom.*leaves no shared pool"):
        compile_ir(load_scenario(incast(headroom="300KB")))
    with pytest.raises(ConfigError, match="flow_control.scheduler.*applies to mode 'pfc'"):
        compile_ir(load_scenario({**incast(), "flow_control": {"mode": "global", "scheduler": "dwrr"}}))
    with pytest.raises(ConfigError, match="flow_control.high.*threshold = 'static'"):
        compile_ir(load_scenario(incast(threshold="dynamic", high="40KB")))


@needs_core
def test_the_run_summary_table_shows_the_deadlock_and_the_paused_priority():
    """`cnsim run` prints what a PFC user looks for: which priority paused, the wait-for cycle found during
    the run and the queues of the end-of-run deadlock."""
    from cnsim.cli.main import pfc_rows, summary_table
    from rich.console import Console

    s = cnsim.run(ring()).summary
    rows = dict(pfc_rows(s["pfc"]))
    assert "PFC priority 3" in rows and not any(k.startswith("PFC priority ") and k != "PFC priority 3" for k in rows)
    assert rows["PFC wait-for cycles"].startswith(f"{s['pfc']['cycles_detected']:,}; first at ")
    console = Console(record=True, width=200)
    console.print(summary_table(s))
    text = console.export_text()
    assert "PAUSE deadlock" in text and s["pause"]["deadlock"][0] in text and "PFC priority 3" in text
    assert pfc_rows(None) == []


@needs_core
def test_per_priority_counters_reach_the_summary_table_and_sweep_metrics(tmp_path):
    """The PFC counters per priority are columns of summary.parquet and sweep metrics, not only JSON lists."""
    import pandas as pd
    from cnsim.experiments.sweep_summary import flat_metrics

    r = cnsim.run(ring(), out=tmp_path / "r")
    row = pd.read_parquet(tmp_path / "r" / "summary.parquet").iloc[0]
    sent = r.summary["pfc"]["pause_sent"]
    assert sent[3] > 0 and [row[f"pfc.pause_sent[{k}]"] for k in range(8)] == sent
    m = flat_metrics(r.summary)
    assert m["pfc.pause_sent[3]"] == sent[3] and m["pfc.max_paused_fraction[0]"] == 0.0
