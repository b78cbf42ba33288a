//! `bcn` / `ecm`: Backward Congestion Notification v2.0 (spec §2), the Ethernet Congestion Manager
//! (spec §3) and the "QCN enhancements to BCN" of Kwan & Matthews (spec §4).
//!
//! One file, two registry tags built from the same code: `bcn` and `ecm`. They differ only in the
//! name reported in `summary.scheme`; the IR carries every parameter (no defaults on this side),
//! the seed baselines live in `python/cnsim/schemes/{bcn,ecm}.py`.
//!
//! Units: queue lengths and Qeq/Qsc are bytes in the IR; Qoff, Qdelta and Fb are computed in
//! 64-byte **pages as real numbers** (spec §0, §12 G8), so the published gains (Gi = 0.53333,
//! Gd = 2.6667e-4 with Qeq = 375 pages) apply unchanged. Rates are bit/s, times ps.
//!
//! * CP (one per switch egress queue): samples arriving data frames (Bernoulli `p`, random with
//!   probability L/I, or periodic byte counter with jitter), computes Qoff / Qdelta with their
//!   clamps, sends BCN messages backward (negative always, positive only to frames tagged with this
//!   CP's id), BCN-MAX or BCN(0,0) above Qsc, optional oversampling, optional Fb quantisation,
//!   optional decrease-only mode (Fb computed at the CP, no tags).
//! * RP (one per source host, one rate limiter per flow): AIMD with Gi, Gd, Ru; floor; release at
//!   line rate; ownership transfer to the latest congested CP; RL tags; BCN(0,0) stop / random
//!   restart / exponential back-off with three reset policies; drift; ECM RL timeout;
//!   self-increase R += R·I·τ.
//!
//! Message kinds (index = `CmMsg::kind`): 0 positive, 1 negative, 2 max (BCN-MAX), 3 zero
//! (BCN(0,0)). `CmMsg::v` = [qoff (pages), fb (pages, as reported: quantised when quantisation is
//! on; −Fb_max for MAX), Ru (bit/s) of the sending CP]. The RP uses the reported Fb (W_rp = W, so
//! this equals qoff − W·qdelta; qdelta = (qoff − fb)/W) and the CP's Ru, which lets the 1 Gb/s CP
//! of [C]'s "enhanced" asymmetric run use its own (Pm, Ru) — see `slow_cp_*`.

use super::{parse_params, CongestionPoint, CpCtx, HostCtx, HostInfo, PortInfo, ReactionPoint, Scheme};
use crate::error::ScenarioError;
use crate::frame::{tag, CmMsg, Frame};
use crate::ids::NodeId;
use crate::time::{SimTime, PS_PER_S};
use serde::Deserialize;
use std::sync::Arc;

/// Bytes per page (spec §0).
pub const PAGE: f64 = 64.0;

pub const MSG_POSITIVE: u8 = 0;
pub const MSG_NEGATIVE: u8 = 1;
pub const MSG_MAX: u8 = 2;
pub const MSG_ZERO: u8 = 3;
const MESSAGE_TYPES: &[&str] = &["positive", "negative", "max", "zero"];

/// How a CP picks frames (spec §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sampling {
    /// Each data frame with probability `sample_p` ([C] Pm).
    Bernoulli,
    /// Each data frame with probability L / `sample_interval_bytes` ([A], [B], spec §12 S1).
    RandomBytes,
    /// Byte counter: every `sample_interval_bytes` ± U(`sample_jitter_bytes`) ([D], [E]).
    Periodic,
}

/// Oversampling (spec §2.6, §12 E4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Oversampling {
    None,
    /// OS-THRESH: sampling rate × `os_factor` while Q > Qeq.
    Thresh,
    /// OS-QCN: next interval = I / (1 + floor(q6 / 8)), q6 = 6-bit quantised |Fb| of a negative Fb.
    Qcn,
}

/// What a CP does above Qsc (spec §2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severe {
    None,
    /// BCN-MAX ([B] BCNm, [D] ECM Qmc, [E]).
    Max,
    /// BCN(0,0) ([B] BCNz*, [C]).
    Zero,
}

/// When BCN(0,0)'s exponential back-off returns to (Tmax0, Rmin0) (spec §2.5, §12 B2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reset {
    /// At the start of every new stop episode (BCNz).
    Always,
    /// Only if ≥ `reset_delay_ps` since the last restart (BCNzd).
    Delayed,
    /// Never: back-off accumulates for the whole run, capped (BCNzp).
    Never,
}

/// Where severe messages are generated (spec §12 B4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SevereTrigger {
    /// At sampling instants only; the severe message replaces the normal one (spec default).
    Sample,
    /// For every data frame arriving while Q > Qsc (§12 B4 alternative), at most one per source
    /// per `severe_holdoff_ps`; samples still drive the normal messages below Qsc.
    EveryArrival,
}

/// The activity that keeps an ECM rate limiter alive (`rl_timeout_ps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeoutEvent {
    /// Every BCN reaching the RL re-arms the timeout (spec §12 D4).
    NoFeedback,
    /// The RL is deleted when no frame was sent on it for the timeout and nothing waits (spec
    /// §12 R4: the meaning [D]'s "RL Timeout = 2 ms" has for FECN in the same table).
    Idle,
}

/// Which event may return BCN(0,0)'s back-off to level 0 under the `reset` policy (spec §12 B2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResetEvent {
    /// The start of a new stop episode (a BCN(0,0) reaching a running RL) — spec §12 B2.
    NewEpisode,
    /// A normal (non-severe) BCN reaching a running RL, i.e. the CP's queue was below Qsc at the
    /// sample: the back-off is kept while congestion stays severe (alternative reading of B2).
    Uncongested,
    /// A positive BCN (Fb > 0: the queue below Qeq and not growing) reaching a running RL — a rarer
    /// event than `uncongested` (spec §12 R8).
    Positive,
    /// The RL released at line rate (spec §2.3): the flow is no longer controlled (spec §12 R8).
    Released,
}

/// Parameters in base units. Every field is required in the IR (the Python side holds defaults).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    // --- congestion point ---
    pub sampling: Sampling,
    /// Bernoulli sampling probability (used by `bernoulli`).
    pub sample_p: f64,
    /// Mean bytes between samples (used by `random_bytes` and `periodic`).
    pub sample_interval_bytes: u64,
    /// Half-width of the uniform jitter of the periodic interval, bytes.
    pub sample_jitter_bytes: u64,
    pub oversampling: Oversampling,
    /// OS-THRESH multiplier of the sampling rate.
    pub os_factor: f64,
    /// Equilibrium queue Qeq, bytes (converted to pages internally).
    pub qeq_bytes: u64,
    /// Derivative weight W (used at the CP and at the RP: W_rp = W).
    pub w: f64,
    pub severe: Severe,
    /// Severe-congestion threshold Qsc (Qmc for ECM), bytes.
    pub qsc_bytes: u64,
    /// Where severe messages are generated (spec §12 B4).
    pub severe_trigger: SevereTrigger,
    /// `every_arrival`: minimum time between two severe messages to the same source; 0 = none.
    pub severe_holdoff_ps: u64,
    /// Count and sample data frames refused by buffer admission too (the CP sees the offered
    /// arrivals, with Q = the queue they were refused from); spec §2.2 says no (false).
    pub sample_refused: bool,
    /// Fb computed at the CP, decrease-only messages, no RL tags (spec §4.1).
    pub fb_at_cp: bool,
    /// Quantise the reported Fb to sign + n-bit magnitude (spec §4.2, §12 E5); null = exact.
    pub quant_bits: Option<u32>,
    /// [C] §4 "enhanced" setting: CPs whose port rate is ≤ this use `slow_cp_sample_p`
    /// (Bernoulli) and ask for `slow_cp_ru_bps`; null = every CP alike.
    pub slow_cp_max_rate_bps: Option<u64>,
    pub slow_cp_sample_p: f64,
    pub slow_cp_ru_bps: f64,
    // --- reaction point ---
    /// Additive-increase gain (per page, times Ru).
    pub gi: f64,
    /// Multiplicative-decrease gain (per page).
    pub gd: f64,
    /// Rate unit Ru, bit/s.
    pub ru_bps: f64,
    /// Lowest rate a decrease can reach, bit/s (spec §12 G6).
    pub rate_floor_bps: f64,
    /// Rate of a new rate limiter before the first decrease; null = the host's line rate.
    pub initial_rate_bps: Option<f64>,
    /// BCN(0,0): Tmax0 (ps), Rmin0 (bit/s), back-off cap K, reset policy and DELAYED's delay.
    pub tmax0_ps: u64,
    pub rmin0_bps: f64,
    pub backoff_cap: u32,
    pub reset: Reset,
    pub reset_delay_ps: u64,
    /// Event that applies the reset policy (spec §12 B2 = `new_episode`).
    pub reset_event: ResetEvent,
    /// Drift: + `drift_bps` every `drift_interval_ps` to every active RL; 0 = off (spec §2.4).
    pub drift_bps: f64,
    pub drift_interval_ps: u64,
    /// Drift ticks on the global grid (multiples of the interval, every host at once: `false`) or on
    /// a grid shifted by a phase drawn per host (`true`; issue 11 item 7).
    #[serde(default)]
    pub drift_random_phase: bool,
    /// ECM: delete an RL after this long without activity; null = never (spec §3, §12 R4).
    pub rl_timeout_ps: Option<u64>,
    /// What "without activity" means: no BCN received (§12 D4) or no frame sent (§12 R4, FECN's
    /// meaning of the same words in [D]).
    pub rl_timeout_event: TimeoutEvent,
    /// Self-increase factor I (1/s): R += R·I·τ every τ; null = off (spec §4.3).
    pub self_increase: Option<f64>,
    pub self_increase_interval_ps: u64,
}

impl Params {
    fn qeq_pages(&self) -> f64 {
        self.qeq_bytes as f64 / PAGE
    }
    /// Largest |Fb| after clamping, pages: (1 + 2W)·Qeq (spec §2.1).
    pub fn fb_max(&self) -> f64 {
        (1.0 + 2.0 * self.w) * self.qeq_pages()
    }

