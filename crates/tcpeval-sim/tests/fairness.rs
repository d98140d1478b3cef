//! Fairness sanity (issue 3 item 4): two flows of one algorithm, same RTT,
//! 1 Gbit/s, 50 ms, 1-BDP buffer, the second starting 30 s later, 300 s; Jain's
//! index over the last half. Results for every algorithm are in docs/validation.md.
mod common;
use common::*;

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
