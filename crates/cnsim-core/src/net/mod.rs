//! The data plane: ports and links, switches and their buffers, hosts and their flows.
//!
//! [`Network`] holds the whole state that frames move through, plus the event queue the data plane
//! schedules into. Each concept has its room, each an `impl Network` block over its own part:
//!
//! | file | what |
//! |---|---|
//! | [`port`] | one end of a full-duplex link: transmitter, switch egress FIFO, service rate (hotspots) |
//! | [`switch`] | forwarding, buffer admission ([`buffer`]), drops, congestion-point hooks |
//! | [`host`] | the NIC: control FIFO, round robin over flows, rate limiters, RP/reflector hooks |
//! | `paced` | a rate-limited host's frame sent at its wake-up, the common case of a reaction point's flow |
//! | [`flow`] | flows (FIFO + rate limiter), transfers, and the traffic sources that feed them |
//! | [`tcp`] | TCP flows: segments from the window, ACK frames, RTO and delayed-ACK timers |
//! | [`transfers`] | the transfers by id; with FCT rows off, folded into statistics as they settle |
//! | [`queues`] | a send queue per transfer (`nic.queues = "transfer"`): opened, closed, folded into its flow |
//! | [`routing`] | shortest-path routes |
//! | [`dynamics`] | links failing and recovering, routes recomputed after detection, pinned paths |
//! | [`flowctl`] | link-level flow control (802.3x PAUSE, 802.1Qbb PFC), a port/buffer policy |
//!
//! The event loop ([`crate::sim`]) pops an event and calls the matching `Network` method; the
//! observer ([`crate::observe`]) reads a `&Network`, never a mutable one.

pub mod buffer;
pub(crate) mod deferred;
pub mod dynamics;
pub mod flow;
pub mod flowctl;
pub mod host;
pub mod int_wire;
mod paced;
pub mod pcap;
pub mod port;
pub mod queues;
pub mod rdma;
pub mod routing;
pub mod switch;
pub mod tcp;
pub mod transfers;

pub use buffer::{DropReason, CLASSIC_DROP_REASONS, DROP_REASONS};
pub use flow::{Chunk, Flow, Transfer};
pub use host::Host;
pub use port::{Port, HIST_BUCKET};
pub use routing::{adjacency, compute_ecmp, compute_routes, ecmp_index, ecmp_salt, flow_paths, next_hop_table, pair_paths, NextHops};
pub use switch::Switch;

use crate::cm::{CongestionPoint, Emit, HostInfo, RateChange, Scheme};
use crate::event::{Event, EventQueue};
use crate::frame::FramePool;
use crate::ids::{NodeId, PortId};
use crate::probe::{FlowBins, QueueWatch};
use crate::rng::Stream;
use crate::time::{SimTime, PS_PER_S};
use crate::traffic::Source;

/// "None" sentinel of u32 indices (transfer ids, host/switch indices of a node).
pub(crate) const NONE_U32: u32 = u32::MAX;
/// [`Network::port_owner`]: the port is a host's.
pub(crate) const OWNER_HOST: u32 = 1 << 31;

/// Whole-run counters (conservation and summary).
#[derive(Debug, Default, Clone)]
pub struct Counters {
    pub data_generated: (u64, u64),
    pub data_sent: (u64, u64),
    pub data_delivered: (u64, u64),
    pub data_dropped: (u64, u64),
    pub ctrl_generated: (u64, u64),
    pub ctrl_delivered: u64,
    pub ctrl_dropped: u64,
    /// Copies of broadcast control frames made by flooding switches, and broadcasts that reached
    /// a switch with no port to flood to (conservation: generated + replicated = delivered +
    /// dropped + in flight + absorbed).
    pub ctrl_replicated: u64,
    pub ctrl_absorbed: u64,
    /// Control frames delivered about a transfer's send queue that had closed meanwhile (ignored).
    pub ctrl_stale: u64,
    pub ctrl_by_kind: Vec<u64>,
    /// Control bytes generated after warm-up (overhead), plus extra tag bytes.
    pub ctrl_bytes_window: u64,
    pub extra_overhead_bytes: u64,
    pub pause_sent: u64,
    /// PAUSE watchdog trips (switch ports that stopped honouring PAUSE).
    pub watchdog_trips: u64,
    /// TCP ACK frames (count, bytes) generated; delivered and dropped counts.
    pub ack_generated: (u64, u64),
    pub ack_delivered: u64,
    pub ack_dropped: u64,
    /// INT header bytes added to data frames on the wire ([`crate::int::IntWire`]) and removed
    /// again (stripped at the last switch, or dropped with the frame).
    pub int_bytes_added: u64,
    pub int_bytes_removed: u64,
}

