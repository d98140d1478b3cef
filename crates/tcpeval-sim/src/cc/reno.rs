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
//! throughput is (MSS/RTT) * sqrt(3/(2p)).

use super::{after_slow_start, cong_avoid_ai, CcState, CongestionOps};

/// Linux `tcp_reno_ssthresh` floor, in packets.
pub const MIN_SSTHRESH: u32 = 2;

#[derive(Clone, Debug, Default)]
pub struct Reno;

impl CongestionOps for Reno {
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
    fn sawtooth_period_matches_hand_computation() {
        // From W = 100 at loss: 50 -> 100 takes 50 rounds of +1.
        let mut h = Harness::new(Reno, 100);
        h.lose();
        h.s.cwnd = h.s.ssthresh;
        let rounds = h.rounds_until(|s| s.cwnd >= 100);
        assert_eq!(rounds, 50);
    }
}
