//! Switches: output-queued, shared memory, one traffic class (model reference §1.3) — or 8 under PFC. An
//! arriving frame is looked up, admitted or dropped by the buffer policy ([`super::buffer`], or PFC's
//! per-(input, priority) accounting, [`crate::net::flowctl::pfc`]), enqueued FIFO at its egress port (the
//! queue of its priority under PFC) — the congestion point, whose hooks run here — and the port is
//! kicked.

use super::buffer::{admit, DropReason};
use super::port::port_hooks;
use super::{Network, NONE_U32};
use crate::cm::{self, cp_hooks, CpCtx};
use crate::frame::FramePool;
use crate::frame::{tag, FrameId, FrameKind};
use crate::ids::{NodeId, PortId};
use crate::ir::BufferIr;
use crate::net::flowctl::SwitchPause;
use crate::net::routing::NextHops;

/// [`Network::cp_parts`]'s `prio` for a hook that is about the port, not one frame (the tick).
pub(crate) const PORT_QUEUE: usize = usize::MAX;

/// Bytes in the egress queue of priority `prio` of PFC port `p`.
#[inline(never)] // off the one-FIFO hot paths that call it behind `pfc_enabled`
fn queue_of(p: &super::Port, prio: usize) -> u64 {
    p.pfc.as_ref().expect("PFC port").q_bytes[prio]
}

/// A switch: ports, buffer policy, PAUSE generator state, routes.
///
/// `repr(C)`, what an arrival reads first (its routes, the buffer's admission, ECN marking) in the
/// first two cache lines: the fields in Rust's order put them on three or four (the k = 8 fat tree's
/// 80 switches take turns, so each is a cache miss).
#[repr(C, align(64))]
pub struct Switch {
    /// The next hops toward each node (index = node id): its egress port, or with ECMP its
    /// equal-cost choices, in [`Switch::hops`] ([`NextHops`]). One entry, so a frame's arrival
    /// reads one cache line of the table, not an ECMP offset's and a route's.
    pub next_hops: Vec<NextHops>,
    /// The distinct lists of equal-cost next hops of [`Switch::next_hops`], one after another: a
    /// few per switch (a fat tree's edge switch: its uplinks), so they stay cached.
    pub hops: Vec<PortId>,
    pub buffer: BufferIr,
    /// Total queued bytes (shared pool).
    pub total_bytes: u64,
    /// ECN step-marking threshold of every egress queue, bytes (None = no marking).
    pub ecn_threshold: Option<u64>,
    pub node: NodeId,
    pub ports: Vec<PortId>,
    pub latency_ps: u64,
    /// Partitioned output buffer: bytes queued per (input index, output index), ports × ports
    /// (empty for the other policies).
    pub cells: Vec<u64>,
    pub drops: u64,
    /// PAUSE generation (configuration and watermark state).
    pub pause: SwitchPause,
}

impl Network {
    /// Index into `Switch::cells` of the (input, output) partition, if the switch partitions its
    /// output buffers per input and the frame came in on a port.
    #[inline]
    pub(crate) fn cell(&self, s: usize, in_port: PortId, out: PortId) -> Option<usize> {
        let sw = &self.switches[s];
        if sw.cells.is_empty() || in_port.is_none() || out.is_none() {
            return None;
        }
        let n = sw.ports.len();
        Some(self.ports[in_port.idx()].index as usize * n + self.ports[out.idx()].index as usize)
    }

    /// A frame is available at switch `s` on input `in_port` (last bit + switch latency).
    pub(crate) fn switch_arrive(&mut self, s: usize, in_port: PortId, fr: FrameId) {
        if fr.is_mac_control() {
            self.mac_control_receive(in_port, fr);
            return self.port_try_send(in_port);
        }
        let frame = self.frames.get(fr);
        if frame.dst.is_none() {
            return self.flood(s, fr, in_port);
        }
        if self.arrive_hook {
            // INT bytes (crate::int); frames lost on the link, pinned paths (crate::net::dynamics)
            return self.switch_arrive_hooked(s, in_port, fr);
        }
        let key = if frame.flow.is_none() { ((frame.src.0 as u64) << 32) | frame.dst.0 as u64 | 1 << 63 } else { frame.flow.0 as u64 };
        let out = self.out_port(s, frame.dst, key);
        self.switch_enqueue(s, out, fr, in_port);
    }

