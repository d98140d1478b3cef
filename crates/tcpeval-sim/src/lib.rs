//! tcpeval-sim: a packet-level discrete-event simulator of TCP congestion control.
//!
//! Layers, bottom up: `time` and `event` (a scheduler that knows nothing of
//! networks), `net` (packets, queues, links, topologies), `tcp` (sender and
//! receiver), `cc` (congestion-control algorithms behind one trait), `trace`
//! (columnar recording) and `sim` (the event loop tying them together).

pub mod build;
pub mod capture;
pub mod cc;
pub mod config;
pub mod consts;
pub mod event;
pub mod net;
pub mod rng;
pub mod scenarios;
pub mod sim;
pub mod stack;
pub mod tcp;
pub mod time;
pub mod traffic;
pub mod trace;
pub mod web;

pub use config::{Config, ConfigError, ValidConfig};
pub use sim::{SimResult, Simulation};

/// Run one simulation from a config and return its results.
pub fn simulate(cfg: Config) -> Result<SimResult, String> {
    Ok(Simulation::new(cfg)?.run())
}

/// JSON in, JSON out: the entry point of the Python binding. The config is
/// validated once, by `Config::from_json`.
pub fn simulate_json(config_json: &str) -> Result<String, String> {
    let cfg = Config::from_json(config_json)?;
    let result = Simulation::from_valid(cfg).run();
    serde_json::to_string(&result).map_err(|e| format!("serialising results: {e}"))
}
