//! Send queues of their own for transfers (`nic.queues = "transfer"`, `nic.rate_limiters = "queue"`;
//! issue 31): a queue pair in RDMA terms, a connection in TCP terms.
//!
//! A declared flow (the IR's `flows`, records `0..n_flows` of [`Network::flows`]) is the unit of
//! the per-flow statistics. With a queue per transfer, each transfer the flow's sources start gets a
//! record of its own after the declared ones — its FIFO, rate limiter, window, TCP connection and
//! the reaction point's state at a local index of its host — opened when the transfer starts and
//! closed when it has settled and nothing of it is in flight (data frames and ACKs carry the queue's
//! id as their `flow`, the way frames carry a QPN). Closing folds the queue's counters into its
//! flow and frees its slot, its host's local index and its reaction-point state for the next
//! transfer: memory follows the transfers in progress, not the host pairs.
//!
//! Slots are reused first in, first out, and each reuse has a new generation: feedback made for an
//! earlier queue of the slot (a CNP, a BCN, an HPCC ACK still on its way) is recognised as stale
//! ([`Network::host_feedback`]); TCP timers carry the generation too.

use super::flow::Flow;
use super::tcp::TcpFlow;
use super::{Network, NONE_U32};
use crate::ids::{FlowId, NodeId};
use crate::transport::tcp::TcpStats;

/// TCP counters of the connections a flow's transfers had (closed ones, folded as they close).
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpTotals {
    pub connections: u64,
    pub stats: TcpStats,
    pub goodput_bytes_window: u64,
    pub acked_bytes: u64,
}

impl TcpTotals {
    /// Add one connection's counters.
    pub fn add(&mut self, t: &TcpFlow) {
        let (s, o) = (&mut self.stats, t.sender.stats);
        self.connections += 1;
        s.segments_sent += o.segments_sent;
        s.retransmitted_segments += o.retransmitted_segments;
        s.fast_retransmits += o.fast_retransmits;
        s.timeouts += o.timeouts;
        s.ecn_reductions += o.ecn_reductions;
        s.acks_received += o.acks_received;
        self.goodput_bytes_window += t.goodput_bytes_window;
        self.acked_bytes += t.sender.acked();
    }
}

/// A declared flow's counters with those of its transfers' queues (closed and still open).
#[derive(Debug, Clone, Copy, Default)]
pub struct FlowTotals {
    pub generated_frames: u64,
    pub sent_frames: u64,
    pub delivered_frames: u64,
    pub delivered_bytes: u64,
    pub delivered_bytes_window: u64,
    pub dropped_frames: u64,
    pub dropped_bytes: u64,
    /// Frames waiting at the host.
    pub backlog: u64,
    /// The TCP connections of its transfers (none with one connection per flow).
    pub tcp: TcpTotals,
}

/// Add the per-flow traffic counters of `$from` (a [`Flow`]) to `$into` (a [`Flow`] or
/// [`FlowTotals`]): the one list of the counters a transfer's queue hands to its declared flow.
macro_rules! add_traffic_counters {
    ($into:expr, $from:expr) => {
        $into.generated_frames += $from.generated_frames;
        $into.sent_frames += $from.sent_frames;
        $into.delivered_frames += $from.delivered_frames;
        $into.delivered_bytes += $from.delivered_bytes;
        $into.delivered_bytes_window += $from.delivered_bytes_window;
        $into.dropped_frames += $from.dropped_frames;
        $into.dropped_bytes += $from.dropped_bytes;
    };
}

impl FlowTotals {
    fn add_counters(&mut self, f: &Flow) {
        add_traffic_counters!(self, f);
        self.backlog += f.backlog;
    }
}

