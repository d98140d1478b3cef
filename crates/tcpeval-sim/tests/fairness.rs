//! Fairness sanity (issue 3 item 4): two flows of one algorithm, same RTT,
//! 1 Gbit/s, 50 ms, 1-BDP buffer, the second starting 30 s later, 300 s; Jain's
//! index over the last half. Results for every algorithm are in docs/validation.md.
mod common;
use common::*;
use tcpeval_sim::config::FlowConfig;

fn jain_two_flows(cc: &str) -> f64 {
    let flows = vec![flow(cc, 50, 0.0), flow(cc, 50, 30.0)];
    let r = run_checked(dumbbell(1e9, 50, 1.0, 300, flows));
    let x: Vec<f64> = (0..2).map(|f| goodput_mbps(&r, f, 150.0, 300.0)).collect();
    let j = jain(&x);
    eprintln!("{cc}: goodput {x:?} Mbit/s, Jain {j:.3}");
    j
}

#[test]
fn reno_converges_to_a_fair_share() {
    assert!(jain_two_flows("reno") >= 0.9);
}

#[test]
fn cubic_converges_to_a_fair_share() {
    assert!(jain_two_flows("cubic") >= 0.9);
}

#[test]
fn bic_converges_to_a_fair_share() {
    assert!(jain_two_flows("bic") >= 0.9);
}

#[test]
fn htcp_converges_to_a_fair_share() {
    assert!(jain_two_flows("htcp") >= 0.9);
}

/// Scalable TCP falls short, legitimately: multiplicative increase and decrease
/// keep the ratio of two windows constant when both flows lose packets together,
/// as they do at a DropTail buffer (Chiu & Jain 1989: MIMD does not converge to
/// fairness). The late flow never catches up (measured: Jain 0.54, 932 vs 33
/// Mbit/s). This test pins that documented behaviour (docs/validation.md).
#[test]
fn scalable_does_not_converge_under_synchronised_loss() {
    assert!(jain_two_flows("scalable") < 0.9);
}

#[test]
fn highspeed_converges_to_a_fair_share() {
    assert!(jain_two_flows("highspeed") >= 0.9);
}

#[test]
fn cubic_fills_a_one_gigabit_path() {
    let r = run_checked(dumbbell(1e9, 50, 1.0, 60, vec![flow("cubic", 50, 0.0)]));
    let u = utilization(&r, 1e9, 10.0, 60.0);
    assert!(u >= 0.9, "utilization {u}");
}

/// Relative gap |x1 - x2| / (x1 + x2) of two Reno flows started 1 ms apart on a
/// loss-free 100 Mbit/s, 2 ms DropTail path (1-BDP buffer), over 10-60 s, on
/// ns-2's stack, where Floyd and Jacobson saw the effect and whose
/// `overhead_` the send overhead is.
fn reno_pair_gap(send_overhead_ns: u64, seed: u64) -> f64 {
    let flows: Vec<FlowConfig> = [0.0, 0.001]
        .iter()
        .map(|&start| FlowConfig { send_overhead_ns, stack: "ns2".into(), ..flow("reno", 2, start) })
        .collect();
    let mut cfg = dumbbell(1e8, 2, 1.0, 60, flows);
    cfg.seed = seed;
    let r = run_checked(cfg);
    let x: Vec<f64> = (0..2).map(|f| goodput_mbps(&r, f, 10.0, 60.0)).collect();
    eprintln!("overhead {send_overhead_ns} ns, seed {seed}: goodput {x:?} Mbit/s");
    (x[0] - x[1]).abs() / (x[0] + x[1])
}

/// Without anything random, the two flows lock into the phase of their first
/// losses at the DropTail buffer and keep an uneven split for the whole run
/// (Floyd and Jacobson 1992, "On Traffic Phase Effects in Packet-Switched
/// Gateways"): a 12.8% gap here. A send overhead of up to half a bottleneck
/// packet time (60 us of 120 us) breaks the lock, as ns-2's TCP `overhead_`
/// does: over seeds 1-10 the median gap is 0.7% (two seeds drift to 4-5%
/// over the 50 s). (Linux stacks lock less or not at all on this path: 2.7%
/// at 2.6.22, none at 3.16, 0.75% at 6.6, whose skb-sized bursts, tcp::tso,
/// break the ACK clock's phase by themselves.)
#[test]
fn send_overhead_breaks_the_phase_locked_split_of_two_reno_flows() {
    let locked = reno_pair_gap(0, 1);
    assert!(locked > 0.05, "precondition: this path phase-locks without overhead ({locked:.4})");
    let mut gaps: Vec<f64> = (1..=10).map(|seed| reno_pair_gap(60_000, seed)).collect();
    gaps.sort_by(f64::total_cmp);
    let median = (gaps[4] + gaps[5]) / 2.0;
    assert!(median < 0.015 && median < locked / 5.0, "median gap {median:.4} with the overhead, {locked:.4} locked; gaps {gaps:?}");
}
