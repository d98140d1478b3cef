//! HighSpeed TCP (RFC 3649) as Linux ships it (`net/ipv4/tcp_highspeed.c`): Reno
//! up to 38 packets; above, an increase of a(w) packets per RTT and a decrease by
//! b(w) taken from a 72-row table of RFC 3649's response function
//! w = 0.12 / p^0.835 (RFC 3649 section 5 and appendix B).
//!
//! Linux adds a(w) to `snd_cwnd_cnt` once per call, i.e. once per ACK, not per
//! acknowledged packet: with delayed ACKs its increase is a(w)/2 per RTT, as in
//! the kernels the studies measured. (Reno, Scalable and CUBIC count packets.)
//!
//! At the `ns2` stack it is ns-2's own HighSpeed instead (`HighSpeedVersion::Ns2`):
//! the same RFC 3649 response function, but a(w) and b(w) computed from the
//! formulas at the current window rather than looked up in the table, whose
//! rows give each window the a(w) of the row's top (up to a packet per RTT more).

use super::{slow_start, CcState, CongestionOps};

/// Which HighSpeed code runs (crate::stack).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HighSpeedVersion {
    /// Linux's table (net/ipv4/tcp_highspeed.c), in every Linux stack.
    #[default]
    Linux,
    /// ns-2.35's `Agent/TCP` with `windowOption_ 8` (tcp/tcp.cc
    /// `increase_param`, `decrease_param`, `slowdown`; defaults in
    /// tcl/lib/ns-default.tcl): cwnd += a(w)/cwnd per ACK and
    /// cwnd = (1 - b(w)) cwnd on a loss, from the formulas; Reno up to
    /// `low_window_`; the agent's first decrease, and one in slow start, halve.
    Ns2,
}

/// ns-2.35 ns-default.tcl: `low_window_ 38`, `high_window_ 83000`,
/// `high_p_ 0.0000001`, `high_decrease_ 0.1` (RFC 3649 section 5's Low_Window,
/// High_Window, High_P, High_Decrease).
const NS2_LOW_WINDOW: f64 = 38.0;
const NS2_HIGH_WINDOW: f64 = 83000.0;
const NS2_HIGH_P: f64 = 1e-7;
const NS2_HIGH_DECREASE: f64 = 0.1;
/// The ns-2 variant's increase credit is kept in `cwnd_cnt` in 1/1024 packet.
const NS2_CREDIT_SCALE: f64 = 1024.0;

/// Where ln w lies between ln low_window_ and ln high_window_ (0 to 1).
fn ns2_position(w: f64) -> f64 {
    (w.ln() - NS2_LOW_WINDOW.ln()) / (NS2_HIGH_WINDOW.ln() - NS2_LOW_WINDOW.ln())
}

/// ns-2 `decrease_param`: b(w) from 0.5 at low_window_ to high_decrease_ at
/// high_window_, linear in ln w (RFC 3649 section 5).
pub fn ns2_decrease(w: f64) -> f64 {
    0.5 + (NS2_HIGH_DECREASE - 0.5) * ns2_position(w)
}

/// ns-2 `increase_param` times cwnd: a(w) = w^2 p(w) / (1/b(w) - 0.5), p(w)
/// log-log from 1.5/low_window_^2 to high_p_ (RFC 3649 section 5).
pub fn ns2_increase(w: f64) -> f64 {
    let low_p: f64 = 1.5 / (NS2_LOW_WINDOW * NS2_LOW_WINDOW);
    let p = (low_p.ln() + (NS2_HIGH_P.ln() - low_p.ln()) * ns2_position(w)).exp();
    w * w * p / (1.0 / ns2_decrease(w) - 0.5)
}

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
    version: HighSpeedVersion,
    /// ns-2: the agent has decreased its window before (`first_decrease_` 0).
    decreased: bool,
    /// ns-2: the cwnd a(w) was last computed at, and a(w) in 1/1024 packet.
    a_at: (u32, u32),
}

impl HighSpeed {
    /// Run another stack's HighSpeed (crate::stack).
    pub fn set_version(&mut self, version: HighSpeedVersion) {
        self.version = version;
    }

    /// ns-2's per-ACK increase: cwnd += a(w)/cwnd (1/cwnd up to low_window_),
    /// the credit in 1/1024 packet in `cwnd_cnt`.
    fn ns2_increase(&mut self, s: &mut CcState) {
        if self.a_at.0 != s.cwnd {
            let w = s.cwnd as f64;
            let a = if w <= NS2_LOW_WINDOW { 1.0 } else { ns2_increase(w) };
            self.a_at = (s.cwnd, (a * NS2_CREDIT_SCALE).round() as u32);
        }
        s.cwnd_cnt = s.cwnd_cnt.saturating_add(self.a_at.1);
        let step = (s.cwnd as u64 * NS2_CREDIT_SCALE as u64).min(u32::MAX as u64) as u32;
        if s.cwnd_cnt >= step && s.cwnd < s.cwnd_clamp {
            s.cwnd_cnt -= step;
            s.cwnd += 1;
        }
    }

