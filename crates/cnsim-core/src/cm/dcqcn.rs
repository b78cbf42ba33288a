//! `dcqcn`: DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM
//! 2015), the RoCEv2 descendant of QCN (model reference §7).
//!
//! Three roles:
//! * **CP** (switch egress queue): RED-like ECN marking on the instantaneous queue `q` —
//!   `p(q) = 0` for `q ≤ Kmin`, `Pmax·(q − Kmin)/(Kmax − Kmin)` up to `Kmax`, `1` above. Marking is
//!   done when a data frame **starts transmission** (`on_transmit`, the departing frame, queue
//!   including it) by default, as the ns-3 reference switch does at dequeue; marking arriving frames
//!   (`on_enqueue`) is selectable (`mark_on`). Control frames are never marked.
//! * **NP** ([`Reflector`] at the destination): a CE-marked data frame of flow F triggers a 64-B CNP
//!   to F's source unless one was sent for F within the last `N` (50 µs).
//! * **RP** (one object per source host, one limiter per flow): the QCN-derived rate machine with a
//!   DCTCP-like α. Two variants (`variant`):
//!   - `paper` (default): on a CNP `TR ← CR`, `CR ← max(MIN, CR·(1 − α/2))`, `α ← (1−g)α + g`,
//!     byte counter, timer and both stages reset; `α ← (1−g)α` every `K` without CNP; increases
//!     at each timer expiry (period `T_inc`) and each `B` bytes sent: fast recovery while
//!     `max(T, BC) < F`, hyper increase (`TR += R_HAI`) once `min(T, BC) > F`, additive increase
//!     (`TR += R_AI`) otherwise, each followed by `CR ← (TR + CR)/2`, both capped at line rate.
//!   - `mellanox` (reference code, alibaba-edu/High-Precision-Congestion-Control `rdma-hw.cc`):
//!     the first CNP sets `α = 1` (`alpha_init`) and `CR = TR = rate_on_first_cnp·CR`; CNPs only
//!     set flags; α is updated on a fixed `K` grid (`+g` if a CNP arrived in the period); a rate
//!     decrease happens at most once per `rate_decrease_interval` (4 µs grid) if a CNP arrived,
//!     with `TR ← CR` unless the timer stage is 0 and `clamp_target_rate` is off; increases are
//!     timer-only (`T` = 1.5 ms): stage < F fast recovery, = F additive, > F hyper.
//!
//! Implementation notes. Timers cannot be cancelled, so each flow carries generation counters. A
//! limiter is released (flow back to line rate, no timers) once CR is within 1e-6 of line rate
//! with no decrease pending; α keeps decaying while released, applied lazily (the number of
//! whole `K` periods elapsed) when the next CNP re-activates the flow — exactly what the
//! always-running α timer would have done. The Mellanox 4-µs decrease check is scheduled only
//! when a CNP is pending, on the same grid as the reference code's periodic event.
//! CNP payload: `CmMsg::flow` = the marked flow; `v` unused.

use super::{parse_params, CongestionPoint, CpCtx, HostCtx, HostInfo, PortInfo, ReactionPoint, Reflector, Scheme};
use crate::error::ScenarioError;
use crate::frame::{tag, CmMsg, Frame};
use crate::time::SimTime;
use serde::Deserialize;

/// `CmMsg::kind` of a congestion notification packet.
pub const MSG_CNP: u8 = 0;

/// Which DCQCN rate machine runs at the RP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// The SIGCOMM 2015 algorithm (timer and byte counter, α updated on each CNP).
    Paper,
    /// The "Mellanox version" of the ns-3 reference code (timer only, α and decrease on grids).
    Mellanox,
}

/// Where the CP marks CE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MarkOn {
    /// On the departing frame (transmission start), queue including that frame. Default.
    Transmit,
    /// On the arriving frame, after admission.
    Enqueue,
}

