//! Property test: random IRs — valid or not — never panic. Valid ones run with conservation
//! holding (checked by the engine itself at the end of the run) and queues within their limits;
//! invalid ones are rejected with an error naming a field path. Random JSON mutations of a valid IR
//! are rejected or accepted, never crash the parser.

use cnsim_core::ir::*;
use cnsim_core::rng::Stream;
use cnsim_core::Simulation;
use serde_json::Value;

const US: u64 = 1_000_000;

fn pick<'a, T>(r: &mut Stream, xs: &'a [T]) -> &'a T {
    &xs[r.below(xs.len() as u64) as usize]
}

/// Random TCP parameters (NewReno or DCTCP, delayed ACKs or not, short or long RTO).
fn random_tcp(r: &mut Stream) -> TcpIr {
    TcpIr {
        header_bytes: 40,
        ack_bytes: 64,
        init_cwnd_segments: *pick(r, &[1u32, 2, 10]),
        rcv_wnd_bytes: *pick(r, &[64_000u64, 1_000_000, u64::MAX]),
        init_ssthresh_bytes: u64::MAX,
        init_rto_ps: 1000 * US,
        min_rto_ps: *pick(r, &[100 * US, 1000 * US]),
        max_rto_ps: 60_000_000 * US,
        dupack_threshold: 3,
        delayed_ack: r.bernoulli(0.5),
        delack_timeout_ps: 40 * US,
        cc: if r.bernoulli(0.5) { CcIr::NewReno } else { CcIr::Dctcp { g: 1.0 / 16.0, alpha_init: 1.0 } },
        sack: r.bernoulli(0.5),
    }
}

