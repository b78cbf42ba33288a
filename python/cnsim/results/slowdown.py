"""FCT slowdown (issue 13): a flow's completion time over the time it would take alone on an empty
network, the figure of merit of data-center congestion-control papers (DCTCP, HPCC, ...).

Ideal FCT of a transfer of F frames of S bytes on a path of links with rates r_i and propagation
delays d_i, through switches with latencies L_j (store-and-forward, what the engine models):

    ideal = Σ_i (8 S / r_i + d_i) + Σ_j L_j + (F − 1) · 8 S / min_i r_i

(the first frame crosses every hop; the others follow at the bottleneck rate). A flow of B bytes whose
last frame carries the remainder (``last_frame = "partial"``) has its first frame S₁ = min(S, B) and
8 (B − S₁) / min_i r_i after it (wire overhead per frame counted in both). A lone flow's FCT
equals it, so its slowdown is 1. For TCP the last byte counts when it is acknowledged, so the ACK's
way back (one 64-B frame over the reverse path) is added. Slowdown = FCT / ideal ≥ 1.

Buckets: flow sizes by decade (< 10 KB, 10–100 KB, 100 KB–1 MB, 1–10 MB, ≥ 10 MB), with n, p50, p95
and p99 per bucket — the table behind the published FCT-slowdown figures.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping

from cnsim.compile.engine import core

BUCKETS = (
    (0, 10_000, "<10KB"),
    (10_000, 100_000, "10KB-100KB"),
    (100_000, 1_000_000, "100KB-1MB"),
    (1_000_000, 10_000_000, "1MB-10MB"),
    (10_000_000, math.inf, ">=10MB"),
)
PS = 1e-12


class Ideal:
    """Ideal-FCT terms per (flow, destination) of one IR, computed once each when first asked for (a
    fabric has ~10^6 host pairs, an FCT table a few thousand of them; a streamed run asks chunk by
    chunk). A flow with a destination of its own takes its path under the engine's routes (ECMP
    included); the transfers of a flow without one (a send queue per transfer, ``fct.dst`` per row)
    take the single route from its source to theirs."""

    def __init__(self, ir: Mapping[str, Any]):
        self.ir = ir
        self.wire = ir.get("wire_overhead_bytes", 0)
        self._flow_paths: list[list[int]] | None = None
        self._json: str | None = None
        self._links: dict[tuple[int, int], Mapping[str, Any]] = {}
        self.parts: dict[tuple[int, int], tuple[float, float, float, float]] = {}

    def _paths(self, keys: list[tuple[int, int]]) -> list[list[int]]:
        """The node paths of (flow, destination) keys, in one call to the engine for those of flows
        without a destination of their own."""
        if self._json is None:
            self._json = json.dumps(self.ir)
            for lk in self.ir["links"]:
                self._links[(lk["a"], lk["b"])] = lk
                self._links[(lk["b"], lk["a"])] = lk
        flows = self.ir["flows"]
        pairs = [(flows[i]["src"], d) for i, d in keys if flows[i].get("dst") is None]
        by_pair = iter(core().pair_paths(self._json, pairs) if pairs else [])
        if self._flow_paths is None and len(pairs) < len(keys):
            self._flow_paths = core().flow_paths(self._json)
        return [next(by_pair) if flows[i].get("dst") is None else self._flow_paths[i] for i, _ in keys]

    def _part(self, i: int, path: list[int]) -> tuple[float, float, float, float]:
        """(Σ 8/r_i seconds per byte, Σ d_i + Σ L_j seconds, 8 / min r seconds per byte, reverse-path
        seconds for a 64-B ACK, 0 for UDP) of flow ``i``'s transfers along ``path``."""
        f = self.ir["flows"][i]
        if not path:
            return (math.nan, math.nan, math.nan, 0.0)
        nodes = self.ir["nodes"]
        hops = [self._links[(u, v)] for u, v in zip(path, path[1:])]
        per_byte = sum(8.0 / h["rate_bps"] for h in hops)
        fixed = sum(h["prop_ps"] * PS for h in hops) + sum(nodes[v].get("latency_ps", 0) * PS for v in path[1:-1])
        bottleneck = 8.0 / min(h["rate_bps"] for h in hops)
        ack = 0.0
        if (f.get("transport") or {}).get("kind") == "tcp":
            ack = 64 * per_byte + fixed
        return (per_byte, fixed, bottleneck, ack)

    def columns(
        self, flow: Any, dst: Any, frames: Any, size: Any, completed: Any, bad: Any, start_s: Any, end_s: Any
    ) -> dict[str, Any]:
        """``fct_s``, ``ideal_s`` and ``slowdown`` of FCT rows given as arrays (``dst``: the destination
        node indices, ``fct.dst_node``; ``size``: the ``bytes`` column; completed, good transfers only
        get an FCT and a slowdown)."""
        import numpy as np

        ids = np.asarray(flow, dtype=np.int64).tolist()
        dsts = np.asarray(dst, dtype=np.int64).tolist()
        keys = list(zip(ids, dsts))
        new = sorted(set(keys) - self.parts.keys())
        for k, path in zip(new, self._paths(new)):
            self.parts[k] = self._part(k[0], path)
        frame = np.array([self.ir["flows"][i]["frame_bytes"] for i in ids], dtype=float)
        p = np.array([self.parts[k] for k in keys], dtype=float).reshape(len(ids), 4)
        n, b = np.asarray(frames, dtype=float), np.asarray(size, dtype=float)
        first = np.where(n > 1, frame, b)  # whole frames: b = n · frame, so the first is a full frame
        # integers below 2^53 throughout: with whole frames this is exactly (n − 1)(frame + wire)
        rest = (b - first) + (n - 1) * self.wire
        ideal = (first + self.wire) * p[:, 0] + p[:, 1] + rest * p[:, 2] + p[:, 3]
        done = (np.asarray(completed) == 1) & (np.asarray(bad) == 0)
        fct_s = np.where(done, np.asarray(end_s) - np.asarray(start_s), np.nan)
        return {"fct_s": fct_s, "ideal_s": ideal, "slowdown": fct_s / ideal}


