//! Tests of `dcqcn` (kept apart from the module's code).

use super::*;
use crate::cm::testkit::{data_frame, TestCp, TestHost};
use crate::frame::FrameKind;
use crate::ids::FlowId;

const G10: f64 = 10e9;
const US: u64 = 1_000_000;

type Host = TestHost;
fn new_host() -> Host {
    TestHost::new(FlowId(3), 9)
}

fn cnp() -> CmMsg {
    CmMsg { gen: 0, kind: MSG_CNP, flow: FlowId(3), cpid: 0, v: [0.0; 3] }
}

fn data() -> Frame {
    data_frame(1, 2, 3, 1500)
}

#[test]
fn the_reported_rate_is_always_the_limiter_rate() {
    // the rate series reads the flow's limiter instead of rate_bps (rate_is_limiter), both variants
    for p in [Params::default(), Params::paper()] {
        let mut h = new_host();
        let mut rp = DcqcnRp::new(&p, &h.info);
        crate::cm::testkit::check_rate_is_limiter(&mut rp, &mut h, 20_000, |_| cnp());
    }
}

#[test]
fn marking_probability_curve() {
    let (kmin, kmax, pmax) = (5_000, 200_000, 0.01);
    assert_eq!(mark_probability(0, kmin, kmax, pmax), 0.0);
    assert_eq!(mark_probability(5_000, kmin, kmax, pmax), 0.0);
    assert!((mark_probability(102_500, kmin, kmax, pmax) - 0.005).abs() < 1e-15);
    assert_eq!(mark_probability(200_000, kmin, kmax, pmax), 0.01);
    assert_eq!(mark_probability(200_001, kmin, kmax, pmax), 1.0);
    // linear in between
    let a = mark_probability(50_000, kmin, kmax, pmax);
    let b = mark_probability(95_000, kmin, kmax, pmax);
    assert!((b - 2.0 * a).abs() < 1e-15);
    // the empirical marking frequency of the CP matches p(q)
    let cp = DcqcnCp { p: Params { pmax: 0.2, ..Params::paper() } };
    let mut env = TestCp::new(1, vec![]);
    for (q, p) in [(4_000u64, 0.0), (102_500, 0.1), (200_000, 0.2), (300_000, 1.0)] {
        let mut marked = 0;
        let n = 50_000;
        for _ in 0..n {
            let mut f = data();
            cp.mark(&mut env.ctx(0, q, 10_000_000_000), &mut f);
            marked += (f.tag.flags & tag::CE != 0) as u32;
        }
        let freq = marked as f64 / n as f64;
        assert!((freq - p).abs() < 0.01, "q={q}: {freq} vs {p}");
    }
    // control frames are never marked
    let mut c = data();
    c.kind = FrameKind::Control;
    cp.mark(&mut env.ctx(0, 300_000, 1), &mut c);
    assert_eq!(c.tag.flags & tag::CE, 0);
}

#[test]
fn np_wants_only_marked_frames_and_cp_names_its_marking_hook() {
    // an unmarked frame may be delivered without calling on_data (Reflector::wants_data)
    let np = DcqcnNp { interval: 50 * US, last_cnp: vec![] };
    let mut f = data_frame(1, 2, 0, 1000);
    assert!(!np.wants_data(&f));
    f.tag.flags |= tag::CE;
    assert!(np.wants_data(&f));
    // the CP's hook mask follows where it marks (the other hook is skipped by the engine)
    for (mark_on, hook) in [(MarkOn::Transmit, crate::cm::cp_hooks::TRANSMIT), (MarkOn::Enqueue, crate::cm::cp_hooks::ENQUEUE)] {
        let s = Dcqcn { p: Params { mark_on, ..Params::default() } };
        let info = crate::cm::PortInfo {
            port: crate::ids::PortId(0),
            switch: crate::ids::NodeId(0),
            index: 0,
            rate_bps: 10_000_000_000,
            buffer_bytes: 150_000,
            cpid: 1,
        };
        let cp = s.congestion_point(&info).expect("a CP");
        assert_eq!(cp.hooks(), hook);
    }
}

