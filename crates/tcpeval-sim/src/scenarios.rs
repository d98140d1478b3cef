//! Fixed scenarios used by the benchmarks (issue 2, item 9), built in code so the
//! Rust benchmarks need no Python.

use crate::config::{Config, FlowConfig, NetworkConfig};
use crate::time::{MS, SEC};

/// A bulk Reno flow on a dumbbell with Linux defaults.
pub fn bulk_flow(rtt_ms: u64) -> FlowConfig {
    FlowConfig {
        cc: "reno".into(),
        params: Default::default(),
        rtt_ns: rtt_ms * MS,
        start_ns: 0,
        bytes: None,
        max_window_bytes: None,
        mss: 1448,
        mtu: 1500,
        sack: true,
        delayed_ack: true,
        delack_timeout_ns: 40 * MS,
        initial_cwnd: 10,
    }
}

/// `flows` bulk flows over a dumbbell; buffer as a fraction of the BDP in 1500 B packets.
pub fn dumbbell(rate_bps: f64, rtt_ms: u64, buffer_bdp: f64, loss: f64, flows: usize, duration_s: f64) -> Config {
    let bdp_pkts = rate_bps * rtt_ms as f64 / 1e3 / 8.0 / 1500.0;
    let buf = ((bdp_pkts * buffer_bdp).ceil() as u64).max(1);
    Config {
        seed: 1,
        duration_ns: (duration_s * SEC as f64) as u64,
        interval_ns: SEC,
        trace_interval_ns: 100 * MS,
        network: NetworkConfig {
            bottleneck_rate_bps: rate_bps,
            bottleneck_delay_ns: 0,
            access_rate_bps: rate_bps * 10.0,
            buffer_pkts: Some(buf),
            buffer_bytes: None,
            reverse_buffer_pkts: Some(buf),
            reverse_buffer_bytes: None,
            queue: "droptail".into(),
            loss,
        },
        flows: (0..flows).map(|_| bulk_flow(rtt_ms)).collect(),
    }
}

/// The benchmark scenarios of issue 2: (name, description, config).
pub fn benchmark_set() -> Vec<(&'static str, &'static str, Config)> {
    vec![
        ("a", "2 flows, 100 Mbit/s, 100 ms, 1-BDP buffer, 60 s", dumbbell(100e6, 100, 1.0, 0.0, 2, 60.0)),
        ("b", "2 flows, 1 Gbit/s, 50 ms, 20%-BDP buffer, 30 s", dumbbell(1e9, 50, 0.2, 0.0, 2, 30.0)),
        ("c", "1 flow, 10 Gbit/s, 12 ms, loss 1e-6, 10 s", dumbbell(10e9, 12, 1.0, 1e-6, 1, 10.0)),
    ]
}
