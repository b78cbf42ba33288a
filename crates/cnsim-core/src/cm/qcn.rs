//! `qcn`: Quantized Congestion Notification as standardised in IEEE 802.1Qau-2010 (model reference §6).
//!
//! * **CP** (one per switch egress queue, model reference §6.1). On every admitted *data* frame a byte
//!   countdown `time_to_mark` is decremented; when it goes negative the queue is sampled:
//!   `Fb = −(Qoff + w·Qdelta)` with `Qoff = Q − Qeq`, `Qdelta = Q − Q_old`, clamped to
//!   `[−(1+2w)·Qeq, 0]` and quantised to `q = min(63, ⌊−Fb·63/((1+2w)·Qeq)⌋)` (6 bits). If `q > 0` a
//!   64-B CNM carrying `q` goes back to the sampled frame's source. `Q_old` is updated at every
//!   sample (message or not) and the countdown is reloaded from the 8-entry mark table indexed by
//!   `q div 8`, randomised by ±15 %. Control frames are never sampled and do not count.
//! * **RP** (one object per source host; one rate limiter (RL) per flow, model reference §6.2, §12 G4). An RL
//!   is activated by the first CNM with `q > 0` (CR = TR = line rate), then every CNM cuts
//!   `CR ← CR·max(0.5, 1 − Gd·q)` (≥ MIN_RATE). Recovery is driven by a byte counter (150 KB
//!   cycles, 75 KB after the fast-recovery threshold) and a timer (period `T`, `T/2` after the
//!   threshold), both randomised ±15 %: each cycle end runs `self_increase` — fast recovery
//!   (`CR ← (CR+TR)/2`), active increase (`TR += R_AI`) once either counter is past the threshold,
//!   hyper-active increase (`TR += R_HAI·(min − TH)`) once both are, with the deep-cut guard
//!   `TR ← TR/8` on the first cycle after a cut below TR/10. The RL is released (flow back to line
//!   rate, unlimited) when a frame is sent with CR at line rate and nothing queued behind it.
//!
//! CNM payload (`CmMsg::v`): `[q, Qoff (bytes), Qdelta (bytes)]`; `CmMsg::flow` = sampled flow.
//!
//! Interpretations (model reference §12): timer period `T` is a parameter, default 15 ms (Q1: pseudo-code /
//! standard; the Allerton paper uses 10 ms, ns-3 models 1.5 ms); stage boundary `> TH` (Q2, the
//! pseudo-code form, 5 fast-recovery cycles) with the ns-3 `>= TH` form selectable; Qeq = 26 KB (Q3).

use super::{parse_params, CongestionPoint, CpCtx, HostCtx, HostInfo, PerFlow, PortInfo, ReactionPoint, Scheme};
use crate::error::ScenarioError;
use crate::frame::{CmMsg, Frame};
use crate::rng::Stream;
use serde::Deserialize;

/// `CmMsg::kind` of a congestion notification message.
pub const MSG_CNM: u8 = 0;

/// How the byte-counter / timer stage counts are compared with `fast_recovery_th` (model reference §12 Q2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StageBoundary {
    /// Pseudo-code / OMNeT form: a counter is past the threshold when `count > TH`
    /// (5 fast-recovery cycles with TH = 5). Default.
    Gt,
    /// ns-3 form: past the threshold when `count >= TH` (4 fast-recovery cycles).
    Ge,
}

/// Parameters of `qcn`, in base units (bytes, bit/s, ps). Every field is required in the IR; the
/// Python front end fills the defaults (model reference §6; `cnsim.schemes.qcn`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    // --- CP (model reference §6.1) ---
    /// Equilibrium queue length Qeq, bytes (26 KB, §12 Q3).
    pub qeq_bytes: u64,
    /// Weight w of Qdelta in Fb (2).
    pub w: f64,
    /// Bits of the quantised |Fb| (6 → q in 0..=63).
    pub fb_bits: u32,
    /// Sampling interval per eighth of the q range, bytes: {150, 75, 50, 37.5, 30, 25, 21.5, 18.5} KB.
    pub mark_table_bytes: [f64; 8],
    /// Relative randomisation of each sampling reload, uniform in ±`sample_jitter` (0.15).
    pub sample_jitter: f64,
    // --- RP (model reference §6.2) ---
    /// Decrease gain Gd (1/128: q = 63 cuts by 49 %).
    pub gd: f64,
    /// Lower bound of the decrease factor (0.5).
    pub min_dec_factor: f64,
    /// Floor of the current rate, bit/s (10 Mb/s).
    pub min_rate_bps: f64,
    /// Byte-counter cycle BC_LIMIT, bytes (150 KB; BC_LIMIT/2 past the threshold).
    pub bc_limit_bytes: f64,
    /// Fast-recovery threshold TH (5).
    pub fast_recovery_th: u32,
    /// Active-increase step R_AI, bit/s (5 Mb/s).
    pub r_ai_bps: f64,
    /// Hyper-active-increase step R_HAI, bit/s (50 Mb/s).
    pub r_hai_bps: f64,
    /// RP timer period T, ps (15 ms; T/2 past the threshold), §12 Q1.
    pub timer_period_ps: u64,
    /// Relative randomisation of byte-counter and timer reloads, ±`rp_jitter` (0.15).
    pub rp_jitter: f64,
    /// Stage boundary form (§12 Q2).
    pub stage_boundary: StageBoundary,
}

