//! The engine IR: the compiled, fully explicit form of a scenario.
//!
//! Python (`cnsim.scenario.spec`) validates the user's TOML, resolves presets, units and defaults and
//! serialises this structure as JSON. The IR is *not* a second schema: it carries no defaults and
//! no unit strings; every time is in integer picoseconds, every size in bytes, every rate in bit/s.
//! Nodes, links and flows refer to each other by index into their arrays.
//!
//! Rust deserialises it with `deny_unknown_fields` and re-checks every invariant in
//! [`Ir::validate`]; a bad IR gives a [`crate::error::ScenarioError`] naming the field path, never
//! a panic.

use serde::{Deserialize, Serialize};

/// Root of the IR.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ir {
    /// Scenario name (for reports only).
    pub name: String,
    /// Simulated duration, ps. The run stops at this instant.
    pub duration_ps: u64,
    /// Statistics (throughput, queue statistics, FCT, pause fraction) are taken over
    /// `[warmup_ps, duration_ps)`; counters for conservation cover the whole run.
    pub warmup_ps: u64,
    /// Master seed; every random process derives its own stream from it and a stable id.
    pub seed: u64,
    /// Replication index mixed into every stream (common random numbers across schemes).
    pub replication: u64,
    /// Size of every congestion-management control frame and of PAUSE frames, bytes (64).
    pub control_frame_bytes: u32,
    /// Bytes added on the wire to every frame (preamble + SFD + IFG = 20 when enabled; else 0).
    /// They occupy link time but not buffer.
    pub wire_overhead_bytes: u32,
    pub nodes: Vec<NodeIr>,
    pub links: Vec<LinkIr>,
    pub flows: Vec<FlowIr>,
    pub sources: Vec<SourceIr>,
    /// Sets of destination hosts shared by sources ([`SourceIr::dst_set`]): a generator's "all"
    /// is one set, not a list per source (hosts, not host pairs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dst_sets: Vec<Vec<u32>>,
    /// Output-generated hotspots: service-rate schedules of switch egress ports.
    #[serde(default)]
    pub hotspots: Vec<HotspotIr>,
    pub cm: CmIr,
    pub observe: ObserveIr,
    /// Equal-cost multipath: a switch with several shortest next hops toward a destination picks
    /// one per flow by a seeded hash (a flow keeps its path). `false`: the single route of
    /// `net/routing.rs` (the first next hop found).
    #[serde(default)]
    pub ecmp: bool,
    /// PAUSE watchdog of every switch port (issue 13; production switches' PFC watchdog): a port
    /// paused without a break for `timeout_ps` ignores PAUSE for `recovery_ps`. None = off.
    #[serde(default)]
    pub pause_watchdog: Option<WatchdogIr>,
    /// Link failures and recoveries during the run, their detection, and pinned paths
    /// ([`crate::net::dynamics`]); absent = none.
    #[serde(default, skip_serializing_if = "RoutingIr::is_static")]
    pub routing: RoutingIr,
    /// How host NICs queue and rate-limit transfers ([`NicIr`]; absent = the seeds' NIC: a FIFO
    /// per flow, limiters per flow).
    #[serde(default)]
    pub nic: NicIr,
    /// RDMA loss recovery of transfers on a lossy fabric ([`crate::net::rdma`]); absent = none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma: Option<RdmaIr>,
}

/// How RDMA transfers recover lost frames (issue 36).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RdmaIr {
    pub loss_recovery: LossRecoveryIr,
    /// Retransmission timeout, ps (> 0).
    pub timeout_ps: u64,
}

/// Go-back-N, selective repeat, or none (a lost frame stays lost).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossRecoveryIr {
    None,
    GoBackN,
    SelectiveRepeat,
}

/// Timed link events and per-flow pinned paths (issue 36).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingIr {
    /// Link state changes, time-ordered.
    #[serde(default)]
    pub events: Vec<LinkEventIr>,
    /// Time from a link's failure (or recovery) until the switches at its two ends stop (or start)
    /// routing over it, ps.
    #[serde(default)]
    pub detection_ps: u64,
    /// Further time until every other switch recomputes its routes, ps (`u64::MAX`: never).
    #[serde(default)]
    pub convergence_ps: u64,
    /// Flows forwarded on a given node path instead of the computed routes.
    #[serde(default)]
    pub pinned: Vec<PinnedIr>,
}

