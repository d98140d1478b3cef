//! Scalable TCP (Kelly, CCR 2003) as Linux ships it (`net/ipv4/tcp_scalable.c`):
//! in congestion avoidance +1 packet per min(cwnd, 100) packets acknowledged
//! (a = 0.01 per packet above 100, Reno-like below), and on loss a decrease of
//! 1/8 (ssthresh = cwnd - cwnd/8). Linux counts acknowledged packets; 2.6-era
//! kernels used 50 per ACK, about the same with delayed ACKs (reference digest B2).
//!
//! Response function: growth is linear in packets acknowledged, so a cycle from
//! (1 - b) W to W takes b W / a = 1/p packets, and the time-average window over
//! the cycle is a / (p ln(1 / (1 - b))) = 0.0749 / p (docs/algorithms/scalable.md).

use super::params::{self, AlgorithmConfig};
use super::{after_slow_start, cong_avoid_ai, CcError, CcState, CongestionOps};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Linux TCP_SCALABLE_AI_CNT: packets acknowledged per +1 above this window.
pub const AI_CNT: u32 = 100;
/// Linux TCP_SCALABLE_MD_SCALE: decrease by cwnd >> 3 (1/8).
pub const MD_SCALE: u32 = 3;

/// Scalable's parameters (`params`).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ScalableConfig {
    /// Packets acknowledged per +1 packet above this window (Linux
    /// `TCP_SCALABLE_AI_CNT`, net/ipv4/tcp_scalable.c; Kelly's a = 0.01); 0 is taken as 1.
    pub ai_cnt: u32,
    /// Decrease by cwnd >> md_scale on loss, 1..8 (Linux `TCP_SCALABLE_MD_SCALE`:
    /// 3, Kelly's b = 1/8).
    pub md_scale: u32,
}

impl Default for ScalableConfig {
    fn default() -> Self {
        ScalableConfig { ai_cnt: AI_CNT, md_scale: MD_SCALE }
    }
}

impl AlgorithmConfig for ScalableConfig {
    fn check(&self, _alg: &str) -> Result<(), CcError> {
        if !(1..=8).contains(&self.md_scale) {
            return Err(params::error("md_scale", "must be 1..8 (decrease by cwnd >> md_scale)".into()));
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct Scalable {
    ai_cnt: u32,
    md_scale: u32,
}

impl Default for Scalable {
    fn default() -> Self {
        Scalable::new(&ScalableConfig::default())
    }
}

impl Scalable {
    pub fn new(cfg: &ScalableConfig) -> Self {
        Scalable { ai_cnt: cfg.ai_cnt.max(1), md_scale: cfg.md_scale }
    }
}

impl CongestionOps for Scalable {
    /// At 2.6.22 `.min_cwnd = tcp_reno_min_cwnd` (net/ipv4/tcp_scalable.c at 2.6.22):
    /// rate-halving may go down to half of ssthresh.
    fn min_cwnd(&mut self, s: &CcState) -> u32 {
        super::reno_min_cwnd(s)
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        (s.cwnd - (s.cwnd >> self.md_scale)).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        let acked = after_slow_start(s, acked);
        if acked > 0 {
            let w = s.cwnd.min(self.ai_cnt);
            cong_avoid_ai(s, w, acked);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::harness::Harness;
    use crate::stack::Stack;

    #[test]
    fn reno_like_below_one_hundred_packets() {
        let mut h = Harness::new(Scalable::default(), 50);
        h.s.ssthresh = 10;
        h.ack_round_in_pairs();
        assert_eq!(h.s.cwnd, 51);
    }

    #[test]
    fn one_percent_per_round_above_one_hundred() {
        // cwnd 1000: 1000 acked packets / 100 = +10 per RTT.
        let mut h = Harness::new(Scalable::default(), 1000);
        h.s.ssthresh = 10;
        h.ack_round_in_pairs();
        assert_eq!(h.s.cwnd, 1010);
        // Multiplicative: 20 rounds from 1000 give 1000 * 1.01^20 = 1220 (to a packet or two,
        // as the window's increments are whole packets).
        for _ in 0..19 {
            h.ack_round_in_pairs();
        }
        assert!((1216..=1222).contains(&h.s.cwnd), "cwnd {}", h.s.cwnd);
    }

    /// One round of 500 delayed ACKs at cwnd 1000: Kelly's 2.4 patch, +0.01
    /// per ACK (ai_cnt 100, one packet per 101 ACKs): 1004; Linux 2.6.22,
    /// 50 per ACK (one per 51 ACKs): 1009; today 100 per packet: 1010.
    #[test]
    fn each_era_counts_its_own_increase() {
        for (stack, want) in [(Stack::Linux24, 1004), (Stack::Linux2622, 1009), (Stack::Linux66, 1010)] {
            let mut h = Harness::for_stack(stack, "scalable", 1000);
            h.s.ssthresh = 10;
            h.ack_round_in_pairs();
            assert_eq!(h.s.cwnd, want, "{}", stack.name());
        }
    }

    #[test]
    fn decrease_is_one_eighth() {
        let mut h = Harness::new(Scalable::default(), 1000);
        assert_eq!(h.lose(), 875);
        h.s.cwnd = 2;
        assert_eq!(h.lose(), 2);
    }

    #[test]
    fn recovery_takes_about_13_rounds_whatever_the_rate() {
        // log(8/7) / log(1.01) = 13.4 rounds back to the pre-loss window.
        for w in [1000, 10_000] {
            let mut h = Harness::new(Scalable::default(), w);
            h.lose();
            h.s.cwnd = h.s.ssthresh;
            let rounds = h.rounds_until(|s| s.cwnd >= w);
            assert!((13..=15).contains(&rounds), "w={w}: {rounds} rounds");
        }
    }

    #[test]
    fn md_scale_is_a_shift_of_one_to_eight() {
        let parse = |v: serde_json::Value| crate::cc::params::parse_map::<ScalableConfig>(v.as_object().unwrap());
        assert_eq!(parse(serde_json::json!({"md_scale": 8})).unwrap().md_scale, 8);
        for bad in [0, 9] {
            let e = parse(serde_json::json!({ "md_scale": bad })).unwrap_err();
            assert!(e.starts_with("params.md_scale: must be 1..8"), "{e}");
        }
        assert_eq!(Scalable::new(&parse(serde_json::json!({"ai_cnt": 0})).unwrap()).ai_cnt, 1);
    }
}
