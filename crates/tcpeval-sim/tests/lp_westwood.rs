//! Behaviour of TCP-LP, HSTCP-LP, Westwood+, Illinois and YeAH in whole
//! simulations (issue 4 item 3).
mod common;
use common::*;
use tcpeval_sim::cc::{CaState, Cc};
use tcpeval_sim::config::FlowConfig;
use tcpeval_sim::time::{MS, SEC};
use tcpeval_sim::{SimResult, Simulation};

const RATE: f64 = 100e6;
/// Packets (of 1500 B on the wire) in one bandwidth-delay product at 100 Mbit/s, 40 ms.
const BDP_40MS: f64 = RATE * 0.040 / 8.0 / 1500.0;

fn with(mut f: FlowConfig, key: &str, v: serde_json::Value) -> FlowConfig {
    f.params.insert(key.into(), v);
    f
}

/// cwnd range of `flow` over trace samples after `from_s`.
fn cwnd_range(r: &SimResult, flow: u32, from_s: f64) -> (u32, u32) {
    let t = &r.trace;
    let w = (0..t.t_ns.len()).filter(|&i| t.flow[i] == flow && t.t_ns[i] as f64 / 1e9 > from_s).map(|i| t.cwnd_pkts[i]);
    w.clone().fold((u32::MAX, 0), |(lo, hi), c| (lo.min(c), hi.max(c)))
}

fn drops_after(r: &SimResult, from_s: f64) -> u64 {
    let li = &r.link_intervals;
    (0..li.t_ns.len()).filter(|&i| li.link[i] == "bottleneck" && li.t_ns[i] as f64 / 1e9 > from_s).map(|i| li.drops[i]).sum()
}

fn alone(cc: FlowConfig) -> (f64, (u32, u32), u64) {
    let r = run_checked(dumbbell(RATE, 40, 1.0, 60, vec![cc]));
    (utilization(&r, RATE, 30.0, 60.0), cwnd_range(&r, 0, 30.0), drops_after(&r, 0.0))
}

/// Queue (packets) at which a lone flow's ECI fires, from Linux's re-centred
/// range: after an ECI at smoothed OWD p + q, owd_min returns to the base
/// forward delay p and owd_max stays 2 (p + q), so the next ECI fires at
/// p + delta (p + 2 q); the fixed point is q = delta p / (1 - 2 delta), about
/// 0.11 RTT on a symmetric path, whatever the buffer.
fn eci_queue_pkts(bdp: f64, delta: f64) -> f64 {
    let p = 0.5 * bdp; // the forward half of the round trip, in packets of delay
    delta * p / (1.0 - 2.0 * delta)
}

/// Utilisation of the ECI sawtooth, round by round: from `w0` the window
/// waits three RTTs (the inference window), then grows one packet per RTT to
/// `w_max`, where the next ECI fires. A round carries w packets and lasts one
/// base RTT or, with a queue, w / C.
fn sawtooth_utilization(bdp: f64, w0: f64, w_max: f64) -> f64 {
    let (mut sent, mut time) = (3.0 * w0, 3.0 * bdp.max(w0));
    let mut w = w0;
    while w < w_max {
        sent += w;
        time += bdp.max(w);
        w += 1.0;
    }
    sent / time
}

/// RFC 3649 section 5 b(w), the decrease HSTCP-LP's `eci_decrease = "hstcp"` applies.
fn hstcp_b(w: f64) -> f64 {
    0.5 - 0.4 * (w.ln() - 38f64.ln()) / (83000f64.ln() - 38f64.ln())
}

/// Alone on 100 Mbit/s, 40 ms, 1-BDP buffer a low-priority flow rides an ECI
/// sawtooth without loss, and its utilisation is what that sawtooth predicts
/// from first principles (within 4 points): with halving about 0.82. The
/// sawtooth sends segment by segment; Linux 6.6's skb-sized bursts
/// (tcp::tso) keep the window's range (cwnd 184..368 against 182..363 at
/// linux-3.16) and cost 1.5 points (TCP-LP 0.788 against 0.803). The
/// issue's ">= 90% alone" is out of reach of a faithful TCP-LP on any buffer:
/// the re-centred threshold sits ~0.11 RTT of queue above the base delay, and
/// halving from 1.11 BDP idles the link for part of each cycle
/// (docs/algorithms/lp.md). HSTCP-LP with HighSpeed's b(w) decrease backs off
/// less and predicts (and reaches) more.
#[test]
fn lp_alone_matches_the_eci_sawtooth_without_loss() {
    let q = eci_queue_pkts(BDP_40MS, 0.15);
    let w_max = BDP_40MS + q;
    let halving = sawtooth_utilization(BDP_40MS, 0.5 * w_max, w_max);
    let bw = sawtooth_utilization(BDP_40MS, (1.0 - hstcp_b(w_max)) * w_max, w_max);
    for (name, f, want) in [
        ("lp", flow("lp", 40, 0.0), halving),
        ("hstcplp", flow("hstcplp", 40, 0.0), halving),
        ("hstcplp, b(w) decrease", with(flow("hstcplp", 40, 0.0), "eci_decrease", "hstcp".into()), bw),
    ] {
        let (u, (lo, hi), drops) = alone(f);
        println!("{name}: utilization {u:.3} (predicted {want:.3}), cwnd {lo}..{hi} (ECI at {w_max:.0}), drops {drops}");
        assert!((u - want).abs() <= 0.04, "{name}: utilization {u:.3}, predicted {want:.3}");
        assert_eq!(drops, 0, "{name}: the ECI must act before the buffer overflows");
        assert!((hi as f64 - w_max).abs() <= 0.05 * BDP_40MS, "{name}: cwnd peaks at {hi}, ECI predicted at {w_max:.0}");
        assert!(lo as f64 >= 0.45 * BDP_40MS, "{name}: cwnd falls to {lo}");
    }
}

