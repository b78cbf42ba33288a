//! Ports: one end of a full-duplex link — the transmitter toward the peer and, at switches, the
//! egress FIFO feeding it (the congestion point's queue).
//!
//! A frame is serialised at the line rate and reaches the peer after the propagation delay (plus
//! the peer switch's latency): store and forward. Under an output-generated hotspot the port keeps
//! serialising at line rate but waits until `start + size / service_rate` before the next *data*
//! frame (the receiver drains slowly); MAC-control frames may use the gaps (model reference §1.6, OG-LINK).

use super::{Network, NONE_U32};
use crate::cm::cp_hooks;
use crate::event::Event;
use crate::frame::FrameId;
use crate::ids::{NodeId, PortId};
use crate::net::flowctl::{PfcPort, PortPause};
use crate::time::{tx_time_ps, SimTime, PS_PER_S};
use std::collections::VecDeque;

/// Histogram bucket width of queue occupancy (one 64-byte page).
pub const HIST_BUCKET: u64 = 64;

/// [`Port::hooks`] bits: the optional steps of a switch egress's data path. The low four are its
/// congestion point's frame hooks ([`crate::cm::cp_hooks`]: enqueue, drop, transmit, dequeue).
pub(crate) mod port_hooks {
    use crate::cm::cp_hooks;
    /// 802.3x PAUSE in the network: watermarks after an enqueue or dequeue, a pending PAUSE frame
    /// or a pause received before a start.
    pub const PAUSE: u8 = 16;
    /// PFC: per-priority queues, admission and pause state.
    pub const PFC: u8 = 32;
    /// The switch partitions its output buffer per input (model reference §12 R3).
    pub const CELLS: u8 = 64;
    /// INT, packet captures or link events in the network: a frame's start and end of
    /// transmission have their hooks, a lost frame its INT bytes stripped.
    pub const WIRE: u8 = 128;
    /// What runs after an enqueue.
    pub const AFTER_ENQUEUE: u8 = PFC | cp_hooks::ENQUEUE | PAUSE;
    /// What runs after a dequeue.
    pub const AFTER_DEQUEUE: u8 = PFC | cp_hooks::DEQUEUE | PAUSE | CELLS | WIRE;
    /// What makes a start more than taking the head of the one FIFO at line rate.
    pub const START: u8 = PFC | cp_hooks::TRANSMIT | PAUSE | WIRE;
}

