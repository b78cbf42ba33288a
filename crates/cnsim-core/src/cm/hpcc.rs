//! `hpcc`: HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019), the
//! window-based scheme driven by in-band network telemetry.
//!
//! Three parts:
//! * **Switches** stamp INT into every data frame as it starts transmission at an egress port:
//!   queue length, bytes transmitted, time stamp, line rate (the engine does this, [`crate::int`],
//!   because [`Hpcc::wants_int`] says so; there is no congestion point).
//! * **Receiver** ([`Reflector`]): every `ack_every`-th data frame of a flow (default every frame)
//!   is answered by a 64-B ACK to the source carrying the frame's INT stack and, in `CmMsg::v[0]`,
//!   the highest sequence received (the sender writes each data frame's end sequence — bytes sent
//!   up to and including it — into `Frame::tag.rate`, the reference code's sequence number).
//! * **Sender** (RP, one object per source host, state per flow): Algorithm 1 of the paper on
//!   every ACK — `MeasureInflight` (per hop `u'ⱼ = min(qLen, L.qLen)/(Bⱼ·T) + txRateⱼ/Bⱼ`, `U` an
//!   EWMA of the largest with weight `τ/T`), `ComputeWind` (`W = Wc/(U/η) + W_AI` when `U ≥ η`
//!   or `incStage ≥ maxStage`, else `W = Wc + W_AI`), `Wc` and `incStage` updated only by an ACK
//!   that acknowledges data sent after the previous update (once per RTT, the paper's
//!   `ack.seq > lastUpdateSeq`), every other ACK reacting with `W` alone. The flow may have at
//!   most `W` bytes unacknowledged ([`HostCtx::set_send_limit`]) and is paced at `W/T`.
//!
//! Reference code read for behaviour (not copied): alibaba-edu/High-Precision-Congestion-Control,
//! `simulation/src/point-to-point/model/rdma-hw.cc` (`HandleAckHp`, `UpdateRateHp`: the first ACK
//! only stores the INT, rates clamped to `[MinRate, line]`, `MinRate` 100 Mb/s),
//! `switch-node.cc` (`SwitchNotifyDequeue`: the hop is pushed at dequeue with the bytes sent before
//! the packet) and `scratch/third.cc` (T = the largest base RTT of the network, W_init = line × T;
//! `mix/config.txt`: `RATE_AI` 50 Mb/s at 100 Gb/s = line·(1 − η)/100, hence `expected_flows` 100).
//! Differences: the window and rate are one quantity (`R = W/T`, as the paper; the reference keeps
//! a rate and derives the window), W is also capped at W_init, and nothing is retransmitted — HPCC
//! assumes a lossless fabric (PAUSE); a dropped frame is simply lost, and since the ACK carries the
//! highest sequence received, its bytes leave the window with the next ACK — or, when no ACK comes
//! back at all for `loss_timeout`, the sender counts everything outstanding as lost.

use super::{parse_params, HostCtx, HostInfo, ReactionPoint, Reflector, Scheme};
use crate::error::ScenarioError;
use crate::frame::{CmMsg, Frame};
use crate::int::IntStack;
use crate::time::{SimTime, PS_PER_S};
use serde::Deserialize;

/// `CmMsg::kind` of an ACK.
pub const MSG_ACK: u8 = 0;

/// The base RTT T of `hpcc` (`Params::base_rtt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BaseRtt {
    Fixed,
    Network,
    Path,
}

