"""Issue 13 (first part): ECMP on fat trees and leaf-spine fabrics — the presets' shape, flows spread over
equal-cost paths within binomial bounds, a flow keeps its path, `routing = "single"` puts everything on one
path, and the model's paths (`_core.flow_paths`) are the ones the engine forwards on."""

from __future__ import annotations

import json
import math
from collections import Counter

import cnsim
import pytest
from cnsim import api
from cnsim.compile.compiler import compile_ir
from cnsim.compile.loader import load_scenario
from conftest import needs_core

pytestmark = needs_core


def leaf_spine(spines: int = 4, hosts: int = 16, routing: str = "ecmp", seed: int = 1, traffic=None) -> dict:
    src = [f"h{i}" for i in range(1, hosts + 1)]
    dst = [f"h{i}" for i in range(hosts + 1, 2 * hosts + 1)]
    return {
        "run": {"duration": "1ms", "seed": seed},
        "topology": {
            "preset": "leaf_spine",
            "params": {"leaves": 2, "spines": spines, "hosts_per_leaf": hosts},
            "routing": routing,
        },
        "traffic": traffic or [{"name": "cross", "kind": "cbr", "src": src, "dst": dst, "rate": "0.1Gbps"}],
    }


def spine_of(ir: dict, path: list[int]) -> str:
    names = [n["name"] for n in ir["nodes"]]
    return next(names[v] for v in path if names[v].startswith("s"))


@pytest.mark.parametrize("k, hosts, switches, links", [(4, 16, 20, 48), (8, 128, 80, 384)])
def test_fat_tree_shape(k, hosts, switches, links):
    ir = compile_ir(
        load_scenario(
            {
                "run": {"duration": "1ms"},
                "topology": {"preset": "fat_tree", "params": {"k": k}},
                "traffic": [{"kind": "cbr", "src": "h1", "dst": "h2", "rate": "1Gbps"}],
            }
        )
    )
    kinds = Counter(n["kind"] for n in ir["nodes"])
    assert (kinds["host"], kinds["switch"], len(ir["links"])) == (hosts, switches, links)
    assert ir["ecmp"] is True


def test_flows_spread_over_spines_within_binomial_bounds():
    # every host of leaf 1 sends to every host of leaf 2: 16 x 16 = 256 flows over 4 spines
    sc = leaf_spine(
        traffic=[
            {
                "name": "x",
                "kind": "cbr",
                "src": [f"h{i}" for i in range(1, 17)],
                "dst": [f"h{i}" for i in range(17, 33)],
                "rate": "0.1Gbps",
            }
        ]
    )
    ir = compile_ir(load_scenario(sc))
    paths = api.core().flow_paths(json.dumps(ir))
    counts = Counter(spine_of(ir, p) for p in paths)
    n = len(paths)
    assert n == 256 and set(counts) == {"s1", "s2", "s3", "s4"}
    sd = math.sqrt(n * 0.25 * 0.75)
    assert all(abs(c - n / 4) <= 3.5 * sd for c in counts.values()), counts
    # the choice is seeded: another master seed moves some flows
    other = api.core().flow_paths(json.dumps(compile_ir(load_scenario({**sc, "run": {"duration": "1ms", "seed": 2}}))))
    assert other != paths and len(other) == n


def test_single_routing_uses_one_spine():
    sc = leaf_spine(routing="single")
    ir = compile_ir(load_scenario(sc))
    assert {spine_of(ir, p) for p in api.core().flow_paths(json.dumps(ir))} == {"s1"}


def test_a_flow_keeps_its_path_and_the_engine_forwards_on_the_models_path():
    """One flow at 5 Gb/s: exactly the leaf → spine → leaf links of its flow_paths path carry data, so every
    frame took the same path (no reordering by ECMP) and the model sees the engine's path."""
    sc = leaf_spine(hosts=2, traffic=[{"name": "one", "kind": "cbr", "src": "h1", "dst": "h3", "rate": "5Gbps"}])
    res = cnsim.run(sc, overrides={"run.duration": "2ms"})
    ir = compile_ir(load_scenario(sc))
    spine = spine_of(ir, api.core().flow_paths(json.dumps(ir))[0])
    used = {(lk["from"], lk["to"]) for lk in res.summary["links"] if lk["utilization"] > 0.01}
    assert ("l1", spine) in used and (spine, "l2") in used
    assert sum(1 for a, b in used if a == "l1" and b.startswith("s")) == 1
    assert res.summary["frames"]["dropped"] == 0 and res.summary["conservation"]["ok"]