/// What only a transfer's send queue has, beside its [`Flow`] record (kept apart so that the
/// records the send path reads stay three cache lines).
#[derive(Debug, Clone, Copy)]
pub struct QueueMeta {
    /// The declared flow its counters add to; `FlowId::NONE` while the slot is free.
    pub parent: FlowId,
    /// Generation of the slot: a new one at each reuse, so that feedback about an earlier queue of
    /// the slot is recognised as stale.
    pub gen: u32,
    /// Its data frames and ACKs in flight (the slot is reused only once none is).
    pub inflight: u32,
    /// Its transfer has settled: it closes as soon as nothing of it is in flight.
    pub closing: bool,
}

/// Fold `from`'s counters into `into` (a closing queue into its flow); the send-side state
/// (`sent_bytes`, the window's counter) stays with each record.
fn fold_counters(into: &mut Flow, from: &Flow) {
    add_traffic_counters!(into, from);
}

impl Network {
    /// Whether `q` is a transfer's own queue (not a declared flow).
    #[inline(always)]
    pub(crate) fn is_transfer_queue(&self, q: FlowId) -> bool {
        q.idx() >= self.n_flows
    }

    /// The declared flow whose statistics `q`'s frames count in.
    #[inline(always)]
    pub(crate) fn stat_flow(&self, q: FlowId) -> FlowId {
        if self.is_transfer_queue(q) {
            self.meta(q).parent
        } else {
            q
        }
    }

    /// Transfer queue `q`'s own state.
    #[inline(always)]
    pub(crate) fn meta(&self, q: FlowId) -> &QueueMeta {
        &self.queue_meta[q.idx() - self.n_flows]
    }
    #[inline(always)]
    fn meta_mut(&mut self, q: FlowId) -> &mut QueueMeta {
        &mut self.queue_meta[q.idx() - self.n_flows]
    }

    /// The generation of send queue `q` (0 for a declared flow).
    #[inline]
    pub(crate) fn queue_gen(&self, q: FlowId) -> u32 {
        if self.is_transfer_queue(q) {
            self.meta(q).gen
        } else {
            0
        }
    }

    /// A data frame or ACK of send queue `q` leaves its source (counted while in flight).
    #[inline(always)]
    pub(crate) fn queue_frame_sent(&mut self, q: FlowId) {
        if self.is_transfer_queue(q) {
            self.meta_mut(q).inflight += 1;
        }
    }

    /// Transfer queue `q`'s transfer has settled: it closes once nothing of it is in flight (the
    /// frame being handled still counts, until [`Network::queue_frame_gone`]).
    #[inline]
    pub(crate) fn queue_settling(&mut self, q: FlowId) {
        self.meta_mut(q).closing = true;
    }

    /// Whether feedback about send queue `q` made at generation `gen` is stale: about a transfer's
    /// queue that has closed since.
    #[inline]
    pub(crate) fn queue_stale(&self, q: FlowId, gen: u32) -> bool {
        self.is_transfer_queue(q) && !q.is_none() && (self.meta(q).parent.is_none() || self.meta(q).gen != gen)
    }

