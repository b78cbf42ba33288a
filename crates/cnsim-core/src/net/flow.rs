//! Flows and the traffic that feeds them.
//!
//! A flow is a (source host, destination host) channel with its own FIFO at the source and its
//! own rate limiter (model reference §1.2, §12 G4). Sources ([`crate::traffic`]) do not materialise frames:
//! they add frame counts to a flow's FIFO (grouped in chunks per transfer), and the host NIC
//! creates a frame record only when it starts transmitting. A saturated source marks its flows as
//! always backlogged while it is active. A transfer is one closed-loop ON period's data (the FCT
//! unit of CN-SIM).

use super::tcp::TcpFlow;
use super::{rate_gap_ps, Network, NONE_U32};
use crate::event::Event;
use crate::ids::{FlowId, NodeId};
use crate::time::SimTime;
use crate::traffic::{flow_bytes, pareto_frames, sized_frames, Action};
use std::collections::VecDeque;

/// A pending chunk of frames of a flow's FIFO belonging to one transfer (u32::MAX = none).
#[derive(Debug, Clone, Copy)]
pub struct Chunk {
    pub transfer: u32,
    pub frames: u64,
    /// Bytes of each of its frames, or 0: the flow's `frame_bytes` (a size drawn per frame from a
    /// distribution is at most 9 216 B, spec MAX_FRAME; the record stays 16 bytes).
    pub size: u16,
    /// No frame of it has been taken yet (its transfer's first transmission is still to come).
    pub fresh: bool,
}

/// A (source, destination) flow: FIFO at the source host, rate limiter, statistics.
///
/// `repr(C)`, in cache lines by use: what the NIC reads to decide whether a frame may start, then
/// what a source or a transmission updates, then the FIFO of transfers and the receiver's counts.
#[repr(C, align(64))]
pub struct Flow {
    /// Rate limiter (bit/s); None = unregulated.
    pub rl_rate: Option<f64>,
    pub next_allowed: SimTime,
    /// Window: data may start only while `sent_bytes < send_limit` (u64::MAX = no window).
    pub send_limit: u64,
    pub sent_bytes: u64,
    /// Frames waiting: those of `fifo`'s chunks plus `lone_tail`.
    pub backlog: u64,
    /// Frames of no transfer (CBR, Poisson) added after the last chunk of `fifo`, counted here
    /// rather than in a chunk at its back: a source adding frames to a flow that waits, and the
    /// NIC taking them, touch only the flow's record (the FIFO's buffer is one cache miss more).
    pub lone_tail: u64,
    /// Number of saturated sources currently active on this flow (> 0 ⇒ always a frame ready).
    pub sat: u32,
    pub frame_bytes: u32,
    // (second line)
    pub generated_frames: u64,
    pub sent_frames: u64,
    pub last_start: SimTime,
    /// TCP connection (None = UDP, open loop).
    pub tcp: Option<Box<TcpFlow>>,
    /// Index in the source host's flow list.
    pub local: u32,
    pub last_len: u32,
    pub src: NodeId,
    pub dst: NodeId,
    /// TCP: the sender may send a segment now (window, data, pending retransmission).
    pub tcp_ready: bool,
    /// 802.1p priority of its frames (0–7; PFC pauses per priority).
    pub prio: u8,
    /// The rate limiter's gap after a frame of `last_len` bytes at its current rate
    /// (`rate_gap_ps`), or 0 (none known, or 2^32 ps or more): a paced flow sends frames of one
    /// size at a rate that changes now and then, and a division on every paced frame, on the
    /// path to its next wake-up, was ≈ 1/3 of the time of QCN's sends (fan-in-100).
    gap_ps: u32,
    pub delivered_frames: u64,
    // (third line)
    pub fifo: VecDeque<Chunk>,
    pub delivered_bytes: u64,
    pub delivered_bytes_window: u64,
    pub dropped_frames: u64,
    pub dropped_bytes: u64,
}

