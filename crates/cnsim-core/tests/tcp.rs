//! TCP over the layer-2 network: NewReno and DCTCP flows end to end (segments and ACKs as frames,
//! drop-tail and ECN-marking switches, PAUSE). Each test checks a property that breaks if the
//! transport or its wiring into hosts and switches is wrong.

use cnsim_core::ir::*;
use cnsim_core::{Results, Simulation};
use serde_json::Value;

const G10: u64 = 10_000_000_000;
const US: u64 = 1_000_000;
const MS: u64 = 1_000_000_000;

fn tcp(cc: CcIr) -> TransportIr {
    TransportIr::Tcp(TcpIr {
        header_bytes: 40,
        ack_bytes: 64,
        init_cwnd_segments: 10,
        rcv_wnd_bytes: u64::MAX,
        init_ssthresh_bytes: u64::MAX,
        init_rto_ps: MS,
        min_rto_ps: MS,
        max_rto_ps: 60_000 * MS,
        dupack_threshold: 3,
        delayed_ack: false,
        delack_timeout_ps: 40 * US,
        cc,
        sack: false,
    })
}

fn dctcp() -> CcIr {
    CcIr::Dctcp { g: 1.0 / 16.0, alpha_init: 1.0 }
}

/// N saturated TCP senders (nodes 2..) → one switch (node 0) → receiver (node 1), 10 Gb/s, 0.5 µs.
fn incast(n: u32, cc: CcIr, buffer: u64, pause: PauseIr, ecn: Option<u64>, dur: u64) -> Ir {
    let mut nodes = vec![
        NodeIr::Switch { name: "sw".into(), latency_ps: US, buffer: BufferIr::Egress { egress_bytes: buffer }, pause, ecn_threshold_bytes: ecn },
        NodeIr::Host { name: "rx".into(), response_delay_ps: US },
    ];
    let mut links = vec![LinkIr { a: 0, b: 1, rate_bps: G10, prop_ps: US / 2 }];
    let (mut flows, mut sources) = (vec![], vec![]);
    for i in 0..n {
        nodes.push(NodeIr::Host { name: format!("s{i}"), response_delay_ps: US });
        links.push(LinkIr { a: 2 + i, b: 0, rate_bps: G10, prop_ps: US / 2 });
        flows.push(FlowIr { src: 2 + i, dst: Some(1), frame_bytes: 1500, transport: tcp(cc.clone()), priority: 0 });
        sources.push(SourceIr {
            stream_id: i as u64,
            flows: vec![i],
            start_ps: 0,
            stop_ps: u64::MAX,
            gate: None,
            process: ProcessIr::Saturated,
            dst_set: None,
        });
    }
    Ir { warmup_ps: dur / 5, observe: ObserveIr::sampled(10 * US, 100 * US), ..Ir::new("tcp", dur, nodes, links, flows, sources) }
}

