//! RDMA loss recovery on fabrics without PFC (`[rdma] loss_recovery`; issue 36): go-back-N as the
//! RoCE NICs and the HPCC authors' simulator do it, or selective repeat (IRN-style).
//!
//! Each transfer has its own send queue (a queue pair, [`super::queues`]); its data frames carry a
//! packet sequence number (PSN, the frame's `seq`: 0 .. frames − 1). The receiver expects them in
//! order:
//! * **go-back-N**: an in-order frame is accepted and acknowledged (an ACK frame carrying the next
//!   expected PSN, cumulative); a frame beyond it is discarded and answered with a NACK for the expected
//!   PSN — once per expected PSN, the next NACK only after progress — and the sender rewinds: every frame
//!   from the NACKed one is sent again. A frame below it (a duplicate) is discarded and acknowledged.
//! * **selective repeat**: a frame beyond the expected one is kept (placed in memory) and the NACK asks
//!   for the expected one only; the sender resends that frame alone and goes on where it was. When a
//!   retransmission fills a hole behind which frames are already kept, the receiver NACKs the next
//!   hole at once.
//! * **timeout**: a sender with frames unacknowledged and no ACK for `timeout` (restarted by every ACK
//!   that makes progress) goes back to its oldest unacknowledged frame and sends everything from it
//!   again, in both modes (it does not know which of them arrived; a selective-repeat receiver keeps
//!   what it already has): the tail of a transfer has no later frame to reveal its loss.
//!
//! ACKs and NACKs are `FrameKind::Ack` frames (the control frame size) of the queue, on the reverse
//! path. A transfer is complete (its FCT ends) when its last frame is in order at the receiver; its
//! queue closes once the sender has seen the final ACK and nothing of it is in flight. Frames lost in
//! the network are counted as drops (conservation: sent = delivered + dropped + in flight, every
//! retransmission a new data frame) but do not make the transfer bad. Nothing of this runs without
//! `[rdma]` (`Network::rdma` is `None`).

use super::flow::Chunk;
use super::{Network, NONE_U32};
use crate::event::Event;
use crate::frame::{Frame, FrameKind, Tag};
use crate::ids::{FlowId, PortId};
use crate::ir::{LossRecoveryIr, RdmaIr};
use crate::time::SimTime;

/// Tag flag of an ACK frame that is a NACK.
pub const NACK: u8 = 64;

/// Both ends of one queue pair (the receiver's state is the destination's, kept with the queue).
#[derive(Debug, Clone, Default)]
pub struct Qp {
    /// The transfer and its frames (PSNs `0..total`); `NONE_U32`: no transfer yet.
    pub transfer: u32,
    pub total: u64,
    /// Sender: the next PSN to send, the highest sent + 1, the oldest unacknowledged.
    pub next: u64,
    pub high: u64,
    pub una: u64,
    /// Sender, selective repeat: PSNs to resend before going on at `next`.
    pub resend: std::collections::VecDeque<u64>,
    /// The NIC has sent the transfer's last new frame (its closed-loop source was told).
    pub left_nic: bool,
    /// Sender saw the final ACK.
    pub done: bool,
    /// Deadline of the armed timeout (`u64::MAX`: none), and the time of the timer event pending
    /// for it (`u64::MAX`: none; a later deadline moves it when it fires).
    pub rto_at: SimTime,
    pub timer_ev: SimTime,
    /// Receiver: next expected PSN; the last PSN it NACKed (`u64::MAX`: none); kept frames beyond
    /// `expected` (selective repeat), a bit per PSN from `expected`.
    pub expected: u64,
    pub nacked: u64,
    pub kept: Vec<u64>,
}

/// Counters of the run (`summary.rdma`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RdmaStats {
    pub retransmitted_frames: u64,
    pub retransmitted_bytes: u64,
    pub nacks: u64,
    pub acks: u64,
    pub timeouts: u64,
    /// Frames the receiver discarded: out of order (go-back-N) or duplicates.
    pub discarded_frames: u64,
}

/// The loss recovery of a run.
pub struct Rdma {
    pub selective: bool,
    pub timeout_ps: SimTime,
    /// By send-queue id (declared flows have none).
    pub qps: Vec<Qp>,
    pub stats: RdmaStats,
}