impl Flow {
    /// Bytes of the frames waiting in its FIFO: lone frames and chunks of the flow's size, chunks of
    /// a drawn size, and a transfer's short last frame (a chunk of a transfer always holds its last).
    pub fn queued_bytes(&self, transfers: &super::transfers::Transfers) -> u64 {
        let chunks: u64 = self.fifo.iter().map(|c| self.frames_bytes(c.frames, c.size as u32, c.transfer, transfers)).sum();
        chunks + self.lone_tail * self.frame_bytes as u64
    }

    /// Bytes of `frames` frames of `size` each (0: the flow's `frame_bytes`) of `transfer` (or none),
    /// whose last frame may be short (`last_frame = "partial"`): one rule for the generated and the
    /// queued bytes.
    #[inline]
    pub fn frames_bytes(&self, frames: u64, size: u32, transfer: u32, transfers: &super::transfers::Transfers) -> u64 {
        let full = frames * self.size_or_own(size) as u64;
        full - if transfer == NONE_U32 { 0 } else { transfers[transfer].short_by(self.frame_bytes) }
    }

    /// A frame's bytes: `size`, or the flow's `frame_bytes` when 0.
    #[inline(always)]
    pub fn size_or_own(&self, size: u32) -> u32 {
        if size == 0 {
            self.frame_bytes
        } else {
            size
        }
    }

    pub fn new(src: NodeId, dst: NodeId, frame_bytes: u32, local: u32) -> Self {
        Flow {
            src,
            dst,
            frame_bytes,
            local,
            prio: 0,
            sat: 0,
            fifo: VecDeque::new(),
            lone_tail: 0,
            backlog: 0,
            rl_rate: None,
            next_allowed: 0,
            send_limit: u64::MAX,
            last_start: 0,
            last_len: 0,
            generated_frames: 0,
            sent_frames: 0,
            sent_bytes: 0,
            delivered_frames: 0,
            delivered_bytes: 0,
            delivered_bytes_window: 0,
            dropped_frames: 0,
            dropped_bytes: 0,
            tcp: None,
            tcp_ready: false,
            gap_ps: 0,
        }
    }

    /// Add `frames` frames (of `transfer`, or none) of `size` bytes each (0: `frame_bytes`) to
    /// its FIFO; returns their bytes.
    #[inline(always)]
    pub(crate) fn queue(&mut self, frames: u64, transfer: u32, size: u32, transfers: &super::transfers::Transfers) -> u64 {
        if transfer == NONE_U32 && size == 0 {
            self.lone_tail += frames;
        } else {
            if self.lone_tail > 0 {
                let lone = std::mem::take(&mut self.lone_tail);
                self.fifo.push_back(Chunk { transfer: NONE_U32, frames: lone, size: 0, fresh: true });
            }
            self.fifo.push_back(Chunk { transfer, frames, size: size as u16, fresh: true });
        }
        self.backlog += frames;
        self.generated_frames += frames;
        self.frames_bytes(frames, size, transfer, transfers)
    }

    #[inline]
    pub fn has_frame(&self) -> bool {
        self.sat > 0 || self.backlog > 0 || self.tcp_ready
    }

    /// A data frame of `size` bytes started at `now`: the counters, and the next start its rate
    /// limiter allows (none: at once; a stopped limiter: never, until a new rate).
    #[inline(always)]
    pub(crate) fn note_sent(&mut self, now: SimTime, size: u32) {
        self.sent_frames += 1;
        self.sent_bytes += size as u64;
        self.last_start = now;
        self.next_allowed = match self.rl_rate {
            Some(r) if r > 0.0 => now + self.gap(size, r),
            Some(_) => u64::MAX,
            None => now,
        };
        self.last_len = size;
    }

    /// `rate_gap_ps(size, r)` at the limiter's rate `r`, from `gap_ps` when `size` is `last_len`'s;
    /// it becomes `size`'s (the caller sets `last_len` to `size`).
    #[inline(always)]
    fn gap(&mut self, size: u32, r: f64) -> u64 {
        if size == self.last_len && self.gap_ps != 0 {
            return self.gap_ps as u64;
        }
        let g = rate_gap_ps(size, r);
        self.gap_ps = u32::try_from(g).unwrap_or(0);
        g
    }

