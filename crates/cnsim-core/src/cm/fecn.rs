//! `fecn`: Forward Explicit Congestion Notification of Jain et al. (model reference §5.3, §5.4, §5.6).
//!
//! * **CP** (every switch egress port): the shared explicit-rate computation of
//!   [`super::explicit_rate`] every T; on transmission of a data frame carrying a rate-discovery
//!   (RD) tag it stamps `min(tag.rate, r_i)` (−1 = not stamped yet), so the tag reaching the
//!   destination holds the minimum advertised rate along the path. Optional E-FECN (§5.6): while
//!   the queue is above Qsc, a data arrival triggers (at most once per source per T) a backward
//!   message carrying r_i.
//! * **Reflector** (destination): every RD-tagged data frame is answered with a 64-B reply to its
//!   source carrying the stamped rate.
//! * **RP** (source host, one rate limiter per flow): RLs are always on; an RL is created at
//!   `R0 = C_line/N0` by the first frame of a flow without RL; probes are the first frame of a new
//!   RL and then the next frame once T has elapsed since the previous probe (seed 003 / paper), or
//!   every frame independently with probability x (seed 000 "tagging rate"); a reply (applied by the
//!   engine after the response delay) sets `rate = min(line, r)` (line rate for −1, §12 F3); an RL
//!   idle for the timeout (no frame sent *and* nothing waiting, §12 D4 as read in
//!   docs/schemes/fecn.md) is deleted, so the next frame starts again at R0.

use super::explicit_rate::{PortRate, SwitchParams};
use super::{parse_params, CongestionPoint, CpCtx, HostCtx, HostInfo, PortInfo, ReactionPoint, Reflector, RlScope, Scheme};
use crate::error::ScenarioError;
use crate::frame::{tag, CmMsg, Frame};
use crate::time::SimTime;
use serde::Deserialize;

/// Message kinds (index into [`Fecn::message_types`]).
pub const KIND_REPLY: u8 = 0;
pub const KIND_EFECN: u8 = 1;

/// IR parameters of `fecn` (base units, no defaults; the Python model documents them).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Switch computation (T, Qeq, a, b, c, β, N0, helper-routine switches).
    pub switch: SwitchParams,
    /// Tagging probability per data frame (seed 000); `None` = one probe per T (seed 003).
    pub tagging_rate: Option<f64>,
    /// Which frames probe when `tagging_rate` is `None` (model reference §12 R7).
    pub probe_rule: ProbeRule,
    /// RL deleted after this long without a frame sent and nothing waiting, ps.
    pub rl_timeout_ps: u64,
    /// Bytes a tag adds to a data frame (counted as overhead only; 0 by default, §12 G2).
    pub tag_bytes: u32,
    /// E-FECN severe-congestion backward message (§5.6).
    pub efecn: bool,
    /// E-FECN threshold Qsc, bytes.
    pub qsc_bytes: u64,
    /// What one RL belongs to: the (source, destination) pair, or one transfer ([D]'s "flow"), each
    /// starting again at R0 with a probe (issue 11).
    #[serde(default)]
    pub rl_scope: RlScope,
}

/// Probe rule of the one-probe-per-T mode (model reference §12 R7: which rule [D]'s overhead column supports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeRule {
    /// The first frame of a new RL, then one frame per RL once T has elapsed (the FECN paper).
    PerFlow,
    /// The first frame of a new RL, then one frame per *source host* per T, whatever its flow.
    PerSource,
    /// As `per_flow`, but only while the RL's rate is below the line rate (an RL told "line rate"
    /// stops probing until it is deleted and re-created).
    BelowLine,
    /// One frame per source host per T, and no probe when an RL is created (it runs at R0 until the
    /// host's next periodic probe answers).
    SourcePeriodic,
}

pub struct Fecn {
    p: Params,
}

