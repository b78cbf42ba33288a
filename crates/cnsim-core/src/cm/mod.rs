//! Congestion management as plug-ins (802.1Qau roles).
//!
//! A scheme is one file in this folder holding its `Params`, its congestion point (CP, at a switch
//! egress queue), its reaction point (RP, at a source host, owning the rate limiters of that host's
//! flows) and, for forward schemes, its reflector (at the destination host). The engine calls the
//! hooks below and carries out what the hooks ask through their context objects; it knows nothing
//! of any scheme. Adding a scheme = one file + one row in [`REGISTRY`].
//!
//! How the families fit (see docs/architecture.md):
//! * BCN / ECM / QCN: the CP samples in [`CongestionPoint::on_enqueue`] and emits a backward
//!   control frame with [`CpCtx::send`] to the sampled frame's source; the RP reacts in
//!   [`ReactionPoint::on_feedback`]; BCN's RL tag is stamped in [`ReactionPoint::on_transmit`]
//!   (`Frame::tag`), read back by the CP.
//! * FECN: the RP marks a data frame as rate-discovery probe in `on_transmit`; every CP on the path
//!   stamps `min(tag, advertised rate)` in [`CongestionPoint::on_transmit`]; the destination's
//!   [`Reflector::on_data`] sends a reply with [`HostCtx::send`]; the RP applies it.
//! * BECN: the CP's periodic [`CongestionPoint::on_tick`] broadcasts with [`CpCtx::send`] to every
//!   host of [`CpCtx::hosts`]; the per-host RP keeps the minimum per CP.
//! * DCQCN: the CP marks CE on a data frame (`Frame::tag.flags`), the reflector (NP) sends CNPs,
//!   the RP runs the rate machine with timers ([`HostCtx::set_timer`]).
//! * HPCC: no CP; the scheme asks for INT ([`Scheme::wants_int`]), the switches stamp every data
//!   frame ([`crate::int`]), the reflector echoes the stack in an ACK ([`HostCtx::send_int`]) and
//!   the RP sets a window ([`HostCtx::set_send_limit`]) and a pacing rate from [`HostCtx::int`].

pub mod bcn;
pub mod becn;
pub mod dcqcn;
pub mod explicit_rate;
pub mod fecn;
pub mod hpcc;
pub mod none;
pub mod qcn;
#[cfg(test)]
pub(crate) mod testkit;

use crate::error::ScenarioError;
use crate::frame::{CmMsg, Frame};
use crate::ids::{FlowId, NodeId, PortId};
use crate::int::IntStack;
use crate::time::SimTime;

/// Static facts about a CP's queue given to the scheme when it is built.
#[derive(Debug, Clone)]
pub struct PortInfo {
    pub port: PortId,
    pub switch: NodeId,
    /// Index of the port within its switch.
    pub index: u32,
    /// Nominal line rate of the port, bit/s.
    pub rate_bps: u64,
    /// Egress buffer limit that applies to this queue, bytes (BUF-OUT limit, or the partition /
    /// pool size for the other policies).
    pub buffer_bytes: u64,
    /// Globally unique congestion-point id (never 0).
    pub cpid: u32,
}

/// Static facts about a host given to its RP / reflector.
#[derive(Debug, Clone)]
pub struct HostInfo {
    pub host: NodeId,
    /// NIC line rate, bit/s.
    pub line_rate_bps: u64,
    /// The flows that originate at this host, in order; `local` indices below refer to this list.
    pub flows: Vec<FlowId>,
    /// Destination of each of those flows.
    pub flow_dst: Vec<NodeId>,
    /// Data frame size of each of those flows.
    pub flow_frame_bytes: Vec<u32>,
    /// Base RTT of each of those flows, ps: twice the propagation and switch latencies of its path,
    /// the serialisation of one data frame out and one control frame back, and the host's response
    /// delay (`build::base_rtts`).
    pub flow_base_rtt_ps: Vec<u64>,
    /// The largest base RTT of any flow of the network, ps.
    pub max_base_rtt_ps: u64,
}

impl HostInfo {
    /// Local index of a flow of this host (`None` if the flow does not start here).
    pub fn local_of(&self, flow: FlowId) -> Option<u32> {
        // the engine lists a host's flows in ascending id order: a binary search (hosts of a large
        // fabric have ~1 000 flows); the linear scan only answers lists built in another order
        match self.flows.binary_search(&flow) {
            Ok(i) => Some(i as u32),
            Err(_) => self.flows.iter().position(|&f| f == flow).map(|i| i as u32),
        }
    }
}

