//! RACK-TLP end to end (issue 33.3): short transfers over a lossy path. A
//! loss near the end of a transfer leaves too few segments behind it for
//! RFC 6675's DupThresh, which then waits for the RTO; RACK-TLP's probe and
//! time-based marking repair most of those within a few RTTs.
mod common;
use common::*;

/// 300 transfers of 10 segments, one every 100 ms (never more than one at a
/// time), RTT 20 ms, 100 Mbit/s, 2% random loss. Returns the transfers that
/// retransmitted: (mean completion time in ms, their timeouts, their count).
fn lossy_transfers(rule: &str) -> (f64, u64, usize) {
    let flows = (0..300)
        .map(|i| {
            let mut f = flow("cubic", 20, i as f64 * 0.1);
            f.bytes = Some(10 * MSS);
            f.loss_detection = Some(rule.into());
            f.trace = false;
            f
        })
        .collect();
    let mut cfg = dumbbell(100e6, 20, 1.0, 32, flows);
    cfg.network.hops[0].loss = 0.02;
    let r = run_checked(cfg);
    let lossy: Vec<_> = r.flows.iter().filter(|f| f.retransmits > 0).collect();
    let done = |f: &&tcpeval_sim::sim::FlowSummary| (f.completed_ns.expect("every transfer completes") - f.start_ns) as f64 / 1e6;
    let mean = lossy.iter().map(done).sum::<f64>() / lossy.len() as f64;
    (mean, lossy.iter().map(|f| f.timeouts).sum(), lossy.len())
}

#[test]
fn rack_tlp_repairs_most_tail_losses_without_the_rto() {
    let (rack_ms, rack_rtos, rack_n) = lossy_transfers("rack");
    let (dup_ms, dup_rtos, dup_n) = lossy_transfers("dupthresh");
    eprintln!("rack: {rack_n} lossy transfers, mean {rack_ms:.1} ms, {rack_rtos} RTOs; dupthresh: {dup_n}, {dup_ms:.1} ms, {dup_rtos} RTOs");
    assert!(rack_n > 30 && dup_n > 30, "enough transfers saw a loss");
    // Without a loss a transfer takes ~3 RTTs (60 ms); an RTO adds >= 200 ms.
    // Measured: rack 52 lossy transfers, mean 97.3 ms, 3 RTOs; dupthresh 53,
    // 120.3 ms, 18 RTOs.
    assert!(2 * rack_rtos < dup_rtos, "RTOs: rack {rack_rtos}, dupthresh {dup_rtos}");
    assert!(rack_ms < 0.9 * dup_ms, "mean completion: rack {rack_ms} ms, dupthresh {dup_ms} ms");
}

/// The receiver's SACK compression (linux-6.6, tcp::receiver::SackCompression):
/// under 1% random loss a BBR flow's receiver holds out-of-order data most of
/// the time, and past three duplicates ACKs it at most once a millisecond, so
/// it sends fewer than one ACK per three segments (0.16; 0.98 without the
/// compression, one per out-of-order segment). Reno's receiver at linux-3.16,
/// which has none, sends more than at linux-6.6 (0.64 against 0.45).
#[test]
fn a_linux_6_6_receiver_compresses_its_sacks_under_loss() {
    let acks_per_segment = |cc: &str, stack: &str| {
        let mut f = flow(cc, 40, 0.0);
        f.stack = stack.to_string();
        let mut cfg = dumbbell(100e6, 40, 1.0, 20, vec![f]);
        cfg.network.hops[0].loss = 0.01;
        let r = run_checked(cfg);
        r.flows[0].acks as f64 / (r.flows[0].bytes_delivered as f64 / 1448.0)
    };
    let bbr = acks_per_segment("bbr", "linux-6.6");
    assert!(bbr < 0.3, "BBR's ACKs per segment delivered: {bbr:.3}");
    let (new, old) = (acks_per_segment("reno", "linux-6.6"), acks_per_segment("reno", "linux-3.16"));
    assert!(new < 0.8 * old, "Reno's ACKs per segment: linux-6.6 {new:.3}, linux-3.16 {old:.3}");
}
