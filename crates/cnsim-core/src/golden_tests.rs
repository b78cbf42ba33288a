//! Golden traces (TESTING.md T5): tiny runs whose every event — time in picoseconds, kind, the ids
//! it carries, no floats — must match the committed trace byte for byte. A fingerprint says that a
//! run changed; the trace says at which event.
//!
//! The IRs are `tests/golden/<case>.ir.json` of the repository (written by `tests/golden/make_irs.py`
//! from shipped scenarios); the traces `tests/golden/<case>.trace`. A change meant to alter
//! trajectories regenerates them with `CNSIM_UPDATE_GOLDEN=1 cargo test --release -p cnsim-core
//! --lib golden` and says why in its commit. A unit test of the crate, because
//! [`Simulation::run_until_with`] exists in test builds only.

use crate::event::Event;
use crate::Simulation;
use std::fmt::Write as _;
use std::path::PathBuf;

const CASES: [&str; 8] = [
    "fan-in-4-pause",
    "fan-in-4-pause-no-delay",
    "symmetric-bcn",
    "tcp-newreno-4",
    "cnsim-fecn-hs0",
    "fat-tree-dcqcn-pfc",
    "fat-tree-hpcc-queues",
    "leaf-spine-tcp-queues",
];

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden")
}

/// One line per event: `time kind ids…`.
fn line(out: &mut String, t: u64, ev: &Event) {
    let _ = match *ev {
        // (a MAC-control frame has no slot: its pause time, and class-enable vector if PFC)
        Event::Arrive { port, frame } if frame.is_mac_control() => match frame.cev() {
            0 => writeln!(out, "{t} A {} p{}", port.0, frame.quanta()),
            cev => writeln!(out, "{t} A {} p{}/{cev}", port.0, frame.quanta()),
        },
        Event::Arrive { port, frame } => writeln!(out, "{t} A {} {}", port.0, frame.0),
        Event::PortTxDone { port } => writeln!(out, "{t} T {}", port.0),
        Event::PortWake { port } => writeln!(out, "{t} W {}", port.0),
        Event::HostWake { host } => writeln!(out, "{t} H {}", host.0),
        Event::SourceFire { source } => writeln!(out, "{t} S {source}"),
        Event::Feedback { host, frame } => writeln!(out, "{t} F {} {}", host.0, frame.0),
        Event::RpTimer { host, token } => writeln!(out, "{t} R {} {token}", host.0),
        Event::TcpTimer { flow, which, .. } => writeln!(out, "{t} C {} {which}", flow.0),
        Event::RdmaTimer { queue, .. } => writeln!(out, "{t} G {}", queue.0),
        Event::CpTick { port } => writeln!(out, "{t} K {}", port.0),
        Event::PauseRefresh { port, gen } => writeln!(out, "{t} P {} {gen}", port.0),
        Event::ServiceRate { hotspot, step } => writeln!(out, "{t} V {hotspot} {step}"),
        Event::LinkEvent { index, phase } => writeln!(out, "{t} L {index} {phase}"),
        Event::Sample => writeln!(out, "{t} M"),
        Event::Batch { id, .. } => writeln!(out, "{t} B {id}"), // never shown: its members are
    };
}

/// The trace of a case's run, ended by its conservation check and event count.
fn trace(case: &str) -> String {
    let ir = std::fs::read_to_string(golden_dir().join(format!("{case}.ir.json"))).expect("the case's IR");
    let mut sim = Simulation::from_json(&ir).expect("a valid IR");
    let mut out = String::new();
    sim.run_until_with(u64::MAX, |t, ev| line(&mut out, t, ev));
    let events = sim.events();
    let res = sim.finish().expect("conservation holds");
    let _ = writeln!(out, "end events={events} delivered={} dropped={}", res.summary["frames"]["delivered"], res.summary["frames"]["dropped"]);
    out
}

#[test]
fn every_event_of_the_golden_runs_matches_its_trace() {
    let update = std::env::var_os("CNSIM_UPDATE_GOLDEN").is_some();
    let mut problems = Vec::new();
    for case in CASES {
        let got = trace(case);
        let path = golden_dir().join(format!("{case}.trace"));
        if update {
            std::fs::write(&path, &got).expect("writable tests/golden");
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        if got != want {
            let (g, w): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
            let i = g.iter().zip(&w).position(|(a, b)| a != b).unwrap_or(g.len().min(w.len()));
            problems.push(format!(
                "{case}: first difference at event {} — got `{}`, golden `{}` ({} vs {} lines)",
                i + 1,
                g.get(i).unwrap_or(&"<end>"),
                w.get(i).unwrap_or(&"<end>"),
                g.len(),
                w.len()
            ));
        }
    }
    assert!(problems.is_empty(), "golden traces differ (CNSIM_UPDATE_GOLDEN=1 to accept):\n{}", problems.join("\n"));
}

#[test]
fn the_trace_is_the_same_in_one_step_or_many() {
    // the event order does not depend on how the run is cut into steps (the trace of a run taken
    // in 7-us steps equals the one-step trace, but for deliveries folded into their sending event
    // within a step, which become events at a step's edge: compare the ordered set of the others)
    let ir = std::fs::read_to_string(golden_dir().join("symmetric-bcn.ir.json")).expect("IR");
    let mut whole = String::new();
    Simulation::from_json(&ir).unwrap().run_until_with(u64::MAX, |t, ev| line(&mut whole, t, ev));
    let mut sim = Simulation::from_json(&ir).unwrap();
    let (mut stepped, mut t) = (String::new(), 0);
    while !sim.run_until_with(t, |te, ev| line(&mut stepped, te, ev)) {
        t += 7_000_000;
    }
    let keep = |s: &str| s.lines().filter(|l| l.split(' ').nth(1).is_none_or(|k| k != "A")).map(String::from).collect::<Vec<_>>();
    assert!(whole.lines().count() > 1_000);
    assert_eq!(keep(&whole), keep(&stepped));
}

#[test]
fn transfer_queues_give_the_same_run_in_one_step_or_many() {
    // a queue per transfer frees its slot when its transfer completes; the slot a later transfer
    // takes (and with it its ECMP path) must not depend on the steps: the k = 4 fat tree under DCQCN
    // (unmarked frames are delivered without an event of their own within a step) gives the same
    // summary in one step and in 7-us steps
    let json = std::fs::read_to_string(golden_dir().join("fat-tree-dcqcn-pfc.ir.json")).expect("IR");
    let mut ir: crate::ir::Ir = serde_json::from_str(&json).unwrap();
    ir.nic = crate::ir::NicIr { queues: crate::ir::NicQueuesIr::Transfer, rate_limiters: crate::ir::RateLimitersIr::Queue };
    ir.duration_ps = 3_000_000_000;
    for s in ir.sources.iter_mut() {
        // short transfers (1.5-15 kB every 20 us per host): queues close and slots are reused often
        if let crate::ir::ProcessIr::FlowArrivals { mean_gap_ps, cdf, .. } = &mut s.process {
            *mean_gap_ps = 20_000_000;
            *cdf = vec![(1_500.0, 0.0), (15_000.0, 1.0)];
        }
    }
    let whole = Simulation::new(ir.clone()).unwrap().run().unwrap();
    let mut sim = Simulation::new(ir).unwrap();
    let mut t = 0;
    while !sim.run_until(t) {
        t += 7_000_000;
    }
    let stepped = sim.finish().unwrap();
    assert!(whole.summary["nic"]["transfer_queue_slots"].as_u64().unwrap() > 4, "{}", whole.summary["nic"]);
    assert_eq!(whole.summary, stepped.summary);
}
