//! Network elements: ports (transmitters + switch egress queues), hosts, flows, switches, routing.

use crate::cm::{CongestionPoint, Reflector, ReactionPoint};
use crate::frame::FrameId;
use crate::ids::{FlowId, NodeId, PortId};
use crate::ir::{BufferIr, PauseIr};
use crate::time::{tx_time_ps, SimTime, PS_PER_S};
use std::collections::VecDeque;

/// Why a frame was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// BUF-OUT: the egress queue's private limit.
    EgressFull = 0,
    /// BUF-IN: the input partition is full.
    IngressFull = 1,
    /// Shared pool exhausted.
    SharedFull = 2,
    /// No route to the destination (cannot happen after validation; kept for conservation).
    NoRoute = 3,
}
pub const DROP_REASONS: [&str; 4] = ["egress_full", "ingress_full", "shared_full", "no_route"];

/// One end of a full-duplex link: the transmitter toward `peer_node` and, at switches, the egress
/// queue feeding it. The input side of the same port is `ingress` partition accounting.
pub struct Port {
    pub node: NodeId,
    pub peer: PortId,
    pub peer_node: NodeId,
    /// Index within its node.
    pub index: u32,
    pub rate_bps: u64,
    /// Picoseconds per byte at `rate_bps` when that is an integer (10 Gb/s: 800), else 0.
    pub ps_per_byte: u64,
    /// Current service rate (differs from `rate_bps` under an output-generated hotspot). A
    /// throttled port still serialises each frame at line rate, then waits until
    /// `data_ready_at` = start + size/service before the next *data* frame (the receiver drains
    /// slowly); MAC-control frames may use the gaps.
    pub service_bps: u64,
    pub data_ready_at: SimTime,
    pub last_data_start: SimTime,
    pub last_data_len: u64,
    pub prop_ps: u64,
    /// True if the far end is a switch (arrivals then include its latency).
    pub peer_is_switch: bool,
    pub peer_latency_ps: u64,
    // transmitter
    pub busy_until: SimTime,
    pub busy: bool,
    /// Pending PortWake time (dedupe), u64::MAX = none.
    pub wake_at: SimTime,
    /// Global pause bookkeeping: this queue is >= HIGH / > LOW.
    pub above_high: bool,
    pub above_low: bool,
    pub tx_frame: FrameId,
    /// Set by PAUSE frames received on this port: no new frame starts before it.
    pub paused_until: SimTime,
    pub pause_from: SimTime,
    pub paused_acc_ps: u64,
    // switch egress queue
    pub queue: VecDeque<FrameId>,
    pub q_bytes: u64,
    /// Bytes that arrived on this port (as input) and are still queued at any egress (BUF-IN).
    pub part_bytes: u64,
    /// A PAUSE (quanta) waiting to go out ahead of the queue.
    pub pending_pause: Option<u16>,
    /// Switch: XOFF currently asserted toward the peer through this port (selective mode).
    pub xoff: bool,
    pub pause_gen: u32,
    // statistics
    pub tx_bytes_window: u64,
    pub drops: [u64; 4],
    pub q_last_t: SimTime,
    pub q_area: u128,
    pub q_max: u64,
    pub q_hist: Vec<u64>,
    pub cpid: u32,
}

impl Port {
    /// Serialisation time of `bytes` at the line rate, ps (exact; a multiply for the usual rates).
    #[inline]
    pub fn tx_ps(&self, bytes: u64) -> u64 {
        if self.ps_per_byte > 0 { bytes * self.ps_per_byte } else { tx_time_ps(bytes, self.rate_bps) }
    }

    pub fn new(node: NodeId, index: u32, rate_bps: u64, prop_ps: u64) -> Self {
        const BYTE_PS: u64 = 8 * PS_PER_S;
        Port {
            ps_per_byte: if BYTE_PS % rate_bps == 0 { BYTE_PS / rate_bps } else { 0 },
            node,
            peer: PortId::NONE,
            peer_node: NodeId::NONE,
            index,
            rate_bps,
            service_bps: rate_bps,
            data_ready_at: 0,
            last_data_start: 0,
            last_data_len: 0,
            prop_ps,
            peer_is_switch: false,
            peer_latency_ps: 0,
            busy_until: 0,
            busy: false,
            wake_at: u64::MAX,
            above_high: false,
            above_low: false,
            tx_frame: FrameId(u32::MAX),
            paused_until: 0,
            pause_from: 0,
            paused_acc_ps: 0,
            queue: VecDeque::new(),
            q_bytes: 0,
            part_bytes: 0,
            pending_pause: None,
            xoff: false,
            pause_gen: 0,
            tx_bytes_window: 0,
            drops: [0; 4],
            q_last_t: 0,
            q_area: 0,
            q_max: 0,
            q_hist: Vec::new(),
            cpid: 0,
        }
    }
}