fn run(ir: Ir) -> Results {
    Simulation::new(ir).expect("valid").run().expect("conservation holds")
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}
fn u(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

fn bottleneck(s: &Value) -> &Value {
    s["queues"].as_array().unwrap().iter().find(|q| q["port"] == "rx").unwrap()
}

#[test]
fn one_newreno_flow_fills_the_link_without_timeouts() {
    let s = run(incast(1, CcIr::NewReno, 150_000, PauseIr::None, None, 20 * MS)).summary;
    let fl = &s["flows"][0];
    // goodput is payload: at most 1460/1500 of the line
    let max_goodput = 10e9 * 1460.0 / 1500.0;
    assert!(f(&fl["goodput_bps"]) > 0.97 * max_goodput, "goodput {}", fl["goodput_bps"]);
    assert_eq!(u(&fl["timeouts"]), 0);
    assert_eq!(u(&s["tcp"]["acks"]["dropped"]), 0);
    assert!(u(&s["tcp"]["acks"]["generated"]) > 10_000, "one ACK per segment without delayed ACKs");
}

#[test]
fn newreno_flows_share_a_bottleneck_fully_and_fairly() {
    let s = run(incast(4, CcIr::NewReno, 150_000, PauseIr::None, None, 200 * MS)).summary;
    let agg: f64 = s["flows"].as_array().unwrap().iter().map(|fl| f(&fl["throughput_bps"])).sum();
    assert!(agg > 0.95 * 10e9, "aggregate {agg}");
    assert!(f(&s["fairness"]["jain"]) > 0.9, "Jain {}", s["fairness"]["jain"]);
    assert!(u(&s["frames"]["dropped"]) > 0, "drop-tail NewReno probes until it loses");
    assert!(u(&s["tcp"]["fast_retransmits"]) > 0, "losses are repaired by fast retransmit");
}

#[test]
fn dctcp_holds_the_queue_near_k_without_drops() {
    // DCTCP paper: K = 65 packets at 10 Gb/s; queue oscillates between ≈ K + N - A and K + N with
    // amplitude A = ½·sqrt(2N(C·RTT + K)) ≈ 12 packets for N = 4, RTT ≈ 10 µs
    let k = 65 * 1500;
    let s = run(incast(4, dctcp(), 300_000, PauseIr::None, Some(k), 100 * MS)).summary;
    let q = bottleneck(&s);
    assert_eq!(u(&s["frames"]["dropped"]), 0, "an adequate buffer never overflows under DCTCP");
    let agg: f64 = s["flows"].as_array().unwrap().iter().map(|fl| f(&fl["throughput_bps"])).sum();
    assert!(agg > 0.95 * 10e9, "utilisation {agg}");
    let mean = f(&q["mean_bytes"]);
    let (lo, hi) = ((65.0 - 25.0) * 1500.0, (65.0 + 4.0 + 6.0) * 1500.0);
    assert!(mean > lo && mean < hi, "mean queue {mean} B not near K = {k} B (expected {lo}..{hi})");
    assert!(u(&q["ecn_marks"]) > 0 && u(&s["tcp"]["ecn_reductions"]) > 0);
    // α tracks the fraction of marked segments
    let marked = u(&q["ecn_marks"]) as f64;
    let sent: f64 = s["flows"].as_array().unwrap().iter().map(|fl| u(&fl["segments_sent"]) as f64).sum();
    let frac = marked / sent;
    for fl in s["flows"].as_array().unwrap() {
        let a = f(&fl["dctcp_alpha"]);
        assert!(a > frac / 3.0 && a < 3.0 * frac + 0.05, "alpha {a} vs marked fraction {frac}");
    }
}

#[test]
fn tcp_over_pause_is_lossless_and_never_times_out() {
    let pause = PauseIr::Selective { high_bytes: 100_000, low_bytes: 90_000, quanta: 65535, refresh_fraction: 0.8 };
    // selective PAUSE needs BUF-IN accounting; global works on the egress buffer
    let global = PauseIr::Global { high_bytes: 120_000, low_bytes: 110_000, quanta: 65535, refresh_fraction: 0.8 };
    for p in [global, pause] {
        let mut ir = incast(8, CcIr::NewReno, 150_000, p.clone(), None, 50 * MS);
        if matches!(p, PauseIr::Selective { .. }) {
            if let NodeIr::Switch { buffer, .. } = &mut ir.nodes[0] {
                *buffer = BufferIr::Ingress { ingress_bytes: 150_000 };
            }
        }
        let s = run(ir).summary;
        assert_eq!(u(&s["frames"]["dropped"]), 0, "{p:?}: no data lost");
        assert_eq!(u(&s["tcp"]["acks"]["dropped"]), 0, "{p:?}: no ACK lost");
        assert_eq!(u(&s["tcp"]["timeouts"]), 0, "{p:?}");
        assert_eq!(u(&s["tcp"]["retransmitted_segments"]), 0, "{p:?}");
        assert!(u(&s["pause"]["frames_sent"]) > 0, "{p:?}: PAUSE did the work");
    }
}

#[test]
fn tcp_runs_are_deterministic() {
    let a = run(incast(4, dctcp(), 150_000, PauseIr::None, Some(30_000), 10 * MS)).summary;
    let b = run(incast(4, dctcp(), 150_000, PauseIr::None, Some(30_000), 10 * MS)).summary;
    assert_eq!(a, b);
}

/// Transfers written in Pareto ON periods (x_m 12 µs at 10 Gb/s, α 2.5) separated by OFF periods of
/// 50 µs mean: light load, every segment acknowledged.
fn light_transfers() -> ProcessIr {
    ProcessIr::ParetoOnOff {
        xm_ps: 12 * US,
        alpha: 2.5,
        off_mean_ps: 50 * US,
        line_rate_bps: G10,
        cap_ps: None,
        shifted: false,
        nic_buffer_frames: None,
        rl_release: false,
    }
}

#[test]
fn transfers_complete_when_their_last_byte_is_acknowledged() {
    // a CBR application writing one segment every 12 µs: light load, every segment acknowledged
    let mut ir = incast(1, CcIr::NewReno, 150_000, PauseIr::None, None, 5 * MS);
    ir.sources[0].process = light_transfers();
    let s = run(ir).summary;
    let fct = &s["fct"];
    assert!(u(&fct["count"]) > 20, "transfers complete: {fct}");
    // the smallest transfer (10 segments at 12 µs × 10 Gb/s) needs at least one RTT plus its
    // serialisation: > 12 µs; and no transfer is "bad" (TCP repairs losses)
    assert!(f(&fct["min_us"]) > 12.0, "{fct}");
    assert_eq!(u(&fct["bad_flows"]), 0);
}

#[test]
fn without_fct_rows_tcp_transfers_are_folded_when_acknowledged() {
    let mut ir = incast(2, CcIr::NewReno, 150_000, PauseIr::None, None, 10 * MS);
    for s in &mut ir.sources {
        s.process = light_transfers();
    }
    let on = run(ir.clone()).summary;
    ir.observe.fct = false;
    let mut sim = Simulation::new(ir).expect("valid");
    sim.run_until(u64::MAX);
    let slots = sim.network().transfers.capacity_used();
    let off = sim.finish().expect("conservation holds").summary;
    assert!(u(&on["fct"]["count"]) > 50, "{}", on["fct"]);
    assert_eq!(on, off, "the same summary, FCT statistics included, with or without rows");
    assert!(slots <= 8, "{slots} slots");
}