    /// Open a send queue for a transfer of declared flow `parent` to `dst`: a slot (first in, first
    /// out), a local index at the source host, the host's [`crate::cm::HostInfo`] entry for it, and
    /// the reaction point's fresh state.
    pub(crate) fn open_queue(&mut self, parent: FlowId, dst: NodeId) -> FlowId {
        let (src, frame_bytes, prio) = {
            let p = &self.flows[parent.idx()];
            (p.src, p.frame_bytes, p.prio)
        };
        let h = self.host_of[src.idx()] as usize;
        let host = &mut self.hosts[h];
        let local = host.free_locals.pop().unwrap_or_else(|| {
            host.flows.push(FlowId::NONE);
            if host.flows.len() > 64 * host.active.len() {
                host.active.push(0);
            }
            if host.flows.len() == 2 {
                // its first flow's bit, which a host of one flow does not keep (its count does)
                host.active[0] = host.backlogged as u64;
            }
            (host.flows.len() - 1) as u32
        });
        let q = match self.free_queues.pop_front() {
            Some(q) => FlowId(q),
            None => {
                self.flows.push(Flow::new(src, dst, frame_bytes, local));
                self.queue_meta.push(QueueMeta { parent: FlowId::NONE, gen: 0, inflight: 0, closing: false });
                FlowId((self.flows.len() - 1) as u32)
            }
        };
        let mut f = Flow::new(src, dst, frame_bytes, local);
        let old = &mut self.flows[q.idx()];
        f.fifo = std::mem::take(&mut old.fifo); // empty: its buffer is reused
        f.prio = prio;
        f.tcp = self.flow_tcp[parent.idx()].as_ref().map(|t| Box::new(TcpFlow::new(t, frame_bytes)));
        *old = f;
        let m = self.meta_mut(q);
        *m = QueueMeta { parent, gen: m.gen.wrapping_add(1), inflight: 0, closing: false };
        let host = &mut self.hosts[h];
        host.flows[local as usize] = q;
        if local == 0 {
            host.first_flow = q;
        }
        host.prio_mixed |= prio != host.prio0;
        let rtt = self.path_base_rtt(src, dst, frame_bytes, q);
        let info = &mut self.host_infos[self.hosts[h].info_idx];
        let n = self.hosts[h].flows.len();
        if info.flows.len() < n {
            info.flows.resize(n, FlowId::NONE);
            info.flow_dst.resize(n, NodeId::NONE);
            info.flow_frame_bytes.resize(n, 0);
            info.flow_base_rtt_ps.resize(n, 0);
        }
        let l = local as usize;
        (info.flows[l], info.flow_dst[l], info.flow_frame_bytes[l], info.flow_base_rtt_ps[l]) = (q, dst, frame_bytes, rtt);
        if self.hosts[h].rp.is_some() {
            self.rp_call(h, |rp, ctx| rp.on_queue_open(ctx, local));
        }
        if self.rdma.is_some() {
            self.rdma_open(q);
        }
        q
    }

    /// A data frame or ACK of transfer queue `q` was delivered or dropped.
    #[inline]
    pub(crate) fn queue_frame_gone(&mut self, q: FlowId) {
        let m = self.meta_mut(q);
        debug_assert!(m.inflight > 0, "a frame of queue {q:?} in flight");
        m.inflight -= 1;
        if m.inflight == 0 && m.closing {
            self.close_queue(q);
        }
    }

    /// Close transfer queue `q`: fold its counters into its flow, free its local index, its
    /// reaction-point and reflector state and its slot.
    fn close_queue(&mut self, q: FlowId) {
        let parent = self.meta(q).parent;
        let (local, src, dst) = {
            let f = &self.flows[q.idx()];
            debug_assert!(!f.has_frame() && f.backlog == 0 && self.meta(q).inflight == 0, "closing a queue with frames");
            (f.local, f.src, f.dst)
        };
        let (pi, qi) = (parent.idx(), q.idx());
        let (a, b) = self.flows.split_at_mut(qi);
        fold_counters(&mut a[pi], &b[0]);
        if let Some(t) = self.flows[qi].tcp.take() {
            self.tcp_closed[pi].add(&t);
        }
        let h = self.host_of[src.idx()] as usize;
        let host = &mut self.hosts[h];
        debug_assert!(host.flows.len() == 1 || host.active[local as usize / 64] >> (local % 64) & 1 == 0, "an idle queue");
        host.flows[local as usize] = FlowId::NONE;
        host.free_locals.push(local);
        let info_idx = host.info_idx;
        self.host_infos[info_idx].flows[local as usize] = FlowId::NONE;
        self.flows[qi].src = NodeId::NONE; // no host's queue any more (`Backlog::local_of`)
        let m = self.meta_mut(q);
        (m.parent, m.closing) = (FlowId::NONE, false);
        self.free_queues.push_back(q.0);
        if self.hosts[h].rp.is_some() {
            self.rp_call(h, |rp, ctx| rp.on_queue_close(ctx, local));
        }
        let d = self.host_of[dst.idx()];
        if d != NONE_U32 {
            if let Some(rf) = self.hosts[d as usize].reflector.as_mut() {
                rf.on_queue_close(q);
            }
        }
    }