/// One end of a full-duplex link. The input side of the same port is the BUF-IN partition.
///
/// `repr(C)`, in cache lines by use (the ports of a fan-in's hosts are touched in turn, so each
/// extra line read per frame is a cache miss): whether the transmitter may start (busy, paused)
/// and what a frame's start and end read first; then the rest of the PAUSE state; then the rest
/// of what every frame reads or writes; then the switch egress queue and the statistics.
#[repr(C, align(64))]
pub struct Port {
    // transmitter (first line)
    pub busy_until: SimTime,
    pub tx_frame: FrameId,
    pub peer: PortId,
    pub peer_node: NodeId,
    pub node: NodeId,
    /// Picoseconds per byte at `rate_bps` when that is an integer (10 Gb/s: 800), else 0.
    pub ps_per_byte: u64,
    pub data_ready_at: SimTime,
    /// (here, not beside `peer_latency_ps`: the end of a PAUSE frame sent on every port of a
    /// switch at once reads it, and this line only, of each port)
    pub prop_ps: u64,
    pub busy: bool,
    /// True if the far end is a switch (arrivals then include its latency).
    pub peer_is_switch: bool,
    /// What a switch egress runs beyond admission, queueing, start and hand-over ([`port_hooks`]
    /// bits, set at build): one test per optional step on the one data path.
    pub hooks: u8,
    /// The port of a switch with egress buffers and no hook on any port, set at build
    /// ([`Network::port_hand_over`]): a frame is handed to the link when it starts, and its end is
    /// an event only if a frame waits behind it.
    pub lazy_ok: bool,
    /// The frame being sent ends at `busy_until` without an event ([`Network::port_release_lazy`]).
    pub lazy_end: bool,
    /// The frame being sent is a PAUSE frame of a global XOFF/XON handed to the link at its start
    /// (`Network::send_pause_all`): its end at `busy_until` is no event, and the port is free from
    /// then on (`Network::port_handed_free`).
    pub ctrl_handed: bool,
    /// The frame being sent is a PAUSE frame of a global XOFF/XON whose arrival was scheduled at
    /// its start, and whose end is an event (the port has a frame queued, or a pause running):
    /// that end only frees the port.
    pub ctrl_arrival_due: bool,
    /// A host's NIC: every 802.3x pause it receives ends with an XON, or is extended by a refresh,
    /// before it runs out (set at build, `Network::pause_guarded`), so a NIC held by one looks for
    /// work when the XON or the refresh arrives and asks for no wake-up at its end.
    pub pause_guarded: bool,
    /// Link-level flow control state of this port (both directions' roles). Under PFC it only
    /// aggregates "some priority paused" (paused time, pause series). Its `paused_until` ends
    /// the first line.
    pub pause: PortPause,
    /// Data frames marked CE by the switch's ECN threshold at this egress.
    pub ecn_marks: u64,
    // (third line)
    pub last_data_len: u64,
    /// Time the transmitter spent serialising frames (other than PAUSE) inside the statistics
    /// window, ps: each frame counts for the part of its serialisation that falls in the window,
    /// so utilisation = busy / window ≤ 1 by construction.
    pub busy_ps_window: u64,
    pub last_data_start: SimTime,
    pub peer_latency_ps: u64,
    /// Pending PortWake time (dedupe), u64::MAX = none.
    pub wake_at: SimTime,
    /// Current service rate (differs from `rate_bps` under an output-generated hotspot).
    pub service_bps: u64,
    pub rate_bps: u64,
    /// Bytes that arrived on this port (as input) and are still queued at any egress (BUF-IN,
    /// selective PAUSE); not kept at a switch of [`Port::lazy_ok`] ports, where nothing reads it.
    pub part_bytes: u64,
    // switch egress queue
    pub queue: VecDeque<FrameId>,
    pub q_bytes: u64,
    // statistics (the fifth line: what a change of occupancy updates)
    pub q_last_t: SimTime,
    /// Largest occupancy since the start of the run (the queue-series watch, [`crate::probe::QueueWatch`]).
    pub q_max: u64,
    /// Largest occupancy held at some instant of the statistics window `[warm-up, end]` (`queues[].max_bytes`).
    pub q_max_window: u64,
    /// Time at each occupancy, in [`HIST_BUCKET`]-byte buckets (switch egress queues only; grows
    /// with the largest occupancy seen, so every buffer policy gets exact percentiles; the buckets
    /// past it are zeros). A boxed slice, not a vector: two words, so that it shares the line.
    pub q_hist: Box<[u64]>,
    pub q_area: u128,
    /// PFC (802.1Qbb) state: per-priority queues, counters and pause state; None without PFC, and
    /// then `queue` is the one egress FIFO.
    pub pfc: Option<Box<PfcPort>>,
    /// Little's law in sample-path form (debug builds, checked at the end of every run):
    /// Σ size × max(enqueue time, warm-up) and Σ size × max(dequeue time, warm-up), byte·ps.
    #[cfg(debug_assertions)]
    pub little: (u128, u128),
    pub drops: [u64; 7],
    /// Index within its node.
    pub index: u32,
    pub cpid: u32,
}

// an occupancy change (`Port::account_queue`, the enqueue, the dequeue) reads and writes one line
// of statistics
const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(Port, q_bytes) / 64 == offset_of!(Port, q_area) / 64);
    assert!(offset_of!(Port, q_hist) / 64 == offset_of!(Port, q_area) / 64);
    assert!(offset_of!(Port, q_last_t) / 64 == offset_of!(Port, q_area) / 64);
};

