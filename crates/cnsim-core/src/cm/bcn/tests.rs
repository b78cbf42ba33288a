//! One test per clause of the control law (model reference §2.2–§2.6, §3, §4, §10), on the CP and RP
//! state machines driven through hand-made contexts.
use super::*;
use crate::cm::testkit::TestHost;
use crate::cm::Emit;
use crate::frame::{FrameKind, Tag};
use crate::ids::{FlowId, NodeId};
use crate::rng::Stream;
use crate::time::{PS_PER_MS, PS_PER_US};
use serde_json::json;

const LINE: f64 = 10e9;
const CPID: u32 = 7;

/// [A] baseline (model reference §9.1) as IR JSON; tests patch fields.
fn base_json() -> serde_json::Value {
    json!({
        "sampling": "random_bytes", "sample_probability": 0.01, "sample_interval_bytes": 150000,
        "sample_jitter_bytes": 0, "oversampling": "none", "oversampling_factor": 10.0,
        "qeq_bytes": 24000, "w": 2.0, "severe": "none", "qsc_bytes": 112500,
        "severe_trigger": "sample", "severe_holdoff_ps": 0, "sample_refused": false,
        "fb_at_cp": false, "quant_bits": null,
        "slow_cp_rate_bps": null, "slow_cp_sample_probability": 0.1, "slow_cp_ru_bps": 0.8e6,
        "gi": 1000.0 / 1875.0, "gd": 0.5 / 1875.0, "ru_bps": 1e6, "rate_floor_bps": 1e6,
        "initial_rate_bps": null, "tmax_ps": 100 * PS_PER_US, "rmin_bps": 1e9,
        "backoff_cap": 10, "reset": "always", "reset_delay_ps": PS_PER_MS, "reset_event": "new_episode",
        "drift_bps": 0.0, "drift_interval_ps": 100 * PS_PER_US, "rl_timeout_ps": null, "rl_timeout_event": "no_feedback",
        "self_increase": null, "self_increase_interval_ps": PS_PER_MS
    })
}
fn params_with(patch: serde_json::Value) -> Params {
    let mut v = base_json();
    for (k, x) in patch.as_object().unwrap() {
        v[k] = x.clone();
    }
    let p: Params = parse_params("bcn", &v).unwrap();
    p.check().unwrap();
    p
}
fn base() -> Params {
    params_with(json!({}))
}

fn data_frame(src: u32, flow: u32, size: u32) -> Frame {
    crate::cm::testkit::data_frame(src, 99, flow, size)
}

/// A CP with its own RNG and output buffer.
struct CpH {
    cp: Cp,
    rng: Stream,
    out: Vec<Emit>,
}
impl CpH {
    fn new(p: Params) -> Self {
        CpH { cp: Cp::new(Arc::new(p), CPID, 10_000_000_000), rng: Stream::new(1, 0, 5), out: Vec::new() }
    }
    /// Enqueue `f` with the queue (incl. f) at `q` bytes; returns the messages sent.
    fn enqueue(&mut self, q: u64, f: &mut Frame) -> Vec<Emit> {
        self.offer(0, q, f, false)
    }
    /// Offer `f` at time `now` with the queue at `q` bytes: enqueued, or refused by admission.
    fn offer(&mut self, now: SimTime, q: u64, f: &mut Frame, refused: bool) -> Vec<Emit> {
        let hosts = [NodeId(0)];
        let mut ctx =
            CpCtx { now, queue_bytes: q, service_rate_bps: 10_000_000_000, rng: &mut self.rng, out: &mut self.out, hosts: &hosts, sources: &hosts };
        if refused {
            self.cp.on_drop(&mut ctx, f);
        } else {
            self.cp.on_enqueue(&mut ctx, f);
        }
        std::mem::take(&mut self.out)
    }
}

