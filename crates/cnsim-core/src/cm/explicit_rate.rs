//! Shared switch computation of Jain's explicit-rate schemes, used by `becn` and `fecn`
//! (model reference §5.2, §5.3).
//!
//! Every switch egress port runs one [`PortRate`]: it measures, over each interval T, the bits
//! received (admitted *and* refused arrivals, data and control), the bits sent (credited
//! continuously while a frame is on the wire, so an always-busy port measures exactly its service
//! rate) and the busy time (time the queue was non-empty, including time spent paused or throttled
//! by an output-generated hotspot); at the end of the interval it estimates the capacity, computes
//! the load factor against the queue-adjusted target `f(q)·Ci` and the advertised rate `r_i`.
//!
//! What is read from a public source and what is reconstructed (model reference §5, §12 F1/F2):
//! * the per-port state, the initial values, the T-timer routine, the idle-port rule and the
//!   load-factor rate allocation follow the FECN switch pseudo-code [SRC];
//! * the hyperbolic f(q) is the ERICA+ form recalled from memory ([MEM], §12 F2): [`hyperbolic_f`];
//! * the bodies of four helper routines were not visible and are **reconstructions** ([PROPOSED]),
//!   each isolated in its own function: [`estimate_capacity`], [`exponential_average`],
//!   [`limit_rate_increase`], [`variable_capacity_adjustment`].
//!
//! One deliberate ordering choice (documented in docs/schemes/fecn.md): the spec's text applies
//! the variable-capacity scaling to r_i after the averaging. r_i computed from the load factor
//! already contains the new capacity Ci (ρ is measured against Ci), so scaling it again would
//! count a capacity change twice; here the scaling re-expresses only the *history* (r_{i-1},
//! r_{i-2}) at the new capacity, before the exponential averaging mixes it in.

use crate::error::ScenarioError;
use crate::time::{SimTime, PS_PER_S};
use serde::Deserialize;

/// Parameters of the switch computation (IR: base units, no defaults).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchParams {
    /// Measurement interval T, ps.
    pub interval_ps: u64,
    /// Queue equilibrium Qeq, bytes (375 pages = 24 000 B).
    pub qeq_bytes: f64,
    /// Hyperbolic f(q): value at an empty queue (> 1).
    pub a: f64,
    /// Hyperbolic f(q): decay above Qeq (>= 1).
    pub b: f64,
    /// Hyperbolic f(q): floor (0 < c <= 1).
    pub c: f64,
    /// Exponential-averaging weight of the previous rate, 0 <= β < 1.
    pub beta: f64,
    /// Start-up divider: the start-up / idle rate is C0/N0 (1 = not used).
    pub n0: f64,
    /// Limit the per-interval rate increase ([PROPOSED] body; default off).
    pub limit_increase: bool,
    /// Estimate the capacity from bits sent / busy time ([PROPOSED] body; default on).
    pub capacity_estimation: bool,
    /// Re-scale the rate history when the estimated capacity changes ([PROPOSED]; default on).
    pub variable_capacity: bool,
}

impl SwitchParams {
    /// Re-check the ranges (Python validated them already; a direct Rust user gets a path).
    pub fn check(&self, prefix: &str) -> Result<(), ScenarioError> {
        let bad = |f: &str, m: &str| Err(ScenarioError::field(format!("{prefix}.{f}"), m.to_string()));
        if self.interval_ps == 0 {
            return bad("interval_ps", "must be > 0");
        }
        if !(self.qeq_bytes > 0.0 && self.qeq_bytes.is_finite()) {
            return bad("qeq_bytes", "must be > 0");
        }
        if !(self.a >= 1.0 && self.a.is_finite()) {
            return bad("a", "must be >= 1");
        }
        if !(self.b >= 1.0 && self.b.is_finite()) {
            return bad("b", "must be >= 1");
        }
        if !(self.c > 0.0 && self.c <= 1.0) {
            return bad("c", "must be in (0, 1]");
        }
        if !(self.beta >= 0.0 && self.beta < 1.0) {
            return bad("beta", "must be in [0, 1)");
        }
        if !(self.n0 >= 1.0 && self.n0.is_finite()) {
            return bad("n0", "must be >= 1");
        }
        Ok(())
    }

