//! Fixed scenarios used by the benchmarks (issue 2, item 9), built in code so the
//! Rust benchmarks need no Python.

use crate::config::{Config, FlowConfig, NetworkConfig};
use crate::time::{MS, SEC};

/// A bulk Reno flow on a dumbbell with Linux defaults.
pub fn bulk_flow(rtt_ms: u64) -> FlowConfig {
    FlowConfig::bulk("reno", rtt_ms * MS)
}

/// `flows` bulk flows over a dumbbell; buffer as a fraction of the BDP in 1500 B packets.
pub fn dumbbell(rate_bps: f64, rtt_ms: u64, buffer_bdp: f64, loss: f64, flows: usize, duration_s: f64) -> Config {
    let bdp_pkts = rate_bps * rtt_ms as f64 / 1e3 / 8.0 / crate::consts::MTU_BYTES as f64;
    let buf = ((bdp_pkts * buffer_bdp).ceil() as u64).max(1);
    let mut network = NetworkConfig::dumbbell(rate_bps, buf);
    network.hops[0].loss = loss;
    Config {
        seed: 1,
        duration_ns: (duration_s * SEC as f64) as u64,
        interval_ns: SEC,
        trace_interval_ns: 100 * MS,
        network,
        flows: (0..flows).map(|_| bulk_flow(rtt_ms)).collect(),
        udp: vec![],
        web: vec![],
        capture: None,
    }
}
/// `dumbbell` plus `transfers` short transfers of `size` bytes, their starts
/// spread evenly over the run (web-like background: many flows, few active).
pub fn with_transfers(mut cfg: Config, transfers: u64, size: u64) -> Config {
    let gap = cfg.duration_ns / transfers.max(1);
    for i in 0..transfers {
        let mut f = bulk_flow(50);
        f.start_ns = i * gap;
        f.bytes = Some(size);
        f.trace = false;
        cfg.flows.push(f);
    }
    cfg
}

/// `cfg` with every flow running `cc`.
pub fn with_cc(mut cfg: Config, cc: &str) -> Config {
    for f in &mut cfg.flows {
        f.cc = cc.to_string();
    }
    cfg
}

/// The benchmark scenarios of issue 2 (and issue 29's CUBIC case, e): (name, description, config).
pub fn benchmark_set() -> Vec<(&'static str, &'static str, Config)> {
    vec![
        ("a", "2 flows, 100 Mbit/s, 100 ms, 1-BDP buffer, 60 s", dumbbell(100e6, 100, 1.0, 0.0, 2, 60.0)),
        ("b", "2 flows, 1 Gbit/s, 50 ms, 20%-BDP buffer, 30 s", dumbbell(1e9, 50, 0.2, 0.0, 2, 30.0)),
        ("c", "1 flow, 10 Gbit/s, 12 ms, loss 1e-6, 10 s", dumbbell(10e9, 12, 1.0, 1e-6, 1, 10.0)),
        ("d", "b + 30,000 transfers of 12 kB over the 30 s",
         with_transfers(dumbbell(1e9, 50, 0.2, 0.0, 2, 30.0), 30_000, 12_000)),
        ("e", "b with CUBIC", with_cc(dumbbell(1e9, 50, 0.2, 0.0, 2, 30.0), "cubic")),
    ]
}