/// What a hook may ask of the engine at a congestion point.
pub struct CpCtx<'a> {
    pub now: SimTime,
    /// Current egress queue occupancy (bytes), after the enqueue / dequeue being reported.
    pub queue_bytes: u64,
    /// Current service rate of the port (bit/s); differs from the line rate under a hotspot.
    pub service_rate_bps: u64,
    /// Random stream of this CP (stable id derived from the cpid).
    pub rng: &'a mut crate::rng::Stream,
    pub(crate) out: &'a mut Vec<Emit>,
    pub(crate) hosts: &'a [NodeId],
    pub(crate) sources: &'a [NodeId],
}

impl<'a> CpCtx<'a> {
    /// Send a control frame (control-frame size) from this switch to `dst` (a host). It is
    /// routed, queued, buffered and possibly dropped like any frame; counted as overhead at origin.
    pub fn send(&mut self, dst: NodeId, msg: CmMsg) {
        self.out.push(Emit { dst, msg, bytes: 0, echo_int: false });
    }
    /// Like [`Self::send`] with a frame of `bytes` bytes.
    pub fn send_sized(&mut self, dst: NodeId, msg: CmMsg, bytes: u32) {
        self.out.push(Emit { dst, msg, bytes, echo_int: false });
    }
    /// Like [`Self::send_sized`] but as an Ethernet broadcast: every switch floods it to all its
    /// ports but the one it came in on, so one frame reaches every host (crossing each link of a
    /// tree once). Counted once as overhead, at its origin.
    pub fn broadcast(&mut self, msg: CmMsg, bytes: u32) {
        self.out.push(Emit { dst: NodeId::NONE, msg, bytes, echo_int: false });
    }
    /// Every host of the network (for broadcasts).
    pub fn hosts(&self) -> &[NodeId] {
        self.hosts
    }
    /// The hosts where at least one flow starts (the reaction points).
    pub fn sources(&self) -> &[NodeId] {
        self.sources
    }
}

/// What a hook may ask of the engine at a host (RP or reflector).
pub struct HostCtx<'a> {
    pub now: SimTime,
    pub info: &'a HostInfo,
    pub rng: &'a mut crate::rng::Stream,
    /// INT stack of the frame being handled, when the scheme wants INT: the delivered data frame
    /// in [`Reflector::on_data`], the control frame in [`ReactionPoint::on_feedback`]; else `None`.
    pub int: Option<&'a IntStack>,
    pub(crate) out: &'a mut Vec<Emit>,
    pub(crate) rates: &'a mut Vec<RateChange>,
    pub(crate) limits: &'a mut Vec<(u32, Option<u64>)>,
    pub(crate) timers: &'a mut Vec<(SimTime, u64)>,
    pub(crate) backlog: &'a dyn Backlog,
    pub(crate) extra_overhead_bytes: &'a mut u64,
}

/// What a hook may ask about the host's send queues, answered only when a hook needs it (the
/// engine answers from its flow table in O(1); a host of a large fabric has ~1 000 flows, and with
/// a queue per transfer they come and go).
pub trait Backlog {
    fn has_frame(&self, local: u32, flow: FlowId) -> bool;
    /// The local index of send queue `flow` at `host`: `Some(None)` when it is not one of the
    /// host's open queues; `None` when this table cannot tell (then [`HostInfo::local_of`]).
    fn local_of(&self, _host: NodeId, _flow: FlowId) -> Option<Option<u32>> {
        None
    }
}

/// A list by local index (tests build hosts by hand).
impl Backlog for Vec<bool> {
    fn has_frame(&self, local: u32, _flow: FlowId) -> bool {
        self.get(local as usize).copied().unwrap_or(false)
    }
}

/// What one rate limiter of a per-flow scheme (BCN/ECM, FECN) belongs to: the (source, destination)
/// pair, kept across its transfers (model reference §3), or one transfer — [D]'s "flow" — so each
/// transfer starts unregulated with fresh state (issue 11). The scenario's `rl_scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RlScope {
    #[default]
    Pair,
    Transfer,
}

/// A rate-limiter update requested by an RP.
#[derive(Debug, Clone, Copy)]
pub struct RateChange {
    pub local: u32,
    /// New rate in bit/s; `None` removes the limiter (line rate, untagged).
    pub rate_bps: Option<f64>,
}

