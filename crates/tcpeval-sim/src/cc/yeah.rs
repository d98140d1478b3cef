//! YeAH-TCP (Baiocchi, Castellani & Vacirca, PFLDnet 2007) as Linux ships it
//! (`net/ipv4/tcp_yeah.c`). In "fast" mode it grows like Scalable TCP (+1 per
//! min(cwnd, 100) packets); once per RTT it estimates its queue like Vegas,
//! Q = cwnd (RTT - baseRTT) / RTT, and switches to "slow" (Reno) mode when Q > 80
//! packets or the queueing delay exceeds baseRTT/8; with Q > 80 it also removes
//! the queue at once (precautionary decongestion: cwnd -= min(Q, cwnd/2)). On
//! loss it removes only the last queue estimate, between cwnd/8 and cwnd/2,
//! unless it has been in slow mode for 16 rounds (competing with Reno: halve).

use super::params::{self, AlgorithmConfig};
use super::{after_slow_start, cong_avoid_ai, AckSample, CaEvent, CaState, CcError, CcState, CongestionOps};
use super::vegas::RttRound;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Linux `TCP_YEAH_ALPHA`: packets the flow may keep queued at the bottleneck.
pub const ALPHA: u32 = 80;
/// Linux `TCP_YEAH_GAMMA`: the queue is divided by this when decongesting.
pub const GAMMA: u32 = 1;
/// Linux `TCP_YEAH_DELTA`: on loss remove at least cwnd >> 3.
pub const DELTA: u32 = 3;
/// Linux `TCP_YEAH_EPSILON`: decongestion removes at most cwnd >> 1.
pub const EPSILON: u32 = 1;
/// Linux `TCP_YEAH_PHY` (phi in the paper): slow mode when the queueing delay
/// exceeds baseRTT / 8.
pub const PHY: u32 = 8;
/// Linux `TCP_YEAH_RHO`: rounds in slow mode after which a loss is taken as
/// competition with Reno flows (halve).
pub const RHO: u32 = 16;
/// Linux `TCP_YEAH_ZETA`: fast-mode rounds after which reno_count resets.
pub const ZETA: u32 = 50;
/// Linux `TCP_SCALABLE_AI_CNT` as used by YeAH: fast mode adds 1 per
/// min(cwnd, 100) packets acknowledged.
pub const SCALABLE_AI_CNT: u32 = 100;

/// YeAH's parameters (`params`): the constants of Linux net/ipv4/tcp_yeah.c
/// (`TCP_YEAH_*`, documented above), which Linux does not expose as module
/// parameters.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct YeahConfig {
    /// Packets the flow may keep queued (`TCP_YEAH_ALPHA` = 80).
    pub alpha: u32,
    /// Decongestion removes the queue divided by this, at least 1 (`TCP_YEAH_GAMMA` = 1).
    pub gamma: u32,
    /// A loss removes at least cwnd >> delta, a shift of at most 31 (`TCP_YEAH_DELTA` = 3).
    pub delta: u32,
    /// Decongestion removes at most cwnd >> epsilon, a shift of at most 31
    /// (`TCP_YEAH_EPSILON` = 1).
    pub epsilon: u32,
    /// Slow mode when the queueing delay exceeds baseRTT / phy, at least 1
    /// (`TCP_YEAH_PHY` = 8).
    pub phy: u32,
    /// Slow-mode rounds after which a loss halves (`TCP_YEAH_RHO` = 16).
    pub rho: u32,
    /// Fast-mode rounds after which reno_count resets (`TCP_YEAH_ZETA` = 50).
    pub zeta: u32,
    /// Fast mode adds 1 per min(cwnd, this) packets, at least 1
    /// (`TCP_SCALABLE_AI_CNT` = 100).
    pub scalable_ai_cnt: u32,
}

impl Default for YeahConfig {
    fn default() -> Self {
        YeahConfig { alpha: ALPHA, gamma: GAMMA, delta: DELTA, epsilon: EPSILON, phy: PHY, rho: RHO, zeta: ZETA, scalable_ai_cnt: SCALABLE_AI_CNT }
    }
}

