//! Traffic generators (model reference §1.5). Each source owns one RNG stream derived from its stable id.
//!
//! Sources do not materialise frames: they add frames to their flows' FIFOs (counts), and the host
//! NIC creates a frame record only when it starts transmitting. A saturated source marks its flows
//! as always backlogged while it is active.

use crate::ids::{FlowId, NodeId};
use crate::ir::{FrameSizesIr, GateIr, ProcessIr};
use crate::rng::Stream;
use crate::time::{SimTime, PS_PER_S};

/// Runtime state of a source.
///
/// `repr(C)`: what a firing reads (its first flow and the number of flows, the gate, the process's
/// kind and interval) comes first, so that a CBR source's firing reads one cache line.
#[repr(C, align(64))]
pub struct Source {
    /// `flows[0]` and `flows.len()`, read without the list.
    pub first_flow: FlowId,
    pub n_flows: u32,
    pub gate: Option<GateIr>,
    pub process: ProcessIr,
    pub flows: Vec<FlowId>,
    pub start: SimTime,
    pub stop: SimTime,
    pub rng: Stream,
    /// Bernoulli: index of the next slot to consider.
    pub slot: u64,
    /// Saturated: whether the source currently marks its flows.
    pub sat_on: bool,
    /// Pareto: a transfer is being sent (closed loop, no timed event until it leaves the NIC;
    /// with a NIC buffer, until its backlog fits the buffer).
    pub busy: bool,
    /// Pareto with a NIC buffer: frames of this source's transfers not yet taken by the NIC.
    pub queued: u64,
    /// Pareto with a NIC buffer or RL release: the end of the current ON period.
    pub on_end: SimTime,
    /// Destinations of a source of one flow with no destination of its own (a send queue per
    /// transfer): each transfer draws one, as other sources draw a flow; the set is shared by the
    /// sources of a generator, and `dst_skip` is the source's own place in it (u32::MAX: absent).
    pub dsts: Option<std::sync::Arc<[NodeId]>>,
    pub dst_skip: u32,
    /// Pareto: the transfer the source waits for (u32::MAX = none).
    pub waiting: u32,
    /// Poisson with a frame-size distribution: the sampler (None: every frame is the flow's size).
    pub sizes: Option<Box<FrameSizes>>,
    /// The host whose NIC the source's firings may wait for, deferred (`NONE_U32`: never;
    /// [`crate::net::deferred`]).
    pub defer_host: u32,
}

/// A frame-size distribution ready to draw from ([`FrameSizesIr`]).
#[derive(Debug, Clone)]
pub enum FrameSizes {
    /// Truncated exponential on [min, max] by inversion: X = min − scale·ln(1 − u·mass), where
    /// mass = 1 − exp(−(max − min)/scale); the size is ceil(X).
    Exponential { scale: f64, mass: f64, min: u32, max: u32 },
    /// Sizes with cumulative probabilities (the last is 1).
    Mix { bytes: Vec<u32>, cum: Vec<f64> },
}

impl FrameSizes {
    pub fn new(ir: &FrameSizesIr) -> Self {
        match ir {
            FrameSizesIr::Exponential { scale_bytes, min_bytes, max_bytes } => FrameSizes::Exponential {
                scale: *scale_bytes,
                mass: -libm::expm1(-((max_bytes - min_bytes) as f64) / scale_bytes),
                min: *min_bytes,
                max: *max_bytes,
            },
            FrameSizesIr::Mix { bytes, weights } => {
                let total: f64 = weights.iter().sum();
                let mut acc = 0.0;
                let mut cum: Vec<f64> = weights
                    .iter()
                    .map(|w| {
                        acc += w;
                        acc / total
                    })
                    .collect();
                if let Some(last) = cum.last_mut() {
                    *last = 1.0; // rounding must not leave a gap above the last size
                }
                FrameSizes::Mix { bytes: bytes.clone(), cum }
            }
        }
    }

    /// The size of one frame for a uniform `u` in [0, 1).
    pub fn at(&self, u: f64) -> u32 {
        match self {
            FrameSizes::Exponential { scale, mass, min, max } => {
                let x = *min as f64 - scale * libm::log1p(-u * mass);
                (libm::ceil(x) as u32).clamp(*min, *max)
            }
            FrameSizes::Mix { bytes, cum } => bytes[cum.iter().position(|&c| u < c).unwrap_or(bytes.len() - 1)],
        }
    }
}