/// An RP of a host with `n` flows (ids 0..n), recording what it asks of the engine in a
/// [`TestHost`] (reachable as `h.rates`, `h.timers`, `h.now` … through `Deref`).
struct RpH {
    rp: Rp,
    env: TestHost,
}
impl std::ops::Deref for RpH {
    type Target = TestHost;
    fn deref(&self) -> &TestHost {
        &self.env
    }
}
impl std::ops::DerefMut for RpH {
    fn deref_mut(&mut self) -> &mut TestHost {
        &mut self.env
    }
}
impl RpH {
    fn new(p: Params, n: u32) -> Self {
        let mut env = TestHost::with_flows((0..n).map(FlowId).collect(), 9);
        env.info.host = NodeId(0);
        env.info.line_rate_bps = LINE as u64;
        env.info.flow_dst = vec![NodeId(99); n as usize];
        let rp = Rp::new(Arc::new(p), &env.info);
        RpH { rp, env }
    }
    fn with<R>(&mut self, f: impl FnOnce(&mut Rp, &mut HostCtx) -> R) -> R {
        f(&mut self.rp, &mut self.env.ctx())
    }
    fn msg(&mut self, kind: u8, flow: u32, cpid: u32, fb: f64) {
        let m = CmMsg { gen: 0, kind, flow: FlowId(flow), cpid, v: [0.0, fb, 1e6] };
        self.with(|rp, ctx| rp.on_feedback(ctx, &m));
    }
    /// Fire every pending timer due at or before `t`, in time order (and those they arm).
    fn advance(&mut self, t: SimTime) {
        loop {
            self.timers.sort_by_key(|x| std::cmp::Reverse(x.0));
            match self.timers.last().copied() {
                Some((at, tok)) if at <= t => {
                    self.timers.pop();
                    self.now = at;
                    self.with(|rp, ctx| rp.on_timer(ctx, tok));
                }
                _ => break,
            }
        }
        self.now = t;
    }
    fn rate(&self, local: u32) -> Option<f64> {
        self.rp.rate_bps(local)
    }
    /// A data frame of `local` starts transmission at `t` (timers due before it fire first).
    fn transmit_at(&mut self, local: u32, t: SimTime) {
        self.advance(t);
        let mut f = data_frame(0, local, 1500);
        self.with(|rp, ctx| rp.on_transmit(ctx, local, &mut f));
    }
    fn last_set(&self, local: u32) -> Option<Option<f64>> {
        self.rates.iter().rev().find(|r| r.local == local).map(|r| r.rate_bps)
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

// ---------------------------------------------------------------- RP: the rate series

#[test]
fn the_reported_rate_is_always_the_limiter_rate() {
    // the rate series reads the flow's limiter instead of rate_bps (rate_is_limiter): random
    // feedback of every kind (BCN(0,0) stops included), transmissions, drift and timeouts
    let variants = [
        json!({ "drift_bps": 1e6, "rl_timeout_ps": 5 * PS_PER_MS }),
        json!({ "self_increase": 5.0, "rl_timeout_ps": 2 * PS_PER_MS, "rl_timeout_event": "idle" }),
    ];
    for p in variants.map(params_with) {
        let RpH { mut rp, mut env } = RpH::new(p, 1);
        crate::cm::testkit::check_rate_is_limiter(&mut rp, &mut env, 20_000, |rng| {
            let kind = [MSG_POSITIVE, MSG_NEGATIVE, MSG_NEGATIVE, MSG_MAX, MSG_ZERO][rng.below(5) as usize];
            let fb = rng.below(64) as f64 * if kind == MSG_POSITIVE { 1.0 } else { -1.0 };
            CmMsg { gen: 0, kind, flow: FlowId(0), cpid: CPID, v: [0.0, fb, 1e6] }
        });
    }
}

// ---------------------------------------------------------------- CP: Qoff, Qdelta, clamps

#[test]
fn qoff_is_in_pages_and_clamped_to_plus_minus_qeq() {
    // Qeq = 375 pages (24 000 B)
    assert!(close(qoff_pages(24_000, 0), 375.0)); // empty queue: +Qeq (clamp hit)
    assert!(close(qoff_pages(24_000, 24_000), 0.0));
    assert!(close(qoff_pages(24_000, 24_064), -1.0)); // fractional pages: 64 B = 1 page
    assert!(close(qoff_pages(24_000, 48_000), -375.0)); // exactly at the clamp
    assert!(close(qoff_pages(24_000, 150_000), -375.0)); // beyond: clamped
    assert!(close(qoff_pages(24_000, 1500), (24_000.0 - 1500.0) / 64.0));
}

#[test]
fn qdelta_is_in_pages_and_clamped_to_plus_minus_two_qeq() {
    assert!(close(qdelta_pages(24_000, 3000, 1500), 1500.0 / 64.0));
    assert!(close(qdelta_pages(24_000, 0, 1500), -1500.0 / 64.0));
    assert!(close(qdelta_pages(24_000, 148_000, 0), 750.0)); // +2Qeq clamp
    assert!(close(qdelta_pages(24_000, 0, 148_000), -750.0)); // −2Qeq clamp
                                                              // with both clamps hit Fb reaches ±Fb_max = ±(1+2W)Qeq = ±1875 pages
    let p = base();
    assert!(close(p.fb_max(), 1875.0));
    let fb = qoff_pages(24_000, 148_000) - 2.0 * qdelta_pages(24_000, 148_000, 0);
    assert!(close(fb, -1875.0));
}

// ---------------------------------------------------------------- CP: message rule

#[test]
fn fb_zero_sends_nothing() {
    // Q = Qeq and unchanged since the last sample: Qoff = Qdelta = 0 ⇒ Fb = 0 (model reference §10)
    let p = base();
    assert_eq!(cp_decide(&p, 24_000, 24_000, true), Verdict::Nothing);
    assert_eq!(cp_decide(&p, 24_000, 24_000, false), Verdict::Nothing);
    // Fb = 0 with Qoff ≠ 0: Q = 23 680 B, Q_last = 23 520 B ⇒ qoff = +5, qdelta = +2.5 ⇒ fb = 0
    assert_eq!(cp_decide(&p, 23_680, 23_520, true), Verdict::Nothing);
}

#[test]
fn legacy_encoding_turns_a_sample_at_equilibrium_into_bcn00() {
    // [C] §8: Qoff and Qdelta in whole pages; both 0 at a sample of a frame this CP tagged is the
    // original code point of BCN(0,0) (model reference §12 C4's explicit type avoids it)
    let p = params_with(json!({"zero_encoding": "legacy"}));
    assert_eq!(cp_decide(&p, 24_000, 24_000, true), Verdict::Send(MSG_ZERO, [0.0, 0.0]));
    // within half a page of Qeq and of the last sample the fields still read 0 (−0.31 and +0.31 pages)
    assert_eq!(cp_decide(&p, 24_020, 24_000, true), Verdict::Send(MSG_ZERO, [0.0, 0.0]));
    // an untagged frame has no RL of this CP: nothing, as for any Fb = 0
    assert_eq!(cp_decide(&p, 24_000, 24_000, false), Verdict::Nothing);
    // Fb = 0 with Qoff ≠ 0 (Qoff = +4, Qdelta = +2 pages) is no stop order: nothing, as before
    assert_eq!(cp_decide(&p, 23_744, 23_616, true), Verdict::Nothing);
    // the fields are rounded before Fb: +5 and +2.5 → +3 pages give Fb = −1, a (small) negative message
    assert_eq!(cp_decide(&p, 23_680, 23_520, true), Verdict::Send(MSG_NEGATIVE, [5.0, -1.0]));
    // one frame more: a negative message, its fields whole pages (−23 − 2·23 = −69, not −70.3)
    match cp_decide(&p, 25_500, 24_000, false) {
        Verdict::Send(MSG_NEGATIVE, v) => assert!(close(v[1], -23.0 - 2.0 * 23.0), "{v:?}"),
        v => panic!("expected negative, got {v:?}"),
    }
    // the explicit encoding keeps the real-valued fields: the same sample is a small negative message
    assert_eq!(cp_decide(&base(), 24_020, 24_000, true), Verdict::Send(MSG_NEGATIVE, [-0.3125, -0.9375]));
}

#[test]
fn legacy_bcn00_stops_the_source_like_the_severe_message() {
    // the whole path: every frame sampled (random_bytes with I = L); the first sample at Qeq sees the
    // queue grow from 0 (negative), the second an unchanged queue at Qeq (the (0, 0) code point)
    let p = params_with(json!({"zero_encoding": "legacy", "sample_interval_bytes": 1500, "rmin_bps": 1e8}));
    let mut cp = CpH::new(p.clone());
    let mut f = data_frame(0, 0, 1500);
    f.tag = Tag { flags: tag::RL, cpid: CPID, rate: 0.0 };
    assert_eq!(cp.enqueue(24_000, &mut f)[0].msg.kind, MSG_NEGATIVE);
    let out = cp.enqueue(24_000, &mut f);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].msg.kind, MSG_ZERO);
    // the RP cannot tell it from a stop order: its RL stops, then restarts at Rmin0 within Tmax0
    let mut h = RpH::new(p, 1);
    h.msg(MSG_NEGATIVE, 0, CPID, -100.0);
    assert!(h.rate(0).is_some_and(|r| r > 0.0));
    let m = out[0].msg;
    h.with(|rp, ctx| rp.on_feedback(ctx, &m));
    assert_eq!(h.rate(0), Some(0.0));
    h.advance(100 * PS_PER_US);
    assert_eq!(h.rate(0), Some(1e8));
}

