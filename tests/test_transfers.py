"""A send queue per transfer (issue 31): each transfer (workload, incast, Pareto ON period, TCP transfer)
gets its own queue, rate limiter and CC state at the source NIC (`nic.queues = "transfer"`, the default),
or shares its flow's FIFO (`"fifo"`, the 2006-07 studies' host); `nic.rate_limiters = "flow"` keeps the
flow's one limiter with transfer queues served round robin."""

from __future__ import annotations

import math

import cnsim
import pytest
from cnsim.compile.compiler import compile_ir
from cnsim.compile.loader import load_scenario
from cnsim.exceptions import ConfigError
from conftest import ROOT, needs_core

pytestmark = needs_core


def short_behind_long(queues: str, limiters: str | None = None, scheme: str = "dcqcn") -> dict:
    """h1 starts a 20-MB transfer to h2 at 0 and a 3-kB one at 2 ms; h3 saturates h2's link too, so
    the congestion point cuts h1's long transfer."""
    nic = {"queues": queues} | ({"rate_limiters": limiters} if limiters else {})
    return {
        "run": {"duration": "6ms", "name": "short-behind-long"},
        "topology": {
            "hosts": ["h1", "h2", "h3"],
            "switches": ["s1"],
            "links": [["s1", "h1"], ["s1", "h2"], ["s1", "h3"]],
        },
        "traffic": [
            {"name": "long", "kind": "incast", "src": "h1", "dst": "h2", "size": "20MB", "period": "1s"},
            {
                "name": "short",
                "kind": "incast",
                "src": "h1",
                "dst": "h2",
                "size": "3000B",
                "period": "1s",
                "phase": "2ms",
            },
            {"name": "cross", "kind": "saturated", "src": "h3", "dst": "h2"},
        ],
        "cm": {"scheme": scheme},
        "nic": nic,
    }


def test_a_short_transfer_does_not_wait_behind_a_throttled_long_one_of_its_pair():
    own = cnsim.run(short_behind_long("transfer"))
    fct = own.fct.set_index("transfer")
    short, long_ = fct.loc[1], fct.loc[0]
    assert short["completed"] == 1 and long_["completed"] == 0
    # its FCT is its unloaded one plus the wait in the bottleneck queue, never more: it starts at once
    # and is not held by the long transfer's limiter
    bottleneck = next(q for q in own.summary["queues"] if q["port"] == "h2")
    assert short["first_tx_s"] == short["start_s"]
    assert short["fct_s"] <= short["ideal_s"] + bottleneck["max_bytes"] * 8 / 10e9 + 2e-6
    # the long transfer was throttled meanwhile: DCQCN cut its queue's rate (the flow's rate series is
    # its most throttled transfer's)
    rates = own.rp_rate[own.rp_rate["src"] == "h1"]["rate_bps"]
    assert rates.min() < 5e9
    # with one FIFO per host pair the short transfer waits behind the whole long one: not even started
    fifo = cnsim.run(short_behind_long("fifo")).fct.set_index("transfer")
    assert fifo.loc[1]["completed"] == 0 and math.isnan(fifo.loc[1]["first_tx_s"])
    # transfer queues sharing the pair's limiter: served round robin, the short one finishes, but at
    # the throttled pair's rate, slower than with a limiter of its own
    shared = cnsim.run(short_behind_long("transfer", "flow")).fct.set_index("transfer")
    assert shared.loc[1]["completed"] == 1
    assert shared.loc[1]["fct_s"] > short["fct_s"]
    for r in (own,):
        assert r.summary["conservation"]["ok"] and r.summary["nic"]["queue_per_transfer"]


def test_transfers_of_a_generator_with_many_destinations_share_one_flow_per_source():
    sc = "scenarios/datacenter/fat-tree-k4-websearch50-dcqcn.toml"
    ir = compile_ir(load_scenario(ROOT / sc, {"run.duration": "2ms"}))
    assert len(ir["flows"]) == 16 and all(f["dst"] is None for f in ir["flows"])
    assert ir["nic"] == {"queues": "transfer", "rate_limiters": "queue"}
    assert len(ir["dst_sets"]) == 1 and len(ir["dst_sets"][0]) == 16
    r = cnsim.run(ROOT / sc, overrides={"run.duration": "20ms"})
    f = r.fct
    assert len(f) > 60 and (f["src"].astype(str) != f["dst"].astype(str)).all()
    assert f["dst"].nunique() > 8, "destinations drawn per transfer"
    assert set(r.tables["flows"]["dst"].astype(str)) == {"*"}
    s = r.summary
    assert s["conservation"]["ok"] and 0 < s["nic"]["transfer_queue_slots"] <= len(f)
    assert sum(x["delivered_frames"] for x in s["flows"]) == s["frames"]["delivered"]
    # with the FIFO NIC the flows are the host pairs again
    pairs = compile_ir(load_scenario(ROOT / sc, {"run.duration": "2ms", "nic.queues": "fifo"}))
    assert len(pairs["flows"]) == 16 * 15 and "nic" not in pairs and "dst_sets" not in pairs


def test_the_transfer_queue_runs_are_deterministic():
    ov = {"run.duration": "3ms"}
    sc = ROOT / "scenarios/datacenter/fat-tree-k4-websearch50-hpcc.toml"
    a, b = (cnsim.run(sc, seed=4, overrides=ov) for _ in range(2))
    strip = lambda s: {k: v for k, v in s.items() if k != "wall_s"}  # noqa: E731
    assert strip(a.summary) == strip(b.summary)
    assert a.fct.equals(b.fct)


def test_seed_scenarios_keep_the_fifo_nic_and_their_ir():
    # the seeds' hosts: one FIFO per flow; a scenario with the FIFO NIC (or no transfers) has no nic in its IR
    for path in (
        "seed-003/cnsim-1hop-ecm-hs2-pause.toml",
        "seed-002/bursty-udp-1ms-bcn.toml",
        "baseline/fan-in-4.toml",
    ):
        sc = load_scenario(ROOT / "scenarios" / path)
        assert "nic" not in compile_ir(sc), path


def test_nic_choices_are_checked():
    with pytest.raises(ConfigError, match="nic"):
        load_scenario(short_behind_long("fifo", "queue"))
    with pytest.raises(ConfigError, match="nic.queues"):
        load_scenario(short_behind_long("qp"))


@pytest.mark.extensive
def test_a_fabric_of_1024_hosts_runs_in_far_less_than_a_gigabyte(tmp_path):
    # state grows with the transfers in progress, not the 10^6 host pairs (5.4 GB with a flow per pair)
    import subprocess
    import sys

    code = (
        "import cnsim, resource, sys; cnsim.run(sys.argv[1], overrides={'run.duration': '2ms'}, out=sys.argv[2], "
        "plots=False); print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    sc = ROOT / "scenarios/datacenter/fat-tree-k16-websearch-dcqcn.toml"
    out = subprocess.run(
        [sys.executable, "-c", code, str(sc), str(tmp_path / "k16")], capture_output=True, text=True, check=True
    )
    assert int(out.stdout.split()[-1]) < 1024 * 1024, out.stdout  # KiB
