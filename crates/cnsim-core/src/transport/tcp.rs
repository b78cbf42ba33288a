//! TCP NewReno and DCTCP as pure state machines (caller-driven time, no network inside).
//!
//! The engine owns the wire: it asks a [`TcpSender`] for the next segment when the NIC and the
//! flow's rate limiter allow, hands every ACK that reaches the source to [`TcpSender::on_ack`],
//! and fires [`TcpSender::on_rto`] at [`TcpSender::rto_deadline`]. At the destination a
//! [`TcpReceiver`] turns every arriving segment into zero or one ACK. Sequence numbers are byte
//! offsets in u64 (no wrap-around in a simulation). A segment carries at most `mss` payload bytes;
//! the frame on the wire is payload + `header_bytes`.
//!
//! Rules implemented, each cited at its code:
//! * RFC 5681 — slow start, congestion avoidance (byte counting, RFC 3465 with L = 1 SMSS), fast
//!   retransmit on the third duplicate ACK, immediate ACK of out-of-order segments, delayed ACK.
//! * RFC 6582 — NewReno fast recovery: `recover`, partial ACKs (retransmit the next hole, deflate),
//!   full ACK (exit with cwnd = ssthresh), no new recovery until `recover` is acknowledged.
//! * RFC 6298 — SRTT/RTTVAR, RTO = SRTT + 4·RTTVAR clamped to [min_rto, max_rto], Karn's rule
//!   (no sample from retransmitted data), exponential back-off, timer restarted on new ACKs.
//! * RFC 8257 — DCTCP: α ← (1 − g)·α + g·F once per observation window (≈ one RTT of data),
//!   cwnd ← cwnd·(1 − α/2) at most once per window on ECE; the receiver echoes the CE state of
//!   the data it acknowledges and ACKs at once when that state changes.
//! * RFC 2018 / RFC 6675 — selective acknowledgements and SACK-based loss recovery, when the
//!   config's `sack` is on ([`sack`]); with it off the sender is NewReno exactly as above.

use crate::time::SimTime;

pub mod sack;
pub use sack::{SackBlocks, Scoreboard, MAX_SACK_BLOCKS};

/// Congestion-control law of a sender.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CcKind {
    /// RFC 5681 + RFC 6582. ECE is ignored (the flow is not ECN-capable).
    NewReno,
    /// RFC 8257 with estimation gain `g` (1/16 in the RFC) and initial α.
    Dctcp { g: f64, alpha_init: f64 },
}

/// Static parameters of a TCP connection (all explicit: the IR carries no defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpConfig {
    /// Payload bytes of a full segment (1460 with a 40-byte header in a 1500-byte frame).
    pub mss: u32,
    /// TCP/IP header bytes added to every segment and carried by every ACK.
    pub header_bytes: u32,
    /// Initial congestion window, in full segments (RFC 6928: 10; RFC 5681: 2–4).
    pub init_cwnd_segments: u32,
    /// Receive window advertised by the receiver, bytes (fixed: no window scaling dynamics).
    pub rcv_wnd_bytes: u64,
    /// Initial slow-start threshold, bytes (u64::MAX = "arbitrarily high", RFC 5681 §3.1).
    pub init_ssthresh_bytes: u64,
    /// Retransmission timeout before any RTT sample, ps (RFC 6298 §2.1 says 1 s).
    pub init_rto_ps: u64,
    /// Lower bound of the RTO, ps (RFC 6298: 1 s; data centres use 1 ms or less; Linux 200 ms).
    pub min_rto_ps: u64,
    /// Upper bound of the RTO after back-off, ps (RFC 6298 §2.5: at least 60 s).
    pub max_rto_ps: u64,
    /// Duplicate ACKs that trigger fast retransmit (3).
    pub dupack_threshold: u32,
    pub cc: CcKind,
    /// Selective acknowledgements (RFC 2018) and SACK-based loss recovery (RFC 6675) instead of
    /// NewReno's partial ACKs; the receiver must send SACK blocks ([`TcpReceiver::set_sack`]).
    pub sack: bool,
}

/// A segment the sender puts on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub seq: u64,
    pub len: u32,
    /// True when (part of) these bytes were sent before.
    pub retransmission: bool,
}