/// A random (mostly valid) network: a tree of 1–4 switches with 2–8 hosts, random buffers, PAUSE
/// modes, ECN thresholds, rates, UDP and TCP flows, sources of every kind and sometimes a hotspot.
fn random_ir(r: &mut Stream) -> Ir {
    let n_sw = 1 + r.below(4) as u32;
    let n_h = 2 + r.below(7) as u32;
    let mut nodes = Vec::new();
    for s in 0..n_sw {
        let limit = *pick(r, &[3_000u64, 30_000, 150_000]);
        let buffer = match r.below(3) {
            0 => BufferIr::Egress { egress_bytes: limit },
            1 => BufferIr::Ingress { ingress_bytes: limit },
            _ => BufferIr::Shared { shared_bytes: limit * 4 },
        };
        let pause = match r.below(3) {
            0 => PauseIr::None,
            1 => PauseIr::Global { high_bytes: limit * 8 / 10, low_bytes: limit * 6 / 10, quanta: 65535, refresh_fraction: 0.8 },
            _ => PauseIr::Selective { high_bytes: limit * 8 / 10, low_bytes: limit * 6 / 10, quanta: 1000, refresh_fraction: 0.5 },
        };
        let ecn_threshold_bytes = r.bernoulli(0.3).then_some(limit / 4);
        nodes.push(NodeIr::Switch { name: format!("sw{s}"), latency_ps: r.below(2) * US, buffer, pause, ecn_threshold_bytes });
    }
    let mut links = Vec::new();
    for s in 1..n_sw {
        links.push(LinkIr { a: s, b: r.below(s as u64) as u32, rate_bps: *pick(r, &[1_000_000_000, 10_000_000_000]), prop_ps: r.below(3) * US });
    }
    for h in 0..n_h {
        let id = nodes.len() as u32;
        nodes.push(NodeIr::Host { name: format!("h{h}"), response_delay_ps: US });
        links.push(LinkIr {
            a: id,
            b: r.below(n_sw as u64) as u32,
            rate_bps: *pick(r, &[1_000_000_000, 10_000_000_000, 40_000_000_000]),
            prop_ps: US / 2,
        });
    }
    let hosts: Vec<u32> = (n_sw..n_sw + n_h).collect();
    let mut flows = Vec::new();
    let mut sources = Vec::new();
    for (k, &src) in hosts.iter().enumerate() {
        if r.bernoulli(0.3) {
            continue;
        }
        let mut fl = Vec::new();
        for &dst in &hosts {
            if dst != src && r.bernoulli(0.5) {
                fl.push(flows.len() as u32);
                let frame_bytes = *pick(r, &[64u32, 1000, 1500]);
                let transport = if frame_bytes > 100 && r.bernoulli(0.3) { TransportIr::Tcp(random_tcp(r)) } else { TransportIr::Udp };
                flows.push(FlowIr { src, dst: Some(dst), frame_bytes, transport, priority: 0 });
            }
        }
        if fl.is_empty() {
            continue;
        }
        let process = match r.below(6) {
            0 => ProcessIr::Saturated,
            1 => ProcessIr::Cbr { interval_ps: 1 + r.below(5 * US), phase_ps: r.below(US), random_phase: r.bernoulli(0.5) },
            2 => ProcessIr::Bernoulli { slot_ps: 1_200_000, p: 0.01 + 0.99 * r.uniform() },
            3 => {
                // frame sizes drawn per frame (UDP flows only; no larger than the flows' frames)
                let udp = fl.iter().all(|&f| matches!(flows[f as usize].transport, TransportIr::Udp));
                let largest = fl.iter().map(|&f| flows[f as usize].frame_bytes).min().unwrap_or(64);
                let sizes = match r.below(3) {
                    0 if udp && largest > 64 => {
                        Some(FrameSizesIr::Exponential { scale_bytes: 50.0 + 1000.0 * r.uniform(), min_bytes: 64, max_bytes: largest })
                    }
                    1 if udp => Some(FrameSizesIr::Mix { bytes: vec![64, largest], weights: vec![0.1 + r.uniform(), 0.1 + r.uniform()] }),
                    _ => None,
                };
                ProcessIr::Poisson { mean_gap_ps: 1 + r.below(3 * US), sizes }
            }
            5 => {
                // open-loop flows of 1 B to 20 kB, whole frames or the remainder in the last frame
                let cdf = vec![(1.0, 0.0), (100.0, 0.3), (3_000.0, 0.7), (20_000.0, 1.0)];
                if r.bernoulli(0.5) {
                    ProcessIr::FlowArrivals { mean_gap_ps: 1 + r.below(20 * US), cdf, partial_last: r.bernoulli(0.7) }
                } else {
                    ProcessIr::PeriodicFlows {
                        period_ps: 1 + r.below(100 * US),
                        phase_ps: r.below(US),
                        bytes: 1 + r.below(10_000),
                        partial_last: r.bernoulli(0.7),
                    }
                }
            }
            _ => {
                // closed loop, NIC buffer (bounded or open loop), or release by a rate limiter
                let (nic_buffer_frames, rl_release) = match r.below(4) {
                    0 => (Some(r.below(200)), false),
                    1 => (Some(u64::MAX), false),
                    2 => (None, true),
                    _ => (None, false),
                };
                ProcessIr::ParetoOnOff {
                    xm_ps: 1_200_000,
                    alpha: 1.05 + r.uniform(),
                    off_mean_ps: 15 * US,
                    line_rate_bps: 10_000_000_000,
                    cap_ps: r.bernoulli(0.5).then_some(30_000 * US),
                    shifted: r.bernoulli(0.3),
                    nic_buffer_frames,
                    rl_release,
                }
            }
        };
        let gate = r.bernoulli(0.2).then(|| GateIr { on_ps: 1 + r.below(300 * US), off_ps: 1 + r.below(300 * US), start_on: r.bernoulli(0.5) });
        sources.push(SourceIr { stream_id: k as u64, flows: fl, start_ps: r.below(100 * US), stop_ps: u64::MAX, gate, process, dst_set: None });
    }
    let mut hotspots = Vec::new();
    if r.bernoulli(0.3) {
        let h = *pick(r, &hosts);
        let sw = links.iter().find(|l| l.a == h).map(|l| l.b).unwrap();
        hotspots.push(HotspotIr { switch: sw, toward: h, schedule: vec![(100 * US, 500_000_000), (300 * US, 0), (400 * US, 10_000_000_000)] });
    }
    Ir {
        duration_ps: 500 * US + r.below(500 * US),
        warmup_ps: r.below(100 * US),
        seed: r.next_u64(),
        wire_overhead_bytes: *pick(r, &[0u32, 20]),
        hotspots,
        observe: ObserveIr::sampled(50 * US, 100 * US),
        ..Ir::new("random", 0, nodes, links, flows, sources)
    }
}

