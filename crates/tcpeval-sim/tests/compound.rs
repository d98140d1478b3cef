//! Compound TCP alone with a large buffer (issue 4 item 3): the delay window
//! collapses once the queue passes gamma, the loss window follows Reno.
mod common;
use common::*;
use tcpeval_sim::cc::Cc;
use tcpeval_sim::time::SEC;
use tcpeval_sim::Simulation;

fn windows(sim: &Simulation) -> (f64, f64, u32) {
    let s = sim.sender(0);
    let Cc::Compound(c) = &s.cc else { panic!("compound") };
    (c.loss_window(), c.delay_window(), s.s.cwnd)
}

#[test]
fn delay_window_collapses_when_queueing_exceeds_gamma_and_loss_window_is_reno() {
    // 4-BDP buffer, and a receive window that keeps slow start from filling it.
    let mut f = flow("compound", 50, 0.0);
    f.max_window_bytes = Some(4_000_000);
    let cfg = dumbbell(100e6, 50, 4.0, 40, vec![f]);
    let mut sim = Simulation::new(cfg).unwrap();
    let mut max_dwnd: f64 = 0.0;
    let mut t = 0;
    // Early on (window near the BDP, little queue) the delay window grows.
    while t < 8 * SEC {
        t += SEC / 10;
        sim.run_until(t);
        max_dwnd = max_dwnd.max(windows(&sim).1);
    }
    assert!(max_dwnd > 10.0, "the delay window grew: max {max_dwnd}");
    // Later the queue exceeds gamma = 30 packets: the delay window is gone and the
    // window grows like Reno's loss window, about one packet per RTT.
    sim.run_until(25 * SEC);
    let (l0, d0, w0) = windows(&sim);
    sim.run_until(30 * SEC);
    let (l1, d1, w1) = windows(&sim);
    assert_eq!((d0, d1), (0.0, 0.0), "delay window collapsed");
    // RTT = 50 ms + queueing of (window - BDP) packets at 120 us each.
    let bdp = 100e6 * 0.05 / 8.0 / 1500.0;
    let rtt_s = 0.05 + (w0 as f64 - bdp).max(0.0) * 1500.0 * 8.0 / 100e6;
    let rounds = 5.0 / rtt_s;
    let growth = l1 - l0;
    assert!((growth - rounds).abs() <= 0.25 * rounds + 2.0, "loss window +{growth:.1} in {rounds:.1} RTTs");
    assert!(w1 > w0);
    sim.check_conservation().unwrap();
}