#[test]
fn negative_always_positive_only_to_own_tagged_frames() {
    let p = base();
    // queue above Qeq and growing: negative, whether tagged or not
    for tagged in [false, true] {
        match cp_decide(&p, 30_000, 28_500, tagged) {
            Verdict::Send(k, v) => {
                assert_eq!(k, MSG_NEGATIVE);
                assert!(close(v[1], (24_000.0 - 30_000.0) / 64.0 - 2.0 * 1500.0 / 64.0));
            }
            v => panic!("expected negative, got {v:?}"),
        }
    }
    // queue below Qeq and not growing: positive only if the frame is tagged by this CP
    assert_eq!(cp_decide(&p, 6_000, 6_000, false), Verdict::Nothing);
    match cp_decide(&p, 6_000, 6_000, true) {
        Verdict::Send(k, v) => {
            assert_eq!(k, MSG_POSITIVE);
            assert!(close(v[1], 18_000.0 / 64.0));
        }
        v => panic!("expected positive, got {v:?}"),
    }
}

#[test]
fn cp_checks_the_tag_cpid_and_never_samples_control_frames() {
    // sample every frame: random_bytes with I = L
    let mut h = CpH::new(params_with(json!({"sample_interval_bytes": 1500})));
    let mut f = data_frame(3, 11, 1500);
    f.tag = Tag { flags: tag::RL, cpid: CPID + 1, rate: 0.0 }; // owned by another CP
    assert!(h.enqueue(6000, &mut f).is_empty());
    f.tag.cpid = CPID;
    let out = h.enqueue(6000, &mut f);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].dst, NodeId(3)); // back to the source
    assert_eq!(out[0].msg.kind, MSG_POSITIVE);
    assert_eq!(out[0].msg.flow, FlowId(11));
    assert_eq!(out[0].msg.cpid, CPID);
    let mut c = data_frame(3, 11, 1500);
    c.kind = FrameKind::Control;
    for _ in 0..100 {
        assert!(h.enqueue(100_000, &mut c).is_empty());
    }
}