    /// Set (Some) or remove (None) the rate limiter at `now` and re-pace: the next start is
    /// last start + last size / new rate, never before now (model reference §1.2).
    pub fn set_rate(&mut self, rate_bps: Option<f64>, now: SimTime) {
        let rate = rate_bps.filter(|r| r.is_finite());
        self.rl_rate = rate.map(|r| r.max(0.0));
        self.gap_ps = 0; // of the old rate
        self.next_allowed = match self.rl_rate {
            None => now,
            Some(r) if r > 0.0 => {
                if self.last_len == 0 {
                    now
                } else {
                    (self.last_start + self.gap(self.last_len, r)).max(now)
                }
            }
            Some(_) => u64::MAX,
        };
    }
}

// a transmission's fields stay in the record's first two lines, and the record in three
const _: () = assert!(std::mem::size_of::<Flow>() == 192);

/// The engine's answer to [`crate::cm::HostCtx::has_backlog`]: straight from the flow table.
impl crate::cm::Backlog for Vec<Flow> {
    #[inline]
    fn has_frame(&self, _local: u32, flow: FlowId) -> bool {
        self[flow.idx()].has_frame()
    }
    /// An open send queue of `host` (a declared flow, or a transfer's queue not yet closed: a
    /// closed one has no source).
    #[inline]
    fn local_of(&self, host: NodeId, flow: FlowId) -> Option<Option<u32>> {
        Some(self.get(flow.idx()).filter(|f| f.src == host).map(|f| f.local))
    }
}

/// A transfer (FCT unit): one Pareto ON period's data, one workload or incast flow.
#[derive(Debug, Clone, Copy)]
pub struct Transfer {
    /// The declared flow it belongs to (statistics, the `fct` table's `flow`).
    pub flow: FlowId,
    /// The send queue holding it: its flow's FIFO, or a queue of its own ([`super::queues`]).
    pub queue: FlowId,
    /// Its destination host (its flow's, or drawn for it from the source's destinations).
    pub dst: NodeId,
    pub start: SimTime,
    pub end: SimTime,
    pub frames: u64,
    pub delivered: u64,
    /// Frames dropped (the transfer is bad once one is).
    pub dropped: u64,
    /// The closed-loop source that created it.
    pub source: u32,
    /// When its first frame started transmission at the host (u64::MAX = not yet).
    pub first_tx: SimTime,
    /// Its number in the run, in creation order (set by [`super::transfers::Transfers::push`]; the
    /// `fct` table's `transfer`), where its id is a slot reused once it has settled.
    pub serial: u32,
    /// Bytes of its last frame when that one is shorter than the flow's frames (a flow sent with
    /// its remainder in the last frame: `last_frame = "partial"`), else 0.
    pub last_bytes: u32,
}

impl Transfer {
    /// Bytes its short last frame lacks against the flow's `frame_bytes` (0 when every frame is full).
    #[inline]
    pub fn short_by(&self, frame_bytes: u32) -> u64 {
        if self.last_bytes != 0 {
            (frame_bytes - self.last_bytes) as u64
        } else {
            0
        }
    }

    /// Its frame bytes: `frames` of the flow's `frame_bytes`, the last one short if it is.
    pub fn bytes(&self, frame_bytes: u32) -> u64 {
        self.frames * frame_bytes as u64 - self.short_by(frame_bytes)
    }

    /// At least one of its frames was dropped: it never completes (model reference §12 D5).
    #[inline]
    pub fn bad(&self) -> bool {
        self.dropped > 0
    }
}

