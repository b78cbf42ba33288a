"""The BCN fluid model of model reference §8 (TESTING.md A.4, T11; seed 002's analytical conclusions)."""

from __future__ import annotations

import numpy as np
import pytest
from cnsim.model import (
    BcnParams,
    Topology,
    bcn_equilibrium,
    closed_form_rates,
    convergence_rate,
    equilibrium_negative_fraction,
    feedback_delay,
    lyapunov,
    parking_lot,
    settling_time,
    simulate_queues,
    single_bottleneck,
    solve_mean_field,
)
from cnsim.model.allocations import incidence
from cnsim.model.fluid import mean_feedback, mean_field_rhs, negative_probability, predicted_queue_bytes
from scipy.optimize import minimize

C = 10e9
P = BcnParams()
PARK = Topology.from_description(parking_lot())
SYM4 = Topology.from_description(single_bottleneck(4))


def _cp_matrix(topo: Topology):
    a, c = incidence(topo.capacities, topo.link_paths)
    return a[topo.is_cp], c[topo.is_cp]


# --- mean-field form, eqs. (10)–(13) ------------------------------------------------------------------


def test_mean_field_equilibrium_is_the_closed_form():
    a, c = _cp_matrix(PARK)
    r = solve_mean_field(PARK, P, t_end_s=3.0).final_rates
    b = negative_probability(r, a, c)
    np.testing.assert_allclose(r, closed_form_rates(b, P), rtol=1e-7)
    assert np.max(np.abs(mean_field_rhs(r, a, c, P, 100.0, 50.0))) < 1e-6 * C


def test_mean_field_equilibrium_maximises_v():
    a, c = _cp_matrix(PARK)
    r = solve_mean_field(PARK, P, t_end_s=1.0).final_rates
    ref = minimize(
        lambda x: -lyapunov(x * 1e9, a, c, P),
        np.ones(6),
        method="Nelder-Mead",
        options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 20000, "maxfev": 40000},
    )
    np.testing.assert_allclose(r, ref.x * 1e9, rtol=1e-4)


@pytest.mark.parametrize("topo", [PARK, SYM4], ids=["parking-lot", "single"])
def test_lyapunov_never_decreases(topo):
    rng = np.random.default_rng(7)
    r0 = rng.uniform(0.05, 0.4, len(topo.paths)) * C
    res = solve_mean_field(topo, P, t_end_s=0.3, r0_bps=r0)
    steps = np.diff(res.lyapunov)
    assert steps.min() >= -1e-9 * np.abs(res.lyapunov).max()
    assert res.lyapunov[-1] - res.lyapunov[0] > 1.0  # it does climb


def test_steep_penalty_approaches_hard_capacity_equilibrium():
    """As p_l(y) = (y/c)^β steepens, the eq. (11) maximiser tends to the capacity-constrained one."""
    hard = bcn_equilibrium(PARK.capacities, PARK.link_paths, P)
    errors = [
        np.max(np.abs(solve_mean_field(PARK, P, t_end_s=1.0, beta=b).final_rates / hard - 1))
        for b in (20.0, 100.0, 1000.0)
    ]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.005


# --- negative-feedback fraction and seed 002's conclusions --------------------------------------------


@pytest.mark.parametrize("n, expected", [(4, 4 / 9), (100, 100 / 105)])
def test_negative_fraction_at_equilibrium_is_n_over_5_plus_n(n, expected):
    assert equilibrium_negative_fraction(C / n, P) == pytest.approx(expected, rel=1e-4)
    assert round(equilibrium_negative_fraction(C / 4, P), 2) == 0.44


def test_larger_gains_converge_faster():
    """Seed 002 (eq. 17): increasing Gi, Gd or Ru increases the rate of convergence."""
    base = convergence_rate(SYM4, P)
    for change in ({"gi": 2 * P.gi}, {"gd": 2 * P.gd}, {"ru_bps": 2 * P.ru_bps}):
        assert convergence_rate(SYM4, P.with_(**change)) > 1.2 * base, change