#[test]
fn severe_max_and_zero_replace_the_normal_message_strictly_above_qsc() {
    for (sev, kind) in [("max", MSG_MAX), ("zero", MSG_ZERO)] {
        let p = params_with(json!({"severe": sev}));
        assert!(matches!(cp_decide(&p, 112_500, 112_500, false), Verdict::Send(MSG_NEGATIVE, _)));
        match cp_decide(&p, 112_501, 112_501, true) {
            Verdict::Send(k, v) => {
                assert_eq!(k, kind);
                assert!(close(v[1], -1875.0));
            }
            v => panic!("{v:?}"),
        }
    }
    // severe = none: only normal messages above Qsc
    assert!(matches!(cp_decide(&base(), 140_000, 140_000, false), Verdict::Send(MSG_NEGATIVE, _)));
}

#[test]
fn severe_trigger_every_arrival_with_per_source_holdoff() {
    // §12 B4 alternative: a severe message for every arriving data frame above Qsc, sampled or not
    // (sampling every 150 KB would pick ~1 % of these frames).
    for (sev, kind) in [("max", MSG_MAX), ("zero", MSG_ZERO)] {
        let mut h = CpH::new(params_with(json!({"severe": sev, "severe_trigger": "every_arrival"})));
        for i in 0..20u64 {
            let out = h.offer(i * PS_PER_US, 140_000, &mut data_frame(1, 1, 1500), false);
            assert_eq!(out.len(), 1, "one severe message per arrival");
            assert_eq!(out[0].msg.kind, kind);
            assert!(close(out[0].msg.v[1], -1875.0));
        }
        // at or below Qsc the normal sampled rule applies: no message for an unsampled frame
        let n: usize = (0..100).map(|_| h.offer(0, 112_500, &mut data_frame(1, 1, 1500), false).len()).sum();
        assert!(n < 10, "{n}");
    }
    // holdoff: at most one severe message per source per 10 µs; sources are independent
    let mut h = CpH::new(params_with(json!({"severe": "zero", "severe_trigger": "every_arrival", "severe_holdoff_ps": 10 * PS_PER_US})));
    let mut sent = [0usize; 2];
    for t in 0..100u64 {
        for src in 0..2u32 {
            sent[src as usize] += h.offer(t * PS_PER_US, 140_000, &mut data_frame(src, src, 1500), false).len();
        }
    }
    assert_eq!(sent, [10, 10]);
    // a sampled frame above Qsc within the holdoff sends nothing (no second message)
    let mut h = CpH::new(params_with(json!({"severe": "max", "severe_trigger": "every_arrival",
        "sampling": "bernoulli", "sample_probability": 1.0, "severe_holdoff_ps": PS_PER_MS})));
    assert_eq!(h.offer(0, 140_000, &mut data_frame(1, 1, 1500), false).len(), 1);
    assert_eq!(h.offer(PS_PER_US, 140_000, &mut data_frame(1, 1, 1500), false).len(), 0);
    // the sample still updated Q_last: the next normal sample sees Qdelta from 140 000 B
    let mut f = data_frame(1, 1, 1500);
    f.tag.flags |= tag::RL;
    f.tag.cpid = CPID; // tagged by this CP, so the positive Fb is sent
    let out = h.offer(2 * PS_PER_US, 100_000, &mut f, false);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].msg.kind, MSG_POSITIVE);
    let want = qoff_pages(24_000, 100_000) - 2.0 * qdelta_pages(24_000, 100_000, 140_000);
    assert!(close(out[0].msg.v[1], want));
    // default trigger = sample: unsampled arrivals above Qsc send nothing
    let mut h = CpH::new(params_with(json!({"severe": "zero", "sampling": "bernoulli", "sample_probability": 1e-9})));
    assert!(h.offer(0, 140_000, &mut data_frame(1, 1, 1500), false).is_empty());
}