/// A control frame requested by a hook.
#[derive(Debug, Clone, Copy)]
pub struct Emit {
    /// Destination host; `NodeId::NONE` = broadcast (flooded by the switches).
    pub dst: NodeId,
    pub msg: CmMsg,
    /// Frame size in bytes; 0 = the run's control-frame size.
    pub bytes: u32,
    /// Copy the INT stack of the frame being handled into this control frame.
    pub echo_int: bool,
}

impl<'a> HostCtx<'a> {
    /// Send a control frame from this host to `dst`.
    pub fn send(&mut self, dst: NodeId, msg: CmMsg) {
        self.out.push(Emit { dst, msg, bytes: 0, echo_int: false });
    }
    /// Like [`Self::send`], the control frame carrying a copy of [`Self::int`] (a reflector echoing
    /// the telemetry of the data frame it handles).
    pub fn send_int(&mut self, dst: NodeId, msg: CmMsg) {
        self.out.push(Emit { dst, msg, bytes: 0, echo_int: true });
    }
    /// Window of local flow `local`: it may start a data frame only while the bytes it has sent
    /// (from t = 0, the sizes [`ReactionPoint::on_transmit`] sees) are below `limit` — a window `W`
    /// over `A` acknowledged bytes is `Some(A + W)`; `None` removes the window. A frame may end
    /// beyond the limit (the last one started below it), as in the HPCC reference code.
    pub fn set_send_limit(&mut self, local: u32, limit: Option<u64>) {
        self.limits.push((local, limit));
    }
    /// Set (Some) or remove (None) the rate limiter of local flow `local`.
    /// The engine re-paces the flow: next start = last start + size / new rate (never before now).
    pub fn set_rate(&mut self, local: u32, rate_bps: Option<f64>) {
        self.rates.push(RateChange { local, rate_bps });
    }
    /// Call [`ReactionPoint::on_timer`] with `token` at time `at` (>= now). Timers cannot be
    /// cancelled: the scheme ignores stale tokens (generation counters).
    pub fn set_timer(&mut self, at: SimTime, token: u64) {
        self.timers.push((at.max(self.now), token));
    }
    /// The local index of the host's send queue `flow` (the flow a message is about), if it is
    /// one of the host's open queues.
    pub fn local_of(&self, flow: FlowId) -> Option<u32> {
        self.backlog.local_of(self.info.host, flow).unwrap_or_else(|| self.info.local_of(flow))
    }
    /// True when local flow `local` has frames waiting at the host.
    pub fn has_backlog(&self, local: u32) -> bool {
        self.info.flows.get(local as usize).is_some_and(|&f| self.backlog.has_frame(local, f))
    }
    /// Count extra signalling bytes generated here (e.g. FECN tag bytes) as overhead.
    pub fn add_overhead_bytes(&mut self, bytes: u64) {
        *self.extra_overhead_bytes += bytes;
    }
}

/// Bits of [`CongestionPoint::hooks`]: which frame hooks a congestion point implements.
pub mod cp_hooks {
    pub const ENQUEUE: u8 = 1;
    pub const DROP: u8 = 2;
    pub const TRANSMIT: u8 = 4;
    pub const DEQUEUE: u8 = 8;
    pub const ALL: u8 = ENQUEUE | DROP | TRANSMIT | DEQUEUE;
}

/// Congestion point: one per switch egress queue.
pub trait CongestionPoint: Send {
    /// The frame hooks this CP implements ([`cp_hooks`] bits); the engine skips calls of the others
    /// (they would be the no-op defaults). Default: all of them, always correct.
    fn hooks(&self) -> u8 {
        cp_hooks::ALL
    }
    /// A frame (data or control, never PAUSE) was admitted to the queue; `ctx.queue_bytes`
    /// includes it. Sampling schemes decide here; they must not sample control frames.
    fn on_enqueue(&mut self, _ctx: &mut CpCtx, _frame: &mut Frame) {}
    /// A frame headed for this queue was refused by buffer admission (it was never enqueued).
    fn on_drop(&mut self, _ctx: &mut CpCtx, _frame: &Frame) {}
    /// A frame starts transmission on the port (stamping, marking). `ctx.queue_bytes` still
    /// includes it.
    fn on_transmit(&mut self, _ctx: &mut CpCtx, _frame: &mut Frame) {}
    /// A frame's last bit left the port; `ctx.queue_bytes` no longer includes it.
    fn on_dequeue(&mut self, _ctx: &mut CpCtx, _frame: &Frame) {}
    /// Period of [`Self::on_tick`], ps; `None` = no tick.
    fn tick_period_ps(&self) -> Option<u64> {
        None
    }
    fn on_tick(&mut self, _ctx: &mut CpCtx) {}
}

