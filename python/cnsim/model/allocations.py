"""Rate allocations on a network of capacitated links (model reference §8, §9.3).

Every solver takes ``capacities`` (link id → capacity, bit/s) and ``paths`` (one sequence of link
ids per flow) and returns one rate per flow (numpy array, bit/s, in the order of ``paths``).

* :func:`max_min_fair` — progressive filling (water-filling), optional per-flow demand caps.
* :func:`utility_max` — maximise Σ wᵢ·ln(kᵢ + xᵢ) subject to the link capacities, by a
  primal log-barrier Newton method (a strictly concave, separable problem with linear
  constraints, so the method converges globally).
* :func:`proportional_fair` — the case kᵢ = 0 (weighted proportional fairness).
* :func:`bcn_equilibrium` — the BCN equilibrium of §8, the case kᵢ = Gi·Ru/Gd.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from .params import BcnParams

Paths = Sequence[Sequence[Hashable]]

_REL_TOL = 1e-12


def incidence(capacities: Mapping[Hashable, float], paths: Paths) -> tuple[np.ndarray, np.ndarray]:
    """Link-by-flow 0/1 matrix ``A`` (A[l, i] = 1 when flow i crosses link l) and capacity vector."""
    index = {link: j for j, link in enumerate(capacities)}
    a = np.zeros((len(index), len(paths)))
    for i, path in enumerate(paths):
        for link in path:
            if link not in index:
                raise ValueError(f"flow {i}: unknown link {link!r}")
            a[index[link], i] = 1.0
    c = np.array([float(capacities[link]) for link in capacities])
    if np.any(c <= 0):
        raise ValueError("every link capacity must be > 0")
    return a, c


def _demand_vector(demands: Sequence[float | None] | None, n: int) -> np.ndarray:
    if demands is None:
        return np.full(n, np.inf)
    if len(demands) != n:
        raise ValueError(f"{len(demands)} demands for {n} flows")
    d = np.array([np.inf if v is None else float(v) for v in demands])
    if np.any(d < 0):
        raise ValueError("demands must be >= 0")
    return d


def _check_bounded(a: np.ndarray, d: np.ndarray) -> None:
    unbounded = (a.sum(axis=0) == 0) & np.isinf(d)
    if unbounded.any():
        raise ValueError(f"flows {np.flatnonzero(unbounded).tolist()} cross no link and have no demand cap")


def max_min_fair(
    capacities: Mapping[Hashable, float], paths: Paths, demands: Sequence[float | None] | None = None
) -> np.ndarray:
    """Max-min fair rates by progressive filling.

    All unfrozen flows are raised together; when a link saturates, every flow crossing it is
    frozen; a flow also freezes when it reaches its demand cap (``None`` = no cap).
    """
    a, c = incidence(capacities, paths)
    d = _demand_vector(demands, len(paths))
    _check_bounded(a, d)
    x = np.zeros(len(paths))
    remaining = c.copy()
    active = d > 0
    while active.any():
        counts = a[:, active].sum(axis=1)
        used = counts > 0
        step = np.min((d - x)[active])
        if used.any():
            step = min(step, np.min(remaining[used] / counts[used]))
        x[active] += step
        remaining -= step * counts
        saturated = used & (remaining <= _REL_TOL * c)
        remaining[saturated] = 0.0
        on_saturated = a[saturated].sum(axis=0) > 0
        active &= ~(on_saturated | (x >= d * (1 - _REL_TOL)))
    return x


def half_equal_share(a: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Half of each flow's equal share of its tightest link: a strictly feasible rate vector."""
    counts = a.sum(axis=1)
    share = np.where(a > 0, (c / np.maximum(counts, 1))[:, None], np.inf)
    return 0.5 * share.min(axis=0)


def _barrier_objective(x, a, c, w, k, mu) -> float:
    slack = c - a @ x
    if np.any(slack <= 0) or np.any(x <= 0):
        return -np.inf
    return float(w @ np.log(k + x) + mu * (np.log(slack).sum() + np.log(x).sum()))


def _newton_centre(x, a, c, w, k, mu) -> np.ndarray:
    """Maximise the barrier objective for one μ by damped Newton steps with backtracking."""
    for _ in range(100):
        slack = c - a @ x
        grad = w / (k + x) - mu * (a.T @ (1 / slack)) + mu / x
        hess = np.diag(w / (k + x) ** 2 + mu / x**2) + mu * (a.T * (1 / slack**2)) @ a
        dx = np.linalg.solve(hess, grad)
        decrement = float(grad @ dx)
        if decrement < 1e-20:
            break
        f0 = _barrier_objective(x, a, c, w, k, mu)
        t = 1.0
        while _barrier_objective(x + t * dx, a, c, w, k, mu) < f0 + 0.25 * t * decrement:
            t *= 0.5
            if t < 1e-16:
                return x
        x = x + t * dx
    return x