impl Rdma {
    /// Loss recovery as the IR asks (None: none).
    pub fn new(ir: &Option<RdmaIr>) -> Option<Box<Rdma>> {
        let r = ir.as_ref()?;
        if r.loss_recovery == LossRecoveryIr::None {
            return None;
        }
        Some(Box::new(Rdma {
            selective: r.loss_recovery == LossRecoveryIr::SelectiveRepeat,
            timeout_ps: r.timeout_ps,
            qps: Vec::new(),
            stats: RdmaStats::default(),
        }))
    }
}

/// Whether bit `i` of bit set `b` is set.
fn bit(b: &[u64], i: u64) -> bool {
    b.get((i / 64) as usize).is_some_and(|w| w >> (i % 64) & 1 == 1)
}

impl Network {
    /// The queue pair of send queue `q` (made on first use).
    fn qp(&mut self, q: FlowId) -> &mut Qp {
        let r = self.rdma.as_mut().expect("rdma");
        if q.idx() >= r.qps.len() {
            r.qps.resize(q.idx() + 1, Qp { transfer: NONE_U32, ..Qp::default() });
        }
        &mut r.qps[q.idx()]
    }

    /// Transfer queue `q` opens: a fresh queue pair.
    pub(crate) fn rdma_open(&mut self, q: FlowId) {
        *self.qp(q) = Qp { transfer: NONE_U32, nacked: u64::MAX, rto_at: u64::MAX, timer_ev: u64::MAX, ..Qp::default() };
    }

    /// Whether frames of send queue `q` are under loss recovery (a transfer's own queue, not TCP).
    #[inline]
    pub(crate) fn rdma_on(&self, q: FlowId) -> bool {
        self.rdma.is_some() && self.is_transfer_queue(q) && self.flows[q.idx()].tcp.is_none()
    }

    /// The PSN of the data frame queue `q` sends now (of `transfer`, `size` bytes); whether it is the
    /// transfer's last new frame (its source is told once).
    #[cold]
    #[inline(never)]
    pub(crate) fn rdma_psn(&mut self, q: FlowId, transfer: u32, size: u32, last: bool) -> (u64, bool) {
        let total = self.transfers[transfer].frames;
        let qp = self.qp(q);
        if qp.transfer == NONE_U32 {
            (qp.transfer, qp.total) = (transfer, total);
        }
        debug_assert_eq!(qp.transfer, transfer, "one transfer per queue pair");
        let psn = match qp.resend.pop_front() {
            Some(p) => p, // selective repeat: a frame the receiver asked for
            None => {
                qp.next += 1;
                qp.next - 1
            }
        };
        let retx = psn < qp.high;
        qp.high = qp.high.max(psn + 1);
        let first_last = last && !qp.left_nic;
        qp.left_nic |= last;
        let arm = qp.rto_at == u64::MAX;
        if retx {
            let s = &mut self.rdma.as_mut().expect("rdma").stats;
            s.retransmitted_frames += 1;
            s.retransmitted_bytes += size as u64;
        }
        if arm {
            self.rdma_arm(q);
        }
        (psn, first_last)
    }

    /// Arm queue `q`'s timeout `timeout` from now (an event only if none is pending: one that fires
    /// before the deadline moves to it).
    fn rdma_arm(&mut self, q: FlowId) {
        let t = self.now.saturating_add(self.rdma.as_ref().expect("rdma").timeout_ps);
        let qp = self.qp(q);
        qp.rto_at = t;
        if qp.timer_ev == u64::MAX {
            qp.timer_ev = t;
            let gen = self.queue_gen(q);
            self.schedule(t, Event::RdmaTimer { queue: q, gen });
        }
    }

