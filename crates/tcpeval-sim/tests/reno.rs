//! Issue-level checks that would catch a wrong simulator: utilisation, the Mathis
//! response function, fairness, the receive-window limit, determinism. Every run
//! checks conservation once per simulated second (see `common::run_checked`).
mod common;
use common::*;
use tcpeval_sim::time::SEC;

#[test]
fn one_reno_flow_fills_a_one_bdp_buffer_link() {
    let cfg = dumbbell(100e6, 50, 1.0, 30, vec![flow("reno", 50, 0.0)]);
    let r = run_checked(cfg);
    let u = utilization(&r, 100e6, 5.0, 30.0);
    assert!(u >= 0.95, "utilization {u}");
    assert_eq!(r.flows[0].timeouts, 0);
}

/// Mathis et al. (CCR 1997): throughput = (MSS/RTT) * sqrt(3/(2 b p)), with b = 1
/// because Linux grows cwnd per packet acknowledged, not per ACK.
fn mathis_mbps(rtt_s: f64, p: f64) -> f64 {
    MSS as f64 * 8.0 / rtt_s * (3.0 / (2.0 * p)).sqrt() / 1e6
}

/// One Reno flow on a 1 Gbit/s, 100 ms path with random loss `p`. The window is
/// capped at 8x the Mathis window (far above the sawtooth's peak, far below BDP
/// plus buffer) so that slow start cannot overflow the buffer and only random
/// drops occur. The first tenth of the run (convergence from slow start) is skipped.
fn random_loss_goodput(p: f64, duration_s: u64, seed: u64) -> f64 {
    let mut f = flow("reno", 100, 0.0);
    f.max_window_bytes = Some((8.0 * (1.5 / p).sqrt()) as u64 * MSS);
    let mut cfg = dumbbell(1e9, 100, 1.0, duration_s, vec![f]);
    cfg.network.hops[0].loss = p;
    cfg.seed = seed;
    let r = run_checked(cfg);
    assert_eq!(r.links[0].drops_overflow, 0, "the buffer must not drop");
    goodput_mbps(&r, 0, duration_s as f64 / 10.0, duration_s as f64)
}

#[test]
fn reno_under_random_loss_follows_mathis() {
    // Durations give about 250 loss events each, enough to pin the mean within a
    // few percent. Random (Poisson) loss gives a constant about 7% above the
    // deterministic sawtooth's sqrt(3/2) (Ott, Kemperman, Mathis 1996); we measure
    // ratios of 1.02-1.10.
    for (p, dur) in [(1e-5, 6000), (1e-4, 2000), (1e-3, 600)] {
        let got = random_loss_goodput(p, dur, 1);
        let want = mathis_mbps(0.1, p);
        let ratio = got / want;
        eprintln!("p={p}: {got:.2} Mbit/s, Mathis {want:.2}, ratio {ratio:.3}");
        assert!((0.8..=1.2).contains(&ratio), "p={p}: ratio {ratio}");
    }
}

#[test]
fn two_reno_flows_share_fairly() {
    let flows = vec![flow("reno", 50, 0.0), flow("reno", 50, 5.0)];
    let r = run_checked(dumbbell(100e6, 50, 1.0, 120, flows));
    let x: Vec<f64> = (0..2).map(|f| goodput_mbps(&r, f, 60.0, 120.0)).collect();
    let j = jain(&x);
    assert!(j >= 0.95, "jain {j} from {x:?}");
}

#[test]
fn receive_window_limits_throughput_to_window_over_rtt() {
    let mut f = flow("reno", 100, 0.0);
    let window = 256_000u64;
    f.max_window_bytes = Some(window);
    let r = run_checked(dumbbell(100e6, 100, 1.0, 30, vec![f]));
    let got = goodput_mbps(&r, 0, 5.0, 30.0);
    let want = window as f64 * 8.0 / 0.1 / 1e6;
    assert!((got / want - 1.0).abs() <= 0.03, "got {got}, want {want}");
    assert_eq!(r.flows[0].retransmits, 0);
}

#[test]
fn fixed_size_transfer_completes_and_delivers_every_byte() {
    let mut f = flow("reno", 40, 0.0);
    f.bytes = Some(10_000_001);
    let r = run_checked(dumbbell(100e6, 40, 0.2, 10, vec![f]));
    assert_eq!(r.flows[0].bytes_delivered, 10_000_001);
    let done = r.flows[0].completed_ns.expect("transfer completes");
    assert!(done < 3 * SEC, "completed at {done}");
}

#[test]
fn without_sack_newreno_recovers_and_conserves() {
    let mut flows = vec![flow("reno", 50, 0.0), flow("reno", 50, 1.0)];
    for f in &mut flows {
        f.sack = false;
    }
    let r = run_checked(dumbbell(100e6, 50, 0.5, 40, flows));
    assert!(r.flows.iter().all(|f| f.recoveries > 0));
    let u = utilization(&r, 100e6, 10.0, 40.0);
    assert!(u > 0.85, "utilization {u}");
}

#[test]
fn same_config_and_seed_give_identical_output() {
    let make = || {
        let mut cfg = dumbbell(100e6, 30, 0.3, 15, vec![flow("reno", 30, 0.0), flow("reno", 60, 0.5)]);
        cfg.network.hops[0].loss = 1e-4;
        cfg.seed = 42;
        cfg
    };
    let a = serde_json::to_string(&tcpeval_sim::simulate(make()).unwrap()).unwrap();
    let b = serde_json::to_string(&tcpeval_sim::simulate(make()).unwrap()).unwrap();
    assert_eq!(a, b);
    let mut other = make();
    other.seed = 43;
    let c = serde_json::to_string(&tcpeval_sim::simulate(other).unwrap()).unwrap();
    assert_ne!(a, c, "a different seed must change a lossy run");
}