    fn check(&self) -> Result<(), ScenarioError> {
        let bad = |f: &str, m: &str| Err(ScenarioError::field(format!("cm.params.{f}"), m));
        let finite_nonneg = |x: f64| x.is_finite() && x >= 0.0;
        if self.qeq_bytes == 0 {
            return bad("qeq_bytes", "must be > 0");
        }
        if !finite_nonneg(self.w) {
            return bad("w", "must be a finite number >= 0");
        }
        if self.sampling == Sampling::Bernoulli && !(self.sample_p > 0.0 && self.sample_p <= 1.0) {
            return bad("sample_p", "must be in (0, 1]");
        }
        if self.sampling != Sampling::Bernoulli && self.sample_interval_bytes == 0 {
            return bad("sample_interval_bytes", "must be > 0");
        }
        if self.sample_jitter_bytes >= self.sample_interval_bytes.max(1) && self.sampling == Sampling::Periodic {
            return bad("sample_jitter_bytes", "must be < sample_interval_bytes");
        }
        if !(self.os_factor.is_finite() && self.os_factor >= 1.0) {
            return bad("os_factor", "must be >= 1");
        }
        if !finite_nonneg(self.gi) {
            return bad("gi", "must be a finite number >= 0");
        }
        if !finite_nonneg(self.gd) {
            return bad("gd", "must be a finite number >= 0");
        }
        if !(self.ru_bps.is_finite() && self.ru_bps > 0.0) {
            return bad("ru_bps", "must be > 0");
        }
        if self.slow_cp_max_rate_bps.is_some() {
            if !(self.slow_cp_sample_p > 0.0 && self.slow_cp_sample_p <= 1.0) {
                return bad("slow_cp_sample_p", "must be in (0, 1]");
            }
            if !(self.slow_cp_ru_bps.is_finite() && self.slow_cp_ru_bps > 0.0) {
                return bad("slow_cp_ru_bps", "must be > 0");
            }
        }
        if !finite_nonneg(self.rate_floor_bps) {
            return bad("rate_floor_bps", "must be >= 0");
        }
        if let Some(r) = self.initial_rate_bps {
            if !(r.is_finite() && r > 0.0) {
                return bad("initial_rate_bps", "must be > 0 (or null for line rate)");
            }
        }
        if let Some(n) = self.quant_bits {
            if !(1..=52).contains(&n) {
                return bad("quant_bits", "must be in 1..=52 (or null for exact)");
            }
        }
        if self.severe == Severe::Zero {
            if self.tmax0_ps == 0 {
                return bad("tmax0_ps", "must be > 0");
            }
            if !(self.rmin0_bps.is_finite() && self.rmin0_bps > 0.0) {
                return bad("rmin0_bps", "must be > 0");
            }
            if self.backoff_cap > 40 {
                return bad("backoff_cap", "must be <= 40");
            }
        }
        if !finite_nonneg(self.drift_bps) {
            return bad("drift_bps", "must be >= 0");
        }
        if self.drift_bps > 0.0 && self.drift_interval_ps == 0 {
            return bad("drift_interval_ps", "must be > 0 when drift is on");
        }
        if self.rl_timeout_ps == Some(0) {
            return bad("rl_timeout_ps", "must be > 0 (or null for no timeout)");
        }
        if let Some(i) = self.self_increase {
            if !(i.is_finite() && i > 0.0) {
                return bad("self_increase", "must be > 0 (or null for off)");
            }
            if self.self_increase_interval_ps == 0 {
                return bad("self_increase_interval_ps", "must be > 0 when self-increase is on");
            }
        }
        Ok(())
    }
}

/// The built scheme (tag `bcn` or `ecm`).
pub struct Bcn {
    name: &'static str,
    p: Arc<Params>,
}

impl Scheme for Bcn {
    fn name(&self) -> &'static str {
        self.name
    }
    fn message_types(&self) -> &'static [&'static str] {
        MESSAGE_TYPES
    }
    fn congestion_point(&self, port: &PortInfo) -> Option<Box<dyn CongestionPoint>> {
        Some(Box::new(Cp::new(self.p.clone(), port.cpid, port.rate_bps)))
    }
    fn reaction_point(&self, host: &HostInfo) -> Option<Box<dyn ReactionPoint>> {
        Some(Box::new(Rp::new(self.p.clone(), host)))
    }
}

/// Registry entry for `bcn`.
pub fn build(params: &serde_json::Value) -> Result<Box<dyn Scheme>, ScenarioError> {
    build_named("bcn", params)
}

/// Registry entry for `ecm` (same model, ECM defaults are set on the Python side).
pub fn build_ecm(params: &serde_json::Value) -> Result<Box<dyn Scheme>, ScenarioError> {
    build_named("ecm", params)
}

fn build_named(name: &'static str, params: &serde_json::Value) -> Result<Box<dyn Scheme>, ScenarioError> {
    let p: Params = parse_params(name, params)?;
    p.check()?;
    Ok(Box::new(Bcn { name, p: Arc::new(p) }))
}

// =================================================================================================
// CONTROL LAW — every rule of spec §2.2–§2.6, §3 and §4 is in this block (pure functions + the
// CP/RP state machines below call only these).
// =================================================================================================

/// Qoff = clamp((Qeq − Q)/64, −Qeq, +Qeq) pages (spec §2.2, [C] range, §12 C1).
pub fn qoff_pages(qeq_bytes: u64, q_bytes: u64) -> f64 {
    let qeq = qeq_bytes as f64 / PAGE;
    ((qeq_bytes as f64 - q_bytes as f64) / PAGE).clamp(-qeq, qeq)
}

/// Qdelta = clamp((Q − Q_last)/64, −2Qeq, +2Qeq) pages (spec §2.2).
pub fn qdelta_pages(qeq_bytes: u64, q_bytes: u64, q_last_bytes: u64) -> f64 {
    let qeq = qeq_bytes as f64 / PAGE;
    ((q_bytes as f64 - q_last_bytes as f64) / PAGE).clamp(-2.0 * qeq, 2.0 * qeq)
}

/// n-bit magnitude quantisation of |fb| over [0, Fb_max] (spec §4.2): returns the reconstructed
/// value q·Fb_max/(2^n − 1) with the sign of `fb`; 0 when the magnitude quantises to 0.
pub fn quantize(fb: f64, fb_max: f64, bits: u32) -> f64 {
    let levels = ((1u64 << bits) - 1) as f64;
    let q = (fb.abs() * levels / fb_max).floor().min(levels);
    fb.signum() * q * fb_max / levels
}

/// 6-bit quantised |Fb| of a negative Fb (0 for Fb ≥ 0), as QCN's CP computes it (spec §6.1).
pub fn q6(fb: f64, fb_max: f64) -> u32 {
    if fb >= 0.0 {
        0
    } else {
        ((-fb) * 63.0 / fb_max).floor().min(63.0) as u32
    }
}

/// Whether the severe-congestion rule applies at queue `q_bytes` (spec §2.5: strictly above Qsc).
pub fn severe_applies(p: &Params, q_bytes: u64) -> bool {
    p.severe != Severe::None && q_bytes > p.qsc_bytes
}

/// Severe message kind of this CP (BCN-MAX or BCN(0,0)).
fn severe_kind(p: &Params) -> u8 {
    if p.severe == Severe::Max {
        MSG_MAX
    } else {
        MSG_ZERO
    }
}

/// `severe_trigger = every_arrival` (§12 B4 alternative): an arriving data frame at queue
/// `q_bytes` triggers a severe message to its source unless one went to that source less than
/// `severe_holdoff_ps` ago (`last_to_src`).
pub fn severe_on_arrival(p: &Params, q_bytes: u64, now: SimTime, last_to_src: Option<SimTime>) -> bool {
    p.severe_trigger == SevereTrigger::EveryArrival
        && severe_applies(p, q_bytes)
        && last_to_src.is_none_or(|t| now.saturating_sub(t) >= p.severe_holdoff_ps)
}

/// What a sampled frame produces at a CP.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    Nothing,
    /// A message of `kind` with values [qoff, fb] (pages).
    Send(u8, [f64; 2]),
}

/// The CP message rule for one sample (spec §2.2, §2.5, §4.1, §4.2).
/// `tagged_by_me`: the frame carries an RL tag with this CP's id.
pub fn cp_decide(p: &Params, q_bytes: u64, q_last_bytes: u64, tagged_by_me: bool) -> Verdict {
    let qoff = qoff_pages(p.qeq_bytes, q_bytes);
    let qdelta = qdelta_pages(p.qeq_bytes, q_bytes, q_last_bytes);
    let fb_max = p.fb_max();
    // §2.5: above Qsc the severe message replaces the normal one (at sampling instants, §12 B4).
    if severe_applies(p, q_bytes) {
        return Verdict::Send(severe_kind(p), [qoff, -fb_max]);
    }
    let mut fb = qoff - p.w * qdelta;
    // §4.2 / §12 E5: sign + n-bit magnitude; a magnitude that quantises to 0 sends nothing.
    if let Some(bits) = p.quant_bits {
        fb = quantize(fb, fb_max, bits);
    }
    if fb < 0.0 {
        Verdict::Send(MSG_NEGATIVE, [qoff, fb]) // negative: always
    } else if fb > 0.0 && !p.fb_at_cp && tagged_by_me {
        Verdict::Send(MSG_POSITIVE, [qoff, fb]) // positive: only to RLs this CP owns
    } else {
        Verdict::Nothing // Fb = 0 (collides with BCN(0,0), spec §2.2), untagged, or decrease-only mode
    }
}

/// Multiplicative decrease (spec §2.3): R ← max(R_floor, R·(1 − Gd·|fb|)).
pub fn decrease(p: &Params, rate: f64, fb: f64) -> f64 {
    (rate * (1.0 - p.gd * fb.abs())).max(p.rate_floor_bps)
}

/// Additive increase (spec §2.3): R ← R + Gi·fb·Ru (Ru of the CP that sent the message).
pub fn increase(p: &Params, rate: f64, fb: f64, ru_bps: f64) -> f64 {
    rate + p.gi * fb * ru_bps
}

/// BCN(0,0) back-off (spec §2.5): (Tmax, Rmin) for back-off level k.
pub fn backoff(p: &Params, k: u32) -> (SimTime, f64) {
    let f = (1u64 << k) as f64;
    ((p.tmax0_ps as f64 * f) as SimTime, p.rmin0_bps / f)
}