#[test]
fn refused_frames_are_sampled_only_with_sample_refused() {
    // every frame sampled (p = 1) so the rule, not the sampler, decides
    let p = json!({"sampling": "bernoulli", "sample_probability": 1.0, "severe": "max", "qsc_bytes": 83_200});
    let mut h = CpH::new(params_with(p.clone()));
    assert!(h.offer(0, 140_000, &mut data_frame(1, 1, 1500), true).is_empty(), "model reference §2.2: not sampled");
    let mut patch = p.clone();
    patch["sample_refused"] = json!(true);
    let mut h = CpH::new(params_with(patch));
    let out = h.offer(0, 140_000, &mut data_frame(1, 1, 1500), true);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].msg.kind, MSG_MAX);
    assert_eq!(out[0].dst, NodeId(1), "to the source of the refused frame");
    // a refused control frame is never sampled
    let mut c = data_frame(1, 1, 64);
    c.kind = FrameKind::Control;
    assert!(h.offer(0, 140_000, &mut c, true).is_empty());
    // periodic counter: refused bytes move it (I = 75 000 B, J = 0 → every 50th frame)
    let mut patch = p.clone();
    patch["sample_refused"] = json!(true);
    patch["sampling"] = json!("periodic");
    patch["sample_interval_bytes"] = json!(75_000);
    let mut h = CpH::new(params_with(patch));
    let n: usize = (0..100).map(|i| h.offer(0, 140_000, &mut data_frame(1, 1, 1500), i % 2 == 0).len()).sum();
    assert_eq!(n, 2);
}