    /// The egress port of switch `s` toward `dst` for a frame of flow key `key` (ECMP: a hash of
    /// the key among the equal-cost next hops; else the single route).
    #[inline(always)]
    pub(crate) fn out_port(&self, s: usize, dst: NodeId, key: u64) -> PortId {
        let sw = &self.switches[s];
        let NextHops { at, n } = sw.next_hops[dst.idx()];
        if n <= 1 {
            return PortId(at);
        }
        sw.hops[(at + crate::net::ecmp_index(self.ecmp_salt, sw.node.0, key, n)) as usize]
    }

    /// Flood broadcast frame `fr` from switch `s` to every port but `in_port` (the one it came in
    /// on; NONE when the switch originates it): copies for all ports but one, each admitted and
    /// queued like any frame.
    fn flood(&mut self, s: usize, fr: FrameId, in_port: PortId) {
        let n = self.switches[s].ports.len();
        let targets = self.switches[s].ports.iter().filter(|&&p| p != in_port).count();
        if targets == 0 {
            self.frames.free(fr);
            self.c.ctrl_absorbed += 1;
            return;
        }
        self.c.ctrl_replicated += targets as u64 - 1;
        let mut first = true;
        for k in 0..n {
            let out = self.switches[s].ports[k];
            if out == in_port {
                continue;
            }
            let copy = if first { fr } else { self.frames.alloc_copy(fr) };
            first = false;
            self.switch_enqueue(s, out, copy, in_port);
        }
    }

    #[inline]
    pub(crate) fn drop_frame(&mut self, s: usize, port: PortId, fr: FrameId, reason: DropReason) {
        self.switches[s].drops += 1;
        if !port.is_none() {
            self.ports[port.idx()].drops[reason as usize] += 1;
        }
        self.frame_lost(fr);
    }

    /// Count and free frame `fr`, lost in the network (dropped by a switch or on a dead link): its
    /// flow's, transfer's and send queue's counters.
    pub(crate) fn frame_lost(&mut self, fr: FrameId) {
        if fr.is_mac_control() {
            // (no record, no counter of its own: the link's drop counts it)
            return;
        }
        let (kind, size, flow, transfer) = {
            let f = self.frames.get(fr);
            (f.kind, f.size as u64, f.flow, f.transfer)
        };
        // a data frame's bytes without its INT header
        let size = if self.int.is_some() && kind == FrameKind::Data { self.int_strip(fr) as u64 } else { size };
        self.frames.free(fr);
        match kind {
            FrameKind::Data => {
                self.c.data_dropped.0 += 1;
                self.c.data_dropped.1 += size;
                let fl = &mut self.flows[flow.idx()];
                fl.dropped_frames += 1;
                fl.dropped_bytes += size;
                let mut settled = false;
                // a frame under RDMA loss recovery is sent again: its transfer is not bad (crate::net::rdma)
                if transfer != NONE_U32 && !(self.rdma.is_some() && self.rdma_on(flow)) {
                    self.transfers[transfer].dropped += 1;
                    settled = self.transfers.settle(transfer, self.now);
                }
                if self.is_transfer_queue(flow) {
                    if settled {
                        self.queue_settling(flow);
                    }
                    self.queue_frame_gone(flow);
                }
            }
            FrameKind::Control => self.c.ctrl_dropped += 1,
            FrameKind::Ack => {
                self.c.ack_dropped += 1;
                if self.is_transfer_queue(flow) {
                    self.queue_frame_gone(flow);
                }
            }
        }
    }

    /// Buffer admission, enqueue, kick the transmitter. One path for every egress: the optional
    /// steps (the egress's CP hooks, PAUSE watermarks, PFC's per-priority queues and accounting,
    /// per-input partitions) run where its [`Port::hooks`](super::Port::hooks) bits ask for them,
    /// so an egress with none of them pays one test per step and no copy of the path can drift.
    #[inline(always)]
    pub(crate) fn switch_enqueue(&mut self, s: usize, out: PortId, fr: FrameId, in_port: PortId) {
        if out.is_none() {
            return self.drop_frame(s, out, fr, DropReason::NoRoute);
        }
        self.switch_enqueue_at(s, out, fr, in_port)
    }

