//! Thin PyO3 binding: one call, JSON in, JSON out. No simulation logic lives here.
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Run one simulation. `config_json` follows docs/engine-interface.md; returns the
/// result document as a JSON string. The GIL is released while the engine runs.
#[pyfunction]
fn simulate(py: Python<'_>, config_json: &str) -> PyResult<String> {
    let owned = config_json.to_owned();
    py.allow_threads(move || tcpeval_sim::simulate_json(&owned))
        .map_err(PyValueError::new_err)
}

/// Validate a config (JSON) as the engine does before it runs one, once: raises
/// ValueError(path, message), the path of the field at fault
/// (`flows[3].params.beta`, `network.hops[0].queue`) apart from what is wrong
/// with it, so callers never parse messages.
#[pyfunction]
fn validate(config_json: &str) -> PyResult<()> {
    tcpeval_sim::Config::from_json(config_json).map(|_| ()).map_err(|e| PyValueError::new_err((e.path, e.message)))
}

/// Congestion-control names accepted in scenarios (aliases included), from
/// the engine's registry.
#[pyfunction]
fn algorithms() -> Vec<&'static str> {
    tcpeval_sim::cc::names()
}

/// Each algorithm's parameters with their defaults, from its config struct, as
/// a JSON string: {name: {parameter: default}}, aliases included.
#[pyfunction]
fn algorithm_params() -> String {
    let reg = tcpeval_sim::cc::REGISTRY.iter();
    let all: serde_json::Map<String, serde_json::Value> =
        reg.flat_map(|a| a.names.iter().map(move |n| (n.to_string(), serde_json::Value::Object((a.params)())))).collect();
    serde_json::Value::Object(all).to_string()
}

/// The JSON Schema of one algorithm's `params` table (a JSON string).
#[pyfunction]
fn algorithm_schema(name: &str) -> PyResult<String> {
    let alg = tcpeval_sim::cc::algorithm(name).ok_or_else(|| PyValueError::new_err(("cc", format!("unknown algorithm '{name}'"))))?;
    serde_json::to_string(&(alg.schema)()).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The JSON Schema of the engine's input (a JSON string).
#[pyfunction]
fn config_schema() -> String {
    tcpeval_sim::config::schema().to_string()
}

/// The engine's constants (`tcpeval_sim::consts`): {name: value}, e.g.
/// header_bytes, mtu_bytes, initial_cwnd.
#[pyfunction]
fn constants() -> std::collections::HashMap<&'static str, u64> {
    tcpeval_sim::consts::ALL.iter().copied().collect()
}

/// A stack's out-of-the-box initial window (packets) and delayed-ACK timer in ns (None:
/// Linux's, the engine's default), from the stack's profile (docs/stacks.md):
/// the front end gives them to a flow that sets neither. Raises
/// ValueError("stack", message) for an unknown stack.
#[pyfunction]
fn stack_defaults(stack: &str) -> PyResult<(u32, Option<u64>)> {
    let stack = tcpeval_sim::stack::Stack::from_name(stack).map_err(|e| PyValueError::new_err(("stack", e)))?;
    let profile = stack.profile();
    Ok((profile.initial_window, profile.delack_timeout))
}

/// Whether `stack` offers the algorithm `cc` (by any of its names). Raises
/// ValueError("stack", message) for an unknown stack and ValueError("cc",
/// message naming what the stack offers) for an algorithm it did not have.
#[pyfunction]
fn stack_offers(stack: &str, cc: &str) -> PyResult<()> {
    let stack = tcpeval_sim::stack::Stack::from_name(stack).map_err(|e| PyValueError::new_err(("stack", e)))?;
    stack.offers(cc).map_err(|e| PyValueError::new_err(("cc", e)))
}

/// Engine version, recorded in every result.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _sim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(stack_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(stack_offers, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(algorithm_params, m)?)?;
    m.add_function(wrap_pyfunction!(algorithm_schema, m)?)?;
    m.add_function(wrap_pyfunction!(config_schema, m)?)?;
    m.add_function(wrap_pyfunction!(constants, m)?)?;
    Ok(())
}