#[test]
fn random_networks_run_and_conserve() {
    let mut r = Stream::new(2026, 0, 1);
    let mut ran = 0;
    for case in 0..150 {
        let ir = random_ir(&mut r);
        match Simulation::new(ir.clone()) {
            Ok(sim) => {
                let res = sim.run().unwrap_or_else(|e| panic!("case {case}: {e}\n{}", serde_json::to_string(&ir).unwrap()));
                assert_eq!(res.summary["conservation"]["ok"], Value::Bool(true));
                for q in res.summary["queues"].as_array().unwrap() {
                    assert!(q["max_bytes"].as_u64().unwrap() <= 600_000, "case {case}: queue above any limit");
                }
                ran += 1;
            }
            Err(e) => {
                let m = e.to_string();
                assert!(m.contains(':'), "case {case}: error without a path: {m}");
            }
        }
    }
    assert!(ran > 100, "too few valid random cases ({ran})");
}

/// [`random_ir`] with links failing and recovering at random times (random detection and convergence
/// delays), a random flow pinned to its path and a packet capture on a random port (issue 36).
fn with_dynamics(mut ir: Ir, r: &mut Stream) -> Ir {
    let links = ir.links.len() as u64;
    for _ in 0..1 + r.below(4) {
        let link = r.below(links) as u32;
        let t = r.below(ir.duration_ps);
        ir.routing.events.push(LinkEventIr { t_ps: t, link, up: false });
        if r.bernoulli(0.6) {
            ir.routing.events.push(LinkEventIr { t_ps: t + r.below(200 * US), link, up: true });
        }
    }
    ir.routing.detection_ps = *pick(r, &[0, US, 20 * US]);
    ir.routing.convergence_ps = *pick(r, &[0, 50 * US, u64::MAX]);
    if !ir.flows.is_empty() && r.bernoulli(0.5) {
        let flow = r.below(ir.flows.len() as u64) as u32;
        let path = cnsim_core::net::flow_paths(&ir)[flow as usize].clone();
        if path.len() >= 3 {
            ir.routing.pinned.push(PinnedIr { flow, path });
        }
    }
    let l = &ir.links[r.below(links) as usize];
    let (node, peer) = if r.bernoulli(0.5) { (l.a, l.b) } else { (l.b, l.a) };
    ir.observe.pcap.push(PcapIr { name: "cap".into(), node, peer, start_ps: 0, end_ps: ir.duration_ps, snaplen: 128 });
    ir
}