/// Parameters of `hpcc`, base units (bytes, bit/s, ps). Every field is required in the IR; the
/// Python front end fills the paper's defaults (`cnsim.schemes.hpcc`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Target utilisation η (0.95).
    pub eta: f64,
    /// maxStage: additive steps before a multiplicative update while under-utilised (5).
    pub max_stage: u32,
    /// W_AI in bytes; 0 = W_init·(1 − η)/`expected_flows` for each flow (paper §3.3).
    pub w_ai_bytes: f64,
    /// N of the W_AI rule (100).
    pub expected_flows: u32,
    /// Where T comes from: `base_rtt_ps` (`fixed`), the network's largest base RTT (`network`, the
    /// reference code's default) or each flow's own (`path`).
    pub base_rtt: BaseRtt,
    /// T, ps, with `base_rtt = fixed` (0 otherwise).
    pub base_rtt_ps: u64,
    /// Window floor as a rate, bit/s (W ≥ min_rate·T; reference 100 Mb/s).
    pub min_rate_bps: f64,
    /// The receiver acknowledges every n-th data frame of a flow (1).
    pub ack_every: u32,
    /// With bytes unacknowledged and no ACK for this long, ps, the sender counts them as lost and
    /// reopens its window (1 ms; nothing is retransmitted).
    pub loss_timeout_ps: u64,
    /// INT header bytes on the wire ([`crate::int::IntWire`]): added to every data frame by its
    /// source NIC and by each switch (paper §5 / reference `IntHeader`: 2 + 8 per hop; absent = 0,
    /// no INT bytes).
    #[serde(default)]
    pub int_base_bytes: u32,
    #[serde(default)]
    pub int_hop_bytes: u32,
    /// When > 0 (and `w_ai_bytes` is 0): W_AI = this rate × T, the reference code's `RATE_AI`
    /// (absent = 0: the W_init·(1 − η)/N rule).
    #[serde(default)]
    pub rate_ai_bps: f64,
    /// When > 0: `rate_ai_bps` is given for a NIC of this rate and scaled to each host's (the
    /// reference's `RATE_AI = 10·bw/25` Mb/s); absent = 0: absolute.
    #[serde(default)]
    pub rate_reference_bps: f64,
}

impl Params {
    /// The paper's defaults (η = 0.95, maxStage = 5) with the reference code's floor: the Python
    /// model's, read from `tests/golden/cm-params.json`.
    #[cfg(test)]
    pub fn paper() -> Self {
        super::testkit::defaults("hpcc")
    }

    /// The parameters of a host whose NIC runs at `rate_bps`: `rate_ai_bps` scaled from
    /// `rate_reference_bps` to it (unchanged without a reference rate).
    pub fn for_nic(&self, rate_bps: u64) -> Params {
        let mut p = self.clone();
        if p.rate_reference_bps > 0.0 {
            p.rate_ai_bps *= rate_bps as f64 / p.rate_reference_bps;
        }
        p
    }

    fn check(&self) -> Result<(), ScenarioError> {
        let bad = |f: &str, m: &str| Err(ScenarioError::field(format!("cm.params.{f}"), m.to_string()));
        if !(self.eta > 0.0 && self.eta <= 1.0) {
            return bad("eta", "must be in (0, 1]");
        }
        if !(self.w_ai_bytes.is_finite() && self.w_ai_bytes >= 0.0) {
            return bad("w_ai_bytes", "must be >= 0");
        }
        if self.expected_flows == 0 {
            return bad("expected_flows", "must be >= 1");
        }
        if self.base_rtt == BaseRtt::Fixed && self.base_rtt_ps == 0 {
            return bad("base_rtt_ps", "must be > 0 with base_rtt = fixed");
        }
        if !(self.min_rate_bps.is_finite() && self.min_rate_bps > 0.0) {
            return bad("min_rate_bps", "must be > 0");
        }
        if self.ack_every == 0 {
            return bad("ack_every", "must be >= 1");
        }
        if self.loss_timeout_ps == 0 {
            return bad("loss_timeout_ps", "must be > 0");
        }
        for (f, v) in [("rate_ai_bps", self.rate_ai_bps), ("rate_reference_bps", self.rate_reference_bps)] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(f, "must be >= 0");
            }
        }
        Ok(())
    }
}

/// The built scheme.
pub struct Hpcc {
    p: Params,
}

impl Scheme for Hpcc {
    fn name(&self) -> &'static str {
        "hpcc"
    }
    fn message_types(&self) -> &'static [&'static str] {
        &["ack"]
    }
    fn reaction_point(&self, host: &HostInfo) -> Option<Box<dyn ReactionPoint>> {
        Some(Box::new(HpccRp::new(&self.p.for_nic(host.line_rate_bps), host)))
    }
    fn reflector(&self, _host: &HostInfo) -> Option<Box<dyn Reflector>> {
        Some(Box::new(HpccReceiver { every: self.p.ack_every, rx: Vec::new() }))
    }
    fn wants_int(&self) -> bool {
        true
    }
    fn int_wire(&self) -> crate::int::IntWire {
        crate::int::IntWire { source_bytes: self.p.int_base_bytes, hop_bytes: self.p.int_hop_bytes }
    }
}

