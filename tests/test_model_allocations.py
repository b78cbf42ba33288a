"""Fairness allocations against hand-solved cases and brute-force solvers (TESTING.md T9, A.4)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from cnsim.model import (
    BcnParams,
    bcn_equilibrium,
    jain_index,
    max_min_fair,
    normalised_gains,
    parking_lot_ratio,
    proportional_fair,
    utility_max,
)
from cnsim.model.allocations import incidence
from scipy.optimize import linprog, minimize

C = 10e9
PARK_CAPS = {"L1": C, "L2": C}
PARK_PATHS = [["L1", "L2"]] * 4 + [["L1"], ["L2"]]


@pytest.mark.parametrize("n", [1, 4, 7])
def test_single_bottleneck_gives_c_over_n(n):
    paths = [["L"]] * n
    for solver in (max_min_fair, proportional_fair):
        np.testing.assert_allclose(solver({"L": C}, paths), C / n, rtol=1e-9)


def test_parking_lot_max_min_is_c_over_5():
    np.testing.assert_allclose(max_min_fair(PARK_CAPS, PARK_PATHS), C / 5, rtol=1e-12)


def test_parking_lot_proportional_is_c6_long_c3_short():
    x = proportional_fair(PARK_CAPS, PARK_PATHS)
    np.testing.assert_allclose(x[:4], C / 6, rtol=1e-8)
    np.testing.assert_allclose(x[4:], C / 3, rtol=1e-8)
    assert parking_lot_ratio(x[4:], x[:4]) == pytest.approx(2.0, rel=1e-8)
    assert parking_lot_ratio(max_min_fair(PARK_CAPS, PARK_PATHS)[4:], np.full(4, C / 5)) == pytest.approx(1.0)


def test_bcn_parking_lot_matches_spec_caveat():
    """§8 caveat: with Gi·Ru/Gd = C/5, a = (C − C/5)/6 = 1.33 G and b = 4.67 G."""
    gi, gd = normalised_gains(C, 375.0)
    params = BcnParams(gi=gi, gd=gd)
    assert params.k_bps == pytest.approx(C / 5, rel=1e-12)
    x = bcn_equilibrium(PARK_CAPS, PARK_PATHS, params)
    np.testing.assert_allclose(x[:4], (C - C / 5) / 6, rtol=1e-8)
    np.testing.assert_allclose(x[4:], C - 4 * (C - C / 5) / 6, rtol=1e-8)
    assert x[0] / 1e9 == pytest.approx(1.33, abs=0.005) and x[4] / 1e9 == pytest.approx(4.67, abs=0.005)


def test_bcn_tends_to_proportional_when_k_is_small():
    params = BcnParams(gi=1e-3)  # k = Gi·Ru/Gd ≈ 3.75 Mb/s ≪ rates
    np.testing.assert_allclose(
        bcn_equilibrium(PARK_CAPS, PARK_PATHS, params), proportional_fair(PARK_CAPS, PARK_PATHS), rtol=2e-3
    )


def test_gain_normalisation_golden_values():
    gi, gd = normalised_gains(10e9, 375.0)
    assert (round(gi, 5), round(gd, 8)) == (0.53333, 2.6667e-4)


def test_demand_caps():
    x = max_min_fair({"L": C}, [["L"]] * 3, demands=[1e9, None, None])
    np.testing.assert_allclose(x, [1e9, 4.5e9, 4.5e9])
    x = proportional_fair({"L": C}, [["L"]] * 3, demands=[1e9, None, 0.0])
    np.testing.assert_allclose(x, [1e9, 9e9, 0.0], rtol=1e-8)


def test_weighted_proportional_splits_by_weight():
    x = proportional_fair({"L": C}, [["L"]] * 2, weights=[1.0, 3.0])
    np.testing.assert_allclose(x, [C / 4, 3 * C / 4], rtol=1e-8)


def test_unbounded_flow_is_rejected():
    with pytest.raises(ValueError):
        max_min_fair({"L": C}, [["L"], []])
    with pytest.raises(ValueError):
        proportional_fair({"L": C}, [["X"]])


def test_jain_index():
    assert jain_index([1, 1, 1, 1]) == pytest.approx(1.0)
    assert jain_index([1, 0, 0, 0]) == pytest.approx(0.25)
    assert jain_index([1, 2, 3]) == pytest.approx(36 / 42)
    with pytest.raises(ValueError):
        jain_index([0, 0])


def test_seed_002_parking_lot_ratio():
    """[C]'s published rates give 2(R1+R2)/ΣR0i = 1.97."""
    assert parking_lot_ratio([3.0795, 3.0185], [1.4643, 1.4532, 1.5430, 1.7291]) == pytest.approx(1.97, abs=0.005)


