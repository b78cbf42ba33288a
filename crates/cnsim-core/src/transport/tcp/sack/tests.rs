//! Tests of SACK (RFC 2018 blocks, RFC 6675 scoreboard and recovery).

use super::super::{Ack, CcKind, Segment, TcpConfig, TcpReceiver, TcpSender};
use super::*;

const US: u64 = 1_000_000;
const MSS: u64 = 1460;

fn cfg() -> TcpConfig {
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
        cc: CcKind::NewReno,
        sack: true,
    }
}

fn receiver() -> TcpReceiver {
    let mut r = TcpReceiver::new(false, false, 0);
    r.set_sack(true);
    r
}

/// Deliver `segs` (except those starting at an offset in `lost`): each ACK with its SACK blocks.
fn deliver(r: &mut TcpReceiver, now: SimTime, segs: &[Segment], lost: &[u64]) -> Vec<(Ack, SackBlocks)> {
    let mut acks = Vec::new();
    for sg in segs.iter().filter(|sg| !lost.contains(&sg.seq)) {
        let o = r.on_segment(now, sg.seq, sg.len, false);
        acks.extend(o.acks.iter().flatten().map(|a| (*a, o.sack)));
    }
    acks
}

fn burst(s: &mut TcpSender, now: SimTime) -> Vec<Segment> {
    std::iter::from_fn(|| s.send(now)).collect()
}

#[test]
fn the_scoreboard_matches_a_byte_by_byte_reference() {
    // random blocks over [una, max): every query against a bitmap of SACKed bytes
    let mut rng = crate::rng::Stream::new(7, 0, 0);
    for round in 0..200 {
        let (una, max) = (1000 + rng.below(50), 1200 + rng.below(300));
        let mut sb = Scoreboard::default();
        let mut bits = vec![false; 2000];
        for _ in 0..1 + rng.below(12) {
            let s = rng.below(1600);
            let e = s + 1 + rng.below(80);
            let before = bits.iter().filter(|&&b| b).count() as u64;
            for (k, b) in bits.iter_mut().enumerate().take(e.min(max) as usize).skip(s.max(una) as usize) {
                let _ = k;
                *b = true;
            }
            let after = bits.iter().filter(|&&b| b).count() as u64;
            assert_eq!(sb.update(una, max, &[(s, e)]), after - before, "round {round}: newly SACKed");
        }
        let trim = una + rng.below(100);
        sb.trim(trim);
        for b in bits.iter_mut().take(trim as usize) {
            *b = false;
        }
        let sacked = |a: u64, b: u64| (a..b).filter(|&k| bits[k as usize]).count() as u64;
        for _ in 0..50 {
            let a = rng.below(1700);
            let b = a + rng.below(200);
            assert_eq!(sb.sacked_in(a, b), sacked(a, b), "round {round}: sacked_in({a}, {b})");
            let (h, end) = sb.hole_from(a);
            let want = (a..2000).find(|&k| !bits[k as usize]).unwrap();
            assert_eq!(h, want, "round {round}: hole_from({a})");
            let want_end = (h..2000).find(|&k| bits[k as usize]).unwrap_or(u64::MAX);
            assert_eq!(end, want_end, "round {round}: end of the hole at {h}");
        }
        // IsLost(s): 3 ranges or more than 2 × 10 SACKed bytes above s (mss 10 here)
        let lost_end = sb.lost_end(trim, 3, 10);
        for s in trim..1600 {
            if bits[s as usize] {
                continue;
            }
            let above = sacked(s + 1, 2000);
            let runs = (s + 1..2000).filter(|&k| bits[k as usize] && !bits[k as usize - 1]).count();
            let lost = above > 20 || runs >= 3;
            assert_eq!(s < lost_end, lost, "round {round}: IsLost({s})");
        }
    }
}