#[cfg(test)]
impl Default for Params {
    /// The Python model's defaults (model reference §6), read from `tests/golden/cm-params.json`.
    fn default() -> Self {
        super::testkit::defaults("qcn")
    }
}

impl Params {
    fn check(&self) -> Result<(), ScenarioError> {
        let bad = |f: &str, m: &str| Err(ScenarioError::field(format!("cm.params.{f}"), m.to_string()));
        if self.qeq_bytes == 0 {
            return bad("qeq_bytes", "must be > 0");
        }
        if !(self.w.is_finite() && self.w >= 0.0) {
            return bad("w", "must be a finite number >= 0");
        }
        if !(3..=16).contains(&self.fb_bits) {
            return bad("fb_bits", "must be in 3..=16");
        }
        if self.mark_table_bytes.iter().any(|b| !(b.is_finite() && *b > 0.0)) {
            return bad("mark_table_bytes", "every entry must be > 0");
        }
        if !(0.0..1.0).contains(&self.sample_jitter) {
            return bad("sample_jitter", "must be in [0, 1)");
        }
        if !(0.0..1.0).contains(&self.rp_jitter) {
            return bad("rp_jitter", "must be in [0, 1)");
        }
        if !(self.gd.is_finite() && self.gd > 0.0) {
            return bad("gd", "must be > 0");
        }
        if !(self.min_dec_factor > 0.0 && self.min_dec_factor <= 1.0) {
            return bad("min_dec_factor", "must be in (0, 1]");
        }
        if !(self.min_rate_bps.is_finite() && self.min_rate_bps > 0.0) {
            return bad("min_rate_bps", "must be > 0");
        }
        if !(self.bc_limit_bytes.is_finite() && self.bc_limit_bytes > 0.0) {
            return bad("bc_limit_bytes", "must be > 0");
        }
        if self.fast_recovery_th == 0 {
            return bad("fast_recovery_th", "must be >= 1");
        }
        if !(self.r_ai_bps.is_finite() && self.r_ai_bps >= 0.0) {
            return bad("r_ai_bps", "must be >= 0");
        }
        if !(self.r_hai_bps.is_finite() && self.r_hai_bps >= 0.0) {
            return bad("r_hai_bps", "must be >= 0");
        }
        if self.timer_period_ps < 2 {
            return bad("timer_period_ps", "must be >= 2 ps");
        }
        Ok(())
    }
    /// Largest quantised value, 2^fb_bits − 1 (63).
    pub fn q_max(&self) -> u32 {
        (1u32 << self.fb_bits) - 1
    }
}

/// The built scheme.
pub struct Qcn {
    p: Params,
}

impl Scheme for Qcn {
    fn name(&self) -> &'static str {
        "qcn"
    }
    fn message_types(&self) -> &'static [&'static str] {
        &["cnm"]
    }
    fn congestion_point(&self, port: &PortInfo) -> Option<Box<dyn CongestionPoint>> {
        Some(Box::new(QcnCp::new(&self.p, port.cpid)))
    }
    fn reaction_point(&self, host: &HostInfo) -> Option<Box<dyn ReactionPoint>> {
        Some(Box::new(QcnRp::new(&self.p, host)))
    }
}

pub fn build(params: &serde_json::Value) -> Result<Box<dyn Scheme>, ScenarioError> {
    let p: Params = parse_params("qcn", params)?;
    p.check()?;
    Ok(Box::new(Qcn { p }))
}

// =================================================================================================
// Control law (model reference §6.1 CP, §6.2 RP). Everything below this banner up to the next one is the
// algorithm; the trait impls further down only route engine hooks into it.
// =================================================================================================

/// CP feedback of model reference §6.1 for a queue of `qlen` bytes whose length at the previous sample was
/// `qlen_old`: returns `(Fb, q, Qoff, Qdelta)` with Fb clamped to `[−(1+2w)·Qeq, 0]` and
/// `q = min(q_max, ⌊−Fb·q_max / ((1+2w)·Qeq)⌋)`.
pub fn feedback(qlen: f64, qlen_old: f64, q_eq: f64, w: f64, q_max: u32) -> (f64, u32, f64, f64) {
    let qoff = qlen - q_eq;
    let qdelta = qlen - qlen_old;
    let fb_span = (1.0 + 2.0 * w) * q_eq;
    let fb = (-(qoff + w * qdelta)).clamp(-fb_span, 0.0);
    let q = ((-fb * q_max as f64 / fb_span).floor() as u32).min(q_max);
    (fb, q, qoff, qdelta)
}