/// What a source does when it fires.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Add one frame to flow index `flow` of `flows`: of `size` bytes, or the flow's size (0).
    Frame {
        flow: usize,
        size: u32,
    },
    /// Start a closed-loop transfer of `on_bits` bits of ON time on flow index `flow`.
    Transfer {
        flow: usize,
        on_bits: f64,
    },
    /// Start an open-loop flow of `bytes` bytes on flow index `flow`: whole frames, rounded up, or
    /// (`partial`) ceil(bytes) bytes, the last frame carrying the remainder ([`flow_bytes`]).
    Sized {
        flow: usize,
        bytes: f64,
        partial: bool,
    },
    /// Saturated source turns on/off.
    Saturate(bool),
    Nothing,
}

impl Source {
    /// Is the ON/OFF gate open at `t`?
    pub fn gate_open(&self, t: SimTime) -> bool {
        match &self.gate {
            None => true,
            Some(g) => {
                if t < self.start {
                    return false;
                }
                let period = g.on_ps + g.off_ps;
                let ph = (t - self.start) % period;
                if g.start_on {
                    ph < g.on_ps
                } else {
                    ph >= g.off_ps
                }
            }
        }
    }

    /// Next gate boundary strictly after `t` (for saturated sources).
    fn next_gate_edge(&self, t: SimTime) -> Option<SimTime> {
        let g = self.gate.as_ref()?;
        let period = g.on_ps + g.off_ps;
        let base = self.start + (t - self.start) / period * period;
        let first = if g.start_on { g.on_ps } else { g.off_ps };
        let mut cands = [base + first, base + period];
        cands.sort();
        cands.into_iter().find(|&c| c > t)
    }

    /// A uniform draw among the source's flows, or among its destinations when it has them.
    fn pick_flow(&mut self) -> usize {
        let n = match &self.dsts {
            None => self.n_flows as u64,
            Some(d) => d.len() as u64 - (self.dst_skip != u32::MAX) as u64,
        };
        if n == 1 {
            0
        } else {
            self.rng.below(n) as usize
        }
    }

    /// Give the source a set of destinations (its own host left out of the draw).
    pub fn set_destinations(&mut self, set: std::sync::Arc<[NodeId]>, own: NodeId) {
        self.dst_skip = set.iter().position(|&d| d == own).map_or(u32::MAX, |i| i as u32);
        self.dsts = Some(set);
    }

    /// The flow of index `i` (as `flows[i]`).
    #[inline]
    pub fn flow(&self, i: usize) -> FlowId {
        if i == 0 {
            self.first_flow
        } else {
            self.flows[i]
        }
    }

    /// The flow and the destination of draw `i` of [`Source::pick_flow`] for a transfer: the flow
    /// `flows[i]` and its own destination (`None`), or the source's only flow and `dsts[i]`.
    #[inline]
    pub fn target(&self, i: usize) -> (FlowId, Option<NodeId>) {
        match &self.dsts {
            None => (self.flow(i), None),
            Some(d) => (self.first_flow, Some(d[i + (i >= self.dst_skip as usize) as usize])),
        }
    }

    /// A source of `flows` (not empty) with the given timing and process, not started.
    pub fn new(flows: Vec<FlowId>, start: SimTime, stop: SimTime, gate: Option<GateIr>, process: ProcessIr, rng: Stream) -> Self {
        let sizes = match &process {
            ProcessIr::Poisson { sizes: Some(ir), .. } => Some(Box::new(FrameSizes::new(ir))),
            _ => None,
        };
        Source {
            first_flow: flows.first().copied().unwrap_or(FlowId::NONE),
            n_flows: flows.len() as u32,
            gate,
            process,
            flows,
            start,
            stop,
            rng,
            slot: 0,
            sat_on: false,
            busy: false,
            queued: 0,
            on_end: 0,
            dsts: None,
            dst_skip: u32::MAX,
            waiting: u32::MAX,
            sizes,
            defer_host: u32::MAX,
        }
    }

    /// First firing time.
    pub fn first_time(&mut self) -> Option<SimTime> {
        match self.process {
            ProcessIr::Saturated => Some(self.start),
            ProcessIr::Cbr { interval_ps, phase_ps, random_phase } => {
                let rp = if random_phase { self.rng.below(interval_ps) } else { 0 };
                Some(self.start + phase_ps + rp)
            }
            ProcessIr::Bernoulli { slot_ps, p } => {
                self.slot = self.rng.geometric(p);
                Some(self.start + self.slot * slot_ps)
            }
            ProcessIr::Poisson { mean_gap_ps, .. } => Some(self.start + libm::round(self.rng.exponential(mean_gap_ps as f64)) as u64),
            ProcessIr::ParetoOnOff { off_mean_ps, .. } => Some(self.start + libm::round(self.rng.exponential(off_mean_ps as f64)) as u64),
            ProcessIr::FlowArrivals { mean_gap_ps, .. } => Some(self.start + libm::round(self.rng.exponential(mean_gap_ps as f64)) as u64),
            ProcessIr::PeriodicFlows { phase_ps, .. } => Some(self.start + phase_ps),
        }
        .filter(|&t| t < self.stop)
    }

