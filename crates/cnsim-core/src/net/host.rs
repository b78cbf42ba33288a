//! Hosts: one NIC port, the flows that start here, a control-frame FIFO, the reaction point (RP)
//! owning the flows' rate limiters, and the reflector for forward schemes (model reference §1.2).
//!
//! The NIC serves control frames first, then round-robin over the flows that have a frame and
//! whose rate limiter allows it (`next_allowed`). A host under PAUSE starts nothing new; under PFC
//! it starts no frame of a paused priority (other priorities go on).

use super::{Network, NONE_U32, OWNER_HOST};
use crate::cm::{self, Emit, HostCtx, ReactionPoint, Reflector};
use crate::event::Event;
use crate::frame::{tag, Frame, FrameId, FrameKind, Tag};
use crate::ids::{FlowId, NodeId, PortId};
use crate::time::SimTime;
use std::collections::VecDeque;

/// The [`HostCtx`] of host `$h`'s hooks, built from the network's fields rather than by a method,
/// so that the caller may hold the host's RP or reflector (`hosts[h]`) and the frame being handled
/// (`frames`) mutably at the same time: no hook can reach those through its context, and the engine
/// no longer moves the hook out of its slot or copies the frame in and out for each call.
macro_rules! host_ctx {
    ($net:ident, $h:expr, $info_idx:expr) => {
        HostCtx {
            now: $net.now,
            info: &$net.host_infos[$info_idx],
            rng: &mut $net.host_rngs[$h],
            int: $net.int.as_ref().and_then(|t| t.current()),
            out: &mut $net.emits,
            rates: &mut $net.rate_changes,
            limits: &mut $net.limit_changes,
            timers: &mut $net.timers,
            backlog: &$net.flows,
            extra_overhead_bytes: &mut $net.c.extra_overhead_bytes,
        }
    };
}

/// A host: one NIC port, its flows (round-robin), control-frame FIFO, RP and reflector.
#[repr(C, align(64))]
pub struct Host {
    // The fields every send path reads first, in one cache line (`repr(C)` keeps this order; the
    // host records of a fan-in are touched in turn, so each extra line read is a cache miss).
    /// Scheduled wake time (dedupes HostWake events), u64::MAX = none.
    pub wake_at: SimTime,
    /// Number of flows with a frame waiting (saturated or backlog > 0).
    pub backlogged: u32,
    pub port: PortId,
    /// Control frames waiting for the NIC (served ahead of data).
    pub ctrl_q: VecDeque<FrameId>,
    pub rp: Option<Box<dyn ReactionPoint>>,
    // (second line) the rest of what a paced host's transmission reads: a host of one flow sends
    // with these two lines (the third is for the round robin over many flows and the receiver)
    pub flows: Vec<FlowId>,
    pub rr_next: usize,
    pub node: NodeId,
    /// `flows[0]` (`FlowId::NONE`: no flow): a host of one flow finds it without reading its
    /// flow list and active set.
    pub first_flow: FlowId,
    pub info_idx: usize,
    pub response_delay_ps: u64,
    /// The priority of the host's first flow, and whether some queue has another: the NIC then
    /// serves the highest priority first (strict 802.1p priority between classes).
    pub prio0: u8,
    pub prio_mixed: bool,
    // (third line)
    /// The same as a bit set over local flow indices: the round robin visits only these (a host
    /// of a large fabric has ~1 000 flows, few of them with a frame at any time). Kept on a host
    /// of several flows only: on a host of one, `backlogged` says it (and the set is all zeros).
    pub active: Vec<u64>,
    pub reflector: Option<Box<dyn Reflector>>,
    /// Local indices of closed transfer queues, reused by the next ones ([`super::queues`]).
    pub free_locals: Vec<u32>,
}

// a paced transmission's fields in the first two lines (the first line's are checked in net/mod.rs)
const _: () = assert!(std::mem::offset_of!(Host, flows) >= 64 && std::mem::offset_of!(Host, prio_mixed) < 128);

impl Host {
    /// Whether the wake-up already scheduled (`wake_at`) serves one wanted at `t`: it is `t`, or
    /// sooner but not yet past (the NIC will look again then).
    #[inline]
    pub(super) fn wakes_by(&self, t: SimTime, now: SimTime) -> bool {
        self.wake_at == t || (self.wake_at < t && self.wake_at >= now)
    }
}

