//! Selective acknowledgements: the receiver's SACK blocks (RFC 2018) and the sender's scoreboard and
//! loss recovery (RFC 6675), for a [`super::TcpSender`] whose config has `sack` on.
//!
//! * **Receiver** (RFC 2018 §4): an ACK sent while out-of-order data is held carries up to
//!   [`MAX_SACK_BLOCKS`] blocks — the first the block holding the segment that triggered the ACK,
//!   then the most recently reported blocks still held, then the other held blocks, highest first.
//!   Four blocks fit the 40 option bytes of a TCP header without timestamps (cnsim models none).
//! * **Sender** (RFC 6675): a scoreboard of the SACKed ranges above the cumulative ACK;
//!   `IsLost(s)` holds when DupThresh discontiguous ranges or more than (DupThresh − 1)·SMSS SACKed
//!   bytes lie above `s`; loss recovery is entered on DupThresh duplicate ACKs (an ACK reporting
//!   new SACKed data) or as soon as `IsLost(HighACK)`; `RecoveryPoint` = HighData, cwnd = ssthresh =
//!   FlightSize/2; `pipe` counts the un-SACKed bytes not deemed lost plus those retransmitted; while
//!   `cwnd − pipe ≥ SMSS` the next segment is `NextSeg()` (rules 1, 2 and the rescue retransmission
//!   of rule 4 — not of data retransmitted already, which may still be in flight; the optional
//!   rule 3 is not used); recovery ends when the cumulative ACK covers RecoveryPoint, without
//!   deflation.
//! * After a retransmission timeout the scoreboard is kept and go-back-N skips the SACKed ranges, as
//!   Linux does (RFC 6675 §5.1 leaves this to implementations; RFC 2018 suggests discarding it in
//!   case the receiver reneges — cnsim's receiver never discards SACKed data). Outside recovery the
//!   window test counts the bytes in flight without the SACKed ones (Linux's `packets_in_flight`).

use super::{CcKind, Segment, TcpReceiver, TcpSender};
use crate::time::SimTime;

/// SACK blocks in one ACK: the option space of a TCP header without timestamps (RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 4;

/// The SACK blocks carried by one ACK: `[start, end)` byte ranges held by the receiver above its
/// cumulative acknowledgement, most important first (RFC 2018 §4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SackBlocks {
    pub n: u8,
    pub blocks: [(u64, u64); MAX_SACK_BLOCKS],
}

impl SackBlocks {
    /// The blocks in order.
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.blocks[..self.n as usize]
    }
    fn full(&self) -> bool {
        self.n as usize == MAX_SACK_BLOCKS
    }
    /// Append a block unless it is already listed (ignored when full).
    fn add(&mut self, b: (u64, u64)) {
        if !self.full() && !self.as_slice().contains(&b) {
            self.blocks[self.n as usize] = b;
            self.n += 1;
        }
    }
}

/// The sender's record of SACKed data: sorted, disjoint `[start, end)` ranges above the cumulative
/// acknowledgement (RFC 6675 §3, "scoreboard").
#[derive(Debug, Clone, Default)]
pub struct Scoreboard {
    ranges: Vec<(u64, u64)>,
    /// Bytes in `ranges`.
    sacked: u64,
}

impl Scoreboard {
    /// Record `blocks` clipped to `[una, max)` (RFC 6675 `Update()`); returns the bytes newly SACKed.
    pub fn update(&mut self, una: u64, max: u64, blocks: &[(u64, u64)]) -> u64 {
        let before = self.sacked;
        for &(s, e) in blocks {
            let (s, e) = (s.max(una), e.min(max));
            if s < e {
                self.insert(s, e);
            }
        }
        self.sacked - before
    }

    fn insert(&mut self, s: u64, e: u64) {
        // the ranges that touch [s, e) are merged into one
        let i = self.ranges.partition_point(|&(_, b)| b < s);
        let mut j = i;
        let (mut lo, mut hi) = (s, e);
        while j < self.ranges.len() && self.ranges[j].0 <= e {
            lo = lo.min(self.ranges[j].0);
            hi = hi.max(self.ranges[j].1);
            self.sacked -= self.ranges[j].1 - self.ranges[j].0;
            j += 1;
        }
        self.ranges.splice(i..j, [(lo, hi)]);
        self.sacked += hi - lo;
    }

