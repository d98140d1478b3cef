//! BIC (Xu, Harfoush & Rhee, INFOCOM 2004) as Linux ships it (`net/ipv4/tcp_bic.c`).
//!
//! After a loss at W_max the window restarts at beta W_max and binary-searches
//! towards W_max: each RTT it closes a quarter of the distance (Linux BICTCP_B = 4),
//! at most 16 packets (linear increase when far) and at least 0.2 (smooth_part
//! 20, when close). Beyond W_max it probes slowly, then faster ("max probing":
//! (cwnd - W_max)/3 per RTT, up to 16). Fast convergence lowers W_max to
//! 0.9 cwnd when a loss comes below the previous W_max. At or below 14 packets it
//! is Reno. Linux divides `cnt` by the measured packets per ACK (an EWMA started at
//! 2) while `tcp_cong_avoid_ai` counts packets, so with delayed ACKs BIC grows
//! about twice the per-RTT steps above (reference digest B5 and part E item 9).

use super::params::AlgorithmConfig;
use super::{cong_avoid_ai, slow_start, AckSample, BicUndo, CaState, CcState, CongestionOps};
use crate::time::{Time, SEC};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const BETA_SCALE: u32 = 1024;
/// Linux defaults (module parameters of tcp_bic.c).
const BETA: u32 = 819;
const MAX_INCREMENT: u32 = 16;
const LOW_WINDOW: u32 = 14;
const SMOOTH_PART: u32 = 20;
/// Binary search goes to (max + min) / BICTCP_B.
const B: u32 = 4;
/// Packets per ACK are kept << 4 (Linux ACK_RATIO_SHIFT), starting at 2.
const ACK_RATIO_SHIFT: u32 = 4;
/// Before any loss grow at least 5% per RTT.
const NO_LOSS_CNT_CAP: u32 = 20;
const UPDATE_GAP: Time = SEC / 32;

/// Which BIC's code: the module, tcp_bic.c (read at 2.6.22; today's), or the
/// BIC built into tcp_input.c from 2.6.6 to 2.6.12 (`bictcp_cwnd`, read at
/// 2.6.11), the mainline port of NCSU's code of 2004, which the linux-2.4
/// stack runs in place of NCSU's 2.4 patch (not public). The built-in one
/// neither divides cnt by the packets per ACK nor caps it before the first
/// loss; its constants (max increment 32, 11 where the module has
/// smooth_part 20) come as the stack's parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BicVersion {
    #[default]
    Module,
    Builtin2611,
}

/// BIC's parameters (`params`): the module parameters of Linux tcp_bic.c.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct BicConfig {
    /// The window after a loss as a fraction of the window before it, kept in
    /// Linux's 1/1024 units (module parameter `beta` = 819, i.e. 0.7998).
    #[schemars(range(min = 0.05, max = 0.95))]
    pub beta: f64,
    /// Most packets added per RTT by the binary search (`max_increment` = 16);
    /// 0 is taken as 1.
    pub max_increment: u32,
    /// At or below this window BIC is Reno (`low_window` = 14).
    pub low_window: u32,
    /// Packets acknowledged per +1 near W_max: the search's smallest step is
    /// 1/smooth_part per RTT (`smooth_part` = 20); 0 is taken as 1.
    pub smooth_part: u32,
    /// Lower W_max when a loss comes below the previous one (`fast_convergence` = 1).
    pub fast_convergence: bool,
}

impl Default for BicConfig {
    fn default() -> Self {
        BicConfig {
            beta: BETA as f64 / BETA_SCALE as f64,
            max_increment: MAX_INCREMENT,
            low_window: LOW_WINDOW,
            smooth_part: SMOOTH_PART,
            fast_convergence: true,
        }
    }
}

impl AlgorithmConfig for BicConfig {}