    /// T in seconds.
    pub fn interval_s(&self) -> f64 {
        self.interval_ps as f64 / PS_PER_S as f64
    }
}

// ------------------------------------------------------------------------------------------------
// control law: queue-control function and helper routines
// ------------------------------------------------------------------------------------------------

/// Hyperbolic queue-control function f(q) (model reference §5.2, [MEM] ERICA+ form, §12 F2).
///
/// `f(0) = a`, `f(Qeq) = 1`, decreasing, floored at `c` above Qeq. `q` and `qeq` in the same unit.
pub fn hyperbolic_f(q: f64, qeq: f64, a: f64, b: f64, c: f64) -> f64 {
    if q <= qeq {
        a * qeq / ((a - 1.0) * q + qeq)
    } else {
        (b * qeq / ((b - 1.0) * q + qeq)).max(c)
    }
}

/// Capacity estimation — **reconstruction** ([PROPOSED], model reference §5.3 / §12 F1).
///
/// The effective service rate while the port had work: `bits_sent / busy time`; the previous
/// estimate when the queue was never non-empty; never below `C0/N0` (a stopped port must not give
/// Ci = 0) nor above C0. Note: with N0 = 1 the floor equals C0, which switches the estimate off.
pub fn estimate_capacity(bits_sent: f64, busy_s: f64, c_prev: f64, c0: f64, n0: f64) -> f64 {
    let ci = if busy_s > 0.0 { bits_sent / busy_s } else { c_prev };
    ci.max(c0 / n0).min(c0)
}

/// Exponential averaging — **reconstruction of the form** ([PROPOSED]; with β = 0.5 the form is
/// moot): `r = (1 − β)·r_new + β·r_prev`.
pub fn exponential_average(r_new: f64, r_prev: f64, beta: f64) -> f64 {
    (1.0 - beta) * r_new + beta * r_prev
}

/// Limit on the rate increase — **reconstruction** ([PROPOSED], off by default).
///
/// At most `+Δr` per interval, Δr doubling while the rate keeps hitting the limit and halving
/// (not below C0/N0) otherwise; no increase at all while the queue is above Qeq.
/// Returns the limited rate; updates `delta_r`.
pub fn limit_rate_increase(r: f64, r_prev: f64, delta_r: &mut f64, qlen: f64, qeq: f64, c0: f64, n0: f64) -> f64 {
    let mut r = r;
    if r > r_prev + *delta_r {
        r = r_prev + *delta_r;
        *delta_r *= 2.0;
    } else {
        *delta_r = (*delta_r / 2.0).max(c0 / n0);
    }
    if qlen > qeq && r > r_prev {
        r = r_prev;
    }
    r
}

/// Variable-capacity adjustment — **reconstruction** ([PROPOSED], on by default).
///
/// When the estimated capacity changes, the rate history is re-expressed at the new capacity:
/// every history entry is multiplied by `Ci / C_{i-1}`. (Applied to the history before the
/// averaging; see the module note.) A relative change below 1e-9 is treated as none.
pub fn variable_capacity_adjustment(history: &mut [f64], ci: f64, c_prev: f64) {
    if c_prev > 0.0 && ((ci - c_prev) / c_prev).abs() > 1e-9 {
        let k = ci / c_prev;
        for r in history.iter_mut() {
            *r *= k;
        }
    }
}

// ------------------------------------------------------------------------------------------------
// per-port state machine
// ------------------------------------------------------------------------------------------------