/// Indices of the set bits of `bits` in round-robin order from `start`: those in `[start, n)`,
/// then those in `[0, start)`, each part ascending (bits at `n` and above are never set).
struct RoundRobin<'a> {
    bits: &'a [u64],
    /// Word being scanned and what is left of it.
    w: usize,
    word: u64,
    /// Words still to load; the last is the start word again, masked below `start`.
    steps: usize,
    low_mask: u64,
}

impl<'a> RoundRobin<'a> {
    #[inline]
    fn new(bits: &'a [u64], start: usize) -> Self {
        let w = start / 64;
        RoundRobin { bits, w, word: bits[w] & (!0u64 << (start % 64)), steps: bits.len(), low_mask: (1u64 << (start % 64)) - 1 }
    }
}

impl Iterator for RoundRobin<'_> {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        loop {
            if self.word != 0 {
                let b = self.word.trailing_zeros() as usize;
                self.word &= self.word - 1;
                return Some(self.w * 64 + b);
            }
            if self.steps == 0 {
                return None;
            }
            self.steps -= 1;
            self.w = if self.w + 1 == self.bits.len() { 0 } else { self.w + 1 };
            self.word = self.bits[self.w];
            if self.steps == 0 {
                self.word &= self.low_mask;
            }
        }
    }
}

impl Network {
    /// When host `h`'s NIC, busy until `t`, has work again, and whether that is a wait for its rate
    /// limiter: for a host of one flow (no control frame, no PFC) whose limiter holds the flow
    /// beyond `t`, the limiter's time, because a look at `t` would only ask for that wake-up (one
    /// event fewer per paced frame); else `t`. Every path that can make the flow eligible sooner
    /// (a rate change, a control frame, a pause) looks again itself.
    #[inline]
    pub(super) fn host_next_look(&self, h: usize, t: SimTime) -> (SimTime, bool) {
        let host = &self.hosts[h];
        if host.flows.len() == 1 && host.ctrl_q.is_empty() && !self.pfc_enabled {
            let f = &self.flows[host.first_flow.idx()];
            if f.next_allowed > t && f.sent_bytes < f.send_limit {
                return (f.next_allowed, true);
            }
        }
        (t, false)
    }

    /// Make sure host `h`'s NIC looks for work at `t`; `wait`: `t` is when a rate limiter or a
    /// pause lets it go on (the queue's wait tree), not the end of its transmission.
    #[inline]
    pub(crate) fn ensure_host_wake(&mut self, h: usize, t: SimTime, wait: bool) {
        if self.hosts[h].wakes_by(t, self.now) {
            return;
        }
        self.hosts[h].wake_at = t;
        let node = self.hosts[h].node;
        if wait {
            self.q.push_wait(t, h, node);
        } else {
            self.schedule(t, Event::HostWake { host: node });
        }
    }

    /// [`Network::ensure_host_wake`] at the end `t` of the 802.3x pause that holds host `h`'s NIC,
    /// unless an XON or a refresh is sure to come before it ([`crate::net::Port::pause_guarded`]).
    #[inline]
    pub(crate) fn ensure_host_pause_wake(&mut self, h: usize, t: SimTime) {
        if self.ports[self.hosts[h].port.idx()].pause_guarded {
            #[cfg(test)]
            crate::net::flowctl::pause::tests::GUARDED.with(|n| n.set(n.get() + 1));
            return;
        }
        self.ensure_host_wake(h, t, true);
    }

    /// A scheduled HostWake event (stale ones are ignored).
    pub(crate) fn host_wake(&mut self, host: NodeId) {
        let h = self.host_of[host.idx()] as usize;
        self.catch_up(h);
        if self.hosts[h].wake_at == self.now {
            self.hosts[h].wake_at = u64::MAX;
            if self.hosts[h].rp.is_some() {
                self.host_wake_send(h);
            } else {
                self.host_try_send(h);
            }
        }
    }