def test_fat_tree_runs_deterministically_with_traffic_on_every_core_switch():
    sc = {
        "run": {"duration": "2ms"},
        "topology": {"preset": "fat_tree", "params": {"k": 4}},
        "traffic": [{"name": "all", "kind": "cbr", "src": "all", "dst": "all", "rate": "1Gbps"}],
    }
    a, b = cnsim.run(sc), cnsim.run(sc)
    assert a.summary["flows"] == b.summary["flows"] and a.summary["frames"] == b.summary["frames"]
    core_in = Counter(lk["to"] for lk in a.summary["links"] if lk["to"].startswith("c") and lk["utilization"] > 0)
    assert set(core_in) == {"c0_0", "c0_1", "c1_0", "c1_1"}


# ---- published flow-size workloads and FCT slowdown ---------------------------------------------------------


def workload(cdf: str, load: float, duration: str, hosts: int = 8, seed: int = 1, **topo) -> dict:
    return {
        "run": {"duration": duration, "seed": seed},
        "topology": {
            "preset": "leaf_spine",
            "params": {"leaves": 2, "spines": 2, "hosts_per_leaf": hosts // 2, **topo},
        },
        "traffic": [{"name": "w", "kind": "workload", "cdf": cdf, "src": "all", "dst": "all", "load": load}],
    }


def test_workload_sizes_follow_the_cdf_and_the_load_the_target():
    """FB Hadoop at 30 % load on 8 hosts for 80 ms (≈ 2 000 flows): the generated sizes pass a KS test
    against the CDF (rounded up to whole frames, as sent) and the generated bytes are the target load
    within 5 %."""
    import numpy as np
    from cnsim import workloads

    res = cnsim.run(workload("fb_hadoop", 0.3, "80ms"))
    t = res.tables["fct"]
    cdf = workloads.read_cdf(str(workloads.cdf_path("fb_hadoop")))
    sizes = np.sort(t["bytes"].to_numpy(dtype=float))
    n = len(sizes)
    assert n > 1500
    # sizes are whole frames: sent <= v exactly when size <= v for v a multiple of the frame, so compare the
    # empirical and the model CDF on the support (KS statistic of a discrete law; the continuous critical
    # value 1.63 / sqrt(n) at 1 % is conservative for it)
    support = np.unique(sizes)
    empirical = np.searchsorted(sizes, support, side="right") / n
    model = np.interp(support, [p[0] for p in cdf], [p[1] for p in cdf])
    d = np.max(np.abs(empirical - model))
    assert d < 1.63 / np.sqrt(n), d
    offered = t["bytes"].sum() * 8 / (0.08 * 8 * 10e9)
    assert abs(offered - 0.3) < 0.05 * 0.3, offered


def test_a_lone_flow_has_slowdown_one_within_a_frame_time():
    """FB Hadoop at 1 % load on 4 hosts (≈ 80 flows of 0.1 ms in 200 ms): flows rarely meet. A flow that met
    no other one finishes in its ideal time (empty-network store-and-forward) within one frame time, so its
    slowdown is 1."""
    res = cnsim.run(workload("fb_hadoop", 0.01, "200ms", hosts=4))
    t = res.tables["fct"].dropna(subset=["slowdown"])
    assert len(t) >= 40
    err = (t["fct_s"] - t["ideal_s"]).abs()
    assert (err <= 1.2e-6 + 1e-12).mean() >= 0.9, t[["bytes", "fct_s", "ideal_s"]]
    assert t["slowdown"].min() >= 1 - 1e-9
    s = res.summary["fct_slowdown"]
    assert s["all"]["n"] == len(t) and abs(s["all"]["p50"] - 1) < 1e-6
    assert sum(b["n"] for b in s["buckets"]) == len(t)


def test_fat_tree_workload_conserves_and_is_deterministic():
    sc = {
        "run": {"duration": "3ms"},
        "topology": {"preset": "fat_tree", "params": {"k": 4}},
        "traffic": [{"name": "w", "kind": "workload", "cdf": "websearch", "src": "all", "dst": "all", "load": 0.5}],
    }
    a, b = cnsim.run(sc), cnsim.run(sc)
    assert a.summary["conservation"]["ok"]
    f = a.summary["frames"]
    assert f["generated"] == f["delivered"] + f["dropped"] + f["in_flight"] + f["host_queued"]
    assert a.summary["frames"] == b.summary["frames"] and a.summary["fct_slowdown"] == b.summary["fct_slowdown"]
    assert a.tables["fct"].equals(b.tables["fct"])


def test_a_bad_workload_names_the_field(tmp_path):
    from cnsim.exceptions import ConfigError

    with pytest.raises(ConfigError, match="cdf: unknown workload 'websurch'"):
        load_scenario(workload("websurch", 0.5, "1ms"))
    bad = tmp_path / "bad.cdf"
    bad.write_text("0 0\n100 50\n50 100\n")
    with pytest.raises(ConfigError, match="must not decrease"):
        compile_ir(load_scenario(workload(str(bad), 0.5, "1ms")))
    with pytest.raises(ConfigError, match="load"):
        load_scenario(workload("websearch", 1.5, "1ms"))


def test_incast_rounds_are_synchronised_and_sized():
    """Three senders, one 15 KB flow each every 1 ms to h1: 3 transfers per round, all of 10 frames, all
    started at the same instants (the round times)."""
    sc = {
        "run": {"duration": "5ms"},
        "topology": {"preset": "leaf_spine", "params": {"leaves": 2, "spines": 1, "hosts_per_leaf": 2}},
        "traffic": [
            {
                "name": "incast",
                "kind": "incast",
                "src": ["h2", "h3", "h4"],
                "dst": "h1",
                "size": "15KB",
                "period": "1ms",
                "phase": "100us",
            }
        ],
    }
    t = cnsim.run(sc).tables["fct"]
    assert len(t) == 15 and set(t["frames"]) == {10}
    starts = sorted(set(round(x, 9) for x in t["start_s"]))
    assert starts == [round(0.0001 + k * 0.001, 9) for k in range(5)]
    assert t.groupby("start_s").size().tolist() == [3] * 5


def test_partial_last_frames_send_each_flows_bytes_and_keep_the_load_and_a_lone_flows_slowdown():
    """FB Hadoop (60 % of its flows under 1 KB) with last_frame = "partial": a flow of S bytes is sent as
    ceil(S / 1500) frames, the last one the remainder padded to 64 B, so the fct table's bytes are the
    sizes themselves (KS against the CDF, continuous now); the generated bytes are the target load
    (λ from the mean of those sizes); at 1 % load a flow that met no other has slowdown 1 within one
    frame time, the ideal counting its short last frame; bytes are conserved."""
    import numpy as np
    from cnsim import workloads

    sc = workload("fb_hadoop", 0.3, "80ms")
    sc["traffic"][0]["last_frame"] = "partial"
    res = cnsim.run(sc)
    s, t = res.summary, res.tables["fct"]
    b = s["bytes"]
    assert b["generated"] == b["delivered"] + b["dropped"] + b["in_flight"] + b["host_queued"]
    sizes = np.sort(t["bytes"].to_numpy(dtype=float))
    n = len(sizes)
    assert sizes.min() >= 64 and (np.sort(t["bytes"].to_numpy()) % 1500 != 0).mean() > 0.9
    assert (t["frames"] == np.ceil(np.maximum(t["bytes"], 1) / 1500)).all()
    cdf = workloads.read_cdf(str(workloads.cdf_path("fb_hadoop")))
    padded = [(max(x, 64.0), q) for x, q in cdf]  # a flow under 64 B is one 64-B frame
    model = np.interp(sizes, [p[0] for p in padded], [p[1] for p in padded])
    empirical = np.arange(1, n + 1) / n
    assert np.max(np.abs(empirical - model)) < 1.63 / np.sqrt(n)
    offered = t["bytes"].sum() * 8 / (0.08 * 8 * 10e9)
    assert abs(offered - 0.3) < 0.05 * 0.3, offered
    # λ follows the mean of the sizes as sent: rounding up to whole frames adds ≈ 1.2 KB to the 0.12-MB mean
    gaps = [
        compile_ir(load_scenario(w))["sources"][0]["process"]["mean_gap_ps"]
        for w in (workload("fb_hadoop", 0.3, "80ms"), sc)
    ]
    means = [workloads.mean_wire_bytes(cdf, 1500), workloads.mean_wire_bytes(cdf, 1500, partial=True)]
    assert gaps[0] / gaps[1] == pytest.approx(means[0] / means[1], rel=1e-6) and 1.005 < means[0] / means[1] < 1.02

    lone = workload("fb_hadoop", 0.01, "200ms", hosts=4)
    lone["traffic"][0]["last_frame"] = "partial"
    t = cnsim.run(lone).tables["fct"].dropna(subset=["slowdown"])
    assert len(t) >= 40 and (t["bytes"] < 1500).mean() > 0.4
    err = (t["fct_s"] - t["ideal_s"]).abs()
    assert (err <= 1.2e-6 + 1e-12).mean() >= 0.9, t[["bytes", "fct_s", "ideal_s"]]
    assert t["slowdown"].min() >= 1 - 1e-9


def test_partial_last_segments_over_tcp_write_the_flows_bytes():
    """Incast of 2 × 5 000 B over TCP with last_frame = "partial": 4 segments of MSS 1 460 B, the last one
    620 B of payload + 40 B of header; the fct table counts 5 000 + 4 × 40 B; both complete."""
    sc = {
        "run": {"duration": "2ms"},
        "topology": {"preset": "leaf_spine", "params": {"leaves": 1, "spines": 1, "hosts_per_leaf": 3}},
        "traffic": [
            {
                "name": "incast",
                "kind": "incast",
                "src": ["h2", "h3"],
                "dst": "h1",
                "size": "5000B",
                "period": "10ms",
                "phase": "100us",
                "transport": "tcp",
                "last_frame": "partial",
            }
        ],
    }
    res = cnsim.run(sc)
    t = res.tables["fct"]
    assert len(t) == 2 and (t["completed"] == 1).all()
    assert set(t["frames"]) == {4} and set(t["bytes"]) == {5000 + 4 * 40}
    assert res.summary["tcp"]["goodput_bps"] > 0
    assert sum(f["acked_bytes"] for f in res.summary["flows"]) == 2 * 5000


@pytest.mark.extensive  # two k = 8 fat-tree runs
def test_switch_wide_pause_deadlocks_the_k8_fat_tree_and_the_watchdog_recovers_it():
    """802.3x PAUSE that stops every input of a switch couples all its ports: the k = 8 fat tree under
    WebSearch freezes within a millisecond. The end-of-run report finds a cycle of stuck ports, each
    waiting on the next; with a 200-µs watchdog the ports stop honouring PAUSE in turn, the fabric moves
    again (frames are lost instead), and no cycle is left."""
    base = {"defaults.buffer.policy": "egress", "flow_control.mode": "global", "run.duration": "10ms"}
    sc = "scenarios/datacenter/fat-tree-k8-websearch-dcqcn.toml"
    from conftest import ROOT

    stuck = cnsim.run(ROOT / sc, overrides=base).summary
    cyc = stuck["pause"]["deadlock"]
    assert stuck["pause"]["stuck_ports"] > 0 and len(cyc) >= 2, stuck["pause"]
    for a, b in zip(cyc, cyc[1:] + cyc[:1]):
        assert a.split(">")[1] == b.split(">")[0], cyc  # each port sends to the switch of the next
    assert stuck["pause"]["watchdog_trips"] == 0 and stuck["frames"]["dropped"] == 0
    freed = cnsim.run(ROOT / sc, overrides={**base, "flow_control.watchdog": "200us"}).summary
    assert freed["pause"]["watchdog_trips"] > 0 and freed["pause"]["deadlock"] == []
    # (a queue per transfer: 3.3x the frozen run's deliveries; 5x and more with a FIFO per host pair,
    # whose frozen run delivers less)
    assert freed["frames"]["delivered"] > 2.5 * stuck["frames"]["delivered"]
    assert freed["conservation"]["ok"]
