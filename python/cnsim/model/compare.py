"""Model predictions beside a packet-level run (issue 7).

:func:`model_vs_sim` takes a scenario IR dict and a run's ``summary.json`` dict and returns one
tidy table; :func:`plot_model_vs_sim` and :func:`plot_fluid` draw it (matplotlib, Agg).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .allocations import bcn_equilibrium, jain_index, max_min_fair, parking_lot_ratio, proportional_fair  # noqa: E402
from .fluid import FluidResult, equilibrium_negative_fraction, simulate_queues  # noqa: E402
from .params import PAGE_BYTES, BcnParams  # noqa: E402
from .topology import PS, Topology, describe_ir  # noqa: E402

COLUMNS = ["quantity", "item", "bcn_closed_form", "fluid", "max_min", "proportional", "simulation"]
"""Columns of the comparison table; model columns are NaN where a model says nothing."""

NEGATIVE_TYPES = ("negative", "max", "zero")
"""BCN message types that decrease a rate (summary ``control.messages`` keys, cm/bcn.rs)."""
ALL_TYPES = ("positive",) + NEGATIVE_TYPES


def params_from_ir(ir: dict[str, Any]) -> BcnParams:
    """BcnParams of a BCN scenario IR (``cm.params`` of ``cm/bcn.rs``); §2.1 defaults otherwise.

    Pm is ``sample_probability`` for Bernoulli sampling, else frame/``sample_interval_bytes`` (one sample per
    interval of bytes, i.e. per frame L/I, model reference §2.2). Frame size and line rate are the first
    flow's frame and the largest link rate.
    """
    frame = int(ir["flows"][0]["frame_bytes"]) if ir["flows"] else 1500
    line = float(max((link["rate_bps"] for link in ir["links"]), default=10e9))
    base = BcnParams(frame_bytes=frame, line_rate_bps=line)
    cm = ir.get("cm", {})
    if cm.get("scheme") != "bcn":
        return base
    p = cm["params"]
    pm = p["sample_probability"] if p["sampling"] == "bernoulli" else frame / p["sample_interval_bytes"]
    return base.with_(
        gi=p["gi"], gd=p["gd"], ru_bps=p["ru_bps"], w=p["w"], qeq_pages=p["qeq_bytes"] / PAGE_BYTES, pm=pm
    )


def _bottlenecks(topology: Topology, rates: np.ndarray) -> np.ndarray:
    load = np.zeros(len(topology.link_ids))
    for rate, path in zip(rates, topology.paths):
        load[list(path)] += rate
    return topology.is_cp & (load >= (1 - 1e-6) * topology.capacity_bps)


def _long_short(topology: Topology, bottleneck: np.ndarray) -> tuple[list[int], list[int]]:
    crossings = np.array([bottleneck[list(p)].sum() for p in topology.paths])
    return np.flatnonzero(crossings >= 2).tolist(), np.flatnonzero(crossings == 1).tolist()


def _negative_fraction(messages: dict[str, int]) -> float:
    total = sum(messages.get(t, 0) for t in ALL_TYPES)
    return sum(messages.get(t, 0) for t in NEGATIVE_TYPES) / total if total else float("nan")


def _sim_rates(topology: Topology, summary: dict[str, Any]) -> np.ndarray:
    by_id = {f["id"]: f["throughput_bps"] for f in summary.get("flows", [])}
    return np.array([by_id.get(fid, np.nan) for fid in topology.flow_ids], dtype=float)


def _sim_queues(summary: dict[str, Any]) -> dict[str, float]:
    return {f"{q['switch']}->{q['port']}": float(q["mean_bytes"]) for q in summary.get("queues", [])}


def _window(ir: dict[str, Any], t_end_s: float | None) -> tuple[float, float]:
    """(horizon, tail fraction): the run's duration and statistics window when the IR has them."""
    if t_end_s is not None:
        return t_end_s, FluidResult.tail
    duration = ir.get("duration_ps", 0) * PS
    if duration <= 0:
        return 0.05, FluidResult.tail
    return duration, 1.0 - ir.get("warmup_ps", 0) * PS / duration


def predictions(
    ir: dict[str, Any], params: BcnParams | None = None, t_end_s: float | None = None, dt_s: float = 2e-6
) -> tuple[Topology, dict[str, np.ndarray], FluidResult]:
    """Per-flow rates of every model on the scenario's topology, and the fluid run itself.

    Without ``t_end_s`` the fluid model runs for the scenario's duration and its ``fluid`` rates
    are means over the same statistics window [warmup, duration) as the run's throughput.
    """
    p = params_from_ir(ir) if params is None else params
    topo = Topology.from_description(describe_ir(ir))
    caps, paths, demands = topo.capacities, topo.link_paths, topo.demands
    rates = {
        "bcn_closed_form": bcn_equilibrium(caps, paths, p, demands),
        "max_min": max_min_fair(caps, paths, demands),
        "proportional": proportional_fair(caps, paths, demands=demands),
    }
    horizon, tail = _window(ir, t_end_s)
    fluid = simulate_queues(topo, p, t_end_s=horizon, dt_s=dt_s, record_every=max(1, round(1e-5 / dt_s)))
    fluid = replace(fluid, tail=tail)
    rates["fluid"] = fluid.equilibrium_rates_bps
    return topo, rates, fluid