/// Parameters of `dcqcn`, base units (bytes, bit/s, ps). Every field is required in the IR; the
/// Python front end fills the defaults of the chosen variant (`cnsim.schemes.dcqcn`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub variant: Variant,
    // --- CP ---
    /// Marking starts above this queue length, bytes (5 KB).
    pub kmin_bytes: u64,
    /// Marking probability reaches `pmax` here and is 1 above, bytes (200 KB).
    pub kmax_bytes: u64,
    /// Marking probability at Kmax (0.01).
    pub pmax: f64,
    pub mark_on: MarkOn,
    // --- NP ---
    /// Minimum spacing of CNPs per flow, ps (50 µs).
    pub cnp_interval_ps: u64,
    // --- RP ---
    /// α gain g (paper 1/256, reference code 1/16).
    pub g: f64,
    /// α at the first CNP (1).
    pub alpha_init: f64,
    /// α-resume period K, ps (55 µs).
    pub alpha_resume_ps: u64,
    /// Rate-increase timer period, ps (paper 55 µs, reference code 1500 µs).
    pub rate_timer_ps: u64,
    /// Byte counter B, bytes (paper 10 MB; 0 = off; the reference code has none).
    pub byte_counter_bytes: u64,
    /// Fast-recovery stages F (5).
    pub fast_recovery_th: u32,
    /// Additive-increase step, bit/s (paper 40 Mb/s, reference code 5 Mb/s).
    pub r_ai_bps: f64,
    /// Hyper-increase step, bit/s (paper [PROPOSED] 400 Mb/s, reference code 50 Mb/s).
    pub r_hai_bps: f64,
    /// Rate floor, bit/s (paper [PROPOSED] 10 Mb/s, reference code 100 Mb/s).
    pub min_rate_bps: f64,
    /// Mellanox: decrease-check period, ps (4 µs).
    pub rate_decrease_interval_ps: u64,
    /// Mellanox: set TR = CR on every decrease, even in timer stage 0 (false).
    pub clamp_target_rate: bool,
    /// Mellanox: CR = TR = this fraction of the current rate at the first CNP (1.0).
    pub rate_on_first_cnp: f64,
    /// A transfer that starts on an idle flow is a new connection (RoCE: a new QP): its rate state
    /// starts afresh at line rate instead of inheriting the previous transfer's (false; absent from
    /// the IR when false).
    #[serde(default)]
    pub new_flow_line_rate: bool,
    /// When > 0: `kmin_bytes`, `kmax_bytes` are given for a port of this rate and `r_ai_bps`,
    /// `r_hai_bps` for a NIC of this rate, each scaled to the actual port or NIC rate (the HPCC
    /// reference's KMAX_MAP / KMIN_MAP and `RATE_AI = 5·bw/25`); 0 = absolute (absent from the IR).
    #[serde(default)]
    pub rate_reference_bps: f64,
}

impl Params {
    /// Defaults of the SIGCOMM 2015 paper (model reference §7): the Python model's, read from
    /// `tests/golden/cm-params.json`.
    #[cfg(test)]
    pub fn paper() -> Self {
        super::testkit::defaults("dcqcn")
    }
    /// Defaults of the ns-3 reference code, "Mellanox version" (model reference §7), as `paper`.
    #[cfg(test)]
    pub fn mellanox() -> Self {
        super::testkit::defaults("dcqcn-mellanox")
    }

