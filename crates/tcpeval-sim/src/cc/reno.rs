//! Reno / NewReno congestion control as Linux ships it (`net/ipv4/tcp_cong.c`:
//! `tcp_reno_cong_avoid`, `tcp_reno_ssthresh`).
//!
//! Slow start adds one packet per packet acknowledged; congestion avoidance adds one
//! packet per cwnd packets acknowledged (`tcp_cong_avoid_ai` with w = cwnd), i.e. one
//! packet per RTT whether or not ACKs are delayed. On loss ssthresh = max(cwnd/2, 2).
//! Linux halves cwnd, not FlightSize as RFC 5681 eq. (4) does (see the reference
//! digest, part E item 4).
//!
//! Response function (Mathis et al., CCR 1997): with one packet of growth per RTT
//! (b = 1 packet per "ACK" in their notation, since growth counts packets) the mean
//! throughput is (MSS/RTT) * sqrt(3/(2p)). Stacks that counted ACKs (Linux before
//! 4.0, ns-2; cc::Growth) grow one packet per b RTTs with b packets per ACK, so with
//! delayed ACKs their mean window is sqrt(3/(2bp)) with b = 2, i.e. sqrt(3/(4p)).

use super::{after_slow_start, cong_avoid_ai, CcState, CongestionOps};

/// Linux `tcp_reno_ssthresh` floor, in packets.
pub const MIN_SSTHRESH: u32 = 2;

#[derive(Clone, Debug, Default)]
pub struct Reno;

impl CongestionOps for Reno {
    /// At 2.6.22 `.min_cwnd = tcp_reno_min_cwnd` (net/ipv4/tcp_cong.c `tcp_reno` at 2.6.22):
    /// rate-halving may go down to half of ssthresh.
    fn min_cwnd(&mut self, s: &CcState) -> u32 {
        super::reno_min_cwnd(s)
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        (s.cwnd / 2).max(MIN_SSTHRESH)
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        let acked = after_slow_start(s, acked);
        if acked > 0 {
            let w = s.cwnd;
            cong_avoid_ai(s, w, acked);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::harness::Harness;
    use crate::cc::Growth;

    #[test]
    fn slow_start_doubles_per_round() {
        let mut h = Harness::new(Reno, 10);
        h.ack_round(); // 10 acked -> 20
        h.ack_round(); // 20 acked -> 40
        assert_eq!(h.s.cwnd, 40);
    }

    #[test]
    fn congestion_avoidance_adds_one_per_round_with_delayed_acks() {
        let mut h = Harness::new(Reno, 10);
        h.s.ssthresh = 10;
        for round in 1..=20u32 {
            h.ack_round_in_pairs();
            assert_eq!(h.s.cwnd, 10 + round);
        }
    }

    #[test]
    fn loss_halves_the_window_with_a_floor_of_two() {
        let mut h = Harness::new(Reno, 100);
        assert_eq!(h.lose(), 50);
        h.s.cwnd = 3;
        assert_eq!(h.lose(), 2);
    }

    #[test]
    fn per_ack_growth_with_delayed_acks_adds_one_per_two_rounds() {
        // Linux 2.6: cwnd_cnt + 1 per ACK, +1 packet on the ACK that finds it at
        // cwnd. From cwnd 10 (5 ACKs a round): cnt 5, 10; round 3's first ACK
        // grows to 11 (cnt 0, then 4); round 4 (6 ACKs) cnt 10; round 5: 11, then
        // grows to 12 on its second ACK (cnt 0, then 4).
        let mut h = Harness::new(Reno, 10);
        (h.s.growth, h.s.ssthresh) = (Growth::PerAck, 5);
        let mut trajectory = vec![];
        for _ in 0..5 {
            h.ack_round_in_pairs();
            trajectory.push((h.s.cwnd, h.s.cwnd_cnt));
        }
        assert_eq!(trajectory, [(10, 5), (10, 10), (11, 4), (11, 10), (12, 4)]);
    }

    /// Mean window of Reno under deterministic periodic loss (one loss per 1/p
    /// packets), acknowledged in pairs (delayed ACKs) or one by one.
    fn mean_window(growth: Growth, pairs: bool, p: f64) -> f64 {
        let mut h = Harness::new(Reno, 10);
        h.s.growth = growth;
        let (mut since_loss, mut losses, mut sum, mut rounds) = (0.0, 0, 0.0, 0.0);
        while losses < 40 {
            let w = h.s.cwnd as f64;
            if pairs {
                h.ack_round_in_pairs();
            } else {
                h.ack_round();
            }
            since_loss += w;
            if losses >= 5 {
                (sum, rounds) = (sum + w, rounds + 1.0); // after the first cycles
            }
            if since_loss >= 1.0 / p {
                (since_loss, losses) = (0.0, losses + 1);
                h.lose();
            }
        }
        sum / rounds
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
        /// Issue 28 goal 3: per-ACK growth with delayed ACKs follows Mathis with
        /// b = 2, sqrt(3/(4p)); counting packets (today) or one ACK per packet,
        /// b = 1, sqrt(3/(2p)).
        #[test]
        fn mean_window_follows_mathis_with_b_packets_per_growth_step(p in 2e-4f64..2e-3) {
            let mathis = |b: f64| (3.0 / (2.0 * b * p)).sqrt();
            for (growth, pairs, b) in [(Growth::PerAck, true, 2.0), (Growth::PerPacket, true, 1.0), (Growth::PerAck, false, 1.0)] {
                let got = mean_window(growth, pairs, p);
                proptest::prop_assert!((got / mathis(b) - 1.0).abs() < 0.08, "{growth:?} pairs={pairs} p={p}: {got:.1} vs {:.1}", mathis(b));
            }
        }
    }

    #[test]
    fn sawtooth_period_matches_hand_computation() {
        // From W = 100 at loss: 50 -> 100 takes 50 rounds of +1.
        let mut h = Harness::new(Reno, 100);
        h.lose();
        h.s.cwnd = h.s.ssthresh;
        let rounds = h.rounds_until(|s| s.cwnd >= 100);
        assert_eq!(rounds, 50);
    }
}
