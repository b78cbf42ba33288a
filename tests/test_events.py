"""Timed link events, failure detection, route recomputation and pinned paths (issue 36): frames on a dead link
are lost, routes avoid it after the detection delay, queued frames move to the new routes, a half-converged
fat tree loops into a PFC deadlock, pinned flows keep their path."""

from __future__ import annotations

import json
import warnings

import cnsim
import pytest
from cnsim.compile.compiler import compile_ir
from cnsim.compile.loader import load_scenario
from cnsim.exceptions import ConfigError, ConfigWarning
from conftest import ROOT, needs_core

FAILURE = ROOT / "scenarios/datacenter/fat-tree-k4-link-failure.toml"


def run(sc, **overrides):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        return cnsim.run(sc, overrides=overrides, plots=False)


def two_paths(**extra) -> dict:
    """h1 → s1 → (s2 or s3) → s4 → h2: a diamond whose two 5-Gb/s first hops ECMP chooses between; a saturated
    10-Gb/s source builds a queue at s1."""
    sw = ["s1", "s2", "s3", "s4"]
    sc = {
        "run": {"duration": "3ms"},
        "topology": {
            "hosts": [{"name": "h1"}, {"name": "h2"}],
            "switches": [{"name": n} for n in sw],
            "links": [
                {"a": "h1", "b": "s1"},
                {"a": "s1", "b": "s2", "rate": "5Gbps"},
                {"a": "s1", "b": "s3", "rate": "5Gbps"},
                {"a": "s2", "b": "s4"},
                {"a": "s3", "b": "s4"},
                {"a": "s4", "b": "h2"},
            ],
        },
        "defaults": {"buffer": {"policy": "egress", "size": "300KB"}},
        "traffic": [{"name": "t", "kind": "saturated", "src": "h1", "dst": "h2"}],
    }
    sc.update(extra)
    return sc


@needs_core
def test_a_failed_core_link_reroutes_without_loss_under_pfc():
    r = run(FAILURE, **{"observe.flow_series": "all"})
    s = r.summary
    assert s["routing"]["events"] == [{"t_s": 0.001, "link": ["a1_0", "c0_0"], "state": "down"}]
    # only the frames sent into the dead link during the 10-us detection are lost, none to PFC
    drops = s["drops"]["by_reason"]
    assert 0 < drops["link_down"] == s["frames"]["dropped"] <= 10e9 * 10e-6 / (1500 * 8) * 4
    assert drops["headroom_full"] == drops["shared_full"] == 0
    assert s["pfc"]["cycles_detected"] == 0 and s["pause"]["deadlock"] == []
    # every switch recomputed once (20 switches), and every flow still delivers after the failure
    assert s["routing"]["recomputations"] == 20
    tp = r.flow_tp
    early = tp[(tp["t_s"] >= 0.2e-3) & (tp["t_s"] < 1e-3)].groupby("flow")["bps"].mean()
    late = tp[tp["t_s"] >= 2e-3].groupby("flow")["bps"].mean()
    # (each frame of a pod-0 host picks one of 4 destinations: 1.5 Gb/s per flow on average)
    assert len(late) == len(s["flows"]) and late.sum() > 0.98 * early.sum() and late.min() > 0.8 * 1.5e9
    # the dead link carries nothing after detection: its utilisation is what went before the failure
    dead = next(lk for lk in s["links"] if (lk["from"], lk["to"]) == ("c0_0", "a1_0"))
    assert dead["utilization"] < 0.25
    assert s["conservation"]["ok"]


@needs_core
def test_a_half_converged_fat_tree_loops_into_a_pfc_deadlock():
    s = run(FAILURE, **{"topology.route_convergence": "never"}).summary
    # only the two ends of the link learn of it: a core and an aggregation switch send pod-1 frames back and
    # forth, PFC pauses both directions and the wait-for cycle closes
    assert s["routing"]["recomputations"] == 2
    first = s["pfc"]["first_cycle"]
    assert s["pfc"]["cycles_detected"] > 0 and first["t_s"] > 1e-3
    assert (
        len(first["queues"]) == 2
        and first["queues"][0].startswith("c0_0>a")
        and first["queues"][1].endswith(">c0_0:p3")
    )
    assert set(s["pause"]["deadlock"]) == set(first["queues"]) and s["pause"]["stuck_ports"] >= 2


@needs_core
def test_detection_delay_sets_how_much_the_dead_link_swallows():
    lost = [
        run(FAILURE, **{"topology.link_detection": d}).summary["drops"]["by_reason"]["link_down"]
        for d in ("0us", "10us", "50us")
    ]
    assert lost[0] < lost[1] < lost[2]
    assert lost[0] <= 3  # the frames on the wire when it failed