/// Whether `event` resets the back-off level (spec §2.5, §12 B2): the `reset` policy is applied
/// only at the event selected by `reset_event` (a new stop episode by default; with
/// `uncongested`, a normal BCN reaching a running RL).
pub fn backoff_resets_at(p: &Params, event: ResetEvent, now: SimTime, last_restart: Option<SimTime>) -> bool {
    event == p.reset_event && backoff_resets(p, now, last_restart)
}

/// The `reset` policy alone (spec §2.5, §12 B2).
pub fn backoff_resets(p: &Params, now: SimTime, last_restart: Option<SimTime>) -> bool {
    match p.reset {
        Reset::Always => true,
        Reset::Delayed => last_restart.is_none_or(|t| now.saturating_sub(t) >= p.reset_delay_ps),
        Reset::Never => false,
    }
}

/// Self-increase step (spec §4.3): R ← R + R·I·τ.
pub fn self_increase_step(rate: f64, i_per_s: f64, tau_ps: u64) -> f64 {
    rate + rate * i_per_s * (tau_ps as f64 / PS_PER_S as f64)
}

// ============================================ end of the control law =============================

/// Congestion point of one egress queue.
pub struct Cp {
    p: Arc<Params>,
    cpid: u32,
    /// Bernoulli probability and Ru of this CP (differ at a slow CP, `slow_cp_*`).
    sample_p: f64,
    ru: f64,
    /// Queue bytes at the previous sample.
    q_last: u64,
    /// Periodic sampler: bytes left until the next sample.
    ctr: f64,
    /// OS-QCN: divisor of the sampling interval set by the last sample (1..=8).
    os_div: f64,
    primed: bool,
    /// `every_arrival`: time of the last severe message per source node.
    last_severe: std::collections::HashMap<NodeId, SimTime>,
}

impl Cp {
    fn new(p: Arc<Params>, cpid: u32, port_rate_bps: u64) -> Self {
        let slow = p.slow_cp_max_rate_bps.is_some_and(|r| port_rate_bps <= r);
        let (sample_p, ru) = if slow { (p.slow_cp_sample_p, p.slow_cp_ru_bps) } else { (p.sample_p, p.ru_bps) };
        Cp { p, cpid, sample_p, ru, q_last: 0, ctr: 0.0, os_div: 1.0, primed: false, last_severe: Default::default() }
    }

    /// Current oversampling multiplier of the sampling rate.
    fn os_mult(&self, q: u64) -> f64 {
        match self.p.oversampling {
            Oversampling::None => 1.0,
            Oversampling::Thresh => {
                if q > self.p.qeq_bytes {
                    self.p.os_factor
                } else {
                    1.0
                }
            }
            Oversampling::Qcn => self.os_div,
        }
    }

    /// Next periodic interval: (I + U(−J, +J)) / oversampling multiplier.
    fn reload(&self, ctx: &mut CpCtx, q: u64) -> f64 {
        let j = self.p.sample_jitter_bytes as f64;
        let jitter = if j > 0.0 { ctx.rng.range_f64(-j, j) } else { 0.0 };
        (self.p.sample_interval_bytes as f64 + jitter) / self.os_mult(q)
    }
}

impl Cp {
    /// The sampler's decision for one arriving data frame of `l` bytes at queue `q`.
    fn sample(&mut self, ctx: &mut CpCtx, l: f64, q: u64) -> bool {
        match self.p.sampling {
            Sampling::Bernoulli => ctx.rng.bernoulli((self.sample_p * self.os_mult(q)).min(1.0)),
            Sampling::RandomBytes => {
                ctx.rng.bernoulli((l * self.os_mult(q) / self.p.sample_interval_bytes as f64).min(1.0))
            }
            Sampling::Periodic => {
                if !self.primed {
                    self.primed = true;
                    self.ctr = self.reload(ctx, q);
                }
                self.ctr -= l;
                self.ctr <= 0.0
            }
        }
    }

    /// One arriving data frame (admitted, or refused when `sample_refused`), queue at `ctx.queue_bytes`.
    fn arrival(&mut self, ctx: &mut CpCtx, frame: &Frame) {
        let q = ctx.queue_bytes;
        let sampled = self.sample(ctx, frame.size as f64, q);
        let severe_now = severe_on_arrival(&self.p, q, ctx.now, self.last_severe.get(&frame.src).copied());
        if !sampled && !severe_now {
            return;
        }
        let tagged = frame.tag.flags & tag::RL != 0 && frame.tag.cpid == self.cpid;
        let mut verdict = if sampled { cp_decide(&self.p, q, self.q_last, tagged) } else { Verdict::Nothing };
        if sampled {
            self.q_last = q;
            if self.p.oversampling == Oversampling::Qcn {
                let fb = match verdict {
                    Verdict::Send(_, v) => v[1],
                    Verdict::Nothing => 0.0,
                };
                self.os_div = 1.0 + (q6(fb, self.p.fb_max()) / 8) as f64;
            }
            if self.p.sampling == Sampling::Periodic {
                self.ctr += self.reload(ctx, q);
            }
        }
        if self.p.severe_trigger == SevereTrigger::EveryArrival && severe_applies(&self.p, q) {
            // above Qsc the arrival rule alone speaks (a sample sends no second message)
            verdict = if severe_now {
                self.last_severe.insert(frame.src, ctx.now);
                Verdict::Send(severe_kind(&self.p), [qoff_pages(self.p.qeq_bytes, q), -self.p.fb_max()])
            } else {
                Verdict::Nothing
            };
        }
        if let Verdict::Send(kind, v) = verdict {
            ctx.send(frame.src, CmMsg { kind, flow: frame.flow, cpid: self.cpid, v: [v[0], v[1], self.ru] });
        }
    }
}

impl CongestionPoint for Cp {
    fn on_enqueue(&mut self, ctx: &mut CpCtx, frame: &mut Frame) {
        if !frame.is_data() {
            return; // control frames are never sampled and do not move the byte counter (§2.2)
        }
        self.arrival(ctx, frame);
    }

    fn on_drop(&mut self, ctx: &mut CpCtx, frame: &Frame) {
        // spec §2.2: refused frames are neither counted nor sampled, unless `sample_refused`
        if self.p.sample_refused && frame.is_data() {
            self.arrival(ctx, frame);
        }
    }
}

/// Timer token layout: kind (8 bits) | local flow (24 bits) | generation (32 bits).
const T_DRIFT: u64 = 1;
const T_SELF_INC: u64 = 2;
const T_RESTART: u64 = 3;
const T_TIMEOUT: u64 = 4;

fn token(kind: u64, local: u32, gen: u32) -> u64 {
    (kind << 56) | ((local as u64 & 0xFF_FFFF) << 32) | gen as u64
}
fn untoken(t: u64) -> (u64, u32, u32) {
    (t >> 56, ((t >> 32) & 0xFF_FFFF) as u32, t as u32)
}

/// One rate limiter (spec §2.3).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rl {
    pub rate: f64,
    /// Owner CP (the latest congested CP).
    pub cpid: u32,
    /// Stopped by BCN(0,0), waiting for its random restart.
    pub stopped: bool,
    pub last_fb: SimTime,
}

/// Per-flow RP state; the back-off level survives the deletion of the RL (policy NEVER
/// accumulates "for the whole run", spec §12 B2).
#[derive(Debug, Clone, Default)]
struct FlowState {
    rl: Option<Rl>,
    k_backoff: u32,
    last_restart: Option<SimTime>,
    restart_rate: f64,
    restart_gen: u32,
    timeout_gen: u32,
    /// Idle timeout: a timer is pending; the last frame sent (or the RL's creation).
    timeout_pending: bool,
    last_tx: SimTime,
}

/// Reaction point of one source host.
pub struct Rp {
    p: Arc<Params>,
    line: f64,
    flows: Vec<FlowState>,
    drift_armed: bool,
    self_inc_armed: bool,
    /// `drift_random_phase`: this host's drift phase, drawn at its first RL.
    drift_phase: Option<u64>,
}

impl Rp {
    fn new(p: Arc<Params>, host: &HostInfo) -> Self {
        Rp {
            p,
            line: host.line_rate_bps as f64,
            flows: vec![FlowState::default(); host.flows.len()],
            drift_armed: false,
            self_inc_armed: false,
            drift_phase: None,
        }
    }

    /// The RL of local flow `local`, if any (tests, rate series).
    pub fn rl(&self, local: u32) -> Option<&Rl> {
        self.flows.get(local as usize).and_then(|f| f.rl.as_ref())
    }

    fn push_rate(&self, ctx: &mut HostCtx, local: u32) {
        let r = self.flows[local as usize].rl.map(|rl| if rl.stopped { 0.0 } else { rl.rate });
        ctx.set_rate(local, r);
    }

    /// A new RL exists: make sure the periodic drift / self-increase timers run, on a global grid.
    fn arm_periodic(&mut self, ctx: &mut HostCtx) {
        if self.p.drift_bps > 0.0 && !self.drift_armed {
            self.drift_armed = true;
            let t = self.p.drift_interval_ps;
            let phase = if self.p.drift_random_phase {
                *self.drift_phase.get_or_insert_with(|| (ctx.rng.uniform() * t as f64) as u64 % t)
            } else {
                0
            };
            // the next tick of this host's grid {phase + k t} after now
            let next = if ctx.now < phase { phase } else { ((ctx.now - phase) / t + 1) * t + phase };
            ctx.set_timer(next, token(T_DRIFT, 0, 0));
        }
        if self.p.self_increase.is_some() && !self.self_inc_armed {
            self.self_inc_armed = true;
            let t = self.p.self_increase_interval_ps;
            ctx.set_timer((ctx.now / t + 1) * t, token(T_SELF_INC, 0, 0));
        }
    }

    fn create_rl(&mut self, ctx: &mut HostCtx, local: u32, cpid: u32) {
        let rate = self.p.initial_rate_bps.unwrap_or(self.line).min(self.line);
        self.flows[local as usize].rl = Some(Rl { rate, cpid, stopped: false, last_fb: ctx.now });
        self.flows[local as usize].last_tx = ctx.now;
        self.arm_periodic(ctx);
    }