impl RoutingIr {
    /// No event and no pinned path: the routes never change (the IR then leaves the section out).
    pub fn is_static(&self) -> bool {
        self.events.is_empty() && self.pinned.is_empty()
    }
}

/// A link (`links[link]`) goes down (`up` false) or comes back up at `t_ps`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkEventIr {
    pub t_ps: u64,
    pub link: u32,
    pub up: bool,
}

/// Flow `flow` is forwarded along `path` (node indices from its source host to its destination host);
/// its ACKs (TCP) take the reverse path.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedIr {
    pub flow: u32,
    pub path: Vec<u32>,
}

impl Ir {
    /// The one IR builder of the Rust tests and examples (the Python compiler writes every field
    /// itself): these nodes, links, flows and sources for `duration_ps`, and every other field at
    /// its neutral value — seed 1, replication 0, no warm-up, 64-B control frames, no wire overhead,
    /// no congestion management, observation of FCTs only, no ECMP, watchdog, hotspot, link event,
    /// loss recovery, and the seeds' NIC. Change a field with struct update syntax:
    /// `Ir { seed: 3, ..Ir::new(...) }`.
    pub fn new(name: &str, duration_ps: u64, nodes: Vec<NodeIr>, links: Vec<LinkIr>, flows: Vec<FlowIr>, sources: Vec<SourceIr>) -> Ir {
        Ir {
            name: name.into(),
            duration_ps,
            warmup_ps: 0,
            seed: 1,
            replication: 0,
            control_frame_bytes: 64,
            wire_overhead_bytes: 0,
            nodes,
            links,
            flows,
            sources,
            dst_sets: Vec::new(),
            hotspots: Vec::new(),
            cm: CmIr { scheme: "none".into(), params: serde_json::Value::Null },
            observe: ObserveIr::fct_only(),
            ecmp: false,
            pause_watchdog: None,
            routing: Default::default(),
            nic: Default::default(),
            rdma: None,
        }
    }
}

/// The host NIC model (issue 31): how transfers queue, and where rate limiters and congestion
/// control state live.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicIr {
    pub queues: NicQueuesIr,
    pub rate_limiters: RateLimitersIr,
}

/// How a host queues the transfers (workload and incast flows, Pareto ON periods, TCP transfers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NicQueuesIr {
    /// One FIFO per flow (source, destination, priority): a flow's transfers leave in arrival order
    /// (the 2006–07 studies' host; cnsim's NIC before issue 31).
    #[default]
    Fifo,
    /// A send queue per transfer (an RDMA queue pair, a TCP connection), created when the transfer
    /// starts and freed when it completes; the NIC serves its queues round robin.
    Transfer,
}

/// Where rate limiters, windows and congestion-control state live.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RateLimitersIr {
    /// One per flow (source, destination, priority), shared by its transfers (802.1Qau's per-flow
    /// reaction point).
    #[default]
    Flow,
    /// One per send queue: with `queues = transfer`, each transfer its own.
    Queue,
}

impl NicIr {
    /// Each transfer gets a send queue of its own, with its own limiter and CC state.
    pub fn per_transfer(&self) -> bool {
        self.queues == NicQueuesIr::Transfer && self.rate_limiters == RateLimitersIr::Queue
    }
    /// A flow's FIFO is served round robin across its transfers (transfer queues sharing the flow's
    /// limiter).
    pub fn rotates(&self) -> bool {
        self.queues == NicQueuesIr::Transfer && self.rate_limiters == RateLimitersIr::Flow
    }
}

/// PAUSE watchdog timing, ps.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchdogIr {
    pub timeout_ps: u64,
    pub recovery_ps: u64,
}