    fn check(&self) -> Result<(), ScenarioError> {
        let bad = |f: &str, m: &str| Err(ScenarioError::field(format!("cm.params.{f}"), m.to_string()));
        if self.kmin_bytes > self.kmax_bytes {
            return bad("kmin_bytes", "must be <= kmax_bytes");
        }
        if !(self.pmax > 0.0 && self.pmax <= 1.0) {
            return bad("pmax", "must be in (0, 1]");
        }
        if !(self.g > 0.0 && self.g <= 1.0) {
            return bad("g", "must be in (0, 1]");
        }
        if !(0.0..=1.0).contains(&self.alpha_init) {
            return bad("alpha_init", "must be in [0, 1]");
        }
        for (f, v) in [
            ("alpha_resume_ps", self.alpha_resume_ps),
            ("rate_timer_ps", self.rate_timer_ps),
            ("rate_decrease_interval_ps", self.rate_decrease_interval_ps),
        ] {
            if v == 0 {
                return bad(f, "must be > 0");
            }
        }
        for (f, v) in [("r_ai_bps", self.r_ai_bps), ("r_hai_bps", self.r_hai_bps)] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(f, "must be >= 0");
            }
        }
        if !(self.min_rate_bps.is_finite() && self.min_rate_bps > 0.0) {
            return bad("min_rate_bps", "must be > 0");
        }
        if !(self.rate_on_first_cnp > 0.0 && self.rate_on_first_cnp <= 1.0) {
            return bad("rate_on_first_cnp", "must be in (0, 1]");
        }
        if !(self.rate_reference_bps.is_finite() && self.rate_reference_bps >= 0.0) {
            return bad("rate_reference_bps", "must be >= 0");
        }
        Ok(())
    }

    /// The factor `rate / rate_reference_bps` (1 without a reference rate).
    fn scale(&self, rate_bps: u64) -> f64 {
        if self.rate_reference_bps > 0.0 {
            rate_bps as f64 / self.rate_reference_bps
        } else {
            1.0
        }
    }

    /// The marking thresholds of a port of `rate_bps`.
    pub fn for_port(&self, rate_bps: u64) -> Params {
        let k = self.scale(rate_bps);
        Params { kmin_bytes: (self.kmin_bytes as f64 * k).round() as u64, kmax_bytes: (self.kmax_bytes as f64 * k).round() as u64, ..self.clone() }
    }

    /// The increase steps of a NIC of `rate_bps`.
    pub fn for_nic(&self, rate_bps: u64) -> Params {
        let k = self.scale(rate_bps);
        Params { r_ai_bps: self.r_ai_bps * k, r_hai_bps: self.r_hai_bps * k, ..self.clone() }
    }
}

#[cfg(test)]
impl Default for Params {
    fn default() -> Self {
        Params::paper()
    }
}

/// The built scheme.
pub struct Dcqcn {
    p: Params,
}

impl Scheme for Dcqcn {
    fn name(&self) -> &'static str {
        "dcqcn"
    }
    fn message_types(&self) -> &'static [&'static str] {
        &["cnp"]
    }
    fn congestion_point(&self, port: &PortInfo) -> Option<Box<dyn CongestionPoint>> {
        Some(Box::new(DcqcnCp { p: self.p.for_port(port.rate_bps) }))
    }
    fn reaction_point(&self, host: &HostInfo) -> Option<Box<dyn ReactionPoint>> {
        Some(Box::new(DcqcnRp::new(&self.p.for_nic(host.line_rate_bps), host)))
    }
    fn reflector(&self, _host: &HostInfo) -> Option<Box<dyn Reflector>> {
        Some(Box::new(DcqcnNp { interval: self.p.cnp_interval_ps, last_cnp: Vec::new() }))
    }
}

pub fn build(params: &serde_json::Value) -> Result<Box<dyn Scheme>, ScenarioError> {
    let p: Params = parse_params("dcqcn", params)?;
    p.check()?;
    Ok(Box::new(Dcqcn { p }))
}

// =================================================================================================
// Control law (model reference §7): CP marking curve, NP CNP pacing, RP α and rate machine (both variants).
// =================================================================================================

/// RED-like marking probability of model reference §7 for an instantaneous queue of `q` bytes.
pub fn mark_probability(q: u64, kmin: u64, kmax: u64, pmax: f64) -> f64 {
    if q <= kmin {
        0.0
    } else if q <= kmax {
        pmax * (q - kmin) as f64 / (kmax - kmin) as f64
    } else {
        1.0
    }
}