/// Index into the 8-entry mark table for quantised value `q` (`q div 8` for 6 bits).
pub fn mark_index(q: u32, q_max: u32) -> usize {
    ((q as u64 * 8) / (q_max as u64 + 1)).min(7) as usize
}

/// QCN congestion point state (per egress queue).
pub struct QcnCp {
    cpid: u32,
    q_eq: f64,
    w: f64,
    q_max: u32,
    table: [f64; 8],
    jitter: f64,
    /// Queue length at the previous sampling instant, bytes.
    qlen_old: f64,
    /// Bytes of data arrivals until the next sample; `None` until the first data frame (the first
    /// reload uses the q = 0 entry, randomised).
    time_to_mark: Option<f64>,
}

impl QcnCp {
    pub fn new(p: &Params, cpid: u32) -> Self {
        QcnCp {
            cpid,
            q_eq: p.qeq_bytes as f64,
            w: p.w,
            q_max: p.q_max(),
            table: p.mark_table_bytes,
            jitter: p.sample_jitter,
            qlen_old: 0.0,
            time_to_mark: None,
        }
    }

    /// Next sampling interval for quantised feedback `q`: `MARK_TABLE[q div 8]·U(1−j, 1+j)`.
    fn reload(&self, q: u32, rng: &mut Stream) -> f64 {
        let base = self.table[mark_index(q, self.q_max)];
        if self.jitter > 0.0 {
            base * rng.range_f64(1.0 - self.jitter, 1.0 + self.jitter)
        } else {
            base
        }
    }

    /// A data frame of `len` bytes was admitted and the queue is now `qlen` bytes. Returns the
    /// CNM `(q, Qoff, Qdelta)` to send to the frame's source, if any (model reference §6.1).
    pub fn arrival(&mut self, qlen: f64, len: u32, rng: &mut Stream) -> Option<(u32, f64, f64)> {
        let ttm = match self.time_to_mark {
            Some(t) => t,
            None => self.reload(0, rng),
        } - len as f64;
        if ttm >= 0.0 {
            self.time_to_mark = Some(ttm);
            return None;
        }
        let (_fb, q, qoff, qdelta) = feedback(qlen, self.qlen_old, self.q_eq, self.w, self.q_max);
        self.qlen_old = qlen; // at every sampling instant, message or not
        self.time_to_mark = Some(self.reload(q, rng));
        (q > 0).then_some((q, qoff, qdelta))
    }
}

/// State of one rate limiter (model reference §6.2).
#[derive(Debug, Clone, Default)]
pub struct Rl {
    pub active: bool,
    /// Current rate CR, bit/s.
    pub cr: f64,
    /// Target rate TR, bit/s.
    pub tr: f64,
    /// Bytes left in the current byte-counter cycle.
    pub tx_bcount: f64,
    /// Byte-counter stage (cycles completed since the last CNM).
    pub si_count: u32,
    /// Timer stage (expiries since the last CNM).
    pub timer_scount: u32,
    /// Generation of the pending timer (timers cannot be cancelled: stale tokens are ignored).
    gen: u32,
}

/// QCN reaction point of one host: one [`Rl`] per flow of the host, by local index. `repr(C)`:
/// what a transmission reads (the line rate, the limiters' count and the first flow's limiter)
/// fills the record's first cache line, before the parameters: in three lines (the limiter was
/// aligned to its own, the line rate after the vector) a paced frame's transmission missed the
/// cache ≈ 3 times here (cachegrind, QCN fan-in-100).
#[repr(C, align(64))]
pub struct QcnRp {
    line: f64,
    pub rls: PerFlow<Rl>,
    p: Params,
}

const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(offset_of!(QcnRp, rls) + offset_of!(PerFlow<Rl>, first) + size_of::<Rl>() <= 64);
};

impl QcnRp {
    pub fn new(p: &Params, host: &HostInfo) -> Self {
        QcnRp { line: host.line_rate_bps as f64, rls: PerFlow::new(host.flows.len()), p: p.clone() }
    }

    fn jitter(&self, rng: &mut Stream) -> f64 {
        if self.p.rp_jitter > 0.0 {
            rng.range_f64(1.0 - self.p.rp_jitter, 1.0 + self.p.rp_jitter)
        } else {
            1.0
        }
    }