/// A host or a switch.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "snake_case")]
pub enum NodeIr {
    Host {
        name: String,
        /// Delay between a feedback frame's arrival and the rate change taking effect, ps.
        response_delay_ps: u64,
    },
    Switch {
        name: String,
        /// Fixed delay from last-bit arrival to enqueue at the egress port, ps.
        latency_ps: u64,
        buffer: BufferIr,
        pause: PauseIr,
        /// ECN step marking (DCTCP, RFC 8257 §3.1): an ECN-capable data frame that finds more than
        /// this many bytes in its egress queue on arrival is marked CE. Absent = no marking.
        #[serde(default)]
        ecn_threshold_bytes: Option<u64>,
    },
}

/// Buffer-admission policy of a switch (model reference §1.3).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "policy", rename_all = "snake_case")]
pub enum BufferIr {
    /// BUF-OUT: each egress queue has a private limit.
    Egress { egress_bytes: u64 },
    /// BUF-IN: the shared memory is partitioned per input port.
    Ingress { ingress_bytes: u64 },
    /// One shared pool for all egress queues.
    Shared { shared_bytes: u64 },
    /// CN-SIM output buffer partitioned per input (model reference §12 R3): each egress buffer holds one
    /// partition of `partitioned_bytes` per input port; a frame from input i to output j is dropped
    /// only when partition (i, j) is full.
    Partitioned { partitioned_bytes: u64 },
}

/// Link-level flow control at a switch (model reference §1.4).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "mode", rename_all = "snake_case")]
pub enum PauseIr {
    None,
    /// 802.3x global pause: any egress queue >= high ⇒ XOFF on every port; XON when all <= low.
    Global {
        high_bytes: u64,
        low_bytes: u64,
        /// pause_time carried by XOFF, in quanta of 512 bit times (65535).
        quanta: u16,
        /// Re-send XOFF when this fraction of the pause time has elapsed (0.8).
        refresh_fraction: f64,
    },
    /// Selective pause per input partition (CN-SIM): partition i >= high ⇒ XOFF on input link i.
    Selective {
        high_bytes: u64,
        low_bytes: u64,
        quanta: u16,
        refresh_fraction: f64,
    },
    /// 802.1Qbb priority-based flow control ([`crate::net::flowctl::pfc`]): per-priority egress queues,
    /// per-(ingress port, priority) accounting in the shared buffer (`buffer` must be `shared`),
    /// XOFF/XON per priority with reserved headroom. Every switch runs PFC if one does.
    Pfc(PfcIr),
}

/// PFC configuration of one switch (issue 13). Sizes in bytes, times in ps.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcIr {
    /// Lossless (PFC-enabled) priorities: bit p set = priority p. Other priorities are lossy: no
    /// headroom, dropped above their threshold, never paused.
    pub enabled: u8,
    /// When an (ingress, priority) counter of the shared pool pauses its input.
    pub threshold: PfcThresholdIr,
    /// XON when the counter is `hysteresis_bytes` below the XOFF level.
    pub hysteresis_bytes: u64,
    /// Headroom reserved per (ingress port, enabled priority), by port index of the switch (link
    /// order); the shared pool is the buffer minus all reservations.
    pub headroom_bytes: Vec<u64>,
    /// Largest data frame: XOFF is sent when one more such frame would not fit under the threshold.
    pub mtu_bytes: u32,
    /// pause_time of an XOFF, quanta of 512 bit times.
    pub quanta: u16,
    /// Re-send XOFF after this fraction of its pause time while asserted.
    pub refresh_fraction: f64,
    /// The peer's response time: a PFC frame takes effect this long after its last bit arrived.
    pub response_ps: u64,
    pub scheduler: SchedulerIr,
}

/// XOFF threshold of an (ingress port, priority) counter in the shared pool.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "snake_case")]
pub enum PfcThresholdIr {
    /// A fixed number of bytes.
    Static { xoff_bytes: u64 },
    /// α × the free shared pool (shared-buffer switch ASICs' dynamic threshold).
    Dynamic { alpha: f64 },
}

/// Egress scheduling among the 8 per-priority queues of a PFC port.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "snake_case")]
pub enum SchedulerIr {
    /// Strict priority: 7 first.
    Strict,
    /// Deficit weighted round robin (Shreedhar & Varghese 1995) with a quantum per priority, bytes
    /// (each ≥ the largest frame).
    Dwrr { quantum_bytes: [u32; 8] },
}

