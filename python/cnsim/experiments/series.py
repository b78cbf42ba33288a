"""Metrics of a run's time series (read from its Parquet files), for study cells and claims that a
single summary number cannot decide: how long a queue takes to settle, how much of the time it stays
near its operating point, how much it oscillates.

Every metric bins the sampled queue length of one queue (``queue_ts.parquet``, the samples of
``observe.sample_interval``) into bins of ``bin`` seconds from ``start`` on and works on the bin
means, so the result does not depend on the sampling interval once it is finer than the bin:

``settle_ms``
    the earliest bin boundary (ms from the run start) after which every bin mean stays within
    ``level × (1 ± tol)`` to the end of the run; a queue that never settles gives the run's length
    (a lower bound, reported as such by the study's note).
``in_band_fraction``
    the fraction of bins whose mean lies within ``level × (1 ± tol)``.
``cv``
    standard deviation of the bin means over their mean (0 for a constant queue).
``mean_bytes``
    the mean of the bin means (a check on the operating point).
``min_bytes`` / ``max_bytes``
    the smallest / largest bin mean (valleys and peaks of the queue).
``tp_min_bps``
    not a queue metric: the smallest bin mean of the aggregate throughput (``throughput_ts.parquet``,
    every flow) — throughput dips.
``fct_mean_us``
    not a queue metric: the mean flow completion time (µs, ``fct.parquet``) of the completed, good
    transfers of ``min_frames`` to ``max_frames`` frames — FCT by flow size, as [D] reads its FCT
    distributions.
``throttled_fraction``
    not a queue metric: over the completed, good transfers of ``min_frames`` to ``max_frames`` frames, the
    mean share of a transfer's lifetime during which its (source, destination) pair had a rate limiter
    (``rp_rate.parquet``: a rate that is not NaN), read at the samples from the last one at or before the
    transfer's start to the last one before its end — which flows a scheme's rate limiting falls on, by size
    ([D]: "ECM shows a bias towards long-lived flows"). A limiter that does not depend on the size of the
    flow it holds gives every class the same share; a one-frame transfer is read at one sample. Needs the
    limiter series of every pair (``observe.flow_series = "all"``); NaN without it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

Kind = Literal[
    "settle_ms",
    "in_band_fraction",
    "cv",
    "mean_bytes",
    "min_bytes",
    "max_bytes",
    "tp_min_bps",
    "fct_mean_us",
    "throttled_fraction",
]
KINDS = get_args(Kind)
QUEUE_FREE = ("tp_min_bps", "fct_mean_us", "throttled_fraction")


class SeriesMetric(BaseModel):
    """A metric computed from one run's queue time series (see the module text)."""

    model_config = ConfigDict(extra="forbid")

    kind: Kind
    queue: str = Field("", pattern=r"^([^>\s]+>[^>\s]+)?$", description="'switch>port', e.g. 'sw1>sw2'")
    min_frames: int = Field(1, ge=1, description="fct_mean_us, throttled_fraction: smallest transfer counted, frames")
    max_frames: int | None = Field(
        None, ge=1, description="fct_mean_us, throttled_fraction: largest transfer counted, frames"
    )
    level: float = Field(0.0, ge=0, description="operating point in bytes (settle_ms, in_band_fraction)")
    tol: float = Field(0.5, gt=0, description="relative half-width of the band around level")
    bin: float = Field(0.5e-3, gt=0, description="bin width, seconds")
    start: float = Field(0.0, ge=0, description="first instant counted, seconds from the run start")
    end: float | None = Field(None, gt=0, description="last instant counted (default: the end of the run)")

    @model_validator(mode="after")
    def _queue(self):
        if self.kind not in QUEUE_FREE and not self.queue:
            raise ValueError(f"{self.kind} needs a queue ('switch>port')")
        return self

    def describe(self) -> str:
        hi = f"-{self.max_frames}" if self.max_frames else "+"
        if self.kind == "fct_mean_us":
            return f"mean FCT of completed good transfers of {self.min_frames}{hi} frames"
        if self.kind == "throttled_fraction":
            return f"share of the lifetime of completed good transfers of {self.min_frames}{hi} frames under a rate limiter"
        if self.kind == "tp_min_bps":
            to = f" to {self.end * 1e3:g} ms" if self.end is not None else ""
            return f"lowest {self.bin * 1e3:g}-ms mean of the aggregate throughput from {self.start * 1e3:g} ms{to}"
        band = (
            f" within {self.level / 1e3:g} KB ± {self.tol * 100:g} %"
            if self.kind in ("settle_ms", "in_band_fraction")
            else ""
        )
        to = f" to {self.end * 1e3:g} ms" if self.end is not None else ""
        return f"{self.kind} of queue {self.queue}{band}, {self.bin * 1e3:g}-ms bins from {self.start * 1e3:g} ms{to}"


def bin_means(
    run_dir: Path, queue: str, bin_s: float, start_s: float = 0.0, end_s: float | None = None
) -> tuple[list[float], float]:
    """(bin means of the queue in bytes, end of the series in seconds); empty if there is no series."""
    import pyarrow.parquet as pq

    path = Path(run_dir) / "queue_ts.parquet"
    if not path.exists():
        return [], 0.0
    sw, _, port = queue.partition(">")
    t = pq.read_table(path, columns=["t_s", "bytes", "switch", "port"]).to_pandas()
    t = t[(t["switch"].astype(str) == sw) & (t["port"].astype(str) == port)]
    if t.empty:
        return [], 0.0
    ts = t["t_s"].to_numpy()
    b = t["bytes"].to_numpy(dtype=float)
    if end_s is not None:
        keep = ts < end_s
        ts, b = ts[keep], b[keep]
        if len(ts) == 0:
            return [], end_s
    end = float(ts[-1])
    keep = ts >= start_s
    ts, b = ts[keep], b[keep]
    if len(ts) == 0:
        return [], end
    idx = ((ts - start_s) / bin_s + 1e-9).astype(int)
    out: list[float] = []
    for i in range(int(idx.max()) + 1):
        sel = b[idx == i]
        if len(sel):
            out.append(float(sel.mean()))
    return out, end


