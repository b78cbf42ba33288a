//! Tests of `tcp` (kept apart from the module's code).

use super::*;

const US: u64 = 1_000_000;
const MSS: u64 = 1460;

fn cfg(cc: CcKind) -> TcpConfig {
    TcpConfig {
        mss: MSS as u32,
        header_bytes: 40,
        init_cwnd_segments: 10,
        rcv_wnd_bytes: u64::MAX,
        init_ssthresh_bytes: u64::MAX,
        init_rto_ps: 1000 * US,
        min_rto_ps: 1000 * US,
        max_rto_ps: 64_000 * US,
        dupack_threshold: 3,
        cc,
        sack: false,
    }
}

/// Send everything the sender allows at `now`; returns the segments.
fn burst(s: &mut TcpSender, now: SimTime) -> Vec<Segment> {
    std::iter::from_fn(|| s.send(now)).collect()
}

/// Deliver `segs` to `r` (except those whose seq is in `lost`) and return the ACKs produced.
fn deliver(r: &mut TcpReceiver, now: SimTime, segs: &[Segment], lost: &[u64]) -> Vec<Ack> {
    let mut acks = Vec::new();
    for sg in segs.iter().filter(|sg| !lost.contains(&sg.seq)) {
        let o = r.on_segment(now, sg.seq, sg.len, false);
        acks.extend(o.acks.iter().flatten());
    }
    acks
}

#[test]
fn slow_start_doubles_the_window_each_round_trip() {
    let mut s = TcpSender::new(cfg(CcKind::NewReno));
    s.set_unbounded();
    let mut r = TcpReceiver::new(false, false, 0);
    let mut now = 0;
    for round in 0..4u32 {
        let segs = burst(&mut s, now);
        assert_eq!(segs.len() as u64, 10 << round, "round {round}");
        now += 100 * US;
        for a in deliver(&mut r, now, &segs, &[]) {
            s.on_ack(now, a.ack, a.ece);
        }
        assert_eq!(s.cwnd(), (20 << round) * MSS);
    }
    assert_eq!(s.stats.retransmitted_segments, 0);
    // the first round gave an RTT sample of 100 µs: RTO = max(min_rto, 100 + 4·50 µs)
    assert_eq!(s.rto_ps(), 1000 * US);
}

#[test]
fn congestion_avoidance_adds_one_segment_per_window() {
    let mut c = cfg(CcKind::NewReno);
    c.init_ssthresh_bytes = 10 * MSS;
    let mut s = TcpSender::new(c);
    s.set_unbounded();
    let mut r = TcpReceiver::new(false, false, 0);
    let mut now = 0;
    for round in 0..5u64 {
        let segs = burst(&mut s, now);
        assert_eq!(segs.len() as u64, 10 + round);
        now += 50 * US;
        for a in deliver(&mut r, now, &segs, &[]) {
            s.on_ack(now, a.ack, false);
        }
        assert_eq!(s.cwnd(), (11 + round) * MSS);
    }
}

#[test]
fn one_loss_is_repaired_by_fast_retransmit_without_a_timeout() {
    let mut s = TcpSender::new(cfg(CcKind::NewReno));
    s.write(10 * MSS);
    let mut r = TcpReceiver::new(false, false, 0);
    let segs = burst(&mut s, 0);
    assert_eq!(segs.len(), 10);
    let lost = 2 * MSS;
    let acks = deliver(&mut r, 10 * US, &segs, &[lost]);
    assert_eq!(acks.len(), 9);
    assert!(acks[2..].iter().all(|a| a.ack == lost), "duplicate ACKs point at the hole");
    let mut retx = false;
    for a in &acks {
        retx |= s.on_ack(10 * US, a.ack, false).retransmit;
    }
    assert!(retx && s.in_recovery());
    // the ACKs of segments 0 and 1 were new (slow start); at the third duplicate the flight is
    // 8 segments: ssthresh = 4, cwnd = ssthresh + 3, then + 4 for duplicates 4..7
    assert_eq!(s.ssthresh(), 4 * MSS);
    assert_eq!(s.cwnd(), (4 + 3 + 4) * MSS);
    let rt = s.send(10 * US).expect("retransmission is sent regardless of the window");
    assert_eq!((rt.seq, rt.retransmission), (lost, true));
    let acks = deliver(&mut r, 20 * US, &[rt], &[]);
    assert_eq!(acks, vec![Ack { ack: 10 * MSS, ece: false }]);
    s.on_ack(20 * US, acks[0].ack, false);
    assert!(!s.in_recovery());
    assert_eq!(s.acked(), 10 * MSS);
    // full ACK: cwnd = min(ssthresh, max(flight = 0, SMSS) + SMSS) (RFC 6582 §3.2 step 3)
    assert_eq!(s.cwnd(), 2 * MSS);
    assert_eq!((s.stats.fast_retransmits, s.stats.timeouts, s.stats.retransmitted_segments), (1, 0, 1));
    assert_eq!(s.rto_deadline(), None, "nothing outstanding: timer stopped");
}

