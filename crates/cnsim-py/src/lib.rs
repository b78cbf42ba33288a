//! `cnsim._core`: the only PyO3 crate. Converts the IR JSON into a simulation, runs it in chunks
//! with the GIL released (checking Ctrl-C and reporting progress between chunks), maps errors to
//! Python exceptions and hands the result tables over as NumPy arrays that take over their memory.

use cnsim_core::{Column, RunError, Simulation, Table};
use numpy::PyArray1;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

mod json_text;

create_exception!(_core, ScenarioError, PyValueError, "The scenario IR is invalid (message names the field path).");
create_exception!(_core, InvariantError, PyRuntimeError, "A conservation identity failed at the end of a run (model bug).");

fn scenario_err(e: cnsim_core::ScenarioError) -> PyErr {
    ScenarioError::new_err(e.to_string())
}

fn panic_msg(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}

/// `compact` JSON (no whitespace outside strings) laid out as Python's `json.dumps(..., indent=2)`
/// writes it (see `json_text`).
#[pyfunction]
fn indent_json(compact: &str) -> String {
    json_text::indent(compact)
}

/// Core crate version.
#[pyfunction]
fn version() -> &'static str {
    cnsim_core::VERSION
}

/// Registered congestion-management scheme tags.
#[pyfunction]
fn schemes() -> Vec<&'static str> {
    cnsim_core::cm::scheme_tags()
}

/// Parse, validate and compile the IR without running it.
#[pyfunction]
fn validate(py: Python<'_>, ir_json: &str) -> PyResult<()> {
    py.detach(|| catch_unwind(|| Simulation::from_json(ir_json).map(|_| ())))
        .map_err(|p| PyRuntimeError::new_err(format!("internal error: {}", panic_msg(p))))?
        .map_err(scenario_err)
}

/// The node path (node indices: source host, switches, destination host) of every flow of the IR
/// under the engine's routes; an unreachable destination gives an empty list.
#[pyfunction]
fn flow_paths(py: Python<'_>, ir_json: &str) -> PyResult<Vec<Vec<u32>>> {
    use cnsim_core::validate::{parse_ir, validate};
    py.detach(|| catch_unwind(|| parse_ir(ir_json).and_then(|ir| validate(&ir).map(|_| cnsim_core::net::flow_paths(&ir)))))
        .map_err(|p| PyRuntimeError::new_err(format!("internal error: {}", panic_msg(p))))?
        .map_err(scenario_err)
}

/// The node path from host `src` to host `dst` (node indices) for each pair, on the engine's single
/// route (the transfers of a flow without a destination of its own, `fct.dst`); an unreachable
/// destination gives an empty list.
#[pyfunction]
fn pair_paths(py: Python<'_>, ir_json: &str, pairs: Vec<(u32, u32)>) -> PyResult<Vec<Vec<u32>>> {
    use cnsim_core::validate::{parse_ir, validate};
    let n = |ir: &cnsim_core::ir::Ir| ir.nodes.len() as u32;
    py.detach(|| {
        catch_unwind(|| {
            parse_ir(ir_json).and_then(|ir| {
                validate(&ir)?;
                if let Some(&(s, d)) = pairs.iter().find(|&&(s, d)| s >= n(&ir) || d >= n(&ir)) {
                    return Err(cnsim_core::ScenarioError::field("pairs", format!("({s}, {d}): node index out of range")));
                }
                Ok(cnsim_core::net::pair_paths(&ir, &pairs))
            })
        })
    })
    .map_err(|p| PyRuntimeError::new_err(format!("internal error: {}", panic_msg(p))))?
    .map_err(scenario_err)
}

// The columns reach Python as `("<u4" | "<u8" | "<f8", array)`: little-endian by contract.
const _: () = assert!(cfg!(target_endian = "little"), "the table hand-over assumes a little-endian host");

/// A column for Python: a NumPy array that takes over the column's memory (no copy) with its
/// dtype, or a list of names. Compact columns are written out here, once.
fn column_to_py(py: Python<'_>, c: Column) -> PyResult<Bound<'_, PyAny>> {
    let (dtype, array) = match c {
        Column::Str(v) => return Ok(PyList::new(py, v)?.into_any()),
        Column::U32(v) => ("<u4", PyArray1::from_vec(py, v).into_any()),
        Column::U64(v) => ("<u8", PyArray1::from_vec(py, v).into_any()),
        Column::F64(v) => ("<f8", PyArray1::from_vec(py, v).into_any()),
        compact => return column_to_py(py, compact.plain()),
    };
    Ok((dtype, array).into_pyobject(py)?.into_any())
}

fn tables_to_py(py: Python<'_>, tables: Vec<Table>) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    for t in tables {
        let cols = PyDict::new(py);
        for (name, c) in t.columns {
            cols.set_item(name, column_to_py(py, c)?)?;
        }
        out.set_item(t.name, cols)?;
    }
    Ok(out)
}