def value(run_dir: Path, m: SeriesMetric) -> float:
    """The metric for one run; NaN when the run has no series for the queue."""
    if m.kind == "fct_mean_us":
        return fct_mean_us(Path(run_dir), m.min_frames, m.max_frames)
    if m.kind == "tp_min_bps":
        return tp_min_bps(Path(run_dir), m.bin, m.start, m.end)
    if m.kind == "throttled_fraction":
        return throttled_fraction(Path(run_dir), m.min_frames, m.max_frames)
    means, end = bin_means(run_dir, m.queue, m.bin, m.start, m.end)
    if not means:
        return math.nan
    lo, hi = m.level * (1 - m.tol), m.level * (1 + m.tol)
    inside = [lo <= x <= hi for x in means]
    if m.kind == "settle_ms":
        k = len(inside)
        while k > 0 and inside[k - 1]:
            k -= 1
        if k == len(inside):  # the last bin is outside: not settled within the run
            return end * 1e3
        return (m.start + k * m.bin) * 1e3
    if m.kind == "in_band_fraction":
        return sum(inside) / len(inside)
    mean = sum(means) / len(means)
    if m.kind == "mean_bytes":
        return mean
    if m.kind == "min_bytes":
        return min(means)
    if m.kind == "max_bytes":
        return max(means)
    var = sum((x - mean) ** 2 for x in means) / len(means)
    return math.sqrt(var) / mean if mean > 0 else 0.0


def fct_mean_us(run_dir: Path, min_frames: int = 1, max_frames: int | None = None) -> float:
    """Mean FCT in µs of the completed, good transfers with min_frames ≤ frames ≤ max_frames (NaN if none)."""
    t = _good_transfers(run_dir, min_frames, max_frames, ["start_s", "end_s"])
    if t is None or t.empty:
        return math.nan
    return float(((t["end_s"] - t["start_s"]) * 1e6).mean())


def _good_transfers(run_dir: Path, min_frames: int, max_frames: int | None, columns: list[str]):
    """The completed, good transfers of min_frames ≤ frames ≤ max_frames (None without an fct table)."""
    import pyarrow.parquet as pq

    path = run_dir / "fct.parquet"
    if not path.exists():
        return None
    t = pq.read_table(path, columns=sorted({*columns, "frames", "completed", "bad"})).to_pandas()
    sel = (t["completed"] == 1) & (t["bad"] == 0) & (t["frames"] >= min_frames)
    if max_frames is not None:
        sel &= t["frames"] <= max_frames
    return t[sel]


def throttled_fraction(run_dir: Path, min_frames: int = 1, max_frames: int | None = None) -> float:
    """Mean share of the lifetime of the completed, good transfers of the size class during which their pair had
    a rate limiter, at the samples from the one at or before the start to the last one up to the end (NaN without
    transfers or without every pair's limiter series)."""
    import numpy as np
    import pyarrow.parquet as pq

    t = _good_transfers(run_dir, min_frames, max_frames, ["start_s", "end_s", "src", "dst"])
    path = run_dir / "rp_rate.parquet"
    if t is None or t.empty or not path.exists():
        return math.nan
    r = pq.read_table(path, columns=["t_s", "rate_bps", "src", "dst"]).to_pandas()
    series = {k: g for k, g in r.groupby([r["src"].astype(str), r["dst"].astype(str)], sort=False)}
    share = 0.0
    for (src, dst), g in t.groupby([t["src"].astype(str), t["dst"].astype(str)], sort=False):
        s = series.get((src, dst))
        if s is None:
            return math.nan  # the pair's limiter was not recorded: the run needs observe.flow_series = "all"
        ts = s["t_s"].to_numpy()
        on = np.concatenate([[0], np.cumsum(s["rate_bps"].notna().to_numpy())])
        i0 = np.maximum(np.searchsorted(ts, g["start_s"].to_numpy(), side="right") - 1, 0)
        i1 = np.maximum(np.searchsorted(ts, g["end_s"].to_numpy(), side="right") - 1, i0)
        share += float(((on[i1 + 1] - on[i0]) / (i1 - i0 + 1)).sum())
    return share / len(t)


def tp_min_bps(run_dir: Path, bin_s: float, start_s: float = 0.0, end_s: float | None = None) -> float:
    """Smallest bin mean of the aggregate throughput series (NaN without the series)."""
    import pyarrow.parquet as pq

    path = run_dir / "throughput_ts.parquet"
    if not path.exists():
        return math.nan
    t = pq.read_table(path, columns=["t_s", "bps"]).to_pandas()
    t = t[(t["t_s"] >= start_s) & ((t["t_s"] < end_s) if end_s is not None else True)]
    if t.empty:
        return math.nan
    idx = ((t["t_s"] - start_s) / bin_s + 1e-9).astype(int)
    return float(t.groupby(idx)["bps"].mean().min())