impl AlgorithmConfig for YeahConfig {
    /// Divisors at least 1, shifts at most 31.
    fn check(&self, alg: &str) -> Result<(), CcError> {
        for (name, v) in [("gamma", self.gamma), ("phy", self.phy), ("scalable_ai_cnt", self.scalable_ai_cnt)] {
            if v == 0 {
                return Err(params::error(name, format!("must be at least 1 for {alg}")));
            }
        }
        for (name, v) in [("delta", self.delta), ("epsilon", self.epsilon)] {
            if v > 31 {
                return Err(params::error(name, format!("a shift of at most 31 for {alg}")));
            }
        }
        Ok(())
    }
}

/// The YeAH code of a stack's era (crate::stack).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum YeahVersion {
    /// Today's: fast mode through `tcp_cong_avoid_ai(tp, min(cwnd, 100), acked)`,
    /// which counts as the stack's growth rule does (per ACK in the old eras).
    #[default]
    Current,
    /// Linux 2.6.22 (net/ipv4/tcp_yeah.c at v2.6.22; ns-2.35 runs the same code,
    /// copied from 2.6.22.6, in tcp/linux/src/tcp_yeah.c): `tcp_yeah_cong_avoid`'s
    /// Scalable branch counts packets itself, even with tcp_abc = 0:
    /// `snd_cwnd_cnt += yeah->pkts_acked` (the packets this ACK acked, kept by
    /// `tcp_yeah_pkts_acked` in the Open state, else 1), and +1 once
    /// snd_cwnd_cnt > min(cwnd, 100), the count restarting at 0. Linux 3.16.0
    /// has the same branch (net/ipv4/tcp_yeah.c read at 3.16.0, sndrzt/linux-3.16
    /// e8dbc28b), so the linux-3.16 stack runs it too.
    Linux2622,
}

#[derive(Clone, Debug)]
pub struct Yeah {
    cfg: YeahConfig,
    rtts: RttRound,
    beg_snd_nxt: u64,
    last_q: u32,
    doing_reno_now: u32,
    reno_count: u32,
    fast_count: u32,
    /// Linux 2.6.22 `yeah->pkts_acked`.
    pkts_acked: u32,
    version: YeahVersion,
}

impl Yeah {
    pub fn new(cfg: YeahConfig) -> Self {
        Yeah { cfg, rtts: RttRound::default(), beg_snd_nxt: 0, last_q: 0, doing_reno_now: 0, reno_count: 2, fast_count: 0, pkts_acked: 1, version: YeahVersion::Current }
    }

    /// Run the code of another era (crate::stack).
    pub fn set_version(&mut self, version: YeahVersion) {
        self.version = version;
    }

    /// The last per-RTT queue estimate (packets).
    pub fn last_queue(&self) -> u32 {
        self.last_q
    }

    pub fn in_slow_mode(&self) -> bool {
        self.doing_reno_now > 0
    }

    /// The once-per-RTT mode decision (and precautionary decongestion).
    fn per_rtt(&mut self, s: &mut CcState) {
        let c = &self.cfg;
        let (rtt, base) = (self.rtts.min, self.rtts.base);
        let queue = (s.cwnd as u64 * rtt.saturating_sub(base) / rtt.max(1)) as u32;
        if queue > c.alpha || rtt.saturating_sub(base) > base / c.phy as u64 {
            if queue > c.alpha && s.cwnd > self.reno_count {
                let reduction = (queue / c.gamma).min(s.cwnd >> c.epsilon);
                s.cwnd = (s.cwnd - reduction).max(self.reno_count);
                s.ssthresh = s.cwnd;
            }
            self.reno_count = if self.reno_count <= 2 { (s.cwnd >> 1).max(2) } else { self.reno_count + 1 };
            self.doing_reno_now = (self.doing_reno_now + 1).min(0xff_ffff);
        } else {
            self.fast_count += 1;
            if self.fast_count > c.zeta {
                self.reno_count = 2;
                self.fast_count = 0;
            }
            self.doing_reno_now = 0;
        }
        self.last_q = queue;
    }
}

impl CongestionOps for Yeah {
    /// At 2.6.22 `.min_cwnd = tcp_reno_min_cwnd` (net/ipv4/tcp_yeah.c at 2.6.22):
    /// rate-halving may go down to half of ssthresh.
    fn min_cwnd(&mut self, s: &CcState) -> u32 {
        super::reno_min_cwnd(s)
    }

