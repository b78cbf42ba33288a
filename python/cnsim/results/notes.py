"""Run-end notes: results a user should not miss, added to ``summary.json`` ``notes`` and shown by the CLI.

**An under-used link under congestion management.** A link offered clearly more than its capacity
(``OVERLOAD`` × its rate, from the generators' offered rates over the statistics window and the paths the
engine forwards on) that carried less than ``UNDERUSE`` of its capacity — neither busy nor paused — is held
down by the scheme's reaction points: their increase steps and floor set the rate the sources stay at.
The classic case is DCQCN with the SIGCOMM 2015 parameters, tuned for 40 GbE, under a 100 Gb/s 8:1 incast
(``scenarios/datacenter/dcqcn-incast-100g-sigcomm2015.toml``: 15 % of the link). The note names the link
and the parameters (each scheme module's ``FLOOR``), with their values.
"""

from __future__ import annotations

import json
import warnings
from typing import Any, Mapping

from cnsim import schemes
from cnsim.compile.engine import core
from cnsim.exceptions import RunWarning
from cnsim.scenario.framesizes import mean_size
from cnsim.scenario.quantities import Duration, Rate, RateOrZero, Size, Time
from cnsim.scenario.spec import capped_pareto_mean
from cnsim.scenario.units import format_quantity
from cnsim.workloads import mean_bytes

OVERLOAD = 1.05
"""A link counts as overloaded when offered at least this multiple of its rate."""
UNDERUSE = 0.5
"""... and as far below its capacity when busy plus paused for less than this fraction of the window."""


def _active_fraction(src: Mapping[str, Any], warmup: int, end: int) -> float:
    """Fraction of the statistics window ``[warmup, end)`` in which the generator may send (its start/stop
    window and ON/OFF gate)."""
    lo, hi = max(src["start_ps"], warmup), min(src["stop_ps"], end)
    frac = max(0, hi - lo) / max(1, end - warmup)
    gate = src.get("gate")
    if gate:
        frac *= gate["on_ps"] / (gate["on_ps"] + gate["off_ps"])
    return frac


def _mean_on_ps(p: Mapping[str, Any]) -> float:
    """Mean ON period of a Pareto ON/OFF generator, ps."""

    xm, alpha = p["xm_ps"], p["alpha"]
    if p.get("shifted"):
        return xm / (alpha - 1)
    if p.get("cap_ps"):
        return capped_pareto_mean(xm, alpha, p["cap_ps"])
    return alpha * xm / (alpha - 1) if alpha > 1 else float("inf")


def source_rate(ir: Mapping[str, Any], src: Mapping[str, Any], line_bps: int) -> float:
    """The bit rate a generator of the IR offers while active (saturated: its host's line rate)."""
    p = src["process"]
    frame = ir["flows"][src["flows"][0]]["frame_bytes"]
    kind = p["kind"]
    if kind == "saturated":
        return float(line_bps)
    if kind == "cbr":
        return frame * 8e12 / p["interval_ps"]
    if kind == "bernoulli":
        return p["p"] * frame * 8e12 / p["slot_ps"]
    if kind == "poisson":
        size = mean_size(p["sizes"]) if p.get("sizes") else frame
        return size * 8e12 / p["mean_gap_ps"]
    if kind == "periodic_flows":
        return p["bytes"] * 8e12 / p["period_ps"]
    if kind == "flow_arrivals":
        return mean_bytes(tuple(map(tuple, p["cdf"]))) * 8e12 / p["mean_gap_ps"]
    if kind == "pareto_on_off":
        on = _mean_on_ps(p)
        return p["line_rate_bps"] * on / (on + p["off_mean_ps"])
    return 0.0


def offered_per_link(ir: Mapping[str, Any], paths: list[list[int]]) -> dict[tuple[int, int], float]:
    """Offered bit/s on each directed link (node a → node b) over the statistics window: each generator's
    rate spread evenly over its flows (destinations are chosen uniformly) along the flows' paths."""
    warmup, end = ir["warmup_ps"], ir["duration_ps"]
    line = {}
    for lk in ir["links"]:
        for end_node in (lk["a"], lk["b"]):
            line.setdefault(end_node, lk["rate_bps"])
    per_flow = [0.0] * len(ir["flows"])
    for src in ir["sources"]:
        flows = src["flows"]
        host = ir["flows"][flows[0]]["src"]
        rate = source_rate(ir, src, line.get(host, 0)) * _active_fraction(src, warmup, end)
        for f in flows:
            per_flow[f] += rate / len(flows)
    offered: dict[tuple[int, int], float] = {}
    for f, path in enumerate(paths):
        for hop in zip(path, path[1:]):
            offered[hop] = offered.get(hop, 0.0) + per_flow[f]
    return offered