#[test]
fn receiver_blocks_follow_rfc2018() {
    let mut r = receiver();
    let seg = |i: u64| (i * MSS, MSS as u32);
    r.on_segment(0, seg(0).0, seg(0).1, false);
    // segments 2, 4, 6, 8, 10 arrive: each ACK's first block holds the segment that triggered it,
    // then the blocks reported before, most recent first, at most four
    for (k, i) in [2u64, 4, 6, 8, 10].iter().enumerate() {
        let o = r.on_segment(1, seg(*i).0, seg(*i).1, false);
        assert_eq!(o.acks[0].unwrap().ack, MSS);
        let want: Vec<(u64, u64)> = [*i, i - 2, i.saturating_sub(4), i.saturating_sub(6)]
            .iter()
            .take((k + 1).min(MAX_SACK_BLOCKS))
            .map(|&j| (j * MSS, (j + 1) * MSS))
            .collect();
        assert_eq!(o.sack.as_slice(), want.as_slice(), "after segment {i}");
    }
    // segment 3 joins 2 and 4: its block is the merged one, first
    let o = r.on_segment(2, seg(3).0, seg(3).1, false);
    assert_eq!(o.sack.as_slice()[0], (2 * MSS, 5 * MSS));
    assert!(o.sack.as_slice().iter().all(|&(s, _)| s > MSS), "no block below the cumulative ACK");
    // the hole at 1 fills: cumulative ACK to 5, remaining blocks 6.., this segment gave no block
    let o = r.on_segment(3, seg(1).0, seg(1).1, false);
    assert_eq!(o.acks[0].unwrap().ack, 5 * MSS);
    assert_eq!(o.sack.as_slice(), &[(10 * MSS, 11 * MSS), (8 * MSS, 9 * MSS), (6 * MSS, 7 * MSS)]);
    // without SACK the receiver sends no block
    let mut plain = TcpReceiver::new(false, false, 0);
    let o = plain.on_segment(0, MSS, MSS as u32, false);
    assert_eq!(o.sack.n, 0);
}

/// Run ACK-clocked rounds until everything written is acknowledged: (rounds, sender).
fn recover(mut s: TcpSender, lost_first: &[u64], lost_again: &[u64]) -> (u32, TcpSender) {
    let mut r = receiver();
    let mut t = 0;
    let segs = burst(&mut s, t);
    let mut pending = deliver(&mut r, t + 10 * US, &segs, lost_first);
    let mut again: Vec<u64> = lost_again.to_vec();
    let mut rounds = 0;
    while s.acked() < s.written() {
        rounds += 1;
        assert!(rounds < 50, "no progress");
        t += 10 * US;
        let mut out = Vec::new();
        for (a, b) in std::mem::take(&mut pending) {
            s.on_ack_sack(t, a.ack, a.ece, b.as_slice());
            out.extend(burst(&mut s, t));
        }
        if out.is_empty() && s.acked() < s.written() {
            // nothing sent and nothing in flight: only a timeout can help
            let d = s.rto_deadline().expect("timer running");
            t = d;
            assert!(s.on_rto(d));
            out = burst(&mut s, t);
        }
        let drop: Vec<u64> = out.iter().filter(|sg| again.contains(&sg.seq)).map(|sg| sg.seq).collect();
        again.retain(|x| !drop.contains(x));
        pending = deliver(&mut r, t + 10 * US, &out, &drop);
    }
    (rounds, s)
}

#[test]
fn sack_repairs_every_hole_of_a_window_in_one_round_trip() {
    let mut s = TcpSender::new(cfg());
    s.write(20 * MSS);
    // grow to a 20-segment window first
    let mut r = receiver();
    for a in deliver(&mut r, 1, &burst(&mut s, 0), &[]) {
        s.on_ack_sack(2, a.0.ack, false, a.1.as_slice());
    }
    assert_eq!(s.acked(), 10 * MSS);
    s.write(0);
    // holes at 11, 13, 15 (each with at least DupThresh segments SACKed above: lost) and 17 (two
    // above: not deemed lost, RFC 6675 IsLost)
    let lost: Vec<u64> = [11u64, 13, 15, 17].iter().map(|i| i * MSS).collect();
    let segs = burst(&mut s, 10);
    assert_eq!(segs.len(), 10);
    let acks = deliver(&mut r, 20, &segs, &lost);
    let mut retx = Vec::new();
    for (a, b) in &acks {
        s.on_ack_sack(30, a.ack, false, b.as_slice());
        retx.extend(burst(&mut s, 30));
    }
    // every lost hole is resent in the round of the duplicate ACKs, each once, nothing else
    let resent: Vec<u64> = retx.iter().map(|sg| sg.seq).collect();
    assert_eq!(resent, lost[..3], "one round trip repairs the three lost holes");
    assert!(retx.iter().all(|sg| sg.retransmission));
    assert!(s.in_recovery());
    // ssthresh = cwnd = FlightSize / 2: 9 segments outstanding when recovery began (RFC 6675 4.2)
    assert_eq!((s.ssthresh(), s.cwnd()), (9 * MSS / 2, 9 * MSS / 2));
    // their ACKs move HighACK past RescueRxt: the rescue retransmission (rule 4) sends 17
    let mut tail = Vec::new();
    for (a, b) in deliver(&mut r, 40, &retx, &[]) {
        s.on_ack_sack(50, a.ack, false, b.as_slice());
        tail.extend(burst(&mut s, 50));
    }
    assert_eq!(tail.iter().map(|sg| sg.seq).collect::<Vec<_>>(), vec![17 * MSS]);
    for (a, b) in deliver(&mut r, 60, &tail, &[]) {
        s.on_ack_sack(70, a.ack, false, b.as_slice());
    }
    assert_eq!(s.acked(), 20 * MSS);
    assert!(!s.in_recovery(), "the cumulative ACK of RecoveryPoint ends recovery");
    assert_eq!(s.cwnd(), 9 * MSS / 2, "no deflation on exit");
    assert_eq!((s.stats.fast_retransmits, s.stats.timeouts, s.stats.retransmitted_segments), (1, 0, 4));
}