    fn init(&mut self, s: &mut CcState) {
        self.beg_snd_nxt = s.snd_nxt;
        // Linux keeps the decrease arithmetic within 32 bits.
        s.cwnd_clamp = s.cwnd_clamp.min(u32::MAX / 128);
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        let half = (s.cwnd >> 1).max(2);
        let reduction = if self.doing_reno_now < self.cfg.rho {
            self.last_q.min(half).max(s.cwnd >> self.cfg.delta)
        } else {
            half
        };
        self.fast_count = 0;
        self.reno_count = (self.reno_count >> 1).max(2);
        s.cwnd.saturating_sub(reduction).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        let acked = after_slow_start(s, acked);
        if acked > 0 && self.doing_reno_now == 0 && self.version == YeahVersion::Linux2622 {
            // 2.6.22's Scalable branch (tcp_yeah_cong_avoid).
            s.cwnd_cnt += self.pkts_acked;
            if s.cwnd_cnt > s.cwnd.min(self.cfg.scalable_ai_cnt) {
                if s.cwnd < s.cwnd_clamp {
                    s.cwnd += 1;
                }
                s.cwnd_cnt = 0;
            }
            self.pkts_acked = 1;
        } else if acked > 0 {
            let w = if self.doing_reno_now == 0 { s.cwnd.min(self.cfg.scalable_ai_cnt) } else { s.cwnd };
            cong_avoid_ai(s, w, acked);
        }
        // Linux runs this in every state in which it grows the window (Open,
        // Disorder, Loss), unlike Vegas, which stops outside Open.
        if s.snd_una > self.beg_snd_nxt {
            if self.rtts.count > 2 {
                self.per_rtt(s);
            }
            self.beg_snd_nxt = s.snd_nxt;
            self.rtts.next_round();
        }
    }

    fn pkts_acked(&mut self, s: &mut CcState, sample: &AckSample) {
        // Linux 2.6.22 `tcp_yeah_pkts_acked`: keep the count in the Open state.
        if s.ca_state == CaState::Open && sample.acked > 0 {
            self.pkts_acked = sample.acked;
        }
        if let Some(rtt) = sample.rtt {
            self.rtts.sample(rtt);
        }
    }

    /// Linux `tcp_vegas_state`: entering Open starts a fresh round.
    fn set_state(&mut self, s: &mut CcState, state: CaState) {
        if state == CaState::Open {
            self.beg_snd_nxt = s.snd_nxt;
            self.rtts.next_round();
        }
    }