    /// Is a stage counter past the fast-recovery threshold (model reference §6.2, §12 Q2)?
    fn past(&self, count: u32) -> bool {
        match self.p.stage_boundary {
            StageBoundary::Gt => count > self.p.fast_recovery_th,
            StageBoundary::Ge => count >= self.p.fast_recovery_th,
        }
    }

    /// Number of hyper-active steps for `min(si_count, timer_scount) = m` (both past TH).
    fn hai_steps(&self, m: u32) -> f64 {
        let th = self.p.fast_recovery_th;
        match self.p.stage_boundary {
            StageBoundary::Gt => (m - th) as f64,
            StageBoundary::Ge => (m + 1 - th) as f64,
        }
    }

    /// `self_increase()` of model reference §6.2: the rate increase at the end of a byte-counter or timer cycle.
    fn self_increase(&mut self, local: usize) {
        let (si, ti) = (self.rls[local].si_count, self.rls[local].timer_scount);
        let ri = if self.past(si) && self.past(ti) {
            self.p.r_hai_bps * self.hai_steps(si.min(ti)) // hyper-active increase
        } else if self.past(si) || self.past(ti) {
            self.p.r_ai_bps // active increase
        } else {
            0.0 // fast recovery
        };
        let line = self.line;
        let rl = &mut self.rls[local];
        if (si == 1 || ti == 1) && rl.tr > 10.0 * rl.cr {
            rl.tr /= 8.0; // deep-cut guard
        } else {
            rl.tr += ri;
        }
        rl.cr = line.min((rl.cr + rl.tr) / 2.0); // averaging step
    }

    /// A CNM with quantised feedback `q` for flow `local` (model reference §6.2 "on CNM").
    fn cnm(&mut self, ctx: &mut HostCtx, local: usize, q: u32) {
        let (bc, line) = (self.p.bc_limit_bytes, self.line);
        let rl = &mut self.rls[local];
        if !rl.active {
            if q == 0 {
                return;
            }
            *rl = Rl { active: true, cr: line, tr: line, tx_bcount: bc, si_count: 0, timer_scount: 0, gen: rl.gen };
        }
        if rl.si_count != 0 {
            // not in the first fast-recovery cycle: remember where we were
            rl.tr = rl.cr;
            rl.tx_bcount = bc;
        }
        rl.si_count = 0;
        rl.timer_scount = 0;
        let factor = self.p.min_dec_factor.max(1.0 - self.p.gd * q as f64);
        rl.cr = (rl.cr * factor).max(self.p.min_rate_bps);
        let cr = rl.cr;
        self.restart_timer(ctx, local, self.p.timer_period_ps as f64);
        ctx.set_rate(local as u32, Some(cr));
    }

    /// A data frame of `len` bytes of flow `local` starts at the NIC (model reference §6.2 "after each frame").
    fn sent(&mut self, ctx: &mut HostCtx, local: usize, len: u32) {
        let rl = &mut self.rls[local];
        if !rl.active {
            return;
        }
        if rl.cr >= self.line && !ctx.has_backlog(local as u32) {
            return self.release(ctx, local);
        }
        rl.tx_bcount -= len as f64;
        if rl.tx_bcount < 0.0 {
            self.byte_count_cycle(ctx, local);
        }
    }

    /// [`Self::sent`] at line rate with nothing waiting: the flow is sent unlimited. Out of line,
    /// as [`Self::byte_count_cycle`].
    #[inline(never)]
    fn release(&mut self, ctx: &mut HostCtx, local: usize) {
        let rl = &mut self.rls[local];
        rl.active = false;
        rl.gen = rl.gen.wrapping_add(1);
        ctx.set_rate(local as u32, None);
    }

    /// [`Self::sent`] when the byte counter runs out (once per 150 KB or so): a new cycle and a
    /// self-increase. Out of line: inlined, the registers it needs were saved and restored on
    /// every paced frame's hook call (QCN fan-in-100 100 ms: 191.82 -> 191.46 M instructions).
    #[inline(never)]
    fn byte_count_cycle(&mut self, ctx: &mut HostCtx, local: usize) {
        let (bc, th) = (self.p.bc_limit_bytes, self.p.fast_recovery_th);
        let rl = &mut self.rls[local];
        rl.si_count += 1;
        let base = if rl.si_count < th { bc } else { bc / 2.0 };
        let j = self.jitter(ctx.rng);
        self.rls[local].tx_bcount = base * j;
        self.self_increase(local);
        ctx.set_rate(local as u32, Some(self.rls[local].cr));
    }

    /// The RP timer of flow `local` expired (model reference §6.2 "on timer expiry").
    fn timer(&mut self, ctx: &mut HostCtx, local: usize) {
        let (t, th) = (self.p.timer_period_ps as f64, self.p.fast_recovery_th);
        self.rls[local].timer_scount += 1;
        self.self_increase(local);
        ctx.set_rate(local as u32, Some(self.rls[local].cr));
        let base = if self.rls[local].timer_scount < th { t } else { t / 2.0 };
        let period = base * self.jitter(ctx.rng);
        self.restart_timer(ctx, local, period);
    }