    /// Fire at `now`; returns the action and the next firing time (None = no timed event; for
    /// Pareto the next one is scheduled when the transfer has left the NIC).
    #[inline(always)]
    pub fn fire(&mut self, now: SimTime) -> (Action, Option<SimTime>) {
        let (act, next) = match self.process {
            ProcessIr::Saturated => {
                let on = now < self.stop && self.gate_open(now);
                let next = if now >= self.stop { None } else { self.next_gate_edge(now) };
                let next = match next {
                    Some(t) if t < self.stop => Some(t),
                    _ if now < self.stop => Some(self.stop),
                    _ => None,
                };
                (Action::Saturate(on), next)
            }
            ProcessIr::Cbr { interval_ps, .. } => {
                let a = if self.gate_open(now) { Action::Frame { flow: self.pick_flow(), size: 0 } } else { Action::Nothing };
                (a, Some(now + interval_ps))
            }
            ProcessIr::Bernoulli { slot_ps, p } => {
                let a = if self.gate_open(now) { Action::Frame { flow: self.pick_flow(), size: 0 } } else { Action::Nothing };
                self.slot += 1 + self.rng.geometric(p);
                (a, Some(self.start + self.slot * slot_ps))
            }
            ProcessIr::Poisson { mean_gap_ps, .. } => {
                let a = if self.gate_open(now) {
                    let flow = self.pick_flow();
                    let size = match &self.sizes {
                        Some(d) => d.at(self.rng.uniform()),
                        None => 0,
                    };
                    Action::Frame { flow, size }
                } else {
                    Action::Nothing
                };
                let gap = libm::round(self.rng.exponential(mean_gap_ps as f64)) as u64;
                (a, Some(now + gap.max(1)))
            }
            ProcessIr::PeriodicFlows { period_ps, bytes, partial_last, .. } => {
                let a = if self.gate_open(now) {
                    Action::Sized { flow: self.pick_flow(), bytes: bytes as f64, partial: partial_last }
                } else {
                    Action::Nothing
                };
                (a, Some(now + period_ps))
            }
            ProcessIr::FlowArrivals { mean_gap_ps, ref cdf, partial_last } => {
                let u = self.rng.uniform();
                let bytes = cdf_quantile(cdf, u);
                let a = if self.gate_open(now) { Action::Sized { flow: self.pick_flow(), bytes, partial: partial_last } } else { Action::Nothing };
                let gap = libm::round(self.rng.exponential(mean_gap_ps as f64)) as u64;
                (a, Some(now + gap.max(1)))
            }
            ProcessIr::ParetoOnOff { xm_ps, alpha, line_rate_bps, cap_ps, shifted, nic_buffer_frames, rl_release, .. } => {
                let t_on = self.rng.pareto(xm_ps as f64, alpha);
                // Lomax (model reference §12 R2): the same draw shifted to start at 0 (flows keep ≥ 1 frame)
                let t_on = if shifted { t_on - xm_ps as f64 } else { t_on };
                let t_on = cap_ps.map_or(t_on, |c| t_on.min(c as f64));
                let flow = self.pick_flow();
                let on_bits = t_on * line_rate_bps as f64 / PS_PER_S as f64;
                self.busy = true;
                if nic_buffer_frames.is_some() || rl_release {
                    // the ON period is time too: the source is released no earlier than its end
                    self.on_end = now.saturating_add(libm::round(t_on) as u64);
                }
                (Action::Transfer { flow, on_bits }, None)
            }
        };
        (act, next.filter(|&t| t < self.stop))
    }

    /// Pareto with a NIC buffer or RL release, at `now`: if the source waits and its backlog fits
    /// the buffer, or its transfer's flow is rate limited (`limited`), it is released: the OFF
    /// period starts at max(now, end of ON).
    pub fn release_check(&mut self, now: SimTime, limited: bool) -> Option<SimTime> {
        if !self.busy {
            return None;
        }
        match self.process {
            ProcessIr::ParetoOnOff { off_mean_ps, nic_buffer_frames, rl_release, .. }
                if nic_buffer_frames.is_some_and(|b| self.queued <= b) || (rl_release && limited) =>
            {
                self.waiting = u32::MAX;
                self.busy = false;
                let off = libm::round(self.rng.exponential(off_mean_ps as f64)) as u64;
                Some(now.max(self.on_end).saturating_add(off)).filter(|&t| t < self.stop)
            }
            _ => None,
        }
    }

