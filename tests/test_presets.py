"""Every preset compiles to the topology of model reference §9 (node, link and flow counts, connectivity)."""

from collections import deque

import pytest
from cnsim.compile.compiler import compile_ir
from cnsim.compile.loader import load_scenario
from cnsim.scenario.presets import PRESETS

# preset: (params, hosts, switches, links)
EXPECTED = {
    "symmetric": ({}, 5, 2, 6),
    "asymmetric": ({}, 6, 2, 7),
    "parking_lot": ({}, 9, 3, 11),
    "fan_in_100": ({}, 101, 5, 105),
    "cnsim_1hop": ({}, 10, 1, 10),
    "og_multistage": ({}, 10, 4, 13),
    "fan_in": ({"n_senders": 7}, 8, 1, 8),
    "single_port": ({"n_senders": 3}, 4, 1, 4),
    "fat_tree": ({"k": 4}, 16, 20, 48),
    "leaf_spine": ({"leaves": 3, "spines": 2, "hosts_per_leaf": 4}, 12, 5, 18),
}


def build(preset, params):
    sc = load_scenario(
        {
            "topology": {"preset": preset, "params": params},
            "traffic": [{"kind": "saturated", "src": "all", "dst": "all"}],
        }
    )
    return compile_ir(sc)


def test_every_preset_is_covered():
    assert set(EXPECTED) == set(PRESETS)


@pytest.mark.parametrize("preset", sorted(EXPECTED))
def test_counts_and_connectivity(preset):
    params, n_hosts, n_switches, n_links = EXPECTED[preset]
    ir = build(preset, params)
    kinds = [n["kind"] for n in ir["nodes"]]
    assert kinds.count("host") == n_hosts and kinds.count("switch") == n_switches
    assert len(ir["links"]) == n_links
    adj = {i: set() for i in range(len(ir["nodes"]))}
    for lk in ir["links"]:
        adj[lk["a"]].add(lk["b"])
        adj[lk["b"]].add(lk["a"])
    seen, todo = {0}, deque([0])
    while todo:
        for nb in adj[todo.popleft()] - seen:
            seen.add(nb)
            todo.append(nb)
    assert len(seen) == len(ir["nodes"])
    hosts = [i for i, k in enumerate(kinds) if k == "host"]
    assert all(len(adj[h]) == 1 for h in hosts)
    # all-to-all saturated traffic: one flow per ordered host pair
    assert len(ir["flows"]) == n_hosts * (n_hosts - 1)


def test_preset_specifics():
    asym = build("asymmetric", {})
    names = [n["name"] for n in asym["nodes"]]
    slow = [lk for lk in asym["links"] if {names[lk["a"]], names[lk["b"]]} == {"sw2", "h5"}]
    assert slow[0]["rate_bps"] == 10**9
    og = build("og_multistage", {})
    assert {lk["prop_ps"] for lk in og["links"]} == {10**6}
    assert {n["buffer"]["egress_bytes"] for n in og["nodes"] if n["kind"] == "switch"} == {600_000}
    # model reference §12 E1's alternative reading: one pool of 4 x 600 KB per switch
    og_shared = build("og_multistage", {"buffer_policy": "shared"})
    assert {n["buffer"]["shared_bytes"] for n in og_shared["nodes"] if n["kind"] == "switch"} == {2_400_000}
    cn = build("cnsim_1hop", {"n_hosts": 16})
    assert sum(n["kind"] == "host" for n in cn["nodes"]) == 16
    park = build("parking_lot", {"trunk_delay": "9.5us"})
    assert sorted(lk["prop_ps"] for lk in park["links"])[-2:] == [9_500_000, 9_500_000]


def test_preset_element_override_by_name():
    sc = load_scenario(
        {"topology": {"preset": "cnsim_1hop"}, "traffic": [{"kind": "saturated", "src": "h1", "dst": "h2"}]},
        overrides={
            "topology.switches.sw1.latency": "1us",
            "topology.links": [{"a": "h2", "b": "sw1", "rate": "1Gbps"}],
        },
    )
    ir = compile_ir(sc)
    sw = next(n for n in ir["nodes"] if n["kind"] == "switch")
    assert sw["latency_ps"] == 10**6
    assert sw["buffer"] == {"policy": "partitioned", "partitioned_bytes": 150_000}  # kept from the preset
    names = [n["name"] for n in ir["nodes"]]
    assert [lk["rate_bps"] for lk in ir["links"] if names[lk["a"]] == "h2"] == [10**9]


def test_stream_ids_follow_names_not_order():
    gens = [
        {"name": "a", "kind": "saturated", "src": "h1", "dst": "sink"},
        {"name": "b", "kind": "saturated", "src": "h2", "dst": "sink"},
    ]
    base = {"topology": {"preset": "fan_in", "params": {"n_senders": 2}}}
    one = compile_ir(load_scenario(dict(base, traffic=gens)))
    two = compile_ir(load_scenario(dict(base, traffic=gens[::-1])))
    assert {s["stream_id"] for s in one["sources"]} == {s["stream_id"] for s in two["sources"]}
    assert one["sources"][0]["stream_id"] == two["sources"][1]["stream_id"]