impl Port {
    /// Serialisation time of `bytes` at the line rate, ps (exact; a multiply for the usual rates).
    #[inline(always)]
    pub fn tx_ps(&self, bytes: u64) -> u64 {
        if self.ps_per_byte > 0 {
            bytes * self.ps_per_byte
        } else {
            tx_time_ps(bytes, self.rate_bps)
        }
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
            hooks: 0,
            lazy_ok: false,
            lazy_end: false,
            ctrl_handed: false,
            ctrl_arrival_due: false,
            pause_guarded: false,
            peer_latency_ps: 0,
            busy_until: 0,
            busy: false,
            wake_at: u64::MAX,
            tx_frame: FrameId(u32::MAX),
            pause: PortPause::default(),
            pfc: None,
            queue: VecDeque::new(),
            q_bytes: 0,
            part_bytes: 0,
            busy_ps_window: 0,
            drops: [0; 7],
            q_last_t: 0,
            q_area: 0,
            q_max: 0,
            q_max_window: 0,
            q_hist: Box::default(),
            #[cfg(debug_assertions)]
            little: (0, 0),
            cpid: 0,
            ecn_marks: 0,
        }
    }

    /// Time-weighted queue statistics: account the interval since the last change up to `now`
    /// (only the part after the warm-up `w`), and the occupancy held over it toward the window's
    /// largest when the interval reaches into the window (a peak during the warm-up is not one of
    /// the window's; the occupancy at its start is).
    #[inline]
    pub fn account_queue(&mut self, now: SimTime, w: SimTime) {
        if now >= w {
            self.q_max_window = self.q_max_window.max(self.q_bytes);
        }
        let from = self.q_last_t.max(w);
        if now > from {
            let dt = now - from;
            self.q_area += self.q_bytes as u128 * dt as u128;
            if !self.q_hist.is_empty() {
                let b = (self.q_bytes / HIST_BUCKET) as usize;
                if b >= self.q_hist.len() {
                    self.grow_hist(b);
                }
                self.q_hist[b] += dt;
            }
        }
        self.q_last_t = now;
    }

    /// Room in the histogram for bucket `b`: at least twice the buckets (amortised growth).
    #[cold]
    #[inline(never)]
    fn grow_hist(&mut self, b: usize) {
        let mut h = std::mem::take(&mut self.q_hist).into_vec();
        h.resize((b + 1).max(2 * h.len()), 0);
        self.q_hist = h.into_boxed_slice();
    }

    /// Count a transmission occupying the line over `[t0, t1)` toward utilisation (only the part
    /// inside the statistics window `[w, end)`).
    #[inline]
    pub fn account_busy(&mut self, t0: SimTime, t1: SimTime, w: SimTime, end: SimTime) {
        let (a, b) = (t0.max(w), t1.min(end));
        if b > a {
            self.busy_ps_window += b - a;
        }
    }
}

impl Network {
    /// Time-weighted queue statistics before an occupancy change of `port`.
    #[inline(always)]
    pub(crate) fn queue_change(&mut self, port: PortId) {
        let (now, w) = (self.now, self.cfg.warmup_ps);
        self.ports[port.idx()].account_queue(now, w);
    }

    /// A switch port's transmitter looks for work: under PFC its scheduler; else a pending PAUSE
    /// first, then (unless paused, stopped or pacing a hotspot) the head of its egress queue.
    #[inline]
    pub(crate) fn port_try_send(&mut self, pid: PortId) {
        let p = &self.ports[pid.idx()];
        if p.busy && !(p.ctrl_handed && self.port_handed_free(pid)) {
            return;
        }
        let p = &self.ports[pid.idx()];
        if p.hooks & port_hooks::PFC != 0 {
            return self.pfc_try_send(pid);
        }
        if p.hooks & port_hooks::PAUSE != 0 && self.port_pause_holds(pid) {
            return;
        }
        // (a pause that has run out leaves `paused_since` behind: the next PAUSE received starts
        // a new period, and only a paused port's is read)
        let p = &self.ports[pid.idx()];
        if p.service_bps == 0 || p.queue.is_empty() || self.in_pacing_gap(pid) {
            return;
        }
        let head = *self.ports[pid.idx()].queue.front().expect("non-empty");
        self.port_start_data(pid, head);
    }