/// Linux's literal choices starve a lone flow: TSval - TSecr includes the
/// delayed-ACK wait, and slow start after an ECI overshoots into a second ECI.
#[test]
fn linux_literal_choices_starve_a_lone_flow() {
    let (u1, _, _) = alone(with(flow("lp", 40, 0.0), "owd_filter", false.into()));
    let (u2, _, _) = alone(with(flow("lp", 40, 0.0), "slow_start_after_eci", true.into()));
    println!("linux owd: {u1:.3}; slow start after eci: {u2:.3}");
    assert!(u1 < 0.1 && u2 < 0.2, "Linux OWD {u1:.3}, slow start after ECI {u2:.3}");
}

/// Beside a Reno or CUBIC flow that started first, the low-priority flow takes
/// at most 10% of the link.
#[test]
fn lp_and_hstcplp_yield_to_reno_and_cubic() {
    for cc in ["lp", "hstcplp"] {
        for other in ["reno", "cubic"] {
            let flows = vec![flow(other, 40, 0.0), flow(cc, 40, 5.0)];
            let r = run_checked(dumbbell(RATE, 40, 1.0, 40, flows));
            let (lp, big) = (goodput_mbps(&r, 1, 10.0, 40.0), goodput_mbps(&r, 0, 10.0, 40.0));
            println!("{cc} vs {other}: {lp:.2} vs {big:.1} Mbit/s");
            assert!(lp <= 10.0, "{cc} takes {lp:.2} Mbit/s beside {other}");
            assert!(lp + big >= 90.0, "{cc} + {other}: {:.1} Mbit/s", lp + big);
        }
    }
}

/// A low-priority flow that starts first gives way when a Reno flow arrives.
#[test]
fn lp_gives_way_to_a_late_reno_flow() {
    for cc in ["lp", "hstcplp"] {
        let flows = vec![flow(cc, 40, 0.0), flow("reno", 40, 30.0)];
        let r = run_checked(dumbbell(RATE, 40, 1.0, 60, flows));
        let (before, after) = (goodput_mbps(&r, 0, 20.0, 30.0), goodput_mbps(&r, 0, 40.0, 60.0));
        println!("{cc}: {before:.1} Mbit/s alone, {after:.2} beside Reno");
        assert!(before >= 70.0 && after <= 10.0, "{cc}: {before:.1} alone, {after:.2} beside Reno");
    }
}

/// Westwood+ after random losses: right after each recovery its ssthresh is its
/// bandwidth estimate times RTTmin (within 5%), and that estimate is the rate
/// the flow actually delivered over the previous second (within 10%) and RTTmin
/// the path's (50 ms plus serialisation, within 5%).
#[test]
fn westwood_ssthresh_after_random_loss_is_bwe_times_rtt_min() {
    let mut cfg = dumbbell(20e6, 50, 1.0, 40, vec![flow("westwood", 50, 0.0)]);
    cfg.network.hops[0].loss = 1e-4;
    let mut sim = Simulation::new(cfg).unwrap();
    let (mut checked, mut seen) = (0, 0);
    let mut delivered: Vec<u64> = vec![];
    for step in 1..=4000u64 {
        sim.run_until(step * SEC / 100);
        let s = sim.sender(0);
        delivered.push(s.s.delivered);
        let Cc::Westwood(w) = &s.cc else { panic!("westwood") };
        let rec = s.counters.recoveries;
        if s.state() != CaState::Open || rec == seen {
            continue;
        }
        seen = rec;
        if step < 500 {
            continue; // let the estimate settle
        }
        let want = w.bandwidth() * w.rtt_min() as f64 / 1e9 / 1448.0;
        let got = s.s.ssthresh as f64;
        assert!((got / want - 1.0).abs() <= 0.05, "t={step}0 ms: ssthresh {got} vs BWE x RTTmin {want:.1}");
        let rate = (delivered[step as usize - 1] - delivered[step as usize - 101]) as f64 * 1448.0;
        assert!((w.bandwidth() / rate - 1.0).abs() <= 0.10, "BWE {:.0} B/s vs delivered {rate:.0} B/s", w.bandwidth());
        let rtt_min = w.rtt_min() as f64 / MS as f64;
        assert!((rtt_min / 50.0 - 1.0).abs() <= 0.05, "RTTmin {rtt_min:.2} ms");
        checked += 1;
    }
    println!("westwood: {checked} recoveries checked");
    assert!(checked >= 3, "only {checked} recoveries checked");
    sim.check_conservation().unwrap();
}