    /// The NIC looks for work: control frames first, then one data frame of the next eligible flow.
    pub(crate) fn host_try_send(&mut self, h: usize) {
        let now = self.now;
        let pid = self.hosts[h].port;
        let (busy_until, paused_until) = {
            let p = &self.ports[pid.idx()];
            (p.busy_until, p.pause.paused_until)
        };
        if busy_until > now {
            if !self.hosts[h].ctrl_q.is_empty() || self.hosts[h].backlogged > 0 {
                let (t, wait) = self.host_next_look(h, busy_until);
                self.ensure_host_wake(h, t, wait);
            }
            return;
        }
        // PFC: the priorities held now (their frames wait; the others go on); 0 without PFC
        let mut held = 0u8;
        if self.pfc_enabled {
            let pf = self.ports[pid.idx()].pfc.as_ref().expect("PFC port");
            for k in 0..crate::net::flowctl::PRIORITIES {
                held |= (pf.holds(k, now) as u8) << k;
            }
        } else if paused_until > now {
            if !self.hosts[h].ctrl_q.is_empty() || self.hosts[h].backlogged > 0 {
                self.ensure_host_pause_wake(h, paused_until);
            }
            return;
        }
        let mut min_blocked = u64::MAX;
        if let Some(&fr) = self.hosts[h].ctrl_q.front() {
            let k = self.frames.get(fr).prio;
            if held == 0 || held >> k & 1 == 0 {
                self.hosts[h].ctrl_q.pop_front();
                self.host_transmit(h, fr);
                return;
            }
            min_blocked = self.pfc_paused_until(pid, k);
        }
        if self.hosts[h].backlogged == 0 {
            if min_blocked != u64::MAX {
                self.ensure_host_wake(h, min_blocked, true);
            }
            return;
        }
        // round robin over the flows with a frame, in local-index order from `rr_next`
        let host = &self.hosts[h];
        let n = host.flows.len();
        debug_assert!(n == 1 || host.active.iter().map(|w| w.count_ones()).sum::<u32>() == host.backlogged);
        let pick = if n == 1 {
            // one flow, so it is the one with a frame: no round robin (the flow list and the
            // active set are not read)
            let fid = host.first_flow;
            debug_assert_eq!(fid, host.flows[0]);
            if !self.flow_may_send(fid, held, pid, &mut min_blocked) {
                None
            } else if self.next_is_plain_lone(h, fid) {
                self.hosts[h].rr_next = 0;
                return self.host_send_queued_lone(h, pid, fid);
            } else {
                Some((0, fid))
            }
        } else if host.prio_mixed {
            self.pick_by_priority(h, held, pid, &mut min_blocked)
        } else {
            RoundRobin::new(&host.active, host.rr_next)
                .map(|i| (i, host.flows[i]))
                .find(|&(_, fid)| self.flow_may_send(fid, held, pid, &mut min_blocked))
        };
        let Some((pick, fid)) = pick else {
            if min_blocked != u64::MAX {
                self.ensure_host_wake(h, min_blocked, true);
            }
            return;
        };
        self.hosts[h].rr_next = if pick + 1 == n { 0 } else { pick + 1 };
        self.host_send_data(h, pid, fid);
    }

    /// The round robin of a host whose queues have several priorities: strict 802.1p priority
    /// between classes (the highest that may send), round robin within a class from `rr_next`.
    /// Every queue with a frame is looked at, so `min_blocked` covers them all.
    fn pick_by_priority(&self, h: usize, held: u8, pid: PortId, min_blocked: &mut SimTime) -> Option<(usize, FlowId)> {
        let host = &self.hosts[h];
        let mut best: Option<(usize, FlowId, u8)> = None;
        for i in RoundRobin::new(&host.active, host.rr_next) {
            let fid = host.flows[i];
            if self.flow_may_send(fid, held, pid, min_blocked) {
                let prio = self.flows[fid.idx()].prio;
                if best.is_none_or(|b| prio > b.2) {
                    best = Some((i, fid, prio));
                }
            }
        }
        best.map(|(i, fid, _)| (i, fid))
    }

    /// The round robin's test of flow `fid` (which has a frame) on a NIC free now, with the PFC
    /// priorities `held`: whether it may start a frame now; if not, `min_blocked` is lowered to
    /// when it may (a flow held by its window waits for the hook that moves the limit: no change).
    #[inline(always)]
    fn flow_may_send(&self, fid: FlowId, held: u8, pid: PortId, min_blocked: &mut SimTime) -> bool {
        let f = &self.flows[fid.idx()];
        debug_assert!(f.has_frame(), "active bit of a flow without a frame");
        if f.sent_bytes >= f.send_limit {
            false
        } else if held != 0 && held >> f.prio & 1 == 1 {
            *min_blocked = (*min_blocked).min(self.pfc_paused_until(pid, f.prio).max(f.next_allowed));
            false
        } else if f.next_allowed <= self.now {
            true
        } else {
            *min_blocked = (*min_blocked).min(f.next_allowed);
            false
        }
    }