    /// Base RTT of a queue from `src` to `dst` (frames of `frame_bytes`), ps, along the path its
    /// frames take (ECMP key `key`): as [`crate::build`]'s for declared flows — twice the
    /// propagation and switch latencies, one data frame out and one control frame back per link,
    /// plus the source's response delay.
    pub(crate) fn path_base_rtt(&self, src: NodeId, dst: NodeId, frame_bytes: u32, key: FlowId) -> u64 {
        let wire = self.cfg.wire_overhead_bytes as u64;
        let ctrl = self.cfg.control_frame_bytes as u64 + wire;
        let h = self.host_of[src.idx()] as usize;
        let mut rtt = self.hosts[h].response_delay_ps;
        let mut port = self.hosts[h].port;
        for _ in 0..self.ports.len() {
            let p = &self.ports[port.idx()];
            rtt = rtt
                .saturating_add(p.prop_ps.saturating_mul(2))
                .saturating_add(p.tx_ps(frame_bytes as u64 + wire))
                .saturating_add(p.tx_ps(ctrl))
                .saturating_add(p.peer_latency_ps.saturating_mul(2));
            let next = p.peer_node;
            if next == dst || !self.is_switch(next) {
                break;
            }
            port = self.out_port(self.switch_of[next.idx()] as usize, dst, key.0 as u64);
            if port.is_none() {
                break;
            }
        }
        rtt
    }

    /// Every declared flow's counters with those of its transfers' queues, closed and still open
    /// (the summary's `flows`, the per-flow conservation check).
    pub fn flow_totals(&self) -> Vec<FlowTotals> {
        let mut out: Vec<FlowTotals> = (0..self.n_flows)
            .map(|i| {
                let mut t = FlowTotals { tcp: self.tcp_closed.get(i).copied().unwrap_or_default(), ..Default::default() };
                t.add_counters(&self.flows[i]);
                t
            })
            .collect();
        for (f, m) in self.flows[self.n_flows..].iter().zip(&self.queue_meta) {
            if m.parent.is_none() {
                continue; // a free slot
            }
            let t = &mut out[m.parent.idx()];
            t.add_counters(f);
            if let Some(tcp) = &f.tcp {
                t.tcp.add(tcp);
            }
        }
        out
    }

    /// Data frames and ACKs of transfer queue `q` in flight.
    pub fn transfer_queue_inflight(&self, q: FlowId) -> u32 {
        self.meta(q).inflight
    }

    /// Transfer queues open now.
    pub fn open_transfer_queues(&self) -> usize {
        self.queue_meta.iter().filter(|m| !m.parent.is_none()).count()
    }
}

#[cfg(test)]
mod tests {
    use crate::cm::Emit;
    use crate::frame::CmMsg;
    use crate::ids::{FlowId, NodeId};
    use crate::ir::*;
    use crate::Simulation;

    const US: u64 = 1_000_000;