    fn restart_timer(&mut self, ctx: &mut HostCtx, local: usize, period_ps: f64) {
        let rl = &mut self.rls[local];
        rl.gen = rl.gen.wrapping_add(1);
        let at = ctx.now + (period_ps.round() as u64).max(1);
        ctx.set_timer(at, token(local, rl.gen));
    }
}

// =================================================================================================
// End of the control law.
// =================================================================================================

fn token(local: usize, gen: u32) -> u64 {
    ((local as u64) << 32) | gen as u64
}

impl CongestionPoint for QcnCp {
    fn hooks(&self) -> u8 {
        crate::cm::cp_hooks::ENQUEUE
    }
    fn on_enqueue(&mut self, ctx: &mut CpCtx, frame: &mut Frame) {
        if !frame.is_data() {
            return; // control frames are never sampled (model reference §11)
        }
        if let Some((q, qoff, qdelta)) = self.arrival(ctx.queue_bytes as f64, frame.size, ctx.rng) {
            let msg = CmMsg { gen: 0, kind: MSG_CNM, flow: frame.flow, cpid: self.cpid, v: [q as f64, qoff, qdelta] };
            ctx.send(frame.src, msg);
        }
    }
}

impl ReactionPoint for QcnRp {
    fn on_feedback(&mut self, ctx: &mut HostCtx, msg: &CmMsg) {
        if msg.kind != MSG_CNM {
            return;
        }
        if let Some(local) = ctx.local_of(msg.flow) {
            self.cnm(ctx, local as usize, msg.v[0].max(0.0) as u32);
        }
    }
    fn on_transmit(&mut self, ctx: &mut HostCtx, local: u32, frame: &mut Frame) {
        self.sent(ctx, local as usize, frame.size);
    }
    fn on_timer(&mut self, ctx: &mut HostCtx, token: u64) {
        let (local, gen) = ((token >> 32) as usize, token as u32);
        match self.rls.get(local) {
            Some(rl) if rl.active && rl.gen == gen => self.timer(ctx, local),
            _ => {} // stale timer (restarted, or RL released)
        }
    }
    fn rate_bps(&self, local: u32) -> Option<f64> {
        self.rls.get(local as usize).filter(|rl| rl.active).map(|rl| rl.cr)
    }
    fn rate_is_limiter(&self) -> bool {
        true // every change of CR (or release) is followed by set_rate
    }
    /// A transfer's own queue: no limiter; the slot's generation moves on (stale timers).
    fn on_queue_open(&mut self, _ctx: &mut HostCtx, local: u32) {
        self.rls.grow_to(local as usize + 1);
        self.forget(local as usize);
    }
    fn on_queue_close(&mut self, _ctx: &mut HostCtx, local: u32) {
        self.forget(local as usize);
    }
}