    /// [`Network::host_start_frame`] of a lone frame of declared flow `fid` (no transfer) on a host
    /// without hooks — no reaction point, no INT, no capture or link events — which has nothing else
    /// to send ([`Network::host_send_lone`]'s tests): the same frame, counters and arrival, with each
    /// record looked up once (through the network's fields, borrowed apart) instead of once per
    /// step, and no look for more work (none can have come: no hook ran). Fan-in-4: ≈ 60
    /// instructions fewer per frame sent, 5 % of the run. Returns the end of serialisation.
    #[inline(always)]
    pub(super) fn host_start_plain(&mut self, h: usize, pid: PortId, fid: FlowId, size: u32) -> SimTime {
        let now = self.now;
        let Network { hosts, flows, ports, frames, c, q, cfg, .. } = self;
        let f = &mut flows[fid.idx()];
        let (src, dst, prio) = (hosts[h].node, f.dst, f.prio);
        let fr = frames.alloc_made(|| Frame::lone_data(src, dst, fid, prio, size, now));
        lone_frame_started(f, c, &mut ports[pid.idx()], q, cfg, (now, size, fr))
    }

    /// Whether the next frame of flow `fid`, host `h`'s only one, is a lone frame of its size (no
    /// chunk in its FIFO: `backlog` is all `lone_tail`) of a UDP flow on a host without hooks (no
    /// reaction point, INT, capture or link events, RDMA): [`Network::host_send_queued_lone`]'s case.
    #[inline(always)]
    fn next_is_plain_lone(&self, h: usize, fid: FlowId) -> bool {
        // (the reaction point first: a host with one is told at once)
        self.plain_sender(h, fid) && self.next_is_lone(fid) && self.rdma.is_none() && self.flows[fid.idx()].tcp.is_none()
    }

    /// Whether a lone frame of flow `fid` starts on host `h` through [`Network::host_start_plain`]:
    /// no reaction point, INT, capture or link events, and not a transfer's own queue.
    #[inline(always)]
    pub(super) fn plain_sender(&self, h: usize, fid: FlowId) -> bool {
        self.hosts[h].rp.is_none() && !self.tx_hook && self.int.is_none() && !self.is_transfer_queue(fid)
    }

    /// [`Network::host_send_data`] of a frame [`Network::next_is_plain_lone`] found: what
    /// `take_frame` and `host_start_frame` do for it, without their tests for transfers, TCP,
    /// RDMA and hooks — the frames a source queued while the NIC was paused or busy, sent at the
    /// XON or the end of the transmission (global PAUSE fan-in-100: most frames). Then the look
    /// for more work of `host_start_frame` (no hook ran, so nothing else changed). Out of line:
    /// inlined, it changed the code of host_try_send's other sends (k = 8 fat tree +0.14 %
    /// instructions, QCN +0.2 %), for 0.4 M of the 8 M it saves under PAUSE.
    #[inline(never)]
    fn host_send_queued_lone(&mut self, h: usize, pid: PortId, fid: FlowId) {
        let size = self.take_lone(h, fid);
        let t_end = self.host_start_plain(h, pid, fid, size);
        let host = &self.hosts[h];
        if !host.ctrl_q.is_empty() || host.backlogged > 0 {
            let (t, wait) = self.host_next_look(h, t_end);
            self.ensure_host_wake(h, t, wait);
        }
    }

    /// Start the next data frame of flow `fid` on host `h`'s idle NIC (port `pid`).
    fn host_send_data(&mut self, h: usize, pid: PortId, fid: FlowId) {
        let taken = if self.flows[fid.idx()].tcp.is_some() {
            let (seg, size, ecn) = self.tcp_take_segment(fid);
            (NONE_U32, size, false, seg.seq, if ecn { tag::ECT } else { 0 })
        } else if self.next_is_lone(fid) {
            (NONE_U32, self.take_lone(h, fid), false, 0, 0)
        } else {
            let (transfer, size, last) = self.take_frame(h, fid);
            if self.rdma.is_some() && transfer != NONE_U32 && self.rdma_on(fid) {
                // RDMA loss recovery: the frame's PSN (crate::net::rdma)
                let (psn, last) = self.rdma_psn(fid, transfer, size, last);
                (transfer, size, last, psn, 0)
            } else {
                (transfer, size, last, 0, 0)
            }
        };
        self.host_start_frame(h, pid, fid, taken)
    }

