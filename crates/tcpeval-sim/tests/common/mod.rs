//! Scenario builders shared by the integration tests.
#![allow(dead_code)]

use tcpeval_sim::config::{Config, FlowConfig, NetworkConfig};
use tcpeval_sim::time::{MS, SEC};
use tcpeval_sim::{SimResult, Simulation};

pub const MSS: u64 = 1448;
pub const MTU: u64 = 1500;

pub fn flow(cc: &str, rtt_ms: u64, start_s: f64) -> FlowConfig {
    let mut f = FlowConfig::bulk(cc, rtt_ms * MS);
    f.start_ns = (start_s * SEC as f64) as u64;
    f
}

/// A dumbbell at `rate_bps` with a buffer of `buffer_bdp` times the BDP of `rtt_ms`.
pub fn dumbbell(rate_bps: f64, rtt_ms: u64, buffer_bdp: f64, duration_s: u64, flows: Vec<FlowConfig>) -> Config {
    let bdp_pkts = (rate_bps * rtt_ms as f64 / 1000.0 / 8.0 / MTU as f64).ceil();
    let buf = ((bdp_pkts * buffer_bdp).ceil() as u64).max(1);
    Config {
        seed: 1,
        duration_ns: duration_s * SEC,
        interval_ns: SEC,
        trace_interval_ns: 100 * MS,
        network: NetworkConfig::dumbbell(rate_bps, buf),
        flows,
        udp: vec![],
        web: vec![],
        capture: None,
    }
}

/// Run to the end, checking conservation every simulated second.
pub fn run_checked(cfg: Config) -> SimResult {
    let end = cfg.duration_ns;
    let mut sim = Simulation::new(cfg).expect("valid config");
    let mut t = 0;
    while t < end {
        t = (t + SEC).min(end);
        sim.run_until(t);
        sim.check_conservation().unwrap_or_else(|e| panic!("at t={t}: {e}"));
    }
    sim.run_result()
}

/// Mean goodput of `flow` in Mbit/s over report intervals ending in (from_s, to_s].
pub fn goodput_mbps(r: &SimResult, flow: u32, from_s: f64, to_s: f64) -> f64 {
    let iv = &r.intervals;
    let (mut bytes, mut n) = (0u64, 0u64);
    for i in 0..iv.t_ns.len() {
        let t = iv.t_ns[i] as f64 / SEC as f64;
        if iv.flow[i] == flow && t > from_s && t <= to_s {
            bytes += iv.delivered_bytes[i];
            n += 1;
        }
    }
    bytes as f64 * 8.0 / (n as f64) / 1e6
}

/// Bottleneck utilisation (wire bytes) over report intervals ending in (from_s, to_s].
pub fn utilization(r: &SimResult, rate_bps: f64, from_s: f64, to_s: f64) -> f64 {
    let li = &r.link_intervals;
    let (mut bytes, mut n) = (0u64, 0u64);
    for i in 0..li.t_ns.len() {
        let t = li.t_ns[i] as f64 / SEC as f64;
        if li.link[i] == "bottleneck" && t > from_s && t <= to_s {
            bytes += li.tx_bytes[i];
            n += 1;
        }
    }
    bytes as f64 * 8.0 / (n as f64 * rate_bps)
}

/// Jain's fairness index. The engine computes no metrics (it reports raw
/// intervals; the summary's metrics live in python/tcpeval/metrics.py, whose
/// `jain_index` is the one users see), so the Rust tests keep this small copy.
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * s2)
}

/// Time-averaged bottleneck queue (packets) over report intervals ending after `from_s`.
pub fn mean_queue(r: &SimResult, from_s: f64) -> f64 {
    let li = &r.link_intervals;
    let rows: Vec<f64> = (0..li.t_ns.len())
        .filter(|&i| li.link[i] == "bottleneck" && li.t_ns[i] as f64 / 1e9 > from_s)
        .map(|i| li.queue_pkts_mean[i])
        .collect();
    rows.iter().sum::<f64>() / rows.len() as f64
}

/// Add `n` reverse Reno flows (data over the reverse bottleneck), started 1 s apart
/// from 1 s.
pub fn add_reverse_reno(cfg: &mut Config, n: usize, rtt_ms: u64) {
    for i in 0..n {
        let mut rev = flow("reno", rtt_ms, 1.0 + i as f64);
        rev.direction = "reverse".into();
        cfg.flows.push(rev);
    }
}