/// Run-wide constants the data plane needs (copied from the IR once).
#[derive(Debug, Clone, Copy)]
pub struct NetConfig {
    pub duration_ps: SimTime,
    /// Statistics windows start here.
    pub warmup_ps: SimTime,
    pub control_frame_bytes: u32,
    pub wire_overhead_bytes: u32,
}

/// Storage for congestion points, indexed by port.
pub type CpSlot = Option<Box<dyn CongestionPoint>>;

/// The data plane's whole state.
pub struct Network {
    pub cfg: NetConfig,
    /// Current simulated time (set by the event loop before each event).
    pub now: SimTime,
    /// End (exclusive) of the current `run_until`: events before it are processed in this call.
    pub(crate) run_limit: SimTime,
    /// Arrivals delivered without an event of their own ([`Network::deliver_direct`]), counted
    /// with the events.
    pub(crate) folded_events: u64,
    /// Switch ports whose frame being sent ends without an event ([`Port::lazy_end`]), a bit per
    /// port: a sample reads a queue through it ([`Network::queued_now`]) and the end of the run
    /// finds them ([`Network::release_all`]) without reading the other ports' state.
    pub(crate) lazy_ends: Vec<u64>,
    /// For each host, the source whose firings may be deferred, or `NONE_U32`, and the time of its
    /// deferred firing, or `deferred::NO_FIRING` ([`deferred`]).
    pub(crate) deferrable: Vec<u32>,
    pub(crate) deferred: Vec<SimTime>,
    /// Whether a firing has ever been deferred (until then the hosts' events need not look).
    pub(crate) deferring: bool,
    pub(crate) q: EventQueue,
    pub frames: FramePool,
    pub ports: Vec<Port>,
    pub(crate) cps: Vec<CpSlot>,
    pub(crate) cp_rngs: Vec<Stream>,
    pub switches: Vec<Switch>,
    /// Index into `switches` of each node (NONE_U32 for hosts).
    pub switch_of: Vec<u32>,
    pub hosts: Vec<Host>,
    /// Index into `hosts` of each node (NONE_U32 for switches).
    pub host_of: Vec<u32>,
    /// Per port, what an arrival on it goes to: its switch (index into `switches`) or, with
    /// [`OWNER_HOST`] set, its host (index into `hosts`). Read in place of the port's node (a
    /// cache line of the port that the arrival does not otherwise need).
    pub(crate) port_owner: Vec<u32>,
    pub(crate) host_infos: Vec<HostInfo>,
    pub(crate) host_rngs: Vec<Stream>,
    pub(crate) host_nodes: Vec<NodeId>,
    /// Hosts with at least one flow (reaction points), in host order.
    pub(crate) source_nodes: Vec<NodeId>,
    /// Send queues: the declared flows (`0..n_flows`), then the transfers' own queues
    /// ([`queues`]; slots reused).
    pub flows: Vec<Flow>,
    /// Declared flows (the IR's).
    pub n_flows: usize,
    /// Each transfer gets a send queue of its own (`nic.queues = "transfer"`, `rate_limiters =
    /// "queue"`).
    pub per_transfer: bool,
    /// A flow's FIFO is served round robin across its transfers (`nic.queues = "transfer"`,
    /// `rate_limiters = "flow"`).
    pub(crate) rotate: bool,
    /// Free transfer-queue slots, reused first in, first out.
    pub(crate) free_queues: std::collections::VecDeque<u32>,
    /// What only a transfer's queue has (its flow, generation, frames in flight), by `q - n_flows`.
    pub(crate) queue_meta: Vec<queues::QueueMeta>,
    /// TCP parameters of each declared TCP flow (its transfers' connections are made from them).
    pub(crate) flow_tcp: Vec<Option<crate::ir::TcpIr>>,
    /// Per declared flow: the TCP connections of its closed transfer queues.
    pub tcp_closed: Vec<queues::TcpTotals>,
    pub(crate) sources: Vec<Source>,
    pub transfers: transfers::Transfers,
    /// Some Pareto source has a NIC buffer or RL release (checked as its frames are taken).
    pub(crate) release_checks: bool,
    /// Output-generated hotspots: (egress port, (time, service rate) steps).
    pub(crate) hotspots: Vec<(PortId, Vec<(u64, u64)>)>,
    pub scheme: Box<dyn Scheme>,
    /// Some host has a reaction point (RP rates are worth sampling).
    pub has_rp: bool,
    /// Some switch generates PAUSE.
    pub pause_enabled: bool,
    /// PAUSE or PFC frames received so far (any port): the pause series looks at the ports again only
    /// when this moved or a pause has run out since its last look (`observe::Observer::sample`).
    pub pause_receipts: u64,
    /// Every switch runs PFC (`flowctl::pfc`; ports have per-priority queues). Checked first on the
    /// hot paths so that the one-FIFO path costs one test of this flag.
    pub pfc_enabled: bool,
    /// Salt of the ECMP hash (from the master seed).
    pub(crate) ecmp_salt: u64,
    /// PAUSE watchdog of switch ports (None = off).
    pub(crate) watchdog: Option<crate::ir::WatchdogIr>,
    /// PFC: wait-for cycles of paused queues seen forming (deadlock detection during the run).
    pub pfc_cycles: crate::net::flowctl::pfc::CycleLog,
    pub c: Counters,
    /// Per-flow delivered bytes per time bin (observation probe, filled on delivery).
    pub(crate) flow_bins: FlowBins,
    /// Queues that reached the observer's threshold (observation probe, filled on enqueue).
    pub(crate) q_watch: QueueWatch,
    /// In-band telemetry stacks, only when the scheme wants INT ([`crate::int`]).
    pub int: Option<crate::int::IntTable>,
    /// Packet captures ([`crate::net::pcap`]), only when some are asked for.
    pub pcap: Option<Box<crate::net::pcap::PcapSet>>,
    /// Link events and pinned paths ([`dynamics`]), only when the scenario has some.
    pub dynamics: Option<Box<dynamics::Dynamics>>,
    /// RDMA loss recovery ([`rdma`]), only when `[rdma] loss_recovery` asks for it.
    pub rdma: Option<Box<rdma::Rdma>>,
    /// One flag per hot path for the optional mechanisms, so that a run without them tests one
    /// bool there: a frame starts at a host (`tx_hook`: captures, link events), arrives at a switch
    /// (`arrive_hook`: INT bytes, link events and pinned paths), leaves a switch port (`egress_hook`:
    /// INT bytes, link events).
    pub(crate) tx_hook: bool,
    pub(crate) arrive_hook: bool,
    pub(crate) egress_hook: bool,
    // scratch buffers reused by hooks (no allocation in the hot path)
    pub(crate) emits: Vec<Emit>,
    pub(crate) rate_changes: Vec<RateChange>,
    pub(crate) limit_changes: Vec<(u32, Option<u64>)>,
    pub(crate) timers: Vec<(SimTime, u64)>,
}

