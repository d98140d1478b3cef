//! The AQM queues against their design goals (issue 33.5): CoDel holds a
//! standing queue's sojourn time near its 5 ms target (RFC 8289 section 1),
//! PIE near its 15 ms target (RFC 8033 section 1), FQ-CoDel keeps a sparse
//! flow's delay near the link's transmission time beside a bulk flow (RFC 8290
//! section 1.3), and step marking keeps the queue near K with ECN and no drops.
mod common;
use common::*;
use tcpeval_sim::config::Config;
use tcpeval_sim::time::{MS, SEC};
use tcpeval_sim::SimResult;

const RATE: f64 = 100e6;

/// 4 CUBIC flows, 100 Mbit/s, 50 ms, a buffer of 2 BDPs (834 packets), 20 s.
fn long_lived(queue: &str) -> Config {
    let flows = (0..4).map(|i| flow("cubic", 50, i as f64 * 0.25)).collect();
    let mut cfg = dumbbell(RATE, 50, 2.0, 20, flows);
    cfg.network.hops[0].queue = queue.into();
    cfg.trace_interval_ns = 10 * MS;
    cfg
}

/// Median and 90th percentile of the bottleneck's queueing delay (its bytes
/// over the rate: the sojourn time of a FIFO's arrival) from `from_s` on, ms.
fn queue_delay_ms(r: &SimResult, from_s: f64) -> (f64, f64) {
    let q = &r.queue;
    let mut d: Vec<f64> = (0..q.t_ns.len())
        .filter(|&i| q.link[i] == "bottleneck" && q.t_ns[i] as f64 >= from_s * SEC as f64)
        .map(|i| q.queue_bytes[i] as f64 * 8.0 / RATE * 1e3)
        .collect();
    d.sort_by(f64::total_cmp);
    (d[d.len() / 2], d[d.len() * 9 / 10])
}

#[test]
fn codel_holds_the_standing_queue_near_its_target_where_droptail_fills_the_buffer() {
    let codel = run_checked(long_lived("codel"));
    let (median, p90) = queue_delay_ms(&codel, 5.0);
    assert!((2.0..=8.0).contains(&median), "CoDel median sojourn {median:.2} ms");
    assert!(p90 < 20.0, "CoDel p90 sojourn {p90:.2} ms");
    assert!(codel.links[0].drops_early > 0 && utilization(&codel, RATE, 5.0, 20.0) > 0.9);
    let droptail = run_checked(long_lived("droptail"));
    let (dt_median, _) = queue_delay_ms(&droptail, 5.0);
    assert!(dt_median > 40.0, "DropTail median queueing delay {dt_median:.1} ms");
}

#[test]
fn pie_holds_the_queue_delay_near_its_target() {
    let pie = run_checked(long_lived("pie"));
    let (median, p90) = queue_delay_ms(&pie, 5.0);
    assert!((8.0..=22.0).contains(&median), "PIE median delay {median:.2} ms");
    assert!(p90 < 40.0, "PIE p90 delay {p90:.2} ms");
    assert!(pie.links[0].drops_early > 0 && utilization(&pie, RATE, 5.0, 20.0) > 0.9);
}

/// A bulk CUBIC flow and a sparse one (a 2-packet window: one or two packets
/// at a time), 50 ms RTT: the sparse flow's smoothed RTT above 50 ms is its
/// queueing delay.
fn sparse_beside_bulk(queue: &str) -> f64 {
    let mut sparse = flow("cubic", 50, 1.0);
    sparse.max_window_bytes = Some(2 * MSS);
    let mut cfg = dumbbell(RATE, 50, 2.0, 15, vec![flow("cubic", 50, 0.0), sparse]);
    cfg.network.hops[0].queue = queue.into();
    let r = run_checked(cfg);
    let tr = &r.trace;
    let srtt: Vec<f64> = (0..tr.t_ns.len()).filter(|&i| tr.flow[i] == 1 && tr.t_ns[i] > 5 * SEC).map(|i| tr.srtt_ns[i] as f64 / 1e6).collect();
    srtt.iter().sum::<f64>() / srtt.len() as f64 - 50.0
}

#[test]
fn fq_codel_keeps_a_sparse_flow_s_delay_near_the_transmission_time() {
    let fq = sparse_beside_bulk("fq_codel");
    // One 1500-byte packet takes 0.12 ms at 100 Mbit/s; the sparse flow's
    // packets wait for at most the bulk packet being sent and their own.
    assert!(fq < 0.5, "fq_codel: the sparse flow's queueing delay {fq:.3} ms");
    let fifo = sparse_beside_bulk("droptail");
    assert!(fifo > 20.0, "DropTail: the sparse flow waits behind the bulk flow's queue, {fifo:.3} ms");
}

/// The long-lived load with ECN-capable flows: `ecn` set in the queue's table.
fn with_ecn(queue: &str, cc: &str) -> Config {
    let mut cfg = long_lived(queue);
    for f in &mut cfg.flows {
        f.cc = cc.into();
        f.ecn = true;
    }
    let hop = &mut cfg.network.hops[0];
    hop.codel.ecn = Some(true);
    hop.pie.ecn = Some(true);
    hop.step.threshold_pkts = Some(20);
    cfg
}

/// RFC 3168 section 5 at AQM queues: with ECN-capable flows the AQM marks
/// instead of dropping, so below the buffer limit nothing is dropped, and the
/// link carries what it did with drops (issue 33.5).
#[test]
fn ecn_flows_are_marked_not_dropped_below_the_limit() {
    for queue in ["codel", "fq_codel", "pie"] {
        let drops = run_checked(long_lived(queue));
        let marks = run_checked(with_ecn(queue, "cubic"));
        let l = &marks.links[0];
        assert!(l.marks > 0, "{queue}: no marks");
        assert_eq!((l.drops_early, l.drops_overflow), (0, 0), "{queue}: drops with ECN");
        let (u_drop, u_mark) = (utilization(&drops, RATE, 5.0, 20.0), utilization(&marks, RATE, 5.0, 20.0));
        assert!((u_mark - u_drop).abs() < 0.03, "{queue}: utilisation {u_mark:.3} with ECN, {u_drop:.3} with drops");
    }
}

/// DCTCP behind step marking at K = 20 packets (RFC 8257 section 3.1): full
/// link, no drops, and the queue held near K (20 packets = 2.4 ms at
/// 100 Mbit/s), far below the 834-packet buffer.
#[test]
fn dctcp_behind_step_marking_holds_the_queue_near_k_without_drops() {
    let r = run_checked(with_ecn("step", "dctcp"));
    let l = &r.links[0];
    assert!(l.marks > 0 && l.drops_early + l.drops_overflow == 0, "marks {} drops {}", l.marks, l.drops_overflow);
    let (median, p90) = queue_delay_ms(&r, 5.0);
    assert!(median < 4.0 && p90 < 6.0, "queueing delay median {median:.2} ms, p90 {p90:.2} ms");
    assert!(utilization(&r, RATE, 5.0, 20.0) > 0.95);
}