/// Random loss the path did not cause costs Westwood+ less than Reno, which
/// halves for every one.
#[test]
fn random_loss_costs_westwood_less_than_reno() {
    let run = |cc: &str| {
        let mut cfg = dumbbell(RATE, 80, 1.0, 40, vec![flow(cc, 80, 0.0)]);
        cfg.network.hops[0].loss = 1e-4;
        goodput_mbps(&run_checked(cfg), 0, 10.0, 40.0)
    };
    let (w, r) = (run("westwood"), run("reno"));
    println!("westwood {w:.1} vs reno {r:.1}");
    assert!(w > 1.3 * r, "westwood {w:.1} vs reno {r:.1} Mbit/s");
}

/// Illinois alone on a 1-BDP buffer: alpha is lower and beta higher when the
/// queue is long than when it is short (measured: 27 ms of queueing, alpha 0.55
/// and beta 0.35; 41 ms, alpha 0.36 and beta 0.49). The largest queueing delay
/// it has seen, dm, is the buffer's 50 ms: the sender's RTT samples come from
/// the send times of the segments an ACK delivers (Linux `tcp_ack_update_rtt`),
/// so SACKs during recovery do not report the age of the hole (with samples
/// from the echoed timestamp dm reached 150 ms).
#[test]
fn illinois_alpha_falls_and_beta_rises_with_queueing_delay() {
    let cfg = dumbbell(RATE, 50, 1.0, 40, vec![flow("illinois", 50, 0.0)]);
    let mut sim = Simulation::new(cfg).unwrap();
    let mut samples = vec![];
    for step in 1000..=4000u64 {
        sim.run_until(step * SEC / 100);
        let s = sim.sender(0);
        let Cc::Illinois(c) = &s.cc else { panic!("illinois") };
        if s.state() == CaState::Open {
            samples.push((s.s.srtt.saturating_sub(s.s.min_rtt) as f64 / MS as f64, c.alpha(), c.beta()));
        }
    }
    let Cc::Illinois(c) = &sim.sender(0).cc else { panic!("illinois") };
    let dm_ms = c.queueing_delays_us().0 as f64 / 1e3;
    println!("illinois: dm {dm_ms:.1} ms (buffer holds 50 ms)");
    assert!((45.0..=56.0).contains(&dm_ms), "dm {dm_ms:.1} ms, the buffer holds 50 ms");
    // Parameters change once per RTT from the previous round's delays: compare
    // the quarter of samples with the shortest queue with the quarter with the
    // longest.
    samples.sort_by(|a, b| a.0.total_cmp(&b.0));
    let q = samples.len() / 4;
    let mean = |v: &[(f64, f64, f64)]| {
        let n = v.len() as f64;
        (v.iter().map(|x| x.0).sum::<f64>() / n, v.iter().map(|x| x.1).sum::<f64>() / n, v.iter().map(|x| x.2).sum::<f64>() / n)
    };
    let (d_lo, a_lo, b_lo) = mean(&samples[..q]);
    let (d_hi, a_hi, b_hi) = mean(&samples[samples.len() - q..]);
    println!("illinois: queueing {d_lo:.1} ms: alpha {a_lo:.2} beta {b_lo:.3}; {d_hi:.1} ms: alpha {a_hi:.2} beta {b_hi:.3}");
    assert!(d_hi > 1.3 * d_lo);
    assert!(a_lo > 1.3 * a_hi && a_hi < 1.0, "alpha {a_lo:.2} at low delay vs {a_hi:.2} at high");
    assert!(b_hi > b_lo + 0.03, "beta {b_lo:.3} at low delay vs {b_hi:.3} at high");
    sim.check_conservation().unwrap();
}

/// YeAH alone with a buffer well above its 80-packet target: after slow start
/// its precautionary decongestion keeps the queue near the target and the
/// buffer never overflows, while the link stays full.
#[test]
fn yeah_alone_keeps_a_small_queue_without_loss() {
    let r = run_checked(dumbbell(RATE, 50, 2.0, 40, vec![flow("yeah", 50, 0.0)]));
    let (q, drops, u) = (mean_queue(&r, 10.0), drops_after(&r, 10.0), utilization(&r, RATE, 10.0, 40.0));
    println!("yeah: mean queue {q:.1} packets, drops after 10 s {drops}, utilization {u:.3}");
    assert!(q < 2.0 * 80.0, "mean queue {q:.1} packets");
    assert_eq!(drops, 0);
    assert!(u > 0.95, "utilization {u:.3}");
}