    /// Host h0 sends transfers of `bytes` to h1 every `period_ps` (from `phase_ps`) through one
    /// switch, links 10 Gb/s and 1 us, under `scheme` (its default parameters), with `nic`.
    fn pair(scheme: &str, nic: NicIr, bytes: u64, period_ps: u64, duration_ps: u64) -> Ir {
        let host = |n: &str| NodeIr::Host { name: n.into(), response_delay_ps: US };
        let sw = NodeIr::Switch {
            name: "sw".into(),
            latency_ps: 0,
            buffer: BufferIr::Egress { egress_bytes: 1_000_000 },
            pause: PauseIr::None,
            ecn_threshold_bytes: None,
        };
        let link = |a, b| LinkIr { a, b, rate_bps: 10_000_000_000, prop_ps: US };
        let cm: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/golden/cm-params.json")).unwrap())
                .unwrap();
        let sources = vec![SourceIr {
            stream_id: 1,
            flows: vec![0],
            start_ps: 0,
            stop_ps: u64::MAX,
            gate: None,
            process: ProcessIr::PeriodicFlows { period_ps, phase_ps: 0, bytes, partial_last: false },
            dst_set: None,
        }];
        let flows = vec![FlowIr { src: 1, dst: Some(2), frame_bytes: 1500, transport: TransportIr::Udp, priority: 0 }];
        Ir {
            cm: serde_json::from_value(cm[scheme].clone()).unwrap(),
            nic,
            ..Ir::new("pair", duration_ps, vec![sw, host("h0"), host("h1")], vec![link(1, 0), link(2, 0)], flows, sources)
        }
    }

    const PER_TRANSFER: NicIr = NicIr { queues: NicQueuesIr::Transfer, rate_limiters: RateLimitersIr::Queue };

    /// A CNP about send queue `q` reaches host h0 (node 1) now.
    fn cnp(sim: &mut Simulation, q: FlowId, gen: u32) {
        let net = sim.network_mut();
        let msg = CmMsg { kind: crate::cm::dcqcn::MSG_CNP, flow: q, gen: 0, cpid: 0, v: [0.0; 3] };
        let fr = net.new_control_frame(NodeId(2), Emit { dst: NodeId(1), msg, bytes: 0, echo_int: false });
        net.frames.msgs_mut(fr).gen = gen; // as made at the time of `gen`
        net.host_feedback(NodeId(1), fr);
    }

    #[test]
    fn two_transfers_of_one_pair_hold_their_own_dcqcn_rates() {
        // two 1-MB transfers 10 us apart: both in progress at 20 us, each in a queue of its own
        let mut sim = Simulation::new(pair("dcqcn", PER_TRANSFER, 1_000_000, 10 * US, 2_000 * US)).unwrap();
        sim.run_until(20 * US);
        let open: Vec<FlowId> =
            (1..sim.network().flows.len()).map(|i| FlowId(i as u32)).filter(|&q| !sim.network().meta(q).parent.is_none()).collect();
        assert_eq!(open.len(), 2, "a queue per transfer");
        let (a, b) = (open[0], open[1]);
        let gen = sim.network().meta(a).gen;
        cnp(&mut sim, a, gen);
        let net = sim.network();
        let (ra, rb) = (net.flows[a.idx()].rl_rate, net.flows[b.idx()].rl_rate);
        assert!(ra.is_some_and(|r| r < 10e9), "the marked transfer is cut: {ra:?}");
        assert_eq!(rb, None, "the other transfer of the pair keeps the line rate");
        // the reaction point's own state agrees: its local indices are the queues'
        let h = &net.hosts[net.host_of[1] as usize];
        let rp = h.rp.as_ref().unwrap();
        assert_eq!(rp.rate_bps(net.flows[a.idx()].local), ra);
        assert_eq!(rp.rate_bps(net.flows[b.idx()].local), None);
        // with the seeds' NIC the pair has one limiter: the CNP cuts the flow, both transfers with it
        let fifo = NicIr::default();
        let mut sim = Simulation::new(pair("dcqcn", fifo, 1_000_000, 10 * US, 2_000 * US)).unwrap();
        sim.run_until(20 * US);
        assert_eq!(sim.network().flows.len(), 1, "no transfer queue with a FIFO per flow");
        cnp(&mut sim, FlowId(0), 0);
        assert!(sim.network().flows[0].rl_rate.is_some_and(|r| r < 10e9));
        sim.run_until(u64::MAX);
        sim.finish().expect("conservation");
    }