impl Scheme for Fecn {
    fn name(&self) -> &'static str {
        "fecn"
    }
    fn message_types(&self) -> &'static [&'static str] {
        &["fecn_reply", "efecn"]
    }
    fn congestion_point(&self, port: &PortInfo) -> Option<Box<dyn CongestionPoint>> {
        Some(Box::new(FecnCp {
            pr: PortRate::new(self.p.switch.clone(), port.rate_bps as f64),
            cpid: port.cpid,
            efecn: self.p.efecn,
            qsc: self.p.qsc_bytes,
            last_efecn: Vec::new(),
        }))
    }
    fn reaction_point(&self, host: &HostInfo) -> Option<Box<dyn ReactionPoint>> {
        let n = host.flows.len();
        Some(Box::new(FecnRp {
            r0: host.line_rate_bps as f64 / self.p.switch.n0,
            line: host.line_rate_bps as f64,
            probe_interval: self.p.switch.interval_ps,
            tagging_rate: self.p.tagging_rate,
            probe_rule: self.p.probe_rule,
            last_source_probe: None,
            timeout: self.p.rl_timeout_ps,
            tag_bytes: self.p.tag_bytes,
            per_transfer: self.p.rl_scope == RlScope::Transfer,
            rl: vec![Rl::default(); n],
        }))
    }
    fn reflector(&self, _host: &HostInfo) -> Option<Box<dyn Reflector>> {
        Some(Box::new(FecnReflector))
    }
}

pub fn build(params: &serde_json::Value) -> Result<Box<dyn Scheme>, ScenarioError> {
    let p: Params = parse_params("fecn", params)?;
    p.switch.check("cm.params.switch")?;
    if let Some(x) = p.tagging_rate {
        if !(x > 0.0 && x <= 1.0) {
            return Err(ScenarioError::field("cm.params.tagging_rate", "must be in (0, 1]"));
        }
    }
    if p.rl_timeout_ps == 0 {
        return Err(ScenarioError::field("cm.params.rl_timeout_ps", "must be > 0"));
    }
    Ok(Box::new(Fecn { p }))
}

// ------------------------------------------------------------------------------------------------
// CP
// ------------------------------------------------------------------------------------------------

pub struct FecnCp {
    pub pr: PortRate,
    cpid: u32,
    efecn: bool,
    qsc: u64,
    /// E-FECN: last message time per source node (index = node id), u64::MAX = never.
    last_efecn: Vec<SimTime>,
}

impl FecnCp {
    /// Stamp an RD tag with min(tag, r_i) (model reference §5.3 "on transmit"; −1 = not stamped yet).
    pub fn stamp(&self, frame: &mut Frame) {
        if frame.is_data() && frame.tag.flags & tag::RD != 0 {
            let r = self.pr.rate();
            if frame.tag.rate < 0.0 || frame.tag.rate > r {
                frame.tag.rate = r;
            }
        }
    }
}

impl CongestionPoint for FecnCp {
    fn on_enqueue(&mut self, ctx: &mut CpCtx, frame: &mut Frame) {
        self.pr.on_enqueue(ctx.now, frame.size, frame.is_data(), ctx.queue_bytes);
        if self.efecn && frame.is_data() && ctx.queue_bytes > self.qsc {
            let src = frame.src.idx();
            if self.last_efecn.len() <= src {
                self.last_efecn.resize(src + 1, u64::MAX);
            }
            let last = self.last_efecn[src];
            if last == u64::MAX || ctx.now >= last + self.pr.p.interval_ps {
                self.last_efecn[src] = ctx.now;
                ctx.send(frame.src, CmMsg { gen: 0, kind: KIND_EFECN, flow: frame.flow, cpid: self.cpid, v: [self.pr.rate(), 0.0, 0.0] });
            }
        }
    }
    fn on_drop(&mut self, _ctx: &mut CpCtx, frame: &Frame) {
        self.pr.on_drop(frame.size, frame.is_data());
    }
    fn on_transmit(&mut self, ctx: &mut CpCtx, frame: &mut Frame) {
        self.pr.on_transmit(ctx.now, frame.size, frame.is_data(), ctx.service_rate_bps);
        self.stamp(frame);
    }
    fn on_dequeue(&mut self, ctx: &mut CpCtx, _frame: &Frame) {
        self.pr.on_dequeue(ctx.now, ctx.queue_bytes);
    }
    fn tick_period_ps(&self) -> Option<u64> {
        Some(self.pr.p.interval_ps)
    }
    fn on_tick(&mut self, ctx: &mut CpCtx) {
        self.pr.end_interval(ctx.now, ctx.queue_bytes);
    }
}