def test_sampling_delay_dominates_propagation():
    """Seed 002: sampling delay S/(r·Pm) = 1.2 ms for 1500 B at 1 Gb/s, Pm 0.01, vs 0.5 µs of propagation."""
    parts = feedback_delay(1e9, P, prop_s=0.5e-6)
    assert parts["sampling_s"] == pytest.approx(1.2e-3, rel=1e-12)
    assert parts["sampling_s"] > 100 * (parts["propagation_s"] + parts["switching_s"] + parts["reaction_s"])


@pytest.mark.extensive  # three 20-ms fluid integrations
def test_fluid_settling_depends_on_pm_not_on_propagation():
    """§9.8: 9.5 µs links barely move the settling time; a 5× larger Pm shortens it a lot."""

    def settle(params, prop):
        topo = Topology.from_description(single_bottleneck(4, prop_s=prop))
        return simulate_queues(topo, params, t_end_s=0.02, dt_s=2e-6).settling_time_s

    base = settle(P, 0.5e-6)
    assert settle(P, 9.5e-6) == pytest.approx(base, rel=0.05)
    assert settle(P.with_(pm=0.05), 0.5e-6) < 0.6 * base


# --- queue-coupled model --------------------------------------------------------------------------------


def test_qdelta_is_the_spec_expected_change_between_samples():
    """§8: expected Qdelta ≈ (1/Pm)(1 − C/Σr) frames; at q = Qeq the mean Fb is −W·Qdelta."""
    arrivals = np.array([12e9])
    fb = mean_feedback(np.array([P.qeq_pages * 64]), arrivals - C, arrivals, P)
    qdelta_pages = (1 / P.pm) * (1 - C / arrivals[0]) * P.frame_pages
    assert fb[0] == pytest.approx(-P.w * qdelta_pages, rel=1e-12)


def test_single_bottleneck_fluid_equilibrium():
    """T11 targets: aggregate within 2 % of C, C/N per flow, b* = N/(5+N), queue at the model's value."""
    res = simulate_queues(SYM4, P, t_end_s=0.03, dt_s=1e-6)
    rates = res.equilibrium_rates_bps
    assert rates.sum() == pytest.approx(C, rel=0.02)
    np.testing.assert_allclose(rates, C / 4, rtol=1e-3)
    assert res.mean_negative_fraction == pytest.approx(4 / 9, abs=1e-3)
    bottleneck = res.cp_ids.index("SW1->SW2")
    assert res.mean_queue_bytes[bottleneck] == pytest.approx(predicted_queue_bytes(4 / 9, P), rel=0.01)
    assert res.mean_queue_bytes[res.cp_ids.index("SW2->sink")] < 1.0
    assert 1e-3 < res.settling_time_s < 0.02


@pytest.mark.extensive  # 0.3 s of the queue-coupled fluid model
def test_parking_lot_fluid_reaches_bcn_utility_equilibrium():
    """The queue model settles (slowly) at the §8 closed form a = 1.33 G, b = 4.67 G, not at C/6, C/3."""
    res = simulate_queues(PARK, P, t_end_s=0.3, dt_s=5e-6, record_every=20)
    final = res.rates_bps[-1]
    np.testing.assert_allclose(final, bcn_equilibrium(PARK.capacities, PARK.link_paths, P), rtol=0.01)
    assert final[:4].sum() + final[4] == pytest.approx(C, rel=0.02)  # L1 full
    assert final[:4].sum() + final[5] == pytest.approx(C, rel=0.02)  # L2 full


def test_settling_time_definition():
    t = np.linspace(0, 1, 1001)
    x = 1 + np.where(t < 0.3, 1.0, 0.0) + 0.01 * np.sin(50 * t)
    assert settling_time(t, x) == pytest.approx(0.3, abs=1e-3)
    assert settling_time(t, np.where(t < 0.999, 1.0, 3.0)) == np.inf
