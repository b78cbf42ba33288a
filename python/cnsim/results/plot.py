"""Static figures of a run (matplotlib, no display needed: figures are drawn on the Agg canvas)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Protocol

from matplotlib.figure import Figure


class Result(Protocol):
    """What the plots read of a :class:`cnsim.results.result.Result`: its summary and tables."""

    summary: Mapping[str, Any]
    tables: Mapping[str, Any]


MAX_LINES = 8


def plot_queues(result: "Result", ax=None):
    """Egress queue (KB) vs time for the (at most 8) queues that grew largest."""
    ax = ax if ax is not None else Figure(figsize=(8, 4.5)).subplots()
    q = result.tables.get("queue_ts")
    if q is not None and not q.empty:
        top = q.groupby("queue", observed=True)["bytes"].max().sort_values(ascending=False)
        for qid in top[top > 0].index[:MAX_LINES]:
            rows = q[q["queue"] == qid]
            label = f"{rows['switch'].iloc[0]} → {rows['port'].iloc[0]}" if "switch" in rows else f"queue {qid}"
            ax.plot(rows["t_s"] * 1e3, rows["bytes"] / 1e3, lw=0.8, label=label)
        if len(top[top > 0]):
            ax.legend(fontsize="small", loc="upper right")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("egress queue (KB)")
    ax.set_title(f"Queue length — {result.summary.get('scenario', '')}")
    ax.grid(alpha=0.3)
    return ax


def plot_throughput(result: "Result", ax=None):
    """Delivered throughput (Gb/s) per bin: aggregate, and each flow when there are at most 8."""
    ax = ax if ax is not None else Figure(figsize=(8, 4.5)).subplots()
    tp = result.tables.get("flow_tp")
    agg = result.tables.get("throughput_ts")
    if agg is not None and not agg.empty:  # every flow, whatever observe.flow_series binned
        ax.plot(agg["t_s"] * 1e3, agg["bps"] / 1e9, lw=1.4, color="black", label="aggregate")
    if tp is not None and not tp.empty:
        flows = tp["flow"].unique()
        if len(flows) <= MAX_LINES:
            for fid in flows:
                rows = tp[tp["flow"] == fid]
                label = f"{rows['src'].iloc[0]} → {rows['dst'].iloc[0]}" if "src" in rows else f"flow {fid}"
                ax.plot(rows["t_s"] * 1e3, rows["bps"] / 1e9, lw=0.8, label=label)
        ax.legend(fontsize="small", loc="upper right")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("throughput (Gb/s)")
    ax.set_title(f"Delivered throughput — {result.summary.get('scenario', '')}")
    ax.grid(alpha=0.3)
    return ax


def save_plots(result: "Result", out: Path) -> list[Path]:
    """Write ``queue.png`` and ``throughput.png`` into ``out``; returns the paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, draw in (("queue.png", plot_queues), ("throughput.png", plot_throughput)):
        ax = draw(result)
        fig = ax.get_figure()
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        paths.append(out / name)
    return paths