    /// Port `pid`, sending a PAUSE frame handed to the link at its start ([`Port::ctrl_handed`]):
    /// whether that frame has ended, and the port is free (noted here); if not, a wake-up at its
    /// end, when the port looks for work again (as the frame's end would have).
    #[cold]
    #[inline(never)]
    pub(crate) fn port_handed_free(&mut self, pid: PortId) -> bool {
        let p = &mut self.ports[pid.idx()];
        if p.busy_until <= self.now {
            p.busy = false;
            p.ctrl_handed = false;
            return true;
        }
        #[cfg(test)]
        crate::net::flowctl::pause::tests::LOOKED_EARLY.with(|n| n.set(n.get() + 1));
        if p.wake_at != p.busy_until {
            p.wake_at = p.busy_until;
            let t = p.wake_at;
            self.schedule(t, Event::PortWake { port: pid });
        }
        false
    }

    /// PAUSE at idle port `pid` before a data frame's start: a pending PAUSE frame is sent; a pause
    /// received holds the port (a wake-up at its end, or when the watchdog would trip — it trips
    /// here when due and the port stops honouring PAUSE for the recovery time). Returns whether
    /// the port must not start a data frame now.
    fn port_pause_holds(&mut self, pid: PortId) -> bool {
        let now = self.now;
        let p = &mut self.ports[pid.idx()];
        if let Some(quanta) = p.pause.pending.take() {
            self.port_send_pause_frame(pid, quanta, 0);
            return true;
        }
        if !p.pause.holds(now) {
            return false;
        }
        let mut wake = p.pause.paused_until;
        if let (Some(wd), Some(since)) = (self.watchdog, p.pause.paused_since) {
            if now >= since + wd.timeout_ps {
                p.pause.ignore_until = now + wd.recovery_ps;
                p.pause.watchdog_trips += 1;
                p.pause.paused_since = None;
                self.c.watchdog_trips += 1;
                return self.port_pause_holds(pid);
            }
            wake = wake.min(since + wd.timeout_ps);
        }
        if p.wake_at != wake && !p.queue.is_empty() {
            p.wake_at = wake;
            self.schedule(wake, Event::PortWake { port: pid });
        }
        true
    }

    /// Output-generated hotspot: true while the gap after the port's last data frame runs (a
    /// wake-up at its end is scheduled once).
    pub(crate) fn in_pacing_gap(&mut self, pid: PortId) -> bool {
        let now = self.now;
        let p = &mut self.ports[pid.idx()];
        if p.data_ready_at <= now {
            return false;
        }
        if p.wake_at != p.data_ready_at {
            p.wake_at = p.data_ready_at;
            let t = p.wake_at;
            self.schedule(t, Event::PortWake { port: pid });
        }
        true
    }

    /// Start serialising a MAC-control frame on idle port `pid`: an 802.3x PAUSE (`cev` = 0) or a
    /// PFC frame enabling the classes of `cev`, with pause time `quanta` (0 = XON).
    #[inline(never)]
    pub(crate) fn port_send_pause_frame(&mut self, pid: PortId, quanta: u16, cev: u8) {
        let t_end = self.start_pause_frame(pid, quanta, cev);
        // an XOFF or XON sent on every port of a switch at once: their ends are one batch
        self.q.push_batched(t_end, Event::PortTxDone { port: pid });
    }

    /// [`Network::port_send_pause_frame`] but for the scheduling of the frame's end, which is
    /// returned (inlined in the loop of a global XOFF/XON over a switch's ports, which gathers
    /// the ends in one batch).
    #[inline(always)]
    pub(crate) fn start_pause_frame(&mut self, pid: PortId, quanta: u16, cev: u8) -> SimTime {
        let now = self.now;
        let ctrl = self.cfg.control_frame_bytes;
        let p = &mut self.ports[pid.idx()];
        let t_end = now + p.tx_ps(ctrl as u64 + self.cfg.wire_overhead_bytes as u64);
        p.busy = true;
        p.busy_until = t_end;
        // (no record: the id carries the frame)
        let fr = FrameId::mac_control(quanta, cev);
        p.tx_frame = fr;
        self.c.pause_sent += 1;
        if self.pcap.is_some() {
            self.pcap_capture(pid, fr, ctrl);
        }
        t_end
    }

