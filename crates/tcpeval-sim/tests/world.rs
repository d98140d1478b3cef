//! The world around the flows (issue 5): UDP cross traffic, RED, parking lot,
//! reverse traffic. Conservation is checked every simulated second.
mod common;
use common::*;
use tcpeval_sim::config::{Config, HopConfig, UdpConfig};
use tcpeval_sim::time::{MS, SEC};

fn udp(rate: f64, amp: f64, period_s: u64, rtt_ms: u64) -> UdpConfig {
    serde_json::from_value(serde_json::json!({
        "rate_bps": rate, "amplitude_bps": amp, "period_ns": period_s * SEC, "rtt_ns": rtt_ms * MS
    }))
    .unwrap()
}

#[test]
fn sinusoidal_udp_follows_its_curve_at_the_bottleneck() {
    // 100 Mbit/s, mean 50 Mbit/s, amplitude 20% of the link, 30 s period.
    let mut cfg = dumbbell(100e6, 40, 1.0, 60, vec![]);
    cfg.udp = vec![udp(50e6, 20e6, 30, 40)];
    let r = run_checked(cfg);
    let ui = &r.udp_intervals;
    let one_way = 0.020 + 1500.0 * 8.0 / 1e9 + 1500.0 * 8.0 / 100e6;
    for i in 1..ui.t_ns.len() {
        let t1 = ui.t_ns[i] as f64 / 1e9 - one_way;
        let t0 = t1 - 1.0;
        // Integral of 50e6 + 20e6 sin(2 pi t / 30) over [t0, t1], in bytes.
        let w = 2.0 * std::f64::consts::PI / 30.0;
        let bits = 50e6 * (t1 - t0) - 20e6 / w * ((w * t1).cos() - (w * t0).cos());
        let got = ui.delivered_bytes[i] as f64 * 8.0;
        assert!((got / bits - 1.0).abs() < 0.02, "interval ending {t1}: {got} vs {bits}");
    }
    assert_eq!(r.links[0].drops_overflow, 0);
}

fn sustained_load(queue: &str) -> (tcpeval_sim::SimResult, u64, Config) {
    let flows = (0..40).map(|i| flow("reno", 50, i as f64 * 0.1)).collect();
    let mut cfg = dumbbell(100e6, 50, 1.0, 60, flows);
    cfg.network.hops[0].queue = queue.into();
    let buffer = cfg.network.hops[0].buffer_pkts.unwrap();
    (run_checked(cfg.clone()), buffer, cfg)
}

#[test]
fn red_holds_the_average_queue_between_thresholds_where_droptail_fills_the_buffer() {
    let (red, buffer, _) = sustained_load("red");
    let (min_th, max_th) = (buffer as f64 / 6.0, buffer as f64 / 2.0); // derived defaults
    let q_red = mean_queue(&red, 20.0);
    assert!(q_red > min_th && q_red < max_th, "RED mean queue {q_red} not in ({min_th}, {max_th})");
    assert!(red.links[0].drops_early > 0);
    let (dt, _, _) = sustained_load("droptail");
    assert_eq!(dt.links[0].max_queue_pkts, buffer, "DropTail reaches the buffer limit");
    let q_dt = mean_queue(&dt, 20.0);
    assert!(q_dt > max_th, "DropTail mean queue {q_dt} should sit above RED's max_th {max_th}");
    assert_eq!(dt.links[0].drops_early, 0);
}

fn hop(rate: f64, delay_ms: u64) -> HopConfig {
    serde_json::from_value(serde_json::json!({
        "rate_bps": rate, "delay_ns": delay_ms * MS, "buffer_pkts": 100000, "reverse_buffer_pkts": 100000
    }))
    .unwrap()
}

#[test]
fn parking_lot_streams_cross_exactly_their_hops() {
    // Routers 0-1-2-3; UDP streams 0->3 (long), 0->1, 1->2, 2->3, and 3->1 (reverse).
    let mut cfg = dumbbell(100e6, 40, 1.0, 12, vec![]);
    cfg.network.hops = vec![hop(100e6, 5), hop(100e6, 5), hop(100e6, 5)];
    let paths = [[0, 3], [0, 1], [1, 2], [2, 3], [3, 1]];
    let rates = [10e6, 5e6, 6e6, 7e6, 3e6];
    cfg.udp = paths
        .iter()
        .zip(rates)
        .map(|(p, rate)| {
            let mut u = udp(rate, 0.0, 1, 40);
            u.path = Some(*p);
            u.stop_ns = Some(10 * SEC);
            u
        })
        .collect();
    let r = run_checked(cfg);
    let sent: Vec<u64> = (0..5).map(|k| stream_total(&r, k)).collect();
    let by_link = |name: &str| r.links.iter().find(|l| l.name == name).unwrap().tx_data_packets;
    let expect = |streams: &[usize]| streams.iter().map(|&k| sent[k]).sum::<u64>();
    assert_eq!(by_link("hop0"), expect(&[0, 1]));
    assert_eq!(by_link("hop1"), expect(&[0, 2]));
    assert_eq!(by_link("hop2"), expect(&[0, 3]));
    assert_eq!(by_link("hop2-rev"), expect(&[4]));
    assert_eq!(by_link("hop1-rev"), expect(&[4]));
    assert_eq!(by_link("hop0-rev"), 0);
}

/// Packets a UDP stream delivered over the run (1500-byte packets).
fn stream_total(r: &tcpeval_sim::SimResult, k: u32) -> u64 {
    let ui = &r.udp_intervals;
    (0..ui.t_ns.len()).filter(|&i| ui.stream[i] == k).map(|i| ui.delivered_bytes[i]).sum::<u64>() / 1500
}