    /// [`Network::switch_enqueue`] into egress `out`: admission, ECN step marking, queue statistics
    /// and enqueue, each record looked up once (the network's fields borrowed apart), then the
    /// hooks `out` has ([`Network::switch_enqueued_hooks`]). PFC's and partitions' admission is
    /// [`Network::switch_enqueue_shared`]'s; both go on in [`Network::switch_enqueue_admitted`], the
    /// one source of the enqueue (inlined in both, so here its PFC and partition steps fold away).
    #[inline(never)]
    fn switch_enqueue_at(&mut self, s: usize, out: PortId, fr: FrameId, in_port: PortId) {
        let hooks = self.ports[out.idx()].hooks;
        if hooks & (port_hooks::PFC | port_hooks::CELLS) != 0 {
            return self.switch_enqueue_shared(s, out, fr, in_port, hooks);
        }
        let p = &self.ports[out.idx()];
        if p.lazy_end && p.busy_until < self.now {
            // the end of its frame, before this arrival (of its instant: after it)
            self.port_release_lazy(out);
        }
        let sw = &self.switches[s];
        let size = self.frames.get(fr).size as u64;
        if let Some(reason) = admit(&sw.buffer, &self.ports, sw.total_bytes, in_port, out, size, 0) {
            if hooks & cp_hooks::DROP != 0 {
                self.switch_refuse_hooks(out, fr, in_port, (reason, 0, hooks));
            }
            return self.switch_drop(s, out, fr, reason, hooks);
        }
        // (the bits known clear here, cleared for the compiler too: their steps fold away)
        self.switch_enqueue_admitted(s, out, fr, in_port, (0, None, false, hooks & !(port_hooks::PFC | port_hooks::CELLS)))
    }

    /// [`Network::switch_enqueue_at`] into an egress of a switch with PFC (per (input, priority)
    /// accounting) or partitioned output buffers.
    #[inline(never)]
    fn switch_enqueue_shared(&mut self, s: usize, out: PortId, fr: FrameId, in_port: PortId, hooks: u8) {
        let (verdict, prio, cell, head) = self.switch_admit_shared(s, out, fr, in_port);
        if let Some(reason) = verdict {
            self.switch_refuse_hooks(out, fr, in_port, (reason, prio, hooks));
            return self.switch_drop(s, out, fr, reason, hooks);
        }
        self.switch_enqueue_admitted(s, out, fr, in_port, (prio, cell, head, hooks))
    }

    /// Frame `fr`, admitted into egress `out` (its priority, partition, whether it took PFC
    /// headroom; `out`'s hook bits): ECN step marking, enqueue, queue statistics, hooks, the
    /// transmitter kicked.
    #[inline(always)]
    fn switch_enqueue_admitted(
        &mut self,
        s: usize,
        out: PortId,
        fr: FrameId,
        in_port: PortId,
        (prio, cell, head, hooks): (usize, Option<usize>, bool, u8),
    ) {
        let Network { frames, ports, switches, q_watch, cfg, now, .. } = self;
        let sw = &mut switches[s];
        let f = frames.get_mut(fr);
        let size = f.size as u64;
        f.ingress = in_port;
        if let Some(k) = sw.ecn_threshold {
            // DCTCP step marking on the queue the frame finds on arrival (RFC 8257 §3.1), under PFC
            // the queue of its priority
            let found = if hooks & port_hooks::PFC != 0 { queue_of(&ports[out.idx()], prio) } else { ports[out.idx()].q_bytes };
            if found > k && f.tag.flags & tag::ECT != 0 && f.tag.flags & tag::CE == 0 {
                f.tag.flags |= tag::CE;
                ports[out.idx()].ecn_marks += 1;
            }
        }
        sw.total_bytes += size;
        if let Some(c) = cell {
            sw.cells[c] += size;
        }
        let p = &mut ports[out.idx()];
        p.account_queue(*now, cfg.warmup_ps);
        if hooks & port_hooks::PFC != 0 {
            let pf = p.pfc.as_mut().expect("PFC port");
            pf.queues[prio].push_back(fr);
            pf.q_bytes[prio] += size;
        } else {
            p.queue.push_back(fr);
        }
        p.q_bytes += size;
        #[cfg(debug_assertions)]
        {
            p.little.0 += size as u128 * (*now).max(cfg.warmup_ps) as u128;
        }
        if p.q_bytes > p.q_max {
            q_watch.on_max(out, p.q_max, p.q_bytes);
            p.q_max = p.q_bytes;
        }
        // (no step of a switch with ends without events reads it: egress buffers, no hooks)
        if !in_port.is_none() && !p.lazy_ok {
            ports[in_port.idx()].part_bytes += size;
        }
        if hooks & port_hooks::AFTER_ENQUEUE != 0 {
            self.switch_enqueued_hooks(s, out, fr, in_port, (prio, size, head, hooks));
        }
        if self.ports[out.idx()].lazy_end {
            return self.port_end_event(out);
        }
        // an idle port starts the frame at once unless a hook, a pause or a pacing gap stands in
        // the way (Network::port_try_send's steps without its tests)
        self.port_start_next(out);
    }