#[test]
fn newreno_partial_acks_repair_several_losses_in_one_window() {
    let mut s = TcpSender::new(cfg(CcKind::NewReno));
    s.write(10 * MSS);
    let mut r = TcpReceiver::new(false, false, 0);
    let segs = burst(&mut s, 0);
    let lost = [2 * MSS, 5 * MSS, 7 * MSS];
    let mut t = 10 * US;
    let mut pending = deliver(&mut r, t, &segs, &lost);
    let mut rounds = 0;
    while s.acked() < 10 * MSS {
        rounds += 1;
        assert!(rounds < 10, "no progress");
        for a in std::mem::take(&mut pending) {
            s.on_ack(t, a.ack, false);
        }
        let out = burst(&mut s, t);
        t += 10 * US;
        pending = deliver(&mut r, t, &out, &[]);
    }
    assert_eq!(s.stats.fast_retransmits, 1, "one recovery episode for the whole window");
    assert_eq!(s.stats.timeouts, 0);
    assert_eq!(s.stats.retransmitted_segments, 3, "each hole resent exactly once");
    assert!(!s.in_recovery());
}

#[test]
fn rto_backs_off_exponentially_and_goes_back_n() {
    let mut c = cfg(CcKind::NewReno);
    c.max_rto_ps = 5000 * US;
    let mut s = TcpSender::new(c);
    s.write(4 * MSS);
    let segs = burst(&mut s, 0);
    assert_eq!(segs.len(), 4);
    let mut deadline = s.rto_deadline().expect("timer running");
    assert_eq!(deadline, 1000 * US);
    assert!(!s.on_rto(deadline - 1), "early call is stale");
    let mut expected = 1000 * US;
    for k in 0..4 {
        assert!(s.on_rto(deadline));
        expected = (expected * 2).min(5000 * US);
        assert_eq!(s.rto_ps(), expected, "back-off {k}");
        assert_eq!(s.cwnd(), MSS);
        let seg = s.send(deadline).expect("go-back-N resends from snd_una");
        assert_eq!((seg.seq, seg.retransmission), (0, true));
        assert!(s.send(deadline).is_none(), "loss window of one segment");
        // the timer was restarted at the expiry with the doubled RTO; sending does not move it
        assert_eq!(s.rto_deadline(), Some(deadline + expected));
        deadline += expected;
    }
    assert_eq!(s.stats.timeouts, 4);
}

#[test]
fn rtt_estimate_follows_rfc6298_and_karn() {
    let mut c = cfg(CcKind::NewReno);
    c.min_rto_ps = 1;
    let mut s = TcpSender::new(c);
    s.write(3 * MSS);
    s.send(0).unwrap();
    s.on_ack(100 * US, MSS, false);
    assert_eq!(s.srtt_ps(), Some(100.0 * US as f64));
    assert_eq!(s.rto_ps(), 300 * US);
    // second sample of 200 µs: rttvar = 0.75·50 + 0.25·100 = 62.5; srtt = 112.5; rto = 362.5
    s.send(100 * US).unwrap();
    s.on_ack(300 * US, 2 * MSS, false);
    assert_eq!(s.rto_ps(), 362_500_000);
    // a retransmitted segment gives no sample (Karn)
    s.send(300 * US).unwrap();
    let d = s.rto_deadline().unwrap();
    assert!(s.on_rto(d));
    s.send(d).unwrap();
    let before = s.srtt_ps();
    s.on_ack(d + 5 * US, 3 * MSS, false);
    assert_eq!(s.srtt_ps(), before);
}

