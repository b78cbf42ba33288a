"""Frame-size distributions of Poisson generators (``frame_sizes``): the exact moments of the sizes
the engine draws, for the offered rate and for queueing theory.

The engine draws ``ceil(X)`` with X of density ∝ exp(−x/θ) on [a, b] (``traffic.rs``,
``FrameSizes::Exponential``), so a size k ∈ (a, b] has probability
(e^{−(k−1−a)/θ} − e^{−(k−a)/θ}) / (1 − e^{−(b−a)/θ}). Its mean has a closed form,

    E[S] = a + 1/(1 − r) − n·rⁿ/(1 − rⁿ),   r = e^{−1/θ}, n = b − a,

which rises from a + 1 (θ → 0) to (a + b + 1)/2 (θ → ∞, a uniform size); the scenario gives the mean
and :func:`exponential_scale` finds θ. With a = 0 and b → ∞ the sizes are exponential and a port fed by
Poisson arrivals is M/M/1; Ethernet's bounds (64–9216 B) make it M/G/1, which the Pollaczek–Khinchine
formula covers with these moments.
"""

from __future__ import annotations

import math
from typing import Any, Mapping


def exponential_mean(scale: float, lo: int, hi: int) -> float:
    """E[ceil X] for X exponential of scale ``scale`` truncated to [lo, hi] (closed form)."""
    n = hi - lo
    r_n = math.exp(-n / scale)
    return lo + 1 / -math.expm1(-1 / scale) - n * r_n / -math.expm1(-n / scale)


def exponential_scale(mean: float, lo: int, hi: int) -> float:
    """The scale θ whose truncated exponential on [lo, hi] has E[ceil X] = ``mean``, which must lie in
    (lo + 1, (lo + hi + 1) / 2): bisection on log θ (the mean rises with θ)."""
    if not lo + 1 < mean < (lo + hi + 1) / 2:
        raise ValueError(f"mean {mean} outside ({lo + 1}, {(lo + hi + 1) / 2})")
    a, b = math.log(1e-3), math.log(1e12)
    for _ in range(200):
        m = (a + b) / 2
        if exponential_mean(math.exp(m), lo, hi) < mean:
            a = m
        else:
            b = m
    return math.exp((a + b) / 2)


def mean_size(sizes: Mapping[str, Any]) -> float:
    """E[S] of an IR ``process.sizes``, bytes (closed forms: no sum over the sizes)."""
    if sizes["kind"] == "mix":
        return sum(b * w for b, w in zip(sizes["bytes"], sizes["weights"])) / sum(sizes["weights"])
    return exponential_mean(sizes["scale_bytes"], sizes["min_bytes"], sizes["max_bytes"])


def distribution(sizes: Mapping[str, Any]) -> tuple[list[int], list[float]]:
    """The sizes and their probabilities of an IR ``process.sizes``."""
    if sizes["kind"] == "mix":
        total = sum(sizes["weights"])
        return list(sizes["bytes"]), [w / total for w in sizes["weights"]]
    scale, lo, hi = sizes["scale_bytes"], sizes["min_bytes"], sizes["max_bytes"]
    mass = -math.expm1(-(hi - lo) / scale)
    ks = list(range(lo + 1, hi + 1))
    return ks, [math.exp(-(k - 1 - lo) / scale) * -math.expm1(-1 / scale) / mass for k in ks]


def moments(sizes: Mapping[str, Any]) -> tuple[float, float]:
    """(E[S], E[S²]) of the sizes, bytes and bytes² (Pollaczek–Khinchine needs both)."""
    ks, ps = distribution(sizes)
    return sum(k * p for k, p in zip(ks, ps)), sum(k * k * p for k, p in zip(ks, ps))