pub fn build(params: &serde_json::Value) -> Result<Box<dyn Scheme>, ScenarioError> {
    let p: Params = parse_params("hpcc", params)?;
    p.check()?;
    Ok(Box::new(Hpcc { p }))
}

// =================================================================================================
// Control law (paper Algorithm 1): MeasureInflight, ComputeWind, NewAck.
// =================================================================================================

/// `MeasureInflight` without the EWMA: the largest normalised in-flight bytes `u'` over the hops
/// of `ack` against the previous stack `last` (same path), and the time delta `τ` (ps) of that
/// hop. `t_ps` is T. `None` if the stacks do not match or no hop's time advanced.
pub fn max_hop_utilisation(ack: &IntStack, last: &IntStack, t_ps: u64) -> Option<(f64, u64)> {
    if ack.n != last.n || ack.n == 0 {
        return None;
    }
    let t_s = t_ps as f64 / PS_PER_S as f64;
    let mut best: Option<(f64, u64)> = None;
    for (a, l) in ack.hops().iter().zip(last.hops()) {
        if a.ts <= l.ts || a.rate_bps == 0 {
            continue;
        }
        let tau = a.ts - l.ts;
        let b = a.rate_bps as f64 / 8.0; // bytes per second
        let tx_rate = a.tx_bytes.saturating_sub(l.tx_bytes) as f64 / (tau as f64 / PS_PER_S as f64);
        let u = a.qlen.min(l.qlen) as f64 / (b * t_s) + tx_rate / b;
        if best.is_none_or(|(bu, _)| u > bu) {
            best = Some((u, tau));
        }
    }
    best
}

/// The EWMA of `MeasureInflight`: `U ← (1 − τ/T)·U + τ/T·u` with `τ ≤ T`.
pub fn ewma(u_old: f64, u: f64, tau: u64, t_ps: u64) -> f64 {
    let w = tau.min(t_ps) as f64 / t_ps as f64;
    (1.0 - w) * u_old + w * u
}

/// Per-flow sender state.
#[derive(Debug, Clone)]
pub struct FlowHp {
    /// T, ps.
    pub t_ps: u64,
    /// W_init = line × T, the window cap; W_AI; the floor min_rate × T (bytes).
    pub w_init: f64,
    pub w_ai: f64,
    pub w_min: f64,
    /// Current window W and reference window Wc, bytes.
    pub w: f64,
    pub wc: f64,
    /// Normalised in-flight bytes U (EWMA).
    pub u: f64,
    pub inc_stage: u32,
    /// Bytes sent / cumulatively acknowledged; bytes sent at the last Wc update.
    pub snd_nxt: u64,
    pub acked: u64,
    pub last_update_seq: u64,
    /// The INT stack of the previous ACK (L), once one arrived.
    pub last: Option<IntStack>,
    /// Last ACK, or the first send after everything was acknowledged (loss timeout), ps.
    pub progress_t: SimTime,
    pub timer_armed: bool,
    /// Generation of the local index (a transfer's queue reusing it): the loss timer's token.
    pub gen: u32,
}

impl FlowHp {
    /// A flow (a send queue) at local index `i` of `host` starting at line rate, of generation `gen`.
    fn fresh(p: &Params, line: f64, host: &HostInfo, i: usize, gen: u32) -> Self {
        let t_ps = match p.base_rtt {
            BaseRtt::Path => host.flow_base_rtt_ps[i],
            BaseRtt::Network => host.max_base_rtt_ps,
            BaseRtt::Fixed => p.base_rtt_ps,
        }
        .max(1);
        // bytes sent in T at a rate (bit/s), T in ps
        let bdp = |rate: f64| rate * t_ps as f64 / (8.0 * PS_PER_S as f64);
        let w_init = bdp(line);
        let w_ai = if p.w_ai_bytes > 0.0 {
            p.w_ai_bytes
        } else if p.rate_ai_bps > 0.0 {
            bdp(p.rate_ai_bps) // the reference code's RATE_AI × T
        } else {
            w_init * (1.0 - p.eta) / p.expected_flows as f64
        };
        let w_min = bdp(p.min_rate_bps).min(w_init);
        FlowHp {
            t_ps,
            w_init,
            w_ai,
            w_min,
            w: w_init,
            wc: w_init,
            u: 0.0,
            inc_stage: 0,
            snd_nxt: 0,
            acked: 0,
            last_update_seq: 0,
            last: None,
            progress_t: 0,
            timer_armed: false,
            gen,
        }
    }