/// Reaction point: one per source host, owning the rate limiters of the host's flows.
pub trait ReactionPoint: Send {
    /// Called once at t = 0 (initial limiter rates, periodic timers).
    fn on_start(&mut self, _ctx: &mut HostCtx) {}
    /// A control frame addressed to this host arrived; called after the response delay.
    fn on_feedback(&mut self, _ctx: &mut HostCtx, _msg: &CmMsg) {}
    /// A data frame of local flow `local` starts transmission at the NIC (tagging, byte counters).
    fn on_transmit(&mut self, _ctx: &mut HostCtx, _local: u32, _frame: &mut Frame) {}
    /// A timer set with [`HostCtx::set_timer`] fired.
    fn on_timer(&mut self, _ctx: &mut HostCtx, _token: u64) {}
    /// Whether [`Self::on_flow_start`] does anything (the engine skips the call otherwise).
    fn wants_flow_start(&self) -> bool {
        false
    }
    /// A transfer (one workload flow) starts on local flow `local` while it has no frame waiting:
    /// schemes whose state belongs to a connection may start it afresh.
    fn on_flow_start(&mut self, _ctx: &mut HostCtx, _local: u32) {}
    /// A send queue of its own opened for a transfer at local index `local` (`nic.queues =
    /// "transfer"`; a new queue pair or connection; [`HostCtx::info`] lists its destination, frame
    /// size and base RTT at `local`). The RP makes room for it and starts its state afresh: line
    /// rate, no limiter. An index is reused once its queue has closed: the state of the earlier
    /// queue, and its pending timers, must not carry over.
    fn on_queue_open(&mut self, _ctx: &mut HostCtx, _local: u32) {}
    /// The queue at `local` closed (its transfer is complete and nothing of it is in flight). Its
    /// timers must go stale; what the RP asks for it from now on is ignored.
    fn on_queue_close(&mut self, _ctx: &mut HostCtx, _local: u32) {}
    /// Current limiter rate of a local flow (bit/s), for the rate time series; `None` = no limiter.
    fn rate_bps(&self, _local: u32) -> Option<f64> {
        None
    }
    /// Whether [`Self::rate_bps`] is always the rate this RP last set on the flow's limiter
    /// ([`HostCtx::set_rate`]; `None` once released): then the rate series reads the flows' limiters
    /// in flow order instead of calling every host's RP at every sample.
    fn rate_is_limiter(&self) -> bool {
        false
    }
}

/// Reflector: one per destination host, for forward schemes.
pub trait Reflector: Send {
    /// A data frame was delivered to this host.
    fn on_data(&mut self, _ctx: &mut HostCtx, _frame: &Frame) {}
    /// Whether [`Self::on_data`] may do anything for `frame` (asked as the frame leaves the last
    /// switch). When it does not, the engine may count the delivery without an event of its own,
    /// as for a host without a reflector. Default: every frame.
    fn wants_data(&self, _frame: &Frame) -> bool {
        true
    }
    /// Send queue `flow` (a transfer's own, at another host) closed: what the reflector keeps for it
    /// must not carry over to the next queue of that slot.
    fn on_queue_close(&mut self, _flow: FlowId) {}
}

/// A reaction point's state per flow of its host, by local index: the first flow's kept in the
/// record itself, the others in a vector. Most hosts have one flow, and every transmission reads
/// its state: read through a vector's buffer, that was a second cache miss after the record's.
/// `repr(C)`: the length, which every access reads, just before the first flow's state (one cache
/// line with it when that is small enough).
#[derive(Debug, Clone)]
#[repr(C)]
pub struct PerFlow<T> {
    len: usize,
    first: T,
    rest: Vec<T>,
}