def add_slowdown(fct: Any, ir: Mapping[str, Any]) -> Any:
    """The FCT table with ``fct_s``, ``ideal_s`` and ``slowdown`` columns (completed, good transfers
    only get a value)."""
    if fct is None or fct.empty:
        return fct
    cols = Ideal(ir).columns(
        fct["flow"].to_numpy(),
        fct["dst_node"].to_numpy(),
        fct["frames"].to_numpy(),
        fct["bytes"].to_numpy(),
        fct["completed"].to_numpy(),
        fct["bad"].to_numpy(),
        fct["start_s"].to_numpy(),
        fct["end_s"].to_numpy(),
    )
    out = fct.copy()
    for name, values in cols.items():
        out[name] = values
    return out


def summary(fct: Any) -> dict[str, Any]:
    """``fct_slowdown`` of summary.json from an FCT table: overall and per size bucket n, p50, p95, p99
    (null when empty)."""
    if fct is None or fct.empty or "slowdown" not in fct:
        return summary_of(None, None)
    return summary_of(fct["slowdown"].to_numpy(dtype=float), fct["bytes"].to_numpy(dtype=float))


def summary_of(slowdown: Any, size_bytes: Any) -> dict[str, Any]:
    """``fct_slowdown`` from the slowdown and size columns (None: no FCT rows)."""
    import numpy as np

    def stats(x: Any) -> dict[str, Any]:
        x = x[~np.isnan(x)]
        if len(x) == 0:
            return {"n": 0, "p50": None, "p95": None, "p99": None, "mean": None}
        q = np.percentile(x, [50, 95, 99])
        return {"n": int(len(x)), "p50": float(q[0]), "p95": float(q[1]), "p99": float(q[2]), "mean": float(x.mean())}

    if slowdown is None:
        return {"all": stats(np.array([])), "buckets": []}
    s, b = np.asarray(slowdown, dtype=float), np.asarray(size_bytes, dtype=float)
    buckets = [
        {"bucket": name, "min_bytes": lo, "max_bytes": None if math.isinf(hi) else hi, **stats(s[(b >= lo) & (b < hi)])}
        for lo, hi, name in BUCKETS
    ]
    return {"all": stats(s), "buckets": buckets}


def plot(fct: Any, ax: Any = None, label: str | None = None) -> Any:
    """p50 and p99 slowdown per size bucket against flow size (log x), as the published figures."""
    from matplotlib.figure import Figure

    ax = ax if ax is not None else Figure(figsize=(6.4, 4.0)).subplots()
    s = summary(fct)["buckets"]
    xs = [math.sqrt(max(b["min_bytes"], 1000) * (b["max_bytes"] or 3e7)) for b in s if b["n"]]
    for key, style in (("p50", "-o"), ("p99", "--s")):
        ys = [b[key] for b in s if b["n"]]
        ax.plot(xs, ys, style, label=f"{label + ' ' if label else ''}{key}", ms=4)
    ax.set_xscale("log")
    ax.set_xlabel("flow size (bytes, bucket centre)")
    ax.set_ylabel("FCT slowdown")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return ax