#[test]
fn periodic_sampler_counts_data_bytes_with_bounded_jitter() {
    // I = 75 000 B, J = 0: exactly every 50th 1500-B frame
    let mut h = CpH::new(params_with(json!({"sampling": "periodic", "sample_interval_bytes": 75000})));
    let mut hits = vec![];
    for i in 0..500 {
        let mut f = data_frame(1, 0, 1500);
        if !h.enqueue(100_000, &mut f).is_empty() {
            hits.push(i);
        }
    }
    assert_eq!(hits.len(), 10);
    assert!(hits.windows(2).all(|w| w[1] - w[0] == 50), "{hits:?}");
    // ECM: 75 000 ± 5 000 B ⇒ gaps of 47..=54 frames, mean 50
    let mut h = CpH::new(params_with(json!({"sampling": "periodic", "sample_interval_bytes": 75000, "sample_jitter_bytes": 5000})));
    let mut last = None;
    let mut gaps = vec![];
    for i in 0..100_000usize {
        let mut f = data_frame(1, 0, 1500);
        if !h.enqueue(100_000, &mut f).is_empty() {
            if let Some(l) = last {
                gaps.push(i - l);
            }
            last = Some(i);
        }
    }
    assert!(gaps.iter().all(|&g| (46..=54).contains(&g)), "{:?}", &gaps[..10]);
    let mean = gaps.iter().sum::<usize>() as f64 / gaps.len() as f64;
    assert!((mean - 50.0).abs() < 0.2, "mean gap {mean}");
}

#[test]
fn random_and_bernoulli_sampling_rates() {
    // 150 KB with 1500-B frames: 1 %; Bernoulli p = 0.05
    for (patch, want) in
        [(json!({}), 0.01), (json!({"sampling": "bernoulli", "sample_probability": 0.05}), 0.05), (json!({"sample_interval_bytes": 25000}), 0.06)]
    {
        let mut h = CpH::new(params_with(patch));
        let n = 200_000;
        let k = (0..n).filter(|_| !h.enqueue(100_000, &mut data_frame(1, 0, 1500)).is_empty()).count();
        let got = k as f64 / n as f64;
        assert!((got - want).abs() < 0.1 * want, "sampling rate {got} vs {want}");
    }
}

#[test]
fn oversampling_thresh_and_qcn() {
    // OS-THRESH ×10 above Qeq: 1 % → 10 %
    let mut h = CpH::new(params_with(json!({"oversampling": "thresh"})));
    let n = 50_000;
    let above = (0..n).filter(|_| !h.enqueue(30_000, &mut data_frame(1, 0, 1500)).is_empty()).count();
    assert!((above as f64 / n as f64 - 0.10).abs() < 0.01);
    // OS-QCN: a maximal negative sample divides the next interval by 1 + 63/8 = 8
    let mut h = CpH::new(params_with(json!({"oversampling": "qcn", "sampling": "periodic", "sample_interval_bytes": 150000})));
    let mut first = None;
    for i in 0..200 {
        let out = h.enqueue(149_000, &mut data_frame(1, 0, 1500));
        if !out.is_empty() {
            match first {
                None => first = Some(i),
                Some(f) => {
                    assert_eq!(i - f, 13, "150 000 / 8 = 18 750 B = 12.5 frames");
                    break;
                }
            }
        }
    }
    assert_eq!(first, Some(99));
    assert_eq!(q6(-1875.0, 1875.0), 63);
    assert_eq!(q6(100.0, 1875.0), 0);
}