#[test]
fn np_sends_at_most_one_cnp_per_interval() {
    let mut np = DcqcnNp { interval: 50 * US, last_cnp: vec![] };
    assert!(np.should_send(4, 0));
    assert!(!np.should_send(4, 49 * US));
    assert!(np.should_send(2, 49 * US), "per flow");
    assert!(np.should_send(4, 50 * US));
    assert!(!np.should_send(4, 60 * US));
    assert!(np.should_send(4, 101 * US));
}

#[test]
fn paper_rate_decrease_and_alpha_update() {
    let p = Params::paper();
    let g = p.g;
    let mut h = new_host();
    let mut rp = DcqcnRp::new(&p, &h.info);
    rp.on_feedback(&mut h.ctx(), &cnp());
    let f = &rp.flows[0];
    // first CNP: α = 1 ⇒ CR halves, TR = old CR (line rate), then α ← (1−g)·1 + g = 1
    assert_eq!(f.tr, G10);
    assert_eq!(f.cr, G10 / 2.0);
    assert_eq!(f.alpha, 1.0);
    assert_eq!(h.rates.last().unwrap().rate_bps, Some(G10 / 2.0));
    // α decays by (1−g) every K = 55 µs without CNP
    h.advance(&mut rp, 54 * US);
    assert_eq!(rp.flows[0].alpha, 1.0);
    h.advance(&mut rp, 55 * US);
    assert_eq!(rp.flows[0].alpha, 1.0 - g);
    h.advance(&mut rp, 3 * 55 * US);
    let a = (1.0 - g) * (1.0 - g) * (1.0 - g);
    assert!((rp.flows[0].alpha - a).abs() < 1e-15);
    // a second CNP: TR ← CR, CR ← CR(1 − α/2), α ← (1−g)α + g
    let cr = rp.flows[0].cr;
    h.now = 3 * 55 * US + 10 * US;
    rp.on_feedback(&mut h.ctx(), &cnp());
    assert_eq!(rp.flows[0].tr, cr);
    assert!((rp.flows[0].cr - cr * (1.0 - a / 2.0)).abs() < 1e-3);
    assert!((rp.flows[0].alpha - ((1.0 - g) * a + g)).abs() < 1e-15);
    // the α timer restarted at the CNP: no decay until K after it
    h.advance(&mut rp, h.now + 54 * US);
    assert!((rp.flows[0].alpha - ((1.0 - g) * a + g)).abs() < 1e-15);
    // floor
    let mut rp2 = DcqcnRp::new(&Params { min_rate_bps: 6e9, ..Params::paper() }, &h.info);
    rp2.on_feedback(&mut h.ctx(), &cnp());
    assert_eq!(rp2.flows[0].cr, 6e9);
}

#[test]
fn paper_increase_stages() {
    let p = Params::paper();
    let mut h = new_host();
    let mut rp = DcqcnRp::new(&p, &h.info);
    rp.on_feedback(&mut h.ctx(), &cnp());
    let tr = G10;
    let mut cr = G10 / 2.0;
    // timer stages 1..4: fast recovery (max(T, BC) < F)
    for k in 1..=4u64 {
        h.advance(&mut rp, k * 55 * US);
        cr = (tr + cr) / 2.0;
        assert_eq!(rp.flows[0].t_stage, k as u32);
        assert_eq!(rp.flows[0].tr, tr);
        assert!((rp.flows[0].cr - cr).abs() < 1e-3, "FR {k}");
    }
    // stage 5: max = 5 is not < F and min = 0 is not > F → additive increase, capped
    h.advance(&mut rp, 5 * 55 * US);
    assert_eq!(rp.flows[0].tr, G10);
    assert!((rp.flows[0].cr - ((G10 + 40e6 + cr) / 2.0).min(G10)).abs() < 1e-3);
    // byte counter: every B = 10 MB sent advances BC_stage
    let mut rp = DcqcnRp::new(&Params { byte_counter_bytes: 15_000, ..Params::paper() }, &h.info);
    h.now = 0;
    rp.on_feedback(&mut h.ctx(), &cnp());
    for _ in 0..9 {
        rp.on_transmit(&mut h.ctx(), 0, &mut data());
    }
    assert_eq!(rp.flows[0].bc_stage, 0);
    rp.on_transmit(&mut h.ctx(), 0, &mut data());
    assert_eq!(rp.flows[0].bc_stage, 1);
    assert!((rp.flows[0].cr - 7.5e9).abs() < 1e-3);
}

