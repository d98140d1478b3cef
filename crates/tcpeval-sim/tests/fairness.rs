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
fn cubic_fills_a_one_gigabit_path() {
    let r = run_checked(dumbbell(1e9, 50, 1.0, 60, vec![flow("cubic", 50, 0.0)]));
    let u = utilization(&r, 1e9, 10.0, 60.0);
    assert!(u >= 0.9, "utilization {u}");
}