impl Network {
    /// A traffic source's next action.
    #[inline(always)]
    pub(crate) fn source_fire(&mut self, si: usize) {
        let now = self.now;
        let (act, next) = self.sources[si].fire(now);
        // the next firing's key taken first, before the frame's events are scheduled
        let fire = Event::SourceFire { source: si as u32 };
        let key = next.map(|t| self.q.reserve(t, &fire));
        if let Action::Frame { flow, size } = act {
            let fid = self.sources[si].flow(flow);
            // a deferrable source's frame behind others: its next firing perhaps deferred
            if self.enqueue_at_host(fid, 1, NONE_U32, size) && self.sources[si].defer_host != NONE_U32 && self.defer_firing(si, fid, next) {
                return;
            }
        }
        if let Some(key) = key {
            self.q.push_key(key, fire);
        }
        match act {
            Action::Nothing | Action::Frame { .. } => {}
            Action::Transfer { .. } | Action::Sized { .. } => self.start_transfer(si, act),
            Action::Saturate(on) => self.source_saturate(si, on),
        }
    }

    /// A saturated source's gate opened or closed (`on`): its flows are marked or unmarked.
    #[cold]
    #[inline(never)]
    fn source_saturate(&mut self, si: usize, on: bool) {
        if on != self.sources[si].sat_on {
            self.sources[si].sat_on = on;
            for k in 0..self.sources[si].flows.len() {
                let fid = self.sources[si].flows[k];
                if self.flows[fid.idx()].tcp.is_some() {
                    if on {
                        self.tcp_write(fid, u64::MAX, NONE_U32);
                    } else {
                        self.tcp_stop_writing(fid);
                    }
                    continue;
                }
                let h = self.host_of[self.flows[fid.idx()].src.idx()] as usize;
                let f = &mut self.flows[fid.idx()];
                let had = f.has_frame();
                if on {
                    f.sat += 1
                } else {
                    f.sat -= 1
                }
                let has = f.has_frame();
                self.adjust_backlogged(h, fid, had, has);
                if has {
                    self.host_try_send(h);
                }
            }
        }
    }

    /// A source's transfer starts (`act`: a Pareto ON period or a sized flow): its frames, its record,
    /// its send queue (the flow's FIFO, or a queue of its own with `nic.queues = "transfer"`).
    fn start_transfer(&mut self, si: usize, act: Action) {
        let now = self.now;
        let (i, frames, last_bytes) = match act {
            Action::Transfer { flow, on_bits } => {
                let fid = self.sources[si].target(flow).0;
                (flow, pareto_frames(on_bits, self.flows[fid.idx()].frame_bytes), 0)
            }
            Action::Sized { flow, bytes, partial } => {
                let fid = self.sources[si].target(flow).0;
                let f = &self.flows[fid.idx()];
                if !partial {
                    (flow, sized_frames(bytes, f.frame_bytes), 0)
                } else if let Some(tcp) = &f.tcp {
                    // the payload in MSS segments, the last one shorter (a segment is its
                    // header and payload: no padding)
                    let (payload, mss) = (libm::ceil(bytes).max(1.0) as u64, tcp.mss());
                    let frames = payload.div_ceil(mss);
                    let last = payload - (frames - 1) * mss;
                    (flow, frames, if last < mss { (last + f.frame_bytes as u64 - mss) as u32 } else { 0 })
                } else {
                    let (frames, last) = flow_bytes(bytes, f.frame_bytes);
                    (flow, frames, if last < f.frame_bytes { last } else { 0 })
                }
            }
            _ => unreachable!("a transfer action"),
        };
        let (fid, dst) = self.sources[si].target(i);
        let dst = dst.unwrap_or(self.flows[fid.idx()].dst);
        let queue = if self.per_transfer { self.open_queue(fid, dst) } else { fid };
        let tid = self.transfers.push(Transfer {
            flow: fid,
            queue,
            dst,
            start: now,
            end: u64::MAX,
            frames,
            delivered: 0,
            dropped: 0,
            source: si as u32,
            first_tx: u64::MAX,
            serial: 0,
            last_bytes,
        });
        self.sources[si].waiting = tid;
        // counted before the NIC can take the first frame (inside enqueue_at_host)
        if self.release_checks && self.flows[queue.idx()].tcp.is_none() {
            self.sources[si].queued += frames;
        }
        self.enqueue_at_host(queue, frames, tid, 0);
        if self.release_checks {
            self.source_release_check(si, queue);
        }
    }