impl<T: Clone + Default> PerFlow<T> {
    /// `len` flows in the default state.
    pub fn new(len: usize) -> Self {
        PerFlow { first: T::default(), rest: vec![T::default(); len.saturating_sub(1)], len }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn get(&self, local: usize) -> Option<&T> {
        (local < self.len).then(|| &self[local])
    }
    pub fn get_mut(&mut self, local: usize) -> Option<&mut T> {
        (local < self.len).then(|| &mut self[local])
    }
    /// Room for `len` flows (at least), the new ones in the default state.
    pub fn grow_to(&mut self, len: usize) {
        if len > self.len {
            self.rest.resize(len - 1, T::default());
            self.len = len;
        }
    }
}

impl<T> std::ops::Index<usize> for PerFlow<T> {
    type Output = T;
    #[inline]
    fn index(&self, local: usize) -> &T {
        assert!(local < self.len, "flow {local} of {}", self.len);
        if local == 0 {
            &self.first
        } else {
            &self.rest[local - 1]
        }
    }
}

impl<T> std::ops::IndexMut<usize> for PerFlow<T> {
    #[inline]
    fn index_mut(&mut self, local: usize) -> &mut T {
        assert!(local < self.len, "flow {local} of {}", self.len);
        if local == 0 {
            &mut self.first
        } else {
            &mut self.rest[local - 1]
        }
    }
}

/// A built scheme instance: factories for its parts plus its message-type names.
pub trait Scheme: Send {
    /// Registry tag.
    fn name(&self) -> &'static str;
    /// Names of the message types; `CmMsg::kind` indexes this list (summary `control.messages`).
    fn message_types(&self) -> &'static [&'static str];
    /// Congestion point for a switch egress port (`None` = no CP there).
    fn congestion_point(&self, _port: &PortInfo) -> Option<Box<dyn CongestionPoint>> {
        None
    }
    /// Reaction point for a host with at least one flow.
    fn reaction_point(&self, _host: &HostInfo) -> Option<Box<dyn ReactionPoint>> {
        None
    }
    /// Reflector for a host.
    fn reflector(&self, _host: &HostInfo) -> Option<Box<dyn Reflector>> {
        None
    }
    /// Should the switches stamp in-band telemetry into every data frame ([`crate::int`])?
    fn wants_int(&self) -> bool {
        false
    }
    /// With INT: the header bytes the source and each switch add to a data frame on the wire.
    fn int_wire(&self) -> crate::int::IntWire {
        crate::int::IntWire::default()
    }
}

/// Deserialise a scheme's parameters strictly, naming the field path on error.
pub fn parse_params<T: serde::de::DeserializeOwned>(scheme: &str, params: &serde_json::Value) -> Result<T, ScenarioError> {
    let v = if params.is_null() { serde_json::Value::Object(Default::default()) } else { params.clone() };
    serde_path_to_error::deserialize(v)
        .map_err(|e| ScenarioError::Field { path: format!("cm.params.{}", e.path()), message: format!("{} (scheme '{scheme}')", e.inner()) })
}

/// Builds a scheme instance from its parameters (scheme-specific JSON in base units).
pub type Builder = fn(&serde_json::Value) -> Result<Box<dyn Scheme>, ScenarioError>;

/// The registry: every scheme's tag, written once, with its builder. Adding a scheme = one file in
/// this folder + one row here.
pub const REGISTRY: &[(&str, Builder)] = &[
    ("none", none::build),
    ("bcn", bcn::build),
    ("ecm", bcn::build_ecm),
    ("becn", becn::build),
    ("fecn", fecn::build),
    ("qcn", qcn::build),
    ("dcqcn", dcqcn::build),
    ("hpcc", hpcc::build),
];

/// Known scheme tags, in registry order.
pub fn scheme_tags() -> Vec<&'static str> {
    REGISTRY.iter().map(|(tag, _)| *tag).collect()
}

/// Map a scenario tag to its implementation.
pub fn registry(scheme: &str, params: &serde_json::Value) -> Result<Box<dyn Scheme>, ScenarioError> {
    match REGISTRY.iter().find(|(tag, _)| *tag == scheme) {
        Some((_, build)) => build(params),
        None => {
            Err(ScenarioError::Field { path: "cm.scheme".into(), message: format!("unknown scheme '{scheme}'; known: {}", scheme_tags().join(", ")) })
        }
    }
}

#[cfg(test)]
mod registry_tests {
    use super::*;

    #[test]
    fn tags_are_unique_and_an_unknown_tag_lists_them() {
        // "none" needs no parameters: the registry hands the tag's own builder out
        assert_eq!(registry("none", &serde_json::Value::Null).map(|s| s.name()).ok(), Some("none"));
        let tags = scheme_tags();
        let mut uniq = tags.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), tags.len(), "tags are unique");
        let err = registry("nosuch", &serde_json::Value::Null).err().expect("unknown tag is an error");
        assert!(err.to_string().contains("known: none, bcn"), "{err}");
    }
}