/// Per-connection counters reported in the outputs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpStats {
    pub segments_sent: u64,
    pub retransmitted_segments: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    pub ecn_reductions: u64,
    pub acks_received: u64,
}

/// What an ACK did (for the engine's bookkeeping).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AckOutcome {
    /// Bytes newly acknowledged by this ACK.
    pub newly_acked: u64,
    /// A fast retransmission (or a NewReno partial-ACK retransmission) is now pending.
    pub retransmit: bool,
}

/// The sending side of one connection.
#[derive(Debug, Clone)]
pub struct TcpSender {
    cfg: TcpConfig,
    /// One past the last byte the application has handed over (u64::MAX = unbounded source).
    data_end: u64,
    snd_una: u64,
    snd_nxt: u64,
    /// One past the highest byte ever sent.
    snd_max: u64,
    cwnd: u64,
    ssthresh: u64,
    /// Congestion-avoidance byte counter (RFC 3465).
    ca_acked: u64,
    dupacks: u32,
    in_recovery: bool,
    /// RFC 6582 `recover`: snd_max when recovery (or the last timeout) began.
    recover: u64,
    /// A segment starting at this sequence number must be (re)sent before anything else.
    retx_pending: Option<u64>,
    // RTT estimation (RFC 6298) — one timed segment at a time.
    srtt_ps: Option<f64>,
    rttvar_ps: f64,
    rto_ps: u64,
    timed: Option<(u64, SimTime)>,
    rto_deadline: Option<SimTime>,
    // DCTCP (RFC 8257 §3.3–3.4)
    alpha: f64,
    window_end: u64,
    bytes_acked_win: u64,
    bytes_marked_win: u64,
    /// No further ECN reduction until snd_una passes this sequence number.
    cwr_end: u64,
    // SACK (RFC 6675, `cfg.sack`): scoreboard, HighRxt, RescueRxt, pipe
    sb: Scoreboard,
    high_rxt: u64,
    rescue_rxt: Option<u64>,
    pipe: u64,
    pub stats: TcpStats,
}

impl TcpSender {
    pub fn new(cfg: TcpConfig) -> Self {
        let alpha = match cfg.cc {
            CcKind::Dctcp { alpha_init, .. } => alpha_init,
            CcKind::NewReno => 0.0,
        };
        TcpSender {
            data_end: 0,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            cwnd: cfg.init_cwnd_segments.max(1) as u64 * cfg.mss as u64,
            ssthresh: cfg.init_ssthresh_bytes,
            ca_acked: 0,
            dupacks: 0,
            in_recovery: false,
            recover: 0,
            retx_pending: None,
            srtt_ps: None,
            rttvar_ps: 0.0,
            rto_ps: cfg.init_rto_ps.clamp(cfg.min_rto_ps, cfg.max_rto_ps),
            timed: None,
            rto_deadline: None,
            alpha,
            window_end: 0,
            bytes_acked_win: 0,
            bytes_marked_win: 0,
            cwr_end: 0,
            sb: Scoreboard::default(),
            high_rxt: 0,
            rescue_rxt: None,
            pipe: 0,
            stats: TcpStats::default(),
            cfg,
        }
    }

