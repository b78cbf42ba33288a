//! TCP with selective acknowledgements (RFC 2018 / RFC 6675) on the network: a deep drop-tail buffer
//! that the first slow start overflows by hundreds of segments — NewReno repairs one hole per round
//! trip and stays in recovery, SACK repairs them within a few round trips and fills the link.

use cnsim_core::ir::*;
use cnsim_core::{Results, Simulation};
use serde_json::Value;

const G10: u64 = 10_000_000_000;
const US: u64 = 1_000_000;
const MS: u64 = 1_000_000_000;

fn tcp(cc: CcIr, sack: bool) -> TransportIr {
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
        sack,
    })
}

/// N saturated senders → switch → receiver, 10 Gb/s links of `delay`, egress buffer `buffer`.
fn fan_in(n: u32, cc: CcIr, sack: bool, buffer: u64, delay: u64, dur: u64) -> Ir {
    let mut nodes = vec![
        NodeIr::Switch {
            name: "sw".into(),
            latency_ps: 0,
            buffer: BufferIr::Egress { egress_bytes: buffer },
            pause: PauseIr::None,
            ecn_threshold_bytes: None,
        },
        NodeIr::Host { name: "rx".into(), response_delay_ps: 0 },
    ];
    let mut links = vec![LinkIr { a: 0, b: 1, rate_bps: G10, prop_ps: delay }];
    let (mut flows, mut sources) = (vec![], vec![]);
    for i in 0..n {
        nodes.push(NodeIr::Host { name: format!("s{i}"), response_delay_ps: 0 });
        links.push(LinkIr { a: 2 + i, b: 0, rate_bps: G10, prop_ps: delay });
        flows.push(FlowIr { src: 2 + i, dst: Some(1), frame_bytes: 1500, transport: tcp(cc.clone(), sack), priority: 0 });
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
    let observe = ObserveIr { fct: false, ..ObserveIr::fct_only() };
    Ir { warmup_ps: dur / 3, observe, ..Ir::new("sack", dur, nodes, links, flows, sources) }
}

fn run(ir: Ir) -> Results {
    Simulation::new(ir).expect("valid").run().expect("conservation holds")
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

#[test]
fn sack_fills_the_link_where_newreno_stays_in_recovery() {
    // the setup: 2 flows, 24-µs links (RTT ≈ 100 µs), 600 KB, no initial ssthresh, 60 ms
    let line_goodput = 10e9 * 1460.0 / 1500.0;
    let with = run(fan_in(2, CcIr::NewReno, true, 600_000, 24 * US, 60 * MS)).summary;
    let without = run(fan_in(2, CcIr::NewReno, false, 600_000, 24 * US, 60 * MS)).summary;
    let (g1, g0) = (f(&with["tcp"]["goodput_bps"]), f(&without["tcp"]["goodput_bps"]));
    assert!(g1 > 0.98 * line_goodput, "SACK goodput {g1}");
    assert!(g0 < 0.05 * line_goodput, "NewReno goodput {g0}: one hole per round trip");
    // SACK repairs the ≈ 430 losses of the first slow start at once; a retransmission lost in the
    // full queue again needs the timeout (RFC 6675 has no lost-retransmission detection)
    let drops = with["frames"]["dropped"].as_u64().unwrap();
    let retx = with["tcp"]["retransmitted_segments"].as_u64().unwrap();
    let timeouts = with["tcp"]["timeouts"].as_u64().unwrap();
    eprintln!("SACK: drops {drops}, retransmissions {retx}, timeouts {timeouts}, goodput {g1}; NewReno {g0}");
    assert!(drops > 400, "drops {drops}");
    assert!(timeouts <= 3, "timeouts {timeouts}");
    assert!(retx >= drops && retx <= drops + 10 * timeouts, "drops {drops}, retransmissions {retx}");
}

#[test]
fn sack_keeps_shallow_buffer_results_and_is_deterministic() {
    // with a 150 KB buffer and 4 flows both recoveries fill the link and share it fairly
    for cc in [CcIr::NewReno, CcIr::Dctcp { g: 1.0 / 16.0, alpha_init: 1.0 }] {
        let a = run(fan_in(4, cc.clone(), true, 150_000, US / 2, 30 * MS)).summary;
        let agg: f64 = a["flows"].as_array().unwrap().iter().map(|fl| f(&fl["throughput_bps"])).sum();
        assert!(agg > 0.97 * 10e9, "{cc:?}: aggregate {agg}");
        assert!(f(&a["fairness"]["jain"]) > 0.95, "{cc:?}: Jain {}", a["fairness"]["jain"]);
        assert_eq!(a["tcp"]["timeouts"], 0, "{cc:?}");
        let b = run(fan_in(4, cc.clone(), true, 150_000, US / 2, 30 * MS)).summary;
        assert_eq!(a["flows"], b["flows"], "{cc:?}: same IR, same results");
    }
}