    /// Start serialising queued data frame `head` on idle port `pid` (congestion-point hook, hotspot
    /// pacing, utilisation).
    #[inline]
    pub(crate) fn port_start_data(&mut self, pid: PortId, head: FrameId) {
        let now = self.now;
        let wire = self.cfg.wire_overhead_bytes as u64;
        let p = &self.ports[pid.idx()];
        let (line, service) = (p.rate_bps, p.service_bps);
        let hooks = p.hooks;
        if hooks & cp_hooks::TRANSMIT != 0 {
            let prio = if hooks & port_hooks::PFC != 0 { self.frames.get(head).prio as usize } else { 0 };
            let (cp, mut ctx, frames) = self.cp_parts(pid, 0, prio).expect("a CP hook bit without a CP");
            cp.on_transmit(&mut ctx, frames.get_mut(head));
            self.cp_emits(pid);
        }
        let size = self.frames.get(head).size as u64;
        if hooks & port_hooks::WIRE != 0 {
            self.port_start_wire(pid, head, size);
        }
        let (w, end) = (self.cfg.warmup_ps, self.cfg.duration_ps);
        let p = &mut self.ports[pid.idx()];
        let t_end = now + p.tx_ps(size + wire);
        p.data_ready_at = if service < line { now + tx_time_ps(size + wire, service) } else { t_end };
        p.last_data_start = now;
        p.last_data_len = size + wire;
        p.busy = true;
        p.busy_until = t_end;
        p.tx_frame = head;
        p.account_busy(now, t_end, w, end);
        if p.lazy_ok {
            return self.port_hand_over(pid, head, t_end);
        }
        self.schedule(t_end, Event::PortTxDone { port: pid });
    }

    /// Data frame `fr` starts now at [`Port::lazy_ok`] port `pid` and ends at `t_end`: it is handed
    /// to the link at once (its arrival scheduled, or delivered, as a host's NIC does), and its end
    /// is an event only if a frame waits behind it. Else the end has no event
    /// ([`Port::lazy_end`]): it is accounted ([`Network::port_release`]) when a frame next comes to
    /// the port after `t_end` or at the end of the run ([`Network::release_all`]; a sample reads the
    /// queue without it, [`Network::queued_now`]), or made an event if
    /// a frame joins the queue before ([`Network::port_end_event`]). htsim's k = 8 fat tree with
    /// DCTCP ends 0.6 M of its 1.5 M switch transmissions so (20 ms): 15 % of its events, 8 % of its
    /// instructions.
    #[inline(always)]
    fn port_hand_over(&mut self, pid: PortId, fr: FrameId, t_end: SimTime) {
        let whole = self.frames.get(fr).transfer == NONE_U32;
        let p = &mut self.ports[pid.idx()];
        let (peer, arrive) = (p.peer, t_end + p.prop_ps + p.peer_latency_ps);
        if p.queue.len() > 1 {
            self.q.push(t_end, Event::PortTxDone { port: pid });
        } else {
            p.lazy_end = true;
            self.lazy_ends[pid.idx() / 64] |= 1 << (pid.idx() % 64);
        }
        // a frame of a transfer arrives by its event: delivered now, a whole transmission ahead of
        // its time, it could settle its transfer before a frame of it dropped in between (or not,
        // as the run is cut into steps)
        if !(whole && self.deliver_direct(peer, fr, arrive)) {
            self.schedule(arrive, Event::Arrive { port: peer, frame: fr });
        }
    }