/// Full-duplex link between nodes `a` and `b` (indices into `nodes`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkIr {
    pub a: u32,
    pub b: u32,
    pub rate_bps: u64,
    pub prop_ps: u64,
}

/// A flow = a (source host, destination host, priority) channel: the unit of the per-flow
/// statistics, and with `nic.queues = fifo` or `rate_limiters = flow` a FIFO and a rate limiter.
/// With `dst` null (only with a send queue per transfer) the flow is every transfer of its source
/// generator, whose destinations the source draws from its `dsts`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowIr {
    pub src: u32,
    pub dst: Option<u32>,
    /// Data frame size, bytes (a full TCP segment: payload + header).
    pub frame_bytes: u32,
    /// End-to-end transport (absent = `udp`: open loop, frames leave as generated).
    #[serde(default)]
    pub transport: TransportIr,
    /// 802.1p priority of the flow's frames, 0–7 (absent = 0).
    #[serde(default)]
    pub priority: u8,
}

/// Transport of a flow.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "snake_case")]
pub enum TransportIr {
    /// Open loop: what the source generates is sent (subject to rate limiter and PAUSE).
    #[default]
    Udp,
    /// TCP over the layer-2 network (crate::transport::tcp): what the source generates is the
    /// application's data; segments leave as the window allows; ACKs are real frames.
    Tcp(TcpIr),
}

/// TCP parameters of a flow (crate::transport::tcp::TcpConfig plus the wire).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpIr {
    /// TCP/IP header bytes in every segment; MSS = frame_bytes - header_bytes.
    pub header_bytes: u32,
    /// Size of an ACK frame, bytes.
    pub ack_bytes: u32,
    pub init_cwnd_segments: u32,
    pub rcv_wnd_bytes: u64,
    pub init_ssthresh_bytes: u64,
    pub init_rto_ps: u64,
    pub min_rto_ps: u64,
    pub max_rto_ps: u64,
    pub dupack_threshold: u32,
    /// Delayed ACKs (every second segment or after `delack_timeout_ps`).
    pub delayed_ack: bool,
    pub delack_timeout_ps: u64,
    pub cc: CcIr,
    /// Selective acknowledgements (RFC 2018) and SACK loss recovery (RFC 6675); absent = off
    /// (NewReno's partial ACKs).
    #[serde(default)]
    pub sack: bool,
}

/// Congestion control of a TCP flow.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "snake_case")]
pub enum CcIr {
    NewReno,
    /// DCTCP (RFC 8257): ECN-capable; α gain `g`, initial α.
    Dctcp {
        g: f64,
        alpha_init: f64,
    },
}

/// A traffic generator feeding one or more flows of the same source host (model reference §1.5).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceIr {
    /// Stable id used to derive the generator's RNG stream (independent of array order).
    pub stream_id: u64,
    /// Flows fed by this source (all with the same `src`). With more than one flow, each frame
    /// (or each Pareto flow) goes to one of them chosen uniformly at random.
    pub flows: Vec<u32>,
    /// Destinations of the transfers of a source with one flow whose `dst` is null: an index into
    /// [`Ir::dst_sets`]; each transfer goes to a member of that set other than the source host,
    /// chosen uniformly at random (the same draw as a choice among flows). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_set: Option<u32>,
    /// First instant the source may generate, ps.
    pub start_ps: u64,
    /// Instant after which it generates nothing, ps (u64::MAX = never stops).
    pub stop_ps: u64,
    /// Deterministic ON/OFF gating (ONOFF-DET): ON for on_ps, OFF for off_ps, repeating from
    /// start_ps; absent = always on.
    #[serde(default)]
    pub gate: Option<GateIr>,
    pub process: ProcessIr,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateIr {
    pub on_ps: u64,
    pub off_ps: u64,
    /// Start in the ON state (true) or OFF.
    pub start_on: bool,
}