    /// Pareto: the transfer's last frame leaves the NIC at `t_end`; a closed-loop source draws the
    /// OFF period (one with a NIC buffer was released by [`Source::release_check`]).
    pub fn transfer_done(&mut self, transfer: u32, t_end: SimTime) -> Option<SimTime> {
        if self.waiting != transfer {
            return None; // released earlier (NIC buffer, RL queue)
        }
        match self.process {
            ProcessIr::ParetoOnOff { off_mean_ps, nic_buffer_frames: None, .. } => {
                self.busy = false;
                self.waiting = u32::MAX;
                let off = libm::round(self.rng.exponential(off_mean_ps as f64)) as u64;
                Some(t_end + off).filter(|&t| t < self.stop)
            }
            _ => None,
        }
    }
}

/// The size at probability `u` of a piecewise-linear CDF [(bytes, probability)] (issue 13).
pub fn cdf_quantile(cdf: &[(f64, f64)], u: f64) -> f64 {
    for w in cdf.windows(2) {
        let ((x0, q0), (x1, q1)) = (w[0], w[1]);
        if u < q1 {
            return if q1 > q0 { x0 + (u - q0) / (q1 - q0) * (x1 - x0) } else { x1 };
        }
    }
    cdf[cdf.len() - 1].0
}

/// Whole frames of an open-loop flow of `bytes` bytes: ceil(bytes / frame), at least 1.
pub fn sized_frames(bytes: f64, frame_bytes: u32) -> u64 {
    let n = libm::ceil(bytes / frame_bytes as f64);
    if n < 1.0 {
        1
    } else {
        n as u64
    }
}

/// An open-loop flow of `bytes` bytes sent in frames of `frame_bytes` with the remainder in the last
/// one: (frames, bytes of the last frame). The size is ceil(bytes), at least 1 byte, and a frame
/// carries at least 64 bytes (Ethernet's minimum: a short last frame is padded).
pub fn flow_bytes(bytes: f64, frame_bytes: u32) -> (u64, u32) {
    let total = libm::ceil(bytes).max(1.0) as u64;
    let frames = total.div_ceil(frame_bytes as u64);
    let last = total - (frames - 1) * frame_bytes as u64;
    (frames, (last as u32).max(64).min(frame_bytes))
}