    /// The application hands over `bytes` more bytes (a transfer of a given size).
    pub fn write(&mut self, bytes: u64) {
        self.data_end = self.data_end.saturating_add(bytes);
    }
    /// The application always has data (a long-lived flow).
    pub fn set_unbounded(&mut self) {
        self.data_end = u64::MAX;
    }
    /// The application stops writing: nothing beyond what has been sent (an ON/OFF source off).
    pub fn stop_writing(&mut self) {
        self.data_end = self.snd_max;
    }

    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }
    /// Bytes cumulatively acknowledged (everything below this offset has arrived).
    pub fn acked(&self) -> u64 {
        self.snd_una
    }
    /// Bytes handed over by the application.
    pub fn written(&self) -> u64 {
        self.data_end
    }
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }
    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
    pub fn rto_ps(&self) -> u64 {
        self.rto_ps
    }
    pub fn srtt_ps(&self) -> Option<f64> {
        self.srtt_ps
    }
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }
    /// Bytes sent and not yet acknowledged (as the sender counts them after go-back-N).
    pub fn flight(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }
    /// When the retransmission timer expires (None = not running).
    pub fn rto_deadline(&self) -> Option<SimTime> {
        self.rto_deadline
    }
    /// The SACK scoreboard (empty without SACK).
    pub fn scoreboard(&self) -> &Scoreboard {
        &self.sb
    }
    /// RFC 6675 `pipe` as last computed or advanced (SACK recovery only).
    pub fn pipe(&self) -> u64 {
        self.pipe
    }

    fn window(&self) -> u64 {
        self.cwnd.min(self.cfg.rcv_wnd_bytes)
    }

    /// The segment [`Self::send`] would emit now, without committing it.
    pub fn peek(&self) -> Option<Segment> {
        if self.cfg.sack {
            return self.sack_peek();
        }
        let mss = self.cfg.mss as u64;
        if let Some(seq) = self.retx_pending {
            // RFC 5681 §3.2 step 4 / RFC 6582 §3.2 step 3: the retransmission goes out regardless
            // of cwnd.
            let len = mss.min(self.snd_max - seq);
            return Some(Segment { seq, len: len as u32, retransmission: true });
        }
        let avail = self.data_end.saturating_sub(self.snd_nxt);
        if avail == 0 {
            return None;
        }
        let len = mss.min(avail);
        // no silly segments: a segment goes only when it fits the window whole
        if self.flight() + len > self.window() {
            return None;
        }
        Some(Segment { seq: self.snd_nxt, len: len as u32, retransmission: self.snd_nxt < self.snd_max })
    }

    /// True when a segment may be sent now (window, data and pending retransmission).
    pub fn can_send(&self) -> bool {
        self.peek().is_some()
    }

    /// Commit the next segment at `now` (the engine starts its transmission).
    pub fn send(&mut self, now: SimTime) -> Option<Segment> {
        if self.cfg.sack {
            return self.sack_send(now);
        }
        let seg = self.peek()?;
        let end = seg.seq + seg.len as u64;
        if self.retx_pending == Some(seg.seq) {
            self.retx_pending = None;
        } else {
            self.snd_nxt = end;
        }
        self.sent(now, seg, end);
        Some(seg)
    }

    /// Bookkeeping of a segment `seg` (ending at `end`) committed at `now`: counters, Karn's rule,
    /// the timed segment, HighData and the retransmission timer.
    fn sent(&mut self, now: SimTime, seg: Segment, end: u64) {
        if seg.retransmission {
            self.stats.retransmitted_segments += 1;
            // Karn: a timed segment that is retransmitted gives no sample
            if matches!(self.timed, Some((s, _)) if s >= seg.seq && s < end) {
                self.timed = None;
            }
        } else if self.timed.is_none() {
            self.timed = Some((end, now));
        }
        self.snd_max = self.snd_max.max(end);
        self.stats.segments_sent += 1;
        // RFC 6298 §5.1: start the timer when it is not running
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rto_ps);
        }
    }

    fn rtt_sample(&mut self, r: f64) {
        // RFC 6298 §2.2–2.3 (clock granularity G taken as 1 ps)
        match self.srtt_ps {
            None => {
                self.srtt_ps = Some(r);
                self.rttvar_ps = r / 2.0;
            }
            Some(s) => {
                self.rttvar_ps = 0.75 * self.rttvar_ps + 0.25 * (s - r).abs();
                self.srtt_ps = Some(0.875 * s + 0.125 * r);
            }
        }
        let rto = self.srtt_ps.unwrap_or(r) + (4.0 * self.rttvar_ps).max(1.0);
        self.rto_ps = (rto.ceil() as u64).clamp(self.cfg.min_rto_ps, self.cfg.max_rto_ps);
    }

    fn restart_timer(&mut self, now: SimTime) {
        // RFC 6298 §5.2–5.3
        self.rto_deadline = if self.snd_una < self.snd_max { Some(now + self.rto_ps) } else { None };
    }

    /// Process an ACK with cumulative acknowledgement `ack` and ECN-Echo `ece`.
    pub fn on_ack(&mut self, now: SimTime, ack: u64, ece: bool) -> AckOutcome {
        self.on_ack_sack(now, ack, ece, &[])
    }

    /// [`Self::on_ack`] of an ACK carrying SACK `blocks` (used only with `cfg.sack`).
    pub fn on_ack_sack(&mut self, now: SimTime, ack: u64, ece: bool, blocks: &[(u64, u64)]) -> AckOutcome {
        if self.cfg.sack {
            return self.sack_on_ack(now, ack, ece, blocks);
        }
        self.stats.acks_received += 1;
        let mss = self.cfg.mss as u64;
        let mut out = AckOutcome::default();
        if ack > self.snd_max || ack < self.snd_una {
            return out; // data never sent, or an old ACK overtaken (neither happens on one path)
        }
        let newly = ack - self.snd_una;
        if let CcKind::Dctcp { g, .. } = self.cfg.cc {
            self.dctcp_on_ack(newly, ece, ack, g);
        }
        if newly == 0 {
            // duplicate ACK (RFC 5681 §2: no new data acknowledged while data is outstanding)
            if self.snd_max > self.snd_una {
                self.dupacks += 1;
                if self.in_recovery {
                    self.cwnd += mss; // RFC 6582 §3.2 step 4: inflate
                } else if self.dupacks == self.cfg.dupack_threshold && ack >= self.recover {
                    // RFC 6582 §3.2 step 2: only when the ACK covers more than `recover` (here
                    // `recover` is one past the RFC's, so ">" becomes ">=")
                    self.enter_recovery();
                    out.retransmit = true;
                }
            }
            return out;
        }
        out.newly_acked = newly;
        self.snd_una = ack;
        if self.snd_nxt < ack {
            self.snd_nxt = ack; // a late ACK for data sent before a go-back-N
        }
        if let Some((end, t0)) = self.timed {
            if ack >= end {
                self.timed = None;
                self.rtt_sample((now - t0) as f64);
            }
        }
        if self.in_recovery {
            if ack >= self.recover {
                // full ACK (RFC 6582 §3.2 step 3, first option): deflate to ssthresh
                self.in_recovery = false;
                self.dupacks = 0;
                self.cwnd = self.ssthresh.min(self.flight().max(mss) + mss).max(mss);
            } else {
                // partial ACK: retransmit the first unacknowledged segment, deflate by the amount
                // acknowledged and add back one SMSS (RFC 6582 §3.2 step 3, second option)
                self.retx_pending = Some(self.snd_una);
                out.retransmit = true;
                self.cwnd = self.cwnd.saturating_sub(newly);
                if newly >= mss {
                    self.cwnd += mss;
                }
                self.cwnd = self.cwnd.max(mss);
                // the timer restarts on every partial ACK below ("Slow-but-Steady", RFC 6582 §4)
            }
        } else {
            self.dupacks = 0;
            self.grow_window(newly);
        }
        if self.retx_pending.is_some_and(|s| s < self.snd_una) {
            self.retx_pending = None;
        }
        self.restart_timer(now);
        out
    }

    /// Slow start or congestion avoidance for `newly` acknowledged bytes.
    fn grow_window(&mut self, newly: u64) {
        let mss = self.cfg.mss as u64;
        if self.cwnd < self.ssthresh {
            // slow start: + min(N, SMSS) per ACK (RFC 5681 §3.1, RFC 3465 L = 1)
            self.cwnd += newly.min(mss);
        } else {
            // congestion avoidance: + SMSS per cwnd of acknowledged bytes
            self.ca_acked += newly;
            if self.ca_acked >= self.cwnd {
                self.ca_acked -= self.cwnd;
                self.cwnd += mss;
            }
        }
    }

    fn enter_recovery(&mut self) {
        // RFC 5681 §3.2 step 2 (flight size = data outstanding) and RFC 6582 §3.2 step 2
        let mss = self.cfg.mss as u64;
        let flight = self.snd_max - self.snd_una;
        self.ssthresh = (flight / 2).max(2 * mss);
        self.recover = self.snd_max;
        self.retx_pending = Some(self.snd_una);
        self.cwnd = self.ssthresh + self.cfg.dupack_threshold as u64 * mss;
        self.in_recovery = true;
        self.ca_acked = 0;
        self.stats.fast_retransmits += 1;
    }

    fn dctcp_on_ack(&mut self, newly: u64, ece: bool, ack: u64, g: f64) {
        // RFC 8257 §3.3: count acknowledged and marked bytes; update α once per window
        self.bytes_acked_win += newly;
        if ece {
            self.bytes_marked_win += newly;
        }
        if ack >= self.window_end && ack > 0 {
            let f = if self.bytes_acked_win > 0 { self.bytes_marked_win as f64 / self.bytes_acked_win as f64 } else { 0.0 };
            self.alpha = (1.0 - g) * self.alpha + g * f;
            self.bytes_acked_win = 0;
            self.bytes_marked_win = 0;
            self.window_end = self.snd_nxt.max(ack + 1);
        }
        // RFC 8257 §3.4: on ECE, cut by α/2 at most once per window of data
        if ece && ack >= self.cwr_end && !self.in_recovery {
            let mss = self.cfg.mss as u64;
            let cut = (self.cwnd as f64 * (1.0 - self.alpha / 2.0)) as u64;
            self.cwnd = cut.max(mss);
            self.ssthresh = self.cwnd.max(2 * mss);
            self.ca_acked = 0;
            self.cwr_end = self.snd_max.max(ack + 1);
            self.stats.ecn_reductions += 1;
        }
    }

    /// The retransmission timer fired at `now` (the engine calls this only at the deadline).
    /// Returns false when the timer is stale (no longer set for `now`).
    pub fn on_rto(&mut self, now: SimTime) -> bool {
        if self.rto_deadline != Some(now) {
            return false;
        }
        let mss = self.cfg.mss as u64;
        // RFC 5681 §3.1 eq. (4) and loss window; RFC 6298 §5.5–5.7; RFC 6582 §4 (recover)
        let flight = self.snd_max - self.snd_una;
        self.ssthresh = (flight / 2).max(2 * mss);
        self.cwnd = mss;
        self.ca_acked = 0;
        self.recover = self.snd_max;
        self.in_recovery = false;
        self.dupacks = 0;
        self.snd_nxt = self.snd_una; // go-back-N: everything outstanding is resent
        self.retx_pending = None;
        self.timed = None;
        self.rto_ps = self.rto_ps.saturating_mul(2).min(self.cfg.max_rto_ps);
        self.rto_deadline = Some(now + self.rto_ps);
        self.stats.timeouts += 1;
        if self.cfg.sack {
            self.sack_on_rto();
        }
        true
    }
}