    /// Start a data frame of flow `fid` taken from it (transfer, size, last frame of its
    /// transfer, TCP sequence number, tag flags) on host `h`'s idle NIC (port `pid`).
    #[inline(always)]
    pub(super) fn host_start_frame(&mut self, h: usize, pid: PortId, fid: FlowId, taken: (u32, u32, bool, u64, u8)) {
        let now = self.now;
        let (transfer, size, last_of_transfer, seq, flags) = taken;
        let (dst, prio, local) = {
            let f = &self.flows[fid.idx()];
            (f.dst, f.prio, f.local)
        };
        let src = self.hosts[h].node;
        // written straight into its slot: a record built beside it in pieces and copied there in
        // 16-byte moves stalled each copy on store forwarding (≈ 14 % of host_try_send's time under QCN)
        let fr = self.frames.alloc_made(|| Frame {
            kind: FrameKind::Data,
            size,
            src,
            dst,
            flow: fid,
            transfer,
            ingress: PortId::NONE,
            born: now,
            tag: Tag { flags, ..Tag::default() },
            prio,
            seq,
        });
        if let Some(int) = self.int.as_mut() {
            int.reset(fr);
        }
        let mut size = size;
        let info_idx = self.hosts[h].info_idx;
        let hooked = if let Some(rp) = self.hosts[h].rp.as_mut() {
            let frame = self.frames.get_mut(fr);
            rp.on_transmit(&mut host_ctx!(self, h, info_idx), local, frame);
            size = frame.size;
            true
        } else {
            false
        };
        self.queue_frame_sent(fid);
        self.flows[fid.idx()].note_sent(now, size);
        self.c.data_sent.0 += 1;
        self.c.data_sent.1 += size as u64;
        let t_end = self.host_put_on_wire(h, pid, fr, size, false);
        if last_of_transfer {
            self.transfer_left_nic(transfer, t_end);
        }
        if hooked {
            self.apply_host_effects(h, false);
        } else {
            // no hook ran, so none asked for anything: only what apply_host_effects does then
            debug_assert!(
                self.timers.is_empty() && self.rate_changes.is_empty() && self.limit_changes.is_empty() && self.emits.is_empty(),
                "host effects pending outside a hook"
            );
            self.set_int_current(None);
        }
        // after the hook's rate changes, which move the limiter's time
        let host = &self.hosts[h];
        if !host.ctrl_q.is_empty() || host.backlogged > 0 {
            let (t, wait) = self.host_next_look(h, t_end);
            self.ensure_host_wake(h, t, wait);
        }
    }

    /// Put frame `fr` on the host's wire now; returns the end of serialisation.
    pub(crate) fn host_transmit(&mut self, h: usize, fr: FrameId) -> SimTime {
        let (pid, size) = (self.hosts[h].port, self.frames.get(fr).size);
        self.host_put_on_wire(h, pid, fr, size, true)
    }

    /// [`Network::host_transmit`] of frame `fr` of `size` bytes on host `h`'s port `pid`.
    #[inline(always)]
    fn host_put_on_wire(&mut self, h: usize, pid: PortId, fr: FrameId, size: u32, wake: bool) -> SimTime {
        // HPCC's INT header (crate::int), packet traces (crate::net::pcap), a frame a failing link will
        // lose (crate::net::dynamics): the frame's size on the wire
        let size = if self.tx_hook { self.host_tx_hook(pid, fr, size) } else { size };
        let now = self.now;
        let wire = self.cfg.wire_overhead_bytes as u64;
        let (w, end) = (self.cfg.warmup_ps, self.cfg.duration_ps);
        let p = &mut self.ports[pid.idx()];
        let t_end = now + p.tx_ps(size as u64 + wire);
        p.busy_until = t_end;
        p.account_busy(now, t_end, w, end);
        let arrive = t_end + p.prop_ps + p.peer_latency_ps;
        let peer = p.peer;
        self.schedule(arrive, Event::Arrive { port: peer, frame: fr });
        let host = &self.hosts[h];
        if wake && (!host.ctrl_q.is_empty() || host.backlogged > 0) {
            self.ensure_host_wake(h, t_end, false);
        }
        t_end
    }

