//! `bcn` / `ecm`: Backward Congestion Notification v2.0 (model reference §2), the Ethernet Congestion Manager
//! (model reference §3) and the "QCN enhancements to BCN" of Kwan & Matthews (model reference §4).
//!
//! One file, two registry tags built from the same code: `bcn` and `ecm`. They differ only in the
//! name reported in `summary.scheme`; the IR carries every parameter (no defaults on this side),
//! the seed baselines live in `python/cnsim/schemes/{bcn,ecm}.py`.
//!
//! Units: queue lengths and Qeq/Qsc are bytes in the IR; Qoff, Qdelta and Fb are computed in
//! 64-byte **pages as real numbers** (model reference §0, §12 G8), so the published gains (Gi = 0.53333,
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

use super::{parse_params, CongestionPoint, CpCtx, HostCtx, HostInfo, PortInfo, ReactionPoint, RlScope, Scheme};
use crate::error::ScenarioError;
use crate::frame::{tag, CmMsg, Frame};
use crate::ids::NodeId;
use crate::time::{SimTime, PS_PER_S};
use serde::Deserialize;
use std::sync::Arc;

/// Bytes per page (model reference §0).
pub const PAGE: f64 = 64.0;

pub const MSG_POSITIVE: u8 = 0;
pub const MSG_NEGATIVE: u8 = 1;
pub const MSG_MAX: u8 = 2;
pub const MSG_ZERO: u8 = 3;
const MESSAGE_TYPES: &[&str] = &["positive", "negative", "max", "zero"];

/// How a CP picks frames (model reference §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sampling {
    /// Each data frame with probability `sample_probability` ([C] Pm).
    Bernoulli,
    /// Each data frame with probability L / `sample_interval_bytes` ([A], [B], model reference §12 S1).
    RandomBytes,
    /// Byte counter: every `sample_interval_bytes` ± U(`sample_jitter_bytes`) ([D], [E]).
    Periodic,
}

/// Oversampling (model reference §2.6, §12 E4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Oversampling {
    None,
    /// OS-THRESH: sampling rate × `oversampling_factor` while Q > Qeq.
    Thresh,
    /// OS-QCN: next interval = I / (1 + floor(q6 / 8)), q6 = 6-bit quantised |Fb| of a negative Fb.
    Qcn,
}

/// What a CP does above Qsc (model reference §2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severe {
    None,
    /// BCN-MAX ([B] BCNm, [D] ECM Qmc, [E]).
    Max,
    /// BCN(0,0) ([B] BCNz*, [C]).
    Zero,
}

/// When BCN(0,0)'s exponential back-off returns to (Tmax0, Rmin0) (model reference §2.5, §12 B2).
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

/// Where severe messages are generated (model reference §12 B4).
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
    /// Every BCN reaching the RL re-arms the timeout (model reference §12 D4).
    NoFeedback,
    /// The RL is deleted when no frame was sent on it for the timeout and nothing waits (spec
    /// §12 R4: the meaning [D]'s "RL Timeout = 2 ms" has for FECN in the same table).
    Idle,
}

/// Which event may return BCN(0,0)'s back-off to level 0 under the `reset` policy (model reference §12 B2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResetEvent {
    /// The start of a new stop episode (a BCN(0,0) reaching a running RL) — model reference §12 B2.
    NewEpisode,
    /// A normal (non-severe) BCN reaching a running RL, i.e. the CP's queue was below Qsc at the
    /// sample: the back-off is kept while congestion stays severe (alternative reading of B2).
    Uncongested,
    /// A positive BCN (Fb > 0: the queue below Qeq and not growing) reaching a running RL — a rarer
    /// event than `uncongested` (model reference §12 R8).
    Positive,
    /// The RL released at line rate (model reference §2.3): the flow is no longer controlled (model reference §12 R8).
    Released,
}

/// How BCN(0,0) is coded (`Params::zero_encoding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ZeroEncoding {
    #[default]
    Explicit,
    Legacy,
}