    /// Flow `fid` of host `h` went from having a frame (`had`) to `has`: the host's count and, on a
    /// host of several flows, its bit set ([`super::Host::active`]: a host of one flow keeps none,
    /// its count says it, so that each frame queued and sent under a global PAUSE does not read
    /// the record's third line and the set's own).
    #[inline]
    pub(crate) fn adjust_backlogged(&mut self, h: usize, fid: FlowId, had: bool, has: bool) {
        let local = self.flows[fid.idx()].local as usize;
        let host = &mut self.hosts[h];
        match (had, has) {
            (false, true) => {
                host.backlogged += 1;
                if host.flows.len() > 1 {
                    host.active[local / 64] |= 1 << (local % 64);
                }
            }
            (true, false) => {
                host.backlogged -= 1;
                if host.flows.len() > 1 {
                    host.active[local / 64] &= !(1 << (local % 64));
                }
            }
            _ => {}
        }
    }

    /// Add `frames` frames (of `transfer`, or none) of `size` bytes each (0: the flow's
    /// `frame_bytes`) to flow `fid`'s FIFO and kick its host. Returns whether they only joined
    /// frames already waiting, the host's NIC doing nothing now (`host_try_send_idle`).
    #[inline(always)]
    pub(crate) fn enqueue_at_host(&mut self, fid: FlowId, frames: u64, transfer: u32, size: u32) -> bool {
        if self.flows[fid.idx()].tcp.is_some() {
            // the application's data: frames × MSS bytes; segments are counted as they are sent
            self.tcp_write(fid, frames, transfer);
            return false;
        }
        if transfer != NONE_U32 && !self.per_transfer && !self.flows[fid.idx()].has_frame() {
            let (h, local) = (self.host_of[self.flows[fid.idx()].src.idx()] as usize, self.flows[fid.idx()].local);
            if self.hosts[h].rp.as_ref().is_some_and(|rp| rp.wants_flow_start()) {
                self.rp_call(h, |rp, ctx| rp.on_flow_start(ctx, local));
            }
        }
        let f = &mut self.flows[fid.idx()];
        let had = f.has_frame();
        if frames == 1 && transfer == NONE_U32 && !had {
            let h = self.host_of[f.src.idx()] as usize;
            if self.host_send_lone(h, fid, size) {
                return false;
            }
        }
        self.queue_generated(fid, frames, transfer, size);
        let h = self.host_of[self.flows[fid.idx()].src.idx()] as usize;
        if had && self.host_try_send_idle(h, fid) {
            return true; // more frames for a flow that already waits: host_try_send would change nothing
        }
        self.adjust_backlogged(h, fid, had, true);
        self.host_try_send(h);
        false
    }

    /// `frames` frames (of `transfer`, or none) of `size` bytes each join flow `fid`'s FIFO, counted
    /// as generated (by `enqueue_at_host`, and by a deferred firing: [`super::deferred`]).
    #[inline(always)]
    pub(crate) fn queue_generated(&mut self, fid: FlowId, frames: u64, transfer: u32, size: u32) {
        let bytes = self.flows[fid.idx()].queue(frames, transfer, size, &self.transfers);
        self.c.data_generated.0 += frames;
        self.c.data_generated.1 += bytes;
    }