    /// Forget what the cumulative acknowledgement `una` now covers.
    pub fn trim(&mut self, una: u64) {
        let k = self.ranges.partition_point(|&(_, e)| e <= una);
        for &(s, e) in &self.ranges[..k] {
            self.sacked -= e - s;
        }
        self.ranges.drain(..k);
        if let Some(first) = self.ranges.first_mut() {
            if first.0 < una {
                self.sacked -= una - first.0;
                first.0 = una;
            }
        }
    }

    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
    /// One past the highest SACKed byte (None: nothing SACKed).
    pub fn highest(&self) -> Option<u64> {
        self.ranges.last().map(|r| r.1)
    }

    /// The un-SACKed bytes below this offset are lost (RFC 6675 `IsLost`): the start of the highest
    /// range with `dupthresh` ranges, or more than `(dupthresh − 1)·mss` SACKed bytes, at or above it
    /// (`una` when there is none).
    pub fn lost_end(&self, una: u64, dupthresh: u32, mss: u64) -> u64 {
        let limit = (dupthresh.max(1) as u64 - 1) * mss;
        let mut cum = 0;
        for (k, &(s, e)) in self.ranges.iter().rev().enumerate() {
            cum += e - s;
            if cum > limit || k + 1 >= dupthresh as usize {
                return s.max(una);
            }
        }
        una
    }

    /// SACKed bytes in `[a, b)`.
    pub fn sacked_in(&self, a: u64, b: u64) -> u64 {
        if a >= b {
            return 0;
        }
        let i = self.ranges.partition_point(|&(_, e)| e <= a);
        self.ranges[i..].iter().take_while(|&&(s, _)| s < b).map(|&(s, e)| e.min(b) - s.max(a)).sum()
    }

    /// The first un-SACKed byte at or after `s` and the end of its hole (the next SACKed byte, or
    /// `u64::MAX` above the highest range).
    pub fn hole_from(&self, s: u64) -> (u64, u64) {
        let i = self.ranges.partition_point(|&(_, e)| e <= s);
        match self.ranges.get(i) {
            Some(&(a, e)) if a <= s => (e, self.ranges.get(i + 1).map_or(u64::MAX, |r| r.0)),
            Some(&(a, _)) => (s, a),
            None => (s, u64::MAX),
        }
    }
}

/// Which `NextSeg()` rule chose a segment (RFC 6675 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// The fast retransmission of HighACK on entering recovery (§5 step 4.3).
    First,
    /// Rule 1: a lost un-SACKed segment above HighRxt.
    Lost,
    /// Rule 2: new data.
    New,
    /// Rule 4: the rescue retransmission of the highest outstanding un-SACKed data.
    Rescue,
    /// Outside recovery: go-back-N after a timeout (skipping SACKed data) or new data.
    Plain,
}

impl TcpSender {
    fn mss64(&self) -> u64 {
        self.cfg.mss as u64
    }

    /// RFC 6675 `SetPipe()`: the un-SACKed bytes of `[HighACK, HighData)` not deemed lost, plus the
    /// un-SACKed bytes retransmitted (below HighRxt).
    pub(super) fn sack_set_pipe(&mut self) {
        let (una, max) = (self.snd_una, self.snd_max);
        let lost = self.sb.lost_end(una, self.cfg.dupack_threshold, self.mss64()).min(max);
        let unsacked = |a: u64, b: u64, sb: &Scoreboard| if a < b { b - a - sb.sacked_in(a, b) } else { 0 };
        let rxt = self.high_rxt.clamp(una, max);
        self.pipe = unsacked(lost, max, &self.sb) + unsacked(una, rxt, &self.sb);
    }

    /// Bytes in flight outside recovery: sent, not acknowledged and not SACKed.
    fn sack_flight(&self) -> u64 {
        self.flight() - self.sb.sacked_in(self.snd_una, self.snd_nxt)
    }