#[test]
fn slow_cp_uses_its_own_pm_and_ru() {
    // [C] §4 enhanced: Pm 0.1, Ru 0.8 Mb/s at the 1 Gb/s CP; Pm 0.01, Ru 8 Mb/s elsewhere
    let p = params_with(json!({"sampling": "bernoulli", "sample_probability": 0.01, "ru_bps": 8e6,
                               "slow_cp_rate_bps": 1_000_000_000u64}));
    let p = Arc::new(p);
    let mut rng = Stream::new(1, 0, 3);
    for (rate, want_p, want_ru) in [(1_000_000_000u64, 0.1, 0.8e6), (10_000_000_000, 0.01, 8e6)] {
        let mut cp = Cp::new(p.clone(), CPID, rate);
        let mut out = vec![];
        let n = 100_000;
        for _ in 0..n {
            let hosts = [NodeId(0)];
            let mut ctx =
                CpCtx { now: 0, queue_bytes: 100_000, service_rate_bps: rate, rng: &mut rng, out: &mut out, hosts: &hosts, sources: &hosts };
            cp.on_enqueue(&mut ctx, &mut data_frame(1, 0, 1500));
        }
        let got = out.len() as f64 / n as f64;
        assert!((got - want_p).abs() < 0.1 * want_p, "{got}");
        assert!(out.iter().all(|e| e.msg.v[2] == want_ru));
    }
    // the RP increases by Gi·fb·Ru of the message
    let mut h = RpH::new(base(), 1);
    h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
    let m = CmMsg { gen: 0, kind: MSG_POSITIVE, flow: FlowId(0), cpid: CPID, v: [0.0, 1875.0, 0.8e6] };
    h.with(|rp, ctx| rp.on_feedback(ctx, &m));
    assert!(close(h.rate(0).unwrap(), 5e9 + 0.8e9));
}

// ---------------------------------------------------------------- quantisation (§4.2)

#[test]
fn quantization_sign_magnitude_floor_and_suppression() {
    let fm = 1875.0;
    // 3 bits: 7 levels of 1875/7 = 267.86 pages
    assert!(close(quantize(-1875.0, fm, 3), -1875.0));
    assert!(close(quantize(-600.0, fm, 3), -2.0 * fm / 7.0)); // floor(600·7/1875) = 2
    assert!(close(quantize(600.0, fm, 3), 2.0 * fm / 7.0)); // sign kept
    assert_eq!(quantize(-200.0, fm, 3), 0.0); // quantises to 0 ⇒ no message
                                              // 32 bits: within one level (4.4e-7 pages) of the exact value
    assert!((quantize(-600.123, fm, 32) + 600.123).abs() < 1e-6);
    // the CP suppresses a message whose magnitude quantises to 0
    let p = params_with(json!({"quant_bits": 3}));
    // Q = 30 000 B, Q_last = Q ⇒ fb = −93.75 pages < 267.86 ⇒ nothing
    assert_eq!(cp_decide(&p, 30_000, 30_000, false), Verdict::Nothing);
    match cp_decide(&p, 48_000, 40_000, false) {
        // qoff = −375, qdelta = +125 ⇒ fb = −625; floor(625·7/1875) = 2 ⇒ −2·Fb_max/7
        Verdict::Send(MSG_NEGATIVE, v) => assert!(close(v[1], -2.0 * fm / 7.0)),
        v => panic!("{v:?}"),
    }
}

// ---------------------------------------------------------------- decrease-only mode (§4.1)

#[test]
fn fb_at_cp_sends_decrease_only_and_rp_does_not_tag() {
    let p = params_with(json!({"fb_at_cp": true}));
    assert_eq!(cp_decide(&p, 6_000, 6_000, true), Verdict::Nothing); // no positive, even tagged
    assert!(matches!(cp_decide(&p, 30_000, 30_000, false), Verdict::Send(MSG_NEGATIVE, _)));
    let mut h = RpH::new(p, 1);
    h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
    assert!(close(h.rate(0).unwrap(), 5e9));
    let mut f = data_frame(0, 0, 1500);
    h.with(|rp, ctx| rp.on_transmit(ctx, 0, &mut f));
    assert_eq!(f.tag.flags & tag::RL, 0);
}

// The reaction point's tests: AIMD, BCN(0,0), drift, ECM timeout, self-increase.
mod rp;

// ---------------------------------------------------------------- T10: AIMD closed form