    /// ns-2 `slowdown(CLOSE_SSTHRESH_HALF | CLOSE_CWND_HALF)` with
    /// `precisionReduce_` true: half the window at the agent's first decrease,
    /// in slow start (cwnd < ssthresh) or up to low_window_, else (1 - b(w)) w.
    fn ns2_ssthresh(&mut self, s: &CcState) -> u32 {
        let w = s.cwnd as f64;
        let halve = !self.decreased || s.cwnd < s.ssthresh || w <= NS2_LOW_WINDOW;
        self.decreased = true;
        let window = if halve { w / 2.0 } else { w * (1.0 - ns2_decrease(w)) };
        (window as u32).max(2)
    }

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
        if self.version == HighSpeedVersion::Ns2 {
            return self.ns2_ssthresh(s);
        }
        (s.cwnd - ((s.cwnd as u64 * self.b256() as u64) >> 8) as u32).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        if s.in_slow_start() {
            slow_start(s, acked);
        } else if self.version == HighSpeedVersion::Ns2 {
            self.ns2_increase(s);
        } else {
            self.increase(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::harness::Harness;
    use crate::stack::Stack;

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

    /// ns-2's formulas by hand (RFC 3649 section 5 with ns-default.tcl's
    /// values): at w = 170, ln(170/38) / ln(83000/38) = 1.4981 / 7.6890 =
    /// 0.19484, so b = 0.5 - 0.4 x 0.19484 = 0.42206 and p = exp(ln(1.5/38^2) +
    /// ln(1e-7 / (1.5/38^2)) x 0.19484) = exp(-6.8698 - 9.2484 x 0.19484) =
    /// 1.7135e-4, a = 170^2 p / (1/b - 0.5) = 4.9520 / 1.8693 = 2.649; at
    /// w = 1000, b = 0.32988, a = 8.03.
    #[test]
    fn ns2_formulas_at_hand_computed_points() {
        assert!((ns2_decrease(170.0) - 0.42206).abs() < 1e-4);
        assert!((ns2_increase(170.0) - 2.649).abs() < 1e-3);
        assert!((ns2_decrease(1000.0) - 0.32988).abs() < 1e-4);
        assert!((ns2_increase(1000.0) - 8.03).abs() < 0.01);
        // The ends of the response function: b = 0.5 at 38 and 0.1 at 83000.
        assert!((ns2_decrease(38.0) - 0.5).abs() < 1e-12 && (ns2_decrease(83000.0) - 0.1).abs() < 1e-12);
    }

    /// At cwnd 170 ns-2 adds a(170)/170 = 2.649/170 per ACK: +1 after
    /// ceil(170 x 1024 / 2713) = 65 ACKs (2713 = 2.649 in 1/1024); Linux's
    /// table gives the row (118, 221] a = 3: +1 after ceil(170 / 3) = 57.
    #[test]
    fn ns2_stack_grows_by_the_formula_not_the_table_row() {
        for (stack, acks) in [(Stack::Ns2, 65), (Stack::Linux2622, 57)] {
            let mut h = Harness::for_stack(stack, "highspeed", 170);
            h.s.ssthresh = 10;
            for _ in 1..acks {
                h.ack(2);
            }
            assert_eq!(h.s.cwnd, 170, "{}", stack.name());
            h.ack(2);
            assert_eq!(h.s.cwnd, 171, "{}", stack.name());
        }
    }

    /// ns-2 `slowdown`: the agent's first decrease halves (`first_decrease_`),
    /// later ones keep 1 - b(w): 1000 x (1 - 0.32988) = 670 (Linux's table:
    /// 676); a loss while cwnd < ssthresh (slow start) halves again.
    #[test]
    fn ns2_stack_halves_first_then_takes_b_of_w() {
        let mut h = Harness::for_stack(Stack::Ns2, "highspeed", 1000);
        assert_eq!(h.lose(), 500);
        h.s.cwnd = 1000;
        assert_eq!(h.lose(), 670);
        (h.s.cwnd, h.s.ssthresh) = (1000, 2000);
        assert_eq!(h.lose(), 500);
        let mut linux = Harness::for_stack(Stack::Linux2622, "highspeed", 1000);
        linux.s.ssthresh = 10;
        linux.ack(1); // in avoidance: finds the row
        assert_eq!(linux.lose(), 676);
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
