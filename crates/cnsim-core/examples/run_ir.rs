//! Run a compiled scenario (IR JSON, as `cnsim.compile.compile_ir` produces) with the engine alone,
//! for profiling a scheme or a topology without Python:
//!
//! python -c "import json,cnsim.api as a,cnsim.compile as c; print(json.dumps(c.compile_ir(a.resolve('S.toml'))))" > /tmp/ir.json
//! valgrind --tool=callgrind target/profiling/examples/run_ir /tmp/ir.json
//!
//! Prints events, wall time of the run and the conservation check; `--summary` adds the summary JSON
//! (to compare two engine builds on the same IR).

use cnsim_core::Simulation;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: run_ir IR.json");
    let json = std::fs::read_to_string(&path).expect("readable IR file");
    let mut sim = Simulation::from_json(&json).expect("valid IR");
    let t0 = Instant::now();
    sim.run_until(u64::MAX);
    let run_s = t0.elapsed().as_secs_f64();
    let events = sim.events();
    let res = sim.finish().expect("conservation holds");
    let s = &res.summary;
    println!("events={events} run_s={run_s:.4} conservation={}", s["conservation"]["ok"]);
    if std::env::args().any(|a| a == "--summary") {
        println!("{s}");
    }
}
