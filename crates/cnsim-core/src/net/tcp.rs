//! TCP flows on the network: the glue between the pure state machines of
//! [`crate::transport::tcp`] and the hosts, frames and timers of the data plane.
//!
//! * The source's traffic generator is the application: each generated frame (or transfer) hands
//!   MSS-sized chunks of data to the sender; a saturated source makes the sender unbounded.
//! * A TCP flow "has a frame" when its sender may send a segment; the host NIC picks it in its
//!   round robin like any flow, so the flow's rate limiter (BCN, QCN, ECM, FECN, DCQCN) caps the
//!   rate at which TCP may put segments on the wire, and PAUSE stops it like any other frame.
//! * Segments are data frames (`seq` = first payload byte, size = payload + header); DCTCP marks
//!   them ECN-capable. The destination's receiver answers with ACK frames (`FrameKind::Ack`) that
//!   travel the reverse path through queues, PAUSE and drops like any frame.
//! * A transfer completes when its last byte is acknowledged (FCT from creation to that ACK).

use super::{Network, NONE_U32};
use crate::event::Event;
use crate::frame::FrameId;
use crate::frame::{tag, Frame, FrameKind, Tag};
use crate::ids::{FlowId, PortId};
use crate::ir::{CcIr, TcpIr};
use crate::time::SimTime;
use crate::transport::tcp::{CcKind, SackBlocks, Segment, TcpConfig, TcpReceiver, TcpSender};
use std::collections::VecDeque;

/// Timer kinds of [`Event::TcpTimer`].
pub const RTO: u8 = 0;
pub const DELACK: u8 = 1;

/// Both ends of one TCP connection (the receiver's state is the destination host's, kept with
/// the flow for bookkeeping).
pub struct TcpFlow {
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    pub header_bytes: u32,
    pub ack_bytes: u32,
    pub ecn: bool,
    /// Transfers not yet fully acknowledged: (end offset in the byte stream, transfer id).
    pub pending: VecDeque<(u64, u32)>,
    /// Transfers none of whose bytes has been sent yet: (start offset in the byte stream, transfer
    /// id), for `fct.first_tx_s`.
    pub unsent: VecDeque<(u64, u32)>,
    /// Time of the scheduled RTO / delayed-ACK event, if any (one pending event each).
    rto_event: Option<SimTime>,
    delack_event: Option<SimTime>,
    /// In-order payload bytes received after the warm-up (goodput).
    pub goodput_bytes_window: u64,
}

impl TcpFlow {
    pub fn new(ir: &TcpIr, frame_bytes: u32) -> Self {
        let cc = match ir.cc {
            CcIr::NewReno => CcKind::NewReno,
            CcIr::Dctcp { g, alpha_init } => CcKind::Dctcp { g, alpha_init },
        };
        let cfg = TcpConfig {
            mss: frame_bytes - ir.header_bytes,
            header_bytes: ir.header_bytes,
            init_cwnd_segments: ir.init_cwnd_segments,
            rcv_wnd_bytes: ir.rcv_wnd_bytes,
            init_ssthresh_bytes: ir.init_ssthresh_bytes,
            init_rto_ps: ir.init_rto_ps,
            min_rto_ps: ir.min_rto_ps,
            max_rto_ps: ir.max_rto_ps,
            dupack_threshold: ir.dupack_threshold,
            cc,
            sack: ir.sack,
        };
        let ecn = matches!(cc, CcKind::Dctcp { .. });
        let mut receiver = TcpReceiver::new(ecn, ir.delayed_ack, ir.delack_timeout_ps);
        receiver.set_sack(ir.sack);
        TcpFlow {
            sender: TcpSender::new(cfg),
            receiver,
            header_bytes: ir.header_bytes,
            ack_bytes: ir.ack_bytes,
            ecn,
            pending: VecDeque::new(),
            unsent: VecDeque::new(),
            rto_event: None,
            delack_event: None,
            goodput_bytes_window: 0,
        }
    }

    pub fn mss(&self) -> u64 {
        self.sender.config().mss as u64
    }
}

impl Network {
    /// Re-evaluate whether TCP flow `fid` can send, keeping its host's backlog count right.
    fn tcp_refresh_ready(&mut self, fid: FlowId) {
        let f = &mut self.flows[fid.idx()];
        let had = f.has_frame();
        f.tcp_ready = f.tcp.as_ref().is_some_and(|t| t.sender.can_send());
        let has = f.has_frame();
        let h = self.host_of[f.src.idx()] as usize;
        self.adjust_backlogged(h, fid, had, has);
    }