#[test]
fn newreno_needs_a_round_trip_per_hole_where_sack_needs_one() {
    let holes: Vec<u64> = [2u64, 4, 6, 8, 10, 12].iter().map(|i| i * MSS).collect();
    let run = |sack: bool| {
        // a 40-segment window (large initial window), six holes in it
        let mut c = cfg();
        c.sack = sack;
        c.init_cwnd_segments = 40;
        let mut s = TcpSender::new(c);
        s.write(40 * MSS);
        recover(s, &holes, &[])
    };
    let (sack_rounds, s) = run(true);
    let (reno_rounds, n) = run(false);
    assert_eq!(s.stats.retransmitted_segments, 6);
    assert_eq!(n.stats.retransmitted_segments, 6);
    assert_eq!((s.stats.timeouts, n.stats.timeouts), (0, 0));
    assert!(sack_rounds <= 2, "SACK: {sack_rounds} rounds");
    assert!(reno_rounds >= 6, "NewReno: {reno_rounds} rounds");
}

#[test]
fn a_lost_retransmission_is_repaired_and_nothing_sacked_is_resent() {
    let mut c = cfg();
    c.init_cwnd_segments = 30;
    let mut s = TcpSender::new(c);
    s.write(30 * MSS);
    let holes: Vec<u64> = [3u64, 9, 20].iter().map(|i| i * MSS).collect();
    // the retransmission of 9 is lost too
    let (_, s) = recover(s, &holes, &[9 * MSS]);
    assert_eq!(s.acked(), 30 * MSS);
    // 3 holes + one second retransmission of 9 (after a timeout or a rescue); never a SACKed byte
    assert!(s.stats.retransmitted_segments <= 5, "retransmitted {}", s.stats.retransmitted_segments);
    assert!(s.stats.retransmitted_segments >= 4);
}

#[test]
fn after_a_timeout_go_back_n_skips_sacked_data() {
    let mut c = cfg();
    c.init_cwnd_segments = 8;
    let mut s = TcpSender::new(c);
    s.write(8 * MSS);
    let mut r = receiver();
    let segs = burst(&mut s, 0);
    // 0 and 1 are lost, 2..7 arrive (SACKed); the retransmission of 0 is lost as well
    let acks = deliver(&mut r, 10, &segs, &[0, MSS]);
    for (a, b) in &acks {
        s.on_ack_sack(20, a.ack, false, b.as_slice());
    }
    assert!(s.in_recovery());
    let rt = burst(&mut s, 20);
    assert!(rt.iter().all(|sg| sg.seq < 2 * MSS), "{rt:?}");
    let d = s.rto_deadline().unwrap();
    assert!(s.on_rto(d));
    assert!(!s.in_recovery());
    assert_eq!(s.scoreboard().ranges(), &[(2 * MSS, 8 * MSS)], "the scoreboard survives the timeout");
    let seg = s.send(d).expect("resend from snd_una");
    assert_eq!((seg.seq, seg.retransmission), (0, true));
    assert!(s.send(d).is_none(), "cwnd = 1 segment");
    let (a, b) = deliver(&mut r, d + 10, &[seg], &[])[0];
    s.on_ack_sack(d + 20, a.ack, false, b.as_slice());
    // slow start: two more segments allowed; only the remaining hole (segment 1) is resent
    let more = burst(&mut s, d + 20);
    assert_eq!(more.iter().map(|sg| sg.seq).collect::<Vec<_>>(), vec![MSS]);
    let (a, _) = deliver(&mut r, d + 30, &more, &[])[0];
    s.on_ack_sack(d + 40, a.ack, false, &[]);
    assert_eq!(s.acked(), 8 * MSS);
}

#[test]
fn one_ack_sacking_three_segments_starts_recovery_at_once() {
    // IsLost(HighACK) before three duplicate ACKs (RFC 6675 §5 step 2): ACK loss left one ACK
    let mut s = TcpSender::new(cfg());
    s.write(10 * MSS);
    burst(&mut s, 0);
    let out = s.on_ack_sack(10, 0, false, &[(MSS, 4 * MSS)]);
    assert!(out.retransmit && s.in_recovery());
    assert_eq!(s.send(10).map(|sg| sg.seq), Some(0));
    // pipe: the 6 segments above the SACKed range (not lost) + the retransmission
    assert_eq!(s.pipe(), 7 * MSS);
}