impl Network {
    /// Schedule `ev` at `t`.
    #[inline(always)]
    pub(crate) fn schedule(&mut self, t: SimTime, ev: Event) {
        self.q.push(t, ev);
    }

    /// Schedule source `si`'s next firing at `t`.
    #[inline(always)]
    pub(crate) fn schedule_fire(&mut self, t: SimTime, si: usize) {
        self.q.push(t, Event::SourceFire { source: si as u32 });
    }

    /// Is the node a switch? (Its index into `switches` otherwise NONE_U32.)
    #[inline]
    pub fn is_switch(&self, node: NodeId) -> bool {
        self.switch_of[node.idx()] != NONE_U32
    }

    /// Close time-weighted statistics (queue areas and histograms, paused intervals) at `end`.
    pub fn close_statistics(&mut self, end: SimTime) {
        let w = self.cfg.warmup_ps;
        for p in &mut self.ports {
            p.account_queue(end, w);
            p.pause.close(end, w);
            if let Some(pf) = p.pfc.as_mut() {
                for r in pf.rx.iter_mut() {
                    r.close(end, w);
                }
            }
        }
    }
}

/// Pacing gap of a rate limiter: time to send `bytes` at `rate` bit/s, ps (rounded up).
#[inline]
pub fn rate_gap_ps(bytes: u32, rate: f64) -> u64 {
    let g = bytes as f64 * 8.0 * PS_PER_S as f64 / rate;
    if g >= 1.8e19 {
        u64::MAX / 2
    } else {
        // g.ceil() without its library call (once per paced frame): the truncation, plus one if
        // it cut a fraction off; exact for 0 <= g < 2^64 (from 2^53 on, every f64 is an integer)
        let t = g as u64;
        t + ((t as f64) < g) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::rate_gap_ps;
    use crate::time::PS_PER_S;

    #[test]
    fn rate_gap_is_the_rounded_up_quotient() {
        let reference = |bytes: u32, rate: f64| {
            let g = (bytes as f64 * 8.0 * PS_PER_S as f64 / rate).ceil();
            if g >= 1.8e19 {
                u64::MAX / 2
            } else {
                g as u64
            }
        };
        let mut rng = crate::rng::Stream::new(5, 0, 0);
        let rates = [1.0, 3.0, 7e-3, 1e6, 1e8, 1.234_567e9, 1e10, 4e10, 1e12, 3e14];
        for &rate in &rates {
            for bytes in [0u32, 1, 64, 1500, 9000, u32::MAX] {
                assert_eq!(rate_gap_ps(bytes, rate), reference(bytes, rate), "{bytes} B at {rate} bit/s");
            }
        }
        for _ in 0..100_000 {
            let bytes = rng.below(10_000) as u32;
            let rate = 1e3 + rng.below(1 << 40) as f64 * 37.25;
            assert_eq!(rate_gap_ps(bytes, rate), reference(bytes, rate), "{bytes} B at {rate} bit/s");
        }
    }

    /// The records' layout contract (docs/architecture.md): what a send path reads first is in
    /// each record's first cache line, and each record starts a line. Reordering a field out of it
    /// changes no result, only the speed of a fan-in, so it is pinned here.
    #[test]
    fn hot_fields_lead_their_records() {
        use super::{Flow, Host, Port};
        use std::mem::{align_of, offset_of};
        let first_line = |what: &str, offset: usize, size: usize| assert!(offset + size <= 64, "{what} at {offset}");
        assert_eq!((align_of::<Host>(), align_of::<Flow>(), align_of::<Port>()), (64, 64, 64));
        first_line("Host::wake_at", offset_of!(Host, wake_at), 8);
        first_line("Host::backlogged", offset_of!(Host, backlogged), 4);
        first_line("Host::port", offset_of!(Host, port), 4);
        first_line("Host::ctrl_q", offset_of!(Host, ctrl_q), 32);
        first_line("Host::rp", offset_of!(Host, rp), 16);
        first_line("Flow::rl_rate", offset_of!(Flow, rl_rate), 16);
        first_line("Flow::next_allowed", offset_of!(Flow, next_allowed), 8);
        first_line("Flow::send_limit", offset_of!(Flow, send_limit), 8);
        first_line("Flow::sent_bytes", offset_of!(Flow, sent_bytes), 8);
        first_line("Flow::backlog", offset_of!(Flow, backlog), 8);
        first_line("Flow::sat", offset_of!(Flow, sat), 4);
        first_line("Port::busy_until", offset_of!(Port, busy_until), 8);
        first_line("Port::pause.paused_until", offset_of!(Port, pause.paused_until), 8);
        first_line("Port::peer", offset_of!(Port, peer), 4);
        first_line("Port::node", offset_of!(Port, node), 4);
        first_line("Port::ps_per_byte", offset_of!(Port, ps_per_byte), 8);
        first_line("Port::busy", offset_of!(Port, busy), 1);
        first_line("Port::lazy_end", offset_of!(Port, lazy_end), 1);
        first_line("Port::ctrl_handed", offset_of!(Port, ctrl_handed), 1);
        first_line("Port::ctrl_arrival_due", offset_of!(Port, ctrl_arrival_due), 1);
        first_line("Port::pause_guarded", offset_of!(Port, pause_guarded), 1);
        use crate::traffic::Source;
        assert_eq!(align_of::<Source>(), 64);
        first_line("Source::first_flow", offset_of!(Source, first_flow), 4);
        first_line("Source::n_flows", offset_of!(Source, n_flows), 4);
        first_line("Source::gate", offset_of!(Source, gate), 24);
    }
}