    /// A frame reached host `h` through `port`.
    pub(crate) fn host_arrive(&mut self, h: usize, port: PortId, fr: FrameId) {
        self.catch_up(h);
        let now = self.now;
        if fr.is_mac_control() {
            self.mac_control_receive(port, fr);
            return self.pause_reached_host(h, port);
        }
        let (kind, size, flow, transfer, seq, flags) = {
            let f = self.frames.get(fr);
            (f.kind, f.size, f.flow, f.transfer, f.seq, f.tag.flags)
        };
        match kind {
            FrameKind::Ack if self.flows[flow.idx()].tcp.is_none() => {
                // an RDMA ACK or NACK (crate::net::rdma)
                self.frames.free(fr);
                self.c.ack_delivered += 1;
                self.rdma_ack_arrived(flow, seq, flags & crate::net::rdma::NACK != 0);
                self.queue_frame_gone(flow);
            }
            FrameKind::Ack => {
                self.tcp_ack_arrived(fr, flow, seq, flags & tag::ECE != 0);
                if self.is_transfer_queue(flow) {
                    self.queue_frame_gone(flow);
                }
            }
            FrameKind::Control => {
                let d = self.hosts[h].response_delay_ps;
                let node = self.hosts[h].node;
                self.schedule(now + d, Event::Feedback { host: node, frame: fr });
            }
            FrameKind::Data => self.host_deliver_data(h, fr, now, size, flow, transfer, seq, flags, true),
        }
    }

