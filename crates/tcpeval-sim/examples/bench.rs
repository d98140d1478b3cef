//! `cargo run --release --example bench [NAME]`: runs the benchmark scenarios, each
//! in its own child process so that peak memory (VmHWM) is per scenario, and prints
//! simulated bottleneck packets per wall second.
//!
//! `bench NAME [SECONDS]` runs one scenario (cut short, to profile it); NAME may
//! also be an engine config file (`*.json`, docs/engine-interface.md), such as a
//! stored run's scenario.json, to profile a study's own runs.
//!
//! `bench --hash`: a hash of the serialised results of a fixed corpus (the
//! benchmark scenarios and a short lossy run of every algorithm), to check that
//! an optimisation leaves the output identical (docs/performance.md).

use std::process::Command;
use std::time::Instant;
use tcpeval_sim::scenarios::{benchmark_set, dumbbell, with_cc};

/// This thread's time on a CPU so far, in seconds (the first field of
/// /proc/thread-self/schedstat, in ns): on a loaded machine the wall time
/// includes waiting for a core, this does not.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    stat.split_whitespace().next().and_then(|v| v.parse::<f64>().ok()).map_or(f64::NAN, |ns| ns / 1e9)
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    kib / 1024.0
}

/// Run one scenario, cut to `seconds` if given (a shorter run to profile).
fn run_one(name: &str, seconds: Option<f64>) {
    let mut cfg = if name.ends_with(".json") {
        let text = std::fs::read_to_string(name).expect("readable config file");
        let mut doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        // A stored run's scenario.json also carries the front end's `meta`.
        doc.as_object_mut().expect("a JSON object").remove("meta");
        serde_json::from_value::<tcpeval_sim::Config>(doc).expect("an engine config")
    } else {
        benchmark_set().into_iter().find(|(n, _, _)| *n == name).expect("known scenario").2
    };
    if let Some(s) = seconds {
        cfg.duration_ns = (s * 1e9) as u64;
    }
    let (t0, c0) = (Instant::now(), cpu_s());
    let r = tcpeval_sim::simulate(cfg).expect("valid scenario");
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_s() - c0);
    let pkts = r.sim.packets as f64;
    println!("{name}\t{}\t{}\t{wall:.3}\t{:.0}\t{cpu:.3}\t{:.0}\t{:.1}", r.sim.packets, r.sim.events, pkts / wall, pkts / cpu, peak_rss_mib());
}

/// FNV-1a, 64 bits: stable across builds (unlike std's hasher).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Print the hash of each corpus run's serialised results, then of them all.
fn hash_corpus() {
    let mut corpus: Vec<(String, _)> = benchmark_set().into_iter().map(|(n, _, c)| (n.to_string(), c)).collect();
    let stack = tcpeval_sim::stack::DEFAULT_STACK;
    for cc in tcpeval_sim::cc::names().into_iter().filter(|n| stack.offers(n).is_ok()) {
        // Lossy and with a small buffer, so recovery and timeouts run too.
        corpus.push((cc.to_string(), with_cc(dumbbell(100e6, 20, 0.3, 1e-4, 2, 5.0), cc)));
    }
    let mut all = Vec::new();
    for (name, cfg) in corpus {
        let r = tcpeval_sim::simulate(cfg).expect("valid scenario");
        let h = fnv1a(&serde_json::to_vec(&r).expect("serialisable"));
        println!("{name}\t{h:016x}\t{} events", r.sim.events);
        all.extend(h.to_le_bytes());
    }
    println!("all\t{:016x}", fnv1a(&all));
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--hash") {
        hash_corpus();
        return;
    }
    if let Some(name) = std::env::args().nth(1) {
        run_one(&name, std::env::args().nth(2).map(|s| s.parse().expect("seconds")));
        return;
    }
    let me = std::env::current_exe().expect("own path");
    let head = ["bneck pkts", "events", "wall s", "pkts/wall s", "cpu s", "pkts/cpu s", "peak MiB"];
    println!("{:<3} {:<48} {:>12} {:>12} {:>8} {:>12} {:>8} {:>12} {:>9}", "id", "scenario", head[0], head[1], head[2], head[3], head[4], head[5], head[6]);
    for (name, desc, _) in benchmark_set() {
        let out = Command::new(&me).arg(name).output().expect("child runs");
        let line = String::from_utf8_lossy(&out.stdout);
        let f: Vec<&str> = line.trim().split('\t').collect();
        if f.len() < 8 {
            eprintln!("scenario {name} failed: {}", String::from_utf8_lossy(&out.stderr));
            continue;
        }
        println!("{:<3} {:<48} {:>12} {:>12} {:>8} {:>12} {:>8} {:>12} {:>9}", name, desc, f[1], f[2], f[3], f[4], f[5], f[6], f[7]);
    }
}