/// A random network of [`random_ir`] (or its PFC variant) with a send queue per transfer (or transfer
/// queues sharing their flow's limiter), a random congestion-management scheme with its default
/// parameters (`tests/golden/cm-params.json`), and the transfer sources of several flows turned into
/// one flow without a destination of its own, drawing each transfer's from a shared set.
fn random_transfer_ir(r: &mut Stream) -> Ir {
    let mut ir = if r.bernoulli(0.3) { random_pfc_ir(r) } else { random_ir(r) };
    let per_queue = r.bernoulli(0.8);
    ir.nic = NicIr { queues: NicQueuesIr::Transfer, rate_limiters: if per_queue { RateLimitersIr::Queue } else { RateLimitersIr::Flow } };
    let cm: Value =
        serde_json::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/golden/cm-params.json")).unwrap()).unwrap();
    let schemes = ["none", "bcn", "ecm", "qcn", "dcqcn", "hpcc", "fecn", "becn"];
    let scheme = *pick(r, &schemes);
    ir.cm = match scheme {
        "none" => CmIr { scheme: "none".into(), params: Value::Null },
        s => serde_json::from_value(cm[s].clone()).unwrap(),
    };
    if per_queue {
        for s in ir.sources.iter_mut() {
            let transfers = matches!(s.process, ProcessIr::FlowArrivals { .. } | ProcessIr::PeriodicFlows { .. } | ProcessIr::ParetoOnOff { .. });
            if transfers && s.flows.len() > 1 && r.bernoulli(0.5) {
                let set: Vec<u32> = s.flows.iter().map(|&f| ir.flows[f as usize].dst.unwrap()).collect();
                ir.flows[s.flows[0] as usize].dst = None; // the other flows stay, unused
                s.flows.truncate(1);
                s.dst_set = Some(ir.dst_sets.len() as u32);
                ir.dst_sets.push(set);
            }
        }
    }
    ir
}

#[test]
fn random_networks_with_failing_links_run_and_conserve() {
    let (mut r, mut extra) = (Stream::new(2026, 0, 1), Stream::new(2026, 0, 7));
    let mut ran = 0;
    for case in 0..150 {
        let ir = with_dynamics(random_ir(&mut r), &mut extra);
        let Ok(mut sim) = Simulation::new(ir.clone()) else { continue };
        sim.run_until(u64::MAX);
        let captured: usize = sim.take_pcap().iter().map(|(_, b)| b.len()).sum();
        let res = sim.finish().unwrap_or_else(|e| panic!("case {case}: {e}\n{}", serde_json::to_string(&ir).unwrap()));
        assert_eq!(res.summary["conservation"]["ok"], Value::Bool(true));
        let frames = res.summary["pcap"][0]["frames"].as_u64().unwrap() as usize;
        assert!(captured >= 24 + 16 * frames, "case {case}: a record per captured frame");
        ran += 1;
    }
    assert!(ran > 100, "too few valid random cases ({ran})");
}

#[test]
fn random_transfer_queue_networks_run_and_conserve() {
    let mut r = Stream::new(2026, 0, 4);
    let (mut ran, mut opened) = (0, 0);
    for case in 0..150 {
        let ir = random_transfer_ir(&mut r);
        match Simulation::new(ir.clone()) {
            Ok(mut sim) => {
                sim.run_until(u64::MAX);
                let net = sim.network();
                // every transfer queue still open holds a transfer in progress: frames waiting, in
                // flight, or a TCP connection not yet done
                let open = net.open_transfer_queues();
                opened += net.flows.len() - net.n_flows;
                assert!(open <= net.transfers.in_progress().len(), "case {case}: {open} queues open");
                // conservation per transfer: a UDP transfer in a queue of its own has each of its frames
                // waiting there, in flight, delivered or dropped
                for t in net.transfers.in_progress() {
                    let q = &net.flows[t.queue.idx()];
                    if t.queue.idx() >= net.n_flows && q.tcp.is_none() {
                        let inflight = net.transfer_queue_inflight(t.queue) as u64;
                        assert_eq!(q.backlog + inflight + t.delivered + t.dropped, t.frames, "case {case}: a transfer's frames");
                    }
                }
                let res = sim.finish().unwrap_or_else(|e| panic!("case {case}: {e}\n{}", serde_json::to_string(&ir).unwrap()));
                assert_eq!(res.summary["conservation"]["ok"], Value::Bool(true), "case {case}");
                ran += 1;
            }
            Err(e) => {
                let m = e.to_string();
                assert!(m.contains(':'), "case {case}: error without a path: {m}");
            }
        }
    }
    eprintln!("{ran} runs, {opened} transfer queues");
    assert!(ran > 100 && opened > 1_000, "too few valid random cases ({ran}) or transfer queues ({opened})");
}