/// Per-egress-port measurement and rate computation (model reference §5.3).
#[derive(Debug, Clone)]
pub struct PortRate {
    pub p: SwitchParams,
    /// Nominal capacity C0, bit/s.
    pub c0: f64,
    /// Estimated capacity Ci (current) and C_{i-1}.
    pub ci: f64,
    pub c_prev: f64,
    /// Advertised rate r_i (what is stamped / broadcast until the next interval ends).
    pub r: f64,
    /// r_{i-1}, r_{i-2} (after the shift at the end of an interval, `r1 == r`).
    pub r1: f64,
    pub r2: f64,
    pub delta_r: f64,
    pub initialized: bool,
    /// Queue length (bytes) at the start of the current interval.
    pub qlen: f64,
    // counters of the current interval
    pub bits_received: f64,
    pub bits_sent: f64,
    pub busy_ps: u64,
    /// Data frames that arrived at or started transmission on the port in the current interval
    /// (BECN: "the port carried data").
    pub data_frames: u64,
    // busy-time and transmission tracking
    nonempty: bool,
    busy_since: SimTime,
    tx_active: bool,
    tx_start: SimTime,
    tx_bits: f64,
    tx_rate: f64,
    tx_credited: f64,
}

impl PortRate {
    /// A port of nominal capacity `c0_bps`, in its start-up state (`r = C0/N0`, not initialized).
    pub fn new(p: SwitchParams, c0_bps: f64) -> Self {
        let r0 = c0_bps / p.n0;
        PortRate {
            c0: c0_bps,
            ci: c0_bps,
            c_prev: c0_bps,
            r: r0,
            r1: r0,
            r2: r0,
            delta_r: r0,
            initialized: false,
            qlen: 0.0,
            bits_received: 0.0,
            bits_sent: 0.0,
            busy_ps: 0,
            data_frames: 0,
            nonempty: false,
            busy_since: 0,
            tx_active: false,
            tx_start: 0,
            tx_bits: 0.0,
            tx_rate: 0.0,
            tx_credited: 0.0,
            p,
        }
    }

    /// A frame arrived and was admitted; `queue_bytes` includes it.
    pub fn on_enqueue(&mut self, now: SimTime, bytes: u32, is_data: bool, queue_bytes: u64) {
        self.bits_received += bytes as f64 * 8.0;
        if is_data {
            self.data_frames += 1;
        }
        if !self.nonempty && queue_bytes > 0 {
            self.nonempty = true;
            self.busy_since = now;
        }
    }

    /// A frame arrived but buffer admission refused it (still offered load).
    pub fn on_drop(&mut self, bytes: u32, is_data: bool) {
        self.bits_received += bytes as f64 * 8.0;
        if is_data {
            self.data_frames += 1;
        }
    }

    /// A frame starts transmission at `service_bps`.
    pub fn on_transmit(&mut self, now: SimTime, bytes: u32, is_data: bool, service_bps: u64) {
        if is_data {
            self.data_frames += 1;
        }
        self.tx_active = true;
        self.tx_start = now;
        self.tx_bits = bytes as f64 * 8.0;
        self.tx_rate = service_bps as f64;
        self.tx_credited = 0.0;
    }

    /// A frame's last bit left; `queue_bytes` excludes it.
    pub fn on_dequeue(&mut self, now: SimTime, queue_bytes: u64) {
        if self.tx_active {
            self.bits_sent += (self.tx_bits - self.tx_credited).max(0.0);
            self.tx_active = false;
        }
        if self.nonempty && queue_bytes == 0 {
            self.busy_ps += now - self.busy_since;
            self.nonempty = false;
        }
    }

    /// Close the busy period and the in-progress transmission at `now` (end of an interval).
    fn close_counters(&mut self, now: SimTime) {
        if self.nonempty {
            self.busy_ps += now - self.busy_since;
            self.busy_since = now;
        }
        if self.tx_active {
            let done = ((now - self.tx_start) as f64 / PS_PER_S as f64 * self.tx_rate).min(self.tx_bits);
            let credit = (done - self.tx_credited).max(0.0);
            self.bits_sent += credit;
            self.tx_credited += credit;
        }
    }