/// An ACK the receiver sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    /// Cumulative acknowledgement: every byte below it has arrived.
    pub ack: u64,
    /// ECN-Echo.
    pub ece: bool,
}

/// What the receiver does with an arriving segment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RxOutcome {
    /// ACKs to send now (a DCTCP CE-state change can require two: the pending delayed ACK with
    /// the old state, then one for the new segment).
    pub acks: [Option<Ack>; 2],
    /// (Re)arm the delayed-ACK timer at this time.
    pub delack_at: Option<SimTime>,
    /// SACK blocks of the ACKs sent now (with SACK on and data held out of order; else empty).
    pub sack: SackBlocks,
}

/// The receiving side of one connection.
#[derive(Debug, Clone)]
pub struct TcpReceiver {
    rcv_nxt: u64,
    /// Out-of-order data held, as sorted disjoint [start, end) intervals.
    ooo: Vec<(u64, u64)>,
    /// Delayed ACKs (RFC 5681 §4.2: every second full segment, or after the timeout).
    delayed: bool,
    delack_timeout_ps: u64,
    unacked_segments: u32,
    delack_deadline: Option<SimTime>,
    /// CE state of the data not yet acknowledged (DCTCP receiver, RFC 8257 §3.2).
    ce_state: bool,
    ecn: bool,
    /// SACK blocks in ACKs (RFC 2018); the starts of the blocks last reported, most recent first.
    sack: bool,
    sack_recent: Vec<u64>,
    pub acks_sent: u64,
    pub bytes_received: u64,
}

