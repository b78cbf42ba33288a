//! # cnsim-core — packet-level engine for congestion management in data-center Ethernet
//!
//! Layers, bottom up: [`time`] (integer picoseconds) → [`event`] (closed event enum, total order)
//! → [`frame`] / [`ids`] (arenas with typed ids) → [`traffic`] (generators) → [`net`] (the data
//! plane in rooms: ports, switches and buffers, hosts, flows, routing, and [`net::flowctl`]: PAUSE and PFC) with
//! [`cm`] (congestion-management plug-ins) → [`build`] (IR → network) → [`sim`] (the event loop)
//! → [`observe`] (time series, summary, conservation; reads the network, never mutates it).
//!
//! Determinism contract: the same IR (incl. seed and replication) gives bit-identical results.
//! Every random process has its own stream ([`rng`]) derived from a stable component id.
//!
//! ```no_run
//! let json = std::fs::read_to_string("ir.json").unwrap();
//! let sim = cnsim_core::Simulation::from_json(&json).unwrap();
//! let results = sim.run().unwrap();
//! println!("{}", results.summary);
//! ```

pub mod build;
pub mod cm;
pub mod error;
pub mod event;
pub mod frame;
pub mod ids;
pub mod int;
pub mod ir;
pub mod net;
pub mod observe;
pub mod probe;
pub mod rng;
pub mod sim;
pub mod time;
pub mod traffic;
pub mod transport;
pub mod validate;

#[cfg(test)]
mod golden_tests;

pub use error::{RunError, ScenarioError};
pub use observe::{Column, Results, Table};
pub use sim::Simulation;

/// Crate version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