/// Histogram bucket width of queue occupancy (one 64-byte page).
pub const HIST_BUCKET: u64 = 64;

/// A switch: ports, buffer policy, PAUSE generator state, routes.
pub struct Switch {
    pub node: NodeId,
    pub ports: Vec<PortId>,
    pub latency_ps: u64,
    pub buffer: BufferIr,
    pub pause: PauseIr,
    /// Total queued bytes (shared pool).
    pub total_bytes: u64,
    /// Global pause: number of egress queues at or above HIGH / above LOW.
    pub n_high: u32,
    pub n_above_low: u32,
    pub xoff_global: bool,
    /// Egress port toward each node (index = node id), PortId::NONE if unreachable.
    pub route: Vec<PortId>,
    pub drops: u64,
}

/// A host: one NIC port, its flows (round-robin), control-frame FIFO, sources, sink.
pub struct Host {
    pub node: NodeId,
    pub port: PortId,
    pub response_delay_ps: u64,
    pub flows: Vec<FlowId>,
    pub rr_next: usize,
    /// Control frames waiting for the NIC (served ahead of data).
    pub ctrl_q: VecDeque<FrameId>,
    /// Scheduled wake time (dedupes HostWake events), u64::MAX = none.
    pub wake_at: SimTime,
    /// Number of flows with a frame waiting (saturated or backlog > 0).
    pub backlogged: u32,
    pub rp: Option<Box<dyn ReactionPoint>>,
    pub reflector: Option<Box<dyn Reflector>>,
    pub info_idx: usize,
}

/// A pending chunk of frames of a flow's FIFO belonging to one transfer (u32::MAX = none).
#[derive(Debug, Clone, Copy)]
pub struct Chunk {
    pub transfer: u32,
    pub frames: u64,
}

/// A (source, destination) flow: FIFO at the source host, rate limiter, statistics.
pub struct Flow {
    pub src: NodeId,
    pub dst: NodeId,
    pub frame_bytes: u32,
    /// Index in the source host's flow list.
    pub local: u32,
    /// Number of saturated sources currently active on this flow (> 0 ⇒ always a frame ready).
    pub sat: u32,
    pub fifo: VecDeque<Chunk>,
    pub backlog: u64,
    /// Rate limiter (bit/s); None = unregulated.
    pub rl_rate: Option<f64>,
    pub next_allowed: SimTime,
    pub last_start: SimTime,
    pub last_len: u32,
    /// The source whose closed-loop transfer is being sent (for Pareto OFF timing), u32::MAX none.
    pub closed_loop_source: u32,
    // statistics
    pub generated_frames: u64,
    pub sent_frames: u64,
    pub sent_bytes: u64,
    pub delivered_frames: u64,
    pub delivered_bytes: u64,
    pub delivered_bytes_window: u64,
    pub dropped_frames: u64,
    pub dropped_bytes: u64,
}

impl Flow {
    #[inline]
    pub fn has_frame(&self) -> bool {
        self.sat > 0 || self.backlog > 0
    }
}

/// A transfer (FCT unit): one Pareto ON period's data.
#[derive(Debug, Clone, Copy)]
pub struct Transfer {
    pub flow: FlowId,
    pub start: SimTime,
    pub end: SimTime,
    pub frames: u64,
    pub delivered: u64,
    pub bad: bool,
    /// The closed-loop source that created it.
    pub source: u32,
}

/// Storage for congestion points, indexed by port.
pub type CpSlot = Option<Box<dyn CongestionPoint>>;

/// Shortest-hop routes: for every switch, the egress port toward every node. BFS from each
/// destination, never transiting through hosts; ties broken by link order (deterministic).
pub fn compute_routes(
    n_nodes: usize,
    is_switch: &[bool],
    adj: &[Vec<(NodeId, PortId)>], // node -> (neighbour, own port toward it) in link order
) -> Vec<Vec<PortId>> {
    let mut routes = vec![vec![PortId::NONE; n_nodes]; n_nodes];
    let mut dist = vec![u32::MAX; n_nodes];
    let mut q = VecDeque::new();
    for dst in 0..n_nodes {
        dist.iter_mut().for_each(|d| *d = u32::MAX);
        dist[dst] = 0;
        q.clear();
        q.push_back(dst);
        while let Some(u) = q.pop_front() {
            if u != dst && !is_switch[u] {
                continue; // hosts do not forward
            }
            for &(v, _) in &adj[u] {
                let v = v.idx();
                if dist[v] == u32::MAX {
                    dist[v] = dist[u] + 1;
                    // v's next hop toward dst is u: find v's port toward u (first in link order)
                    if let Some(&(_, p)) = adj[v].iter().find(|(w, _)| w.idx() == u) {
                        routes[v][dst] = p;
                    }
                    q.push_back(v);
                }
            }
        }
    }
    routes
}