    /// `ComputeWind(U, updateWc)`, the result clamped to `[w_min, w_init]` (the reference clamps
    /// the rate to `[MinRate, line]`); sets and returns W.
    pub fn compute_wind(&mut self, u: f64, update_wc: bool, eta: f64, max_stage: u32) -> f64 {
        let (w, stage) = if u >= eta || self.inc_stage >= max_stage {
            // U = 0 only gets here through maxStage: an idle path, the window opens fully
            let w = if u > 0.0 { self.wc / (u / eta) + self.w_ai } else { self.w_init };
            (w, 0)
        } else {
            (self.wc + self.w_ai, self.inc_stage + 1)
        };
        let w = w.clamp(self.w_min, self.w_init);
        if update_wc {
            self.inc_stage = stage;
            self.wc = w;
        }
        self.w = w;
        w
    }

    /// Pacing rate W/T, bit/s.
    pub fn rate_bps(&self) -> f64 {
        self.w * 8.0 * PS_PER_S as f64 / self.t_ps as f64
    }
}

/// Sender of one host.
pub struct HpccRp {
    p: Params,
    line: f64,
    pub flows: Vec<FlowHp>,
}

impl HpccRp {
    pub fn new(p: &Params, host: &HostInfo) -> Self {
        let line = host.line_rate_bps as f64;
        let flows = (0..host.flows.len()).map(|i| FlowHp::fresh(p, line, host, i, 0)).collect();
        HpccRp { p: p.clone(), line, flows }
    }

    /// `NewAck`: an ACK of flow `local` acknowledging `acked` bytes with INT stack `int`.
    pub fn on_ack(&mut self, ctx: &mut HostCtx, local: usize, acked: u64, int: Option<&IntStack>) {
        let (eta, max_stage) = (self.p.eta, self.p.max_stage);
        let f = &mut self.flows[local];
        f.acked = f.acked.max(acked);
        f.progress_t = ctx.now;
        if let Some(ack) = int {
            match f.last {
                // the first ACK only records the INT (reference: first RTT)
                None => f.last_update_seq = f.snd_nxt,
                Some(ref last) => {
                    if let Some((u, tau)) = max_hop_utilisation(ack, last, f.t_ps) {
                        f.u = ewma(f.u, u, tau, f.t_ps);
                        let update = acked > f.last_update_seq;
                        f.compute_wind(f.u, update, eta, max_stage);
                        if update {
                            f.last_update_seq = f.snd_nxt;
                        }
                    }
                }
            }
            f.last = Some(*ack);
        }
        self.push(ctx, local);
    }

    /// A data frame of `bytes` of flow `local` starts: advance `snd_nxt`, watch for loss.
    fn sent(&mut self, ctx: &mut HostCtx, local: usize, bytes: u64) -> u64 {
        let timeout = self.p.loss_timeout_ps;
        let f = &mut self.flows[local];
        if f.acked >= f.snd_nxt {
            f.progress_t = ctx.now;
        }
        f.snd_nxt += bytes;
        if !f.timer_armed {
            f.timer_armed = true;
            ctx.set_timer(f.progress_t + timeout, timer_token(local, f.gen));
        }
        f.snd_nxt
    }