    /// ECM (spec §3): every BCN reaching an RL re-arms its timeout.
    fn touch(&mut self, ctx: &mut HostCtx, local: u32) {
        let fs = &mut self.flows[local as usize];
        if let Some(rl) = fs.rl.as_mut() {
            rl.last_fb = ctx.now;
        }
        if let Some(t) = self.p.rl_timeout_ps {
            match self.p.rl_timeout_event {
                TimeoutEvent::NoFeedback => {
                    fs.timeout_gen = fs.timeout_gen.wrapping_add(1);
                    ctx.set_timer(ctx.now + t, token(T_TIMEOUT, local, fs.timeout_gen));
                }
                // feedback does not keep the RL alive; one pending timer checks for idleness
                TimeoutEvent::Idle if !fs.timeout_pending => {
                    fs.timeout_pending = true;
                    ctx.set_timer(ctx.now + t, token(T_TIMEOUT, local, fs.timeout_gen));
                }
                TimeoutEvent::Idle => {}
            }
        }
    }

    /// Delete the RL when its rate reached the line rate (spec §2.3 "RL released"); under
    /// `reset_event = released` that is when the BCN(0,0) back-off may return to level 0.
    fn release_if_line(&mut self, local: u32, now: SimTime) {
        let fs = &mut self.flows[local as usize];
        if fs.rl.is_some_and(|rl| !rl.stopped && rl.rate >= self.line) {
            fs.rl = None;
            if backoff_resets_at(&self.p, ResetEvent::Released, now, fs.last_restart) {
                fs.k_backoff = 0;
            }
        }
    }

    /// BCN(0,0) at the RP (spec §2.5).
    fn bcn00(&mut self, ctx: &mut HostCtx, local: u32, cpid: u32) {
        let p = self.p.clone();
        let fs = &mut self.flows[local as usize];
        let was_stopped = fs.rl.is_some_and(|rl| rl.stopped);
        if !was_stopped && backoff_resets_at(&p, ResetEvent::NewEpisode, ctx.now, fs.last_restart) {
            fs.k_backoff = 0;
        }
        let k = fs.k_backoff;
        let (tmax, rmin) = backoff(&p, k);
        fs.k_backoff = (k + 1).min(p.backoff_cap);
        fs.restart_rate = rmin;
        fs.rl = Some(Rl { rate: 0.0, cpid, stopped: true, last_fb: ctx.now });
        fs.restart_gen = fs.restart_gen.wrapping_add(1);
        let delay = (ctx.rng.uniform() * tmax as f64) as SimTime;
        ctx.set_timer(ctx.now + delay, token(T_RESTART, local, fs.restart_gen));
        self.arm_periodic(ctx);
        self.touch(ctx, local);
    }
}

impl ReactionPoint for Rp {
    fn on_feedback(&mut self, ctx: &mut HostCtx, msg: &CmMsg) {
        let Some(local) = ctx.info.local_of(msg.flow) else { return };
        if msg.kind == MSG_ZERO {
            self.bcn00(ctx, local, msg.cpid);
            self.push_rate(ctx, local);
            return;
        }
        let fb = if msg.kind == MSG_MAX { -self.p.fb_max() } else { msg.v[1] };
        let ru = if msg.v[2] > 0.0 { msg.v[2] } else { self.p.ru_bps };
        if self.flows[local as usize].rl.is_none() {
            if fb >= 0.0 {
                return; // positive feedback never creates an RL
            }
            self.create_rl(ctx, local, msg.cpid);
        }
        self.touch(ctx, local);
        let p = self.p.clone();
        let fs = &mut self.flows[local as usize];
        let rl = fs.rl.as_mut().expect("exists");
        if rl.stopped {
            return; // ignored while stopped by BCN(0,0) [PROPOSED]
        }
        if msg.kind != MSG_MAX && backoff_resets_at(&p, ResetEvent::Uncongested, ctx.now, fs.last_restart) {
            fs.k_backoff = 0; // §12 B2 alternative: the queue was below Qsc at this sample
        }
        if fb > 0.0 && backoff_resets_at(&p, ResetEvent::Positive, ctx.now, fs.last_restart) {
            fs.k_backoff = 0; // §12 R8: a positive BCN
        }
        if fb < 0.0 {
            rl.rate = decrease(&p, rl.rate, fb);
            rl.cpid = msg.cpid; // the latest congested CP takes ownership (§12 G9)
        } else if fb > 0.0 && (p.fb_at_cp || msg.cpid == rl.cpid) {
            rl.rate = increase(&p, rl.rate, fb, ru);
        } else {
            return;
        }
        self.release_if_line(local, ctx.now);
        self.push_rate(ctx, local);
    }

    fn on_transmit(&mut self, ctx: &mut HostCtx, local: u32, frame: &mut Frame) {
        self.flows[local as usize].last_tx = ctx.now;
        if self.p.fb_at_cp {
            return; // decrease-only mode needs no RL tags (spec §4.1)
        }
        if let Some(rl) = self.flows[local as usize].rl {
            if !rl.stopped {
                frame.tag.flags |= tag::RL;
                frame.tag.cpid = rl.cpid;
            }
        }
    }

    fn on_timer(&mut self, ctx: &mut HostCtx, tok: u64) {
        let (kind, local, gen) = untoken(tok);
        match kind {
            T_DRIFT | T_SELF_INC => {
                let drift = kind == T_DRIFT;
                let period = if drift { self.p.drift_interval_ps } else { self.p.self_increase_interval_ps };
                let (d, i) = (self.p.drift_bps, self.p.self_increase.unwrap_or(0.0));
                let mut any = false;
                for l in 0..self.flows.len() as u32 {
                    let Some(rl) = self.flows[l as usize].rl.as_mut() else { continue };
                    any = true;
                    if rl.stopped {
                        continue; // "never stop drift except timeout in BCN(0,0)" [B]
                    }
                    // §2.4 drift: + R_drift; §4.3 self-increase: + R·I·τ
                    rl.rate = if drift { rl.rate + d } else { self_increase_step(rl.rate, i, period) };
                    self.release_if_line(l, ctx.now);
                    self.push_rate(ctx, l);
                }
                if any {
                    ctx.set_timer(ctx.now + period, tok);
                } else if drift {
                    self.drift_armed = false;
                } else {
                    self.self_inc_armed = false;
                }
            }
            T_RESTART => {
                let fs = &mut self.flows[local as usize];
                if fs.restart_gen != gen {
                    return;
                }
                if let Some(rl) = fs.rl.as_mut().filter(|rl| rl.stopped) {
                    rl.stopped = false;
                    rl.rate = fs.restart_rate;
                    fs.last_restart = Some(ctx.now);
                    self.release_if_line(local, ctx.now);
                    self.push_rate(ctx, local);
                }
            }
            T_TIMEOUT if self.p.rl_timeout_event == TimeoutEvent::Idle => {
                let t = self.p.rl_timeout_ps.unwrap_or(u64::MAX / 4);
                let fs = &mut self.flows[local as usize];
                fs.timeout_pending = false;
                let Some(rl) = fs.rl else { return };
                let idle_until = fs.last_tx.saturating_add(t);
                if !rl.stopped && ctx.now >= idle_until && !ctx.has_backlog(local) {
                    fs.rl = None;
                    self.push_rate(ctx, local);
                } else {
                    let at = if ctx.now >= idle_until { ctx.now + t } else { idle_until };
                    fs.timeout_pending = true;
                    ctx.set_timer(at, token(T_TIMEOUT, local, fs.timeout_gen));
                }
            }
            T_TIMEOUT => {
                let fs = &mut self.flows[local as usize];
                // a stopped RL waits for its restart; the next BCN re-arms the timeout
                if fs.timeout_gen == gen && fs.rl.is_some_and(|rl| !rl.stopped) {
                    fs.rl = None;
                    self.push_rate(ctx, local);
                }
            }
            _ => {}
        }
    }

    fn rate_bps(&self, local: u32) -> Option<f64> {
        self.rl(local).map(|rl| if rl.stopped { 0.0 } else { rl.rate })
    }
}

#[cfg(test)]
mod tests {
    //! One test per clause of the control law (spec §2.2–§2.6, §3, §4, §10), on the CP and RP
    //! state machines driven through hand-made contexts.
    use super::*;
    use crate::cm::testkit::TestHost;
    use crate::cm::Emit;
    use crate::frame::{FrameKind, Tag};
    use crate::ids::{FlowId, NodeId};
    use crate::rng::Stream;
    use crate::time::{PS_PER_MS, PS_PER_US};
    use serde_json::json;

    const LINE: f64 = 10e9;
    const CPID: u32 = 7;

    /// [A] baseline (spec §9.1) as IR JSON; tests patch fields.
    fn base_json() -> serde_json::Value {
        json!({
            "sampling": "random_bytes", "sample_p": 0.01, "sample_interval_bytes": 150000,
            "sample_jitter_bytes": 0, "oversampling": "none", "os_factor": 10.0,
            "qeq_bytes": 24000, "w": 2.0, "severe": "none", "qsc_bytes": 112500,
            "severe_trigger": "sample", "severe_holdoff_ps": 0, "sample_refused": false,
            "fb_at_cp": false, "quant_bits": null,
            "slow_cp_max_rate_bps": null, "slow_cp_sample_p": 0.1, "slow_cp_ru_bps": 0.8e6,
            "gi": 1000.0 / 1875.0, "gd": 0.5 / 1875.0, "ru_bps": 1e6, "rate_floor_bps": 1e6,
            "initial_rate_bps": null, "tmax0_ps": 100 * PS_PER_US, "rmin0_bps": 1e9,
            "backoff_cap": 10, "reset": "always", "reset_delay_ps": PS_PER_MS, "reset_event": "new_episode",
            "drift_bps": 0.0, "drift_interval_ps": 100 * PS_PER_US, "rl_timeout_ps": null, "rl_timeout_event": "no_feedback",
            "self_increase": null, "self_increase_interval_ps": PS_PER_MS
        })
    }
    fn params_with(patch: serde_json::Value) -> Params {
        let mut v = base_json();
        for (k, x) in patch.as_object().unwrap() {
            v[k] = x.clone();
        }
        let p: Params = parse_params("bcn", &v).unwrap();
        p.check().unwrap();
        p
    }
    fn base() -> Params {
        params_with(json!({}))
    }