impl TcpReceiver {
    /// `ecn`: echo CE as ECE (DCTCP); `delayed`: delayed ACKs with the given timeout.
    pub fn new(ecn: bool, delayed: bool, delack_timeout_ps: u64) -> Self {
        TcpReceiver {
            rcv_nxt: 0,
            ooo: Vec::new(),
            delayed,
            delack_timeout_ps,
            unacked_segments: 0,
            delack_deadline: None,
            ce_state: false,
            ecn,
            sack: false,
            sack_recent: Vec::new(),
            acks_sent: 0,
            bytes_received: 0,
        }
    }

    /// Send SACK blocks (RFC 2018) with every ACK while out-of-order data is held.
    pub fn set_sack(&mut self, on: bool) {
        self.sack = on;
    }

    /// Every byte below this offset has arrived in order.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    pub fn delack_deadline(&self) -> Option<SimTime> {
        self.delack_deadline
    }

    fn ack_now(&mut self) -> Ack {
        self.unacked_segments = 0;
        self.delack_deadline = None;
        self.acks_sent += 1;
        Ack { ack: self.rcv_nxt, ece: self.ecn && self.ce_state }
    }

    /// A data segment [seq, seq + len) arrived at `now`, CE-marked or not.
    pub fn on_segment(&mut self, now: SimTime, seq: u64, len: u32, ce: bool) -> RxOutcome {
        let mut out = RxOutcome::default();
        let end = seq + len as u64;
        // RFC 8257 §3.2: when the CE state changes, ACK at once — first the data received so far
        // with the old state (if an ACK was being delayed), then this segment with the new one
        let mut ce_changed = false;
        if self.ecn && ce != self.ce_state {
            if self.unacked_segments > 0 {
                out.acks[0] = Some(self.ack_now());
            }
            self.ce_state = ce;
            ce_changed = true;
        }
        let in_order = seq <= self.rcv_nxt && end > self.rcv_nxt;
        let had_holes = !self.ooo.is_empty();
        if in_order {
            self.bytes_received += end - self.rcv_nxt;
            self.rcv_nxt = end;
            // absorb buffered out-of-order data now contiguous
            while let Some(&(s, e)) = self.ooo.first() {
                if s > self.rcv_nxt {
                    break;
                }
                if e > self.rcv_nxt {
                    self.bytes_received += e - self.rcv_nxt;
                    self.rcv_nxt = e;
                }
                self.ooo.remove(0);
            }
        } else if seq > self.rcv_nxt {
            self.insert_ooo(seq, end);
        }
        // RFC 5681 §4.2: immediate ACK for an out-of-order segment, a duplicate, or one that fills
        // a hole; otherwise (delayed ACKs) every second full segment or at the timeout
        let immediate = !in_order || had_holes || !self.delayed || ce_changed;
        self.unacked_segments += 1;
        let slot = if out.acks[0].is_some() { 1 } else { 0 };
        if immediate || self.unacked_segments >= 2 {
            out.acks[slot] = Some(self.ack_now());
            if self.sack && !self.ooo.is_empty() {
                let held = !in_order && seq > self.rcv_nxt;
                out.sack = self.sack_blocks(held.then_some(seq));
            }
        } else if self.delack_deadline.is_none() {
            let t = now + self.delack_timeout_ps;
            self.delack_deadline = Some(t);
            out.delack_at = Some(t);
        }
        out
    }

    /// The delayed-ACK timer fired at `now`; returns the ACK to send, if still due.
    pub fn on_delack_timer(&mut self, now: SimTime) -> Option<Ack> {
        if self.delack_deadline != Some(now) || self.unacked_segments == 0 {
            return None;
        }
        Some(self.ack_now())
    }

    fn insert_ooo(&mut self, s: u64, e: u64) {
        let i = self.ooo.partition_point(|&(a, _)| a < s);
        self.ooo.insert(i, (s, e));
        // merge overlapping / adjacent intervals
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.ooo.len());
        for &(a, b) in &self.ooo {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        self.ooo = merged;
    }
}

#[cfg(test)]
mod tests;