/// Random transfer-queue networks with RDMA loss recovery (go-back-N or selective repeat, random timeouts),
/// half of them with failing links: every run conserves frames (retransmissions included), and no transfer
/// under recovery counts a dropped frame (issue 36).
#[test]
fn random_rdma_networks_recover_and_conserve() {
    let (mut r, mut extra) = (Stream::new(2026, 0, 9), Stream::new(2026, 0, 10));
    let (mut ran, mut retransmitted) = (0, 0);
    for case in 0..120 {
        let mut ir = random_transfer_ir(&mut r);
        ir.nic.rate_limiters = RateLimitersIr::Queue;
        let loss_recovery = if extra.bernoulli(0.5) { LossRecoveryIr::GoBackN } else { LossRecoveryIr::SelectiveRepeat };
        ir.rdma = Some(RdmaIr { loss_recovery, timeout_ps: *pick(&mut extra, &[20 * US, 200 * US, 1_000 * US]) });
        if extra.bernoulli(0.5) {
            ir = with_dynamics(ir, &mut extra);
        }
        let Ok(mut sim) = Simulation::new(ir.clone()) else { continue };
        sim.run_until(u64::MAX);
        let net = sim.network();
        for t in net.transfers.in_progress() {
            if t.queue.idx() >= net.n_flows && net.flows[t.queue.idx()].tcp.is_none() {
                assert!(t.dropped == 0 && t.delivered <= t.frames, "case {case}: a recovered transfer's counts");
            }
        }
        let res = sim.finish().unwrap_or_else(|e| panic!("case {case}: {e}\n{}", serde_json::to_string(&ir).unwrap()));
        assert_eq!(res.summary["conservation"]["ok"], Value::Bool(true), "case {case}");
        retransmitted += res.summary["rdma"]["retransmitted_frames"].as_u64().unwrap_or(0);
        ran += 1;
    }
    eprintln!("{ran} runs, {retransmitted} frames retransmitted");
    assert!(ran > 60 && retransmitted > 100, "too few valid random cases ({ran}) or retransmissions ({retransmitted})");
}

/// A random network of [`random_ir`] turned to PFC: every switch with a shared buffer, random lossless
/// priorities, static or dynamic thresholds, strict or DWRR, random headroom (often too small, so the
/// headroom-drop path runs) and sometimes a watchdog; flows at random priorities.
fn random_pfc_ir(r: &mut Stream) -> Ir {
    let mut ir = random_ir(r);
    let n = ir.nodes.len();
    let ports: Vec<usize> = (0..n).map(|i| ir.links.iter().filter(|l| l.a as usize == i || l.b as usize == i).count()).collect();
    for (i, node) in ir.nodes.iter_mut().enumerate() {
        if let NodeIr::Switch { buffer, pause, .. } = node {
            *buffer = BufferIr::Shared { shared_bytes: *pick(r, &[100_000u64, 300_000, 1_000_000]) };
            let threshold = if r.bernoulli(0.5) {
                PfcThresholdIr::Static { xoff_bytes: *pick(r, &[5_000u64, 30_000]) }
            } else {
                PfcThresholdIr::Dynamic { alpha: *pick(r, &[0.25, 1.0, 4.0]) }
            };
            let scheduler = if r.bernoulli(0.5) {
                SchedulerIr::Strict
            } else {
                SchedulerIr::Dwrr { quantum_bytes: [1500, 3000, 1500, 4500, 1500, 1500, 9000, 1500] }
            };
            *pause = PauseIr::Pfc(PfcIr {
                enabled: 1 | (r.below(256) as u8),
                threshold,
                hysteresis_bytes: *pick(r, &[0u64, 1500]),
                headroom_bytes: vec![*pick(r, &[1_500u64, 8_000, 20_000]); ports[i]],
                mtu_bytes: 1500,
                quanta: *pick(r, &[100u16, 65535]),
                refresh_fraction: 0.8,
                response_ps: r.below(2) * US,
                scheduler,
            });
        }
    }
    for f in ir.flows.iter_mut() {
        f.priority = r.below(8) as u8;
    }
    if r.bernoulli(0.3) {
        ir.pause_watchdog = Some(WatchdogIr { timeout_ps: 100 * US, recovery_ps: 50 * US });
    }
    ir
}