#[test]
fn paper_hyper_increase_needs_both_stages_past_f() {
    let p = Params { byte_counter_bytes: 1_500, ..Params::paper() };
    let mut h = new_host();
    let mut rp = DcqcnRp::new(&p, &h.info);
    rp.on_feedback(&mut h.ctx(), &cnp());
    rp.on_feedback(&mut h.ctx(), &cnp()); // CR = 2.5 G, TR = 5 G
    for _ in 0..6 {
        rp.on_transmit(&mut h.ctx(), 0, &mut data()); // BC_stage → 6
    }
    let tr6 = rp.flows[0].tr;
    assert_eq!(rp.flows[0].bc_stage, 6);
    // T_stage 1..6: at T = 6 both are > F = 5 → hyper increase
    for k in 1..=5u64 {
        h.advance(&mut rp, k * 55 * US);
    }
    let tr_before = rp.flows[0].tr;
    assert!((tr_before - (tr6 + 5.0 * 40e6)).abs() < 1e-3, "T = 1..5: additive (BC > F, T <= F)");
    h.advance(&mut rp, 6 * 55 * US);
    assert!((rp.flows[0].tr - (tr_before + 400e6)).abs() < 1e-3, "T = 6: hyper");
}

#[test]
fn a_new_transfer_on_an_idle_flow_starts_at_line_rate_only_when_asked() {
    for on in [false, true] {
        let p = Params { new_flow_line_rate: on, ..Params::paper() };
        let mut h = new_host();
        let mut rp = DcqcnRp::new(&p, &h.info);
        rp.on_feedback(&mut h.ctx(), &cnp());
        let cut = rp.rate_bps(0).expect("limited after a CNP");
        assert!(cut < G10);
        h.rates.clear();
        assert_eq!(rp.wants_flow_start(), on, "the engine calls the hook only when it is on");
        if rp.wants_flow_start() {
            rp.on_flow_start(&mut h.ctx(), 0);
        }
        if on {
            assert_eq!(rp.rate_bps(0), None, "a new connection: no limiter");
            assert_eq!(h.rates.last().map(|r| r.rate_bps), Some(None));
            assert!(!rp.flows[0].started, "α starts afresh at the next CNP");
            // the old rate timer is stale: advancing time sets no rate
            h.rates.clear();
            h.advance(&mut rp, 1_000 * US);
            assert!(h.rates.is_empty(), "stale timers of the old connection do nothing");
        } else {
            assert_eq!(rp.rate_bps(0), Some(cut), "the pair keeps its rate");
            assert!(h.rates.is_empty());
        }
    }
}

#[test]
fn release_at_line_rate_and_lazy_alpha() {
    let p = Params::paper();
    let g = p.g;
    let mut h = new_host();
    let mut rp = DcqcnRp::new(&p, &h.info);
    rp.on_feedback(&mut h.ctx(), &cnp());
    // recovery to line rate within a few ms of timer-driven increases
    h.advance(&mut rp, 10_000 * US);
    assert!(!rp.flows[0].active, "released");
    assert_eq!(h.rates.last().unwrap().rate_bps, None);
    let alpha_at_release = rp.flows[0].alpha;
    let t_alpha = rp.flows[0].alpha_t;
    // 1 s later a CNP: α has decayed by every K period since the last tick
    h.now = 1_000_000 * US;
    rp.on_feedback(&mut h.ctx(), &cnp());
    let n = (h.now - t_alpha) / p.alpha_resume_ps;
    let a = alpha_at_release * (1.0 - g).powi(n as i32);
    assert!((rp.flows[0].cr - G10 * (1.0 - a / 2.0)).abs() < 1.0);
    assert!((rp.flows[0].alpha - ((1.0 - g) * a + g)).abs() < 1e-12);
}