    /// Data frame `fr` (of `size` bytes, `flow`, `transfer`, TCP `seq`, tag `flags`) reaches host `h`
    /// at `t`: counted, handed to TCP and (if `reflect`) the reflector, freed.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn host_deliver_data(&mut self, h: usize, fr: FrameId, t: SimTime, size: u32, flow: FlowId, transfer: u32, seq: u64, flags: u8, reflect: bool) {
        self.c.data_delivered.0 += 1;
        self.c.data_delivered.1 += size as u64;
        let warm = t >= self.cfg.warmup_ps;
        let f = &mut self.flows[flow.idx()];
        f.delivered_frames += 1;
        f.delivered_bytes += size as u64;
        if warm {
            f.delivered_bytes_window += size as u64;
        }
        self.flow_bins.on_delivery(self.stat_flow(flow), t, size, self.ports[self.hosts[h].port.idx()].tx_ps(size as u64));
        let mut settled = false;
        if transfer != NONE_U32 && self.rdma.is_some() && self.rdma_on(flow) {
            // in order or kept beyond a hole: new data; the transfer settles at the sender's final
            // ACK (crate::net::rdma)
            if self.rdma_receive(h, flow, seq) {
                let tr = &mut self.transfers[transfer];
                tr.delivered += 1;
                if tr.delivered == tr.frames {
                    tr.end = t;
                }
            }
        } else if transfer != NONE_U32 {
            let tr = &mut self.transfers[transfer];
            tr.delivered += 1;
            if tr.delivered == tr.frames {
                tr.end = t;
            }
            settled = self.transfers.settle(transfer, t);
        }
        if self.flows[flow.idx()].tcp.is_some() {
            self.tcp_on_data(h, flow, seq, size, flags & tag::CE != 0);
        }
        if reflect && self.hosts[h].reflector.is_some() {
            self.set_int_current(Some(fr));
            let info_idx = self.hosts[h].info_idx;
            if let Some(rf) = self.hosts[h].reflector.as_mut() {
                rf.on_data(&mut host_ctx!(self, h, info_idx), self.frames.get(fr));
            }
            self.apply_host_effects(h, true);
            self.set_int_current(None);
        }
        self.frames.free(fr);
        if self.is_transfer_queue(flow) {
            if settled {
                self.queue_settling(flow);
            }
            self.queue_frame_gone(flow);
        }
    }

    /// Frame `fr`, leaving a switch port toward `peer`, arrives there at `t`. A data frame for a
    /// host that only counts it (no TCP, no reflector, or a reflector that ignores this frame:
    /// [`Reflector::wants_data`], e.g. DCQCN's NP and an unmarked frame) and that arrives within
    /// the current `run_until` is delivered now, stamped `t`, instead of through an `Arrive`
    /// event: nothing reads what a delivery changes (counters, throughput bins, transfer ends)
    /// before the end of the run, so the results are the same; the event is still counted.
    /// Returns whether it did.
    #[inline(always)]
    pub(crate) fn deliver_direct(&mut self, peer: PortId, fr: FrameId, t: SimTime) -> bool {
        if t >= self.run_limit {
            return false;
        }
        let owner = self.port_owner[peer.idx()];
        if owner & OWNER_HOST == 0 {
            return false;
        }
        let h = owner & !OWNER_HOST;
        let f = self.frames.get(fr);
        if f.kind != FrameKind::Data || self.flows[f.flow.idx()].tcp.is_some() {
            return false;
        }
        if self.hosts[h as usize].reflector.as_ref().is_some_and(|rf| rf.wants_data(f)) {
            return false;
        }
        let (size, flow, transfer) = (f.size, f.flow, f.transfer);
        if self.is_transfer_queue(flow) && transfer != NONE_U32 && {
            let tr = &self.transfers[transfer];
            tr.delivered + tr.dropped + 1 == tr.frames || self.rdma.is_some()
        } {
            // the frame that completes a transfer closes its queue, which frees the slot for the
            // next transfer: at its own time, not at its sending event's, so that which slot (and
            // ECMP path) a later transfer gets does not depend on how the run is cut into steps;
            // under RDMA loss recovery every frame of a transfer, as any may be answered
            return false;
        }
        // no reflector, or one whose on_data ignores this frame (a no-op left out)
        self.host_deliver_data(h as usize, fr, t, size, flow, transfer, 0, 0, false);
        self.folded_events += 1;
        true
    }

    /// A control frame delivered to `host` takes effect (after the response delay).
    pub(crate) fn host_feedback(&mut self, host: NodeId, frame: FrameId) {
        let h = self.host_of[host.idx()] as usize;
        self.catch_up(h);
        let msg = self.frames.msg(frame);
        self.c.ctrl_delivered += 1;
        if self.queue_stale(msg.flow, msg.gen) {
            // about a transfer's queue that has closed since (its slot perhaps reused)
            self.c.ctrl_stale += 1;
            self.frames.free(frame);
            return;
        }
        self.set_int_current(Some(frame));
        self.rp_call(h, |rp, ctx| rp.on_feedback(ctx, &msg));
        self.set_int_current(None);
        self.frames.free(frame);
    }

    /// The frame whose INT stack the next hooks see (`HostCtx::int`), when INT is on.
    fn set_int_current(&mut self, fr: Option<FrameId>) {
        if let Some(int) = self.int.as_mut() {
            int.current = fr;
        }
    }

    /// A reaction-point timer of `host` fired.
    pub(crate) fn rp_timer(&mut self, host: NodeId, token: u64) {
        let h = self.host_of[host.idx()] as usize;
        self.catch_up(h);
        self.rp_call(h, |rp, ctx| rp.on_timer(ctx, token));
    }

    /// Run a reaction-point hook of host `h` and carry out what it asked for.
    pub(crate) fn rp_call(&mut self, h: usize, f: impl FnOnce(&mut dyn cm::ReactionPoint, &mut HostCtx)) {
        let info_idx = self.hosts[h].info_idx;
        if let Some(rp) = self.hosts[h].rp.as_mut() {
            f(rp.as_mut(), &mut host_ctx!(self, h, info_idx));
            self.apply_host_effects(h, true);
        }
    }

    /// Carry out what a host hook asked for: timers, rate-limiter changes, control frames.
    #[inline]
    fn apply_host_effects(&mut self, h: usize, kick: bool) {
        if self.timers.is_empty() && self.rate_changes.is_empty() && self.limit_changes.is_empty() && self.emits.is_empty() {
            // nothing asked for (always so without a scheme): only the INT frame is forgotten
            return self.set_int_current(None);
        }
        self.apply_host_effects_slow(h, kick)
    }

    /// [`Network::apply_host_effects`] when the hook asked for something. Out of line: inlined
    /// there, it made the test before it a call with a full prologue after every hook, i.e. on
    /// every paced frame (fan-in-100 100 ms, instructions: QCN -1.2 %, BCN and DCQCN -1.7 %, the
    /// others unchanged).
    #[inline(never)]
    pub(super) fn apply_host_effects_slow(&mut self, h: usize, kick: bool) {
        let now = self.now;
        let node = self.hosts[h].node;
        for k in 0..self.timers.len() {
            let (t, token) = self.timers[k];
            self.schedule(t, Event::RpTimer { host: node, token });
        }
        self.timers.clear();
        let mut changed = false;
        // (a local index without a queue: a transfer's queue that has closed; nothing to change)
        for k in 0..self.rate_changes.len() {
            let rc = self.rate_changes[k];
            let fid = self.hosts[h].flows.get(rc.local as usize).copied().unwrap_or(FlowId::NONE);
            if !fid.is_none() {
                self.flows[fid.idx()].set_rate(rc.rate_bps, now);
                changed = true;
            }
        }
        self.rate_changes.clear();
        for k in 0..self.limit_changes.len() {
            let (local, limit) = self.limit_changes[k];
            let fid = self.hosts[h].flows.get(local as usize).copied().unwrap_or(FlowId::NONE);
            if !fid.is_none() {
                self.flows[fid.idx()].send_limit = limit.unwrap_or(u64::MAX);
                changed = true;
            }
        }
        self.limit_changes.clear();
        let had_emits = !self.emits.is_empty();
        for k in 0..self.emits.len() {
            let e = self.emits[k];
            let fr = self.new_control_frame(node, e);
            if e.echo_int {
                if let Some(int) = self.int.as_mut() {
                    int.echo_into(fr);
                }
            }
            self.hosts[h].ctrl_q.push_back(fr);
        }
        self.emits.clear();
        // the echo was the last use of the handled frame's INT: hooks run from here on see none
        self.set_int_current(None);
        if kick && (changed || had_emits) {
            self.host_try_send(h);
        } else if had_emits {
            // called from inside host_try_send: the NIC is busy; make sure it wakes
            let t = self.ports[self.hosts[h].port.idx()].busy_until.max(now);
            self.ensure_host_wake(h, t, false);
        }
    }

    /// A control frame from `src` (a host or a switch), counted as overhead at its origin.
    pub(crate) fn new_control_frame(&mut self, src: NodeId, mut e: Emit) -> FrameId {
        let size = if e.bytes > 0 { e.bytes } else { self.cfg.control_frame_bytes };
        if !e.msg.flow.is_none() {
            e.msg.gen = self.queue_gen(e.msg.flow); // the queue the message is about, now
        }
        // the priority of the flow the message is about (CNP, CNM, BCN...), else 0
        let prio = if e.msg.flow.is_none() { 0 } else { self.flows[e.msg.flow.idx()].prio };
        self.c.ctrl_generated.0 += 1;
        self.c.ctrl_generated.1 += size as u64;
        if let Some(k) = self.c.ctrl_by_kind.get_mut(e.msg.kind as usize) {
            *k += 1;
        }
        if self.now >= self.cfg.warmup_ps {
            self.c.ctrl_bytes_window += size as u64;
        }
        let frame = Frame {
            kind: FrameKind::Control,
            size,
            src,
            dst: e.dst,
            flow: FlowId::NONE,
            transfer: NONE_U32,
            ingress: PortId::NONE,
            born: self.now,
            tag: Tag::default(),
            prio,
            seq: 0,
        };
        self.frames.alloc_control(frame, e.msg)
    }
}