def floor_parameters(scheme: str, params: Mapping[str, Any]) -> dict[str, str]:
    """The parameters (with values, in the scenario's units) that set how low a scheme's sources stay."""

    if scheme not in schemes.SCHEMES:
        return {}
    s = schemes.SCHEMES[scheme]
    p = s.params.model_validate(params)
    names = getattr(s.module, "FLOOR", ())
    resolve = getattr(s.module, "resolved", None)
    out: dict[str, str] = {}
    for name in names:
        value = p.resolved(name) if hasattr(p, "resolved") else resolve(p, name) if resolve else getattr(p, name)
        if value is None:
            continue
        kind = _kind(s.params.model_fields[name].annotation)
        out[name] = (
            format_quantity(value, kind)
            if kind and value
            else f"{value:.6g}"
            if isinstance(value, float)
            else str(value)
        )
    if "variant" in s.params.model_fields:
        out = {"variant": p.variant, **out}
    if "preset" in s.params.model_fields:
        out = {"preset": p.preset, **out}
    return out


def _kind(annotation: Any) -> str | None:
    """'rate', 'size' or 'time' for a quantity field (also inside ``X | None``), else None."""

    text = repr(annotation)
    for kind, types in (("rate", (Rate, RateOrZero)), ("size", (Size,)), ("time", (Duration, Time))):
        if any(repr(t) in text for t in types):
            return kind
    return None


def underused_links(
    ir: Mapping[str, Any], summary: Mapping[str, Any], paths: list[list[int]], cm_params: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The notes of links offered more than their capacity that stayed far below it under congestion
    management (see the module doc); ``cm_params``: the scenario's ``[cm] params``."""
    scheme = ir["cm"]["scheme"]
    if scheme == "none":
        return []
    names = [n["name"] for n in ir["nodes"]]
    index = {n: i for i, n in enumerate(names)}
    offered = offered_per_link(ir, paths)
    notes = []
    for lk in summary.get("links", []):
        a, b = index.get(lk["from"]), index.get(lk["to"])
        load = offered.get((a, b), 0.0)
        used = lk["utilization"] + lk["paused_fraction"]
        if load >= OVERLOAD * lk["rate_bps"] and used < UNDERUSE:
            notes.append(
                {
                    "kind": "underused_link",
                    "from": lk["from"],
                    "to": lk["to"],
                    "rate_bps": lk["rate_bps"],
                    "offered_bps": load,
                    "utilization": lk["utilization"],
                    "scheme": scheme,
                }
            )
    if notes:
        params = floor_parameters(scheme, cm_params)
        shown = ", ".join(f"{k} = {v}" for k, v in params.items())
        for n in notes:
            n["parameters"] = params
            n["message"] = (
                f"link {n['from']} → {n['to']} was offered {n['offered_bps'] / 1e9:.4g} Gb/s "
                f"({n['offered_bps'] / n['rate_bps']:.3g} × its {n['rate_bps'] / 1e9:.4g} Gb/s) but carried "
                f"{100 * n['utilization']:.1f} % of its capacity after the warm-up: {scheme}'s reaction "
                f"points hold their sources down — their increase steps and floor set that rate ({shown})"
            )
    return notes


def add(summary: dict[str, Any], ir: Mapping[str, Any], cm_params: Mapping[str, Any]) -> None:
    """Add ``notes`` to a run's summary (always a list) and warn with each (the CLI prints them)."""
    notes: list[dict[str, Any]] = []
    if ir["cm"]["scheme"] != "none" and summary.get("links"):
        paths = core().flow_paths(json.dumps(ir))
        notes = underused_links(ir, summary, paths, cm_params)
    summary["notes"] = notes
    for n in notes:
        warnings.warn(n["message"], RunWarning, stacklevel=2)
