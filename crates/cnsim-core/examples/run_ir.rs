//! Run a compiled scenario (IR JSON, as `cnsim.compile.compiler.compile_ir` produces) with the engine alone,
//! for profiling a scheme or a topology without Python:
//!
//! python -c "import json,cnsim.api as a,cnsim.compile.compiler as c; print(json.dumps(c.compile_ir(a.resolve('S.toml'))))" > /tmp/ir.json
//! valgrind --tool=callgrind target/profiling/examples/run_ir /tmp/ir.json
//!
//! Prints events, the wall time of the run and of collecting the results, and the conservation
//! check; `--summary` adds the summary JSON (to compare two engine builds on the same IR);
//! `--tables` a line per result table with its rows and a 64-bit FNV-1a digest of its names and
//! values (the tables of two builds compared cheaply).

use cnsim_core::{Column, Simulation, Table};
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: run_ir IR.json");
    let json = std::fs::read_to_string(&path).expect("readable IR file");
    let mut sim = Simulation::from_json(&json).expect("valid IR");
    let t0 = Instant::now();
    sim.run_until(u64::MAX);
    let run_s = t0.elapsed().as_secs_f64();
    let events = sim.events();
    let t1 = Instant::now();
    let res = sim.finish().expect("conservation holds");
    let finish_s = t1.elapsed().as_secs_f64();
    let s = &res.summary;
    println!("events={events} run_s={run_s:.4} finish_s={finish_s:.4} conservation={}", s["conservation"]["ok"]);
    if std::env::args().any(|a| a == "--summary") {
        println!("{s}");
    }
    if std::env::args().any(|a| a == "--tables") {
        for t in &res.tables {
            println!("table {} rows={} fnv={:016x}", t.name, t.columns.first().map_or(0, |c| c.1.len()), digest(t));
        }
    }
}

/// FNV-1a over a table's name, column names and values (floats by their bits).
fn digest(t: &Table) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(t.name.as_bytes());
    for (name, c) in &t.columns {
        eat(name.as_bytes());
        match (c, c.dtype()) {
            (Column::Str(v), _) => v.iter().for_each(|x| {
                eat(x.as_bytes());
                eat(&[0]);
            }),
            (_, Some((_, w))) => {
                // the rows' little-endian bytes, as the Python front receives them
                let mut raw = vec![0u8; c.len() * w];
                c.write_le(&mut raw);
                eat(&raw);
            }
            (_, None) => unreachable!("only names have no dtype"),
        }
    }
    h
}