    /// The frame being sent at [`Port::lazy_ok`] port `pid` ended at `t` (handed to the link at its
    /// start): dequeue it and release its buffer, without reading its record (it may have been
    /// delivered and its slot reused since). Its input's share (`part_bytes`) is not kept at such a
    /// switch: only per-input buffers and selective PAUSE read it.
    #[inline(always)]
    pub(crate) fn port_release(&mut self, pid: PortId, t: SimTime) {
        let Network { ports, switches, switch_of, cfg, .. } = self;
        let p = &mut ports[pid.idx()];
        p.busy = false;
        let (size, node) = (p.last_data_len - cfg.wire_overhead_bytes as u64, p.node);
        p.account_queue(t, cfg.warmup_ps);
        let h = p.queue.pop_front();
        debug_assert_eq!(h, Some(p.tx_frame));
        p.q_bytes -= size;
        #[cfg(debug_assertions)]
        {
            p.little.1 += size as u128 * t.max(cfg.warmup_ps) as u128;
        }
        switches[switch_of[node.idx()] as usize].total_bytes -= size;
    }

    /// The end without an event of port `pid`'s frame is taken care of: its time.
    #[inline(always)]
    fn take_lazy_end(&mut self, pid: PortId) -> SimTime {
        let p = &mut self.ports[pid.idx()];
        p.lazy_end = false;
        self.lazy_ends[pid.idx() / 64] &= !(1 << (pid.idx() % 64));
        p.busy_until
    }

    /// [`Network::port_release`] of the end without an event of port `pid`'s frame, at its time;
    /// it counts as the event it replaces.
    #[cold]
    pub(crate) fn port_release_lazy(&mut self, pid: PortId) {
        let t = self.take_lazy_end(pid);
        self.folded_events += 1;
        self.port_release(pid, t);
    }

    /// A frame joined the queue of port `pid` while its frame being sent ends without an event:
    /// the end becomes one (the next frame starts then).
    #[cold]
    pub(crate) fn port_end_event(&mut self, pid: PortId) {
        let t_end = self.take_lazy_end(pid);
        self.q.push(t_end, Event::PortTxDone { port: pid });
    }

    /// The bytes queued at port `pid` now, as a sample reads them: a frame whose end without an
    /// event has come is gone. The end itself is accounted when a frame next comes to the port or
    /// at the end of the run, as without the sample: accounting it here, at every sample, read
    /// the port's other lines, its switch's and its histogram's where the sample reads one.
    #[inline]
    pub(crate) fn queued_now(&self, pid: PortId) -> u64 {
        let p = &self.ports[pid.idx()];
        if self.lazy_ends[pid.idx() / 64] & (1 << (pid.idx() % 64)) != 0 && p.busy_until <= self.now {
            return p.q_bytes - (p.last_data_len - self.cfg.wire_overhead_bytes as u64);
        }
        p.q_bytes
    }

    /// Account every end without an event before `before`, so that the state may be read (the
    /// end of the run).
    pub(crate) fn release_all(&mut self, before: SimTime) {
        for w in 0..self.lazy_ends.len() {
            let mut bits = self.lazy_ends[w];
            while bits != 0 {
                let pid = PortId((w * 64) as u32 + bits.trailing_zeros());
                bits &= bits - 1;
                if self.ports[pid.idx()].busy_until < before {
                    self.port_release_lazy(pid);
                }
            }
        }
    }

    /// The hooks of data frame `head` (`size` bytes) starting at port `pid` in a network with INT
    /// or captures: HPCC's INT record of the hop as the frame starts leaving (crate::int), the
    /// packet capture.
    #[inline(never)]
    fn port_start_wire(&mut self, pid: PortId, head: FrameId, size: u64) {
        let (now, wire, line) = (self.now, self.cfg.wire_overhead_bytes as u64, self.ports[pid.idx()].rate_bps);
        if let Some(int) = self.int.as_mut() {
            let tx_bytes = int.count_tx(pid, size + wire);
            if self.frames.get(head).is_data() {
                let qlen = self.ports[pid.idx()].q_bytes - size;
                int.push(head, crate::int::IntHop { qlen, tx_bytes, ts: now, rate_bps: line });
            }
        }
        if self.pcap.is_some() {
            self.pcap_capture(pid, head, size as u32);
        }
    }