# --- random multi-bottleneck graphs against brute force ------------------------------------------------


def _random_instance(rng: np.random.Generator):
    n_links, n_flows = rng.integers(2, 5), rng.integers(2, 6)
    caps = {f"l{j}": float(rng.integers(1, 10)) for j in range(n_links)}
    links = list(caps)
    paths = []
    for _ in range(n_flows):
        k = rng.integers(1, n_links + 1)
        paths.append(sorted(rng.choice(links, size=k, replace=False).tolist()))
    return caps, paths


def _max_min_by_lp(caps, paths):
    """Lexicographic max-min by successive LPs: raise the common floor t, freeze flows that cannot go above it."""
    a, c = incidence(caps, paths)
    n = len(paths)
    fixed = np.full(n, np.nan)
    while np.isnan(fixed).any():
        free = np.isnan(fixed)
        # variables: x (n), t; maximise t s.t. A x <= c, x_i >= t (free), x_i = fixed_i (frozen)
        obj = np.zeros(n + 1)
        obj[-1] = -1.0
        a_ub = np.hstack([a, np.zeros((a.shape[0], 1))])
        rows = [np.concatenate([-np.eye(n)[i], [1.0]]) for i in np.flatnonzero(free)]
        a_ub = np.vstack([a_ub] + rows)
        b_ub = np.concatenate([c, np.zeros(len(rows))])
        bounds = [(v, v) if not np.isnan(v) else (0, None) for v in fixed] + [(0, None)]
        t = -linprog(obj, A_ub=a_ub, b_ub=b_ub, bounds=bounds).fun
        for i in np.flatnonzero(free):
            # can flow i exceed t while the other free flows keep at least t?
            obj_i = np.zeros(n + 1)
            obj_i[i] = -1.0
            bnds = [(v, v) if not np.isnan(v) else (t - 1e-9, None) for v in fixed] + [(0, 0)]
            best = -linprog(obj_i, A_ub=a_ub[: a.shape[0]], b_ub=c, bounds=bnds).fun
            if best <= t + 1e-7:
                fixed[i] = t
    return fixed


@pytest.mark.parametrize("seed", range(12))
def test_max_min_matches_lexicographic_lp(seed):
    caps, paths = _random_instance(np.random.default_rng(seed))
    np.testing.assert_allclose(max_min_fair(caps, paths), _max_min_by_lp(caps, paths), rtol=1e-6, atol=1e-7)


def _utility_by_grid(caps, paths, k, step=0.05):
    """Exhaustive grid search over rates in multiples of ``step`` (tiny instances only)."""
    a, c = incidence(caps, paths)
    grid = np.arange(step, c.max() + step / 2, step)
    best, arg = -np.inf, None
    for x in itertools.product(grid, repeat=len(paths)):
        x = np.array(x)
        if np.all(a @ x <= c + 1e-12):
            val = np.sum(np.log(k + x))
            if val > best:
                best, arg = val, x
    return arg, best


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [0.0, 0.8])
def test_utility_max_beats_grid_search(seed, k):
    rng = np.random.default_rng(100 + seed)
    caps = {f"l{j}": float(rng.integers(1, 4)) for j in range(2)}
    paths = [["l0"], ["l0", "l1"], ["l1"]]
    x = utility_max(caps, paths, np.ones(3), np.full(3, k))
    a, c = incidence(caps, paths)
    assert np.all(a @ x <= c * (1 + 1e-9))
    grid_x, grid_val = _utility_by_grid(caps, paths, k)
    assert np.sum(np.log(k + x)) >= grid_val - 1e-9
    np.testing.assert_allclose(x, grid_x, atol=0.06)


@pytest.mark.parametrize("seed", range(8))
def test_proportional_matches_slsqp(seed):
    caps, paths = _random_instance(np.random.default_rng(200 + seed))
    a, c = incidence(caps, paths)
    w = np.random.default_rng(seed).uniform(0.5, 2.0, len(paths))
    x = proportional_fair(caps, paths, weights=w)
    ref = minimize(
        lambda v: -w @ np.log(v),
        np.full(len(paths), 1e-3),
        method="SLSQP",
        bounds=[(1e-9, None)] * len(paths),
        constraints=[{"type": "ineq", "fun": lambda v: c - a @ v, "jac": lambda v: -a}],
        options={"ftol": 1e-14, "maxiter": 1000},
    )
    assert ref.success
    assert w @ np.log(x) >= -ref.fun - 1e-7
    np.testing.assert_allclose(x, ref.x, rtol=1e-4)