#[test]
fn parking_lot_tcp_flows_conserve_and_share() {
    let mut long = flow("reno", 60, 0.0);
    long.path = Some([0, 2]);
    let mut cross = flow("reno", 30, 0.0);
    cross.path = Some([1, 2]);
    let mut cfg = dumbbell(100e6, 60, 1.0, 30, vec![long, cross]);
    let mut hops = vec![hop(100e6, 10), hop(50e6, 10)];
    hops[1].buffer_pkts = Some(200);
    cfg.network.hops = hops;
    let r = run_checked(cfg);
    let total = goodput_mbps(&r, 0, 10.0, 30.0) + goodput_mbps(&r, 1, 10.0, 30.0);
    assert!(total > 45.0 && total < 50.0, "the 50 Mbit/s hop is the bottleneck: {total}");
    let hop0_rev = r.links.iter().find(|l| l.name == "hop0-rev").unwrap();
    assert_eq!(hop0_rev.tx_data_packets, 0, "only ACKs travel back");
}

#[test]
fn reverse_flows_load_the_ack_path_and_compress_acks() {
    let base = || dumbbell(100e6, 50, 1.0, 40, vec![flow("reno", 50, 0.0)]);
    let alone = run_checked(base());
    let mut cfg = base();
    add_reverse_reno(&mut cfg, 2, 50);
    let mixed = run_checked(cfg);
    let rev_link = mixed.links.iter().find(|l| l.name == "reverse").unwrap();
    assert!(rev_link.tx_data_packets > 100_000, "reverse data crosses the reverse bottleneck");
    let rev_goodput = goodput_mbps(&mixed, 1, 10.0, 40.0) + goodput_mbps(&mixed, 2, 10.0, 40.0);
    assert!(rev_goodput > 80.0, "reverse flows fill the reverse direction: {rev_goodput}");
    let (a, b) = (alone.flows[0].ack_gap_cov, mixed.flows[0].ack_gap_cov);
    // ACKs share the reverse queue with 1500-byte data packets and leave it in
    // bunches: the spread of their gaps grows (measured: CoV 1.00 -> 1.32).
    assert!(b > 1.2 * a, "ACK inter-arrival CoV {a} alone vs {b} with reverse traffic");
}

#[test]
fn transfers_start_at_their_own_times_whatever_their_order_in_the_config() {
    // Starts are scheduled one at a time in start order: out-of-order and equal
    // start times must still start each flow exactly on time. On an idle path
    // a 10-packet transfer takes the same time whenever it starts; two that
    // start together share the link and both finish later.
    let starts = [3.0, 1.0, 2.5, 0.5, 2.0, 2.0];
    let flows = starts.iter().map(|&s| {
        let mut f = flow("reno", 40, s);
        f.bytes = Some(10 * MSS);
        f
    }).collect();
    let r = run_checked(dumbbell(100e6, 40, 1.0, 5, flows));
    let fct = |i: usize| {
        let f = &r.flows[i];
        assert_eq!(f.start_ns, (starts[i] * SEC as f64) as u64);
        f.completed_ns.expect("completes") - f.start_ns
    };
    let alone = fct(3);
    for (i, s) in starts.iter().enumerate().take(4) {
        assert_eq!(fct(i), alone, "flow {i} starting at {s} s");
    }
    assert!(fct(4) > alone && fct(5) > alone && fct(4).abs_diff(fct(5)) < 2 * MS);
    // No handshake: IW 10 goes out at once and is acknowledged one RTT later.
    assert!(alone > 40 * MS && alone < 43 * MS, "one RTT plus serialisation: {alone}");
}

#[test]
fn a_stopped_flow_completes_with_what_it_sent() {
    let mut f = flow("reno", 40, 0.0);
    f.stop_ns = Some(5 * SEC);
    let r = run_checked(dumbbell(100e6, 40, 1.0, 10, vec![f]));
    let done = r.flows[0].completed_ns.expect("completes after stopping");
    assert!(done > 5 * SEC && done < 7 * SEC);
    assert_eq!(r.flows[0].bytes_delivered % 1448, 0);
}

#[test]
fn a_full_interface_queue_pushes_back_on_the_sender_without_loss() {
    // The sender's NIC runs at the bottleneck rate, so its queue (txqueuelen 100)
    // is where packets wait: Linux 2.6 refuses the packet, enters CWR and
    // retries later, so nothing is lost and nothing retransmitted. From 3.6
    // TCP Small Queues keep a flow's share of the queue to a few packets, so
    // it never fills.
    let run = |stack: &str| {
        let mut f = flow("reno", 40, 0.0);
        f.nic_queue_pkts = Some(100);
        f.stack = stack.into();
        let mut cfg = dumbbell(100e6, 40, 1.0, 30, vec![f]);
        cfg.network.access_rate_bps = 100e6;
        run_checked(cfg)
    };
    let old = run("linux-2.6.22");
    assert!(old.flows[0].local_congestion > 0);
    assert_eq!(old.flows[0].retransmits, 0);
    assert_eq!(old.links[0].drops_overflow, 0);
    // Each CWR halves the window (2.6.22 Reno, per-ACK growth): 0.88 measured.
    let u = utilization(&old, 100e6, 5.0, 30.0);
    assert!(u > 0.85, "utilization {u}");
    let new = run("linux-6.6");
    assert_eq!(new.flows[0].local_congestion, 0);
    assert!(utilization(&new, 100e6, 5.0, 30.0) > 0.9);
}