impl QcnRp {
    /// No limiter at `local`, its pending timer stale.
    fn forget(&mut self, local: usize) {
        let gen = self.rls[local].gen.wrapping_add(1);
        self.rls[local] = Rl { gen, ..Rl::default() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cm::testkit::{data_frame, TestHost};
    use crate::ids::FlowId;

    const G10: f64 = 10e9;

    /// A hand-made host context: the RP is driven directly, without the engine.
    type Host = TestHost;
    fn new_host() -> Host {
        TestHost::new(FlowId(7), 42)
    }

    fn data(size: u32) -> Frame {
        data_frame(1, 2, 7, size)
    }

    fn cnm(q: u32) -> CmMsg {
        CmMsg { gen: 0, kind: MSG_CNM, flow: FlowId(7), cpid: 1, v: [q as f64, 0.0, 0.0] }
    }

    fn rp(p: &Params, h: &Host) -> QcnRp {
        QcnRp::new(p, &h.info)
    }

    #[test]
    fn the_reported_rate_is_always_the_limiter_rate() {
        // the rate series reads the flow's limiter instead of rate_bps (rate_is_limiter)
        let p = Params::default();
        let mut h = new_host();
        let mut r = rp(&p, &h);
        crate::cm::testkit::check_rate_is_limiter(&mut r, &mut h, 20_000, |rng| cnm(rng.below(64) as u32));
    }

    #[test]
    fn decrease_for_q63_is_cr_times_1_minus_63_over_128() {
        let p = Params::default();
        let mut h = new_host();
        let mut r = rp(&p, &h);
        r.on_feedback(&mut h.ctx(), &cnm(63));
        let rl = &r.rls[0];
        assert!(rl.active);
        assert_eq!(rl.cr, G10 * (1.0 - 63.0 / 128.0));
        assert!((rl.cr / G10 - 0.5078125).abs() < 1e-15);
        assert_eq!(rl.tr, G10, "first cycle after activation keeps TR at line rate");
        assert_eq!(h.rates.last().unwrap().rate_bps, Some(rl.cr));
        // a second cut from the new rate, in the same (first) fast-recovery cycle
        let cr1 = rl.cr;
        r.on_feedback(&mut h.ctx(), &cnm(63));
        assert_eq!(r.rls[0].cr, cr1 * (1.0 - 63.0 / 128.0));
        // the decrease is floored at MIN_DEC_FACTOR = 0.5 when Gd·q > 0.5 (larger Gd)
        let p2 = Params { gd: 1.0 / 64.0, ..Params::default() };
        let mut r2 = rp(&p2, &h);
        r2.on_feedback(&mut h.ctx(), &cnm(63));
        assert_eq!(r2.rls[0].cr, G10 * 0.5);
        // q = 0 never activates an RL
        let mut r3 = rp(&p, &h);
        r3.on_feedback(&mut h.ctx(), &cnm(0));
        assert!(!r3.rls[0].active && r3.rate_bps(0).is_none());
    }

    #[test]
    fn min_rate_floor() {
        let p = Params { min_rate_bps: 4e9, ..Params::default() };
        let mut h = new_host();
        let mut r = rp(&p, &h);
        r.on_feedback(&mut h.ctx(), &cnm(63));
        assert_eq!(r.rls[0].cr, 5.078125e9);
        r.on_feedback(&mut h.ctx(), &cnm(63));
        assert_eq!(r.rls[0].cr, 4e9);
    }

    /// Send 1500-B frames until the byte-counter stage changes; returns the number of frames.
    fn send_until_stage_change(r: &mut QcnRp, h: &mut Host) -> u32 {
        let si = r.rls[0].si_count;
        let mut n = 0;
        while r.rls[0].si_count == si {
            let mut f = data(1500);
            r.on_transmit(&mut h.ctx(), 0, &mut f);
            n += 1;
            assert!(n < 1000);
        }
        n
    }

    /// Model reference §10 "QCN recovery": one CNM, then five fast-recovery halvings toward TR (one per
    /// 150-KB cycle), then active increase (TR += 5 Mb/s per 75-KB cycle); hyper-active only once
    /// the timer stage has also passed 5.
    #[test]
    fn recovery_sequence_after_one_cnm() {
        let p = Params::default();
        let mut h = new_host();
        let mut r = rp(&p, &h);
        r.on_feedback(&mut h.ctx(), &cnm(63));
        let tr = G10;
        let cr0 = G10 * (1.0 - 63.0 / 128.0);
        // first cycle: exactly BC_LIMIT = 150 000 B → the 101st 1500-B frame drives it below 0
        assert_eq!(send_until_stage_change(&mut r, &mut h), 101);
        let mut gap = tr - cr0;
        for k in 1..=5u32 {
            if k > 1 {
                let n = send_until_stage_change(&mut r, &mut h);
                // reload BC_LIMIT·U(0.85, 1.15) for si < 5, BC_LIMIT/2 after
                assert!((85..=116).contains(&n), "cycle {k}: {n} frames");
            }
            gap /= 2.0;
            let rl = &r.rls[0];
            assert_eq!(rl.si_count, k);
            assert_eq!(rl.tr, tr, "fast recovery leaves TR alone");
            assert!((rl.cr - (tr - gap)).abs() < 1e-3, "FR step {k}: {} vs {}", rl.cr, tr - gap);
        }
        // cycles 6, 7, 8: active increase, TR += R_AI each; cycles are now 75 KB ± 15 %
        let mut tr_k = tr;
        let mut cr_k = r.rls[0].cr;
        for k in 6..=8u32 {
            let n = send_until_stage_change(&mut r, &mut h);
            assert!((42..=58).contains(&n), "AI cycle {k}: {n} frames");
            tr_k += 5e6;
            cr_k = G10.min((cr_k + tr_k) / 2.0);
            assert_eq!(r.rls[0].si_count, k);
            assert!((r.rls[0].tr - tr_k).abs() < 1e-3);
            assert!((r.rls[0].cr - cr_k).abs() < 1e-3);
        }
        // timer expiries: stages 1..5 of the timer are below TH; with si > TH each one is AI
        for t in 1..=5u32 {
            let tok = h.timers.last().unwrap().1;
            r.on_timer(&mut h.ctx(), tok);
            assert_eq!(r.rls[0].timer_scount, t);
            tr_k += 5e6;
            cr_k = G10.min((cr_k + tr_k) / 2.0);
            assert!((r.rls[0].tr - tr_k).abs() < 1e-3, "timer {t}: AI");
        }
        // 6th expiry: both counters past TH → HAI, TR += R_HAI·(min(8, 6) − 5) = 50 Mb/s
        let tok = h.timers.last().unwrap().1;
        r.on_timer(&mut h.ctx(), tok);
        tr_k += 50e6;
        assert!((r.rls[0].tr - tr_k).abs() < 1e-3, "hyper-active");
        // next byte-counter cycle: si = 9, timer 6 → min = 6 → HAI step 1 again
        send_until_stage_change(&mut r, &mut h);
        tr_k += 50e6;
        assert!((r.rls[0].tr - tr_k).abs() < 1e-3);
        // CR is capped at line rate; with the flow queue empty the next frame releases the RL
        assert!(r.rls[0].cr <= G10);
        while r.rls[0].cr < G10 {
            send_until_stage_change(&mut r, &mut h);
        }
        h.backlog[0] = false;
        r.on_transmit(&mut h.ctx(), 0, &mut data(1500));
        assert!(!r.rls[0].active);
        assert_eq!(h.rates.last().unwrap().rate_bps, None);
        // the pending timer is now stale
        let n = h.rates.len();
        let tok = h.timers.last().unwrap().1;
        r.on_timer(&mut h.ctx(), tok);
        assert_eq!(h.rates.len(), n);
    }

    #[test]
    fn timer_periods_and_stale_tokens() {
        let p = Params::default();
        let mut h = new_host();
        let mut r = rp(&p, &h);
        r.on_feedback(&mut h.ctx(), &cnm(40));
        // CNM restarts the timer with exactly T
        assert_eq!(h.timers.last().unwrap().0, 15_000_000_000);
        let first = h.timers.last().unwrap().1;
        // a second CNM restarts it again; the first token is now stale
        r.on_feedback(&mut h.ctx(), &cnm(40));
        let cr = r.rls[0].cr;
        r.on_timer(&mut h.ctx(), first);
        assert_eq!(r.rls[0].timer_scount, 0);
        assert_eq!(r.rls[0].cr, cr);
        // expiries: T·U(0.85,1.15) while timer_scount < 5, T/2·U after
        for k in 1..=7u32 {
            let (at, tok) = *h.timers.last().unwrap();
            h.now = at;
            r.on_timer(&mut h.ctx(), tok);
            let next = h.timers.last().unwrap().0 - at;
            let base = if k < 5 { 15e9 } else { 7.5e9 };
            assert!(next as f64 >= base * 0.85 - 1.0 && next as f64 <= base * 1.15 + 1.0, "k={k} next={next}");
        }
    }

    #[test]
    fn deep_cut_guard_divides_tr_by_8() {
        let p = Params::default();
        let mut h = new_host();
        let mut r = rp(&p, &h);
        // five maximal cuts inside the first fast-recovery cycle: CR ≈ 0.034·line, TR = line
        for _ in 0..5 {
            r.on_feedback(&mut h.ctx(), &cnm(63));
        }
        let cr = r.rls[0].cr;
        assert!(r.rls[0].tr > 10.0 * cr);
        send_until_stage_change(&mut r, &mut h); // si = 1
        assert_eq!(r.rls[0].tr, G10 / 8.0);
        assert!((r.rls[0].cr - (cr + G10 / 8.0) / 2.0).abs() < 1e-3);
    }

    #[test]
    fn later_cnm_sets_target_to_current_rate() {
        let p = Params::default();
        let mut h = new_host();
        let mut r = rp(&p, &h);
        r.on_feedback(&mut h.ctx(), &cnm(32));
        send_until_stage_change(&mut r, &mut h);
        let cr = r.rls[0].cr;
        r.on_feedback(&mut h.ctx(), &cnm(32));
        assert_eq!(r.rls[0].tr, cr);
        assert_eq!(r.rls[0].tx_bcount, 150_000.0);
        assert_eq!(r.rls[0].cr, cr * (1.0 - 32.0 / 128.0));
        assert_eq!((r.rls[0].si_count, r.rls[0].timer_scount), (0, 0));
    }

    #[test]
    fn ns3_stage_boundary_gives_four_fast_recovery_cycles() {
        let p = Params { stage_boundary: StageBoundary::Ge, ..Params::default() };
        let mut h = new_host();
        let mut r = rp(&p, &h);
        r.on_feedback(&mut h.ctx(), &cnm(63));
        for k in 1..=5u32 {
            send_until_stage_change(&mut r, &mut h);
            let expect_tr = if k < 5 { G10 } else { G10 + 5e6 };
            assert_eq!(r.rls[0].tr, expect_tr, "cycle {k}");
        }
    }

    #[test]
    fn feedback_quantisation() {
        let qeq = 26_000.0;
        // empty, steady queue: no congestion
        assert_eq!(feedback(0.0, 0.0, qeq, 2.0, 63).1, 0);
        // at Qeq and steady: Fb = 0 → q = 0
        assert_eq!(feedback(qeq, qeq, qeq, 2.0, 63).1, 0);
        // the clamp: Fb ≤ −5·Qeq ⇒ q = 63
        let (fb, q, _, _) = feedback(10.0 * qeq, 0.0, qeq, 2.0, 63);
        assert_eq!((fb, q), (-5.0 * qeq, 63));
        // Qoff = Qeq, Qdelta = 0: Fb = −Qeq ⇒ q = ⌊63/5⌋ = 12
        assert_eq!(feedback(2.0 * qeq, 2.0 * qeq, qeq, 2.0, 63).1, 12);
        // growth counts w times: Qoff = 0, Qdelta = Qeq ⇒ Fb = −2·Qeq ⇒ q = ⌊126/5⌋ = 25
        assert_eq!(feedback(qeq, 0.0, qeq, 2.0, 63).1, 25);
        // a draining queue above Qeq can give Fb > 0 → clamped to 0
        let (fb, q, _, _) = feedback(1.5 * qeq, 3.0 * qeq, qeq, 2.0, 63);
        assert_eq!((fb, q), (0.0, 0));
        assert_eq!(mark_index(0, 63), 0);
        assert_eq!(mark_index(7, 63), 0);
        assert_eq!(mark_index(8, 63), 1);
        assert_eq!(mark_index(63, 63), 7);
    }

    /// The CP samples once per MARK_TABLE[q div 8] bytes (±15 %) of data arrivals.
    #[test]
    fn sampling_interval_follows_quantised_fb() {
        let p = Params::default();
        let qeq = p.qeq_bytes as f64;
        let mut rng = Stream::new(3, 0, 5);
        // hold the queue at a fixed length so that Fb = −Qoff (Qdelta = 0 after the first sample)
        for (qlen, expect_q) in [(qeq * 1.4, 5u32), (qeq * 2.0, 12), (qeq * 3.0, 25), (qeq * 4.7, 46), (qeq * 6.0, 63)] {
            let mut cp = QcnCp::new(&p, 1);
            cp.qlen_old = qlen;
            let mut arrivals = Vec::new();
            let mut bytes = 0u64;
            for _ in 0..200_000 {
                bytes += 1500;
                if let Some((q, _, _)) = cp.arrival(qlen, 1500, &mut rng) {
                    assert_eq!(q, expect_q);
                    arrivals.push(bytes);
                }
            }
            let base = p.mark_table_bytes[mark_index(expect_q, 63)];
            let gaps: Vec<f64> = arrivals.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
            assert!(gaps.len() > 100);
            for g in &gaps {
                // reload ∈ [0.85, 1.15)·base, rounded up to whole 1500-B frames
                assert!(*g >= 0.85 * base && *g <= 1.15 * base + 1500.0, "q={expect_q} gap {g} base {base}");
            }
            let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
            assert!((mean / (base + 750.0) - 1.0).abs() < 0.03, "q={expect_q} mean gap {mean} vs {base}");
        }
        // q = 0 (queue below Qeq): sampling every 150 KB, no message, qlen_old still updated
        let mut cp = QcnCp::new(&p, 1);
        let mut n = 0;
        for i in 0..1000 {
            assert!(cp.arrival(1000.0 + i as f64, 1500, &mut rng).is_none());
            if cp.qlen_old > 0.0 && n == 0 {
                n = i;
            }
        }
        assert!((85..=116).contains(&n), "first sample after {n} frames");
    }

    #[test]
    fn params_reject_bad_values() {
        let ok = serde_json::json!({
            "qeq_bytes": 26000, "w": 2.0, "fb_bits": 6,
            "mark_table_bytes": [150000.0, 75000.0, 50000.0, 37500.0, 30000.0, 25000.0, 21500.0, 18500.0],
            "sample_jitter": 0.15, "gd": 0.0078125, "min_dec_factor": 0.5, "min_rate_bps": 1e7,
            "bc_limit_bytes": 150000.0, "fast_recovery_th": 5, "r_ai_bps": 5e6, "r_hai_bps": 5e7,
            "timer_period_ps": 15000000000u64, "rp_jitter": 0.15, "stage_boundary": "gt"
        });
        assert!(build(&ok).is_ok());
        let mut extra = ok.clone();
        extra["bogus"] = serde_json::json!(1);
        assert!(build(&extra).is_err());
        let mut bad = ok.clone();
        bad["gd"] = serde_json::json!(0.0);
        let e = build(&bad).err().unwrap();
        assert!(e.to_string().starts_with("cm.params.gd"), "{e}");
        let mut missing = ok;
        missing.as_object_mut().unwrap().remove("w");
        assert!(build(&missing).is_err());
    }
}
