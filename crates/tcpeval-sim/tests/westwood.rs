//! Westwood+ sets its window from its bandwidth estimate after a loss (issue 4).
mod common;
use common::*;
use tcpeval_sim::cc::Cc;
use tcpeval_sim::time::SEC;
use tcpeval_sim::Simulation;

#[test]
fn after_random_loss_ssthresh_is_the_bandwidth_estimate_times_rtt_min() {
    let mut cfg = dumbbell(20e6, 50, 1.0, 60, vec![flow("westwood", 50, 0.0)]);
    cfg.network.loss = 1e-4;
    let mut sim = Simulation::new(cfg).unwrap();
    let mut checked = 0;
    let mut last_recoveries = 0;
    // Step through the run; right after each recovery ends, compare.
    for step in 1..=6000u64 {
        sim.run_until(step * SEC / 100);
        let s = sim.sender(0);
        let Cc::Westwood(w) = &s.cc else { panic!("westwood") };
        let rec = s.counters.recoveries;
        if rec > last_recoveries && s.state == tcpeval_sim::cc::CaState::Open && step > 1000 {
            let want = w.bw_rtt_min(1448) as f64;
            let got = s.s.ssthresh as f64;
            assert!((got / want - 1.0).abs() <= 0.05, "ssthresh {got} vs BWE x RTTmin {want}");
            // The estimate itself: within 10% of the link rate the flow was using.
            let bw_bits = w.bandwidth() * 8.0;
            assert!(bw_bits > 0.5 * 20e6 && bw_bits < 1.1 * 20e6, "BWE {bw_bits}");
            checked += 1;
            last_recoveries = rec;
        } else if s.state == tcpeval_sim::cc::CaState::Open {
            last_recoveries = rec;
        }
    }
    assert!(checked >= 3, "only {checked} recoveries checked");
    sim.check_conservation().unwrap();
}

#[test]
fn random_loss_costs_westwood_less_than_reno() {
    let run = |cc: &str| {
        let mut cfg = dumbbell(100e6, 80, 1.0, 60, vec![flow(cc, 80, 0.0)]);
        cfg.network.loss = 1e-4;
        goodput_mbps(&run_checked(cfg), 0, 10.0, 60.0)
    };
    let (w, r) = (run("westwood"), run("reno"));
    assert!(w > 1.3 * r, "westwood {w:.1} vs reno {r:.1} Mbit/s");
}