    /// Whether `host_try_send(h)` would do nothing now, for a host whose only flow with a frame is
    /// `fid` and which has no control frame and no PFC: its NIC is busy or paused, or the flow is
    /// held by its window or its rate limiter, and the wake-up it would ask for is already
    /// scheduled (the same tests, in the same order, as `host_try_send` and `ensure_host_wake`).
    /// A rate-limited flow's source adds its frames here without the round robin (QCN).
    #[inline]
    pub(crate) fn host_try_send_idle(&self, h: usize, fid: FlowId) -> bool {
        let (now, host) = (self.now, &self.hosts[h]);
        if self.pfc_enabled || host.backlogged != 1 || !host.ctrl_q.is_empty() {
            return false;
        }
        let f = &self.flows[fid.idx()];
        debug_assert!(f.has_frame(), "the waiting flow");
        if host.wake_at == f.next_allowed && f.next_allowed > now && f.sent_bytes < f.send_limit && !self.pause_enabled && host.flows.len() == 1 {
            // the host of this one flow already waits for its limiter, and no port is ever paused
            // (no switch sends PAUSE): whether the NIC is busy or not, the tests below end in that
            // wake-up (a busy NIC's end, if later, is served by it too), so the port's record (a
            // cache miss per source firing of a paced flow) is not read
            return true;
        }
        let p = &self.ports[host.port.idx()];
        let t = if p.busy_until > now {
            self.host_next_look(h, p.busy_until).0
        } else if p.pause.paused_until > now {
            if p.pause_guarded {
                return true; // held until an XON or a refresh reaches it: no wake-up
            }
            p.pause.paused_until
        } else if f.sent_bytes >= f.send_limit {
            return true; // held by its window: no wake-up
        } else if f.next_allowed > now {
            f.next_allowed
        } else {
            return false; // it would be sent now
        };
        host.wakes_by(t, now)
    }

    /// A lone frame (no transfer) for UDP flow `fid` of host `h`, which has no frame waiting:
    /// when `host_try_send` would pick it at once — the NIC idle and not paused (no PFC), no
    /// control frame and no other flow waiting, the flow's window and rate limiter open — it is
    /// sent here without passing through the flow's FIFO, the host's active set and the round
    /// robin (same counters, same `rr_next`, same frame). `size`: its bytes, 0 = the flow's.
    /// Returns whether it was sent, or queued by [`Network::host_lone_waits`].
    #[inline]
    pub(crate) fn host_send_lone(&mut self, h: usize, fid: FlowId, size: u32) -> bool {
        let now = self.now;
        let host = &self.hosts[h];
        let p = &self.ports[host.port.idx()];
        let f = &self.flows[fid.idx()];
        if p.busy_until > now
            || p.pause.paused_until > now
            || self.pfc_enabled
            || host.backlogged != 0
            || !host.ctrl_q.is_empty()
            || f.sent_bytes >= f.send_limit
            || f.next_allowed > now
        {
            return (p.busy_until > now || p.pause.paused_until > now) && self.host_lone_waits(h, fid, size);
        }
        let size = f.size_or_own(size);
        let (pid, n, local) = (host.port, host.flows.len(), f.local as usize);
        let plain = self.plain_sender(h, fid);
        self.flows[fid.idx()].generated_frames += 1;
        self.c.data_generated.0 += 1;
        self.c.data_generated.1 += size as u64;
        self.hosts[h].rr_next = if local + 1 == n { 0 } else { local + 1 };
        if plain {
            self.host_start_plain(h, pid, fid, size);
        } else {
            self.host_start_frame(h, pid, fid, (NONE_U32, size, false, 0, 0));
        }
        true
    }

    /// [`Network::host_send_lone`]'s frame, not sent: if the NIC is busy, or paused by 802.3x, it
    /// sends nothing now whatever waits, so the frame is queued here and the wake-up
    /// `host_try_send` would ask for then is asked for, without its look (under a global PAUSE,
    /// most frames). Returns whether it did (else the caller queues the frame and looks).
    #[inline(never)]
    fn host_lone_waits(&mut self, h: usize, fid: FlowId, size: u32) -> bool {
        let p = &self.ports[self.hosts[h].port.idx()];
        // (host_next_look reads the flow's limiter and window, which queueing does not change;
        // `paused`: the NIC waits for a pause's end)
        let ((t, wait), paused) = if p.busy_until > self.now {
            (self.host_next_look(h, p.busy_until), false)
        } else if p.pause.paused_until > self.now && !self.pfc_enabled {
            ((p.pause.paused_until, true), true)
        } else {
            return false;
        };
        let bytes = self.flows[fid.idx()].queue(1, NONE_U32, size, &self.transfers);
        self.c.data_generated.0 += 1;
        self.c.data_generated.1 += bytes;
        self.adjust_backlogged(h, fid, false, true);
        if paused {
            self.ensure_host_pause_wake(h, t);
        } else {
            self.ensure_host_wake(h, t, wait);
        }
        true
    }