// ------------------------------------------------------------------------------------------------
// reflector
// ------------------------------------------------------------------------------------------------

pub struct FecnReflector;

impl Reflector for FecnReflector {
    fn on_data(&mut self, ctx: &mut HostCtx, frame: &Frame) {
        if frame.tag.flags & tag::RD != 0 {
            ctx.send(frame.src, CmMsg { gen: 0, kind: KIND_REPLY, flow: frame.flow, cpid: 0, v: [frame.tag.rate, 0.0, 0.0] });
        }
    }
}

// ------------------------------------------------------------------------------------------------
// RP
// ------------------------------------------------------------------------------------------------

/// Rate limiter of one flow.
#[derive(Debug, Clone, Default)]
pub struct Rl {
    pub active: bool,
    pub rate: f64,
    pub last_tx: SimTime,
    pub last_probe: SimTime,
    /// A timeout timer is pending.
    pub timer: bool,
    /// Generation: bumped when the RL is deleted, so timers of a former RL are ignored.
    pub gen: u32,
}

pub struct FecnRp {
    r0: f64,
    line: f64,
    probe_interval: u64,
    tagging_rate: Option<f64>,
    probe_rule: ProbeRule,
    /// `per_source`: the host's last probe.
    last_source_probe: Option<SimTime>,
    timeout: u64,
    tag_bytes: u32,
    per_transfer: bool,
    pub rl: Vec<Rl>,
}

fn token(local: u32, gen: u32) -> u64 {
    ((gen as u64) << 32) | local as u64
}

impl FecnRp {
    fn arm_timer(&mut self, ctx: &mut HostCtx, local: u32, at: SimTime) {
        let rl = &mut self.rl[local as usize];
        rl.timer = true;
        ctx.set_timer(at, token(local, rl.gen));
    }
}

impl ReactionPoint for FecnRp {
    fn on_transmit(&mut self, ctx: &mut HostCtx, local: u32, frame: &mut Frame) {
        let now = ctx.now;
        let l = local as usize;
        let new_rl = !self.rl[l].active;
        if new_rl {
            // RLs are always on: the first frame of a flow without RL creates one at R0
            let rl = &mut self.rl[l];
            rl.active = true;
            rl.rate = self.r0;
            ctx.set_rate(local, Some(self.r0));
        }
        let probe = match (self.tagging_rate, self.probe_rule) {
            (Some(p), _) => p >= 1.0 || ctx.rng.bernoulli(p),
            (None, ProbeRule::PerFlow) => new_rl || now >= self.rl[l].last_probe + self.probe_interval,
            (None, ProbeRule::PerSource) => new_rl || self.last_source_probe.is_none_or(|t| now >= t + self.probe_interval),
            (None, ProbeRule::BelowLine) => new_rl || (self.rl[l].rate < self.line && now >= self.rl[l].last_probe + self.probe_interval),
            (None, ProbeRule::SourcePeriodic) => self.last_source_probe.is_none_or(|t| now >= t + self.probe_interval),
        };
        if probe {
            frame.tag.flags |= tag::RD;
            frame.tag.rate = -1.0;
            self.rl[l].last_probe = now;
            self.last_source_probe = Some(now);
            if self.tag_bytes > 0 {
                ctx.add_overhead_bytes(self.tag_bytes as u64);
            }
        }
        self.rl[l].last_tx = now;
        if !self.rl[l].timer {
            self.arm_timer(ctx, local, now + self.timeout);
        }
    }