/// Congestion point: marks CE with probability `p(q)`.
pub struct DcqcnCp {
    p: Params,
}

impl DcqcnCp {
    fn mark(&self, ctx: &mut CpCtx, frame: &mut Frame) {
        if !frame.is_data() {
            return;
        }
        let p = mark_probability(ctx.queue_bytes, self.p.kmin_bytes, self.p.kmax_bytes, self.p.pmax);
        // draw only when the outcome is random, so p ∈ {0, 1} consumes no randomness
        if p >= 1.0 || (p > 0.0 && ctx.rng.uniform() < p) {
            frame.tag.flags |= tag::CE;
        }
    }
}

/// Notification point (receiver NIC): at most one CNP per flow per `interval`.
pub struct DcqcnNp {
    interval: SimTime,
    /// Time of the last CNP per flow (by `FlowId` index); `u64::MAX` = never.
    last_cnp: Vec<SimTime>,
}

impl DcqcnNp {
    /// A CE-marked frame of flow index `flow` arrived at `now`: send a CNP?
    pub fn should_send(&mut self, flow: usize, now: SimTime) -> bool {
        if flow >= self.last_cnp.len() {
            self.last_cnp.resize(flow + 1, u64::MAX);
        }
        let last = self.last_cnp[flow];
        if last == u64::MAX || now.saturating_sub(last) >= self.interval {
            self.last_cnp[flow] = now;
            true
        } else {
            false
        }
    }
}

/// Per-flow RP state.
#[derive(Debug, Clone, Default)]
pub struct FlowRp {
    /// Limiter in force (CR below line rate or recovering).
    pub active: bool,
    /// Has ever received a CNP (α initialised, grids set).
    pub started: bool,
    /// Current rate, bit/s.
    pub cr: f64,
    /// Target rate, bit/s.
    pub tr: f64,
    pub alpha: f64,
    /// Time of the last α event (CNP update or K tick); the next tick is at `alpha_t + K`.
    pub alpha_t: SimTime,
    /// Mellanox: a CNP arrived since the last α tick / since the last decrease check.
    pub alpha_cnp: bool,
    pub dec_cnp: bool,
    /// Mellanox: origin of the decrease-check grid and whether a check is scheduled.
    dec_origin: SimTime,
    dec_pending: bool,
    /// Timer stage and byte-counter stage.
    pub t_stage: u32,
    pub bc_stage: u32,
    /// Bytes sent in the current byte-counter cycle.
    pub bc_bytes: u64,
    rate_gen: u32,
    alpha_gen: u32,
}

const T_RATE: u64 = 0;
const T_ALPHA: u64 = 1;
const T_DEC: u64 = 2;

fn token(kind: u64, local: usize, gen: u32) -> u64 {
    (kind << 60) | ((local as u64) << 32) | gen as u64
}

/// Reaction point of one host.
pub struct DcqcnRp {
    p: Params,
    line: f64,
    pub flows: Vec<FlowRp>,
}

impl DcqcnRp {
    pub fn new(p: &Params, host: &HostInfo) -> Self {
        DcqcnRp { p: p.clone(), line: host.line_rate_bps as f64, flows: vec![FlowRp::default(); host.flows.len()] }
    }

    /// Apply the α ticks (no CNP → `α ← (1−g)α`; Mellanox: the pending CNP flag on the first)
    /// that fell due while the flow's α timer was not running (limiter released).
    fn catch_up_alpha(&mut self, local: usize, now: SimTime) {
        let (k, g, mlx) = (self.p.alpha_resume_ps, self.p.g, self.p.variant == Variant::Mellanox);
        let f = &mut self.flows[local];
        let n = now.saturating_sub(f.alpha_t) / k;
        if n == 0 {
            return;
        }
        let mut ticks = n;
        if mlx && f.alpha_cnp {
            f.alpha = (1.0 - g) * f.alpha + g;
            f.alpha_cnp = false;
            ticks -= 1;
        }
        f.alpha *= libm::pow(1.0 - g, ticks as f64);
        f.alpha_t += n * k;
    }

