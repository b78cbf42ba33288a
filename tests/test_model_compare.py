"""Topology extraction from the engine IR and the model-vs-simulation table (issue 7)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cnsim.model import BcnParams, Topology, describe_ir
from cnsim.model.compare import model_vs_sim, params_from_ir, plot_fluid, plot_model_vs_sim, predictions

ROOT = Path(__file__).resolve().parents[1]
PS_PER_US = 1_000_000


def _switch(name: str) -> dict:
    return {
        "kind": "switch",
        "name": name,
        "latency_ps": PS_PER_US,
        "buffer": {"policy": "egress", "egress_bytes": 150_000},
        "pause": {"mode": "none"},
    }


def _host(name: str) -> dict:
    return {"kind": "host", "name": name, "response_delay_ps": PS_PER_US}


def complete(ir: dict) -> dict:
    """A hand-built IR with the engine's global fields (from a shipped scenario) added, so the engine
    can route it (the model takes its paths from ``_core.flow_paths``)."""
    from cnsim.compile import loader
    from cnsim.compile.compiler import compile_ir

    base = compile_ir(loader.load_scenario(ROOT / "scenarios/baseline/md1.toml"))
    glob = {
        k: base[k]
        for k in (
            "name",
            "duration_ps",
            "warmup_ps",
            "seed",
            "replication",
            "control_frame_bytes",
            "wire_overhead_bytes",
            "observe",
            "cm",
        )
    }
    return {**glob, "hotspots": [], **ir}


def parking_lot_ir(scheme: dict | None = None) -> dict:
    """The §9.3 parking lot as an engine IR (only the fields the model reads are meaningful)."""
    names = ["sw1", "sw2", "sw3"] + [f"h{i}" for i in range(1, 10)]
    nodes = [_switch(n) if n.startswith("sw") else _host(n) for n in names]
    idx = {n: i for i, n in enumerate(names)}
    attach = {
        "h1": "sw1",
        "h2": "sw1",
        "h3": "sw1",
        "h4": "sw1",
        "h5": "sw1",
        "h6": "sw2",
        "h7": "sw2",
        "h8": "sw3",
        "h9": "sw3",
    }
    pairs = [("sw1", "sw2"), ("sw2", "sw3")] + [(sw, h) for h, sw in attach.items()]
    links = [{"a": idx[a], "b": idx[b], "rate_bps": 10**10, "prop_ps": PS_PER_US // 2} for a, b in pairs]
    routes = [("h1", "h9"), ("h2", "h9"), ("h3", "h9"), ("h4", "h9"), ("h5", "h7"), ("h6", "h8")]
    flows = [{"src": idx[s], "dst": idx[d], "frame_bytes": 1500} for s, d in routes]
    sources = [
        {"stream_id": i, "flows": [i], "start_ps": 0, "stop_ps": 2**64 - 1, "process": {"kind": "saturated"}}
        for i in range(len(flows))
    ]
    return complete(
        {
            "name": "park",
            "nodes": nodes,
            "links": links,
            "flows": flows,
            "sources": sources,
            "cm": scheme or {"scheme": "none", "params": {}},
        }
    )


def test_describe_ir_paths_capacities_and_delays():
    desc = describe_ir(parking_lot_ir())
    flows = desc["flows"]
    assert flows[0]["path"] == ["h1->sw1", "sw1->sw2", "sw2->sw3", "sw3->h9"]
    assert flows[4]["path"] == ["h5->sw1", "sw1->sw2", "sw2->h7"]
    assert flows[5]["path"] == ["h6->sw2", "sw2->sw3", "sw3->h8"]
    links = {link["id"]: link for link in desc["links"]}
    assert len(links) == 2 * 11
    assert links["sw1->sw2"]["cp"] and not links["h1->sw1"]["cp"]
    assert links["sw1->sw2"]["buffer_bytes"] == 150_000
    topo = Topology.from_description(desc)
    assert topo.one_way_delay_s(0) == pytest.approx(4 * 0.5e-6 + 3 * 1e-6)
    assert topo.demands == [None] * 6


def test_paths_are_the_engines_routes_ties_by_link_order():
    # s0 - sw1 -{sw4 | sw2}- sw5 - sw3 - h: two 5-hop routes; the engine (net/routing.rs) breaks the tie by
    # link order (sw5 lists sw4 before sw2, although sw2 has the lower index). The model takes exactly the
    # engine's path (a host has one link, so no path transits a host).
    names = ["s0", "sw1", "sw2", "sw3", "h", "sw4", "sw5"]
    nodes = [_switch(n) if n.startswith("sw") else _host(n) for n in names]
    pairs = [(0, 1), (1, 5), (1, 2), (5, 6), (2, 6), (6, 3), (3, 4)]
    links = [{"a": a, "b": b, "rate_bps": 10**9, "prop_ps": 0} for a, b in pairs]
    ir = complete(
        {
            "nodes": nodes,
            "links": links,
            "flows": [{"src": 0, "dst": 4, "frame_bytes": 1500}],
            "sources": [
                {
                    "stream_id": 0,
                    "flows": [0],
                    "start_ps": 0,
                    "stop_ps": 1,
                    "process": {"kind": "bernoulli", "slot_ps": 1_200_000, "p": 0.02},
                }
            ],
        }
    )
    desc = describe_ir(ir)
    assert desc["flows"][0]["path"] == ["s0->sw1", "sw1->sw4", "sw4->sw5", "sw5->sw3", "sw3->h"]
    assert desc["flows"][0]["demand_bps"] == pytest.approx(0.02 * 12000 / 1.2e-6)


def test_describe_ir_on_a_shipped_scenario():
    from cnsim.compile import loader
    from cnsim.compile.compiler import compile_ir

    ir = compile_ir(loader.load_scenario(ROOT / "scenarios/seed-000/symmetric-bcn.toml"))
    topo = Topology.from_description(describe_ir(ir))
    assert [len(p) for p in topo.paths] == [3, 3, 3, 3]
    p = params_from_ir(ir)
    assert (p.gi, p.gd, p.pm, p.qeq_pages, p.w) == pytest.approx((0.53333, 2.6667e-4, 0.01, 375.0, 2.0))


def _synthetic_summary(rates: np.ndarray, messages: dict[str, int]) -> dict:
    names = [("h1", "h9"), ("h2", "h9"), ("h3", "h9"), ("h4", "h9"), ("h5", "h7"), ("h6", "h8")]
    return {
        "flows": [
            {"id": i, "src": s, "dst": d, "throughput_bps": float(r)} for i, ((s, d), r) in enumerate(zip(names, rates))
        ],
        "queues": [
            {"switch": "sw1", "port": "sw2", "mean_bytes": 20_000.0},
            {"switch": "sw2", "port": "sw3", "mean_bytes": 22_000.0},
        ],
        "control": {"messages": messages},
    }


@pytest.fixture(scope="module")
def park_table():
    rates = np.array([1.4643, 1.4532, 1.5430, 1.7291, 3.0795, 3.0185]) * 1e9  # [C]'s published BCN run
    summary = _synthetic_summary(rates, {"positive": 600, "negative": 380, "max": 15, "zero": 5})
    return model_vs_sim(parking_lot_ir(), summary, BcnParams(), t_end_s=0.02, dt_s=5e-6)


def test_table_rates_and_fairness(park_table):
    t = park_table.set_index(["quantity", "item"])
    assert t.loc[("rate_bps", "flow 0 h1->h9"), "max_min"] == pytest.approx(2e9)
    assert t.loc[("rate_bps", "flow 0 h1->h9"), "proportional"] == pytest.approx(1e10 / 6, rel=1e-8)
    assert t.loc[("rate_bps", "flow 4 h5->h7"), "bcn_closed_form"] == pytest.approx(4.6667e9, rel=1e-3)
    assert t.loc[("rate_bps", "flow 4 h5->h7"), "simulation"] == pytest.approx(3.0795e9)
    ratio = t.loc[("parking_lot_ratio", "mean short / mean long")]
    assert ratio["max_min"] == pytest.approx(1.0) and ratio["proportional"] == pytest.approx(2.0)
    assert ratio["simulation"] == pytest.approx(1.97, abs=0.005)
    assert ratio["bcn_closed_form"] == pytest.approx((4.6667 / 1.3333), rel=1e-3)
    assert t.loc[("jain", "all flows"), "max_min"] == pytest.approx(1.0)
    assert t.loc[("aggregate_bps", "all flows"), "simulation"] == pytest.approx(12.2876e9)


def test_table_queues_settling_and_negative_fraction(park_table):
    t = park_table.set_index(["quantity", "item"])
    queues = park_table[park_table["quantity"] == "queue_mean_bytes"]
    assert set(queues["item"]) == {"sw1->sw2", "sw2->sw3"}
    assert t.loc[("queue_mean_bytes", "sw1->sw2"), "simulation"] == 20_000.0
    assert 0 < t.loc[("queue_mean_bytes", "sw1->sw2"), "fluid"] < 150_000
    assert 0 < t.loc[("settling_time_s", "aggregate rate ±5 %"), "fluid"] < 0.02
    neg = t.loc[("negative_fraction", "BCN messages")]
    assert neg["simulation"] == pytest.approx(400 / 1000)
    assert 0 < neg["bcn_closed_form"] < 1 and 0 < neg["fluid"] < 1


def test_negative_fraction_is_nan_without_messages():
    rates = np.full(6, 1e9)
    table = model_vs_sim(parking_lot_ir(), _synthetic_summary(rates, {}), BcnParams(), t_end_s=0.002, dt_s=5e-6)
    assert np.isnan(table.set_index("quantity").loc["negative_fraction", "simulation"])


def test_plots_are_written(park_table, tmp_path):
    assert plot_model_vs_sim(park_table, tmp_path / "rates.png").stat().st_size > 1000
    _, _, fluid = predictions(parking_lot_ir(), BcnParams(), t_end_s=0.002, dt_s=5e-6)
    assert plot_fluid(fluid, tmp_path / "fluid.png").stat().st_size > 1000


def test_params_from_bcn_ir():
    ir = parking_lot_ir(
        {
            "scheme": "bcn",
            "params": {
                "sampling": "random_bytes",
                "sample_probability": 0.01,
                "sample_interval_bytes": 25_000,
                "qeq_bytes": 24_000,
                "w": 2.0,
                "gi": 0.5,
                "gd": 1e-4,
                "ru_bps": 8e6,
            },
        }
    )
    p = params_from_ir(ir)
    assert (p.pm, p.qeq_pages, p.gi, p.gd, p.ru_bps) == pytest.approx((0.06, 375.0, 0.5, 1e-4, 8e6))
    assert params_from_ir(parking_lot_ir()) == BcnParams()