    fn on_feedback(&mut self, ctx: &mut HostCtx, msg: &CmMsg) {
        let Some(local) = ctx.local_of(msg.flow) else { return };
        let rl = &mut self.rl[local as usize];
        if !rl.active {
            return; // the RL was deleted meanwhile; the next frame starts again at R0
        }
        let r = msg.v[0];
        match msg.kind {
            KIND_REPLY => rl.rate = if r < 0.0 { self.line } else { r.min(self.line) },
            KIND_EFECN => rl.rate = rl.rate.min(r.max(0.0)),
            _ => return,
        }
        ctx.set_rate(local, Some(rl.rate));
    }

    fn on_timer(&mut self, ctx: &mut HostCtx, tok: u64) {
        let local = (tok & 0xffff_ffff) as u32;
        let gen = (tok >> 32) as u32;
        let Some(rl) = self.rl.get_mut(local as usize) else { return };
        if rl.gen != gen || !rl.active {
            return;
        }
        rl.timer = false;
        let idle_until = rl.last_tx + self.timeout;
        if ctx.now >= idle_until && !ctx.has_backlog(local) {
            rl.active = false;
            rl.gen = rl.gen.wrapping_add(1);
            ctx.set_rate(local, None);
        } else {
            let at = if ctx.now >= idle_until { ctx.now + self.timeout } else { idle_until };
            self.arm_timer(ctx, local, at);
        }
    }

    fn rate_bps(&self, local: u32) -> Option<f64> {
        self.rl.get(local as usize).filter(|r| r.active).map(|r| r.rate)
    }

    fn wants_flow_start(&self) -> bool {
        self.per_transfer
    }

    /// `rl_scope = transfer`: a transfer on an idle pair is a new flow; its first frame creates a new RL
    /// at R0 and probes (the former RL's timer is ignored by its generation).
    fn on_flow_start(&mut self, ctx: &mut HostCtx, local: u32) {
        if self.rl.get(local as usize).is_some_and(|rl| rl.active) {
            self.forget(local as usize);
            ctx.set_rate(local, None);
        }
    }
    /// A transfer's own queue: no RL yet; its first frame creates one at R0 and probes.
    fn on_queue_open(&mut self, _ctx: &mut HostCtx, local: u32) {
        if local as usize >= self.rl.len() {
            self.rl.resize(local as usize + 1, Rl::default());
        }
        self.forget(local as usize);
    }
    fn on_queue_close(&mut self, _ctx: &mut HostCtx, local: u32) {
        self.forget(local as usize);
    }
}

impl FecnRp {
    /// No RL at `local`; its timer goes stale (generation).
    fn forget(&mut self, local: usize) {
        let rl = &mut self.rl[local];
        *rl = Rl { gen: rl.gen.wrapping_add(1), ..Rl::default() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cm::testkit::{data_frame, TestCp, TestHost};
    use crate::ids::{FlowId, NodeId, PortId};

    const US: u64 = 1_000_000;
    const MS: u64 = 1_000_000_000;

    fn sw(t_us: u64, n0: f64) -> SwitchParams {
        SwitchParams {
            interval_ps: t_us * US,
            qeq_bytes: 24_000.0,
            a: 1.1,
            b: 1.02,
            c: 0.1,
            beta: 0.5,
            n0,
            limit_increase: false,
            capacity_estimation: true,
            variable_capacity: true,
        }
    }

    fn params(tagging_rate: Option<f64>) -> Params {
        Params {
            switch: sw(1000, 200.0),
            tagging_rate,
            probe_rule: ProbeRule::PerFlow,
            rl_timeout_ps: 2 * MS,
            tag_bytes: 0,
            efecn: false,
            qsc_bytes: 83_200,
            rl_scope: RlScope::Pair,
        }
    }

    fn data(src: u32, dst: u32, flow: u32) -> Frame {
        data_frame(src, dst, flow, 1500)
    }

    fn port(rate: u64, cpid: u32) -> PortInfo {
        PortInfo { port: PortId(0), switch: NodeId(9), index: 0, rate_bps: rate, buffer_bytes: 150_000, cpid }
    }

    /// One host, one flow (FlowId 7), nothing queued.
    fn host_env() -> TestHost {
        let mut h = TestHost::new(FlowId(7), 5);
        h.backlog = vec![false];
        h
    }

    #[test]
    fn tag_is_stamped_with_the_minimum_over_the_path() {
        let rates = [3e9, 1.5e9, 4e9];
        let mut cps: Vec<FecnCp> = rates
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                let mut pr = PortRate::new(sw(1000, 200.0), 1e10);
                pr.r = r; // advertised rate of this CP, set by hand
                FecnCp { pr, cpid: i as u32 + 1, efecn: false, qsc: 0, last_efecn: vec![] }
            })
            .collect();
        let mut env = TestCp::new(1, vec![]);
        let mut f = data(1, 2, 0);
        f.tag.flags |= tag::RD;
        f.tag.rate = -1.0;
        for cp in cps.iter_mut() {
            cp.on_transmit(&mut env.ctx(0, 1500, 10_000_000_000), &mut f);
        }
        assert_eq!(f.tag.rate, 1.5e9);
        // untagged frames are left alone
        let mut g = data(1, 2, 0);
        let cp = FecnCp { pr: PortRate::new(sw(1000, 200.0), 1e10), cpid: 1, efecn: false, qsc: 0, last_efecn: vec![] };
        cp.stamp(&mut g);
        assert_eq!(g.tag.rate, 0.0);
        assert_eq!(g.tag.flags, 0);
    }