    /// The last bit of the port's current frame left: dequeue, release buffer, hand the frame to
    /// the link, look for the next one. One path for every switch port: each record looked up once
    /// (the network's fields borrowed apart), the optional steps where the port's
    /// [`Port::hooks`] bits ask for them ([`Network::port_dequeued_hooks`]).
    #[inline(always)]
    pub(crate) fn port_tx_done(&mut self, pid: PortId) {
        let now = self.now;
        if self.ports[pid.idx()].lazy_ok {
            // handed to the link at its start (Network::port_hand_over)
            self.port_release(pid, now);
            return self.port_start_next(pid);
        }
        let Network { ports, frames, switches, switch_of, cfg, .. } = self;
        let p = &mut ports[pid.idx()];
        p.busy = false;
        let (fr, hooks) = (p.tx_frame, p.hooks);
        if fr.is_mac_control() {
            debug_assert!(hooks & (port_hooks::PAUSE | port_hooks::PFC) != 0, "no MAC-control frame without PAUSE or PFC");
            return self.control_frame_sent(pid, fr);
        }
        let f = frames.get(fr);
        let (size, ingress, prio) = (f.size as u64, f.ingress, f.prio as usize);
        let (peer, prop, arrive, node) = (p.peer, p.prop_ps, now + p.prop_ps + p.peer_latency_ps, p.node);
        p.account_queue(now, cfg.warmup_ps);
        let h = if hooks & port_hooks::PFC != 0 { p.pfc.as_mut().expect("PFC port").pop(prio, size) } else { p.queue.pop_front() };
        debug_assert_eq!(h, Some(fr));
        p.q_bytes -= size;
        #[cfg(debug_assertions)]
        {
            p.little.1 += size as u128 * now.max(cfg.warmup_ps) as u128;
        }
        if !ingress.is_none() {
            ports[ingress.idx()].part_bytes -= size;
        }
        let s = switch_of[node.idx()] as usize;
        switches[s].total_bytes -= size;
        if hooks & port_hooks::AFTER_DEQUEUE != 0 && self.port_dequeued_hooks(pid, fr, s, (ingress, prio, size, now + prop)) {
            return self.port_try_send(pid);
        }
        if !self.deliver_direct(peer, fr, arrive) {
            self.schedule(arrive, Event::Arrive { port: peer, frame: fr });
        }
        self.port_start_next(pid);
    }

    /// What follows the dequeue of frame `fr` (ingress port, priority, bytes, time its last bit
    /// reaches the link's far end) at port `pid` of switch `s` when the port has such hooks: its
    /// partition's release, the CP's dequeue hook, PFC's accounting or the PAUSE watermarks, and
    /// the egress hooks — the last switch strips the INT bytes (crate::int), a failing link loses
    /// the frame (crate::net::dynamics). Returns true when the frame was lost on the link.
    fn port_dequeued_hooks(&mut self, pid: PortId, fr: FrameId, s: usize, (ingress, prio, size, at): (PortId, usize, u64, SimTime)) -> bool {
        let hooks = self.ports[pid.idx()].hooks;
        if hooks & port_hooks::CELLS != 0 {
            if let Some(c) = self.cell(s, ingress, pid) {
                self.switches[s].cells[c] -= size;
            }
        }
        if hooks & cp_hooks::DEQUEUE != 0 {
            let (cp, mut ctx, frames) = self.cp_parts(pid, 0, prio).expect("a CP hook bit without a CP");
            cp.on_dequeue(&mut ctx, frames.get(fr));
            self.cp_emits(pid);
        }
        if hooks & port_hooks::PFC != 0 {
            self.pfc_dequeued(s, ingress, prio, size);
        } else if hooks & port_hooks::PAUSE != 0 {
            self.pause_check(s, pid, ingress);
        }
        hooks & port_hooks::WIRE != 0 && self.egress_hook && self.egress_hooked(pid, fr, at)
    }