def model_vs_sim(
    ir: dict[str, Any],
    summary: dict[str, Any],
    params: BcnParams | None = None,
    t_end_s: float | None = None,
    dt_s: float = 2e-6,
) -> pd.DataFrame:
    """Model predictions beside a packet-level summary, one row per (quantity, item).

    ``fluid`` is the fluid model averaged over the run's statistics window (:func:`predictions`);
    ``bcn_closed_form`` is its asymptote (§8). Quantities: ``rate_bps`` per flow, ``aggregate_bps``, ``jain``, ``parking_lot_ratio`` (when some
    flows cross two bottlenecks and others one: mean short / mean long, §9.3), ``queue_mean_bytes``
    per bottleneck CP (fluid mean vs the run's ``mean_bytes``), ``settling_time_s`` (fluid only)
    and ``negative_fraction`` (closed form Σrᵢbᵢ*/Σrᵢ with bᵢ* = Gi·Ru/(Gd·rᵢ + Gi·Ru); simulation
    = (negative + max + zero)/all BCN messages).
    """
    p = params_from_ir(ir) if params is None else params
    topo, rates, fluid = predictions(ir, p, t_end_s, dt_s)
    sim = _sim_rates(topo, summary)
    rates["simulation"] = sim
    model_cols = ["bcn_closed_form", "fluid", "max_min", "proportional", "simulation"]
    rows: list[dict[str, Any]] = []
    for i, fid in enumerate(topo.flow_ids):
        item = f"flow {fid} {topo.src[i]}->{topo.dst[i]}"
        rows.append({"quantity": "rate_bps", "item": item} | {c: rates[c][i] for c in model_cols})
    rows.append({"quantity": "aggregate_bps", "item": "all flows"} | {c: float(np.sum(rates[c])) for c in model_cols})
    rows.append({"quantity": "jain", "item": "all flows"} | {c: _safe(jain_index, rates[c]) for c in model_cols})
    bottleneck = _bottlenecks(topo, rates["max_min"])
    long_, short = _long_short(topo, bottleneck)
    if long_ and short:
        rows.append(
            {"quantity": "parking_lot_ratio", "item": "mean short / mean long"}
            | {c: _safe(parking_lot_ratio, rates[c][short], rates[c][long_]) for c in model_cols}
        )
    sim_q = _sim_queues(summary)
    for j, cp in enumerate(fluid.cp_ids):
        if bottleneck[topo.link_ids.index(cp)]:
            rows.append(
                {
                    "quantity": "queue_mean_bytes",
                    "item": cp,
                    "fluid": fluid.mean_queue_bytes[j],
                    "simulation": sim_q.get(cp, np.nan),
                }
            )
    rows.append({"quantity": "settling_time_s", "item": "aggregate rate ±5 %", "fluid": fluid.settling_time_s})
    closed = rates["bcn_closed_form"]
    b_star = np.array([equilibrium_negative_fraction(r, p) for r in closed])
    messages = summary.get("control", {}).get("messages", {})
    rows.append(
        {
            "quantity": "negative_fraction",
            "item": "BCN messages",
            "bcn_closed_form": float((closed * b_star).sum() / closed.sum()),
            "fluid": fluid.mean_negative_fraction,
            "simulation": _negative_fraction(messages),
        }
    )
    return pd.DataFrame(rows, columns=COLUMNS)


def _safe(fn, *args) -> float:
    try:
        return fn(*args)
    except ValueError:
        return float("nan")


def plot_model_vs_sim(table: pd.DataFrame, path: str | Path) -> Path:
    """Grouped bars of per-flow rates (Gb/s) for each model and the simulation; saved to ``path``."""
    flows = table[table["quantity"] == "rate_bps"]
    cols = [c for c in COLUMNS[2:] if flows[c].notna().any()]
    x = np.arange(len(flows))
    width = 0.8 / max(len(cols), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(flows)), 4.0))
    for k, col in enumerate(cols):
        ax.bar(x + k * width, flows[col] / 1e9, width, label=col)
    ax.set_xticks(x + width * (len(cols) - 1) / 2, flows["item"], rotation=30, ha="right")
    ax.set_ylabel("rate (Gb/s)")
    ax.set_title("Model vs simulation: per-flow mean rate")
    ax.legend(fontsize="small")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out


def plot_fluid(result: FluidResult, path: str | Path) -> Path:
    """Rate and queue trajectories of a fluid run (two stacked panels)."""
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(7.0, 5.0))
    t_ms = result.t * 1e3
    for i, fid in enumerate(result.flow_ids):
        top.plot(t_ms, result.rates_bps[:, i] / 1e9, label=f"flow {fid}")
    top.set_ylabel("rate (Gb/s)")
    top.legend(fontsize="small", ncol=3)
    for j, cp in enumerate(result.cp_ids):
        if np.any(result.queues_bytes[:, j] > 0):
            bottom.plot(t_ms, result.queues_bytes[:, j] / 1e3, label=cp)
    bottom.set_ylabel("queue (KB)")
    bottom.set_xlabel("time (ms)")
    bottom.legend(fontsize="small")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out