    /// End of a measurement interval at `now` with `queue_bytes` queued: update Ci and r_i, shift
    /// the history, zero the counters. Returns true when the port carried data in the interval
    /// (data frames arrived — admitted or refused — or started transmission).
    pub fn end_interval(&mut self, now: SimTime, queue_bytes: u64) -> bool {
        self.close_counters(now);
        let carried_data = self.data_frames > 0;
        if self.initialized {
            if self.p.capacity_estimation {
                self.c_prev = self.ci;
                let busy_s = self.busy_ps as f64 / PS_PER_S as f64;
                self.ci = estimate_capacity(self.bits_sent, busy_s, self.c_prev, self.c0, self.p.n0);
            }
            if self.bits_received > 0.0 {
                self.rate_allocation();
            } else {
                // idle port advertises the start-up rate
                self.r = self.c0 / self.p.n0;
            }
        } else if self.bits_received > 0.0 {
            self.initialized = true;
            self.rate_allocation();
        }
        self.r2 = self.r1;
        self.r1 = self.r;
        self.bits_received = 0.0;
        self.bits_sent = 0.0;
        self.busy_ps = 0;
        self.data_frames = 0;
        self.qlen = queue_bytes as f64;
        carried_data
    }

    /// Load factor against the queue-adjusted target and the new advertised rate (model reference §5.3).
    fn rate_allocation(&mut self) {
        let p = &self.p;
        let fq = hyperbolic_f(self.qlen, p.qeq_bytes, p.a, p.b, p.c);
        let rho = self.bits_received / (p.interval_s() * self.ci * fq);
        let r_new = if rho == 0.0 {
            if self.qlen < 1.0 {
                self.ci
            } else {
                self.r1
            }
        } else {
            self.ci.min(self.r1 / rho)
        };
        if p.variable_capacity {
            let mut h = [self.r1, self.r2];
            variable_capacity_adjustment(&mut h, self.ci, self.c_prev);
            self.r1 = h[0];
            self.r2 = h[1];
        }
        let mut r = exponential_average(r_new, self.r1, p.beta);
        if p.limit_increase {
            r = limit_rate_increase(r, self.r1, &mut self.delta_r, self.qlen, p.qeq_bytes, self.c0, p.n0);
        }
        self.r = r;
    }