#[derive(Clone, Debug)]
pub struct Bic {
    beta: u32,
    max_increment: u32,
    low_window: u32,
    smooth_part: u32,
    fast_convergence: bool,
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: Time,
    delayed_ack: u32,
    version: BicVersion,
    /// cwnd at the last loss (3.16's `loss_cwnd`, for an undo).
    loss_cwnd: u32,
    undo: BicUndo,
}

impl Default for Bic {
    fn default() -> Self {
        Bic {
            beta: BETA,
            max_increment: MAX_INCREMENT,
            low_window: LOW_WINDOW,
            smooth_part: SMOOTH_PART,
            fast_convergence: true,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            delayed_ack: 2 << ACK_RATIO_SHIFT,
            version: BicVersion::Module,
            loss_cwnd: 0,
            undo: BicUndo::Stack,
        }
    }
}

impl Bic {
    pub fn new(cfg: &BicConfig) -> Self {
        Bic {
            beta: (cfg.beta * BETA_SCALE as f64).round() as u32,
            max_increment: cfg.max_increment.max(1),
            low_window: cfg.low_window,
            smooth_part: cfg.smooth_part.max(1),
            fast_convergence: cfg.fast_convergence,
            ..Bic::default()
        }
    }

    /// The era's code (crate::stack).
    pub fn set_version(&mut self, version: BicVersion) {
        self.version = version;
    }

    /// Undo as this stack's BIC did (crate::stack).
    pub fn set_undo(&mut self, undo: BicUndo) {
        self.undo = undo;
    }

    fn reset(&mut self) {
        *self = Bic { cnt: 0, last_max_cwnd: 0, last_cwnd: 0, last_time: 0, delayed_ack: 2 << ACK_RATIO_SHIFT, ..self.clone() };
    }

    /// Packets per +1 of cwnd before the ACK-ratio correction (Linux `bictcp_update`).
    fn search_cnt(&self, cwnd: u32) -> u32 {
        let (w_max, inc, smooth) = (self.last_max_cwnd, self.max_increment, self.smooth_part);
        if cwnd <= self.low_window {
            return cwnd;
        }
        let cnt = if cwnd < w_max {
            let dist = (w_max - cwnd) / B;
            if dist > inc {
                cwnd / inc
            } else if dist <= 1 {
                cwnd * smooth / B
            } else {
                cwnd / dist
            }
        } else if cwnd < w_max + B {
            cwnd * smooth / B
        } else if cwnd < w_max + inc * (B - 1) {
            cwnd * (B - 1) / (cwnd - w_max)
        } else {
            cwnd / inc
        };
        if w_max == 0 && self.version == BicVersion::Module {
            cnt.min(NO_LOSS_CNT_CAP)
        } else {
            cnt
        }
    }

    fn update(&mut self, s: &CcState) {
        let cwnd = s.cwnd;
        if self.last_cwnd == cwnd && s.now.saturating_sub(self.last_time) <= UPDATE_GAP {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = s.now;
        let cnt = self.search_cnt(cwnd);
        if cwnd <= self.low_window || self.version == BicVersion::Builtin2611 {
            self.cnt = cnt;
            return;
        }
        self.cnt = ((cnt << ACK_RATIO_SHIFT) / self.delayed_ack.max(1)).max(1);
    }

    pub fn w_max(&self) -> u32 {
        self.last_max_cwnd
    }
}

impl CongestionOps for Bic {
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        let cwnd = s.cwnd;
        self.loss_cwnd = cwnd;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && self.fast_convergence {
            (cwnd as u64 * (BETA_SCALE + self.beta) as u64 / (2 * BETA_SCALE) as u64) as u32
        } else {
            cwnd
        };
        if cwnd <= self.low_window {
            (cwnd >> 1).max(2)
        } else {
            ((cwnd as u64 * self.beta as u64 / BETA_SCALE as u64) as u32).max(2)
        }
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        if s.in_slow_start() {
            slow_start(s, acked);
        } else {
            self.update(s);
            let cnt = self.cnt;
            cong_avoid_ai(s, cnt, acked);
        }
    }

