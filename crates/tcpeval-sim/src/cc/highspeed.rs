//! HighSpeed TCP (RFC 3649) as Linux ships it (`net/ipv4/tcp_highspeed.c`): Reno
//! up to 38 packets; above, an increase of a(w) packets per RTT and a decrease by
//! b(w) taken from a 72-row table of RFC 3649's response function
//! w = 0.12 / p^0.835 (RFC 3649 section 5 and appendix B).
//!
//! Linux adds a(w) to `snd_cwnd_cnt` once per call, i.e. once per ACK, not per
//! acknowledged packet: with delayed ACKs its increase is a(w)/2 per RTT, as in
//! the kernels the studies measured. (Reno, Scalable and CUBIC count packets.)

use super::{slow_start, CcState, CongestionOps};

/// (cwnd upper bound, decrease x 256) per row; a(w) is the row index + 1.
/// Linux `hstcp_aimd_vals` (the RFC 3649 appendix B table, b(w) scaled by 256).
pub const AIMD: [(u32, u32); 72] = [
    (38, 128), (118, 112), (221, 104), (347, 98), (495, 93), (663, 89), (851, 86), (1058, 83),
    (1284, 81), (1529, 78), (1793, 76), (2076, 74), (2378, 72), (2699, 71), (3039, 69), (3399, 68),
    (3778, 66), (4177, 65), (4596, 64), (5036, 62), (5497, 61), (5979, 60), (6483, 59), (7009, 58),
    (7558, 57), (8130, 56), (8726, 55), (9346, 54), (9991, 53), (10661, 52), (11358, 52), (12082, 51),
    (12834, 50), (13614, 49), (14424, 48), (15265, 48), (16137, 47), (17042, 46), (17981, 45), (18955, 45),
    (19965, 44), (21013, 43), (22101, 43), (23230, 42), (24402, 41), (25618, 41), (26881, 40), (28193, 39),
    (29557, 39), (30975, 38), (32450, 38), (33986, 37), (35586, 36), (37253, 36), (38992, 35), (40808, 35),
    (42707, 34), (44694, 33), (46776, 33), (48961, 32), (51258, 32), (53677, 31), (56230, 30), (58932, 30),
    (61799, 29), (64851, 28), (68113, 28), (71617, 27), (75401, 26), (79517, 26), (84035, 25), (89053, 24),
];

#[derive(Clone, Debug, Default)]
pub struct HighSpeed {
    /// Table row: AIMD[ai - 1].0 < cwnd <= AIMD[ai].0.
    ai: usize,
}

impl HighSpeed {
    /// Move the row index to the window (Linux keeps it incrementally).
    pub fn track(&mut self, cwnd: u32) {
        while cwnd > AIMD[self.ai].0 && self.ai < AIMD.len() - 1 {
            self.ai += 1;
        }
        while self.ai > 0 && cwnd <= AIMD[self.ai - 1].0 {
            self.ai -= 1;
        }
    }

    /// a(w): packets added per RTT at the current row.
    pub fn a(&self) -> u32 {
        self.ai as u32 + 1
    }

    /// b(w) x 256 at the current row.
    pub fn b256(&self) -> u32 {
        AIMD[self.ai].1
    }

    /// One ACK's additive increase: cwnd += a(w) / cwnd.
    pub fn increase(&mut self, s: &mut CcState) {
        self.track(s.cwnd);
        if s.cwnd < s.cwnd_clamp {
            s.cwnd_cnt += self.a();
            if s.cwnd_cnt >= s.cwnd {
                s.cwnd_cnt -= s.cwnd;
                s.cwnd += 1;
            }
        }
    }
}

impl CongestionOps for HighSpeed {
    /// At 2.6.22 `.min_cwnd = tcp_reno_min_cwnd` (net/ipv4/tcp_highspeed.c at 2.6.22):
    /// rate-halving may go down to half of ssthresh.
    fn min_cwnd(&mut self, s: &CcState) -> u32 {
        super::reno_min_cwnd(s)
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        (s.cwnd - ((s.cwnd as u64 * self.b256() as u64) >> 8) as u32).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        if s.in_slow_start() {
            slow_start(s, acked);
        } else {
            self.increase(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::harness::Harness;

    fn at(cwnd: u32) -> HighSpeed {
        let mut h = HighSpeed::default();
        h.track(cwnd);
        h
    }

    #[test]
    fn table_rows_at_rfc_points() {
        // w = 38: a = 1, b = 0.5 (Reno); w = 1058: a = 8, b = 83/256 = 0.32;
        // w = 83000: a = 71, b = 25/256 = 0.098 (RFC 3649 appendix B: 0.10).
        assert_eq!((at(38).a(), at(38).b256()), (1, 128));
        assert_eq!((at(1058).a(), at(1058).b256()), (8, 83));
        assert_eq!((at(1059).a(), at(1059).b256()), (9, 81));
        assert_eq!((at(83000).a(), at(83000).b256()), (71, 25));
        assert_eq!(at(1_000_000).a(), 72, "capped at the last row");
    }

    #[test]
    fn table_follows_the_rfc_response_function() {
        // RFC 3649 section 5: b(w) = (0.1 - 0.5) (ln w - ln 38) / (ln 83000 - ln 38) + 0.5,
        // p(w) = 0.078 / w^1.2, a(w) = w^2 p(w) 2 b(w) / (2 - b(w)); the table rounds a(w).
        for &(w, md) in AIMD.iter().skip(1) {
            let wf = w as f64;
            let b = -0.4 * (wf.ln() - 38f64.ln()) / (83000f64.ln() - 38f64.ln()) + 0.5;
            assert!((md as f64 / 256.0 - b).abs() < 0.012, "w={w}: b {} vs {b}", md as f64 / 256.0);
            let a = wf * wf * 0.078 / wf.powf(1.2) * 2.0 * b / (2.0 - b);
            let row = at(w).a() as f64;
            assert!((row - a).abs() / a < 0.1, "w={w}: a {row} vs {a:.1}");
        }
    }

    #[test]
    fn reno_below_38_packets() {
        let mut h = Harness::new(HighSpeed::default(), 30);
        h.s.ssthresh = 10;
        h.ack_round();
        assert_eq!(h.s.cwnd, 31);
        // The decrease is rounded down: 31 - (31 * 128 >> 8) = 31 - 15 = 16.
        assert_eq!(h.lose(), 16);
    }

    #[test]
    fn increase_is_a_of_w_per_round_of_acks() {
        // cwnd 1000 (row a = 8): 1000 ACKs add 8000 to the counter; the
        // increments cost 1000 + 1001 + ... + 1006 = 7021 (the 8th would need
        // 1007 more): +7, about a(w) per RTT.
        let mut h = Harness::new(HighSpeed::default(), 1000);
        h.s.ssthresh = 10;
        h.ack_round();
        assert_eq!(h.s.cwnd, 1007);
        // Linux counts ACKs: with delayed ACKs the same round has 500 ACKs, 4000
        // credit, and 1000 + 1001 + 1002 = 3003 buys +3: half the growth.
        let mut d = Harness::new(HighSpeed::default(), 1000);
        d.s.ssthresh = 10;
        d.ack_round_in_pairs();
        assert_eq!(d.s.cwnd, 1003);
    }

    #[test]
    fn decrease_uses_the_row_of_the_window() {
        let mut h = Harness::new(HighSpeed::default(), 1000);
        h.s.ssthresh = 10;
        h.ack(1); // track the row (cwnd stays 1000: the counter holds 8)
        // 1000 - (1000 * 83 >> 8) = 1000 - 324 = 676
        assert_eq!(h.lose(), 676);
    }
}
