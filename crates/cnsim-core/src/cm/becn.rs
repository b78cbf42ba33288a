//! `becn`: Backward Explicit Congestion Notification of Jain et al. (Nov 2006; model reference §5.5, §12 A1).
//!
//! * **CP** (every switch egress port): the shared explicit-rate computation of
//!   [`super::explicit_rate`] every T; a port that carried data in the interval (data frames
//!   arrived — admitted or refused — or started transmission) then announces its advertised rate
//!   r_i. Control frames never make a port "carry data", so ports that only relay broadcasts stay
//!   silent; idle ports stay silent (their start-up rate would throttle everyone, §12 A1). How it
//!   announces is [`Announce`]:
//!   - `FloodPerRp` (default, model reference §12 R1): a port whose advertised rate restricts (r_i below its
//!     capacity C_i) sends one Ethernet-broadcast frame of `message_size_bytes` per reaction point (host
//!     with a flow) every T; the switches flood each one, so every host receives it. In S-SYM and
//!     S-ASYM this is [A]'s four full-size messages per interval (1.63 Gb/s at 30 µs), and the
//!     whole overhead crosses the 1 Gb/s link to h5 ((1000 − 163)/2 = 418 Mb/s at 300 µs).
//!   - `EveryHost` (model reference §12 A1, the first reading): one `message_size_bytes` unicast message to every
//!     host from every port that carried data.
//! * **RP** (source host): keeps the latest value heard from every CP, each expiring
//!   `expiry`·T after it was heard (2T), and sets every one of its flows to the minimum of
//!   the live values (no limiter when none is live). Hence "the most severe CP dominates all RPs"
//!   (seed 000): a flow is limited by CPs it does not even cross.

use super::explicit_rate::{PortRate, SwitchParams};
use super::{parse_params, CongestionPoint, CpCtx, HostCtx, HostInfo, PortInfo, ReactionPoint, Scheme};
use crate::error::ScenarioError;
use crate::frame::{CmMsg, Frame};
use crate::ids::FlowId;
use crate::time::SimTime;
use serde::Deserialize;

pub const KIND_BECN: u8 = 0;

/// IR parameters of `becn` (base units, no defaults; the Python model documents them).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Switch computation (T, Qeq, a, b, c, β, N0, helper-routine switches).
    pub switch: SwitchParams,
    /// A host forgets a CP's value this many intervals T after hearing it (2).
    pub expiry: f64,
    /// Size of a BECN message frame, bytes.
    pub message_size_bytes: u32,
    pub announce: Announce,
}

/// How a congestion point announces its rate (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Announce {
    FloodPerRp,
    EveryHost,
}

pub struct Becn {
    p: Params,
}

impl Scheme for Becn {
    fn name(&self) -> &'static str {
        "becn"
    }
    fn message_types(&self) -> &'static [&'static str] {
        &["becn"]
    }
    fn congestion_point(&self, port: &PortInfo) -> Option<Box<dyn CongestionPoint>> {
        Some(Box::new(BecnCp {
            pr: PortRate::new(self.p.switch.clone(), port.rate_bps as f64),
            cpid: port.cpid,
            bytes: self.p.message_size_bytes,
            announce: self.p.announce,
        }))
    }
    fn reaction_point(&self, host: &HostInfo) -> Option<Box<dyn ReactionPoint>> {
        let expiry = (self.p.expiry * self.p.switch.interval_ps as f64).round() as u64;
        Some(Box::new(BecnRp {
            n_flows: host.flows.len() as u32,
            line: host.line_rate_bps as f64,
            expiry: expiry.max(1),
            heard: Vec::new(),
            rate: None,
        }))
    }
}

pub fn build(params: &serde_json::Value) -> Result<Box<dyn Scheme>, ScenarioError> {
    let p: Params = parse_params("becn", params)?;
    p.switch.check("cm.params.switch")?;
    if !(p.expiry > 0.0 && p.expiry.is_finite()) {
        return Err(ScenarioError::field("cm.params.expiry", "must be > 0"));
    }
    if !(64..=9216).contains(&p.message_size_bytes) {
        return Err(ScenarioError::field("cm.params.message_size_bytes", format!("must be in 64..=9216, got {}", p.message_size_bytes)));
    }
    Ok(Box::new(Becn { p }))
}

// ------------------------------------------------------------------------------------------------
// CP
// ------------------------------------------------------------------------------------------------

pub struct BecnCp {
    pub pr: PortRate,
    cpid: u32,
    bytes: u32,
    announce: Announce,
}