    fn pkts_acked(&mut self, s: &mut CcState, sample: &AckSample) {
        // EWMA of packets per ACK (x16, gain 1/16), in the Open state only.
        if s.ca_state == CaState::Open {
            self.delayed_ack = (self.delayed_ack + sample.acked).saturating_sub(self.delayed_ack >> ACK_RATIO_SHIFT);
        }
    }

    fn set_state(&mut self, _s: &mut CcState, state: CaState) {
        if state == CaState::Loss {
            self.reset();
        }
    }

    fn undo_cwnd(&mut self, s: &CcState) -> Option<u32> {
        self.undo.window(s.cwnd, self.last_max_cwnd, self.loss_cwnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::harness::Harness;
    use crate::stack::Stack;

    fn bic_at(w_max: u32) -> Bic {
        Bic { last_max_cwnd: w_max, ..Bic::default() }
    }

    #[test]
    fn binary_search_steps_towards_w_max() {
        let b = bic_at(1000);
        // Far below: dist = (1000 - 500) / 4 = 125 > 16: linear, +16 per RTT.
        assert_eq!(b.search_cnt(500), 500 / 16);
        // Closer: dist = (1000 - 960) / 4 = 10: +10 per RTT.
        assert_eq!(b.search_cnt(960), 96);
        // Within 4: dist <= 1: +4/20 = 0.2 per RTT.
        assert_eq!(b.search_cnt(997), 997 * 20 / 4);
    }

    #[test]
    fn max_probing_above_w_max() {
        let b = bic_at(1000);
        assert_eq!(b.search_cnt(1002), 1002 * 20 / 4); // slow start of probing: 0.2 per RTT
        assert_eq!(b.search_cnt(1030), 1030 * 3 / 30); // +(cwnd - W_max)/3 = 10 per RTT
        assert_eq!(b.search_cnt(1100), 1100 / 16); // linear: 16 per RTT
    }

    #[test]
    fn reno_at_and_below_the_low_window() {
        let b = bic_at(1000);
        assert_eq!(b.search_cnt(14), 14);
        let mut h = Harness::new(Bic::default(), 14);
        assert_eq!(h.lose(), 7);
        let mut h = Harness::new(Bic::default(), 100);
        assert_eq!(h.lose(), 79); // 100 * 819 / 1024
    }

    #[test]
    fn fast_convergence_and_w_max() {
        let mut h = Harness::new(Bic::default(), 1000);
        h.lose();
        assert_eq!(h.cc.w_max(), 1000);
        h.s.cwnd = 900;
        h.lose();
        assert_eq!(h.cc.w_max(), 900 * (1024 + 819) / 2048); // 809
    }

    /// Linux 2.6.22 (per-ACK counting): after a loss at 1000, cwnd 799 =
    /// ssthresh is still slow start there (`<=`): the first ACK adds one. Then
    /// far below W_max cnt = 800 / 16 = 50, divided by the ratio of 2 packets
    /// per ACK: 25, one packet per 26 ACKs (51 * 16 / 32 is 25 too); the other
    /// 399 ACKs of the round add 15: 815, i.e. BIC's designed 16 per RTT. Today
    /// the same cnt counts packets: about 32 per RTT.
    #[test]
    fn linux_2_6_22_keeps_the_designed_step_with_delayed_acks() {
        let mut old = Harness::for_stack(Stack::Linux2622, "bic", 1000);
        let mut new = Harness::for_stack(Stack::Linux66, "bic", 1000);
        assert_eq!((old.lose(), new.lose()), (799, 799));
        old.ack_round_in_pairs();
        new.ack_round_in_pairs();
        assert_eq!(old.s.cwnd, 815);
        assert!((829..=833).contains(&new.s.cwnd), "today: {}", new.s.cwnd);
    }

    /// cwnd after one round of ACK pairs from `cwnd` in avoidance, W_max 1000,
    /// with `stack`'s BIC.
    fn round_below_w_max(stack: Stack, cwnd: u32) -> u32 {
        let mut h = Harness::for_stack(stack, "bic", cwnd);
        h.s.ssthresh = 10;
        let crate::cc::Cc::Bic(b) = &mut h.cc else { unreachable!("built as bic") };
        b.last_max_cwnd = 1000;
        h.ack_round_in_pairs();
        h.s.cwnd
    }

    /// Near W_max the built-in BIC of 2.6.11 (the linux-2.4 stack's) keeps
    /// cnt as computed while the 2.6.22 module halves it for delayed ACKs.
    /// W_max 1000, cwnd 960, one round of 480 ACKs of two, counted per ACK
    /// (+1 per cnt + 1 ACKs). 2.4: cnt = 960 / ((1000 - 960) / 4) = 96, then
    /// 961 / 9 = 106, 962 / 9 = 106, 963 / 9 = 107: 97 + 107 + 107 + 108 = 419
    /// ACKs, the next needs 108 more: 964. 2.6.22: 48, 53, 53, 53, 53 (one per
    /// 49 or 54 ACKs: 265), then 965-968 with dist 8: 120 / 2 = 60 (61 each:
    /// 448), 969 would need 70 more: 968.
    #[test]
    fn the_2_4_stack_runs_the_built_in_bic_of_2_6_11() {
        assert_eq!(round_below_w_max(Stack::Linux24, 960), 964);
        assert_eq!(round_below_w_max(Stack::Linux2622, 960), 968);
        // Its constants: at most 32 per RTT far below W_max, 4/11 near it.
        let (cc, _) = Stack::Linux24.build("bic", &serde_json::Map::new()).unwrap();
        let crate::cc::Cc::Bic(b) = cc else { unreachable!("built as bic") };
        assert_eq!((b.max_increment, b.smooth_part, b.version), (32, 11, BicVersion::Builtin2611));
        assert_eq!(bic_at(0).search_cnt(500), 20, "the module caps cnt before a loss");
        let builtin = Bic { version: BicVersion::Builtin2611, ..bic_at(0) };
        assert_eq!(builtin.search_cnt(500), 500 / 16, "the built-in one does not");
    }

    /// 2.6.13's module searches with `max_increment` 32, 2.6.22's with 16;
    /// both divide cnt by the ACK ratio (2, kept x16 as 32). Far below W_max
    /// (500 against 1000: dist 125) 2.6.13's cnt = 500 / 32 = 15, halved to
    /// 7: one packet per 8 ACKs up to 511 (96 ACKs), then 512 / 32 = 16, 8:
    /// one per 9 (154 ACKs, 17 more): +29 in a round of 250 ACK pairs.
    /// 2.6.22: 31, 15: one per 16 up to 511 (192 ACKs), then 32, 16: one per
    /// 17 (58 ACKs, 3 more): +15.
    #[test]
    fn the_2_6_13_stack_s_bic_steps_twice_as_far_below_w_max() {
        assert_eq!((round_below_w_max(Stack::Linux2613, 500), round_below_w_max(Stack::Linux2622, 500)), (529, 515));
    }

    #[test]
    fn delayed_acks_double_the_per_round_step() {
        // One ACK per packet: ratio 1; the default assumes 2, which the EWMA learns.
        let mut h = Harness::new(bic_at(1000), 500);
        h.s.ssthresh = 10;
        for _ in 0..50 {
            h.ack_round_in_pairs();
        }
        let paired = h.s.cwnd;
        let mut g = Harness::new(bic_at(1000), 500);
        g.s.ssthresh = 10;
        for _ in 0..50 {
            g.ack_round();
        }
        // Far from W_max both grow linearly: 32 vs 16 per RTT until close.
        assert!(paired > g.s.cwnd, "paired {paired} vs single {}", g.s.cwnd);
        assert!(g.s.cwnd >= 500 + 16 * 25, "single-ACK growth {}", g.s.cwnd);
    }
}