    #[test]
    fn reflector_replies_to_tagged_frames_only() {
        let mut env = host_env();
        let mut rf = FecnReflector;
        let mut f = data(1, 2, 7);
        rf.on_data(&mut env.ctx_at(0), &f);
        assert!(env.out.is_empty());
        f.tag.flags |= tag::RD;
        f.tag.rate = 2.5e9;
        rf.on_data(&mut env.ctx_at(0), &f);
        assert_eq!(env.out.len(), 1);
        assert_eq!(env.out[0].dst, NodeId(1));
        assert_eq!(env.out[0].msg.v[0], 2.5e9);
        assert_eq!(env.out[0].msg.flow, FlowId(7));
    }

    #[test]
    fn rl_per_transfer_restarts_each_transfer_at_r0_with_a_probe() {
        let mut env = host_env();
        let p = Params { rl_scope: RlScope::Transfer, ..params(None) };
        let mut rp = Fecn { p }.reaction_point(&env.info).unwrap();
        assert!(rp.wants_flow_start());
        let mut f = data(1, 2, 7);
        rp.on_transmit(&mut env.ctx_at(0), 0, &mut f);
        let reply = CmMsg { gen: 0, kind: KIND_REPLY, flow: FlowId(7), cpid: 1, v: [4e9, 0.0, 0.0] };
        rp.on_feedback(&mut env.ctx_at(10 * US), &reply);
        assert_eq!(rp.rate_bps(0), Some(4e9));
        // the pair's next transfer, 100 us later: a new RL at R0 and a probe, not the 4 Gb/s RL
        rp.on_flow_start(&mut env.ctx_at(100 * US), 0);
        assert_eq!(rp.rate_bps(0), None);
        let mut g = data(1, 2, 7);
        rp.on_transmit(&mut env.ctx_at(100 * US), 0, &mut g);
        assert_eq!(g.tag.flags & tag::RD, tag::RD, "the first frame of the new RL probes");
        assert_eq!(rp.rate_bps(0), Some(50e6));
        // pair scope (default): the engine does not call the hook, the RL is inherited
        let rp = Fecn { p: params(None) }.reaction_point(&env.info).unwrap();
        assert!(!rp.wants_flow_start());
    }