    /// Admission of frame `fr` into egress `out` of switch `s` under PFC (per (input, priority)
    /// accounting) or partitioned output buffers: (refusal, the frame's priority (0 without PFC),
    /// its partition, whether it took PFC headroom).
    #[inline(never)]
    fn switch_admit_shared(&self, s: usize, out: PortId, fr: FrameId, in_port: PortId) -> (Option<DropReason>, usize, Option<usize>, bool) {
        let size = self.frames.get(fr).size as u64;
        let cell = self.cell(s, in_port, out);
        if self.pfc_enabled {
            let prio = self.frames.get(fr).prio as usize;
            return match self.pfc_admit(s, in_port, prio, size) {
                Ok(head) => (None, prio, cell, head),
                Err(reason) => (Some(reason), prio, cell, false),
            };
        }
        let occupied = cell.map_or(0, |c| self.switches[s].cells[c]);
        (admit(&self.switches[s].buffer, &self.ports, self.switches[s].total_bytes, in_port, out, size, occupied), 0, cell, false)
    }

    /// What follows the enqueue of frame `fr` (priority, bytes, PFC headroom taken, `out`'s hook
    /// bits) at egress `out` when `out` has hooks: PFC's accounting, the CP's enqueue hook, the
    /// PAUSE watermarks.
    #[inline(never)]
    fn switch_enqueued_hooks(&mut self, s: usize, out: PortId, fr: FrameId, in_port: PortId, (prio, size, head, hooks): (usize, u64, bool, u8)) {
        if hooks & port_hooks::PFC != 0 {
            self.pfc_enqueued(s, in_port, out, prio, size, head);
        }
        if hooks & cp_hooks::ENQUEUE != 0 {
            let (cp, mut ctx, frames) = self.cp_parts(out, 0, prio).expect("a CP hook bit without a CP");
            cp.on_enqueue(&mut ctx, frames.get_mut(fr));
            self.cp_emits(out);
        }
        if hooks & port_hooks::PAUSE != 0 {
            self.pause_check(s, out, in_port);
        }
    }

    /// Frame `fr` refused at egress `out` (`reason`; the frame's priority; `out`'s hook bits), when
    /// `out` has PFC or a CP drop hook: PFC's headroom count, the CP's drop hook.
    #[inline(never)]
    fn switch_refuse_hooks(&mut self, out: PortId, fr: FrameId, in_port: PortId, (reason, prio, hooks): (DropReason, usize, u8)) {
        if hooks & port_hooks::PFC != 0 && reason == DropReason::HeadroomFull {
            self.pfc_headroom_drop(in_port, prio);
        }
        if hooks & cp_hooks::DROP != 0 {
            let (cp, mut ctx, frames) = self.cp_parts(out, 0, prio).expect("a CP hook bit without a CP");
            cp.on_drop(&mut ctx, frames.get(fr));
            self.cp_emits(out);
        }
    }