    /// A CNP for flow `local` (after the response delay).
    fn cnp(&mut self, ctx: &mut HostCtx, local: usize) {
        let now = ctx.now;
        let line = self.line;
        let mut first = false;
        if !self.flows[local].active {
            let f = &mut self.flows[local];
            f.active = true;
            f.cr = line;
            f.tr = line;
            if !f.started {
                first = true;
                f.started = true;
                f.alpha = self.p.alpha_init;
                f.alpha_t = now;
                f.dec_origin = now + self.p.rate_decrease_interval_ps + 1_000; // reference: +1 ns
            } else {
                self.catch_up_alpha(local, now);
            }
            let f = &mut self.flows[local];
            f.t_stage = 0;
            f.bc_stage = 0;
            f.bc_bytes = 0;
            if self.p.variant == Variant::Mellanox {
                if first {
                    // reference code: the first CNP sets the rate; the α timer runs from here
                    f.cr *= self.p.rate_on_first_cnp;
                    f.tr = f.cr;
                }
                let at = f.alpha_t + self.p.alpha_resume_ps;
                self.arm(ctx, T_ALPHA, local, at);
            }
        }
        match self.p.variant {
            Variant::Paper => {
                let (g, min, k, t) = (self.p.g, self.p.min_rate_bps, self.p.alpha_resume_ps, self.p.rate_timer_ps);
                let f = &mut self.flows[local];
                f.tr = f.cr;
                f.cr = (f.cr * (1.0 - f.alpha / 2.0)).max(min);
                f.alpha = (1.0 - g) * f.alpha + g;
                f.alpha_t = now;
                f.t_stage = 0;
                f.bc_stage = 0;
                f.bc_bytes = 0;
                let cr = f.cr;
                self.arm(ctx, T_ALPHA, local, now + k);
                self.arm(ctx, T_RATE, local, now + t);
                ctx.set_rate(local as u32, Some(cr));
            }
            Variant::Mellanox => {
                let f = &mut self.flows[local];
                f.alpha_cnp = !first; // the first CNP initialises α instead (reference code)
                f.dec_cnp = true;
                if !f.dec_pending {
                    f.dec_pending = true;
                    let d = self.p.rate_decrease_interval_ps;
                    let at = if now <= f.dec_origin { f.dec_origin } else { f.dec_origin + (now - f.dec_origin).div_ceil(d) * d };
                    ctx.set_timer(at, token(T_DEC, local, 0));
                }
                let cr = f.cr;
                ctx.set_rate(local as u32, Some(cr));
            }
        }
    }

    /// Mellanox: the periodic α update (`+g` if a CNP arrived in the period).
    fn alpha_tick(&mut self, ctx: &mut HostCtx, local: usize) {
        let (g, k) = (self.p.g, self.p.alpha_resume_ps);
        let f = &mut self.flows[local];
        f.alpha = if f.alpha_cnp && self.p.variant == Variant::Mellanox { (1.0 - g) * f.alpha + g } else { (1.0 - g) * f.alpha };
        f.alpha_cnp = false;
        f.alpha_t = ctx.now;
        self.arm(ctx, T_ALPHA, local, ctx.now + k);
    }

    /// Mellanox: the rate-decrease check (at most once per `rate_decrease_interval`).
    fn decrease_check(&mut self, ctx: &mut HostCtx, local: usize) {
        let (min, t, clamp) = (self.p.min_rate_bps, self.p.rate_timer_ps, self.p.clamp_target_rate);
        let f = &mut self.flows[local];
        f.dec_pending = false;
        if !f.dec_cnp {
            return;
        }
        if clamp || f.t_stage != 0 {
            f.tr = f.cr;
        }
        f.cr = (f.cr * (1.0 - f.alpha / 2.0)).max(min);
        f.t_stage = 0;
        f.dec_cnp = false;
        let cr = f.cr;
        self.arm(ctx, T_RATE, local, ctx.now + t);
        ctx.set_rate(local as u32, Some(cr));
    }