#[test]
fn random_pfc_networks_run_and_conserve() {
    let mut r = Stream::new(2026, 0, 3);
    let mut ran = 0;
    for case in 0..100 {
        let ir = random_pfc_ir(&mut r);
        match Simulation::new(ir.clone()) {
            Ok(sim) => {
                let res = sim.run().unwrap_or_else(|e| panic!("case {case}: {e}\n{}", serde_json::to_string(&ir).unwrap()));
                let s = &res.summary;
                assert_eq!(s["conservation"]["ok"], Value::Bool(true));
                let pfc = &s["pfc"];
                // a lossless priority never loses a frame for lack of shared space: only its headroom can fill
                let by_reason = &s["drops"]["by_reason"];
                assert_eq!(pfc["headroom_drops"], by_reason["headroom_full"], "case {case}");
                let sent: u64 = pfc["pause_sent"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).sum();
                let received: u64 = pfc["pause_received"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).sum();
                assert!(received <= sent, "case {case}: more PFC received than sent");
                ran += 1;
            }
            Err(e) => {
                let m = e.to_string();
                assert!(m.contains(':'), "case {case}: error without a path: {m}");
            }
        }
    }
    assert!(ran > 40, "too few valid random PFC cases ({ran})");
}

/// Replace a random scalar somewhere in the JSON tree by a random other JSON value.
fn mutate(v: &mut Value, r: &mut Stream) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            let keys: Vec<String> = m.keys().cloned().collect();
            let k = pick(r, &keys).clone();
            if r.bernoulli(0.1) {
                m.remove(&k);
            } else if r.bernoulli(0.05) {
                m.insert("unexpected".into(), Value::Bool(true));
            } else {
                mutate(m.get_mut(&k).unwrap(), r);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            let i = r.below(a.len() as u64) as usize;
            if r.bernoulli(0.1) {
                a.remove(i);
            } else {
                mutate(&mut a[i], r);
            }
        }
        _ => {
            *v = match r.below(7) {
                0 => Value::from(0),
                1 => Value::from(-1),
                2 => Value::from(u64::MAX),
                3 => Value::from(1e300),
                4 => Value::from("x"),
                5 => Value::Null,
                _ => Value::from(r.below(20)),
            }
        }
    }
}

#[test]
fn mutated_ir_json_never_panics() {
    let mut r = Stream::new(7, 0, 2);
    for _ in 0..400 {
        let ir = random_ir(&mut r);
        let mut v = serde_json::to_value(&ir).unwrap();
        for _ in 0..(1 + r.below(3)) {
            mutate(&mut v, &mut r);
        }
        // cap the simulated time so accepted mutants stay quick
        if let Some(d) = v.get_mut("duration_ps") {
            if d.as_u64().map(|x| x > 2_000 * US).unwrap_or(false) {
                *d = Value::from(2_000 * US);
            }
        }
        let json = v.to_string();
        if let Ok(mut sim) = Simulation::from_json(&json) {
            // a mutant may legally ask for an enormous workload (a 1-ps CBR interval): run a slice
            sim.run_until(20 * US);
            let res = sim.finish();
            assert!(res.is_ok(), "accepted mutant failed: {:?}\n{json}", res.err());
        }
    }
}
