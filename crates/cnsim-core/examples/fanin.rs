//! The fan-in-N reference workload (same as ../shared/bench/fanin_*): N CBR senders at
//! `rate` Gb/s with a random phase, each on its own 10 Gb/s link (0.5 µs) into one switch that
//! forwards to one receiver; 150 KB drop-tail egress; 1500-B frames. Built directly as an IR (no
//! Python). Prints one line of key=value figures for bench/run.py.
//!
//! cargo run --release -p cnsim-core --example fanin -- --n 4 --rate-gbps 5 --ms 100 --seed 1

use cnsim_core::ir::*;
use cnsim_core::Simulation;
use std::time::Instant;

fn arg(args: &[String], name: &str, default: f64) -> f64 {
    args.windows(2).find(|w| w[0] == name).map(|w| w[1].parse().expect("number")).unwrap_or(default)
}

/// The fan-in IR (also used by the benches and tests).
pub fn fanin_ir(n: u32, rate_gbps: f64, ms: f64, seed: u64) -> Ir {
    let mut nodes = vec![NodeIr::Switch {
        name: "sw".into(),
        latency_ps: 0,
        buffer: BufferIr::Egress { egress_bytes: 150_000 },
        pause: PauseIr::None,
        ecn_threshold_bytes: None,
    }];
    let mut links = Vec::new();
    let mut flows = Vec::new();
    let mut sources = Vec::new();
    nodes.push(NodeIr::Host { name: "rx".into(), response_delay_ps: 0 });
    links.push(LinkIr { a: 0, b: 1, rate_bps: 10_000_000_000, prop_ps: 500_000 });
    let interval = (1500.0 * 8.0 / (rate_gbps * 1e9) * 1e12).round() as u64;
    for i in 0..n {
        let h = nodes.len() as u32;
        nodes.push(NodeIr::Host { name: format!("s{i}"), response_delay_ps: 0 });
        links.push(LinkIr { a: h, b: 0, rate_bps: 10_000_000_000, prop_ps: 500_000 });
        flows.push(FlowIr { src: h, dst: Some(1), frame_bytes: 1500, transport: TransportIr::Udp, priority: 0 });
        sources.push(SourceIr {
            stream_id: i as u64,
            flows: vec![i],
            start_ps: 0,
            stop_ps: u64::MAX,
            gate: None,
            process: ProcessIr::Cbr { interval_ps: interval, phase_ps: 0, random_phase: true },
            dst_set: None,
        });
    }
    let observe = ObserveIr { fct: false, ..ObserveIr::fct_only() };
    Ir { seed, observe, ..Ir::new(&format!("fan-in-{n}"), (ms * 1e9) as u64, nodes, links, flows, sources) }
}

fn max_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.split_whitespace().nth(1).unwrap_or("0").parse().unwrap_or(0)))
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n = arg(&args, "--n", 4.0) as u32;
    let rate = arg(&args, "--rate-gbps", 5.0);
    let ms = arg(&args, "--ms", 100.0);
    let seed = arg(&args, "--seed", 1.0) as u64;
    let ir = fanin_ir(n, rate, ms, seed);
    let t0 = Instant::now();
    let sim = Simulation::new(ir).expect("valid IR");
    let mut sim = sim;
    sim.run_until(u64::MAX);
    let run_s = t0.elapsed().as_secs_f64();
    let events = sim.events();
    let res = sim.finish().expect("conservation");
    let s = &res.summary;
    let sent = s["frames"]["sent"].as_u64().unwrap();
    let delivered = s["frames"]["delivered"].as_u64().unwrap();
    let dropped = s["frames"]["dropped"].as_u64().unwrap();
    let gbps = s["bytes"]["delivered"].as_u64().unwrap() as f64 * 8.0 / (ms * 1e-3) / 1e9;
    println!(
        "sim=cnsim n={n} sent={sent} delivered={delivered} dropped={dropped} events={events} run_s={run_s:.4} pkts_per_wall_s={:.0} events_per_s={:.0} max_rss_kb={} delivered_gbps={gbps:.4} drop_ratio={:.4}",
        (delivered + dropped) as f64 / run_s,
        events as f64 / run_s,
        max_rss_kb(),
        dropped as f64 / sent as f64
    );
}