    fn data_frame(src: u32, flow: u32, size: u32) -> Frame {
        crate::cm::testkit::data_frame(src, 99, flow, size)
    }

    /// A CP with its own RNG and output buffer.
    struct CpH {
        cp: Cp,
        rng: Stream,
        out: Vec<Emit>,
    }
    impl CpH {
        fn new(p: Params) -> Self {
            CpH { cp: Cp::new(Arc::new(p), CPID, 10_000_000_000), rng: Stream::new(1, 0, 5), out: Vec::new() }
        }
        /// Enqueue `f` with the queue (incl. f) at `q` bytes; returns the messages sent.
        fn enqueue(&mut self, q: u64, f: &mut Frame) -> Vec<Emit> {
            let hosts = [NodeId(0)];
            let mut ctx = CpCtx {
                now: 0,
                queue_bytes: q,
                service_rate_bps: 10_000_000_000,
                rng: &mut self.rng,
                out: &mut self.out,
                hosts: &hosts,
                sources: &hosts,
            };
            self.cp.on_enqueue(&mut ctx, f);
            std::mem::take(&mut self.out)
        }
        /// Offer `f` at time `now` with the queue at `q` bytes: enqueued, or refused by admission.
        fn offer(&mut self, now: SimTime, q: u64, f: &mut Frame, refused: bool) -> Vec<Emit> {
            let hosts = [NodeId(0)];
            let mut ctx = CpCtx {
                now,
                queue_bytes: q,
                service_rate_bps: 10_000_000_000,
                rng: &mut self.rng,
                out: &mut self.out,
                hosts: &hosts,
                sources: &hosts,
            };
            if refused {
                self.cp.on_drop(&mut ctx, f);
            } else {
                self.cp.on_enqueue(&mut ctx, f);
            }
            std::mem::take(&mut self.out)
        }
    }

    /// An RP of a host with `n` flows (ids 0..n), recording what it asks of the engine in a
    /// [`TestHost`] (reachable as `h.rates`, `h.timers`, `h.now` … through `Deref`).
    struct RpH {
        rp: Rp,
        env: TestHost,
    }
    impl std::ops::Deref for RpH {
        type Target = TestHost;
        fn deref(&self) -> &TestHost {
            &self.env
        }
    }
    impl std::ops::DerefMut for RpH {
        fn deref_mut(&mut self) -> &mut TestHost {
            &mut self.env
        }
    }
    impl RpH {
        fn new(p: Params, n: u32) -> Self {
            let mut env = TestHost::with_flows((0..n).map(FlowId).collect(), 9);
            env.info.host = NodeId(0);
            env.info.line_rate_bps = LINE as u64;
            env.info.flow_dst = vec![NodeId(99); n as usize];
            let rp = Rp::new(Arc::new(p), &env.info);
            RpH { rp, env }
        }
        fn with<R>(&mut self, f: impl FnOnce(&mut Rp, &mut HostCtx) -> R) -> R {
            f(&mut self.rp, &mut self.env.ctx())
        }
        fn msg(&mut self, kind: u8, flow: u32, cpid: u32, fb: f64) {
            let m = CmMsg { kind, flow: FlowId(flow), cpid, v: [0.0, fb, 1e6] };
            self.with(|rp, ctx| rp.on_feedback(ctx, &m));
        }
        /// Fire every pending timer due at or before `t`, in time order (and those they arm).
        fn advance(&mut self, t: SimTime) {
            loop {
                self.timers.sort_by_key(|x| std::cmp::Reverse(x.0));
                match self.timers.last().copied() {
                    Some((at, tok)) if at <= t => {
                        self.timers.pop();
                        self.now = at;
                        self.with(|rp, ctx| rp.on_timer(ctx, tok));
                    }
                    _ => break,
                }
            }
            self.now = t;
        }
        fn rate(&self, local: u32) -> Option<f64> {
            self.rp.rate_bps(local)
        }
        /// A data frame of `local` starts transmission at `t` (timers due before it fire first).
        fn transmit_at(&mut self, local: u32, t: SimTime) {
            self.advance(t);
            let mut f = data_frame(0, local, 1500);
            self.with(|rp, ctx| rp.on_transmit(ctx, local, &mut f));
        }
        fn last_set(&self, local: u32) -> Option<Option<f64>> {
            self.rates.iter().rev().find(|r| r.local == local).map(|r| r.rate_bps)
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    // ---------------------------------------------------------------- CP: Qoff, Qdelta, clamps

    #[test]
    fn qoff_is_in_pages_and_clamped_to_plus_minus_qeq() {
        // Qeq = 375 pages (24 000 B)
        assert!(close(qoff_pages(24_000, 0), 375.0)); // empty queue: +Qeq (clamp hit)
        assert!(close(qoff_pages(24_000, 24_000), 0.0));
        assert!(close(qoff_pages(24_000, 24_064), -1.0)); // fractional pages: 64 B = 1 page
        assert!(close(qoff_pages(24_000, 48_000), -375.0)); // exactly at the clamp
        assert!(close(qoff_pages(24_000, 150_000), -375.0)); // beyond: clamped
        assert!(close(qoff_pages(24_000, 1500), (24_000.0 - 1500.0) / 64.0));
    }

    #[test]
    fn qdelta_is_in_pages_and_clamped_to_plus_minus_two_qeq() {
        assert!(close(qdelta_pages(24_000, 3000, 1500), 1500.0 / 64.0));
        assert!(close(qdelta_pages(24_000, 0, 1500), -1500.0 / 64.0));
        assert!(close(qdelta_pages(24_000, 148_000, 0), 750.0)); // +2Qeq clamp
        assert!(close(qdelta_pages(24_000, 0, 148_000), -750.0)); // −2Qeq clamp
        // with both clamps hit Fb reaches ±Fb_max = ±(1+2W)Qeq = ±1875 pages
        let p = base();
        assert!(close(p.fb_max(), 1875.0));
        let fb = qoff_pages(24_000, 148_000) - 2.0 * qdelta_pages(24_000, 148_000, 0);
        assert!(close(fb, -1875.0));
    }

    // ---------------------------------------------------------------- CP: message rule

    #[test]
    fn fb_zero_sends_nothing() {
        // Q = Qeq and unchanged since the last sample: Qoff = Qdelta = 0 ⇒ Fb = 0 (spec §10)
        let p = base();
        assert_eq!(cp_decide(&p, 24_000, 24_000, true), Verdict::Nothing);
        assert_eq!(cp_decide(&p, 24_000, 24_000, false), Verdict::Nothing);
        // Fb = 0 with Qoff ≠ 0: Q = 23 680 B, Q_last = 23 520 B ⇒ qoff = +5, qdelta = +2.5 ⇒ fb = 0
        assert_eq!(cp_decide(&p, 23_680, 23_520, true), Verdict::Nothing);
    }

    #[test]
    fn negative_always_positive_only_to_own_tagged_frames() {
        let p = base();
        // queue above Qeq and growing: negative, whether tagged or not
        for tagged in [false, true] {
            match cp_decide(&p, 30_000, 28_500, tagged) {
                Verdict::Send(k, v) => {
                    assert_eq!(k, MSG_NEGATIVE);
                    assert!(close(v[1], (24_000.0 - 30_000.0) / 64.0 - 2.0 * 1500.0 / 64.0));
                }
                v => panic!("expected negative, got {v:?}"),
            }
        }
        // queue below Qeq and not growing: positive only if the frame is tagged by this CP
        assert_eq!(cp_decide(&p, 6_000, 6_000, false), Verdict::Nothing);
        match cp_decide(&p, 6_000, 6_000, true) {
            Verdict::Send(k, v) => {
                assert_eq!(k, MSG_POSITIVE);
                assert!(close(v[1], 18_000.0 / 64.0));
            }
            v => panic!("expected positive, got {v:?}"),
        }
    }

    #[test]
    fn cp_checks_the_tag_cpid_and_never_samples_control_frames() {
        // sample every frame: random_bytes with I = L
        let mut h = CpH::new(params_with(json!({"sample_interval_bytes": 1500})));
        let mut f = data_frame(3, 11, 1500);
        f.tag = Tag { flags: tag::RL, cpid: CPID + 1, rate: 0.0 }; // owned by another CP
        assert!(h.enqueue(6000, &mut f).is_empty());
        f.tag.cpid = CPID;
        let out = h.enqueue(6000, &mut f);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].dst, NodeId(3)); // back to the source
        assert_eq!(out[0].msg.kind, MSG_POSITIVE);
        assert_eq!(out[0].msg.flow, FlowId(11));
        assert_eq!(out[0].msg.cpid, CPID);
        let mut c = data_frame(3, 11, 1500);
        c.kind = FrameKind::Control;
        for _ in 0..100 {
            assert!(h.enqueue(100_000, &mut c).is_empty());
        }
    }

    #[test]
    fn severe_max_and_zero_replace_the_normal_message_strictly_above_qsc() {
        for (sev, kind) in [("max", MSG_MAX), ("zero", MSG_ZERO)] {
            let p = params_with(json!({"severe": sev}));
            assert!(matches!(cp_decide(&p, 112_500, 112_500, false), Verdict::Send(MSG_NEGATIVE, _)));
            match cp_decide(&p, 112_501, 112_501, true) {
                Verdict::Send(k, v) => {
                    assert_eq!(k, kind);
                    assert!(close(v[1], -1875.0));
                }
                v => panic!("{v:?}"),
            }
        }
        // severe = none: only normal messages above Qsc
        assert!(matches!(cp_decide(&base(), 140_000, 140_000, false), Verdict::Send(MSG_NEGATIVE, _)));
    }