    /// Rate-increase timer expiry.
    fn rate_timer(&mut self, ctx: &mut HostCtx, local: usize) {
        let t = self.p.rate_timer_ps;
        self.arm(ctx, T_RATE, local, ctx.now + t);
        match self.p.variant {
            Variant::Paper => {
                self.flows[local].t_stage += 1;
                self.increase(local);
            }
            Variant::Mellanox => {
                self.increase(local);
                self.flows[local].t_stage += 1;
            }
        }
        self.after_increase(ctx, local);
    }

    /// Paper: byte-counter accounting of a sent data frame.
    fn bytes_sent(&mut self, ctx: &mut HostCtx, local: usize, len: u32) {
        let b = self.p.byte_counter_bytes;
        let f = &mut self.flows[local];
        if !f.active || b == 0 || self.p.variant != Variant::Paper {
            return;
        }
        f.bc_bytes += len as u64;
        if f.bc_bytes >= b {
            f.bc_bytes -= b;
            f.bc_stage += 1;
            self.increase(local);
            self.after_increase(ctx, local);
        }
    }

    /// The increase step of the variant (model reference §7 `increase()`; reference `RateIncEventMlx`).
    fn increase(&mut self, local: usize) {
        let (th, ai, hai, line) = (self.p.fast_recovery_th, self.p.r_ai_bps, self.p.r_hai_bps, self.line);
        let f = &mut self.flows[local];
        match self.p.variant {
            Variant::Paper => {
                let (t, b) = (f.t_stage, f.bc_stage);
                if t.max(b) < th {
                    // fast recovery
                } else if t.min(b) > th {
                    f.tr += hai; // hyper increase
                } else {
                    f.tr += ai; // additive increase
                }
                f.cr = (f.tr + f.cr) / 2.0;
                f.tr = f.tr.min(line);
                f.cr = f.cr.min(line);
            }
            Variant::Mellanox => {
                if f.t_stage < th {
                    // fast recovery
                } else if f.t_stage == th {
                    f.tr = (f.tr + ai).min(line); // active increase
                } else {
                    f.tr = (f.tr + hai).min(line); // hyper increase
                }
                f.cr = f.cr / 2.0 + f.tr / 2.0;
            }
        }
    }

    /// Push the new rate, or release the limiter once CR is (within 1e-6) at line rate.
    fn after_increase(&mut self, ctx: &mut HostCtx, local: usize) {
        let line = self.line;
        let f = &mut self.flows[local];
        if f.cr >= line * (1.0 - 1e-6) && !f.dec_cnp {
            f.active = false;
            f.cr = line;
            f.tr = line;
            f.rate_gen = f.rate_gen.wrapping_add(1);
            f.alpha_gen = f.alpha_gen.wrapping_add(1);
            ctx.set_rate(local as u32, None);
        } else {
            let cr = f.cr;
            ctx.set_rate(local as u32, Some(cr));
        }
    }

    fn arm(&mut self, ctx: &mut HostCtx, kind: u64, local: usize, at: SimTime) {
        let f = &mut self.flows[local];
        let gen = if kind == T_RATE {
            f.rate_gen = f.rate_gen.wrapping_add(1);
            f.rate_gen
        } else {
            f.alpha_gen = f.alpha_gen.wrapping_add(1);
            f.alpha_gen
        };
        ctx.set_timer(at, token(kind, local, gen));
    }
}

// =================================================================================================
// End of the control law.
// =================================================================================================

