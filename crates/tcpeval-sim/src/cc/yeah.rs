//! YeAH-TCP (Baiocchi, Castellani & Vacirca, PFLDnet 2007) as Linux ships it
//! (`net/ipv4/tcp_yeah.c`). In "fast" mode it grows like Scalable TCP (+1 per
//! min(cwnd, 100) packets); once per RTT it estimates its queue like Vegas,
//! Q = cwnd (RTT - baseRTT) / RTT, and switches to "slow" (Reno) mode when Q > 80
//! packets or the queueing delay exceeds baseRTT/8; with Q > 80 it also removes
//! the queue at once (precautionary decongestion: cwnd -= min(Q, cwnd/2)). On
//! loss it removes only the last queue estimate, between cwnd/8 and cwnd/2,
//! unless it has been in slow mode for 16 rounds (competing with Reno: halve).

use super::params::Params;
use super::{after_slow_start, cong_avoid_ai, AckSample, CaState, CcState, CongestionOps};
use super::vegas::RttRound;
use serde_json::{Map, Value};

/// Linux TCP_YEAH_* constants.
const ALPHA: u64 = 80;
const GAMMA: u32 = 1;
const DELTA: u32 = 3;
const EPSILON: u32 = 1;
const PHY: u64 = 8;
const RHO: u32 = 16;
const ZETA: u32 = 50;
const SCALABLE_AI_CNT: u32 = 100;

#[derive(Clone, Debug)]
pub struct Yeah {
    rtts: RttRound,
    beg_snd_nxt: u64,
    doing_vegas: bool,
    last_q: u32,
    doing_reno_now: u32,
    reno_count: u32,
    fast_count: u32,
}

impl Yeah {
    pub fn from_params(map: &Map<String, Value>) -> Result<Self, String> {
        Params::new("yeah", map, &[])?;
        Ok(Yeah {
            rtts: RttRound::default(),
            beg_snd_nxt: 0,
            doing_vegas: true,
            last_q: 0,
            doing_reno_now: 0,
            reno_count: 2,
            fast_count: 0,
        })
    }

    pub fn in_slow_mode(&self) -> bool {
        self.doing_reno_now > 0
    }

    /// The once-per-RTT mode decision (and precautionary decongestion).
    fn per_rtt(&mut self, s: &mut CcState) {
        let (rtt, base) = (self.rtts.min, self.rtts.base);
        let queue = (s.cwnd as u64 * rtt.saturating_sub(base) / rtt.max(1)) as u32;
        if queue as u64 > ALPHA || rtt.saturating_sub(base) > base / PHY {
            if queue as u64 > ALPHA && s.cwnd > self.reno_count {
                let reduction = (queue / GAMMA).min(s.cwnd >> EPSILON);
                s.cwnd = (s.cwnd - reduction).max(self.reno_count);
                s.ssthresh = s.cwnd;
            }
            self.reno_count = if self.reno_count <= 2 { (s.cwnd >> 1).max(2) } else { self.reno_count + 1 };
            self.doing_reno_now = (self.doing_reno_now + 1).min(0xff_ffff);
        } else {
            self.fast_count += 1;
            if self.fast_count > ZETA {
                self.reno_count = 2;
                self.fast_count = 0;
            }
            self.doing_reno_now = 0;
        }
        self.last_q = queue;
    }
}

impl CongestionOps for Yeah {
    fn init(&mut self, s: &mut CcState) {
        self.beg_snd_nxt = s.snd_nxt;
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        let half = (s.cwnd >> 1).max(2);
        let reduction = if self.doing_reno_now < RHO {
            self.last_q.min(half).max(s.cwnd >> DELTA)
        } else {
            half
        };
        self.fast_count = 0;
        self.reno_count = (self.reno_count >> 1).max(2);
        s.cwnd.saturating_sub(reduction).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        let acked = after_slow_start(s, acked);
        if acked > 0 {
            let w = if self.doing_reno_now == 0 { s.cwnd.min(SCALABLE_AI_CNT) } else { s.cwnd };
            cong_avoid_ai(s, w, acked);
        }
        if s.snd_una > self.beg_snd_nxt {
            if self.rtts.count > 2 && self.doing_vegas {
                self.per_rtt(s);
            }
            self.beg_snd_nxt = s.snd_nxt;
            self.rtts.next_round();
        }
    }

    fn pkts_acked(&mut self, _s: &mut CcState, sample: &AckSample) {
        if let Some(rtt) = sample.rtt {
            self.rtts.sample(rtt);
        }
    }

    fn set_state(&mut self, s: &mut CcState, state: CaState) {
        // As Vegas: the per-RTT estimate runs only in the Open state.
        self.doing_vegas = state == CaState::Open;
        if self.doing_vegas {
            self.beg_snd_nxt = s.snd_nxt;
            self.rtts.next_round();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::harness::Harness;
    use crate::time::MS;

    fn yeah() -> Yeah {
        Yeah::from_params(&Map::new()).unwrap()
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
        h.rtt = 120 * MS; // Q = 1000 * 20 / 120 = 166 > 80
        h.ack_round();
        h.ack_round();
        assert!(h.cc.in_slow_mode());
        // cwnd -= min(166, cwnd / 2): about 1010 - 168, then Reno-like growth.
        assert!(h.s.cwnd < 900 && h.s.cwnd > 800, "cwnd {}", h.s.cwnd);
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
}
