//! Tests of `observe` (kept apart from the module's code).

#[test]
fn queue_quantiles_read_the_time_at_occupancy_histogram() {
    // 50 % of the time empty (bucket 0), 40 % in bucket 2 (128–192 B), 10 % in bucket 9
    let mut hist = vec![0u64; 10];
    hist[0] = 500;
    hist[2] = 400;
    hist[9] = 100;
    let q = hist_quantiles(&hist, 600);
    let at = |x: f64| q[QUEUE_QUANTILES.iter().position(|&v| v == x).unwrap()];
    assert_eq!((at(0.1), at(0.5)), (64, 64), "half the time in the first bucket");
    assert_eq!((at(0.75), at(0.9)), (192, 192));
    assert_eq!((at(0.95), at(0.99), at(1.0)), (600, 600, 600), "capped at the largest occupancy");
    assert!(q.windows(2).all(|w| w[0] <= w[1]), "a CDF is monotone");
    assert_eq!(hist_quantiles(&[], 0), vec![0; QUEUE_QUANTILES.len()]);
}

use super::*;
use crate::ir::*;
use crate::Simulation;
use serde_json::{json, Value};

const US: u64 = 1_000_000;
const MS: u64 = 1_000_000_000;

/// Three 5-Gb/s CBR senders into one 10-Gb/s port, starting at 2 ms: the bottleneck queue is
/// first recorded in a later chunk than the run's first ones.
fn late_fan_in() -> Ir {
    let host = |n: &str| NodeIr::Host { name: n.into(), response_delay_ps: US };
    let mut nodes = vec![
        NodeIr::Switch {
            name: "sw".into(),
            latency_ps: US,
            buffer: BufferIr::Egress { egress_bytes: 60_000 },
            pause: PauseIr::None,
            ecn_threshold_bytes: None,
        },
        host("rx"),
    ];
    let link = |a, b| LinkIr { a, b, rate_bps: 10_000_000_000, prop_ps: US / 2 };
    let (mut links, mut flows, mut sources) = (vec![link(0, 1)], vec![], vec![]);
    for i in 0..3u32 {
        nodes.push(host(&format!("s{i}")));
        links.push(link(2 + i, 0));
        flows.push(FlowIr { src: 2 + i, dst: Some(1), frame_bytes: 1500, transport: TransportIr::Udp, priority: 0 });
        sources.push(SourceIr {
            stream_id: i as u64,
            flows: vec![i],
            start_ps: 2 * MS,
            stop_ps: u64::MAX,
            gate: None,
            process: ProcessIr::Cbr { interval_ps: 2_400_000, phase_ps: 0, random_phase: true },
            dst_set: None,
        });
    }
    Ir { seed: 3, observe: ObserveIr::sampled(10 * US, 100 * US), ..Ir::new("late", 5 * MS, nodes, links, flows, sources) }
}

fn col<'a>(t: &'a Table, name: &str) -> &'a Column {
    &t.columns.iter().find(|(n, _)| *n == name).expect("column").1
}

