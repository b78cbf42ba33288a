"""The pieces of `make bench` (bench/run.py) that decide what is compared: the fat tree's host pairs,
the paths handed to ns-3, and the paired ratios."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_permutation_pairs_every_host_once_and_none_with_itself(bench):
    pairs = bench.permutation(128, 1)
    assert sorted(s for s, _ in pairs) == list(range(128))
    assert sorted(d for _, d in pairs) == list(range(128))
    assert all(s != d for s, d in pairs)
    assert pairs == bench.permutation(128, 1) and pairs != bench.permutation(128, 2)


def test_paths_file_follows_cnsim_routes(bench, tmp_path):
    """Every data path runs from the flow's source to its destination over links of the topology, its
    ACK path back; ns-3 forwards along exactly these."""
    scenario = bench.fat_tree_scenario({"k": 4, "ms": 1.0, "perm_seed": 3})
    lines = bench.write_paths(tmp_path, "ft", scenario).read_text().splitlines()
    links = {tuple(map(int, x.split()[1:])) for x in lines if x.startswith("link ")}
    links |= {(b, a) for a, b in links}
    flows = [x.split() for x in lines if x.startswith("flow ")]
    assert len(flows) == 16
    for f in flows:
        src, dst, k = int(f[1]), int(f[2]), f.index("ack")
        path, ack = [int(x) for x in f[4:k]], [int(x) for x in f[k + 1 :]]
        assert (path[0], path[-1], ack[0], ack[-1]) == (src, dst, dst, src)
        assert all((a, b) in links for p in (path, ack) for a, b in zip(p, p[1:]))


def test_paired_ratios_are_taken_round_by_round(bench):
    a = [{"round": 0, "x": 10.0}, {"round": 1, "x": 30.0}, {"round": 2, "x": 12.0}]
    b = [{"round": 0, "x": 1.0}, {"round": 1, "x": 2.0}, {"round": 3, "x": 9.0}]
    r = bench.paired(a, b, "x")
    assert r == {"median": 12.5, "min": 10.0, "max": 15.0, "rounds": 2}


def test_key_value_lines_are_read_with_their_types(bench):
    kv = bench.parse_kv("noise\nsim=ns3 delivered=12 run_s=0.5 name=x\n")
    assert kv == {"sim": "ns3", "delivered": 12, "run_s": 0.5, "name": "x"}