#[test]
fn mellanox_variant() {
    let p = Params::mellanox();
    let g = p.g;
    let mut h = new_host();
    let mut rp = DcqcnRp::new(&p, &h.info);
    h.now = 10 * US;
    rp.on_feedback(&mut h.ctx(), &cnp());
    // the first CNP only arms things; α = 1; the decrease comes at the 4-µs(+1 ns) check
    assert_eq!(rp.flows[0].cr, G10);
    assert_eq!(rp.flows[0].alpha, 1.0);
    assert!(!rp.flows[0].alpha_cnp, "first CNP clears the α flag");
    h.advance(&mut rp, 14 * US);
    assert_eq!(rp.flows[0].cr, G10);
    h.advance(&mut rp, 14 * US + 1_000);
    assert_eq!(rp.flows[0].cr, G10 / 2.0);
    assert_eq!(rp.flows[0].tr, G10, "no clamp in timer stage 0");
    // more CNPs within one 4-µs period give one decrease
    h.now = 15 * US;
    rp.on_feedback(&mut h.ctx(), &cnp());
    h.now = 16 * US;
    rp.on_feedback(&mut h.ctx(), &cnp());
    h.advance(&mut rp, 18 * US + 1_000);
    assert_eq!(rp.flows[0].cr, G10 / 4.0);
    // α tick at 10 + 55 µs: a CNP arrived in the period ⇒ α = (1−g)·1 + g = 1
    h.advance(&mut rp, 65 * US);
    assert_eq!(rp.flows[0].alpha, 1.0);
    // next tick without CNP: α = 1 − g
    h.advance(&mut rp, 120 * US);
    assert_eq!(rp.flows[0].alpha, 1.0 - g);
    // timer-only increase every 1.5 ms from the last decrease: 5 fast-recovery steps
    let t0 = 18 * US + 1_000;
    let mut cr = G10 / 4.0;
    let mut tr = G10;
    for k in 0..5u64 {
        h.advance(&mut rp, t0 + (k + 1) * 1_500 * US);
        cr = cr / 2.0 + tr / 2.0;
        assert!((rp.flows[0].cr - cr).abs() < 1e-3, "FR {k}");
        assert_eq!(rp.flows[0].tr, G10);
    }
    // stage 5: active increase (TR capped at line rate); the byte counter plays no part
    rp.on_transmit(&mut h.ctx(), 0, &mut data());
    assert_eq!(rp.flows[0].bc_stage, 0);
    h.advance(&mut rp, t0 + 6 * 1_500 * US);
    tr = (tr + 5e6).min(G10);
    cr = cr / 2.0 + tr / 2.0;
    assert!((rp.flows[0].cr - cr).abs() < 1e-3);
    // a decrease at timer stage != 0 clamps TR to CR
    h.now = t0 + 6 * 1_500 * US + 1;
    rp.on_feedback(&mut h.ctx(), &cnp());
    let cr_before = rp.flows[0].cr;
    let alpha = rp.flows[0].alpha;
    h.advance(&mut rp, h.now + 4 * US);
    assert_eq!(rp.flows[0].tr, cr_before);
    assert!((rp.flows[0].cr - cr_before * (1.0 - alpha / 2.0)).abs() < 1e-3);
}

#[test]
fn thresholds_and_increase_steps_scale_with_the_link_rate_given_a_reference_rate() {
    // the HPCC paper's baseline: kmin / kmax per 25 Gb/s of port rate, R_AI / R_HAI per 25 Gb/s of NIC rate
    let p = Params { kmin_bytes: 100_000, kmax_bytes: 400_000, r_ai_bps: 5e6, r_hai_bps: 50e6, rate_reference_bps: 25e9, ..Params::mellanox() };
    let port = p.for_port(100_000_000_000);
    assert_eq!((port.kmin_bytes, port.kmax_bytes), (400_000, 1_600_000));
    let nic = p.for_nic(40_000_000_000);
    assert_eq!((nic.r_ai_bps, nic.r_hai_bps), (8e6, 80e6));
    assert_eq!((nic.kmin_bytes, port.r_ai_bps), (100_000, 5e6), "each scaling touches its own half");
    // without a reference rate nothing scales
    let abs = Params::paper();
    assert_eq!(abs.for_port(100_000_000_000).kmin_bytes, abs.kmin_bytes);
    assert_eq!(abs.for_nic(100_000_000_000).r_ai_bps, abs.r_ai_bps);
}