#[test]
fn drained_chunks_hold_the_rows_of_an_undrained_run_and_nothing_stays_buffered() {
    let whole = Simulation::new(late_fan_in()).unwrap().run().unwrap();
    let mut sim = Simulation::new(late_fan_in()).unwrap();
    let mut chunks = Vec::new();
    let mut step = 0;
    loop {
        step += 1;
        let done = sim.run_until(step * MS / 2);
        // 0.5 ms = 50 samples; 4 switch ports; 5 bins of 100 µs, a row for each of the 3 flows and
        // one for all of them: at most 220 rows wait for a drain
        assert!(sim.buffered_rows() <= 50 * 4 + 5 * 4, "{} rows buffered", sim.buffered_rows());
        if done {
            break;
        }
        chunks.push(sim.drain_series());
        assert_eq!(sim.buffered_rows(), 0);
    }
    chunks.push(sim.finish().unwrap().tables);
    // the bottleneck queue starts after the first chunks: they hold no queue rows
    let q_rows = |t: &Vec<Table>| col(t.iter().find(|t| t.name == "queue_ts").unwrap(), "t_s").len();
    assert_eq!(q_rows(&chunks[0]), 0);
    assert!(q_rows(chunks.last().unwrap()) > 0);
    // whole-run rows = chunk rows, with zeros where a queue had not started yet
    let whole_q = whole.table("queue_ts").unwrap();
    let (wt, wq, wb) = match (col(whole_q, "t_s"), col(whole_q, "queue"), col(whole_q, "bytes")) {
        (Column::F64(t), Column::U32(q), Column::U64(b)) => (t, q, b),
        _ => panic!("column types"),
    };
    let mut got = std::collections::BTreeMap::new();
    for c in &chunks {
        let t = c.iter().find(|t| t.name == "queue_ts").unwrap();
        if let (Column::F64(ts), Column::U32(q), Column::U64(b)) = (col(t, "t_s"), col(t, "queue"), col(t, "bytes")) {
            for i in 0..ts.len() {
                got.insert((ts[i].to_bits(), q[i]), b[i]);
            }
        }
    }
    assert!(wb.iter().any(|&b| b > 0));
    let mut filled = 0;
    for i in 0..wt.len() {
        match got.get(&(wt[i].to_bits(), wq[i])) {
            Some(&b) => assert_eq!(b, wb[i]),
            None => {
                assert_eq!(wb[i], 0, "a missing row is a zero of a queue not yet started");
                filled += 1;
            }
        }
    }
    assert!(filled > 0);
    assert_eq!(got.len() + filled, wt.len());
    // the tables that are not series come whole at the end
    for name in ["queues", "links", "flows", "fct"] {
        assert_eq!(whole.table(name), chunks.last().unwrap().iter().find(|t| t.name == name), "{name}");
    }
    // the throughput bins come in time order, each drained once it can no longer change: joined,
    // the whole run's rows
    for name in ["flow_tp", "throughput_ts"] {
        let whole_t = whole.table(name).unwrap();
        assert!(chunks[..chunks.len() - 1].iter().all(|c| !col(c.iter().find(|t| t.name == name).unwrap(), "t_s").is_empty()));
        for (k, (cname, c)) in whole_t.columns.iter().enumerate() {
            let parts = chunks.iter().map(|ch| ch.iter().find(|t| t.name == name).unwrap().columns[k].1.plain());
            let joined = parts.reduce(|a, b| match (a, b) {
                (Column::F64(a), Column::F64(b)) => Column::F64([a, b].concat()),
                (Column::U32(a), Column::U32(b)) => Column::U32([a, b].concat()),
                _ => panic!("column types"),
            });
            assert_eq!(joined.unwrap(), c.plain(), "{name}.{cname}");
        }
    }
}

#[test]
fn series_that_are_off_are_not_sampled_and_change_nothing_else() {
    let on = Simulation::new(late_fan_in()).unwrap().run().unwrap();
    let rows = |r: &Results, name: &str| col(r.table(name).unwrap(), "t_s").len();
    assert!(rows(&on, "queue_ts") > 0);
    // queue lengths off: no queue rows, every other table and the summary unchanged
    let mut ir = late_fan_in();
    ir.observe.series.queue_ts = false;
    let no_q = Simulation::new(ir).unwrap().run().unwrap();
    assert_eq!(rows(&no_q, "queue_ts"), 0);
    for t in &on.tables {
        if t.name != "queue_ts" {
            assert_eq!(Some(t), no_q.table(t.name), "{}", t.name);
        }
    }
    assert_eq!(on.summary, no_q.summary);
    // every series off: no Sample event at all (the event count drops by the samples), same traffic
    let mut ir = late_fan_in();
    ir.observe.series = SeriesIr { queue_ts: false, rp_rate: false, tcp_ts: false, pause_ts: false };
    let sim = Simulation::new(ir).unwrap();
    assert_eq!(sim.sample_interval(), 0);
    let none = sim.run().unwrap();
    let samples = late_fan_in().duration_ps / late_fan_in().observe.sample_interval_ps;
    assert_eq!(on.summary["events"].as_u64().unwrap() - none.summary["events"].as_u64().unwrap(), samples);
    let (mut a, mut b) = (on.summary.clone(), none.summary.clone());
    a["events"] = Value::Null;
    b["events"] = Value::Null;
    assert_eq!(a, b, "everything but the event count");
}