    #[test]
    fn severe_trigger_every_arrival_with_per_source_holdoff() {
        // §12 B4 alternative: a severe message for every arriving data frame above Qsc, sampled or not
        // (sampling every 150 KB would pick ~1 % of these frames).
        for (sev, kind) in [("max", MSG_MAX), ("zero", MSG_ZERO)] {
            let mut h = CpH::new(params_with(json!({"severe": sev, "severe_trigger": "every_arrival"})));
            for i in 0..20u64 {
                let out = h.offer(i * PS_PER_US, 140_000, &mut data_frame(1, 1, 1500), false);
                assert_eq!(out.len(), 1, "one severe message per arrival");
                assert_eq!(out[0].msg.kind, kind);
                assert!(close(out[0].msg.v[1], -1875.0));
            }
            // at or below Qsc the normal sampled rule applies: no message for an unsampled frame
            let n: usize = (0..100).map(|_| h.offer(0, 112_500, &mut data_frame(1, 1, 1500), false).len()).sum();
            assert!(n < 10, "{n}");
        }
        // holdoff: at most one severe message per source per 10 µs; sources are independent
        let mut h = CpH::new(params_with(
            json!({"severe": "zero", "severe_trigger": "every_arrival", "severe_holdoff_ps": 10 * PS_PER_US}),
        ));
        let mut sent = [0usize; 2];
        for t in 0..100u64 {
            for src in 0..2u32 {
                sent[src as usize] += h.offer(t * PS_PER_US, 140_000, &mut data_frame(src, src, 1500), false).len();
            }
        }
        assert_eq!(sent, [10, 10]);
        // a sampled frame above Qsc within the holdoff sends nothing (no second message)
        let mut h = CpH::new(params_with(json!({"severe": "max", "severe_trigger": "every_arrival",
            "sampling": "bernoulli", "sample_p": 1.0, "severe_holdoff_ps": PS_PER_MS})));
        assert_eq!(h.offer(0, 140_000, &mut data_frame(1, 1, 1500), false).len(), 1);
        assert_eq!(h.offer(PS_PER_US, 140_000, &mut data_frame(1, 1, 1500), false).len(), 0);
        // the sample still updated Q_last: the next normal sample sees Qdelta from 140 000 B
        let mut f = data_frame(1, 1, 1500);
        f.tag.flags |= tag::RL;
        f.tag.cpid = CPID; // tagged by this CP, so the positive Fb is sent
        let out = h.offer(2 * PS_PER_US, 100_000, &mut f, false);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].msg.kind, MSG_POSITIVE);
        let want = qoff_pages(24_000, 100_000) - 2.0 * qdelta_pages(24_000, 100_000, 140_000);
        assert!(close(out[0].msg.v[1], want));
        // default trigger = sample: unsampled arrivals above Qsc send nothing
        let mut h = CpH::new(params_with(json!({"severe": "zero", "sampling": "bernoulli", "sample_p": 1e-9})));
        assert!(h.offer(0, 140_000, &mut data_frame(1, 1, 1500), false).is_empty());
    }

    #[test]
    fn refused_frames_are_sampled_only_with_sample_refused() {
        // every frame sampled (p = 1) so the rule, not the sampler, decides
        let p = json!({"sampling": "bernoulli", "sample_p": 1.0, "severe": "max", "qsc_bytes": 83_200});
        let mut h = CpH::new(params_with(p.clone()));
        assert!(h.offer(0, 140_000, &mut data_frame(1, 1, 1500), true).is_empty(), "spec §2.2: not sampled");
        let mut patch = p.clone();
        patch["sample_refused"] = json!(true);
        let mut h = CpH::new(params_with(patch));
        let out = h.offer(0, 140_000, &mut data_frame(1, 1, 1500), true);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].msg.kind, MSG_MAX);
        assert_eq!(out[0].dst, NodeId(1), "to the source of the refused frame");
        // a refused control frame is never sampled
        let mut c = data_frame(1, 1, 64);
        c.kind = FrameKind::Control;
        assert!(h.offer(0, 140_000, &mut c, true).is_empty());
        // periodic counter: refused bytes move it (I = 75 000 B, J = 0 → every 50th frame)
        let mut patch = p.clone();
        patch["sample_refused"] = json!(true);
        patch["sampling"] = json!("periodic");
        patch["sample_interval_bytes"] = json!(75_000);
        let mut h = CpH::new(params_with(patch));
        let n: usize = (0..100).map(|i| h.offer(0, 140_000, &mut data_frame(1, 1, 1500), i % 2 == 0).len()).sum();
        assert_eq!(n, 2);
    }

    #[test]
    fn periodic_sampler_counts_data_bytes_with_bounded_jitter() {
        // I = 75 000 B, J = 0: exactly every 50th 1500-B frame
        let mut h = CpH::new(params_with(json!({"sampling": "periodic", "sample_interval_bytes": 75000})));
        let mut hits = vec![];
        for i in 0..500 {
            let mut f = data_frame(1, 0, 1500);
            if !h.enqueue(100_000, &mut f).is_empty() {
                hits.push(i);
            }
        }
        assert_eq!(hits.len(), 10);
        assert!(hits.windows(2).all(|w| w[1] - w[0] == 50), "{hits:?}");
        // ECM: 75 000 ± 5 000 B ⇒ gaps of 47..=54 frames, mean 50
        let mut h = CpH::new(params_with(
            json!({"sampling": "periodic", "sample_interval_bytes": 75000, "sample_jitter_bytes": 5000}),
        ));
        let mut last = None;
        let mut gaps = vec![];
        for i in 0..100_000usize {
            let mut f = data_frame(1, 0, 1500);
            if !h.enqueue(100_000, &mut f).is_empty() {
                if let Some(l) = last {
                    gaps.push(i - l);
                }
                last = Some(i);
            }
        }
        assert!(gaps.iter().all(|&g| (46..=54).contains(&g)), "{:?}", &gaps[..10]);
        let mean = gaps.iter().sum::<usize>() as f64 / gaps.len() as f64;
        assert!((mean - 50.0).abs() < 0.2, "mean gap {mean}");
    }

    #[test]
    fn random_and_bernoulli_sampling_rates() {
        // 150 KB with 1500-B frames: 1 %; Bernoulli p = 0.05
        for (patch, want) in [
            (json!({}), 0.01),
            (json!({"sampling": "bernoulli", "sample_p": 0.05}), 0.05),
            (json!({"sample_interval_bytes": 25000}), 0.06),
        ] {
            let mut h = CpH::new(params_with(patch));
            let n = 200_000;
            let k = (0..n).filter(|_| !h.enqueue(100_000, &mut data_frame(1, 0, 1500)).is_empty()).count();
            let got = k as f64 / n as f64;
            assert!((got - want).abs() < 0.1 * want, "sampling rate {got} vs {want}");
        }
    }

    #[test]
    fn oversampling_thresh_and_qcn() {
        // OS-THRESH ×10 above Qeq: 1 % → 10 %
        let mut h = CpH::new(params_with(json!({"oversampling": "thresh"})));
        let n = 50_000;
        let above = (0..n).filter(|_| !h.enqueue(30_000, &mut data_frame(1, 0, 1500)).is_empty()).count();
        assert!((above as f64 / n as f64 - 0.10).abs() < 0.01);
        // OS-QCN: a maximal negative sample divides the next interval by 1 + 63/8 = 8
        let mut h = CpH::new(params_with(
            json!({"oversampling": "qcn", "sampling": "periodic", "sample_interval_bytes": 150000}),
        ));
        let mut first = None;
        for i in 0..200 {
            let out = h.enqueue(149_000, &mut data_frame(1, 0, 1500));
            if !out.is_empty() {
                match first {
                    None => first = Some(i),
                    Some(f) => {
                        assert_eq!(i - f, 13, "150 000 / 8 = 18 750 B = 12.5 frames");
                        break;
                    }
                }
            }
        }
        assert_eq!(first, Some(99));
        assert_eq!(q6(-1875.0, 1875.0), 63);
        assert_eq!(q6(100.0, 1875.0), 0);
    }

    #[test]
    fn slow_cp_uses_its_own_pm_and_ru() {
        // [C] §4 enhanced: Pm 0.1, Ru 0.8 Mb/s at the 1 Gb/s CP; Pm 0.01, Ru 8 Mb/s elsewhere
        let p = params_with(json!({"sampling": "bernoulli", "sample_p": 0.01, "ru_bps": 8e6,
                                   "slow_cp_max_rate_bps": 1_000_000_000u64}));
        let p = Arc::new(p);
        let mut rng = Stream::new(1, 0, 3);
        for (rate, want_p, want_ru) in [(1_000_000_000u64, 0.1, 0.8e6), (10_000_000_000, 0.01, 8e6)] {
            let mut cp = Cp::new(p.clone(), CPID, rate);
            let mut out = vec![];
            let n = 100_000;
            for _ in 0..n {
                let hosts = [NodeId(0)];
                let mut ctx = CpCtx { now: 0, queue_bytes: 100_000, service_rate_bps: rate, rng: &mut rng,
                                      out: &mut out, hosts: &hosts, sources: &hosts };
                cp.on_enqueue(&mut ctx, &mut data_frame(1, 0, 1500));
            }
            let got = out.len() as f64 / n as f64;
            assert!((got - want_p).abs() < 0.1 * want_p, "{got}");
            assert!(out.iter().all(|e| e.msg.v[2] == want_ru));
        }
        // the RP increases by Gi·fb·Ru of the message
        let mut h = RpH::new(base(), 1);
        h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
        let m = CmMsg { kind: MSG_POSITIVE, flow: FlowId(0), cpid: CPID, v: [0.0, 1875.0, 0.8e6] };
        h.with(|rp, ctx| rp.on_feedback(ctx, &m));
        assert!(close(h.rate(0).unwrap(), 5e9 + 0.8e9));
    }

    // ---------------------------------------------------------------- quantisation (§4.2)

    #[test]
    fn quantization_sign_magnitude_floor_and_suppression() {
        let fm = 1875.0;
        // 3 bits: 7 levels of 1875/7 = 267.86 pages
        assert!(close(quantize(-1875.0, fm, 3), -1875.0));
        assert!(close(quantize(-600.0, fm, 3), -2.0 * fm / 7.0)); // floor(600·7/1875) = 2
        assert!(close(quantize(600.0, fm, 3), 2.0 * fm / 7.0)); // sign kept
        assert_eq!(quantize(-200.0, fm, 3), 0.0); // quantises to 0 ⇒ no message
        // 32 bits: within one level (4.4e-7 pages) of the exact value
        assert!((quantize(-600.123, fm, 32) + 600.123).abs() < 1e-6);
        // the CP suppresses a message whose magnitude quantises to 0
        let p = params_with(json!({"quant_bits": 3}));
        // Q = 30 000 B, Q_last = Q ⇒ fb = −93.75 pages < 267.86 ⇒ nothing
        assert_eq!(cp_decide(&p, 30_000, 30_000, false), Verdict::Nothing);
        match cp_decide(&p, 48_000, 40_000, false) {
            // qoff = −375, qdelta = +125 ⇒ fb = −625; floor(625·7/1875) = 2 ⇒ −2·Fb_max/7
            Verdict::Send(MSG_NEGATIVE, v) => assert!(close(v[1], -2.0 * fm / 7.0)),
            v => panic!("{v:?}"),
        }
    }

    // ---------------------------------------------------------------- decrease-only mode (§4.1)

    #[test]
    fn fb_at_cp_sends_decrease_only_and_rp_does_not_tag() {
        let p = params_with(json!({"fb_at_cp": true}));
        assert_eq!(cp_decide(&p, 6_000, 6_000, true), Verdict::Nothing); // no positive, even tagged
        assert!(matches!(cp_decide(&p, 30_000, 30_000, false), Verdict::Send(MSG_NEGATIVE, _)));
        let mut h = RpH::new(p, 1);
        h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
        assert!(close(h.rate(0).unwrap(), 5e9));
        let mut f = data_frame(0, 0, 1500);
        h.with(|rp, ctx| rp.on_transmit(ctx, 0, &mut f));
        assert_eq!(f.tag.flags & tag::RL, 0);
    }

    // ---------------------------------------------------------------- RP: AIMD, floor, ownership

    #[test]
    fn gain_rule_of_spec_10() {
        // [A]/[D] gains: Gi·Fb_max·Ru = 1 Gb/s; 1 − Gd·Fb_max = 0.5 (0.05 with the 95 % gain)
        let p = base();
        assert!((p.gi * p.fb_max() * p.ru_bps - 1e9).abs() < 1.0);
        assert!(close(1.0 - p.gd * p.fb_max(), 0.5));
        let p95 = params_with(json!({"gd": 0.95 / 1875.0}));
        assert!(close(1.0 - p95.gd * p95.fb_max(), 0.05));
        // and at the RP: a maximal negative halves (×0.05), a maximal positive adds 1 Gb/s
        let mut h = RpH::new(base(), 1);
        h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
        assert!(close(h.rate(0).unwrap(), 5e9), "RL created at line rate, then halved");
        h.msg(MSG_POSITIVE, 0, CPID, 1875.0);
        assert!(close(h.rate(0).unwrap(), 6e9));
        let mut h = RpH::new(p95, 1);
        h.msg(MSG_MAX, 0, CPID, 0.0);
        assert!(close(h.rate(0).unwrap(), 0.5e9));
    }

    #[test]
    fn positive_never_creates_an_rl_and_non_owner_positive_is_ignored() {
        let mut h = RpH::new(base(), 2);
        h.msg(MSG_POSITIVE, 0, CPID, 500.0);
        assert_eq!(h.rate(0), None);
        assert!(h.rates.is_empty());
        h.msg(MSG_NEGATIVE, 1, CPID, -100.0);
        let r = h.rate(1).unwrap();
        h.msg(MSG_POSITIVE, 1, CPID + 1, 500.0); // not the owner
        assert_eq!(h.rate(1), Some(r));
        // a negative from another CP transfers ownership; then its positives apply
        h.msg(MSG_NEGATIVE, 1, CPID + 1, -100.0);
        let r2 = h.rate(1).unwrap();
        assert!(r2 < r);
        h.msg(MSG_POSITIVE, 1, CPID + 1, 100.0);
        assert!(close(h.rate(1).unwrap(), r2 + h.rp.p.gi * 100.0 * 1e6));
        h.msg(MSG_POSITIVE, 1, CPID, 100.0); // the old owner no longer counts
        assert!(close(h.rate(1).unwrap(), r2 + h.rp.p.gi * 100.0 * 1e6));
        // data frames carry the owner's id in the RL tag
        let mut f = data_frame(0, 1, 1500);
        h.with(|rp, ctx| rp.on_transmit(ctx, 1, &mut f));
        assert_eq!((f.tag.flags & tag::RL, f.tag.cpid), (tag::RL, CPID + 1));
        let mut g = data_frame(0, 0, 1500);
        h.with(|rp, ctx| rp.on_transmit(ctx, 0, &mut g));
        assert_eq!(g.tag.flags, 0, "flows without an RL are untagged");
    }

    #[test]
    fn increase_to_line_rate_releases_the_rl() {
        let mut h = RpH::new(base(), 1);
        h.msg(MSG_NEGATIVE, 0, CPID, -1875.0); // 5 Gb/s
        for _ in 0..4 {
            h.msg(MSG_POSITIVE, 0, CPID, 1875.0);
        }
        assert!(close(h.rate(0).unwrap(), 9e9));
        h.msg(MSG_POSITIVE, 0, CPID, 1875.0);
        assert_eq!(h.rate(0), None);
        assert_eq!(h.last_set(0), Some(None), "limiter removed: line rate, untagged");
    }

    #[test]
    fn rate_floor_holds() {
        // 95 % decreases from 10 Gb/s: 10G·0.05^k reaches the 1 Mb/s floor at k = 4
        let mut h = RpH::new(params_with(json!({"gd": 0.95 / 1875.0})), 1);
        for _ in 0..10 {
            h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
        }
        assert_eq!(h.rate(0), Some(1e6));
        // Gd·|fb| > 1 would make the rate negative: the floor applies
        let mut h = RpH::new(params_with(json!({"gd": 1e-3, "rate_floor_bps": 0.0})), 1);
        h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
        assert_eq!(h.rate(0), Some(0.0));
    }

    #[test]
    fn initial_rate_option() {
        let mut h = RpH::new(params_with(json!({"initial_rate_bps": 5e9})), 1);
        h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
        assert!(close(h.rate(0).unwrap(), 2.5e9));
    }

    // ---------------------------------------------------------------- BCN(0,0) (§2.5)

    #[test]
    fn bcn00_stops_restarts_randomly_within_tmax_at_rmin() {
        let mut h = RpH::new(params_with(json!({"severe": "zero"})), 1);
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        assert_eq!(h.rate(0), Some(0.0));
        assert_eq!(h.last_set(0), Some(Some(0.0)), "Some(0) stops the flow");
        // a normal negative while stopped is ignored
        h.msg(MSG_NEGATIVE, 0, CPID, -100.0);
        assert_eq!(h.rate(0), Some(0.0));
        let (at, _) = *h.timers.iter().find(|t| untoken(t.1).0 == T_RESTART).unwrap();
        assert!(at <= 100 * PS_PER_US);
        h.advance(at);
        assert_eq!(h.rate(0), Some(1e9));
        assert!(h.rp.flows[0].last_restart == Some(at));
    }

    /// Drive `n` stop episodes (each: ZERO, then restart) and return the back-off levels used.
    fn episodes(reset: &str, gaps_ps: &[u64]) -> Vec<u32> {
        let mut h = RpH::new(params_with(json!({"severe": "zero", "reset": reset, "backoff_cap": 3})), 1);
        let mut used = vec![];
        for &gap in gaps_ps {
            h.advance(h.now + gap);
            h.msg(MSG_ZERO, 0, CPID, 0.0);
            let rmin = h.rp.flows[0].restart_rate;
            let k = (1e9 / rmin).log2().round() as u32;
            used.push(k);
            h.advance(h.now + 2_000 * PS_PER_MS); // let it restart
        }
        used
    }

    #[test]
    fn bcn00_reset_policies_and_backoff_cap() {
        let gaps = [0, 10 * PS_PER_US, 10 * PS_PER_US, 10 * PS_PER_US, 10 * PS_PER_US];
        // ALWAYS: every new episode starts at (Tmax0, Rmin0)
        assert_eq!(episodes("always", &gaps), vec![0, 0, 0, 0, 0]);
        // NEVER: accumulates, capped at K_CAP = 3
        assert_eq!(episodes("never", &gaps), vec![0, 1, 2, 3, 3]);
        // DELAYED: episodes come 2 s after the restart here (≥ 1 ms) ⇒ reset
        assert_eq!(episodes("delayed", &gaps), vec![0, 0, 0, 0, 0]);
        // DELAYED with a ZERO < 1 ms after the last restart: no reset
        let mut h = RpH::new(params_with(json!({"severe": "zero", "reset": "delayed"})), 1);
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        h.advance(200 * PS_PER_US); // restarted (Tmax0 = 100 µs)
        let t_restart = h.rp.flows[0].last_restart.unwrap();
        h.advance(t_restart + 500 * PS_PER_US);
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        assert!(close(h.rp.flows[0].restart_rate, 0.5e9), "level 1: Rmin halved");
        h.advance(h.now + 10 * PS_PER_MS);
        let t_restart = h.rp.flows[0].last_restart.unwrap();
        h.advance(t_restart + PS_PER_MS); // exactly 1 ms later: reset
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        assert!(close(h.rp.flows[0].restart_rate, 1e9));
    }

    #[test]
    fn bcn00_reset_event_positive_and_released() {
        // reset_event = positive (spec §12 R8): episodes accumulate through negative BCNs; the first
        // positive BCN reaching the running RL applies the policy.
        let mk = |reset: &str, ev: &str| {
            RpH::new(params_with(json!({"severe": "zero", "reset": reset, "reset_event": ev})), 1)
        };
        for (reset, after_positive) in [("always", 1e9), ("never", 0.25e9)] {
            let mut h = mk(reset, "positive");
            for want in [1e9, 0.5e9] {
                h.msg(MSG_ZERO, 0, CPID, 0.0);
                assert!(close(h.rp.flows[0].restart_rate, want), "{reset}: episodes accumulate");
                h.advance(h.now + 50 * PS_PER_MS); // restarted
            }
            h.msg(MSG_NEGATIVE, 0, CPID, -10.0); // a negative BCN is no reset event
            h.msg(MSG_POSITIVE, 0, CPID, 10.0);
            h.msg(MSG_ZERO, 0, CPID, 0.0);
            assert!(close(h.rp.flows[0].restart_rate, after_positive), "{reset}");
        }
        // with a negative BCN only, the level keeps growing under always
        let mut h = mk("always", "positive");
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        h.advance(h.now + 50 * PS_PER_MS);
        h.msg(MSG_NEGATIVE, 0, CPID, -10.0);
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        assert!(close(h.rp.flows[0].restart_rate, 0.5e9));
        // reset_event = released: a positive BCN does nothing; the RL released at line rate resets
        let mut h = mk("always", "released");
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        h.advance(h.now + 50 * PS_PER_MS);
        h.msg(MSG_POSITIVE, 0, CPID, 10.0);
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        assert!(close(h.rp.flows[0].restart_rate, 0.5e9), "a positive BCN is no reset event here");
        h.advance(h.now + 50 * PS_PER_MS);
        for _ in 0..10_000 {
            if h.rp.flows[0].rl.is_none() {
                break;
            }
            h.msg(MSG_POSITIVE, 0, CPID, 1e6); // large increases up to the line rate
        }
        assert!(h.rp.flows[0].rl.is_none(), "released at line rate");
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        assert!(close(h.rp.flows[0].restart_rate, 1e9), "the release reset the back-off");
    }

    #[test]
    fn bcn00_reset_event_uncongested() {
        // reset_event = uncongested: a new stop episode keeps the level; a normal BCN to a running
        // RL applies the policy (always: reset; delayed: reset if >= 1 ms after the restart; never: no).
        let mk = |reset: &str| {
            RpH::new(params_with(json!({"severe": "zero", "reset": reset, "reset_event": "uncongested"})), 1)
        };
        for (reset, after_normal) in [("always", 1e9), ("delayed", 0.25e9), ("never", 0.25e9)] {
            let mut h = mk(reset);
            for want in [1e9, 0.5e9] {
                h.msg(MSG_ZERO, 0, CPID, 0.0);
                assert!(close(h.rp.flows[0].restart_rate, want), "{reset}: episodes accumulate");
                h.advance(h.now + 50 * PS_PER_MS); // restarted
            }
            // a normal BCN 50 ms after the restart... but delayed looks at the restart time:
            let t_restart = h.rp.flows[0].last_restart.unwrap();
            h.advance(t_restart + 500 * PS_PER_US); // < 1 ms after the restart
            h.msg(MSG_NEGATIVE, 0, CPID, -10.0);
            h.msg(MSG_ZERO, 0, CPID, 0.0);
            assert!(close(h.rp.flows[0].restart_rate, after_normal), "{reset}");
        }
        // delayed: a normal BCN >= 1 ms after the restart resets
        let mut h = mk("delayed");
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        h.advance(h.now + 50 * PS_PER_MS);
        h.advance(h.rp.flows[0].last_restart.unwrap() + PS_PER_MS);
        h.msg(MSG_POSITIVE, 0, CPID, 10.0);
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        assert!(close(h.rp.flows[0].restart_rate, 1e9));
        // BCN-MAX is a severe message: no reset; a normal BCN while stopped is ignored
        let mut h = mk("always");
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        h.advance(h.now + 50 * PS_PER_MS);
        h.msg(MSG_MAX, 0, CPID, 0.0);
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        assert!(close(h.rp.flows[0].restart_rate, 0.5e9));
        h.msg(MSG_NEGATIVE, 0, CPID, -10.0); // stopped: ignored
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        assert!(close(h.rp.flows[0].restart_rate, 0.25e9));
    }

    #[test]
    fn bcn00_while_stopped_rearms_with_doubled_tmax_and_halved_rmin() {
        let p = params_with(json!({"severe": "zero", "backoff_cap": 2}));
        assert_eq!(backoff(&p, 0), (100 * PS_PER_US, 1e9));
        assert_eq!(backoff(&p, 1), (200 * PS_PER_US, 0.5e9));
        let mut h = RpH::new(p, 1);
        for want in [1e9, 0.5e9, 0.25e9, 0.25e9] {
            h.msg(MSG_ZERO, 0, CPID, 0.0); // still stopped: no reset, level grows to the cap
            assert!(close(h.rp.flows[0].restart_rate, want));
        }
        // only the latest restart timer counts
        let gens: Vec<u32> =
            h.timers.iter().filter(|t| untoken(t.1).0 == T_RESTART).map(|t| untoken(t.1).2).collect();
        assert_eq!(gens.len(), 4);
        h.advance(h.now + 10 * PS_PER_MS);
        assert_eq!(h.rate(0), Some(0.25e9));
        let restarts = h.rates.iter().filter(|r| r.rate_bps == Some(0.25e9)).count();
        assert_eq!(restarts, 1, "stale restart tokens ignored");
    }

    // ---------------------------------------------------------------- drift (§2.4)

    #[test]
    fn drift_adds_ru_every_interval_except_while_stopped() {
        let mut h = RpH::new(params_with(json!({"drift_bps": 1e6, "severe": "zero"})), 2);
        h.now = 50 * PS_PER_US;
        h.msg(MSG_NEGATIVE, 0, CPID, -1875.0); // 5 Gb/s
        h.msg(MSG_ZERO, 1, CPID, 0.0); // stopped
        // the drift grid is global: ticks at 100, 200, ... µs
        let first = h.timers.iter().find(|t| untoken(t.1).0 == T_DRIFT).unwrap().0;
        assert_eq!(first, 100 * PS_PER_US);
        h.rp.flows[1].restart_gen += 1; // keep flow 1 stopped for this test
        h.advance(1_000 * PS_PER_US);
        assert!(close(h.rate(0).unwrap(), 5e9 + 10.0 * 1e6));
        assert_eq!(h.rate(1), Some(0.0));
        // drift releases the RL at line rate, then stops ticking when no RL is left
        let mut h = RpH::new(params_with(json!({"drift_bps": 1e9})), 1);
        h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
        h.advance(PS_PER_MS);
        assert_eq!(h.rate(0), None);
        assert!(h.timers.is_empty());
        assert!(!h.rp.drift_armed);
    }

    #[test]
    fn drift_with_a_random_phase_ticks_on_the_hosts_own_grid() {
        // drift_random_phase: the first tick is at phase + k T for a phase drawn per host in [0, T), and
        // the ticks stay T apart; different hosts (streams) get different phases
        let tick_of = |stream: u64| {
            let mut h = RpH::new(params_with(json!({"drift_bps": 1e6, "drift_random_phase": true})), 1);
            h.rng = Stream::new(1, 0, stream);
            h.now = 50 * PS_PER_US;
            h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
            let first = h.timers.iter().find(|t| untoken(t.1).0 == T_DRIFT).unwrap().0;
            assert!(first > h.now && first <= h.now + 100 * PS_PER_US, "{first}");
            h.advance(first);
            let second = h.timers.iter().find(|t| untoken(t.1).0 == T_DRIFT).unwrap().0;
            assert_eq!(second, first + 100 * PS_PER_US);
            first % (100 * PS_PER_US)
        };
        let phases: Vec<u64> = (1..6).map(tick_of).collect();
        assert!(phases.iter().any(|&p| p != 0), "off the global grid: {phases:?}");
        assert!(phases.windows(2).any(|w| w[0] != w[1]), "a phase per host: {phases:?}");
    }

    // ---------------------------------------------------------------- ECM timeout (§3)

    #[test]
    fn ecm_rl_timeout_two_ms_after_the_last_bcn() {
        let mut h = RpH::new(params_with(json!({"rl_timeout_ps": 2 * PS_PER_MS})), 1);
        h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
        h.advance(PS_PER_MS);
        h.msg(MSG_NEGATIVE, 0, CPID, -10.0); // re-arms: deadline now 3 ms
        h.advance(2 * PS_PER_MS + PS_PER_US);
        assert!(h.rate(0).is_some(), "the first timer is stale");
        h.advance(3 * PS_PER_MS - 1);
        assert!(h.rate(0).is_some());
        h.advance(3 * PS_PER_MS);
        assert_eq!(h.rate(0), None);
        assert_eq!(h.last_set(0), Some(None));
    }

    #[test]
    fn ecm_idle_timeout_keeps_a_sending_rl_and_deletes_an_idle_one() {
        let mut h = RpH::new(params_with(json!({"rl_timeout_ps": 2 * PS_PER_MS, "rl_timeout_event": "idle"})), 1);
        h.backlog = vec![false]; // nothing waits at the host between frames
        h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
        // no further feedback, but the flow keeps sending: the RL lives on
        for k in 1..=5 {
            h.transmit_at(0, k * PS_PER_MS);
        }
        h.advance(6 * PS_PER_MS);
        assert!(h.rate(0).is_some(), "an RL that sends is not idle, feedback or not");
        // silence: deleted 2 ms after the last frame (5 ms), at the first check after it
        h.advance(8 * PS_PER_MS);
        assert_eq!(h.rate(0), None);
        assert_eq!(h.last_set(0), Some(None));
    }

    // ---------------------------------------------------------------- self-increase (§4.3)

    #[test]
    fn self_increase_r_plus_r_i_tau() {
        let mut h =
            RpH::new(params_with(json!({"fb_at_cp": true, "self_increase": 2.0, "self_increase_interval_ps": PS_PER_MS})), 1);
        h.msg(MSG_NEGATIVE, 0, CPID, -1875.0); // 5 Gb/s
        h.advance(3 * PS_PER_MS);
        let want = 5e9 * (1.0 + 2.0 * 1e-3f64).powi(3);
        assert!(close(h.rate(0).unwrap(), want), "{} vs {want}", h.rate(0).unwrap());
        assert!(close(self_increase_step(1e9, 1.0, PS_PER_MS), 1.001e9));
    }

    // ---------------------------------------------------------------- parameters

    #[test]
    fn params_are_strict() {
        let mut v = base_json();
        v["bogus"] = json!(1);
        let e = parse_params::<Params>("bcn", &v).err().unwrap().to_string();
        assert!(e.contains("bogus"), "{e}");
        let mut v = base_json();
        v.as_object_mut().unwrap().remove("gi");
        assert!(parse_params::<Params>("bcn", &v).is_err(), "no defaults in the IR");
        assert!(build(&json!({"qeq_bytes": 0})).is_err());
        let mut v = base_json();
        v["quant_bits"] = json!(0);
        assert!(build(&v).err().unwrap().to_string().contains("quant_bits"));
        let s = build_ecm(&base_json()).ok().unwrap();
        assert_eq!(s.name(), "ecm");
        assert_eq!(s.message_types(), &["positive", "negative", "max", "zero"]);
    }
}
