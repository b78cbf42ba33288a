"""Topology descriptions for the analytical model: plain dicts in, arrays out.

A *description* is a JSON-like dict::

    {"links": [{"id": "SW1->SW2", "capacity_bps": 10e9,
                # optional: "cp" (bool, a switch egress queue; default True), "prop_s",
                # "latency_s" (switching latency before this egress), "buffer_bytes"}],
     "flows": [{"id": 0, "path": ["h1->SW1", "SW1->SW2", "SW2->h5"],
                # optional: "src", "dst", "demand_bps" (None = saturated), "response_s"}]}

:func:`describe_ir` builds one from a scenario IR dict (``crates/cnsim-core/src/ir.rs``):
directed links named ``"<from>-><to>"`` by node name, each flow's path the one the engine routes it
on (``_core.flow_paths``: shortest hops, ties by link order, hosts never transit).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from cnsim import api

PS = 1e-12


@dataclass(frozen=True)
class Topology:
    """Arrays of a description: links indexed 0..m-1, flows 0..n-1, paths as link indices."""

    link_ids: tuple[str, ...]
    capacity_bps: np.ndarray
    is_cp: np.ndarray
    prop_s: np.ndarray
    latency_s: np.ndarray
    buffer_bytes: np.ndarray
    flow_ids: tuple[Any, ...]
    src: tuple[str, ...]
    dst: tuple[str, ...]
    paths: tuple[tuple[int, ...], ...]
    demand_bps: np.ndarray
    response_s: np.ndarray

    @property
    def capacities(self) -> dict[str, float]:
        """Link id → capacity (the form the allocation solvers take)."""
        return dict(zip(self.link_ids, self.capacity_bps.tolist()))

    @property
    def link_paths(self) -> list[list[str]]:
        """Paths as lists of link ids."""
        return [[self.link_ids[j] for j in p] for p in self.paths]

    @property
    def demands(self) -> list[float | None]:
        """Demand caps with ``None`` for saturated flows."""
        return [None if np.isinf(d) else float(d) for d in self.demand_bps]

    def one_way_delay_s(self, flow: int) -> float:
        """Propagation plus switching latency along the whole path of ``flow``."""
        hops = list(self.paths[flow])
        return float(self.prop_s[hops].sum() + self.latency_s[hops].sum())

    @classmethod
    def from_description(cls, desc: dict[str, Any]) -> Topology:
        """Build from a description dict (module docstring)."""
        links = desc["links"]
        ids = tuple(str(link["id"]) for link in links)
        index = {link_id: j for j, link_id in enumerate(ids)}
        if len(index) != len(ids):
            raise ValueError("duplicate link ids")
        flows = desc["flows"]

        def path_of(flow: dict[str, Any]) -> tuple[int, ...]:
            try:
                return tuple(index[str(link)] for link in flow["path"])
            except KeyError as err:
                raise ValueError(f"flow {flow.get('id')!r}: unknown link {err.args[0]!r}") from None

        def col(key: str, default: float) -> np.ndarray:
            return np.array([float(link.get(key, default)) for link in links])

        demand = [f.get("demand_bps") for f in flows]
        return cls(
            link_ids=ids,
            capacity_bps=col("capacity_bps", np.nan),
            is_cp=np.array([bool(link.get("cp", True)) for link in links]),
            prop_s=col("prop_s", 0.0),
            latency_s=col("latency_s", 0.0),
            buffer_bytes=col("buffer_bytes", np.inf),
            flow_ids=tuple(f.get("id", i) for i, f in enumerate(flows)),
            src=tuple(str(f.get("src", "")) for f in flows),
            dst=tuple(str(f.get("dst", "")) for f in flows),
            paths=tuple(path_of(f) for f in flows),
            demand_bps=np.array([np.inf if d is None else float(d) for d in demand]),
            response_s=np.array([float(f.get("response_s", 0.0)) for f in flows]),
        )


def _source_demands(ir: dict[str, Any]) -> np.ndarray:
    """Mean offered rate per flow from the IR sources (inf for saturated ones, 0 if unfed).

    ON/OFF gates are ignored: the model describes the ON state.
    """
    frame_bits = [8.0 * f["frame_bytes"] for f in ir["flows"]]
    demand = np.zeros(len(ir["flows"]))
    for source in ir.get("sources", []):
        proc = source["process"]
        fids = source["flows"]
        bits = np.mean([frame_bits[i] for i in fids])
        kind = proc["kind"]
        if kind == "saturated":
            rate = np.inf
        elif kind == "cbr":
            rate = bits / (proc["interval_ps"] * PS)
        elif kind == "bernoulli":
            rate = proc["p"] * bits / (proc["slot_ps"] * PS)
        elif kind == "poisson":
            rate = bits / (proc["mean_gap_ps"] * PS)
        elif kind == "pareto_on_off":
            on = proc["alpha"] * proc["xm_ps"] / (proc["alpha"] - 1.0)
            rate = proc["line_rate_bps"] * on / (on + proc["off_mean_ps"])
        else:
            raise ValueError(f"unknown source process {kind!r}")
        for i in fids:
            demand[i] += rate / len(fids)
    return demand


def _buffer_bytes(buffer: dict[str, Any]) -> float:
    """The byte limit an egress queue can reach under a switch buffer policy (model reference §1.3)."""
    key = {"egress": "egress_bytes", "ingress": "ingress_bytes", "shared": "shared_bytes"}[buffer["policy"]]
    return float(buffer[key])


def describe_ir(ir: dict[str, Any]) -> dict[str, Any]:
    """Topology description (module docstring) of a scenario IR dict.

    Every full-duplex IR link gives two directed links of capacity ``rate_bps``; a directed link
    leaving a switch is a congestion point (its egress queue), one leaving a host is the host's
    NIC (never a CP, model reference §11). ``latency_s`` of a switch egress is the switch latency,
    ``buffer_bytes`` the egress (or shared / ingress) buffer limit.
    """
    nodes = ir["nodes"]
    names = [n["name"] for n in nodes]
    is_host = [n["kind"] == "host" for n in nodes]
    links = []
    directed: dict[tuple[int, int], str] = {}
    for link in ir["links"]:
        for u, v in ((link["a"], link["b"]), (link["b"], link["a"])):
            link_id = f"{names[u]}->{names[v]}"
            if (u, v) in directed:
                continue
            directed[(u, v)] = link_id
            entry = {
                "id": link_id,
                "from": names[u],
                "to": names[v],
                "capacity_bps": float(link["rate_bps"]),
                "prop_s": link["prop_ps"] * PS,
                "cp": not is_host[u],
            }
            if not is_host[u]:
                entry["latency_s"] = nodes[u]["latency_ps"] * PS
                entry["buffer_bytes"] = _buffer_bytes(nodes[u]["buffer"])
            links.append(entry)
    demand = _source_demands(ir)

    # the engine's own routes (net/routing.rs): the model never routes a second time
    paths = api.core().flow_paths(json.dumps(ir))
    flows = []
    for i, flow in enumerate(ir["flows"]):
        hops = paths[i]
        if not hops:
            raise ValueError(f"no path from node {flow['src']} to node {flow['dst']}")
        flows.append(
            {
                "id": i,
                "src": names[flow["src"]],
                "dst": names[flow["dst"]],
                "path": [directed[(u, v)] for u, v in zip(hops, hops[1:])],
                "frame_bytes": flow["frame_bytes"],
                "demand_bps": None if np.isinf(demand[i]) else float(demand[i]),
                "response_s": nodes[flow["src"]]["response_delay_ps"] * PS,
            }
        )
    return {"links": links, "flows": flows}


def _link(
    link_id: str, capacity_bps: float, prop_s: float, latency_s: float, buffer_bytes: float, cp: bool = True
) -> dict[str, Any]:
    entry = {"id": link_id, "capacity_bps": capacity_bps, "prop_s": prop_s, "cp": cp}
    if cp:
        entry |= {"latency_s": latency_s, "buffer_bytes": buffer_bytes}
    return entry


def single_bottleneck(
    n_flows: int,
    capacity_bps: float = 10e9,
    prop_s: float = 0.5e-6,
    latency_s: float = 1e-6,
    buffer_bytes: float = 150e3,
    response_s: float = 1e-6,
) -> dict[str, Any]:
    """Description of S-SYM (model reference §9.1) with ``n_flows`` always-on sources: h1..hN – SW1 – SW2 – sink."""
    links = [_link(f"h{i}->SW1", capacity_bps, prop_s, 0.0, 0.0, cp=False) for i in range(1, n_flows + 1)]
    links += [
        _link("SW1->SW2", capacity_bps, prop_s, latency_s, buffer_bytes),
        _link("SW2->sink", capacity_bps, prop_s, latency_s, buffer_bytes),
    ]
    flows = [
        {
            "id": i - 1,
            "src": f"h{i}",
            "dst": "sink",
            "path": [f"h{i}->SW1", "SW1->SW2", "SW2->sink"],
            "response_s": response_s,
        }
        for i in range(1, n_flows + 1)
    ]
    return {"links": links, "flows": flows}


def parking_lot(
    capacity_bps: float = 10e9,
    prop_s: float = 0.5e-6,
    latency_s: float = 1e-6,
    buffer_bytes: float = 150e3,
    response_s: float = 1e-6,
) -> dict[str, Any]:
    """Description of S-PARK (model reference §9.3): h1..h4 → h9 over L1 and L2, h5 → h7 (L1), h6 → h8 (L2).

    Flows 0–3 are the long flows R01..R04, flow 4 is R1, flow 5 is R2.
    """
    hosts = {"h1": "SW1", "h2": "SW1", "h3": "SW1", "h4": "SW1", "h5": "SW1", "h6": "SW2"}
    links = [_link(f"{h}->{sw}", capacity_bps, prop_s, 0.0, 0.0, cp=False) for h, sw in hosts.items()]
    links += [
        _link(name, capacity_bps, prop_s, latency_s, buffer_bytes)
        for name in ("SW1->SW2", "SW2->SW3", "SW2->h7", "SW3->h8", "SW3->h9")
    ]
    routes = [(f"h{i}", "h9", [f"h{i}->SW1", "SW1->SW2", "SW2->SW3", "SW3->h9"]) for i in range(1, 5)]
    routes += [("h5", "h7", ["h5->SW1", "SW1->SW2", "SW2->h7"]), ("h6", "h8", ["h6->SW2", "SW2->SW3", "SW3->h8"])]
    flows = [{"id": i, "src": s, "dst": d, "path": p, "response_s": response_s} for i, (s, d, p) in enumerate(routes)]
    return {"links": links, "flows": flows}
