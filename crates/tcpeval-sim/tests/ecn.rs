//! ECN end to end (issue 33.2 and 33.5): ECN flows behind a marking queue see
//! no drops below its limit and the throughput of the same run with drops
//! (RFC 3168 section 5: a mark is the signal a drop would have been), and
//! DCTCP behind step marking holds the queue near K at full utilisation
//! (RFC 8257 section 3; Alizadeh et al., SIGCOMM 2010, section 3.3: K above
//! C x RTT / 7 keeps the link busy).
mod common;
use common::*;
use tcpeval_sim::config::Config;
use tcpeval_sim::SimResult;

const RATE: f64 = 100e6;

/// Four flows of `cc` (started 0.25 s apart), 100 Mbit/s, 50 ms, a 2-BDP
/// buffer (834 packets), behind `queue` with its ECN switch on.
fn aqm_run(queue: &str, cc: &str, ecn: bool, seconds: u64) -> SimResult {
    let flows = (0..4)
        .map(|i| {
            let mut f = flow(cc, 50, i as f64 * 0.25);
            f.ecn = ecn;
            f
        })
        .collect();
    let mut cfg = dumbbell(RATE, 50, 2.0, seconds, flows);
    let hop = &mut cfg.network.hops[0];
    hop.queue = queue.into();
    (hop.red.ecn, hop.codel.ecn, hop.fq_codel.ecn, hop.pie.ecn) = (Some(true), Some(true), Some(true), Some(true));
    run_checked(cfg)
}

fn drops(r: &SimResult) -> u64 {
    let l = &r.links[0];
    l.drops_early + l.drops_overflow
}

/// Bottleneck drops in report intervals ending after `from_s`.
fn drops_after(r: &SimResult, from_s: f64) -> u64 {
    let li = &r.link_intervals;
    (0..li.t_ns.len()).filter(|&i| li.link[i] == "bottleneck" && li.t_ns[i] as f64 / 1e9 > from_s).map(|i| li.drops[i]).sum()
}

#[test]
fn codel_fq_codel_and_pie_mark_ecn_flows_instead_of_dropping_them_at_the_same_throughput() {
    for queue in ["codel", "fq_codel", "pie"] {
        let (marked, dropped) = (aqm_run(queue, "cubic", true, 15), aqm_run(queue, "cubic", false, 15));
        assert_eq!(drops(&marked), 0, "{queue}: ECN flows see no drop below the limit");
        assert!(marked.links[0].marks > 10, "{queue}: {} marks", marked.links[0].marks);
        assert!(marked.flows.iter().all(|f| f.retransmits == 0), "{queue}: nothing to retransmit");
        assert!(drops(&dropped) > 10 && dropped.links[0].marks == 0, "{queue}: the same queue drops Not-ECT flows");
        let (u_marked, u_dropped) = (utilization(&marked, RATE, 5.0, 15.0), utilization(&dropped, RATE, 5.0, 15.0));
        assert!((u_marked / u_dropped - 1.0).abs() < 0.02, "{queue}: utilisation with ECN {u_marked:.4}, with drops {u_dropped:.4}");
    }
}

/// RED's average (a one-second time constant) lags the first slow start of
/// four Reno flows, whose overshoot overflows the buffer, and the recovery's
/// retransmissions leave Not-ECT (RFC 3168 section 6.1.5), so RED may drop
/// them; from then on marks replace every drop.
#[test]
fn red_marks_ecn_reno_flows_instead_of_dropping_them_at_the_same_throughput() {
    let (marked, dropped) = (aqm_run("red", "reno", true, 20), aqm_run("red", "reno", false, 20));
    assert_eq!(drops_after(&marked, 5.0), 0, "ECN flows: no drop after start-up");
    assert!(marked.links[0].marks > 100, "{} marks", marked.links[0].marks);
    assert!(drops_after(&dropped, 5.0) > 10 && dropped.links[0].marks == 0, "the same RED drops Not-ECT flows");
    let (u_marked, u_dropped) = (utilization(&marked, RATE, 5.0, 20.0), utilization(&dropped, RATE, 5.0, 20.0));
    assert!((u_marked / u_dropped - 1.0).abs() < 0.05, "utilisation with ECN {u_marked:.4}, with drops {u_dropped:.4}");
}

/// K = C x RTT / 7 (Alizadeh et al. section 3.3): 100 Mbit/s x 10 ms is
/// 83 packets of 1500 B, K = 12; the buffer is 2 BDPs.
const DC_RATE: f64 = 100e6;
const K: u64 = 12;

fn step_run(cc: &str, ecn: bool) -> SimResult {
    let flows = (0..2)
        .map(|i| {
            let mut f = flow(cc, 10, i as f64 * 0.1);
            f.ecn = ecn;
            f
        })
        .collect();
    let mut cfg: Config = dumbbell(DC_RATE, 10, 2.0, 10, flows);
    cfg.network.hops[0].queue = "step".into();
    cfg.network.hops[0].step.threshold_pkts = Some(K);
    run_checked(cfg)
}

#[test]
fn dctcp_with_step_marking_holds_the_queue_near_k_at_full_utilisation() {
    let dctcp = step_run("dctcp", false); // DCTCP negotiates ECN by itself
    let (q, u) = (mean_queue(&dctcp, 2.0), utilization(&dctcp, DC_RATE, 2.0, 10.0));
    assert!(u > 0.97, "DCTCP utilisation {u:.4}");
    // Alizadeh et al. section 3.3 (N synchronised flows, BDP C x RTT in
    // packets): the queue peaks at K + N and falls by the amplitude
    // A = sqrt(2 N (C x RTT + K)) / 2; for a sawtooth the mean is K + N - A/2
    // = 14 - 4.9 = 9.1 packets here.
    let (n, bdp) = (2.0, DC_RATE * 0.010 / 8.0 / 1500.0);
    let amplitude = (2.0 * n * (bdp + K as f64)).sqrt() / 2.0;
    let analytic = K as f64 + n - amplitude / 2.0;
    assert!((q - analytic).abs() < 2.5, "DCTCP mean queue {q:.2} packets, analytic {analytic:.2} (K = {K})");
    assert_eq!(drops(&dctcp), 0);
    assert!(dctcp.links[0].marks > 0);
    // Reductions on ECE only: about one per flow per sawtooth cycle.
    assert!(dctcp.flows.iter().all(|f| f.ecn_reductions > 100 && f.recoveries == 0), "{:?}", dctcp.flows.iter().map(|f| f.ecn_reductions).collect::<Vec<_>>());
    // Reno with ECN halves on each marked window: the same K leaves the link
    // idle part of the time (the reason DCTCP scales its cut by alpha).
    let reno = step_run("reno", true);
    let u_reno = utilization(&reno, DC_RATE, 2.0, 10.0);
    assert!(u_reno < u - 0.02, "Reno+ECN utilisation {u_reno:.4} vs DCTCP {u:.4}");
}