#[test]
fn dctcp_alpha_tracks_the_marked_fraction_and_cuts_once_per_window() {
    let g = 1.0 / 16.0;
    let mut s = TcpSender::new(cfg(CcKind::Dctcp { g, alpha_init: 1.0 }));
    s.set_unbounded();
    let mut now = 0;
    // ACK-clocked rounds: each ACK releases what the window allows, sent in the next round
    let mut flight = burst(&mut s, now);
    let mut k = 0u64;
    for round in 0..300 {
        now += 20 * US;
        let cuts_before = s.stats.ecn_reductions;
        let mut next = Vec::new();
        for sg in &flight {
            k += 1;
            // every fourth ACK carries ECE: F = 1/4 of the acknowledged bytes
            s.on_ack(now, sg.seq + sg.len as u64, k % 4 == 0);
            next.extend(burst(&mut s, now));
        }
        assert!(s.stats.ecn_reductions - cuts_before <= 1, "round {round}: more than one reduction");
        flight = next;
    }
    assert!((s.alpha() - 0.25).abs() < 0.03, "alpha {} should track F = 0.25", s.alpha());
    assert!(s.stats.ecn_reductions > 250, "one reduction per window of data");
    assert_eq!(s.stats.retransmitted_segments, 0);
}

#[test]
fn dctcp_without_marks_decays_alpha_and_never_cuts() {
    let mut s = TcpSender::new(cfg(CcKind::Dctcp { g: 1.0 / 16.0, alpha_init: 1.0 }));
    s.set_unbounded();
    let mut now = 0;
    for _ in 0..20 {
        let segs = burst(&mut s, now);
        now += 20 * US;
        for sg in &segs {
            s.on_ack(now, sg.seq + sg.len as u64, false);
        }
    }
    assert_eq!(s.stats.ecn_reductions, 0);
    assert!(s.alpha() < 0.3, "alpha {}", s.alpha());
}

#[test]
fn receiver_buffers_out_of_order_data_and_acks_duplicates_at_once() {
    let mut r = TcpReceiver::new(false, true, 40 * US);
    let seg = |i: u64| (i * MSS, MSS as u32);
    // in order, delayed: first segment arms the timer, second is acked
    let o = r.on_segment(0, seg(0).0, seg(0).1, false);
    assert_eq!(o.acks, [None, None]);
    assert_eq!(o.delack_at, Some(40 * US));
    let o = r.on_segment(1, seg(1).0, seg(1).1, false);
    assert_eq!(o.acks[0], Some(Ack { ack: 2 * MSS, ece: false }));
    // a hole: segments 3 and 4 arrive, each acked at once with the hole's offset
    for i in [3, 4] {
        let o = r.on_segment(2, seg(i).0, seg(i).1, false);
        assert_eq!(o.acks[0], Some(Ack { ack: 2 * MSS, ece: false }));
    }
    // the hole fills: everything through segment 4 is acknowledged at once
    let o = r.on_segment(3, seg(2).0, seg(2).1, false);
    assert_eq!(o.acks[0], Some(Ack { ack: 5 * MSS, ece: false }));
    assert_eq!(r.rcv_nxt(), 5 * MSS);
    // a duplicate is acked at once
    let o = r.on_segment(4, seg(1).0, seg(1).1, false);
    assert_eq!(o.acks[0], Some(Ack { ack: 5 * MSS, ece: false }));
    // the delayed-ACK timer acks a lone segment
    let o = r.on_segment(10, seg(5).0, seg(5).1, false);
    let t = o.delack_at.unwrap();
    assert_eq!(r.on_delack_timer(t - 1), None);
    assert_eq!(r.on_delack_timer(t), Some(Ack { ack: 6 * MSS, ece: false }));
    assert_eq!(r.bytes_received, 6 * MSS);
}

#[test]
fn dctcp_receiver_echoes_the_ce_state_exactly() {
    let mut r = TcpReceiver::new(true, true, 40 * US);
    let o = r.on_segment(0, 0, MSS as u32, false);
    assert_eq!(o.acks, [None, None]);
    // CE appears while one segment waits: old state acked first, then the new one at once
    let o = r.on_segment(1, MSS, MSS as u32, true);
    assert_eq!(o.acks[0], Some(Ack { ack: MSS, ece: false }));
    assert_eq!(o.acks[1], Some(Ack { ack: 2 * MSS, ece: true }));
    // CE persists: ordinary delayed ACKs carry ECE
    r.on_segment(2, 2 * MSS, MSS as u32, true);
    let o = r.on_segment(3, 3 * MSS, MSS as u32, true);
    assert_eq!(o.acks[0], Some(Ack { ack: 4 * MSS, ece: true }));
    // a receiver without ECN never echoes
    let mut plain = TcpReceiver::new(false, false, 0);
    let o = plain.on_segment(0, 0, MSS as u32, true);
    assert_eq!(o.acks[0], Some(Ack { ack: MSS, ece: false }));
}