    /// Make sure an event is pending no later than the sender's RTO deadline.
    fn tcp_arm_rto(&mut self, fid: FlowId) {
        let t = self.flows[fid.idx()].tcp.as_mut().expect("tcp flow");
        if let Some(d) = t.sender.rto_deadline() {
            if t.rto_event.is_none_or(|e| e > d) {
                t.rto_event = Some(d);
                self.schedule(d, Event::TcpTimer { flow: fid, which: RTO, gen: self.queue_gen(fid) });
            }
        }
    }

    /// The application of TCP flow `fid` writes `frames` segments' worth of data (of `transfer`,
    /// or none); `frames == u64::MAX` makes the source unbounded.
    pub(crate) fn tcp_write(&mut self, fid: FlowId, frames: u64, transfer: u32) {
        // a transfer whose last segment is short (`last_frame = "partial"`) writes that much less
        let frame = self.flows[fid.idx()].frame_bytes;
        let short = if transfer != NONE_U32 { self.transfers[transfer].short_by(frame) } else { 0 };
        let t = self.flows[fid.idx()].tcp.as_mut().expect("tcp flow");
        if frames == u64::MAX {
            t.sender.set_unbounded();
        } else {
            let bytes = frames * t.mss() - short;
            let start = t.sender.written();
            t.sender.write(bytes);
            if transfer != NONE_U32 {
                let end = t.sender.written();
                t.pending.push_back((end, transfer));
                t.unsent.push_back((start, transfer));
            }
        }
        self.tcp_refresh_ready(fid);
        let h = self.host_of[self.flows[fid.idx()].src.idx()] as usize;
        self.host_try_send(h);
    }

    /// A saturated application stops writing: nothing beyond what was sent.
    pub(crate) fn tcp_stop_writing(&mut self, fid: FlowId) {
        let t = self.flows[fid.idx()].tcp.as_mut().expect("tcp flow");
        t.sender.stop_writing();
        self.tcp_refresh_ready(fid);
    }

    /// Take the next segment of TCP flow `fid` for transmission: (segment, frame bytes, ECT).
    pub(crate) fn tcp_take_segment(&mut self, fid: FlowId) -> (Segment, u32, bool) {
        let now = self.now;
        let t = self.flows[fid.idx()].tcp.as_mut().expect("tcp flow");
        let seg = t.sender.send(now).expect("a ready TCP flow has a segment");
        // new data goes out in stream order: every transfer starting before this segment's end has
        // now had its first byte sent
        while let Some(&(start, tid)) = t.unsent.front() {
            if start >= seg.seq + seg.len as u64 {
                break;
            }
            t.unsent.pop_front();
            self.transfers[tid].first_tx = now;
        }
        let t = self.flows[fid.idx()].tcp.as_mut().expect("tcp flow");
        let size = seg.len + t.header_bytes;
        let ecn = t.ecn;
        self.c.data_generated.0 += 1;
        self.c.data_generated.1 += size as u64;
        self.flows[fid.idx()].generated_frames += 1;
        self.tcp_refresh_ready(fid);
        self.tcp_arm_rto(fid);
        (seg, size, ecn)
    }

    /// A data segment of TCP flow `fid` reached its destination host `h`.
    pub(crate) fn tcp_on_data(&mut self, h: usize, fid: FlowId, seq: u64, bytes: u32, ce: bool) {
        let now = self.now;
        let warm = now >= self.cfg.warmup_ps;
        let t = self.flows[fid.idx()].tcp.as_mut().expect("tcp flow");
        let before = t.receiver.rcv_nxt();
        let out = t.receiver.on_segment(now, seq, bytes - t.header_bytes, ce);
        if warm {
            t.goodput_bytes_window += t.receiver.rcv_nxt() - before;
        }
        if let Some(at) = out.delack_at {
            if t.delack_event.is_none_or(|e| e > at) {
                t.delack_event = Some(at);
                self.schedule(at, Event::TcpTimer { flow: fid, which: DELACK, gen: self.queue_gen(fid) });
            }
        }
        for ack in out.acks.into_iter().flatten() {
            self.tcp_send_ack(h, fid, ack.ack, ack.ece, out.sack);
        }
    }