    /// The segment `NextSeg()` (in recovery) or the window (outside it) allows now, and its rule.
    fn sack_next(&self) -> Option<(Segment, Rule)> {
        let mss = self.mss64();
        let seg = |seq: u64, len: u64, rxt: bool| Segment { seq, len: len as u32, retransmission: rxt };
        if let Some(seq) = self.retx_pending {
            // step 4.3: the first retransmission goes out regardless of cwnd
            let (_, hole_end) = self.sb.hole_from(seq);
            let len = mss.min(self.snd_max - seq).min(hole_end - seq);
            return Some((seg(seq, len, true), Rule::First));
        }
        if !self.in_recovery {
            // go-back-N after a timeout resends the holes only; then new data
            let (from, hole_end) = self.sb.hole_from(self.snd_nxt);
            let (from, end) = if from < self.snd_max { (from, hole_end.min(self.snd_max)) } else { (self.snd_max.max(from), self.data_end) };
            let len = mss.min(end.saturating_sub(from));
            if len == 0 || self.sack_flight() + len > self.window() {
                return None;
            }
            return Some((seg(from, len, from < self.snd_max), Rule::Plain));
        }
        if self.cwnd < self.pipe + mss {
            return None; // (C): cwnd − pipe < 1 SMSS
        }
        // rule 1: the first un-SACKed byte above HighRxt that is lost and below the highest SACK
        let lost_end = self.sb.lost_end(self.snd_una, self.cfg.dupack_threshold, mss);
        let (s2, hole_end) = self.sb.hole_from(self.high_rxt.max(self.snd_una));
        if s2 < lost_end {
            return Some((seg(s2, mss.min(hole_end - s2).min(self.snd_max - s2), true), Rule::Lost));
        }
        // rule 2: new data, as the receive window allows
        let avail = self.data_end.saturating_sub(self.snd_max);
        if avail > 0 {
            let len = mss.min(avail);
            if self.snd_max + len - self.snd_una <= self.cfg.rcv_wnd_bytes {
                return Some((seg(self.snd_max, len, false), Rule::New));
            }
        }
        // rule 4: one rescue retransmission per recovery, holding the highest outstanding un-SACKed byte
        if self.rescue_rxt.is_none_or(|r| self.snd_una > r) {
            let ranges = self.sb.ranges();
            // `top`: one past the highest un-SACKed byte; `below`: the ranges under it
            let (top, below) = match ranges.last() {
                Some(&(s, e)) if e >= self.snd_max => (s, ranges.len() - 1),
                _ => (self.snd_max, ranges.len()),
            };
            // (cnsim: not when that byte was retransmitted already and may still be in flight)
            if top > self.snd_una && top > self.high_rxt {
                let hole_start = if below > 0 { ranges[below - 1].1.max(self.snd_una) } else { self.snd_una };
                let start = top.saturating_sub(mss).max(hole_start);
                return Some((seg(start, top - start, true), Rule::Rescue));
            }
        }
        None
    }

    pub(super) fn sack_peek(&self) -> Option<Segment> {
        self.sack_next().map(|(s, _)| s)
    }

    /// Commit the segment [`Self::sack_peek`] returns: HighRxt, HighData, pipe (RFC 6675 step C).
    pub(super) fn sack_send(&mut self, now: SimTime) -> Option<Segment> {
        let (seg, rule) = self.sack_next()?;
        let end = seg.seq + seg.len as u64;
        match rule {
            Rule::First => {
                self.retx_pending = None;
                self.high_rxt = end;
                self.rescue_rxt = Some(end.max(self.rescue_rxt.unwrap_or(0)));
            }
            Rule::Lost => self.high_rxt = end,
            Rule::Rescue => self.rescue_rxt = Some(self.recover),
            Rule::New => self.snd_nxt = end,
            Rule::Plain => self.snd_nxt = end,
        }
        if self.in_recovery {
            self.pipe += seg.len as u64;
        }
        self.sent(now, seg, end);
        Some(seg)
    }