/// TESTING.md T10 (Chiu & Jain 1989) on the BCN reaction point: N rate limiters of one host get the
/// same message at every step, negative (Fb = −375: β = 1 − Gd·375 = 0.9) while their rates sum to
/// more than C, positive (Fb = +15: α = Gi·15·Ru = 8 Mb/s) otherwise, with no delay. The cycle
/// then has the closed form of synchronous AIMD: a peak within one step of C, a trough of β times
/// the peak, (1 − β)·C/(N·α) = 31.25 increase steps between decreases (within one); the gap
/// between two limiters is unchanged by an increase and multiplied by β by a decrease; Jain's
/// index is unchanged by a decrease and rises at each increase, towards 1.
#[test]
fn synchronous_feedback_gives_the_aimd_cycle_of_chiu_and_jain() {
    let (n, c) = (4u32, 10e9);
    let (fb_dec, fb_inc) = (-375.0, 15.0);
    let p = base();
    let (beta, alpha) = (1.0 - p.gd * 375.0, p.gi * fb_inc * p.ru_bps);
    assert!(close(beta, 0.9) && close(alpha, 8e6));
    let mut h = RpH::new(p, n);
    // unequal starting rates 5 / 6 / 8 / 9 Gb/s (one negative message each creates the limiters)
    for (local, fb) in [(0, -1875.0), (1, -1500.0), (2, -750.0), (3, -375.0)] {
        h.msg(MSG_NEGATIVE, local, CPID, fb);
    }
    let rates = |h: &RpH| (0..n).map(|l| h.rate(l).expect("a limiter")).collect::<Vec<_>>();
    let jain = |r: &[f64]| r.iter().sum::<f64>().powi(2) / (r.len() as f64 * r.iter().map(|x| x * x).sum::<f64>());
    let period = (1.0 - beta) * c / (n as f64 * alpha);
    let (mut ups, mut cycles) = (0usize, 0usize);
    // the first decreases bring the unequal start under C; the cycle starts at the first trough
    // reached from a peak (a decrease that follows an increase)
    let mut peaks = 0usize;
    for step in 0..20_000 {
        let before = rates(&h);
        let sum: f64 = before.iter().sum();
        let down = sum > c;
        for local in 0..n {
            h.msg(if down { MSG_NEGATIVE } else { MSG_POSITIVE }, local, CPID, if down { fb_dec } else { fb_inc });
        }
        let after = rates(&h);
        let new_sum: f64 = after.iter().sum();
        let gap = |r: &[f64]| r[3] - r[0];
        if down {
            assert!(close(new_sum, beta * sum), "step {step}: trough {new_sum} = β × peak {sum}");
            // (to the rounding of rates near 2.5e9, ulp ≈ 5e-7, once the gap is that small)
            assert!((gap(&after) - beta * gap(&before)).abs() <= 1e-9 * gap(&before).abs() + 1e-5, "step {step}: the gap shrinks by β");
            assert!((jain(&after) - jain(&before)).abs() <= 1e-12, "step {step}: Jain unchanged by a decrease");
            if ups > 0 {
                // the peak is the first sum above C: within one step (N·α) of it
                assert!(sum > c && sum <= c + n as f64 * alpha * (1.0 + 1e-9), "step {step}: peak {sum}");
                if peaks > 0 {
                    assert!((ups as f64 - period).abs() <= 1.0, "step {step}: {ups} increases, closed form {period}");
                    cycles += 1;
                }
                peaks += 1;
            } else {
                assert_eq!(peaks, 0, "step {step}: two decreases in a row inside the cycle");
            }
            ups = 0;
        } else {
            assert!(close(new_sum, sum + n as f64 * alpha), "step {step}: additive increase");
            assert!((gap(&after) - gap(&before)).abs() <= 1e-5, "step {step}: the gap is unchanged by an increase");
            assert!(jain(&after) >= jain(&before) - 1e-15, "step {step}: Jain rises during an increase");
            ups += 1;
        }
    }
    assert!(cycles > 500, "{cycles} cycles");
    let r = rates(&h);
    assert!(jain(&r) > 1.0 - 1e-9, "converged to the fair share: {r:?}");
    assert!(r.iter().all(|&x| x < c / n as f64 + alpha && x > beta * c / n as f64 - alpha), "{r:?}");
}