#[test]
fn the_observation_bound_counts_only_series_that_can_exist() {
    // 5 ms at 1 ns: 5·10⁶ samples × 8 port series (no PAUSE, no CM, no TCP) = 4·10⁷ cells, allowed
    let mut ir = late_fan_in();
    ir.observe.sample_interval_ps = 1_000;
    assert!(crate::validate::validate(&ir).is_ok());
    // the same with ten times the run: refused, naming the interval and the series switches
    ir.duration_ps *= 10;
    let e = crate::validate::validate(&ir).unwrap_err().to_string();
    assert!(e.contains("observe.sample_interval_ps") && e.contains("observe.series"), "{e}");
    // with queue lengths off nothing is left to sample: allowed
    ir.observe.series.queue_ts = false;
    assert!(crate::validate::validate(&ir).is_ok());
}

/// The change rows of `rp_rate` and `pause_ts`, each carried forward over the sample grid
/// (`series_grid`), are the value of every series at every sample: the RP limiter rates and paused
/// states read from the network right after each sample (the last event of its instant).
#[test]
fn change_rows_carried_forward_are_every_sample_of_rates_and_paused_states() {
    for case in ["fan-in-4-pause", "symmetric-bcn"] {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/golden/");
        let mut ir: Value = serde_json::from_str(&std::fs::read_to_string(format!("{path}{case}.ir.json")).expect("golden IR")).unwrap();
        ir["observe"]["sample_interval_ps"] = json!(100_000); // 1 000 / 2 000 samples of 100 ns
        let json = ir.to_string();
        let whole = Simulation::from_json(&json).unwrap().run().unwrap();
        let mut sim = Simulation::from_json(&json).unwrap();
        let (iv, end) = (sim.sample_interval(), sim.duration());
        let rp = whole.table("rp_rate").unwrap();
        let (rt, rf, rr) = match (col(rp, "t_s"), col(rp, "flow"), col(rp, "rate_bps")) {
            (Column::F64(t), Column::U32(f), Column::F64(r)) => (t.clone(), f.clone(), r.clone()),
            _ => panic!("column types"),
        };
        let ps = whole.table("pause_ts").unwrap();
        let (pt, pl, pv) = match (col(ps, "t_s"), col(ps, "link"), col(ps, "paused")) {
            (Column::F64(t), Column::U32(l), Column::U32(v)) => (t.clone(), l.clone(), v.clone()),
            _ => panic!("column types"),
        };
        let n_rp = rt.iter().take_while(|&&t| t == 0.0).count(); // every flow at the first sample
        let n_ports = sim.network().ports.len();
        let (mut rate, mut paused) = (vec![0u64; n_rp], vec![0u32; n_ports]);
        let (mut ri, mut pi, mut k, mut dense_pause) = (0, 0, 0u64, 0usize);
        while k * iv < end {
            sim.run_until(k * iv + 1);
            let net = sim.network();
            let at_k = |t: f64| (t * 1e12 / iv as f64).round() as u64 == k;
            while ri < rt.len() && at_k(rt[ri]) {
                rate[rf[ri] as usize] = rr[ri].to_bits();
                ri += 1;
            }
            while pi < pt.len() && at_k(pt[pi]) {
                paused[pl[pi] as usize] = pv[pi];
                pi += 1;
            }
            let want: Vec<u64> = net.flows[..n_rp].iter().map(|f| f.rl_rate.unwrap_or(f64::NAN).to_bits()).collect();
            assert_eq!(rate, want, "{case}: rates at sample {k}");
            let want: Vec<u32> = net.ports.iter().map(|p| (p.pause.paused_until > k * iv) as u32).collect();
            assert_eq!(paused, want, "{case}: paused states at sample {k}");
            dense_pause += paused.iter().filter(|&&v| v == 1).count();
            k += 1;
        }
        assert_eq!((ri, pi), (rt.len(), pt.len()), "{case}: every row at a sample instant");
        let grid = whole.table("series_grid").unwrap();
        assert_eq!((col(grid, "sample_interval_ps"), col(grid, "samples")), (&Column::U64(vec![iv]), &Column::U64(vec![k])));
        // what the change rows save: a row per sample of each flow, of each paused link
        if case == "symmetric-bcn" {
            assert!(n_rp > 0 && rt.len() < (k as usize * n_rp) / 4, "{case}: {} rate rows", rt.len());
        } else {
            assert!(dense_pause > 0 && pt.len() < dense_pause / 4, "{case}: {} pause rows, {dense_pause} paused samples", pt.len());
        }
    }
}