/// Parameters in base units. Every field is required in the IR (the Python side holds defaults).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    // --- congestion point ---
    pub sampling: Sampling,
    /// Bernoulli sampling probability (used by `bernoulli`).
    pub sample_probability: f64,
    /// Mean bytes between samples (used by `random_bytes` and `periodic`).
    pub sample_interval_bytes: u64,
    /// Half-width of the uniform jitter of the periodic interval, bytes.
    pub sample_jitter_bytes: u64,
    pub oversampling: Oversampling,
    /// OS-THRESH multiplier of the sampling rate.
    pub oversampling_factor: f64,
    /// Equilibrium queue Qeq, bytes (converted to pages internally).
    pub qeq_bytes: u64,
    /// Derivative weight W (used at the CP and at the RP: W_rp = W).
    pub w: f64,
    pub severe: Severe,
    /// Severe-congestion threshold Qsc (Qmc for ECM), bytes.
    pub qsc_bytes: u64,
    /// Where severe messages are generated (model reference §12 B4).
    pub severe_trigger: SevereTrigger,
    /// `every_arrival`: minimum time between two severe messages to the same source; 0 = none.
    pub severe_holdoff_ps: u64,
    /// Count and sample data frames refused by buffer admission too (the CP sees the offered
    /// arrivals, with Q = the queue they were refused from); model reference §2.2 says no (false).
    pub sample_refused: bool,
    /// Fb computed at the CP, decrease-only messages, no RL tags (model reference §4.1).
    pub fb_at_cp: bool,
    /// How BCN(0,0) is coded: an explicit type (model reference §12 C4), or `legacy`, the original
    /// message with Qoff = Qdelta = 0 ([C] §8): the CP reports Qoff and Qdelta in whole pages, and a
    /// sample whose two fields are both 0 — likely at equilibrium — reaches its (tagged) source as BCN(0,0).
    #[serde(default)]
    pub zero_encoding: ZeroEncoding,
    /// Quantise the reported Fb to sign + n-bit magnitude (model reference §4.2, §12 E5); null = exact.
    pub quant_bits: Option<u32>,
    /// [C] §4 "enhanced" setting: CPs whose port rate is ≤ this use `slow_cp_sample_probability`
    /// (Bernoulli) and ask for `slow_cp_ru_bps`; null = every CP alike.
    pub slow_cp_rate_bps: Option<u64>,
    pub slow_cp_sample_probability: f64,
    pub slow_cp_ru_bps: f64,
    // --- reaction point ---
    /// Additive-increase gain (per page, times Ru).
    pub gi: f64,
    /// Multiplicative-decrease gain (per page).
    pub gd: f64,
    /// Rate unit Ru, bit/s.
    pub ru_bps: f64,
    /// Lowest rate a decrease can reach, bit/s (model reference §12 G6).
    pub rate_floor_bps: f64,
    /// Rate of a new rate limiter before the first decrease; null = the host's line rate.
    pub initial_rate_bps: Option<f64>,
    /// BCN(0,0): Tmax0 (ps), Rmin0 (bit/s), back-off cap K, reset policy and DELAYED's delay.
    pub tmax_ps: u64,
    pub rmin_bps: f64,
    pub backoff_cap: u32,
    pub reset: Reset,
    pub reset_delay_ps: u64,
    /// Event that applies the reset policy (model reference §12 B2 = `new_episode`).
    pub reset_event: ResetEvent,
    /// Drift: + `drift_bps` every `drift_interval_ps` to every active RL; 0 = off (model reference §2.4).
    pub drift_bps: f64,
    pub drift_interval_ps: u64,
    /// Drift ticks on the global grid (multiples of the interval, every host at once: `false`) or on
    /// a grid shifted by a phase drawn per host (`true`; issue 11 item 7).
    #[serde(default)]
    pub drift_random_phase: bool,
    /// ECM: delete an RL after this long without activity; null = never (model reference §3, §12 R4).
    pub rl_timeout_ps: Option<u64>,
    /// What "without activity" means: no BCN received (§12 D4) or no frame sent (§12 R4, FECN's
    /// meaning of the same words in [D]).
    pub rl_timeout_event: TimeoutEvent,
    /// What one rate limiter belongs to (`RlScope`).
    #[serde(default)]
    pub rl_scope: RlScope,
    /// Self-increase factor I (1/s): R += R·I·τ every τ; null = off (model reference §4.3).
    pub self_increase: Option<f64>,
    pub self_increase_interval_ps: u64,
}