    /// Loss timer of flow `local`: no ACK for `loss_timeout` with bytes outstanding ⇒ they are lost
    /// (the window reopens); otherwise re-armed from the last progress.
    fn loss_timer(&mut self, ctx: &mut HostCtx, local: usize) {
        let timeout = self.p.loss_timeout_ps;
        let f = &mut self.flows[local];
        f.timer_armed = false;
        if f.acked >= f.snd_nxt {
            return;
        }
        if ctx.now >= f.progress_t + timeout {
            f.acked = f.snd_nxt;
            f.progress_t = ctx.now;
            self.push(ctx, local);
        } else {
            f.timer_armed = true;
            ctx.set_timer(f.progress_t + timeout, timer_token(local, f.gen));
        }
    }

    /// Hand the flow's window and pacing rate to the engine.
    fn push(&self, ctx: &mut HostCtx, local: usize) {
        let f = &self.flows[local];
        ctx.set_send_limit(local as u32, Some(f.acked + f.w.ceil() as u64));
        ctx.set_rate(local as u32, Some(f.rate_bps().min(self.line)));
    }
}

/// Receiver: acknowledges every `every`-th frame of each flow with the highest sequence received.
pub struct HpccReceiver {
    every: u32,
    /// (highest end sequence received, frames since the last ACK) per flow, by `FlowId` index.
    rx: Vec<(u64, u32)>,
}

// =================================================================================================
// End of the control law.
// =================================================================================================

impl Reflector for HpccReceiver {
    fn on_queue_close(&mut self, flow: crate::ids::FlowId) {
        if let Some(r) = self.rx.get_mut(flow.idx()) {
            *r = (0, 0); // the next queue of this slot starts its sequence at 0
        }
    }
    fn on_data(&mut self, ctx: &mut HostCtx, frame: &Frame) {
        let i = frame.flow.idx();
        if i >= self.rx.len() {
            self.rx.resize(i + 1, (0, 0));
        }
        let r = &mut self.rx[i];
        r.0 = r.0.max(frame.tag.rate as u64);
        r.1 += 1;
        if r.1 >= self.every {
            r.1 = 0;
            ctx.send_int(frame.src, CmMsg { gen: 0, kind: MSG_ACK, flow: frame.flow, cpid: 0, v: [r.0 as f64, 0.0, 0.0] });
        }
    }
}

impl ReactionPoint for HpccRp {
    fn on_start(&mut self, ctx: &mut HostCtx) {
        for local in 0..self.flows.len() {
            self.push(ctx, local);
        }
    }
    fn on_feedback(&mut self, ctx: &mut HostCtx, msg: &CmMsg) {
        if msg.kind != MSG_ACK {
            return;
        }
        if let Some(local) = ctx.local_of(msg.flow) {
            let int = ctx.int.copied();
            self.on_ack(ctx, local as usize, msg.v[0] as u64, int.as_ref());
        }
    }
    fn on_transmit(&mut self, ctx: &mut HostCtx, local: u32, frame: &mut Frame) {
        let end = self.sent(ctx, local as usize, frame.size as u64);
        frame.tag.rate = end as f64; // the frame's end sequence, exact below 2^53 bytes
    }
    fn on_timer(&mut self, ctx: &mut HostCtx, token: u64) {
        let (local, gen) = (token as u32 as usize, (token >> 32) as u32);
        if self.flows.get(local).is_some_and(|f| f.gen == gen) {
            self.loss_timer(ctx, local);
        }
    }
    fn rate_bps(&self, local: u32) -> Option<f64> {
        self.flows.get(local as usize).map(|f| f.rate_bps().min(self.line))
    }
    /// A transfer's own queue (a new QP): W = W_init from its path's base RTT, at line rate.
    fn on_queue_open(&mut self, ctx: &mut HostCtx, local: u32) {
        let l = local as usize;
        let gen = self.flows.get(l).map_or(0, |f| f.gen.wrapping_add(1));
        let f = FlowHp::fresh(&self.p, self.line, ctx.info, l, gen);
        if l >= self.flows.len() {
            self.flows.resize(l + 1, f.clone());
        }
        self.flows[l] = f;
        self.push(ctx, l);
    }
    fn on_queue_close(&mut self, _ctx: &mut HostCtx, local: u32) {
        if let Some(f) = self.flows.get_mut(local as usize) {
            f.gen = f.gen.wrapping_add(1); // its loss timer goes stale
            f.timer_armed = false;
        }
    }
}