fn engine_panic(p: Box<dyn std::any::Any + Send>) -> PyErr {
    PyRuntimeError::new_err(format!("internal error (engine panic): {}", panic_msg(p)))
}

fn run_error(e: RunError) -> PyErr {
    match e {
        RunError::Invariant(m) => InvariantError::new_err(m),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

/// A simulation driven step by step from Python: `run_until` with the GIL released, the time
/// series drained in chunks (`drain_series`) so that a caller writing them out keeps memory
/// independent of the run's length, and `finish` for the summary and the remaining tables.
#[pyclass(name = "Simulation", module = "cnsim._core")]
struct PySimulation {
    /// A Mutex only to make the class `Sync` as PyO3 requires (the schemes' trait objects are not);
    /// the `&mut self` methods reach it without locking.
    sim: Mutex<Simulation>,
}

impl PySimulation {
    fn get(&self) -> std::sync::MutexGuard<'_, Simulation> {
        self.sim.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl PySimulation {
    #[new]
    fn new(py: Python<'_>, ir_json: &str) -> PyResult<Self> {
        let sim = py
            .detach(|| catch_unwind(|| Simulation::from_json(ir_json)))
            .map_err(|p| PyRuntimeError::new_err(format!("internal error: {}", panic_msg(p))))?
            .map_err(scenario_err)?;
        Ok(PySimulation { sim: Mutex::new(sim) })
    }

    /// End of the run, ps.
    #[getter]
    fn duration_ps(&self) -> u64 {
        self.get().duration()
    }
    /// Current simulated time, ps.
    #[getter]
    fn now_ps(&self) -> u64 {
        self.get().now()
    }
    /// Sampling interval of the series, ps (0: none).
    #[getter]
    fn sample_interval_ps(&self) -> u64 {
        self.get().sample_interval()
    }

    /// Process the events before `min(t_ps, duration)` (GIL released); true at the end of the run.
    /// Ctrl-C between calls raises KeyboardInterrupt.
    fn run_until(&mut self, py: Python<'_>, t_ps: u64) -> PyResult<bool> {
        let sim = self.sim.get_mut().unwrap_or_else(|e| e.into_inner());
        let done = py.detach(|| catch_unwind(AssertUnwindSafe(|| sim.run_until(t_ps)))).map_err(engine_panic)?;
        py.check_signals()?;
        Ok(done)
    }

    /// Run towards `t_ps` in steps of `step_ps` with the GIL released, until the end of the run, `t_ps`,
    /// a step after which at least `rows` rows are buffered (a batch for the writer: `drain_series`), or
    /// `budget_s` seconds of wall time (the caller reports progress and checks for Ctrl-C, which raises
    /// KeyboardInterrupt); true at the end of the run. Where a batch ends depends on the simulated time
    /// only (steps from the run's start), never on the wall time: the files written are the same each run.
    fn run_batch(&mut self, py: Python<'_>, t_ps: u64, step_ps: u64, rows: usize, budget_s: f64) -> PyResult<bool> {
        let sim = self.sim.get_mut().unwrap_or_else(|e| e.into_inner());
        let step = step_ps.max(1);
        let done = py
            .detach(|| {
                catch_unwind(AssertUnwindSafe(|| {
                    let started = std::time::Instant::now();
                    loop {
                        let target = sim.now().saturating_add(step).min(t_ps);
                        let done = sim.run_until(target);
                        if done || sim.now() >= t_ps || sim.buffered_rows() >= rows || started.elapsed().as_secs_f64() >= budget_s {
                            return done;
                        }
                    }
                }))
            })
            .map_err(engine_panic)?;
        py.check_signals()?;
        Ok(done)
    }

    /// Rows recorded since the last drain (see `drain_series`).
    fn buffered_rows(&self) -> usize {
        self.get().buffered_rows()
    }

    /// `(samples, tables)`: the rows of `queue_ts`, `rp_rate`, `tcp_ts`, `pause_ts` recorded since
    /// the last drain, of `throughput_ts`, `flow_tp` for the bins that can no longer change and of
    /// `fct` for the transfers settled since (ids, no names), forgotten by the engine, and the number
    /// of sample instants the sampled series cover.
    fn drain_series<'py>(&mut self, py: Python<'py>) -> PyResult<(u64, Bound<'py, PyDict>)> {
        let sim = self.sim.get_mut().unwrap_or_else(|e| e.into_inner());
        let before = sim.buffered_samples();
        let tables = py.detach(|| catch_unwind(AssertUnwindSafe(|| sim.drain_series()))).map_err(engine_panic)?;
        Ok((before, tables_to_py(py, tables)?))
    }

    /// `(samples, tables)` as `drain_series`, after closing the run: every series row left, with the
    /// last throughput bins and the `fct` rows of the transfers the run's end closed; `finish` then
    /// returns empty series.
    fn close_series<'py>(&mut self, py: Python<'py>) -> PyResult<(u64, Bound<'py, PyDict>)> {
        let sim = self.sim.get_mut().unwrap_or_else(|e| e.into_inner());
        let before = sim.buffered_samples();
        let tables = py.detach(|| catch_unwind(AssertUnwindSafe(|| sim.close_series()))).map_err(engine_panic)?;
        Ok((before, tables_to_py(py, tables)?))
    }

    /// `[(name, bytes)]`: the packet-capture bytes written since the last call, per capture of
    /// `observe.pcap` (the libpcap file header with the first call); `[]` without captures.
    fn take_pcap<'py>(&mut self, py: Python<'py>) -> PyResult<Vec<(String, Bound<'py, pyo3::types::PyBytes>)>> {
        let sim = self.sim.get_mut().unwrap_or_else(|e| e.into_inner());
        Ok(sim.take_pcap().into_iter().map(|(n, b)| (n, pyo3::types::PyBytes::new(py, &b))).collect())
    }

    /// The tables naming the series' ids: `queues`, `links`, `flows`.
    fn static_tables<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        tables_to_py(py, self.get().static_tables())
    }

    /// Close the run (conservation checked): `(summary_json, samples, tables)`, the tables holding
    /// the series rows and throughput bins not drained yet (the sampled series covering `samples`
    /// instants) and every other table.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<(String, u64, Bound<'py, PyDict>)> {
        let sim = self.sim.get_mut().unwrap_or_else(|e| e.into_inner());
        let before = sim.buffered_samples();
        // the summary is written out and dropped with the GIL released (a writer thread goes on)
        let (summary, tables) = py
            .detach(|| catch_unwind(AssertUnwindSafe(|| sim.finish().map(|r| (summary_json(&r.summary), r.tables)))))
            .map_err(engine_panic)?
            .map_err(run_error)?;
        Ok((summary, before, tables_to_py(py, tables)?))
    }
}

