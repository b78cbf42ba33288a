"""Published flow-size distributions of data-center workloads (issue 13), shipped with cnsim.

Each ``.cdf`` file has one point per line, ``flow_size_bytes cumulative_percent``, piecewise linear
between points, from 0 % to 100 % (README.md gives the sources: WebSearch from DCTCP, SIGCOMM 2010;
FB Hadoop from Roy et al., SIGCOMM 2015 — the lists the HPCC evaluation uses).

A scenario names one (``cdf = "websearch"``) or gives a path to a file of the same format.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUNDLED = tuple(sorted(p.stem for p in HERE.glob("*.cdf")))


def cdf_path(name: str, base: Path | None = None) -> Path:
    """The file of a bundled workload name or of a path (relative to ``base`` if given)."""
    if name in BUNDLED:
        return HERE / f"{name}.cdf"
    p = Path(name)
    if not p.is_absolute() and base is not None:
        p = base / p
    return p


@lru_cache(maxsize=32)
def read_cdf(path: str) -> tuple[tuple[float, float], ...]:
    """Points (bytes, probability 0..1) of a CDF file; ValueError naming the line when malformed."""
    pts: list[tuple[float, float]] = []
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"line {i}: expected 'flow_size_bytes cumulative_percent', got {line!r}")
        try:
            x, q = float(parts[0]), float(parts[1]) / 100.0
        except ValueError:
            raise ValueError(f"line {i}: not two numbers: {line!r}") from None
        if pts and (x < pts[-1][0] or q < pts[-1][1]):
            raise ValueError(f"line {i}: sizes and percentages must not decrease")
        pts.append((x, q))
    if len(pts) < 2 or pts[0][1] != 0.0 or abs(pts[-1][1] - 1.0) > 1e-9:
        raise ValueError("needs at least two points, the first at 0 % and the last at 100 %")
    return tuple(pts)


def quantile(cdf: tuple[tuple[float, float], ...], u: float) -> float:
    """Size at probability u (the engine's ``cdf_quantile``)."""
    for (x0, q0), (x1, q1) in zip(cdf, cdf[1:]):
        if u < q1:
            return x0 + (u - q0) / (q1 - q0) * (x1 - x0) if q1 > q0 else x1
    return cdf[-1][0]


def mean_bytes(cdf: tuple[tuple[float, float], ...]) -> float:
    """Mean flow size of the piecewise-linear CDF, bytes."""
    return sum((x0 + x1) / 2 * (q1 - q0) for (x0, q0), (x1, q1) in zip(cdf, cdf[1:]))


@lru_cache(maxsize=64)
def mean_wire_bytes(
    cdf: tuple[tuple[float, float], ...],
    frame: int,
    steps: int = 200_000,
    partial: bool = False,
    header: int | None = None,
) -> float:
    """Mean frame bytes of a flow as the engine sends it, bytes: the quantile function averaged over
    ``steps`` equal probability slices (midpoint rule). Whole frames: ceil(size / frame) frames of
    ``frame``. ``partial``: ceil(size) bytes, the last frame the remainder padded to 64 B
    (``traffic::flow_bytes``); over TCP (``header`` bytes per segment) the payload in segments of
    frame − header, each with its header and no padding."""
    import numpy as np

    u = (np.arange(steps) + 0.5) / steps
    q = np.array([p for _, p in cdf])
    x = np.array([b for b, _ in cdf])
    sizes = np.interp(u, q, x)
    if not partial:
        return float(np.maximum(1, np.ceil(sizes / frame)).mean() * frame)
    total = np.maximum(1, np.ceil(sizes))
    if header is not None:  # TCP: payload + one header per segment
        return float((total + np.ceil(total / (frame - header)) * header).mean())
    frames = np.ceil(total / frame)
    last = total - (frames - 1) * frame
    return float(((frames - 1) * frame + np.maximum(last, 64)).mean())