    #[test]
    fn rl_created_at_r0_probes_once_per_t_and_applies_replies() {
        let mut env = host_env();
        let scheme = Fecn { p: params(None) };
        let mut rp = scheme.reaction_point(&env.info).unwrap();
        let mut f = data(1, 2, 7);
        rp.on_transmit(&mut env.ctx_at(0), 0, &mut f);
        assert_eq!(f.tag.flags & tag::RD, tag::RD);
        assert_eq!(f.tag.rate, -1.0);
        assert_eq!(env.rates.last().unwrap().rate_bps, Some(50e6));
        assert_eq!(rp.rate_bps(0), Some(50e6));
        // next frame within T: not a probe
        let mut g = data(1, 2, 7);
        rp.on_transmit(&mut env.ctx_at(500 * US), 0, &mut g);
        assert_eq!(g.tag.flags & tag::RD, 0);
        // after T: probe again
        let mut h = data(1, 2, 7);
        rp.on_transmit(&mut env.ctx_at(1000 * US), 0, &mut h);
        assert_eq!(h.tag.flags & tag::RD, tag::RD);
        // a reply sets the rate (capped at line rate; -1 = line rate)
        let m = CmMsg { gen: 0, kind: KIND_REPLY, flow: FlowId(7), cpid: 0, v: [3e9, 0.0, 0.0] };
        rp.on_feedback(&mut env.ctx_at(1010 * US), &m);
        assert_eq!(rp.rate_bps(0), Some(3e9));
        let m = CmMsg { gen: 0, kind: KIND_REPLY, flow: FlowId(7), cpid: 0, v: [-1.0, 0.0, 0.0] };
        rp.on_feedback(&mut env.ctx_at(1020 * US), &m);
        assert_eq!(rp.rate_bps(0), Some(1e10));
        // E-FECN only lowers
        let m = CmMsg { gen: 0, kind: KIND_EFECN, flow: FlowId(7), cpid: 3, v: [2e9, 0.0, 0.0] };
        rp.on_feedback(&mut env.ctx_at(1030 * US), &m);
        assert_eq!(rp.rate_bps(0), Some(2e9));
        let m = CmMsg { gen: 0, kind: KIND_EFECN, flow: FlowId(7), cpid: 3, v: [5e9, 0.0, 0.0] };
        rp.on_feedback(&mut env.ctx_at(1040 * US), &m);
        assert_eq!(rp.rate_bps(0), Some(2e9));
    }

    /// Which of the frames sent at `times` (µs) on local flows `flows` are probes under `rule`.
    fn probes(rule: ProbeRule, sends: &[(u64, u32)], reply_line_at: Option<u64>) -> Vec<bool> {
        let mut env = TestHost::with_flows(vec![FlowId(7), FlowId(8)], 5);
        env.backlog = vec![false, false];
        let mut p = params(None);
        p.probe_rule = rule;
        let scheme = Fecn { p };
        let mut rp = scheme.reaction_point(&env.info).unwrap();
        let mut out = vec![];
        for &(t, local) in sends {
            if reply_line_at.is_some_and(|r| r == t) {
                let m = CmMsg { gen: 0, kind: KIND_REPLY, flow: FlowId(7 + local), cpid: 0, v: [-1.0, 0.0, 0.0] };
                rp.on_feedback(&mut env.ctx_at(t * US), &m);
            }
            let mut f = data(1, 2, 7 + local);
            rp.on_transmit(&mut env.ctx_at(t * US), local, &mut f);
            out.push(f.tag.flags & tag::RD == tag::RD);
        }
        out
    }

    #[test]
    fn probe_rules_of_spec_r7() {
        // (µs, flow): 0 f0, 100 f0, 100 f1, 1100 f0, 1200 f1, 1300 f0
        let sends = [(0, 0), (100, 0), (100, 1), (1100, 0), (1200, 1), (1300, 0)];
        // per flow: each new RL probes, then each RL once per T
        assert_eq!(probes(ProbeRule::PerFlow, &sends, None), vec![true, false, true, true, true, false]);
        // per source: new RLs probe, then one probe per host per T (1100: T after 100; 1200, 1300: not yet)
        assert_eq!(probes(ProbeRule::PerSource, &sends, None), vec![true, false, true, true, false, false]);
        // below line: flow 0 told "line rate" at 100 µs stops probing; flow 1 keeps its per-T probe
        assert_eq!(probes(ProbeRule::BelowLine, &sends, Some(100)), vec![true, false, true, false, true, false]);
        // source periodic: no probe at RL creation; one per host per T from the first frame on
        assert_eq!(probes(ProbeRule::SourcePeriodic, &sends, None), vec![true, false, false, true, false, false]);
    }