    /// The currently advertised rate r_i, bit/s.
    pub fn rate(&self) -> f64 {
        self.r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G10: f64 = 10e9;
    const QEQ: f64 = 24_000.0;

    fn params(t_us: u64, a: f64, b: f64, c: f64, n0: f64) -> SwitchParams {
        SwitchParams {
            interval_ps: t_us * 1_000_000,
            qeq_bytes: QEQ,
            a,
            b,
            c,
            beta: 0.5,
            n0,
            limit_increase: false,
            capacity_estimation: true,
            variable_capacity: true,
        }
    }

    #[test]
    fn f_landmarks_seed000() {
        let (a, b, c) = (1.05, 1.2, 0.5);
        assert!((hyperbolic_f(0.0, QEQ, a, b, c) - 1.05).abs() < 1e-12);
        assert!((hyperbolic_f(QEQ, QEQ, a, b, c) - 1.0).abs() < 1e-12);
        // f(2Qeq) = 1.2/1.2... = b/(b-1)*... = 1.2/(0.2*2+1) = 0.857
        assert!((hyperbolic_f(2.0 * QEQ, QEQ, a, b, c) - 1.2 / 1.4).abs() < 1e-12);
        assert!((hyperbolic_f(2.0 * QEQ, QEQ, a, b, c) - 0.857).abs() < 1e-3);
        // the floor c = 0.5 is reached at q = 7 Qeq: 1.2/(0.2*7+1) = 0.5
        assert!((hyperbolic_f(7.0 * QEQ, QEQ, a, b, c) - 0.5).abs() < 1e-12);
        assert_eq!(hyperbolic_f(20.0 * QEQ, QEQ, a, b, c), 0.5);
        // monotone non-increasing
        let mut prev = f64::INFINITY;
        for k in 0..200 {
            let v = hyperbolic_f(k as f64 * QEQ / 10.0, QEQ, a, b, c);
            assert!(v <= prev + 1e-15);
            prev = v;
        }
    }

    #[test]
    fn f_landmarks_seed003() {
        let (a, b, c) = (1.1, 1.02, 0.1);
        assert!((hyperbolic_f(0.0, QEQ, a, b, c) - 1.1).abs() < 1e-12);
        assert!((hyperbolic_f(QEQ, QEQ, a, b, c) - 1.0).abs() < 1e-12);
        assert!((hyperbolic_f(2.0 * QEQ, QEQ, a, b, c) - 0.981).abs() < 1e-3);
        // Qsc = 1300 pages = 3.47 Qeq
        assert!((hyperbolic_f(1300.0 * 64.0, QEQ, a, b, c) - 0.954).abs() < 1e-3);
        // floor c = 0.1 (1.02/(0.02 q/Qeq + 1) = 0.1 at q = 460 Qeq)
        assert_eq!(hyperbolic_f(1000.0 * QEQ, QEQ, a, b, c), 0.1);
    }

    /// Feed one interval of `n` flows, each sending `rate` bit/s, through an always-busy port.
    fn busy_interval(pr: &mut PortRate, t0: SimTime, bits_in: f64, q: u64) -> SimTime {
        let t = pr.p.interval_ps;
        pr.bits_received = bits_in;
        // the port was busy all interval, sending at C0
        pr.bits_sent = pr.c0 * pr.p.interval_s();
        pr.busy_ps = t;
        pr.data_frames = 1;
        pr.end_interval(t0 + t, q);
        t0 + t
    }

    #[test]
    fn rate_allocation_on_hand_made_intervals() {
        let mut pr = PortRate::new(params(30, 1.05, 1.2, 0.5, 1.0), G10);
        assert_eq!(pr.rate(), G10); // start-up C0/N0 with N0 = 1
                                    // interval 1: queue was 0 (start), 4 flows at line rate = 40 Gb/s offered
        let t = busy_interval(&mut pr, 0, 4.0 * G10 * 30e-6, (QEQ * 2.0) as u64);
        // rho = 40G·T / (T·10G·1.05) ; r_new = 10G / rho = 10G·1.05/4 = 2.625G ; avg with 10G
        let r_new = G10 * 1.05 / 4.0;
        assert!((pr.rate() - (0.5 * r_new + 0.5 * G10)).abs() < 1.0, "{}", pr.rate());
        // interval 2: sources at the advertised 6.3125G each → offered 25.25G, qlen = 2 Qeq
        let r1 = pr.rate();
        let t = busy_interval(&mut pr, t, 4.0 * r1 * 30e-6, QEQ as u64);
        let f2 = 1.2 / 1.4;
        let r_new = (r1 / (4.0 * r1 * 30e-6 / (30e-6 * G10 * f2))).min(G10);
        assert!((pr.rate() - (0.5 * r_new + 0.5 * r1)).abs() < 1.0);
        // at equilibrium: 4 flows at C/4 and q = Qeq ⇒ the rate stays C/4
        pr.r = G10 / 4.0;
        pr.r1 = G10 / 4.0;
        pr.qlen = QEQ;
        let t = busy_interval(&mut pr, t, G10 * 30e-6, QEQ as u64);
        assert!((pr.rate() - G10 / 4.0).abs() < 1e-3);
        // an idle interval: start-up rate C0/N0
        pr.end_interval(t + pr.p.interval_ps, 0);
        assert_eq!(pr.rate(), G10);
    }

    #[test]
    fn converges_to_c_over_n_at_qeq() {
        // closed loop on the arithmetic: N sources send at the advertised rate, the queue
        // integrates the excess; the rate must go to C/N and the queue to Qeq.
        let n = 5.0;
        let mut pr = PortRate::new(params(30, 1.05, 1.2, 0.5, 1.0), G10);
        let tt = 30e-6;
        let mut q: f64 = 0.0;
        let mut t = 0;
        for _ in 0..3000 {
            let offered = n * pr.rate().min(G10) * tt;
            let sent = (q * 8.0 + offered).min(G10 * tt);
            q = (q + (offered - sent) / 8.0).max(0.0);
            pr.bits_received = offered;
            pr.bits_sent = sent;
            pr.busy_ps = if q > 0.0 || sent >= G10 * tt { pr.p.interval_ps } else { (sent / G10 * 1e12) as u64 };
            pr.data_frames = 1;
            t += pr.p.interval_ps;
            pr.end_interval(t, q as u64);
        }
        assert!((pr.rate() / (G10 / n) - 1.0).abs() < 0.01, "rate {}", pr.rate());
        assert!((q / QEQ - 1.0).abs() < 0.05, "queue {q}");
    }

    #[test]
    fn capacity_estimation_with_a_stopped_port() {
        // N0 = 200: a port that is busy all interval but sends nothing (0 Gb/s hotspot)
        let c0 = G10;
        assert_eq!(estimate_capacity(0.0, 1e-3, c0, c0, 200.0), c0 / 200.0);
        // half the interval idle, the other half sending at 0.5 Gb/s
        assert!((estimate_capacity(0.5e9 * 0.5e-3, 0.5e-3, c0, c0, 200.0) - 0.5e9).abs() < 1e-3);
        // never busy: keep the previous estimate
        assert_eq!(estimate_capacity(0.0, 0.0, 2e9, c0, 200.0), 2e9);
        // never above C0
        assert_eq!(estimate_capacity(2.0 * c0 * 1e-3, 1e-3, c0, c0, 200.0), c0);
        // N0 = 1: the floor is C0, estimation is effectively off
        assert_eq!(estimate_capacity(0.0, 1e-3, c0, c0, 1.0), c0);

        // through the state machine: stopped port, data arriving, measured Ci = C0/N0
        let mut pr = PortRate::new(params(1000, 1.1, 1.02, 0.1, 200.0), c0);
        let t = pr.p.interval_ps;
        // first interval initialises at line-rate service
        pr.on_enqueue(0, 1500, true, 1500);
        pr.on_transmit(0, 1500, true, 10_000_000_000);
        pr.on_dequeue(1_200_000, 0);
        pr.end_interval(t, 0);
        assert!(pr.initialized);
        assert_eq!(pr.ci, c0);
        // second interval: frames arrive, the port is stopped (no transmission at all)
        for k in 0..100u64 {
            pr.on_enqueue(t + k * 1_200_000, 1500, true, (k + 1) * 1500);
        }
        pr.end_interval(2 * t, 150_000);
        assert_eq!(pr.ci, c0 / 200.0);
        assert!(pr.rate() < c0 / 200.0);
    }

    #[test]
    fn partial_transmission_is_credited_to_both_intervals() {
        let mut pr = PortRate::new(params(30, 1.05, 1.2, 0.5, 200.0), G10);
        pr.initialized = true;
        let t = pr.p.interval_ps;
        // a frame starts 0.6 us before the end of the interval and ends 0.6 us after it
        pr.on_enqueue(t - 600_000, 1500, true, 1500);
        pr.on_transmit(t - 600_000, 1500, true, 10_000_000_000);
        pr.close_counters(t);
        assert!((pr.bits_sent - 6000.0).abs() < 1e-6);
        assert_eq!(pr.busy_ps, 600_000);
        pr.end_interval(t, 1500);
        assert!((pr.ci - G10).abs() < 1.0);
        pr.on_dequeue(t + 600_000, 0);
        assert!((pr.bits_sent - 6000.0).abs() < 1e-6);
        assert_eq!(pr.busy_ps, 600_000);
    }

    #[test]
    fn variable_capacity_scales_history_only() {
        let mut h = [4e9, 2e9];
        variable_capacity_adjustment(&mut h, 5e9, 10e9);
        assert_eq!(h, [2e9, 1e9]);
        let mut h = [4e9, 2e9];
        variable_capacity_adjustment(&mut h, 10e9, 10e9);
        assert_eq!(h, [4e9, 2e9]);
    }

    #[test]
    fn limit_increase_rule() {
        let mut d = 1e9;
        // wants +3G, allowed +1G, Δr doubles
        assert_eq!(limit_rate_increase(5e9, 2e9, &mut d, 0.0, QEQ, G10, 10.0), 3e9);
        assert_eq!(d, 2e9);
        // within the limit: Δr halves (not below C0/N0 = 1G)
        assert_eq!(limit_rate_increase(3.5e9, 3e9, &mut d, 0.0, QEQ, G10, 10.0), 3.5e9);
        assert_eq!(d, 1e9);
        // above Qeq no increase at all
        assert_eq!(limit_rate_increase(3.5e9, 3e9, &mut d, 2.0 * QEQ, QEQ, G10, 10.0), 3e9);
    }
}
