//! `cnsim._core`: the only PyO3 crate. Converts the IR JSON into a simulation, runs it in chunks
//! with the GIL released (checking Ctrl-C and reporting progress between chunks), maps errors to
//! Python exceptions and hands the result tables over as raw little-endian buffers.

use cnsim_core::{Column, RunError, Simulation};
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::panic::{catch_unwind, AssertUnwindSafe};

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
    py.detach(|| {
        catch_unwind(|| parse_ir(ir_json).and_then(|ir| validate(&ir).map(|_| cnsim_core::net::flow_paths(&ir))))
    })
        .map_err(|p| PyRuntimeError::new_err(format!("internal error: {}", panic_msg(p))))?
        .map_err(scenario_err)
}

fn column_to_py<'py>(py: Python<'py>, c: &Column) -> PyResult<Bound<'py, PyAny>> {
    /// Little-endian bytes of a numeric column (one pass, no per-element allocation).
    macro_rules! raw {
        ($dtype:expr, $v:expr) => {{
            let v = $v;
            let mut bytes = Vec::with_capacity(std::mem::size_of_val(v.as_slice()));
            for x in v {
                bytes.extend_from_slice(&x.to_le_bytes());
            }
            Ok(($dtype, PyBytes::new(py, &bytes)).into_pyobject(py)?.into_any())
        }};
    }
    match c {
        Column::U32(v) => raw!("<u4", v),
        Column::U64(v) => raw!("<u8", v),
        Column::F64(v) => raw!("<f8", v),
        Column::Str(v) => Ok(PyList::new(py, v)?.into_any()),
    }
}

/// Run a simulation. Returns `(summary_json, tables)`; see docs/engine-contract.md.
#[pyfunction]
#[pyo3(signature = (ir_json, progress=None, chunk_ps=0))]
fn run<'py>(
    py: Python<'py>,
    ir_json: &str,
    progress: Option<Bound<'py, PyAny>>,
    chunk_ps: u64,
) -> PyResult<(String, Bound<'py, PyDict>)> {
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
        if let Err(e) = py.check_signals() {
            if e.is_instance_of::<PyKeyboardInterrupt>(py) {
                return Err(e);
            }
            return Err(e);
        }
        if let Some(cb) = &progress {
            cb.call1((cnsim_core::time::to_s(sim.now()),))?;
        }
        if done {
            break;
        }
    }
    let results = py
        .detach(|| catch_unwind(AssertUnwindSafe(|| sim.finish())))
        .map_err(|p| PyRuntimeError::new_err(format!("internal error (engine panic): {}", panic_msg(p))))?
        .map_err(|e| match e {
            RunError::Invariant(m) => InvariantError::new_err(m),
            other => PyRuntimeError::new_err(other.to_string()),
        })?;
    let tables = PyDict::new(py);
    for t in &results.tables {
        let cols = PyDict::new(py);
        for (name, c) in &t.columns {
            cols.set_item(*name, column_to_py(py, c)?)?;
        }
        tables.set_item(t.name, cols)?;
    }
    Ok((results.summary.to_string(), tables))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(schemes, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(flow_paths, m)?)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("InvariantError", m.py().get_type::<InvariantError>())?;
    Ok(())
}