impl Params {
    fn qeq_pages(&self) -> f64 {
        self.qeq_bytes as f64 / PAGE
    }
    /// Largest |Fb| after clamping, pages: (1 + 2W)·Qeq (model reference §2.1).
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
        if self.sampling == Sampling::Bernoulli && !(self.sample_probability > 0.0 && self.sample_probability <= 1.0) {
            return bad("sample_probability", "must be in (0, 1]");
        }
        if self.sampling != Sampling::Bernoulli && self.sample_interval_bytes == 0 {
            return bad("sample_interval_bytes", "must be > 0");
        }
        if self.sample_jitter_bytes >= self.sample_interval_bytes.max(1) && self.sampling == Sampling::Periodic {
            return bad("sample_jitter_bytes", "must be < sample_interval_bytes");
        }
        if !(self.oversampling_factor.is_finite() && self.oversampling_factor >= 1.0) {
            return bad("oversampling_factor", "must be >= 1");
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
        if self.slow_cp_rate_bps.is_some() {
            if !(self.slow_cp_sample_probability > 0.0 && self.slow_cp_sample_probability <= 1.0) {
                return bad("slow_cp_sample_probability", "must be in (0, 1]");
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
            if self.tmax_ps == 0 {
                return bad("tmax_ps", "must be > 0");
            }
            if !(self.rmin_bps.is_finite() && self.rmin_bps > 0.0) {
                return bad("rmin_bps", "must be > 0");
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
// CONTROL LAW — every rule of model reference §2.2–§2.6, §3 and §4 is in this block (pure functions + the
// CP/RP state machines below call only these).
// =================================================================================================

/// Qoff = clamp((Qeq − Q)/64, −Qeq, +Qeq) pages (model reference §2.2, [C] range, §12 C1).
pub fn qoff_pages(qeq_bytes: u64, q_bytes: u64) -> f64 {
    let qeq = qeq_bytes as f64 / PAGE;
    ((qeq_bytes as f64 - q_bytes as f64) / PAGE).clamp(-qeq, qeq)
}

/// Qdelta = clamp((Q − Q_last)/64, −2Qeq, +2Qeq) pages (model reference §2.2).
pub fn qdelta_pages(qeq_bytes: u64, q_bytes: u64, q_last_bytes: u64) -> f64 {
    let qeq = qeq_bytes as f64 / PAGE;
    ((q_bytes as f64 - q_last_bytes as f64) / PAGE).clamp(-2.0 * qeq, 2.0 * qeq)
}

/// n-bit magnitude quantisation of |fb| over [0, Fb_max] (model reference §4.2): returns the reconstructed
/// value q·Fb_max/(2^n − 1) with the sign of `fb`; 0 when the magnitude quantises to 0.
pub fn quantize(fb: f64, fb_max: f64, bits: u32) -> f64 {
    let levels = ((1u64 << bits) - 1) as f64;
    let q = (fb.abs() * levels / fb_max).floor().min(levels);
    fb.signum() * q * fb_max / levels
}

/// 6-bit quantised |Fb| of a negative Fb (0 for Fb ≥ 0), as QCN's CP computes it (model reference §6.1).
pub fn q6(fb: f64, fb_max: f64) -> u32 {
    if fb >= 0.0 {
        0
    } else {
        ((-fb) * 63.0 / fb_max).floor().min(63.0) as u32
    }
}

/// Whether the severe-congestion rule applies at queue `q_bytes` (model reference §2.5: strictly above Qsc).
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

/// The CP message rule for one sample (model reference §2.2, §2.5, §4.1, §4.2).
/// `tagged_by_me`: the frame carries an RL tag with this CP's id.
pub fn cp_decide(p: &Params, q_bytes: u64, q_last_bytes: u64, tagged_by_me: bool) -> Verdict {
    let mut qoff = qoff_pages(p.qeq_bytes, q_bytes);
    let mut qdelta = qdelta_pages(p.qeq_bytes, q_bytes, q_last_bytes);
    if p.zero_encoding == ZeroEncoding::Legacy {
        // [C] §8: the message's Qoff and Qdelta fields are whole pages
        qoff = qoff.round();
        qdelta = qdelta.round();
    }
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
    } else if (p.zero_encoding == ZeroEncoding::Legacy) && qoff == 0.0 && qdelta == 0.0 && !p.fb_at_cp && tagged_by_me {
        // the original code point of BCN(0,0): the RP cannot tell this sample from a stop order
        Verdict::Send(MSG_ZERO, [0.0, 0.0])
    } else if fb > 0.0 && !p.fb_at_cp && tagged_by_me {
        Verdict::Send(MSG_POSITIVE, [qoff, fb]) // positive: only to RLs this CP owns
    } else {
        Verdict::Nothing // Fb = 0 (collides with BCN(0,0), model reference §2.2), untagged, or decrease-only mode
    }
}

/// Multiplicative decrease (model reference §2.3): R ← max(R_floor, R·(1 − Gd·|fb|)).
pub fn decrease(p: &Params, rate: f64, fb: f64) -> f64 {
    (rate * (1.0 - p.gd * fb.abs())).max(p.rate_floor_bps)
}

/// Additive increase (model reference §2.3): R ← R + Gi·fb·Ru (Ru of the CP that sent the message).
pub fn increase(p: &Params, rate: f64, fb: f64, ru_bps: f64) -> f64 {
    rate + p.gi * fb * ru_bps
}

/// BCN(0,0) back-off (model reference §2.5): (Tmax, Rmin) for back-off level k.
pub fn backoff(p: &Params, k: u32) -> (SimTime, f64) {
    let f = (1u64 << k) as f64;
    ((p.tmax_ps as f64 * f) as SimTime, p.rmin_bps / f)
}

/// Whether `event` resets the back-off level (model reference §2.5, §12 B2): the `reset` policy is applied
/// only at the event selected by `reset_event` (a new stop episode by default; with
/// `uncongested`, a normal BCN reaching a running RL).
pub fn backoff_resets_at(p: &Params, event: ResetEvent, now: SimTime, last_restart: Option<SimTime>) -> bool {
    event == p.reset_event && backoff_resets(p, now, last_restart)
}

/// The `reset` policy alone (model reference §2.5, §12 B2).
pub fn backoff_resets(p: &Params, now: SimTime, last_restart: Option<SimTime>) -> bool {
    match p.reset {
        Reset::Always => true,
        Reset::Delayed => last_restart.is_none_or(|t| now.saturating_sub(t) >= p.reset_delay_ps),
        Reset::Never => false,
    }
}

/// Self-increase step (model reference §4.3): R ← R + R·I·τ.
pub fn self_increase_step(rate: f64, i_per_s: f64, tau_ps: u64) -> f64 {
    rate + rate * i_per_s * (tau_ps as f64 / PS_PER_S as f64)
}

// ============================================ end of the control law =============================

/// Congestion point of one egress queue.
pub struct Cp {
    p: Arc<Params>,
    cpid: u32,
    /// Bernoulli probability and Ru of this CP (differ at a slow CP, `slow_cp_*`).
    sample_probability: f64,
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
        let slow = p.slow_cp_rate_bps.is_some_and(|r| port_rate_bps <= r);
        let (sample_probability, ru) = if slow { (p.slow_cp_sample_probability, p.slow_cp_ru_bps) } else { (p.sample_probability, p.ru_bps) };
        Cp { p, cpid, sample_probability, ru, q_last: 0, ctr: 0.0, os_div: 1.0, primed: false, last_severe: Default::default() }
    }

    /// Current oversampling multiplier of the sampling rate.
    fn os_mult(&self, q: u64) -> f64 {
        match self.p.oversampling {
            Oversampling::None => 1.0,
            Oversampling::Thresh => {
                if q > self.p.qeq_bytes {
                    self.p.oversampling_factor
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
            Sampling::Bernoulli => ctx.rng.bernoulli((self.sample_probability * self.os_mult(q)).min(1.0)),
            Sampling::RandomBytes => ctx.rng.bernoulli((l * self.os_mult(q) / self.p.sample_interval_bytes as f64).min(1.0)),
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
            ctx.send(frame.src, CmMsg { gen: 0, kind, flow: frame.flow, cpid: self.cpid, v: [v[0], v[1], self.ru] });
        }
    }
}

impl CongestionPoint for Cp {
    fn hooks(&self) -> u8 {
        super::cp_hooks::ENQUEUE | if self.p.sample_refused { super::cp_hooks::DROP } else { 0 }
    }
    fn on_enqueue(&mut self, ctx: &mut CpCtx, frame: &mut Frame) {
        if !frame.is_data() {
            return; // control frames are never sampled and do not move the byte counter (§2.2)
        }
        self.arrival(ctx, frame);
    }

    fn on_drop(&mut self, ctx: &mut CpCtx, frame: &Frame) {
        // model reference §2.2: refused frames are neither counted nor sampled, unless `sample_refused`
        if self.p.sample_refused && frame.is_data() {
            self.arrival(ctx, frame);
        }
    }
}

mod rp;
#[cfg(test)]
use rp::*;
pub use rp::{Rl, Rp};

#[cfg(test)]
mod tests;