@needs_core
def test_queued_frames_move_to_the_new_route_and_a_link_comes_back():
    base = run(two_paths()).summary
    used = [
        lk["to"] for lk in base["links"] if lk["from"] == "s1" and lk["to"] in ("s2", "s3") and lk["utilization"] > 0.9
    ]
    assert len(used) == 1, "ECMP keeps the flow on one of the two paths"
    other = "s3" if used[0] == "s2" else "s2"
    # fail the link the flow uses at 1 ms, repair it at 2 ms; detection is instant: s1 moves its queue
    ev = [
        {"at": "1ms", "link": ["s1", used[0]], "state": "down"},
        {"at": "2ms", "link": ["s1", used[0]], "state": "up"},
    ]
    s = run(two_paths(events=ev)).summary
    links = {(lk["from"], lk["to"]): lk for lk in s["links"]}
    assert s["routing"]["rerouted_frames"] > 50  # s1's queue (~300 KB of 1500-B frames) moved
    assert s["drops"]["by_reason"]["link_down"] <= 3  # the frames on the wire
    assert s["conservation"]["ok"]
    # the other path carried the flow while the link was down (a third of the run) and the queue moved to
    # it (300 KB = 0.48 ms at 5 Gb/s); the first one before and after: together the flow was never stalled
    other_u, used_u = links[("s1", other)]["utilization"], links[("s1", used[0])]["utilization"]
    assert 0.3 < other_u < 0.55 and 0.55 < used_u < 0.8, (other_u, used_u)
    assert other_u + used_u > 0.98
    assert s["routing"]["recomputations"] == 8  # 4 switches learn of the failure, then of the repair


@needs_core
def test_a_pinned_flow_keeps_its_path():
    ir = compile_ir(load_scenario(FAILURE))
    names = [n["name"] for n in ir["nodes"]]
    [pin] = ir["routing"]["pinned"]
    assert [names[i] for i in pin["path"]] == ["h9", "e2_0", "a2_1", "c1_1", "a3_1", "e3_0", "h13"]
    from cnsim import api

    paths = api.core().flow_paths(json.dumps(ir))
    assert paths[pin["flow"]] == pin["path"], "flow_paths reports the pinned path"
    s = run(FAILURE).summary
    used = {(lk["from"], lk["to"]) for lk in s["links"] if lk["utilization"] > 0}
    path = [names[i] for i in pin["path"]]
    assert all((a, b) in used for a, b in zip(path, path[1:]))
    # nothing else runs from pod 2 to pod 3: every other link out of e2_0 is idle
    assert {(a, b) for a, b in used if a == "e2_0"} == {("e2_0", "a2_1")}
    # pinned onto the link that fails, a flow loses everything it sends after the failure
    s = run(FAILURE, **{"events.0.link": ["c1_1", "a3_1"]}).summary
    pinned = next(f for f in s["flows"] if f["src"] == "h9")
    assert pinned["dropped"] > 0.9 * 2e9 * 4e-3 / (1500 * 8)


@needs_core
def test_link_events_are_deterministic_and_cost_nothing_without_them():
    a, b = run(FAILURE).summary, run(FAILURE).summary
    for k in ("frames", "drops", "routing", "flows"):
        assert a[k] == b[k]
    ir = compile_ir(load_scenario(two_paths()))
    assert "routing" not in ir, "a scenario without events or pins keeps its IR"


def test_bad_events_and_paths_are_field_errors():
    cases = [
        ({"events": [{"at": "1ms", "link": ["h1", "h2"], "state": "down"}]}, "events.0.link"),
        ({"events": [{"at": "1ms", "link": ["s1", "s4"], "state": "down"}]}, "events.0.link"),
        ({"events": [{"at": "1ms", "link": ["s1", "nosuch"], "state": "down"}]}, "events.0.link"),
        (
            {"traffic": [{"name": "t", "kind": "saturated", "src": "h1", "dst": "h2", "path": ["h2", "s1", "h1"]}]},
            "traffic.0.path",
        ),
        (
            {
                "traffic": [
                    {"name": "t", "kind": "saturated", "src": "h1", "dst": "h2", "path": ["h1", "s2", "s4", "h2"]}
                ]
            },
            "traffic.0.path.1",
        ),
        (
            {
                "traffic": [
                    {
                        "name": "t",
                        "kind": "saturated",
                        "src": "h1",
                        "dst": "h2",
                        "path": ["h1", "s1", "s2", "s1", "s3", "s4", "h2"],
                    }
                ]
            },
            "traffic.0.path.3",
        ),
        (
            {
                "traffic": [
                    {
                        "name": "t",
                        "kind": "saturated",
                        "src": "all",
                        "dst": "h2",
                        "path": ["h1", "s1", "s2", "s4", "h2"],
                    }
                ]
            },
            "traffic.0.path",
        ),
    ]
    for extra, field in cases:
        with pytest.raises(ConfigError) as e:
            compile_ir(load_scenario(two_paths(**extra)))
        assert field in str(e.value), (field, str(e.value))
    with pytest.raises(ConfigError, match="events.0.state"):
        load_scenario(two_paths(events=[{"at": "1ms", "link": ["s1", "s2"], "state": "flapping"}]))