    #[test]
    fn queues_close_as_transfers_complete_and_late_feedback_is_stale() {
        // 3-kB transfers every 20 us: each completes long before the next starts, so one slot serves
        // them all; a CNP made for an earlier transfer's queue finds the slot reused and is ignored
        let mut sim = Simulation::new(pair("dcqcn", PER_TRANSFER, 3_000, 20 * US, 1_000 * US)).unwrap();
        sim.run_until(15 * US);
        let net = sim.network();
        assert_eq!((net.flows.len(), net.open_transfer_queues()), (2, 0), "the first transfer is done, its queue closed");
        let first_gen = net.meta(FlowId(1)).gen;
        sim.run_until(25 * US);
        assert_eq!(sim.network().open_transfer_queues(), 1);
        let q = FlowId(1);
        assert_eq!(sim.network().meta(q).gen, first_gen + 1, "the slot reused by the next transfer");
        cnp(&mut sim, q, first_gen);
        let net = sim.network();
        assert_eq!(net.c.ctrl_stale, 1);
        assert_eq!(net.flows[q.idx()].rl_rate, None, "stale feedback leaves the new queue alone");
        sim.run_until(u64::MAX);
        let net = sim.network();
        assert_eq!(net.flows.len(), 2, "memory follows the transfers in progress: one slot for 50 transfers");
        let res = sim.finish().expect("conservation");
        let flows = res.summary["flows"].as_array().unwrap();
        assert_eq!(flows.len(), 1, "the summary lists declared flows only");
        assert_eq!(flows[0]["delivered_frames"], 2 * 50, "every queue's counts folded into its flow");
        assert_eq!(res.summary["fct"]["count"], 50);
    }

    #[test]
    fn a_host_of_one_flow_with_a_frame_waiting_keeps_serving_it_beside_a_transfer_queue() {
        // h0's declared flow carries CBR frames faster than its link (12 Gb/s into 10: a frame always
        // waits; a host of one flow keeps no active set, its count says it), and from 20 us a
        // 30-kB transfer opens a queue, the host's second flow: the round robin must find the first
        // flow's frames (the set takes its bit up), while the transfer goes on
        let mut ir = pair("dcqcn", PER_TRANSFER, 30_000, 1_000 * US, 100 * US);
        ir.sources[0].process = ProcessIr::PeriodicFlows { period_ps: 1_000 * US, phase_ps: 20 * US, bytes: 30_000, partial_last: false };
        let mut cbr = ir.sources[0].clone();
        cbr.stream_id = 2;
        cbr.process = ProcessIr::Cbr { interval_ps: 1_000_000, phase_ps: 0, random_phase: false };
        ir.sources.push(cbr);
        let mut sim = Simulation::new(ir).unwrap();
        sim.run_until(22 * US);
        let net = sim.network();
        assert_eq!(net.open_transfer_queues(), 1, "the transfer's queue is open");
        assert!(net.flows[0].backlog > 0, "the declared flow has frames waiting");
        let before = net.flows[0].sent_frames;
        sim.run_until(30 * US);
        let sent = sim.network().flows[0].sent_frames - before;
        assert!(sent >= 2, "the declared flow is served beside the queue: {sent} frames in 8 us");
        sim.run_until(u64::MAX);
        let res = sim.finish().expect("conservation");
        assert_eq!(res.summary["fct"]["count"], 1, "the transfer completes");
    }

    #[test]
    fn a_transfer_queue_base_rtt_is_its_flows() {
        // the RTT a queue's reaction point gets (HPCC's T) is the one the build computes for a
        // declared flow on the same path
        let mut sim = Simulation::new(pair("hpcc", PER_TRANSFER, 1_000_000, 10 * US, 100 * US)).unwrap();
        sim.run_until(5 * US);
        let net = sim.network();
        let info = &net.host_infos[net.hosts[net.host_of[1] as usize].info_idx];
        assert_eq!(info.flows.len(), 2);
        assert_eq!(info.flow_base_rtt_ps[1], info.flow_base_rtt_ps[0]);
        assert!(info.flow_base_rtt_ps[0] > 4 * US);
    }
}
