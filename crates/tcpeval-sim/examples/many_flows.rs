//! `cargo run --release --example many_flows CASE [N]`: time and peak memory
//! (VmHWM) of runs with many flows (issue 29, goal 4; docs/performance.md, "Many
//! flows"). Cases:
//!
//! - `long N`: N concurrent long-lived Reno flows (64 KB windows, the background
//!   flows' shape) on 1 Gbit/s for 30 s.
//! - `web N`: web transfers drawn by the engine (SURGE sizes, lognormal RTTs with
//!   median 80 ms) at load 0.5 of 1 Gbit/s, for as long as N transfers take.
//! - `planned N`: the same N transfers planned up front as N configured flows
//!   (how the front end ran web traffic before the engine drew it).

use std::time::Instant;
use tcpeval_sim::config::{Config, FlowConfig, WebConfig};
use tcpeval_sim::scenarios::dumbbell;
use tcpeval_sim::web::WebSource;
use tcpeval_sim::Simulation;

const RATE: f64 = 1e9;
const LOAD: f64 = 0.5;

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1));
    kib.and_then(|v| v.parse::<f64>().ok()).map_or(f64::NAN, |k| k / 1024.0)
}

fn web_source(duration_ns: u64) -> WebConfig {
    serde_json::from_value(serde_json::json!({
        "load": LOAD, "rate_bps": RATE, "stop_ns": duration_ns, "cc": "reno", "max_window_bytes": 65536,
        "rtt": {"kind": "lognormal", "median_ms": 80.0, "sigma": 0.8},
    }))
    .expect("a valid web source")
}

/// A 1 Gbit/s dumbbell, 20%-BDP buffer at 100 ms, no flows yet.
fn base(duration_s: f64) -> Config {
    let mut cfg = dumbbell(RATE, 100, 0.2, 0.0, 0, duration_s);
    cfg.trace_interval_ns = cfg.interval_ns;
    cfg
}

/// Seconds of arrivals that bring about n transfers.
fn span_for(n: u64) -> f64 {
    let cfg = web_source(1);
    n as f64 / (LOAD * RATE / (8.0 * cfg.sizes.mean()))
}

fn config(case: &str, n: u64) -> Config {
    match case {
        "long" => {
            let mut cfg = base(30.0);
            cfg.flows = (0..n)
                .map(|i| {
                    let mut f = FlowConfig::bulk("reno", (20 + i % 180) * 1_000_000);
                    f.max_window_bytes = Some(65536);
                    f.trace = false;
                    f.start_ns = i * 1_000_000_000 / n.max(1);
                    f
                })
                .collect();
            cfg
        }
        "web" => {
            let mut cfg = base(span_for(n));
            cfg.web.push(web_source(cfg.duration_ns));
            cfg
        }
        "planned" => {
            let mut cfg = base(span_for(n));
            let mut src = WebSource::new(web_source(cfg.duration_ns), cfg.seed, 0);
            while let Some(t) = src.next_arrival() {
                let tr = src.arrive();
                let mut f = FlowConfig::bulk("reno", tr.rtt_ns.max(2 * cfg.network.hops[0].delay_ns));
                (f.start_ns, f.bytes, f.max_window_bytes, f.trace) = (t, Some(tr.bytes), Some(65536), false);
                cfg.flows.push(f);
            }
            cfg
        }
        _ => panic!("case: long, web or planned"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let case = args.get(1).map_or("web", String::as_str);
    let n: u64 = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let t0 = Instant::now();
    let cfg = config(case, n);
    let planned_s = t0.elapsed().as_secs_f64();
    let res = Simulation::new(cfg).expect("a valid config").run();
    let done = res.flows.iter().filter(|f| f.completed_ns.is_some()).count() + res.web.completed_ns.iter().flatten().count();
    println!(
        "{case} {n}: {} flows reported ({done} completed), {:.0} s simulated, {} bottleneck packets, {} events; \
         plan {planned_s:.1} s, total {:.1} s wall; peak {:.0} MiB",
        res.flows.len() + res.web.len(),
        res.sim.end_ns as f64 / 1e9,
        res.sim.packets,
        res.sim.events,
        t0.elapsed().as_secs_f64(),
        peak_rss_mib()
    );
}
