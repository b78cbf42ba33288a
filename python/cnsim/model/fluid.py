"""The BCN fluid model of Jiang & Jain (model reference §8, seed 002).

Two forms:

* :func:`solve_mean_field` — the deterministic ODE of eqs. (10)–(13): per-source rate with the
  negative-feedback probability bᵢ = Σ_{l ∈ path(i)} p_l(y_l) taken from a smooth penalty
  p_l(y) = (y/c_l)^β of the link load; its Lyapunov function :func:`lyapunov` (eq. 11) never
  decreases and its equilibrium is rᵢ* = (Gi·Ru/Gd)(1/bᵢ − 1).
* :func:`simulate_queues` — eq. (7) coupled with fluid queues at every congestion point
  (the "queue-level companion" of §8): dq/dt = Σ rᵢ(t − τ) − C, feedback
  e = (Qeq − q) − W·Qdelta with Qdelta the expected queue change between samples, a Gaussian
  spread of e around that mean, and feedback delayed by propagation + switching + response.
  The sampling delay S/(Pm·rᵢ) enters as the mean update interval μᵢ of eq. (7)–(8).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp
from scipy.special import ndtr, ndtri

from .allocations import half_equal_share, incidence
from .params import PAGE_BYTES, BcnParams
from .topology import Topology

DEFAULT_BETA = 100.0
"""Steepness of the mean-field penalty p_l(y) = (y/c_l)^β; large β ⇒ close to hard capacities."""


# --------------------------------------------------------------------------------------------
# Mean-field form, eqs. (10)–(13)
# --------------------------------------------------------------------------------------------


def default_mean_abs_fb(params: BcnParams) -> float:
    """E|e| (pages) when the fluid mean of Fb is 0 and its spread is the model noise: σ·√(2/π)."""
    return params.noise_pages * np.sqrt(2.0 / np.pi)


def penalty_probability(load: np.ndarray, capacity: np.ndarray, beta: float = DEFAULT_BETA) -> np.ndarray:
    """p_l(y_l) = (y_l/c_l)^β, the probability that link l returns negative feedback (§8, eq. 9).

    The exponent is capped so that a load far above capacity gives a huge but finite value.
    """
    return _capped_power(load / capacity, beta)


def _capped_power(u: np.ndarray, beta: float) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.exp(np.minimum(beta * np.log(np.maximum(u, 0.0)), 600.0))


def negative_probability(r: np.ndarray, a: np.ndarray, c: np.ndarray, beta: float = DEFAULT_BETA) -> np.ndarray:
    """bᵢ = Σ_{l ∈ path(i)} p_l(y_l) (the small-p form of eq. 9)."""
    return a.T @ penalty_probability(a @ r, c, beta)


def mean_field_rhs(
    r: np.ndarray, a: np.ndarray, c: np.ndarray, params: BcnParams, beta: float, mean_abs_fb: float
) -> np.ndarray:
    """dr/dt of eq. (7) with μᵢ = S/(Pm·rᵢ) (eq. 8), equal to eq. (10)/(12)."""
    b = negative_probability(r, a, c, beta)
    gi_ru = params.gi * params.ru_bps
    return (params.pm * r / params.frame_bits) * mean_abs_fb * (gi_ru - b * (params.gd * r + gi_ru))


def lyapunov(r: np.ndarray, a: np.ndarray, c: np.ndarray, params: BcnParams, beta: float = DEFAULT_BETA) -> float:
    """V(r) of eq. (11): Σᵢ (Gi·Ru·Pm/(S·Gd))·ln(1 + Gd·rᵢ/(Gi·Ru)) − (Pm/S)·Σ_l ∫₀^{y_l} p_l."""
    k = params.k_bps
    scale = params.pm / params.frame_bits
    y = a @ r
    penalty = np.sum(c * _capped_power(y / c, beta + 1) / (beta + 1))
    return float(scale * (k * np.log1p(r / k).sum() - penalty))


def closed_form_rates(b: np.ndarray, params: BcnParams) -> np.ndarray:
    """rᵢ* = (Gi·Ru/Gd)·(1/bᵢ − 1), the stationary point of eq. (7) for given bᵢ (§8)."""
    return params.k_bps * (1.0 / b - 1.0)


def equilibrium_negative_fraction(rate_bps: float, params: BcnParams) -> float:
    """b* = Gi·Ru/(Gd·r + Gi·Ru), the fraction of negative BCNs at equilibrium rate r (§8).

    With the §2.1 gains and r = C/N on one bottleneck this is N/(5+N).
    """
    gi_ru = params.gi * params.ru_bps
    return gi_ru / (params.gd * rate_bps + gi_ru)


@dataclass(frozen=True)
class MeanFieldResult:
    """Trajectory of the mean-field ODE: ``rates`` has one row per time in ``t``."""

    t: np.ndarray
    rates: np.ndarray
    lyapunov: np.ndarray

    @property
    def final_rates(self) -> np.ndarray:
        return self.rates[-1]


def solve_mean_field(
    topology: Topology,
    params: BcnParams = BcnParams(),
    t_end_s: float = 0.05,
    r0_bps: np.ndarray | None = None,
    beta: float = DEFAULT_BETA,
    mean_abs_fb: float | None = None,
    n_points: int = 400,
) -> MeanFieldResult:
    """Integrate eq. (10) with ``solve_ivp`` (LSODA, rtol 1e-9) and evaluate V along the way.

    Only congestion-point links enter the penalty. ``r0_bps`` defaults to half of each flow's
    equal share of its tightest link (a start inside the capacity region).
    """
    a, c = incidence(topology.capacities, topology.link_paths)
    a, c = a[topology.is_cp], c[topology.is_cp]
    if np.any(a.sum(axis=0) == 0):
        raise ValueError("the mean-field model needs every flow to cross a congestion point")
    e_abs = default_mean_abs_fb(params) if mean_abs_fb is None else mean_abs_fb
    r0 = half_equal_share(a, c) if r0_bps is None else np.asarray(r0_bps, dtype=float)
    t_eval = np.linspace(0.0, t_end_s, n_points)
    sol = solve_ivp(
        lambda _t, r: mean_field_rhs(r, a, c, params, beta, e_abs),
        (0.0, t_end_s),
        r0,
        method="LSODA",
        t_eval=t_eval,
        rtol=1e-9,
        atol=1.0,
    )
    if not sol.success:
        raise RuntimeError(f"mean-field integration failed: {sol.message}")
    rates = sol.y.T
    v = np.array([lyapunov(r, a, c, params, beta) for r in rates])
    return MeanFieldResult(t=sol.t, rates=rates, lyapunov=v)


def mean_field_jacobian(
    r: np.ndarray, a: np.ndarray, c: np.ndarray, params: BcnParams, beta: float, mean_abs_fb: float
) -> np.ndarray:
    """Jacobian of eq. (10) at an equilibrium r (where the bracket of eq. 7 vanishes).

    Its diagonal is E|e|·Δᵢ of eq. (17) with hᵢ = ∂G/∂rᵢ: the convergence-rate term.
    """
    y = a @ r
    b = negative_probability(r, a, c, beta)
    dp = beta * _capped_power(y / c, beta - 1) / c
    gi_ru = params.gi * params.ru_bps
    rate_factor = params.pm * r / params.frame_bits * mean_abs_fb
    db_dr = (a.T * dp) @ a
    return -rate_factor[:, None] * (np.diag(b * params.gd) + (params.gd * r + gi_ru)[:, None] * db_dr)


def convergence_rate(
    topology: Topology,
    params: BcnParams = BcnParams(),
    beta: float = DEFAULT_BETA,
    mean_abs_fb: float | None = None,
) -> float:
    """Slowest exponential decay rate (1/s) of the mean-field ODE around its equilibrium.

    Seed 002's conclusion from eq. (17): larger Gi, Gd, Ru make this larger. The equilibrium is
    found by integrating :func:`solve_mean_field` until it stops moving.
    """
    e_abs = default_mean_abs_fb(params) if mean_abs_fb is None else mean_abs_fb
    r_star = solve_mean_field(topology, params, t_end_s=1.0, beta=beta, mean_abs_fb=e_abs, n_points=2).final_rates
    a, c = incidence(topology.capacities, topology.link_paths)
    jac = mean_field_jacobian(r_star, a[topology.is_cp], c[topology.is_cp], params, beta, e_abs)
    return float(-np.max(np.linalg.eigvals(jac).real))


# --------------------------------------------------------------------------------------------
# Feedback delay and settling time
# --------------------------------------------------------------------------------------------


def feedback_delay(
    rate_bps: float,
    params: BcnParams = BcnParams(),
    prop_s: float = 0.5e-6,
    switching_s: float = 1e-6,
    response_s: float = 1e-6,
) -> dict[str, float]:
    """Seed 002's feedback delay = sampling + propagation + switching + reaction (§8, §9.8).

    The sampling delay S/(r·Pm) is the mean time until one of a source's frames is sampled.
    """
    parts = {
        "sampling_s": params.frame_bits / (rate_bps * params.pm),
        "propagation_s": prop_s,
        "switching_s": switching_s,
        "reaction_s": response_s,
    }
    parts["total_s"] = sum(parts.values())
    return parts


def settling_time(t: np.ndarray, x: np.ndarray, rel_tol: float = 0.05, tail: float = 0.1) -> float:
    """First time after which ``x`` stays within ±rel_tol of its final value.

    The final value is the mean of ``x`` over the last ``tail`` fraction of the time axis.
    Returns ``inf`` if the last sample is still outside the band.
    """
    final = float(np.mean(x[t >= t[-1] - tail * (t[-1] - t[0])]))
    outside = np.flatnonzero(np.abs(x - final) > rel_tol * abs(final))
    if outside.size == 0:
        return float(t[0])
    if outside[-1] == len(t) - 1:
        return float("inf")
    return float(t[outside[-1] + 1])


# --------------------------------------------------------------------------------------------
# Queue-coupled fluid model, eq. (7) + the §8 queue-level companion
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FluidResult:
    """Trajectories of :func:`simulate_queues` (one row per recorded time).

    ``queues_bytes`` has one column per congestion point in ``cp_ids``; ``negative_fraction`` is
    the fraction of feedback messages that are negative, weighted by each source's sampling rate.
    "Equilibrium" values are means over the last ``tail`` fraction of the run (the whole
    statistics window when compared with a packet-level run).
    """

    t: np.ndarray
    rates_bps: np.ndarray
    queues_bytes: np.ndarray
    negative_fraction: np.ndarray
    flow_ids: tuple
    cp_ids: tuple[str, ...]
    tail: float = 0.2

    def _tail(self) -> np.ndarray:
        return self.t >= self.t[-1] * (1.0 - self.tail)

    @property
    def equilibrium_rates_bps(self) -> np.ndarray:
        return self.rates_bps[self._tail()].mean(axis=0)

    @property
    def mean_queue_bytes(self) -> np.ndarray:
        return self.queues_bytes[self._tail()].mean(axis=0)

    @property
    def mean_negative_fraction(self) -> float:
        return float(self.negative_fraction[self._tail()].mean())

    @property
    def settling_time_s(self) -> float:
        """Settling time of the aggregate rate Σᵢ rᵢ (±5 %, :func:`settling_time`)."""
        return settling_time(self.t, self.rates_bps.sum(axis=1))

    @property
    def fairness_settling_time_s(self) -> float:
        """Latest per-flow settling time (±5 % of each flow's own final rate)."""
        return max(settling_time(self.t, self.rates_bps[:, i]) for i in range(self.rates_bps.shape[1]))


def feedback_statistics(mean_fb: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """(P(e < 0), E|e|) for e ~ Normal(mean_fb, σ²) (pages)."""
    z = mean_fb / sigma
    pdf = np.exp(-0.5 * z**2) / np.sqrt(2.0 * np.pi)
    e_pos = sigma * pdf + mean_fb * ndtr(z)
    e_neg = e_pos - mean_fb
    return ndtr(-z), e_pos + e_neg


def mean_feedback(q_bytes: np.ndarray, dq_bps: np.ndarray, arrival_bps: np.ndarray, params: BcnParams) -> np.ndarray:
    """Fluid mean of Fb (pages) at each CP: clamp(Qeq − q) − W·clamp(Qdelta) (§2.2, §8).

    Qdelta = dq/dt × (mean time between samples S/(Pm·arrival rate)), i.e. the model reference's
    (1/Pm)·(1 − C/Σr) frames while the queue is neither empty nor full.
    """
    qeq = params.qeq_pages
    qoff = np.clip(qeq - q_bytes / PAGE_BYTES, -qeq, qeq)
    interval = params.frame_bits / (params.pm * np.maximum(arrival_bps, 1.0))
    qdelta = np.clip(dq_bps * interval / (8.0 * PAGE_BYTES), -2.0 * qeq, 2.0 * qeq)
    return qoff - params.w * qdelta


def predicted_queue_bytes(b_star: float, params: BcnParams) -> float:
    """Mean queue at a steady single bottleneck whose negative fraction is b* (Qdelta = 0 there).

    P(e < 0) = Φ((q − Qeq)/σ) = b* ⇒ q = Qeq + σ·Φ⁻¹(b*).
    """
    return (params.qeq_pages + params.noise_pages * float(ndtri(b_star))) * PAGE_BYTES


class _Network:
    """Flattened (flow, hop) arrays of a topology for the per-step data-path computation."""

    def __init__(self, topology: Topology):
        self.hop_flow = np.array([i for i, p in enumerate(topology.paths) for _ in p], dtype=int)
        self.hop_link = np.array([j for p in topology.paths for j in p], dtype=int)
        starts = np.cumsum([0] + [len(p) for p in topology.paths])[:-1]
        self.hop_prev = np.arange(len(self.hop_link)) - 1
        self.hop_prev[starts] = -1
        self.depth = max((len(p) for p in topology.paths), default=0)
        self.n_links = len(topology.link_ids)
        self.capacity = topology.capacity_bps
        self.is_cp = topology.is_cp

    def arrivals(self, r_in: np.ndarray, backlogged: np.ndarray) -> np.ndarray:
        """Per-hop arrival rate: a backlogged or overloaded link serves C shared FIFO-like.

        Hop h's arrival is hop h−1's output, so depth − 1 passes settle every hop.
        """
        x = r_in[self.hop_flow]
        for _ in range(self.depth - 1):
            total = np.bincount(self.hop_link, x, minlength=self.n_links)
            over = backlogged | (total > self.capacity)
            scale = np.ones(self.n_links)
            np.divide(self.capacity, total, out=scale, where=over & (total > 0))
            out = x * scale[self.hop_link]
            x = np.where(self.hop_prev >= 0, out[np.maximum(self.hop_prev, 0)], r_in[self.hop_flow])
        return x


def simulate_queues(
    topology: Topology,
    params: BcnParams = BcnParams(),
    t_end_s: float = 0.02,
    dt_s: float = 1e-6,
    r0_bps: np.ndarray | None = None,
    record_every: int = 10,
    rate_floor_bps: float | None = None,
) -> FluidResult:
    """Integrate eq. (7) coupled with the fluid queues of every congestion point.

    Fixed-step forward Euler with step ``dt_s`` (the delay terms need a history buffer, which an
    adaptive solver would have to interpolate); delays are rounded to whole steps.
    Per source i at time t:

    * data reach the network after the one-way path delay: arrivals use rᵢ(t − τᵢ);
    * every CP l has q_l ∈ [0, buffer]; dq_l/dt = arrivals − C_l (projected at the bounds);
    * the fluid mean of Fb is :func:`mean_feedback`; Fb ~ Normal(mean, σ²) with σ =
      ``params.noise_pages`` gives the negative probability b_l and E|e_l|
      (:func:`feedback_statistics`);
    * source i sees CP states from t − (τᵢ + response): bᵢ = min(1, Σ_l b_l) (eq. 9, small-p form)
      and E|eᵢ| = Σ_l π_l·E|e_l| with π_l ∝ b_l (the CP sending negatives owns the limiter, §2.3);
    * drᵢ/dt = (Pm·rᵢ/S)·E|eᵢ|·{Gi·Ru − bᵢ(Gd·rᵢ + Gi·Ru)} (eqs. 7–8), rᵢ kept in
      [rate floor, min(line rate, demand)]; flows crossing no CP stay at that cap.

    ``r0_bps`` defaults to each flow's cap (saturated sources start unregulated, §2.3).
    """
    net = _Network(topology)
    cap = np.minimum(np.array([topology.capacity_bps[p[0]] for p in topology.paths]), topology.demand_bps)
    floor = params.ru_bps if rate_floor_bps is None else rate_floor_bps
    r = cap.copy() if r0_bps is None else np.asarray(r0_bps, dtype=float).copy()
    cps = np.flatnonzero(topology.is_cp)
    a_cp = np.zeros((len(topology.paths), len(cps)))
    for i, p in enumerate(topology.paths):
        for j in p:
            if topology.is_cp[j]:
                a_cp[i, np.searchsorted(cps, j)] = 1.0
    controlled = a_cp.sum(axis=1) > 0
    buffer_bits = 8.0 * topology.buffer_bytes[cps]
    n_steps = int(round(t_end_s / dt_s))
    fwd = np.array([int(round(topology.one_way_delay_s(i) / dt_s)) for i in range(len(r))])
    back = fwd + np.rint(topology.response_s / dt_s).astype(int)
    depth = int(max(fwd.max(initial=0), back.max(initial=0))) + 1
    r_hist = np.tile(r, (depth, 1))
    b_hist = np.zeros((depth, len(cps)))
    e_hist = np.zeros((depth, len(cps)))
    q = np.zeros(len(cps))
    flows = np.arange(len(r))
    gi_ru = params.gi * params.ru_bps
    rec_t, rec_r, rec_q, rec_b = [], [], [], []
    for step in range(n_steps + 1):
        slot = step % depth
        r_in = r_hist[(slot - fwd) % depth, flows]
        backlogged = np.zeros(net.n_links, dtype=bool)
        backlogged[cps] = q > 0
        arrivals = np.bincount(net.hop_link, net.arrivals(r_in, backlogged), minlength=net.n_links)[cps]
        dq = arrivals - topology.capacity_bps[cps]
        dq = np.where(((q <= 0) & (dq < 0)) | ((q >= buffer_bits) & (dq > 0)), 0.0, dq)
        b_cp, e_cp = feedback_statistics(mean_feedback(q / 8.0, dq, arrivals, params), params.noise_pages)
        b_hist[slot], e_hist[slot] = b_cp, e_cp
        seen = (slot - back) % depth
        b_seen = b_hist[seen] * a_cp
        weight = (b_seen + 1e-12) * a_cp
        e_abs = (weight * e_hist[seen]).sum(axis=1) / np.maximum(weight.sum(axis=1), 1e-300)
        b = np.minimum(1.0, b_seen.sum(axis=1))
        if step % record_every == 0:
            rec_t.append(step * dt_s)
            rec_r.append(r.copy())
            rec_q.append(q / 8.0)
            rec_b.append(float((r * b).sum() / r[controlled].sum()) if controlled.any() else 0.0)
        drdt = (params.pm * r / params.frame_bits) * e_abs * (gi_ru - b * (params.gd * r + gi_ru))
        r = np.where(controlled, np.clip(r + dt_s * drdt, floor, cap), cap)
        q = np.clip(q + dt_s * dq, 0.0, buffer_bits)
        r_hist[(slot + 1) % depth] = r
    return FluidResult(
        t=np.array(rec_t),
        rates_bps=np.array(rec_r),
        queues_bytes=np.array(rec_q),
        negative_fraction=np.array(rec_b),
        flow_ids=topology.flow_ids,
        cp_ids=tuple(topology.link_ids[j] for j in cps),
    )