    /// Data frame `fr` (PSN `psn`, `size` bytes) of queue `q` reaches its destination host `h` at `t`:
    /// whether it is new data for its transfer (in order, or kept beyond a hole); an ACK or NACK is
    /// sent as the mode says.
    #[cold]
    #[inline(never)]
    pub(crate) fn rdma_receive(&mut self, h: usize, q: FlowId, psn: u64) -> bool {
        let selective = self.rdma.as_ref().expect("rdma").selective;
        let qp = self.qp(q);
        let e = qp.expected;
        let (new, reply) = if psn == e {
            // in order: the expected PSN moves past it and past the frames kept behind it
            qp.expected += 1;
            while bit(&qp.kept, qp.expected - e) {
                qp.expected += 1;
            }
            let moved = qp.expected - e;
            shift(&mut qp.kept, moved);
            // a hole behind kept frames: ask for it at once (selective repeat)
            let hole = !qp.kept.iter().all(|&w| w == 0);
            (true, if hole && qp.nacked != qp.expected { Reply::Nack } else { Reply::Ack })
        } else if psn > e {
            let off = psn - e;
            let new = selective && !bit(&qp.kept, off);
            if selective {
                let w = (off / 64) as usize;
                if w >= qp.kept.len() {
                    qp.kept.resize(w + 1, 0);
                }
                qp.kept[w] |= 1 << (off % 64);
            }
            (new, if qp.nacked != e { Reply::Nack } else { Reply::None })
        } else {
            (false, Reply::Ack)
        };
        let expected = qp.expected;
        if reply == Reply::Nack {
            qp.nacked = expected;
        }
        if !new {
            self.rdma.as_mut().expect("rdma").stats.discarded_frames += 1;
        }
        match reply {
            Reply::None => {}
            r => self.rdma_send_ack(h, q, expected, r == Reply::Nack),
        }
        new
    }

    /// The receiver (host `h`) sends an ACK (or a NACK) of queue `q` carrying PSN `psn`.
    fn rdma_send_ack(&mut self, h: usize, q: FlowId, psn: u64, nack: bool) {
        let f = &self.flows[q.idx()];
        let size = self.cfg.control_frame_bytes;
        let (src, dst, prio) = (f.dst, f.src, f.prio);
        self.c.ack_generated.0 += 1;
        self.c.ack_generated.1 += size as u64;
        let s = &mut self.rdma.as_mut().expect("rdma").stats;
        if nack {
            s.nacks += 1;
        } else {
            s.acks += 1;
        }
        self.queue_frame_sent(q);
        let fr = self.frames.alloc(Frame {
            kind: FrameKind::Ack,
            size,
            src,
            dst,
            flow: q,
            transfer: NONE_U32,
            ingress: PortId::NONE,
            born: self.now,
            tag: Tag { flags: if nack { NACK } else { 0 }, ..Tag::default() },
            prio,
            seq: psn,
        });
        self.hosts[h].ctrl_q.push_back(fr);
        self.host_try_send(h);
    }

    /// An ACK or NACK (`nack`) of queue `q` carrying PSN `psn` reaches the sender.
    #[cold]
    #[inline(never)]
    pub(crate) fn rdma_ack_arrived(&mut self, q: FlowId, psn: u64, nack: bool) {
        let qp = self.qp(q);
        if qp.done {
            return;
        }
        let progress = psn > qp.una;
        qp.una = qp.una.max(psn);
        if qp.una >= qp.total && qp.transfer != NONE_U32 {
            return self.rdma_done(q);
        }
        if nack {
            let selective = self.rdma.as_ref().expect("rdma").selective;
            self.rdma_rewind(q, psn, !selective);
        }
        if progress {
            self.rdma_arm(q);
        }
    }

    /// Queue `q`'s sender goes back to PSN `psn` (`go_back`: everything from it is sent again) or
    /// resends that frame alone.
    fn rdma_rewind(&mut self, q: FlowId, psn: u64, go_back: bool) {
        let qp = self.qp(q);
        let k = if !go_back {
            if qp.resend.contains(&psn) || psn >= qp.high {
                0
            } else {
                qp.resend.push_back(psn);
                1
            }
        } else if psn < qp.next {
            // the FIFO held the frames from `next` and the resends (distinct PSNs below `next`)
            let k = qp.next - psn - qp.resend.len() as u64;
            qp.resend.clear();
            qp.next = psn;
            k
        } else {
            0
        };
        if k > 0 {
            self.rdma_requeue(q, k);
        }
    }