def utility_max(
    capacities: Mapping[Hashable, float],
    paths: Paths,
    weights: Sequence[float],
    offsets: Sequence[float],
    demands: Sequence[float | None] | None = None,
) -> np.ndarray:
    """Maximise Σ wᵢ·ln(kᵢ + xᵢ) s.t. Σ_{i ∋ l} xᵢ ≤ c_l, 0 ≤ xᵢ ≤ demandᵢ.

    ``weights`` wᵢ > 0, ``offsets`` kᵢ ≥ 0 (bit/s). Demand caps are added as one-flow links.
    Solved in units of the largest capacity by a log-barrier method (μ divided by 10 per outer
    step until the duality-gap bound μ·(#constraints) is below 1e-12).
    """
    a, c = incidence(capacities, paths)
    d = _demand_vector(demands, len(paths))
    _check_bounded(a, d)
    w = np.asarray(weights, dtype=float)
    k = np.asarray(offsets, dtype=float)
    if np.any(w <= 0) or np.any(k < 0):
        raise ValueError("weights must be > 0 and offsets >= 0")
    x = np.zeros(len(paths))
    live = d > 0
    capped = np.flatnonzero(np.isfinite(d) & live)
    a_ext = np.vstack([a[:, live], np.eye(len(paths))[capped][:, live]])
    c_ext = np.concatenate([c, d[capped]])
    scale = c_ext.max()
    keep = a_ext.sum(axis=1) > 0
    a_ext, c_ext = a_ext[keep], c_ext[keep] / scale
    w_live = w[live] / w[live].mean()
    k_live = k[live] / scale
    y = half_equal_share(a_ext, c_ext)
    mu = 1.0
    n_constraints = a_ext.shape[0] + a_ext.shape[1]
    while mu * n_constraints > 1e-12:
        y = _newton_centre(y, a_ext, c_ext, w_live, k_live, mu)
        mu /= 10.0
    x[live] = y * scale
    return x


def proportional_fair(
    capacities: Mapping[Hashable, float],
    paths: Paths,
    weights: Sequence[float] | None = None,
    demands: Sequence[float | None] | None = None,
) -> np.ndarray:
    """Weighted proportional fairness: maximise Σ wᵢ·ln xᵢ subject to link capacities (A.4)."""
    w = np.ones(len(paths)) if weights is None else np.asarray(weights, dtype=float)
    return utility_max(capacities, paths, w, np.zeros(len(paths)), demands)


def bcn_equilibrium(
    capacities: Mapping[Hashable, float],
    paths: Paths,
    params: BcnParams = BcnParams(),
    demands: Sequence[float | None] | None = None,
) -> np.ndarray:
    """The BCN equilibrium of model reference §8 with link capacities as hard constraints.

    Eq. (11): V(r) = Σᵢ (Gi·Ru·Pm/(S·Gd))·ln(1 + Gd·rᵢ/(Gi·Ru)) − P(r). When the penalty P becomes
    the indicator of the capacity region (negative feedback only once a link is full), the
    maximiser of V is the maximiser of Σᵢ k·ln(k + rᵢ) over that region, k = Gi·Ru/Gd (the
    positive factor Pm/S and the constant −k·ln k do not move the maximiser). This is
    :func:`utility_max` with wᵢ = kᵢ = k. With the §2.1 gains k = C/5, so it is *not* plain
    proportional fairness (the caveat of §8): the parking lot gives (C − k)/6 per long flow.
    """
    n = len(paths)
    k = params.k_bps
    return utility_max(capacities, paths, np.full(n, k), np.full(n, k), demands)


def jain_index(rates: Sequence[float]) -> float:
    """Jain's fairness index (Σx)²/(n·Σx²) (model reference §1.7)."""
    x = np.asarray(rates, dtype=float)
    if x.size == 0 or not np.any(x):
        raise ValueError("Jain's index needs at least one non-zero rate")
    return float(x.sum() ** 2 / (x.size * (x**2).sum()))


def parking_lot_ratio(short_rates: Sequence[float], long_rates: Sequence[float]) -> float:
    """Seed 002's parking-lot ratio 2(R1+R2)/(R01+…+R04) (model reference §9.3).

    Computed as mean(short)/mean(long), which equals the seed's formula for its two short and four
    long flows and generalises it to other counts: 2 under proportional fairness, 1 under max-min.
    """
    short = np.asarray(short_rates, dtype=float)
    long_ = np.asarray(long_rates, dtype=float)
    if short.size == 0 or long_.size == 0 or not np.any(long_):
        raise ValueError("need at least one short and one long flow with a non-zero long rate")
    return float(short.mean() / long_.mean())