    /// The next frame of port `pid` after [`Network::port_tx_done`] or an enqueue (a busy port: nothing
    /// to do): started here when one waits, the port is idle and serialises at its line rate with no pacing gap running, no PAUSE frame
    /// pending or pause holding, and no start hook ([`port_hooks::START`]) — [`Network::port_start_data`]'s
    /// steps without its tests; else [`Network::port_try_send`] (with nothing queued, nothing to do).
    #[inline(always)]
    pub(crate) fn port_start_next(&mut self, pid: PortId) {
        let now = self.now;
        let Network { ports, frames, cfg, q, .. } = self;
        let p = &mut ports[pid.idx()];
        let hooked = p.hooks & port_hooks::START;
        // (a hook may have started a frame here: a CP's control frame, a PAUSE)
        let lean = !p.busy && (hooked == 0 || (hooked == port_hooks::PAUSE && p.pause.pending.is_none() && !p.pause.holds(now)));
        match p.queue.front() {
            Some(&head) if lean && p.service_bps == p.rate_bps && p.data_ready_at <= now => {
                let bytes = frames.get(head).size as u64 + cfg.wire_overhead_bytes as u64;
                let t_end = now + p.tx_ps(bytes);
                p.data_ready_at = t_end;
                p.last_data_start = now;
                p.last_data_len = bytes;
                p.busy = true;
                p.busy_until = t_end;
                p.tx_frame = head;
                p.account_busy(now, t_end, cfg.warmup_ps, cfg.duration_ps);
                if p.lazy_ok {
                    return self.port_hand_over(pid, head, t_end);
                }
                q.push(t_end, Event::PortTxDone { port: pid });
            }
            None if hooked == 0 && !p.busy => {}
            _ => self.port_try_send(pid),
        }
    }

    /// The last bit of MAC-control frame `fr` (a PAUSE, or a PFC frame) left port `pid`, whose
    /// transmitter is free: the frame goes to the peer (a PFC frame takes effect after the peer's
    /// response time), the port looks for work. (The ends of a batch: [`Network::run_batch`],
    /// their arrivals a batch.)
    #[inline]
    pub(crate) fn control_frame_sent(&mut self, pid: PortId, fr: FrameId) {
        let cev = fr.cev();
        let now = self.now;
        let (peer, prop, due) = {
            let p = &mut self.ports[pid.idx()];
            (p.peer, p.prop_ps, std::mem::take(&mut p.ctrl_arrival_due))
        };
        if due {
            // handed to the link at its start ([`Network::send_pause_all`]): its arrival is
            // scheduled
            return self.port_try_send(pid);
        }
        let response = if cev != 0 { self.pfc_response_ps(pid) } else { 0 };
        if self.dynamics.is_some() && self.lost_on_link(pid, fr, now + prop) {
            return self.port_try_send(pid); // the link failed (crate::net::dynamics)
        }
        self.q.push_batched(now + prop + response, Event::Arrive { port: peer, frame: fr });
        self.port_try_send(pid);
    }

    /// A scheduled wake-up of a port (pause expired or hotspot pacing gap over).
    pub(crate) fn port_wake(&mut self, pid: PortId) {
        if self.ports[pid.idx()].wake_at == self.now {
            self.ports[pid.idx()].wake_at = u64::MAX;
        }
        self.port_try_send(pid);
    }

    /// Step `step` of hotspot `hotspot`'s service-rate schedule.
    pub(crate) fn service_rate_step(&mut self, hotspot: u32, step: u32) {
        let (port, ref sched) = self.hotspots[hotspot as usize];
        let (_, rate) = sched[step as usize];
        if let Some(&(t, _)) = sched.get(step as usize + 1) {
            self.schedule(t, Event::ServiceRate { hotspot, step: step + 1 });
        }
        let now = self.now;
        let p = &mut self.ports[port.idx()];
        p.service_bps = rate;
        // re-pace the gap after the last data frame at the new rate
        if p.data_ready_at > now && rate > 0 {
            let gap = tx_time_ps(p.last_data_len, rate.min(p.rate_bps));
            p.data_ready_at = (p.last_data_start + gap).max(now);
        }
        self.port_try_send(port);
    }
}