    /// Linux `tcp_vegas_cwnd_event`: transmission starting from idle re-runs
    /// the Vegas initialisation (baseRTT forgotten).
    fn cwnd_event(&mut self, s: &mut CcState, event: CaEvent) {
        if event == CaEvent::TxStart {
            self.rtts = RttRound::default();
            self.beg_snd_nxt = s.snd_nxt;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;
    use crate::cc::harness::Harness;
    use crate::time::MS;

    fn yeah() -> Yeah {
        crate::cc::params::parse_map(&Map::new()).map(Yeah::new).unwrap()
    }

    #[test]
    fn linux_2_6_22_and_3_16_fast_mode_counts_packets_even_when_growth_counts_acks() {
        // Delayed ACKs of 2 packets, 1000 packets: 2.6.22's and 3.16.0's code
        // adds 1 per 102 packets (9: the count passes 100 at 102); today's
        // tcp_cong_avoid_ai, in 4.0's per-packet count, 1 per 100 packets (10).
        let mut got = Vec::new();
        for stack in [crate::stack::Stack::Linux2622, crate::stack::Stack::Linux316, crate::stack::Stack::Linux66] {
            let mut h = Harness::for_stack(stack, "yeah", 1000);
            h.s.ssthresh = 10;
            for _ in 0..500 {
                h.ack(2);
            }
            got.push(h.s.cwnd);
        }
        assert_eq!(got, [1009, 1009, 1010]);
    }

    #[test]
    fn fast_mode_grows_like_scalable() {
        let mut h = Harness::new(yeah(), 1000);
        h.s.ssthresh = 10;
        h.ack_round();
        assert_eq!(h.s.cwnd, 1010); // 1000 acked / 100
    }

    #[test]
    fn a_long_queue_triggers_decongestion_and_slow_mode() {
        let mut h = Harness::new(yeah(), 1000);
        h.s.ssthresh = 10;
        h.cc.rtts.base = 100 * MS;
        h.rtt = 120 * MS; // samples 120.001 ms (Vegas adds 1 us)
        h.ack_round(); // fast mode: 1000 -> 1010; the round's RTTs are collected
        assert_eq!(h.s.cwnd, 1010);
        h.ack(1);
        // First ACK past the round: Q = 1010 * 20.001 / 120.001 = 168 > 80
        // (queueing delay 20 ms > 100/8 too): decongestion removes
        // min(168 / 1, 1010 >> 1) = 168 -> cwnd = ssthresh = 842; reno_count =
        // max(842 / 2, 2) = 421; slow (Reno) mode.
        assert_eq!((h.s.cwnd, h.s.ssthresh, h.cc.last_queue()), (842, 842, 168));
        assert_eq!((h.cc.reno_count, h.cc.doing_reno_now), (421, 1));
        // Reno growth: the counter (1 from that ACK) reaches 842 after 841 more.
        for _ in 0..840 {
            h.ack(1);
        }
        assert_eq!(h.s.cwnd, 842);
        h.ack(1);
        assert_eq!(h.s.cwnd, 843);
    }

    #[test]
    fn queueing_delay_alone_selects_slow_mode_without_decongestion() {
        let mut h = Harness::new(yeah(), 200);
        h.s.ssthresh = 10;
        h.cc.rtts.base = 100 * MS;
        h.rtt = 115 * MS;
        h.ack_round(); // 200 -> 202 (1 per 100 packets)
        h.ack(1);
        // Q = 202 * 15.001 / 115.001 = 26 <= 80, but 15 ms > 100/8 = 12.5 ms:
        // slow mode, cwnd kept, reno_count = 202 / 2 = 101.
        assert_eq!((h.s.cwnd, h.cc.last_queue()), (202, 26));
        assert_eq!((h.cc.reno_count, h.cc.doing_reno_now), (101, 1));
    }

    #[test]
    fn zeta_fast_rounds_reset_reno_count() {
        let mut h = Harness::new(yeah(), 200);
        h.s.ssthresh = 10;
        h.cc.reno_count = 50;
        h.cc.fast_count = ZETA; // one more fast round: 51 > 50
        h.ack_round();
        h.ack(1); // no queue (RTT = baseRTT): a fast-mode round
        assert_eq!((h.cc.reno_count, h.cc.fast_count, h.cc.doing_reno_now), (2, 0, 0));
    }

    #[test]
    fn loss_removes_the_last_queue_estimate_within_bounds() {
        let mut h = Harness::new(yeah(), 1000);
        h.cc.last_q = 50;
        // reduction = max(min(50, 500), 1000 >> 3 = 125) = 125
        assert_eq!(h.lose(), 875);
        h.s.cwnd = 1000;
        h.cc.last_q = 700;
        assert_eq!(h.lose(), 500); // capped at cwnd/2
        h.s.cwnd = 1000;
        h.cc.doing_reno_now = RHO;
        assert_eq!(h.lose(), 500); // competing with Reno: halve
    }

    #[test]
    fn constants_are_parameters() {
        let mut p = Map::new();
        p.insert("alpha".into(), 40.into());
        p.insert("rho".into(), 8.into());
        let y = crate::cc::params::parse_map(&p).map(Yeah::new).unwrap();
        assert_eq!((y.cfg.alpha, y.cfg.rho, y.cfg.phy), (40, 8, PHY));
        p.insert("gamma".into(), 0.into());
        assert!(crate::cc::params::parse_map(&p).map(Yeah::new).unwrap_err().contains("params.gamma"));
        let mut p = Map::new();
        p.insert("phi".into(), 8.into());
        let e = crate::cc::params::parse_map(&p).map(Yeah::new).unwrap_err();
        assert!(e.contains("params.phi") && e.contains("phy"), "{e}");
    }
}