    /// Whether flow `fid`'s next frame is a lone one: no chunk in its FIFO (`backlog` is all
    /// `lone_tail`). Read from the record's first line, where `take_frame` reads the FIFO's, a
    /// third (a cache miss per paced frame under QCN, whose frames are lone).
    #[inline(always)]
    pub(crate) fn next_is_lone(&self, fid: FlowId) -> bool {
        let f = &self.flows[fid.idx()];
        f.lone_tail > 0 && f.backlog == f.lone_tail
    }

    /// [`Network::take_frame`] of flow `fid` (host `h`) when [`Network::next_is_lone`]: its size.
    #[inline(always)]
    pub(crate) fn take_lone(&mut self, h: usize, fid: FlowId) -> u32 {
        let f = &mut self.flows[fid.idx()];
        debug_assert!(f.fifo.is_empty(), "lone frames only");
        f.lone_tail -= 1;
        f.backlog -= 1;
        let size = f.frame_bytes;
        if !f.has_frame() {
            self.adjust_backlogged(h, fid, true, false);
            self.resume_firing(h);
        }
        size
    }

    /// Take the next frame of flow `fid` (host `h`) for transmission: returns (transfer, size,
    /// last frame of its transfer). A saturated flow generates the frame as it is sent.
    pub(crate) fn take_frame(&mut self, h: usize, fid: FlowId) -> (u32, u32, bool) {
        let f = &mut self.flows[fid.idx()];
        let mut transfer = NONE_U32;
        let mut size = f.frame_bytes;
        let (mut first, mut last) = (false, false);
        if f.backlog > 0 {
            if let Some(c) = f.fifo.front_mut() {
                transfer = c.transfer;
                if c.size != 0 {
                    size = c.size as u32;
                }
                first = std::mem::take(&mut c.fresh);
                c.frames -= 1;
                if c.frames == 0 {
                    f.fifo.pop_front();
                    last = transfer != NONE_U32;
                    if last && self.transfers[transfer].last_bytes != 0 {
                        size = self.transfers[transfer].last_bytes;
                    }
                } else if self.rotate && f.fifo.len() > 1 {
                    // transfer queues sharing the flow's limiter: served round robin, a frame each
                    f.fifo.rotate_left(1);
                }
            } else {
                debug_assert!(f.lone_tail > 0, "backlog implies a chunk or lone frames");
                f.lone_tail -= 1; // a frame of no transfer: neither the first nor the last of one
            }
            f.backlog -= 1;
        } else {
            f.generated_frames += 1;
            self.c.data_generated.0 += 1;
            self.c.data_generated.1 += f.frame_bytes as u64;
        }
        if !f.has_frame() {
            self.adjust_backlogged(h, fid, true, false);
            self.resume_firing(h);
        }
        if first && transfer != NONE_U32 {
            self.transfers[transfer].first_tx = self.now;
        }
        if self.release_checks && transfer != NONE_U32 {
            let si = self.transfers[transfer].source as usize;
            self.sources[si].queued -= 1;
            if self.sources[si].waiting == transfer {
                self.source_release_check(si, fid);
            }
        }
        (transfer, size, last)
    }

    /// A source with a NIC buffer or RL release may be released for its OFF period (its backlog
    /// changed, or its transfer's flow `fid` may be rate limited).
    fn source_release_check(&mut self, si: usize, fid: FlowId) {
        let limited = self.flows[fid.idx()].rl_rate.is_some();
        if let Some(t) = self.sources[si].release_check(self.now, limited) {
            self.schedule_fire(t, si);
        }
    }

    /// The last frame of `transfer` left the NIC at `t_end`: its closed-loop source draws OFF.
    pub(crate) fn transfer_left_nic(&mut self, transfer: u32, t_end: SimTime) {
        let src = self.transfers[transfer].source as usize;
        if let Some(t) = self.sources[src].transfer_done(transfer, t_end) {
            self.schedule_fire(t, src);
        }
    }
}