    /// RFC 6675 §5 step 4: enter loss recovery.
    fn sack_enter_recovery(&mut self) {
        let mss = self.mss64();
        let flight = self.snd_max - self.snd_una;
        self.ssthresh = (flight / 2).max(2 * mss);
        self.cwnd = self.ssthresh;
        self.recover = self.snd_max;
        self.in_recovery = true;
        self.ca_acked = 0;
        self.high_rxt = self.snd_una;
        self.rescue_rxt = None;
        self.retx_pending = Some(self.snd_una);
        self.stats.fast_retransmits += 1;
        self.sack_set_pipe();
    }

    /// An ACK with cumulative acknowledgement `ack`, ECN-Echo `ece` and SACK `blocks` (RFC 6675 §5).
    pub(super) fn sack_on_ack(&mut self, now: SimTime, ack: u64, ece: bool, blocks: &[(u64, u64)]) -> super::AckOutcome {
        self.stats.acks_received += 1;
        let mss = self.mss64();
        let mut out = super::AckOutcome::default();
        if ack > self.snd_max || ack < self.snd_una {
            return out;
        }
        let newly = ack - self.snd_una;
        if let CcKind::Dctcp { g, .. } = self.cfg.cc {
            self.dctcp_on_ack(newly, ece, ack, g);
        }
        let new_sacked = self.sb.update(ack, self.snd_max, blocks);
        if newly > 0 {
            out.newly_acked = newly;
            self.snd_una = ack;
            self.snd_nxt = self.snd_nxt.max(ack);
            self.sb.trim(ack);
            self.dupacks = 0; // §5: a cumulative ACK resets DupAcks
            if let Some((end, t0)) = self.timed {
                if ack >= end {
                    self.timed = None;
                    self.rtt_sample((now - t0) as f64);
                }
            }
            if self.in_recovery && ack >= self.recover {
                self.in_recovery = false; // (A): recovery ends, cwnd stays at ssthresh
            } else if !self.in_recovery {
                self.grow_window(newly);
            }
            if self.retx_pending.is_some_and(|s| s < self.snd_una) {
                self.retx_pending = None;
            }
            self.restart_timer(now);
        }
        // §2: with SACK, an ACK reporting data not SACKed before is a duplicate ACK
        let dup = if blocks.is_empty() { newly == 0 } else { new_sacked > 0 };
        if self.in_recovery {
            self.sack_set_pipe(); // (B)
            out.retransmit = self.sack_peek().is_some_and(|s| s.retransmission);
        } else if dup && self.snd_max > self.snd_una {
            self.dupacks += 1;
            let lost = self.sb.lost_end(self.snd_una, self.cfg.dupack_threshold, mss) > self.snd_una;
            if ack >= self.recover && (self.dupacks >= self.cfg.dupack_threshold || lost) {
                self.sack_enter_recovery();
                out.retransmit = true;
            }
        }
        out
    }

    /// A retransmission timeout with SACK: RecoveryPoint = HighData, recovery ends (§5.1).
    pub(super) fn sack_on_rto(&mut self) {
        self.high_rxt = self.snd_una;
        self.rescue_rxt = None;
        self.pipe = 0;
    }
}

impl TcpReceiver {
    /// The SACK blocks of an ACK sent now (RFC 2018 §4); `trigger`: the start of the segment that
    /// caused it, if that segment was held out of order.
    pub(super) fn sack_blocks(&mut self, trigger: Option<u64>) -> SackBlocks {
        let mut b = SackBlocks::default();
        let containing = |ooo: &[(u64, u64)], s: u64| {
            let i = ooo.partition_point(|&(_, e)| e <= s);
            ooo.get(i).copied().filter(|&(a, _)| a <= s)
        };
        if let Some(r) = trigger.and_then(|s| containing(&self.ooo, s)) {
            b.add(r);
        }
        for &s in &self.sack_recent {
            if let Some(r) = containing(&self.ooo, s) {
                b.add(r);
            }
        }
        for &r in self.ooo.iter().rev() {
            b.add(r);
        }
        self.sack_recent.clear();
        self.sack_recent.extend(b.as_slice().iter().map(|r| r.0));
        b
    }
}

#[cfg(test)]
mod tests;