/// Frames of a Pareto transfer: max(1, round(ON bits / frame bits)) — model reference §12 D2.
pub fn pareto_frames(bits: f64, frame_bytes: u32) -> u64 {
    let n = libm::round(bits / (8.0 * frame_bytes as f64));
    if n < 1.0 {
        1
    } else {
        n as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes of `n` frames drawn by a Poisson source with distribution `d`.
    fn sizes(d: FrameSizesIr, n: usize) -> Vec<u32> {
        let process = ProcessIr::Poisson { mean_gap_ps: 1_000, sizes: Some(d) };
        let mut s = Source::new(vec![FlowId(0)], 0, u64::MAX, None, process, Stream::new(7, 0, 1));
        (0..n)
            .map(|_| match s.fire(0).0 {
                Action::Frame { size, .. } => size,
                a => panic!("a frame, got {a:?}"),
            })
            .collect()
    }

    #[test]
    fn truncated_exponential_sizes_have_the_closed_form_mean_and_stay_in_range() {
        // E[ceil X] = a + 1/(1 − r) − n·rⁿ/(1 − rⁿ), r = exp(−1/θ), n = b − a (X continuous on [a, b])
        let (theta, a, b) = (1400.0, 64u32, 9216u32);
        let x = sizes(FrameSizesIr::Exponential { scale_bytes: theta, min_bytes: a, max_bytes: b }, 400_000);
        let (r, n) = (f64::exp(-1.0 / theta), (b - a) as f64);
        let expected = a as f64 + 1.0 / (1.0 - r) - n * r.powf(n) / (1.0 - r.powf(n));
        let mean = x.iter().map(|&v| v as f64).sum::<f64>() / x.len() as f64;
        // the standard error of the mean is ≈ θ / √400 000 ≈ 2.2 B
        assert!((mean - expected).abs() < 10.0, "mean {mean} B, closed form {expected} B");
        assert!(x.iter().all(|&v| (a..=b).contains(&v)));
        assert_eq!(*x.iter().min().unwrap(), a + 1, "sizes just above the minimum are the most likely");
        // the exponential's memorylessness: P(X > a + 2θ | X > a + θ) = e^−1, truncation aside
        let above = |t: f64| x.iter().filter(|&&v| v as f64 > a as f64 + t).count() as f64;
        assert!((above(2.0 * theta) / above(theta) - (-1.0f64).exp()).abs() < 0.01);
    }

    #[test]
    fn mixed_sizes_come_in_proportion_to_their_weights() {
        // IMIX: 64, 594 and 1518 B as 7 : 4 : 1
        let x = sizes(FrameSizesIr::Mix { bytes: vec![64, 594, 1518], weights: vec![7.0, 4.0, 1.0] }, 120_000);
        for (b, w) in [(64, 7.0), (594, 4.0), (1518, 1.0)] {
            let share = x.iter().filter(|&&v| v == b).count() as f64 / x.len() as f64;
            assert!((share - w / 12.0).abs() < 0.005, "{b} B: share {share}");
        }
        assert!(x.iter().all(|v| [64, 594, 1518].contains(v)));
    }

    #[test]
    fn a_flow_in_bytes_puts_the_remainder_in_its_last_frame() {
        assert_eq!(flow_bytes(3000.0, 1500), (2, 1500)); // exact multiple: no short frame
        assert_eq!(flow_bytes(3000.2, 1500), (3, 64)); // 3 001 B: 1 B left, padded to 64
        assert_eq!(flow_bytes(4000.0, 1500), (3, 1000));
        assert_eq!(flow_bytes(10.0, 1500), (1, 64));
        assert_eq!(flow_bytes(0.0, 1500), (1, 64)); // at least one byte, one frame
        assert_eq!(flow_bytes(1400.0, 1500), (1, 1400));
        assert_eq!(sized_frames(4000.0, 1500), 3); // the whole-frame reading of the same flow
    }

    #[test]
    fn a_poisson_source_without_sizes_draws_no_size() {
        let mut s = Source::new(vec![FlowId(0)], 0, u64::MAX, None, ProcessIr::Poisson { mean_gap_ps: 1_000, sizes: None }, Stream::new(7, 0, 1));
        assert!(matches!(s.fire(0).0, Action::Frame { size: 0, .. }));
    }

    /// Mean ON time of `n` transfers drawn by a ParetoOnOff source, µs.
    fn mean_on_us(shifted: bool, xm_ps: u64, alpha: f64, n: usize) -> (f64, f64) {
        let process = ProcessIr::ParetoOnOff {
            xm_ps,
            alpha,
            off_mean_ps: 1,
            line_rate_bps: 10_000_000_000,
            cap_ps: None,
            shifted,
            nic_buffer_frames: None,
            rl_release: false,
        };
        let mut s = Source::new(vec![FlowId(0)], 0, u64::MAX, None, process, Stream::new(7, 0, 1));
        let (mut sum, mut min) = (0.0, f64::INFINITY);
        for _ in 0..n {
            let (act, _) = s.fire(0);
            let Action::Transfer { on_bits, .. } = act else { panic!("a transfer") };
            let us = on_bits / 10_000.0; // bits at 10 Gb/s → µs
            sum += us;
            min = min.min(us);
        }
        (sum / n as f64, min)
    }

    #[test]
    fn lomax_on_times_start_at_zero_and_have_mean_lambda_over_alpha_minus_one() {
        // λ = 45 µs × (α − 1) with α = 2.5 (finite variance, so the sample mean converges fast)
        let alpha = 2.5;
        let lambda_ps = (45e6 * (alpha - 1.0)) as u64;
        let (mean, min) = mean_on_us(true, lambda_ps, alpha, 200_000);
        assert!((mean - 45.0).abs() < 1.0, "Lomax mean {mean} µs, expected 45");
        assert!(min < 0.1, "a Lomax ON time can be (almost) zero: min {min} µs");
        // the same draws unshifted are Pareto(x_m = λ): every ON time ≥ λ
        let (pmean, pmin) = mean_on_us(false, lambda_ps, alpha, 200_000);
        assert!(pmin >= lambda_ps as f64 / 1e6 - 1e-9 && (pmean - mean - lambda_ps as f64 / 1e6).abs() < 1e-6);
        // whatever the draw, a transfer has at least one frame (the 3.5-µs minimum FCT of seed 003)
        assert_eq!(pareto_frames(0.0, 1500), 1);
    }
}