/// Arrival process of a source.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "snake_case")]
pub enum ProcessIr {
    /// Always backlogged (SAT): the flow always has a frame ready.
    Saturated,
    /// Constant bit rate: one frame every `interval_ps`, first at start + phase.
    Cbr {
        interval_ps: u64,
        phase_ps: u64,
        /// Add a phase drawn uniformly in [0, interval) from the source's stream.
        random_phase: bool,
    },
    /// Slotted Bernoulli: in each slot of `slot_ps` a frame is generated with probability `p`.
    Bernoulli { slot_ps: u64, p: f64 },
    /// Poisson arrivals of frames with mean gap `mean_gap_ps`; every frame is the flow's
    /// `frame_bytes`, or drawn from `sizes` when given (absent = fixed).
    Poisson {
        mean_gap_ps: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sizes: Option<FrameSizesIr>,
    },
    /// Pareto-ON / exponential-OFF flows (CN-SIM). Each ON period creates one transfer of
    /// max(1, round(t_on * line_rate / frame)) frames to a flow chosen uniformly. Closed loop
    /// (default): the OFF period starts when its last frame has left the NIC. With a NIC buffer
    /// (`nic_buffer_frames`): it starts when the ON time has passed and at most that many frames of
    /// the source's transfers still wait in the host (u64::MAX = open loop).
    ParetoOnOff {
        /// Pareto scale x_m, ps.
        xm_ps: u64,
        /// Pareto shape α (> 1; with a cap any α > 0).
        alpha: f64,
        /// Mean OFF period (exponential), ps.
        off_mean_ps: u64,
        /// Rate used to convert ON time into bytes, bit/s.
        line_rate_bps: u64,
        /// Optional cap on the ON period, ps: ON = min(Pareto(x_m, α), cap) (a capped Pareto; not in
        /// the spec, an option for the §12 D2 sensitivity study). Absent = plain Pareto.
        #[serde(default)]
        cap_ps: Option<u64>,
        /// Shifted Pareto (Lomax, model reference §12 R2): ON = x_m·(U^(−1/α) − 1) = Pareto(x_m, α) − x_m, with
        /// mean x_m/(α − 1); `xm_ps` is then the Lomax scale λ. Absent/false = plain Pareto.
        #[serde(default)]
        shifted: bool,
        /// NIC transmit buffer of the source, frames (issue 11, §12 D9 alternatives): the source
        /// is released for its OFF period once the ON time has passed and no more than this many
        /// of its frames wait in the host. u64::MAX = open loop. Absent = closed loop (§12 D9).
        #[serde(default)]
        nic_buffer_frames: Option<u64>,
        /// Closed loop on the NIC's default queue only (issue 11, §12 D9 alternatives): a transfer
        /// whose flow has an active rate limiter is in that RL's queue, and the source is released
        /// (no earlier than the end of its ON time). Absent/false = plain closed loop.
        #[serde(default)]
        rl_release: bool,
    },
    /// Open-loop flow arrivals (data-center workloads, issue 13): flows start as a Poisson process
    /// of mean gap `mean_gap_ps`, each to a flow (destination) chosen uniformly, of a size drawn from
    /// the piecewise-linear CDF `cdf` = [(bytes, cumulative probability)], rising from 0 to 1;
    /// each flow is ceil(size / frame) whole frames, or with `partial_last` its size in bytes with
    /// the remainder in its last frame.
    FlowArrivals {
        mean_gap_ps: u64,
        cdf: Vec<(f64, f64)>,
        #[serde(default)]
        partial_last: bool,
    },
    /// Incast rounds (issue 13): every `period_ps` from start + `phase_ps`, one flow of `bytes` bytes
    /// to a flow (destination) chosen uniformly — synchronised across the senders of one incast.
    PeriodicFlows {
        period_ps: u64,
        phase_ps: u64,
        bytes: u64,
        /// As for `FlowArrivals`: the last frame carries the remainder (absent/false: whole frames).
        #[serde(default)]
        partial_last: bool,
    },
}

/// Distribution of the sizes of a generator's frames, bytes, drawn per frame from the source's
/// stream. The flows of such a generator have `frame_bytes` = the largest size it can draw.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "snake_case")]
pub enum FrameSizesIr {
    /// ceil(X) for X of density ∝ exp(−x / `scale_bytes`) on [`min_bytes`, `max_bytes`] (an
    /// exponential truncated to the frame sizes Ethernet allows; M/G/1 service at a port).
    Exponential { scale_bytes: f64, min_bytes: u32, max_bytes: u32 },
    /// `bytes[i]` with probability `weights[i] / Σ weights` (e.g. IMIX 64 / 594 / 1518 B as 7 : 4 : 1).
    Mix { bytes: Vec<u32>, weights: Vec<f64> },
}