impl CongestionPoint for BecnCp {
    fn on_enqueue(&mut self, ctx: &mut CpCtx, frame: &mut Frame) {
        self.pr.on_enqueue(ctx.now, frame.size, frame.is_data(), ctx.queue_bytes);
    }
    fn on_drop(&mut self, _ctx: &mut CpCtx, frame: &Frame) {
        self.pr.on_drop(frame.size, frame.is_data());
    }
    fn on_transmit(&mut self, ctx: &mut CpCtx, frame: &mut Frame) {
        self.pr.on_transmit(ctx.now, frame.size, frame.is_data(), ctx.service_rate_bps);
    }
    fn on_dequeue(&mut self, ctx: &mut CpCtx, _frame: &Frame) {
        self.pr.on_dequeue(ctx.now, ctx.queue_bytes);
    }
    fn tick_period_ps(&self) -> Option<u64> {
        Some(self.pr.p.interval_ps)
    }
    fn on_tick(&mut self, ctx: &mut CpCtx) {
        if self.pr.end_interval(ctx.now, ctx.queue_bytes) {
            let msg = CmMsg { gen: 0, kind: KIND_BECN, flow: FlowId::NONE, cpid: self.cpid, v: [self.pr.rate(), 0.0, 0.0] };
            match self.announce {
                Announce::FloodPerRp => {
                    if self.pr.rate() < self.pr.ci {
                        for _ in 0..ctx.sources().len() {
                            ctx.broadcast(msg, self.bytes);
                        }
                    }
                }
                Announce::EveryHost => {
                    for k in 0..ctx.hosts().len() {
                        let h = ctx.hosts()[k];
                        ctx.send_sized(h, msg, self.bytes);
                    }
                }
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------
// RP
// ------------------------------------------------------------------------------------------------

/// Latest value heard from one CP.
#[derive(Debug, Clone, Copy)]
struct Heard {
    cpid: u32,
    rate: f64,
    at: SimTime,
}

pub struct BecnRp {
    n_flows: u32,
    line: f64,
    expiry: u64,
    heard: Vec<Heard>,
    rate: Option<f64>,
}

impl BecnRp {
    /// Drop expired values and apply the minimum of the live ones to every flow.
    fn apply(&mut self, ctx: &mut HostCtx) {
        let now = ctx.now;
        let exp = self.expiry;
        self.heard.retain(|h| now < h.at + exp);
        let min = self.heard.iter().map(|h| h.rate).fold(f64::INFINITY, f64::min);
        let new = if min.is_finite() { Some(min.clamp(0.0, self.line)) } else { None };
        if new != self.rate {
            self.rate = new;
            for l in 0..self.n_flows {
                ctx.set_rate(l, new);
            }
        }
    }
}

impl ReactionPoint for BecnRp {
    fn on_feedback(&mut self, ctx: &mut HostCtx, msg: &CmMsg) {
        if msg.kind != KIND_BECN {
            return;
        }
        match self.heard.iter_mut().find(|h| h.cpid == msg.cpid) {
            Some(h) => {
                h.rate = msg.v[0];
                h.at = ctx.now;
            }
            None => self.heard.push(Heard { cpid: msg.cpid, rate: msg.v[0], at: ctx.now }),
        }
        // re-evaluate when this value expires (stale timers just re-evaluate: idempotent)
        ctx.set_timer(ctx.now + self.expiry, 0);
        self.apply(ctx);
    }
    fn on_timer(&mut self, ctx: &mut HostCtx, _token: u64) {
        self.apply(ctx);
    }
    fn rate_bps(&self, _local: u32) -> Option<f64> {
        self.rate
    }
    /// A transfer's own queue takes the host's advertised rate, like every flow of the host.
    fn on_queue_open(&mut self, ctx: &mut HostCtx, local: u32) {
        self.n_flows = self.n_flows.max(local + 1);
        if self.rate.is_some() {
            ctx.set_rate(local, self.rate);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cm::testkit::{data_frame, TestCp, TestHost};
    use crate::frame::FrameKind;
    use crate::ids::{NodeId, PortId};

    const US: u64 = 1_000_000;

    fn params() -> Params {
        Params {
            switch: SwitchParams {
                interval_ps: 30 * US,
                qeq_bytes: 24_000.0,
                a: 1.05,
                b: 1.2,
                c: 0.5,
                beta: 0.5,
                n0: 1.0,
                limit_increase: false,
                capacity_estimation: true,
                variable_capacity: true,
            },
            expiry: 2.0,
            message_size_bytes: 64,
            announce: Announce::EveryHost,
        }
    }

    #[test]
    fn cp_broadcasts_to_every_host_only_after_carrying_data() {
        let scheme = Becn { p: params() };
        let info = PortInfo { port: PortId(0), switch: NodeId(0), index: 0, rate_bps: 10_000_000_000, buffer_bytes: 150_000, cpid: 3 };
        let mut cp = scheme.congestion_point(&info).unwrap();
        let hosts = vec![NodeId(1), NodeId(2), NodeId(5)];
        let mut env = TestCp::new(1, hosts.clone());
        const G10: u64 = 10_000_000_000;
        // idle interval: no broadcast
        cp.on_tick(&mut env.ctx(30 * US, 0, G10));
        assert!(env.out.is_empty());
        // only a control frame: still silent
        let mut c = data_frame(0, 1, 0, 64);
        c.kind = FrameKind::Control;
        c.flow = FlowId::NONE;
        cp.on_enqueue(&mut env.ctx(31 * US, 64, G10), &mut c);
        cp.on_tick(&mut env.ctx(60 * US, 0, G10));
        assert!(env.out.is_empty());
        // a data frame: one message per host with the cpid and the rate
        cp.on_enqueue(&mut env.ctx(61 * US, 1500, G10), &mut data_frame(1, 5, 0, 1500));
        cp.on_tick(&mut env.ctx(90 * US, 1500, G10));
        let out = &env.out;
        assert_eq!(out.len(), 3);
        assert_eq!(out.iter().map(|e| e.dst).collect::<Vec<_>>(), hosts);
        assert!(out.iter().all(|e| e.msg.cpid == 3 && e.msg.kind == KIND_BECN && e.msg.v[0] > 0.0));
    }

    #[test]
    fn flood_per_rp_broadcasts_full_size_frames_only_while_the_rate_restricts() {
        let p = Params { message_size_bytes: 1526, announce: Announce::FloodPerRp, ..params() };
        let scheme = Becn { p };
        let info = PortInfo { port: PortId(0), switch: NodeId(0), index: 0, rate_bps: 10_000_000_000, buffer_bytes: 150_000, cpid: 3 };
        let mut cp = scheme.congestion_point(&info).unwrap();
        let sources = vec![NodeId(1), NodeId(2), NodeId(5)];
        let mut env = TestCp::new(1, sources.clone());
        const G10: u64 = 10_000_000_000;
        // 4 Gb/s of arrivals into the 10 Gb/s port: carries data, but the rate stays at capacity
        for k in 0..10u64 {
            cp.on_enqueue(&mut env.ctx(k * 3 * US, 1500, G10), &mut data_frame(1, 5, 0, 1500));
        }
        cp.on_tick(&mut env.ctx(30 * US, 0, G10));
        cp.on_tick(&mut env.ctx(60 * US, 0, G10));
        assert!(env.out.is_empty(), "a port that does not restrict stays silent");
        // 40 Gb/s of arrivals with a growing queue: the advertised rate falls below capacity
        for k in 0..100u64 {
            cp.on_enqueue(&mut env.ctx(60 * US + k * 300_000, 1500 * (k + 1), G10), &mut data_frame(1, 5, 0, 1500));
        }
        cp.on_tick(&mut env.ctx(90 * US, 150_000, G10));
        let out = &env.out;
        assert_eq!(out.len(), sources.len(), "one broadcast per reaction point");
        assert!(out.iter().all(|e| e.dst.is_none() && e.bytes == 1526 && e.msg.cpid == 3 && e.msg.v[0] < 1e10));
    }

    #[test]
    fn rp_uses_the_minimum_of_live_values_and_forgets_after_2t() {
        let scheme = Becn { p: params() };
        let mut h = TestHost::with_flows(vec![FlowId(0), FlowId(1)], 2);
        let mut rp = scheme.reaction_point(&h.info).unwrap();
        let msg = |cpid, r| CmMsg { gen: 0, kind: KIND_BECN, flow: FlowId::NONE, cpid, v: [r, 0.0, 0.0] };
        rp.on_feedback(&mut h.ctx_at(0), &msg(1, 4e9));
        assert_eq!(rp.rate_bps(0), Some(4e9));
        assert_eq!(h.rates.len(), 2, "every flow set");
        rp.on_feedback(&mut h.ctx_at(US), &msg(2, 0.5e9));
        assert_eq!(rp.rate_bps(1), Some(0.5e9));
        // CP 1 refreshes; CP 2 goes silent: its value expires 2T = 60 us after it was heard
        rp.on_feedback(&mut h.ctx_at(30 * US), &msg(1, 4e9));
        assert_eq!(rp.rate_bps(0), Some(0.5e9));
        rp.on_feedback(&mut h.ctx_at(60 * US), &msg(1, 4e9));
        assert_eq!(rp.rate_bps(0), Some(0.5e9));
        rp.on_timer(&mut h.ctx_at(61 * US), 0);
        assert_eq!(rp.rate_bps(0), Some(4e9));
        // everything expired: no limiter
        rp.on_timer(&mut h.ctx_at(200 * US), 0);
        assert_eq!(rp.rate_bps(0), None);
        assert_eq!(h.rates.last().unwrap().rate_bps, None);
    }
}