    /// `k` more frames for queue `q`'s FIFO (retransmissions; generated as they are queued, as TCP
    /// counts its retransmitted segments).
    fn rdma_requeue(&mut self, q: FlowId, k: u64) {
        let transfer = self.qp(q).transfer;
        let h = self.host_of[self.flows[q.idx()].src.idx()] as usize;
        let f = &mut self.flows[q.idx()];
        let had = f.has_frame();
        // the chunk's last frame has the transfer's last size (`Flow::frames_bytes`)
        let bytes = match f.fifo.front_mut() {
            Some(c) => {
                c.frames += k;
                k * f.frame_bytes as u64
            }
            None => {
                f.fifo.push_back(Chunk { transfer, frames: k, size: 0, fresh: false });
                f.frames_bytes(k, 0, transfer, &self.transfers)
            }
        };
        f.backlog += k;
        f.generated_frames += k;
        self.c.data_generated.0 += k;
        self.c.data_generated.1 += bytes;
        self.adjust_backlogged(h, q, had, true);
        self.host_try_send(h);
    }

    /// Queue `q`'s timeout fired (`gen`: its generation when armed).
    pub(crate) fn rdma_timer(&mut self, q: FlowId, gen: u32) {
        let now = self.now;
        if self.queue_gen(q) != gen {
            return; // closed since
        }
        let qp = self.qp(q);
        qp.timer_ev = u64::MAX;
        if qp.done || qp.rto_at == u64::MAX {
            return;
        }
        if qp.rto_at > now {
            // re-armed since this event was scheduled: wait for the deadline
            let t = qp.rto_at;
            qp.timer_ev = t;
            return self.schedule(t, Event::RdmaTimer { queue: q, gen });
        }
        qp.rto_at = u64::MAX;
        if qp.una >= qp.high {
            return; // nothing outstanding (the queue waits for its limiter): armed at its next frame
        }
        self.rdma.as_mut().expect("rdma").stats.timeouts += 1;
        // both modes: every unacknowledged frame again (the sender does not know which arrived)
        let una = self.qp(q).una;
        self.rdma_rewind(q, una, true);
        self.rdma_arm(q);
    }

    /// The sender of queue `q` saw its final ACK: what it still had queued (resends) is taken
    /// back, the transfer settles (its FCT ended when its last frame was in order at the receiver;
    /// until now a frame of it could still be sent, so its record was kept), and the queue closes
    /// once nothing of it is in flight.
    fn rdma_done(&mut self, q: FlowId) {
        let qp = self.qp(q);
        qp.done = true;
        qp.resend.clear();
        qp.rto_at = u64::MAX;
        let transfer = qp.transfer;
        let h = self.host_of[self.flows[q.idx()].src.idx()] as usize;
        let f = &mut self.flows[q.idx()];
        let (had, k) = (f.has_frame(), f.backlog);
        if k > 0 {
            let bytes = f.frames_bytes(k, 0, transfer, &self.transfers);
            f.fifo.clear();
            f.backlog = 0;
            f.generated_frames -= k;
            self.c.data_generated.0 -= k;
            self.c.data_generated.1 -= bytes;
            self.adjust_backlogged(h, q, had, false);
        }
        let settled = self.transfers.settle(transfer, self.now);
        debug_assert!(settled, "the final ACK: every frame in order at the receiver");
        self.queue_settling(q);
    }
}

/// What the receiver answers.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Reply {
    None,
    Ack,
    Nack,
}

/// Shift bit set `b` down by `n` bits (bit `n` becomes bit 0).
fn shift(b: &mut Vec<u64>, n: u64) {
    let (words, bits) = ((n / 64) as usize, n % 64);
    if words >= b.len() {
        b.clear();
        return;
    }
    b.drain(..words);
    if bits > 0 {
        for i in 0..b.len() {
            let hi = b.get(i + 1).copied().unwrap_or(0);
            b[i] = b[i] >> bits | hi << (64 - bits);
        }
    }
    while b.last() == Some(&0) {
        b.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_sets_shift_across_words() {
        let mut b = vec![0b1010u64, 1];
        shift(&mut b, 1);
        assert_eq!(b, vec![0b101 | 1 << 63]);
        shift(&mut b, 64);
        assert!(b.is_empty());
        let mut c = vec![0, 0, 4];
        shift(&mut c, 129);
        assert_eq!(c, vec![2]);
        assert!(bit(&c, 1) && !bit(&c, 0) && !bit(&c, 300));
    }
}