/// The summary as compact JSON, written into a byte buffer (`Value`'s `Display` goes through
/// `fmt::Write`, a call per token: twice as slow on a 1 000-host run's 570 KB).
fn summary_json(summary: &serde_json::Value) -> String {
    serde_json::to_string(summary).expect("a JSON value serialises")
}

/// Run a simulation. Returns `(summary_json, tables)`; see docs/engine-contract.md.
#[pyfunction]
#[pyo3(signature = (ir_json, progress=None, chunk_ps=0))]
fn run<'py>(py: Python<'py>, ir_json: &str, progress: Option<Bound<'py, PyAny>>, chunk_ps: u64) -> PyResult<(String, Bound<'py, PyDict>)> {
    let mut sim = py
        .detach(|| catch_unwind(|| Simulation::from_json(ir_json)))
        .map_err(|p| PyRuntimeError::new_err(format!("internal error: {}", panic_msg(p))))?
        .map_err(scenario_err)?;
    let dur = sim.duration();
    let chunk = if chunk_ps == 0 { (dur / 200).max(1) } else { chunk_ps };
    loop {
        let target = sim.now().saturating_add(chunk);
        let done = py
            .detach(|| catch_unwind(AssertUnwindSafe(|| sim.run_until(target))))
            .map_err(|p| PyRuntimeError::new_err(format!("internal error (engine panic): {}", panic_msg(p))))?;
        py.check_signals()?; // Ctrl-C: KeyboardInterrupt, raised to the caller
        if let Some(cb) = &progress {
            cb.call1((cnsim_core::time::to_s(sim.now()),))?;
        }
        if done {
            break;
        }
    }
    let results = py.detach(|| catch_unwind(AssertUnwindSafe(|| sim.finish()))).map_err(engine_panic)?.map_err(run_error)?;
    Ok((summary_json(&results.summary), tables_to_py(py, results.tables)?))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(indent_json, m)?)?;
    m.add_function(wrap_pyfunction!(schemes, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(flow_paths, m)?)?;
    m.add_function(wrap_pyfunction!(pair_paths, m)?)?;
    m.add_class::<PySimulation>()?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("InvariantError", m.py().get_type::<InvariantError>())?;
    Ok(())
}