impl FrameSizesIr {
    /// The largest size the distribution can draw.
    pub fn max_bytes(&self) -> u32 {
        match self {
            FrameSizesIr::Exponential { max_bytes, .. } => *max_bytes,
            FrameSizesIr::Mix { bytes, .. } => bytes.iter().copied().max().unwrap_or(0),
        }
    }
}

/// Service-rate schedule of one switch egress port (OG-LINK hotspot).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HotspotIr {
    /// The switch.
    pub switch: u32,
    /// The neighbour the port leads to (identifies the port).
    pub toward: u32,
    /// (time ps, service rate bit/s) steps, time-ordered; rate 0 = port stopped.
    pub schedule: Vec<(u64, u64)>,
}

/// Congestion-management scheme: a registry tag plus its parameters (scheme-specific JSON in
/// base units, deserialised by the scheme itself with `deny_unknown_fields`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CmIr {
    pub scheme: String,
    #[serde(default)]
    pub params: serde_json::Value,
}

/// What to record.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObserveIr {
    /// Sampling interval of queue lengths, RP rates and pause state, ps (0 = off).
    pub sample_interval_ps: u64,
    /// Bin width of per-flow throughput, ps (0 = off).
    pub throughput_bin_ps: u64,
    /// Flows with a binned throughput series: the first `n` flows (in flow order); `None` = every
    /// flow. Per-flow totals are always in the summary; the binned series costs flows × bins.
    #[serde(default)]
    pub flow_series: Option<u32>,
    /// Record per-transfer FCT rows.
    pub fct: bool,
    /// Which sampled series are recorded (all by default).
    #[serde(default)]
    pub series: SeriesIr,
    /// Packet captures ([`crate::net::pcap`]): absent = none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pcap: Vec<PcapIr>,
}

impl ObserveIr {
    /// FCT rows only: no sampled series, no throughput bins, no capture.
    pub fn fct_only() -> ObserveIr {
        ObserveIr { sample_interval_ps: 0, throughput_bin_ps: 0, flow_series: None, fct: true, series: Default::default(), pcap: Vec::new() }
    }

    /// FCT rows, series sampled every `sample_interval_ps` and throughput in bins of `throughput_bin_ps`.
    pub fn sampled(sample_interval_ps: u64, throughput_bin_ps: u64) -> ObserveIr {
        ObserveIr { sample_interval_ps, throughput_bin_ps, ..ObserveIr::fct_only() }
    }
}

/// One packet capture: the frames the port of node `node` toward `peer` starts transmitting in
/// `[start_ps, end_ps)`, at most `snaplen` bytes of each kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcapIr {
    /// File name (without `.pcap`), unique among the captures.
    pub name: String,
    pub node: u32,
    pub peer: u32,
    pub start_ps: u64,
    pub end_ps: u64,
    pub snaplen: u32,
}

/// The sampled time series, each a table taken every `sample_interval_ps`; a series that is off
/// costs nothing during the run (no samples are taken when all are off).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SeriesIr {
    /// Switch queue lengths (`queue_ts`).
    pub queue_ts: bool,
    /// Reaction-point rates of the first `flow_series` flows (`rp_rate`).
    pub rp_rate: bool,
    /// TCP window, threshold and DCTCP α of the first `flow_series` flows (`tcp_ts`).
    pub tcp_ts: bool,
    /// Paused state of the links that pause (`pause_ts`).
    pub pause_ts: bool,
}

impl Default for SeriesIr {
    fn default() -> Self {
        SeriesIr { queue_ts: true, rp_rate: true, tcp_ts: true, pause_ts: true }
    }
}

impl SeriesIr {
    /// Whether any sampled series is recorded.
    pub fn any(&self) -> bool {
        self.queue_ts || self.rp_rate || self.tcp_ts || self.pause_ts
    }
}