    /// Frame `fr` refused at egress `out` of switch `s` (`reason`): the drop counts and the
    /// frame's loss — a lone data frame of a declared flow without INT (no [`port_hooks::WIRE`]
    /// in `hooks`) has its counters updated in place ([`Network::frame_lost`]'s other cases need
    /// a transfer, a transfer queue or INT).
    #[inline(always)]
    fn switch_drop(&mut self, s: usize, out: PortId, fr: FrameId, reason: DropReason, hooks: u8) {
        let Network { frames, ports, switches, flows, c, .. } = self;
        switches[s].drops += 1;
        ports[out.idx()].drops[reason as usize] += 1;
        let f = frames.get(fr);
        let (kind, flow, transfer, size) = (f.kind, f.flow, f.transfer, f.size as u64);
        if kind == FrameKind::Data && transfer == NONE_U32 && flow.idx() < self.n_flows && hooks & port_hooks::WIRE == 0 {
            frames.free(fr);
            c.data_dropped.0 += 1;
            c.data_dropped.1 += size;
            let fl = &mut flows[flow.idx()];
            fl.dropped_frames += 1;
            fl.dropped_bytes += size;
            return;
        }
        self.frame_lost(fr)
    }

    /// What a hook of `port`'s congestion point needs, borrowed apart: the CP, its context and the
    /// frame pool (the frame handled is passed in place, not copied in and out). `None` when the
    /// port has no CP or, for a frame hook (`hook`, a [`cp_hooks`] bit; 0 = not a frame hook, e.g.
    /// the periodic tick), its CP does not implement it: the call is skipped. `prio`: the priority
    /// of the frame handled — under PFC the hook sees the queue of that priority (ECN marking and
    /// the congestion point per (port, queue), as the HPCC authors' reference switch marks), else
    /// the port's one FIFO; [`PORT_QUEUE`] for the port's whole queue.
    #[inline(always)]
    pub(crate) fn cp_parts(&mut self, port: PortId, hook: u8, prio: usize) -> Option<(&mut dyn cm::CongestionPoint, CpCtx<'_>, &mut FramePool)> {
        let cp = self.cps[port.idx()].as_mut()?;
        if hook != 0 && cp.hooks() & hook == 0 {
            return None;
        }
        let p = &self.ports[port.idx()];
        let queue_bytes = if self.pfc_enabled && prio != PORT_QUEUE { queue_of(p, prio) } else { p.q_bytes };
        let ctx = CpCtx {
            now: self.now,
            queue_bytes,
            service_rate_bps: p.service_bps,
            rng: &mut self.cp_rngs[port.idx()],
            out: &mut self.emits,
            hosts: &self.host_nodes,
            sources: &self.source_nodes,
        };
        Some((cp.as_mut(), ctx, &mut self.frames))
    }

    /// Run a hook of `port`'s congestion point that is not a frame hook (the periodic tick: called
    /// whatever [`cm::CongestionPoint::hooks`] says), then send the control frames it asked for.
    pub(crate) fn cp_call(&mut self, port: PortId, f: impl FnOnce(&mut dyn cm::CongestionPoint, &mut CpCtx)) {
        if let Some((cp, mut ctx, _)) = self.cp_parts(port, 0, PORT_QUEUE) {
            f(cp, &mut ctx);
            self.cp_emits(port);
        }
    }

    /// Send the control frames a hook of `port`'s CP asked for (they are routed, admitted and
    /// queued like any frame the switch originates).
    #[inline(always)]
    pub(crate) fn cp_emits(&mut self, port: PortId) {
        if !self.emits.is_empty() {
            self.cp_emits_slow(port)
        }
    }

    fn cp_emits_slow(&mut self, port: PortId) {
        let node = self.ports[port.idx()].node;
        let s = self.switch_of[node.idx()] as usize;
        let emits = std::mem::take(&mut self.emits);
        for e in &emits {
            let fr = self.new_control_frame(node, *e);
            if e.dst.is_none() {
                self.flood(s, fr, PortId::NONE);
            } else {
                let key = ((node.0 as u64) << 32) | e.dst.0 as u64 | 1 << 63;
                let out = self.out_port(s, e.dst, key);
                self.switch_enqueue(s, out, fr, PortId::NONE);
            }
        }
        self.emits = emits;
        self.emits.clear();
    }
}

impl Network {
    /// A congestion point's periodic tick; re-armed while the CP asks for one.
    pub(crate) fn cp_tick(&mut self, port: PortId) {
        self.cp_call(port, |cp, ctx| cp.on_tick(ctx));
        if let Some(p) = self.cps[port.idx()].as_ref().and_then(|c| c.tick_period_ps()) {
            let t = self.now + p.max(1);
            self.schedule(t, crate::event::Event::CpTick { port });
        }
    }
}