    #[test]
    fn tagging_probability_one_tags_every_frame() {
        let mut env = host_env();
        let scheme = Fecn { p: params(Some(1.0)) };
        let mut rp = scheme.reaction_point(&env.info).unwrap();
        for k in 0..10 {
            let mut f = data(1, 2, 7);
            rp.on_transmit(&mut env.ctx_at(k * US), 0, &mut f);
            assert_eq!(f.tag.flags & tag::RD, tag::RD);
        }
        // 10 %: about one in ten
        let scheme = Fecn { p: params(Some(0.1)) };
        let mut rp = scheme.reaction_point(&env.info).unwrap();
        let mut n = 0;
        for k in 0..10_000 {
            let mut f = data(1, 2, 7);
            rp.on_transmit(&mut env.ctx_at(k * US), 0, &mut f);
            n += (f.tag.flags & tag::RD != 0) as u32;
        }
        assert!((900..1100).contains(&n), "{n}");
    }

    #[test]
    fn rl_deleted_after_timeout_without_frames() {
        let mut env = host_env();
        let scheme = Fecn { p: params(None) };
        let mut rp = scheme.reaction_point(&env.info).unwrap();
        let mut f = data(1, 2, 7);
        rp.on_transmit(&mut env.ctx_at(0), 0, &mut f);
        let (t1, tok1) = env.timers[0];
        assert_eq!(t1, 2 * MS);
        // another frame at 1 ms moves the idle deadline to 3 ms
        let mut g = data(1, 2, 7);
        rp.on_transmit(&mut env.ctx_at(MS), 0, &mut g);
        assert_eq!(env.timers.len(), 1, "one pending timer per RL");
        env.timers.clear();
        rp.on_timer(&mut env.ctx_at(t1), tok1);
        assert_eq!(rp.rate_bps(0), Some(50e6), "not idle for 2 ms yet");
        let (t2, tok2) = env.timers[0];
        assert_eq!(t2, 3 * MS);
        // backlogged (e.g. paused) flows keep their RL
        env.backlog[0] = true;
        env.timers.clear();
        rp.on_timer(&mut env.ctx_at(t2), tok2);
        assert_eq!(rp.rate_bps(0), Some(50e6));
        let (t3, tok3) = env.timers[0];
        env.backlog[0] = false;
        env.timers.clear();
        env.rates.clear();
        rp.on_timer(&mut env.ctx_at(t3), tok3);
        assert_eq!(rp.rate_bps(0), None, "deleted after 2 ms idle");
        assert_eq!(env.rates.last().unwrap().rate_bps, None);
        // a stale timer of the deleted RL is ignored; a late reply is ignored
        rp.on_timer(&mut env.ctx_at(t3 + 1), tok3);
        let m = CmMsg { gen: 0, kind: KIND_REPLY, flow: FlowId(7), cpid: 0, v: [3e9, 0.0, 0.0] };
        rp.on_feedback(&mut env.ctx_at(t3 + 2), &m);
        assert_eq!(rp.rate_bps(0), None);
        // the next frame re-creates the RL at R0 and probes
        let mut h = data(1, 2, 7);
        rp.on_transmit(&mut env.ctx_at(t3 + 3), 0, &mut h);
        assert_eq!(rp.rate_bps(0), Some(50e6));
        assert_eq!(h.tag.flags & tag::RD, tag::RD);
    }

    #[test]
    fn efecn_backward_message_at_most_once_per_source_per_t() {
        let mut p = params(None);
        p.efecn = true;
        let scheme = Fecn { p };
        let mut cp = scheme.congestion_point(&port(10_000_000_000, 4)).unwrap();
        let mut env = TestCp::new(1, vec![]);
        for (now, q) in [(0, 50_000u64), (10, 90_000), (20, 90_000), (MS + 20, 90_000)] {
            let mut f = data(1, 2, 0);
            cp.on_enqueue(&mut env.ctx(now, q, 10_000_000_000), &mut f);
        }
        let out = &env.out;
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|e| e.msg.kind == KIND_EFECN && e.dst == NodeId(1) && e.msg.cpid == 4));
    }
}