    /// Queue an ACK (with SACK `blocks` if the flow uses SACK) at host `h` (the flow's destination)
    /// toward the flow's source.
    fn tcp_send_ack(&mut self, h: usize, fid: FlowId, ack: u64, ece: bool, blocks: SackBlocks) {
        let f = &self.flows[fid.idx()];
        let size = f.tcp.as_ref().expect("tcp flow").ack_bytes;
        let (src, dst, prio) = (f.dst, f.src, f.prio);
        self.c.ack_generated.0 += 1;
        self.c.ack_generated.1 += size as u64;
        self.queue_frame_sent(fid);
        let fr = self.frames.alloc(Frame {
            kind: FrameKind::Ack,
            size,
            src,
            dst,
            flow: fid,
            transfer: NONE_U32,
            ingress: PortId::NONE,
            born: self.now,
            tag: Tag { flags: if ece { tag::ECE } else { 0 }, ..Tag::default() },
            prio,
            seq: ack,
        });
        if self.flows[fid.idx()].tcp.as_ref().is_some_and(|t| t.sender.config().sack) {
            self.frames.set_sack(fr, blocks);
        }
        self.hosts[h].ctrl_q.push_back(fr);
        self.host_try_send(h);
    }

    /// ACK frame `fr` of TCP flow `fid` reached the flow's source: its SACK blocks are read, the
    /// frame freed, the ACK handed to the sender.
    pub(crate) fn tcp_ack_arrived(&mut self, fr: FrameId, fid: FlowId, ack: u64, ece: bool) {
        let sack = self.flows[fid.idx()].tcp.as_ref().is_some_and(|t| t.sender.config().sack);
        let blocks = if sack { self.frames.sack(fr) } else { SackBlocks::default() };
        self.frames.free(fr);
        self.c.ack_delivered += 1;
        self.tcp_on_ack(fid, ack, ece, blocks.as_slice());
    }

    /// An ACK of TCP flow `fid` (with SACK `blocks`) reached the flow's source.
    pub(crate) fn tcp_on_ack(&mut self, fid: FlowId, ack: u64, ece: bool, blocks: &[(u64, u64)]) {
        let now = self.now;
        let t = self.flows[fid.idx()].tcp.as_mut().expect("tcp flow");
        t.sender.on_ack_sack(now, ack, ece, blocks);
        let acked = t.sender.acked();
        while let Some(&(end, tid)) = self.flows[fid.idx()].tcp.as_ref().and_then(|t| t.pending.front()) {
            if end > acked {
                break;
            }
            self.flows[fid.idx()].tcp.as_mut().expect("tcp flow").pending.pop_front();
            let tr = &mut self.transfers[tid];
            tr.end = now;
            tr.delivered = tr.frames;
            let src = tr.source as usize;
            self.transfers.settle(tid, now);
            if self.is_transfer_queue(fid) {
                // its only transfer: the connection closes once nothing of it is in flight (this
                // ACK is, until its arrival has been handled)
                self.queue_settling(fid);
            }
            // closed-loop sources draw their OFF period when the transfer is complete
            if let Some(next) = self.sources[src].transfer_done(tid, now) {
                self.schedule_fire(next, src);
            }
        }
        self.tcp_refresh_ready(fid);
        self.tcp_arm_rto(fid);
        let h = self.host_of[self.flows[fid.idx()].src.idx()] as usize;
        self.host_try_send(h);
    }

    /// A TCP timer event of flow `fid` (generation `gen` of its send queue).
    pub(crate) fn tcp_timer(&mut self, fid: FlowId, which: u8, gen: u32) {
        let now = self.now;
        if self.queue_gen(fid) != gen {
            return; // a transfer's connection that has closed since
        }
        let Some(t) = self.flows[fid.idx()].tcp.as_mut() else { return };
        if which == RTO {
            if t.rto_event != Some(now) {
                return; // superseded by an earlier re-arm
            }
            t.rto_event = None;
            match t.sender.rto_deadline() {
                Some(d) if d == now => {
                    t.sender.on_rto(now);
                    self.tcp_refresh_ready(fid);
                    self.tcp_arm_rto(fid);
                    let h = self.host_of[self.flows[fid.idx()].src.idx()] as usize;
                    self.host_try_send(h);
                }
                Some(_) => self.tcp_arm_rto(fid), // the deadline moved later: wait for it
                None => {}
            }
        } else {
            if t.delack_event != Some(now) {
                return;
            }
            t.delack_event = None;
            if let Some(ack) = t.receiver.on_delack_timer(now) {
                let h = self.host_of[self.flows[fid.idx()].dst.idx()] as usize;
                self.tcp_send_ack(h, fid, ack.ack, ack.ece, SackBlocks::default());
            } else if let Some(d) = t.receiver.delack_deadline().filter(|&d| d > now) {
                t.delack_event = Some(d); // re-armed later than this event: wait for it
                self.schedule(d, Event::TcpTimer { flow: fid, which: DELACK, gen: self.queue_gen(fid) });
            }
        }
    }
}
