//! Linux 6.6 hands its segments down in skb-sized bursts (tcp::tso), as the
//! testbed's kernel does with TSO and GSO off on its interface
//! (docs/testbed.md, "Two flows' overshoot traced"; docs/stacks.md, "Bursts
//! of one skb").
mod common;
use common::*;
use tcpeval_sim::capture::CaptureConfig;

/// Sizes of the bursts one Reno flow (100 Mbit/s, 50 ms, 1-BDP buffer) hands
/// to its interface from 5 to 10 s: runs of data packets with one send time.
fn bursts(stack: &str) -> Vec<u64> {
    let mut f = flow("reno", 50, 0.0);
    f.stack = stack.into();
    let mut cfg = dumbbell(100e6, 50, 1.0, 10, vec![f]);
    cfg.capture = Some(CaptureConfig { flows: vec![0], max_packets: 200_000, points: vec!["sender".into()] });
    let r = run_checked(cfg);
    let cap = r.capture.expect("captured");
    let mut sizes: Vec<u64> = vec![];
    let mut last = None;
    for i in (0..cap.t_ns.len()).filter(|&i| cap.data[i] && cap.t_ns[i] >= 5 * SEC_NS) {
        match sizes.last_mut() {
            Some(n) if last == Some(cap.t_ns[i]) => *n += 1,
            _ => sizes.push(1),
        }
        last = Some(cap.t_ns[i]);
    }
    sizes
}

const SEC_NS: u64 = 1_000_000_000;

fn mean(x: &[u64]) -> f64 {
    x.iter().sum::<u64>() as f64 / x.len() as f64
}

/// The kernel (Linux 6.18, one Reno flow on this path, net:net_dev_queue on
/// the sender's eth0 from 2 to 20 s): 16,298 of 16,910 skbs carry 9
/// segments, mean 8.86: cwnd / srtt is the link's 12.07 MB/s of payload, and
/// 1.024 ms of 1.2 times that is 9.8 segments. The engine's are all 9. Linux
/// 3.16 on a host without GSO sends what each ACK lets out: two segments.
#[test]
fn a_linux_6_6_sender_hands_down_the_kernels_nine_segment_skbs() {
    let new = bursts("linux-6.6");
    let nines = new.iter().filter(|&&n| n == 9).count();
    assert!(nines * 10 > new.len() * 9, "{nines} of {} bursts of 9", new.len());
    assert!((8.5..=9.5).contains(&mean(&new)), "mean burst {:.2}", mean(&new));
    let old = bursts("linux-3.16");
    assert!(mean(&old) < 3.0, "linux-3.16: mean burst {:.2}", mean(&old));
}