/// The last steps of a lean start ([`Network::host_start_plain`], the paced send) of data frame `fr`
/// (`size` bytes, at `now`) of flow `f` on host port `p`, through the network's fields borrowed
/// apart: the flow's and the network's sent counts, the transmitter busy until the end of its
/// serialisation, its arrival scheduled. Returns that end.
#[inline(always)]
pub(super) fn lone_frame_started(
    f: &mut super::Flow,
    c: &mut super::Counters,
    p: &mut super::Port,
    q: &mut crate::event::EventQueue,
    cfg: &super::NetConfig,
    (now, size, fr): (SimTime, u32, FrameId),
) -> SimTime {
    f.note_sent(now, size);
    c.data_sent.0 += 1;
    c.data_sent.1 += size as u64;
    let t_end = now + p.tx_ps(size as u64 + cfg.wire_overhead_bytes as u64);
    p.busy_until = t_end;
    p.account_busy(now, t_end, cfg.warmup_ps, cfg.duration_ps);
    q.push(t_end + p.prop_ps + p.peer_latency_ps, Event::Arrive { port: p.peer, frame: fr });
    t_end
}

#[cfg(test)]
mod tests {
    use super::RoundRobin;

    #[test]
    fn round_robin_lists_the_set_bits_from_start_then_from_zero() {
        let mut rng = crate::rng::Stream::new(3, 0, 0);
        for n in [1usize, 63, 64, 65, 130, 1023] {
            let mut words: Vec<u64> = (0..n.div_ceil(64)).map(|_| rng.next_u64()).collect();
            if n % 64 != 0 {
                *words.last_mut().unwrap() &= (1u64 << (n % 64)) - 1; // no bit at n or above
            }
            let bit = |i: usize| words[i / 64] >> (i % 64) & 1 == 1;
            for start in [0, n / 3, n / 2, n - 1] {
                let got: Vec<usize> = RoundRobin::new(&words, start).collect();
                let want: Vec<usize> = (start..n).chain(0..start).filter(|&i| bit(i)).collect();
                assert_eq!(got, want, "n {n} start {start}");
            }
        }
    }
}