impl CongestionPoint for DcqcnCp {
    fn hooks(&self) -> u8 {
        match self.p.mark_on {
            MarkOn::Enqueue => crate::cm::cp_hooks::ENQUEUE,
            MarkOn::Transmit => crate::cm::cp_hooks::TRANSMIT,
        }
    }
    fn on_enqueue(&mut self, ctx: &mut CpCtx, frame: &mut Frame) {
        if self.p.mark_on == MarkOn::Enqueue {
            self.mark(ctx, frame);
        }
    }
    fn on_transmit(&mut self, ctx: &mut CpCtx, frame: &mut Frame) {
        if self.p.mark_on == MarkOn::Transmit {
            self.mark(ctx, frame);
        }
    }
}

impl Reflector for DcqcnNp {
    fn wants_data(&self, frame: &Frame) -> bool {
        frame.tag.flags & tag::CE != 0 // an unmarked frame never leads to a CNP
    }
    fn on_queue_close(&mut self, flow: crate::ids::FlowId) {
        if let Some(t) = self.last_cnp.get_mut(flow.idx()) {
            *t = u64::MAX; // the next queue of this slot is a new QP: its first CNP is not held back
        }
    }
    fn on_data(&mut self, ctx: &mut HostCtx, frame: &Frame) {
        if frame.tag.flags & tag::CE != 0 && self.should_send(frame.flow.idx(), ctx.now) {
            ctx.send(frame.src, CmMsg { gen: 0, kind: MSG_CNP, flow: frame.flow, cpid: 0, v: [0.0; 3] });
        }
    }
}

impl ReactionPoint for DcqcnRp {
    fn on_feedback(&mut self, ctx: &mut HostCtx, msg: &CmMsg) {
        if msg.kind != MSG_CNP {
            return;
        }
        if let Some(local) = ctx.local_of(msg.flow) {
            self.cnp(ctx, local as usize);
        }
    }
    fn on_transmit(&mut self, ctx: &mut HostCtx, local: u32, frame: &mut Frame) {
        self.bytes_sent(ctx, local as usize, frame.size);
    }
    fn on_timer(&mut self, ctx: &mut HostCtx, token: u64) {
        let kind = token >> 60;
        let local = ((token >> 32) & 0x0FFF_FFFF) as usize;
        let gen = token as u32;
        let Some(f) = self.flows.get(local) else { return };
        if !f.active {
            return;
        }
        match kind {
            T_RATE if f.rate_gen == gen => self.rate_timer(ctx, local),
            T_ALPHA if f.alpha_gen == gen => self.alpha_tick(ctx, local),
            T_DEC if f.dec_pending => self.decrease_check(ctx, local),
            _ => {} // stale
        }
    }
    fn rate_bps(&self, local: u32) -> Option<f64> {
        self.flows.get(local as usize).filter(|f| f.active).map(|f| f.cr)
    }
    fn rate_is_limiter(&self) -> bool {
        true // every change of CR (or release) is followed by set_rate
    }
    fn wants_flow_start(&self) -> bool {
        self.p.new_flow_line_rate
    }
    fn on_flow_start(&mut self, ctx: &mut HostCtx, local: u32) {
        // a new connection on an idle flow: fresh state at line rate (older timers go stale)
        if self.forget(local as usize) {
            ctx.set_rate(local, None);
        }
    }
    /// A transfer's own queue (a new QP): fresh state at line rate.
    fn on_queue_open(&mut self, _ctx: &mut HostCtx, local: u32) {
        if local as usize >= self.flows.len() {
            self.flows.resize(local as usize + 1, FlowRp::default());
        }
        self.forget(local as usize);
    }
    fn on_queue_close(&mut self, _ctx: &mut HostCtx, local: u32) {
        self.forget(local as usize);
    }
}

impl DcqcnRp {
    /// Fresh state at `local` (older timers go stale); whether it had a limiter in force.
    fn forget(&mut self, local: usize) -> bool {
        let Some(f) = self.flows.get_mut(local) else { return false };
        let was_active = f.active;
        *f = FlowRp { rate_gen: f.rate_gen.wrapping_add(1), alpha_gen: f.alpha_gen.wrapping_add(1), ..FlowRp::default() };
        was_active
    }
}

#[cfg(test)]
mod tests;
