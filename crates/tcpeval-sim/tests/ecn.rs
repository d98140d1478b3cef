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
fn aqm_run(queue: &str, cc: &str, ecn: bool, seconds: u64, seed: u64) -> SimResult {
    let flows = (0..4)
        .map(|i| {
            let mut f = flow(cc, 50, i as f64 * 0.25);
            f.ecn = ecn;
            f
        })
        .collect();
    let mut cfg = dumbbell(RATE, 50, 2.0, seconds, flows);
    cfg.seed = seed;
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
        let (marked, dropped) = (aqm_run(queue, "cubic", true, 15, 1), aqm_run(queue, "cubic", false, 15, 1));
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
/// them; from then on marks replace every drop. Utilisation is compared over
/// sixteen seeds: one run's varies with where RED's random marks fall (seeds 1-6
/// with TCP Small Queues: 0.86-0.93 with ECN, 0.90-0.93 with drops). With the
/// receiver's SACK compression the four seeds once used gave 0.891 against
/// 0.926 (they had given 0.907 against 0.910), eight gave 0.906 against
/// 0.929. Linux 6.6's skb-sized bursts (tcp::tso) widened the gap: sixteen
/// seeds give 0.897 against 0.927, ECN lower in 15 of them; within 4%.
#[test]
fn red_marks_ecn_reno_flows_instead_of_dropping_them_at_the_same_throughput() {
    let (mut u_marked, mut u_dropped) = (0.0, 0.0);
    for seed in 1..=16 {
        let (marked, dropped) = (aqm_run("red", "reno", true, 20, seed), aqm_run("red", "reno", false, 20, seed));
        assert_eq!(drops_after(&marked, 5.0), 0, "ECN flows: no drop after start-up");
        assert!(marked.links[0].marks > 100, "{} marks", marked.links[0].marks);
        assert!(drops_after(&dropped, 5.0) > 10 && dropped.links[0].marks == 0, "the same RED drops Not-ECT flows");
        u_marked += utilization(&marked, RATE, 5.0, 20.0) / 16.0;
        u_dropped += utilization(&dropped, RATE, 5.0, 20.0) / 16.0;
    }
    assert!((u_marked / u_dropped - 1.0).abs() < 0.04, "mean utilisation with ECN {u_marked:.4}, with drops {u_dropped:.4}");
}

/// The gaps between a flow's successive window cuts (ssthresh falls) less
/// than 0.5 s apart and after `from_s`, in units of its smoothed RTT at the
/// later cut; from a trace at `trace_interval_ns`.
fn cut_gaps_in_rtts(r: &SimResult, from_s: f64) -> Vec<f64> {
    let tr = &r.trace;
    let mut gaps = vec![];
    for flow in 0..r.flows.len() as u32 {
        let rows: Vec<usize> = (0..tr.t_ns.len()).filter(|&i| tr.flow[i] == flow).collect();
        let cuts: Vec<usize> = rows.windows(2).filter(|w| tr.ssthresh_pkts[w[1]] < tr.ssthresh_pkts[w[0]]).map(|w| w[1]).collect();
        for c in cuts.windows(2) {
            let (t0, t1) = (tr.t_ns[c[0]] as f64 / 1e9, tr.t_ns[c[1]] as f64 / 1e9);
            if t1 - t0 < 0.5 && t1 > from_s {
                gaps.push((t1 - t0) / (tr.srtt_ns[c[1]] as f64 / 1e9));
            }
        }
    }
    gaps
}

fn median(mut x: Vec<f64>) -> f64 {
    x.sort_by(f64::total_cmp);
    x[x.len() / 2]
}

/// Why CUBIC behind default RED loses utilisation with ECN (docs/validation.md,
/// ECN): RED's average (a one-second time constant) stays above min_th for
/// several round trips after the flows have cut, so the signal persists. Under
/// it an ECN flow cuts once per round trip: a CWR episode ends as soon as
/// snd_una passes its high mark, one RTT after the ECE (Linux 6.6
/// `tcp_fastretrans_alert`, TCP_CA_CWR), and the next mark's ECE starts
/// another. A loss-based flow cuts about every second round trip: its
/// recovery ends only when every hole below its high mark is repaired, and a
/// packet dropped just before the episode began is detected one RTT later and
/// acknowledged one RTT after that. Hand-derived: gaps of 1 and 2 RTTs. The
/// start-up cascade of four CUBIC flows (1-3 s), trace every millisecond.
#[test]
fn under_red_s_lagging_average_ecn_cuts_once_per_round_trip_and_loss_every_second() {
    let run = |ecn: bool| {
        let flows = (0..4)
            .map(|i| {
                let mut f = flow("cubic", 50, i as f64 * 0.25);
                f.ecn = ecn;
                f
            })
            .collect();
        let mut cfg = dumbbell(RATE, 50, 2.0, 3, flows);
        cfg.trace_interval_ns = 1_000_000;
        cfg.network.hops[0].queue = "red".into();
        cfg.network.hops[0].red.ecn = Some(true);
        run_checked(cfg)
    };
    let (marked, dropped) = (run(true), run(false));
    assert_eq!(drops(&marked), 0, "every signal to the ECN flows is a mark");
    let (g_ecn, g_loss) = (cut_gaps_in_rtts(&marked, 0.9), cut_gaps_in_rtts(&dropped, 0.9));
    assert!(g_ecn.len() >= 12 && g_loss.len() >= 12, "a cascade of cuts: {} and {} gaps", g_ecn.len(), g_loss.len());
    let (m_ecn, m_loss) = (median(g_ecn), median(g_loss));
    assert!((0.8..1.5).contains(&m_ecn), "ECN: median gap {m_ecn:.2} RTTs, expected about 1");
    assert!((1.7..2.7).contains(&m_loss), "loss: median gap {m_loss:.2} RTTs, expected about 2");
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