/// The loss timer's token: the local index and its generation.
fn timer_token(local: usize, gen: u32) -> u64 {
    ((gen as u64) << 32) | local as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cm::testkit::{data_frame, TestHost};
    use crate::ids::FlowId;
    use crate::int::IntHop;

    const G10: u64 = 10_000_000_000;
    /// T of the test host: 10 µs, so W_init = 10 Gb/s × 10 µs = 12 500 B.
    const T: u64 = 10_000_000;
    const W_INIT: f64 = 12_500.0;

    fn flow() -> FlowHp {
        let h = TestHost::new(FlowId(3), 1);
        HpccRp::new(&Params::paper(), &h.info).flows.remove(0)
    }

    /// A one-hop stack: queue `q`, `tx` bytes sent, at time `ts`.
    fn stack(q: u64, tx: u64, ts: u64) -> IntStack {
        let mut s = IntStack::default();
        s.push(IntHop { qlen: q, tx_bytes: tx, ts, rate_bps: G10 });
        s
    }

    #[test]
    fn defaults_follow_the_paper() {
        let f = flow();
        assert_eq!((f.t_ps, f.w, f.wc), (T, W_INIT, W_INIT));
        assert!((f.w_ai - W_INIT * 0.05 / 100.0).abs() < 1e-9, "W_AI = W_init (1 − η) / N");
        assert!((f.w_min - 100e6 * 1e-5 / 8.0).abs() < 1e-9);
        assert!((f.rate_bps() - 1e10).abs() < 1e-3, "R = W/T = line rate at W_init");
    }

    #[test]
    fn utilisation_above_eta_decreases_w_multiplicatively() {
        let mut f = flow();
        f.wc = 10_000.0;
        let u = 1.9;
        let w = f.compute_wind(u, false, 0.95, 5);
        assert!((w - (10_000.0 * 0.95 / 1.9 + f.w_ai)).abs() < 1e-9, "W = Wc·η/U + W_AI");
        assert_eq!(f.wc, 10_000.0, "Wc unchanged without updateWc");
        let w = f.compute_wind(u, true, 0.95, 5);
        assert_eq!(f.wc, w);
        assert_eq!(f.inc_stage, 0);
        // a deep overload is floored at min_rate × T
        let w = f.compute_wind(1e6, true, 0.95, 5);
        assert_eq!(w, f.w_min);
    }

    #[test]
    fn utilisation_below_eta_increases_additively_until_max_stage() {
        let mut f = flow();
        f.wc = 6_000.0;
        let ai = f.w_ai;
        for k in 1..=5u32 {
            let w = f.compute_wind(0.5, true, 0.95, 5);
            assert!((w - (6_000.0 + k as f64 * ai)).abs() < 1e-9, "step {k}: W = Wc + W_AI");
            assert_eq!(f.inc_stage, k);
        }
        // incStage = maxStage: the multiplicative update, upwards since U < η
        let wc = f.wc;
        let w = f.compute_wind(0.5, true, 0.95, 5);
        assert!((w - (wc * 0.95 / 0.5 + ai)).abs() < 1e-9);
        assert_eq!(f.inc_stage, 0);
        // without updateWc the stage does not advance
        let w2 = f.compute_wind(0.5, false, 0.95, 5);
        assert!((w2 - (w + ai)).abs() < 1e-9);
        assert_eq!((f.inc_stage, f.wc), (0, w));
        // never above W_init
        f.wc = W_INIT;
        assert_eq!(f.compute_wind(0.1, true, 0.95, 0), W_INIT);
    }

    #[test]
    fn measure_inflight_from_two_int_stacks() {
        // the hop sent B·τ bytes in τ (txRate = B) and kept min(q) = B·T/2 queued: u' = 1.5
        let tau = 2_000_000; // 2 µs
        let b = 1.25e9; // bytes/s
        let sent = (b * 2e-6) as u64;
        let q = (b * 1e-5 / 2.0) as u64;
        let (u, t) = max_hop_utilisation(&stack(q, 1_000 + sent, 5_000_000 + tau), &stack(q + 7_000, 1_000, 5_000_000), T).expect("comparable");
        assert!((u - 1.5).abs() < 1e-9, "{u}");
        assert_eq!(t, tau);
        // two hops: the larger u' wins, with its own τ
        let mut a = stack(0, sent / 2, 5_000_000 + tau);
        a.push(IntHop { qlen: q, tx_bytes: sent, ts: 9_000_000, rate_bps: G10 });
        let mut l = stack(0, 0, 5_000_000);
        l.push(IntHop { qlen: q, tx_bytes: 0, ts: 9_000_000 - tau, rate_bps: G10 });
        let (u, t) = max_hop_utilisation(&a, &l, T).expect("comparable");
        assert!((u - 1.5).abs() < 1e-9 && t == tau);
        // stacks of different paths are not compared
        assert!(max_hop_utilisation(&a, &stack(0, 0, 0), T).is_none());
        // EWMA weight τ/T, τ capped at T
        assert!((ewma(1.0, 2.0, T / 4, T) - 1.25).abs() < 1e-12);
        assert_eq!(ewma(1.0, 2.0, 3 * T, T), 2.0);
    }

    #[test]
    fn acks_update_wc_once_per_rtt_and_set_window_and_rate() {
        let mut h = TestHost::new(FlowId(3), 1);
        let mut rp = HpccRp::new(&Params::paper(), &h.info);
        rp.on_start(&mut h.ctx());
        assert_eq!(h.limits.last(), Some(&(0, Some(12_500))));
        for _ in 0..8 {
            rp.on_transmit(&mut h.ctx(), 0, &mut data_frame(1, 2, 3, 1_500));
        }
        // first ACK: only stores the INT
        rp.on_ack(&mut h.ctx(), 0, 1_500, Some(&stack(0, 0, 0)));
        assert_eq!(rp.flows[0].w, W_INIT);
        assert_eq!(rp.flows[0].last_update_seq, 12_000);
        // an ACK reporting a full link and a standing queue: U > η, W shrinks but not Wc (ack 3000
        // does not pass lastUpdateSeq = 12 000)
        let b = 1.25e9;
        let full = |dt_us: u64, q: u64| stack(q, (b * dt_us as f64 * 1e-6) as u64, dt_us * 1_000_000);
        rp.on_ack(&mut h.ctx(), 0, 3_000, Some(&full(10, 12_500)));
        let f = &rp.flows[0];
        assert!(f.u > 0.95, "{}", f.u);
        assert!(f.w < W_INIT);
        assert_eq!((f.wc, f.inc_stage), (W_INIT, 0));
        let w = f.w;
        assert_eq!(h.limits.last(), Some(&(0, Some(3_000 + w.ceil() as u64))));
        let r = h.rates.last().unwrap().rate_bps.unwrap();
        assert!((r - w * 8.0 / 1e-5).abs() < 1e-3, "R = W/T");
        // an ACK past lastUpdateSeq updates Wc and moves lastUpdateSeq to snd_nxt
        rp.on_transmit(&mut h.ctx(), 0, &mut data_frame(1, 2, 3, 1_500));
        rp.on_ack(&mut h.ctx(), 0, 12_001, Some(&full(20, 12_500)));
        let f = &rp.flows[0];
        assert_eq!(f.wc, f.w);
        assert_eq!(f.last_update_seq, 13_500);
        // a control frame without INT only moves the acknowledged bytes
        let w = rp.flows[0].w;
        rp.on_ack(&mut h.ctx(), 0, 13_500, None);
        assert_eq!(rp.flows[0].w, w);
        assert_eq!(h.limits.last(), Some(&(0, Some(13_500 + w.ceil() as u64))));
    }

    #[test]
    fn receiver_acks_every_nth_frame_with_the_int_and_highest_sequence() {
        let mut h = TestHost::new(FlowId(3), 1);
        let mut rp = HpccRp::new(&Params::paper(), &h.info);
        let mut rx = HpccReceiver { every: 2, rx: vec![] };
        let mut frames = vec![];
        for _ in 0..5 {
            let mut f = data_frame(1, 2, 3, 1_000);
            rp.on_transmit(&mut h.ctx(), 0, &mut f);
            frames.push(f);
        }
        assert_eq!(frames[4].tag.rate, 5_000.0, "the sender stamps each frame's end sequence");
        rx.on_data(&mut h.ctx(), &frames[0]);
        assert!(h.out.is_empty());
        rx.on_data(&mut h.ctx(), &frames[1]);
        // frame 3 is lost: the next ACK acknowledges past it
        rx.on_data(&mut h.ctx(), &frames[3]);
        rx.on_data(&mut h.ctx(), &frames[4]);
        assert_eq!(h.out.len(), 2);
        let e = h.out[1];
        assert!(e.echo_int && e.dst.0 == 1 && e.msg.kind == MSG_ACK && e.msg.flow == FlowId(3));
        assert_eq!((h.out[0].msg.v[0], e.msg.v[0]), (2_000.0, 5_000.0));
    }

    #[test]
    fn a_window_of_lost_frames_reopens_after_the_loss_timeout() {
        const MS: u64 = 1_000_000_000;
        let mut h = TestHost::new(FlowId(3), 1);
        let mut rp = HpccRp::new(&Params::paper(), &h.info);
        h.now = 5 * MS;
        for _ in 0..9 {
            rp.on_transmit(&mut h.ctx(), 0, &mut data_frame(1, 2, 3, 1_500));
        }
        assert_eq!(h.timers.len(), 1, "one timer per flow");
        // an ACK at 5.5 ms for the first frame: progress; the timer re-arms from there
        h.now = 5 * MS + MS / 2;
        rp.on_ack(&mut h.ctx(), 0, 1_500, None);
        h.advance(&mut rp, 6 * MS);
        assert_eq!(rp.flows[0].acked, 1_500);
        assert_eq!(h.timers, vec![(6 * MS + MS / 2, 0)]);
        // nothing more comes back: at 6.5 ms the 12 000 outstanding bytes count as lost
        h.advance(&mut rp, 6 * MS + MS / 2);
        assert_eq!(rp.flows[0].acked, 13_500);
        assert_eq!(h.limits.last(), Some(&(0, Some(13_500 + rp.flows[0].w.ceil() as u64))));
        assert!(h.timers.is_empty(), "nothing outstanding: no timer");
    }

    #[test]
    fn w_ai_from_a_rate_scales_with_the_nic() {
        // the reference code's RATE_AI: W_AI = rate × T; 10 Mb/s per 25 Gb/s on this 10 Gb/s host = 4 Mb/s
        let h = TestHost::new(FlowId(3), 1);
        let p = Params { rate_ai_bps: 10e6, rate_reference_bps: 25e9, max_stage: 0, ..Params::paper() };
        let mut scaled = p.for_nic(h.info.line_rate_bps);
        assert_eq!(scaled.rate_ai_bps, 4e6);
        assert_eq!(Params::paper().for_nic(h.info.line_rate_bps).rate_ai_bps, 0.0, "nothing to scale");
        let f = HpccRp::new(&scaled, &h.info).flows.remove(0);
        assert!((f.w_ai - 4e6 * 1e-5 / 8.0).abs() < 1e-9, "W_AI = rate_ai × T: {}", f.w_ai);
        scaled.w_ai_bytes = 80.0;
        assert_eq!(HpccRp::new(&scaled, &h.info).flows[0].w_ai, 80.0, "an explicit W_AI wins");
        // the INT bytes the scheme asks for
        let wire = Hpcc { p: Params::paper() }.int_wire();
        assert_eq!((wire.source_bytes, wire.hop_bytes), (2, 8));
    }

    #[test]
    fn parameters_are_checked_with_their_path() {
        let bad = |v: serde_json::Value| build(&v).err().map(|e| e.to_string()).unwrap_or_default();
        let ok = serde_json::json!({"eta": 0.95, "max_stage": 5, "w_ai_bytes": 0.0, "expected_flows": 100,
            "base_rtt": "network", "base_rtt_ps": 0, "min_rate_bps": 1e8, "ack_every": 1, "loss_timeout_ps": 1});
        assert!(build(&ok).is_ok());
        let mut v = ok.clone();
        v["eta"] = 1.5.into();
        assert!(bad(v).contains("cm.params.eta"));
        let mut v = ok.clone();
        v["ack_every"] = 0.into();
        assert!(bad(v).contains("cm.params.ack_every"));
    }
}
