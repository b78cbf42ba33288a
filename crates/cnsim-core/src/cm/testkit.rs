//! Test kit for scheme unit tests: hand-made engine contexts, so a CP or RP state machine can be
//! driven directly (one clause of the control law per test) without building a network.

use super::{CmMsg, CpCtx, Emit, HostCtx, HostInfo, RateChange, ReactionPoint};
use crate::frame::{Frame, FrameKind, Tag};
use crate::ids::{FlowId, NodeId, PortId};
use crate::rng::Stream;
use crate::time::SimTime;

/// A scheme's default parameters as the Python front end writes them: `tests/golden/cm-params.json`,
/// written from `cnsim.schemes` by `tests/golden/make_irs.py` (`key` = the scheme's tag, or `dcqcn-mellanox`
/// for that variant). The defaults are stated once, in the Python models; the Rust tests read them.
pub fn defaults<T: serde::de::DeserializeOwned>(key: &str) -> T {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/golden/cm-params.json");
    let all: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).expect("cm-params.json")).expect("JSON");
    serde_json::from_value(all[key]["params"].clone()).unwrap_or_else(|e| panic!("{key} in cm-params.json: {e}"))
}

/// A host with one 10 Gb/s NIC and one flow (`flow`, 1500-B frames, node 1 → node 2) whose
/// requests (rate changes, timers, control frames) are collected for inspection.
pub struct TestHost {
    pub now: SimTime,
    pub info: HostInfo,
    pub rng: Stream,
    pub out: Vec<Emit>,
    pub rates: Vec<RateChange>,
    pub limits: Vec<(u32, Option<u64>)>,
    /// INT stack the hooks see (`HostCtx::int`).
    pub int: Option<crate::int::IntStack>,
    pub timers: Vec<(SimTime, u64)>,
    pub backlog: Vec<bool>,
    pub extra: u64,
}

impl TestHost {
    /// `rng_id` selects the host's random stream (seed 1, replication 0).
    pub fn new(flow: FlowId, rng_id: u64) -> Self {
        Self::with_flows(vec![flow], rng_id)
    }

    /// Host 1 with several flows (all to node 2, 1500-B frames, all backlogged).
    pub fn with_flows(flows: Vec<FlowId>, rng_id: u64) -> Self {
        let n = flows.len();
        TestHost {
            now: 0,
            info: HostInfo {
                host: NodeId(1),
                line_rate_bps: 10_000_000_000,
                flows,
                flow_dst: vec![NodeId(2); n],
                flow_frame_bytes: vec![1500; n],
                flow_base_rtt_ps: vec![10_000_000; n],
                max_base_rtt_ps: 10_000_000,
            },
            rng: Stream::new(1, 0, rng_id),
            out: vec![],
            rates: vec![],
            limits: vec![],
            int: None,
            timers: vec![],
            backlog: vec![true; n],
            extra: 0,
        }
    }

    /// The context a hook would get at `self.now`.
    pub fn ctx(&mut self) -> HostCtx<'_> {
        HostCtx {
            now: self.now,
            info: &self.info,
            rng: &mut self.rng,
            int: self.int.as_ref(),
            out: &mut self.out,
            rates: &mut self.rates,
            limits: &mut self.limits,
            timers: &mut self.timers,
            backlog: &self.backlog,
            extra_overhead_bytes: &mut self.extra,
        }
    }

    /// The context at time `now` (sets `self.now`).
    pub fn ctx_at(&mut self, now: SimTime) -> HostCtx<'_> {
        self.now = now;
        self.ctx()
    }

    /// Fire every pending timer due at or before `t` in time order (re-reading the list as
    /// handlers add timers), then set the clock to `t`.
    pub fn advance<R: ReactionPoint>(&mut self, rp: &mut R, t: SimTime) {
        while let Some((i, &(at, tok))) = self.timers.iter().enumerate().filter(|(_, x)| x.0 <= t).min_by_key(|(i, x)| (x.0, *i)) {
            self.timers.remove(i);
            self.now = at;
            rp.on_timer(&mut self.ctx(), tok);
        }
        self.now = t;
    }
}

/// Drive `rp` at random for `steps` steps — feedback `msg(rng)`, a transmitted 1 500-byte frame,
/// time passing with its timers — and check after each that [`ReactionPoint::rate_is_limiter`]
/// holds: `rate_bps(0)` is the rate last set on flow 0's limiter (`None` before any or after a
/// release), which the rate series then reads from the flow instead of the RP.
pub fn check_rate_is_limiter<R: ReactionPoint>(rp: &mut R, h: &mut TestHost, steps: usize, msg: impl Fn(&mut Stream) -> CmMsg) {
    assert!(rp.rate_is_limiter());
    let mut rng = Stream::new(77, 0, 0);
    for step in 0..steps {
        match rng.below(3) {
            0 => {
                let m = msg(&mut rng);
                rp.on_feedback(&mut h.ctx(), &m);
            }
            1 => {
                let mut f = data_frame(1, 2, h.info.flows[0].0, 1500);
                rp.on_transmit(&mut h.ctx(), 0, &mut f);
            }
            _ => {
                let t = h.now + rng.below(2_000_000_000); // up to 2 ms
                h.advance(rp, t);
            }
        }
        let set = h.rates.iter().rev().find(|r| r.local == 0).and_then(|r| r.rate_bps);
        assert_eq!(rp.rate_bps(0).map(f64::to_bits), set.map(f64::to_bits), "step {step}");
    }
}

/// Collects what a congestion point emits.
pub struct TestCp {
    pub rng: Stream,
    pub out: Vec<Emit>,
    pub hosts: Vec<NodeId>,
}

impl TestCp {
    pub fn new(rng_id: u64, hosts: Vec<NodeId>) -> Self {
        TestCp { rng: Stream::new(1, 0, rng_id), out: vec![], hosts }
    }
    /// The context a CP hook would get with queue `queue_bytes` and service rate `rate_bps`.
    pub fn ctx(&mut self, now: SimTime, queue_bytes: u64, rate_bps: u64) -> CpCtx<'_> {
        CpCtx { now, queue_bytes, service_rate_bps: rate_bps, rng: &mut self.rng, out: &mut self.out, hosts: &self.hosts, sources: &self.hosts }
    }
}

/// A data frame of `size` bytes of `flow` from `src` to `dst`, untagged.
pub fn data_frame(src: u32, dst: u32, flow: u32, size: u32) -> Frame {
    Frame {
        kind: FrameKind::Data,
        size,
        src: NodeId(src),
        dst: NodeId(dst),
        flow: FlowId(flow),
        transfer: u32::MAX,
        ingress: PortId::NONE,
        born: 0,
        tag: Tag::default(),
        prio: 0,
        seq: 0,
    }
}
