//! FAST TCP (Jin, Wei & Low, INFOCOM 2004; Wei, Jin, Low & Hegde, ToN 2006).
//! Once per RTT the window moves towards the point where the flow keeps alpha
//! packets queued:
//!     w <- min(2w, (1 - gamma) w + gamma (baseRTT / avgRTT w + alpha)),
//! with baseRTT the minimum RTT and avgRTT the mean RTT over the last round. Its
//! equilibrium is w = rate x baseRTT + alpha, i.e. alpha packets in the queue per
//! flow, whatever the loss rate. Loss is handled like Reno (halve), and the flow
//! paces at cwnd / srtt so the window's increments do not burst.
//!
//! Defaults (the reference digest lists FAST's as UNVERIFIED): gamma = 0.5 (Jin
//! et al. 2004, section 4: gamma in (0, 1], 0.5 in their experiments); alpha = 200
//! packets, as the 2004 paper and Bullot et al. (seed 000) used on high-speed
//! paths. Both are parameters; for small links use a smaller alpha (the
//! equilibrium queue is alpha packets per flow).
//!
//! Integer arithmetic, so that the testbed's BPF program
//! (python/tcpeval/testbed/bpf/tcpeval_fast.c) computes the same windows (BPF has
//! no floating point): alpha in 1/1024 packet (`FP_SHIFT`), gamma and
//! baseRTT/avgRTT in 1/2^20 (`RATIO_SHIFT`), each product truncated and the new
//! window rounded to the nearest packet. Against the real-valued rule the window
//! differs by at most one packet (tested).

use super::params::AlgorithmConfig;
use super::reno::Reno;
use super::vegas::queued_packets;
use super::{slow_start, AckSample, CaState, CcState, CongestionOps};
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const ALPHA: f64 = 200.0;
pub const GAMMA: f64 = 0.5;
/// Pacing at 1.2 x cwnd / srtt, Linux's congestion-avoidance pacing ratio
/// (`tcp_pacing_ca_ratio` = 120%), so the pacer never holds the window back.
/// Stacks with TCP's internal pacing (linux-6.6) replace this rate after each
/// ACK by Linux's own (`cc::linux_pacing_bytes_per_ns`, tcp::hooks).
const PACING_RATIO: f64 = 1.2;
/// alpha and the windows inside the update in fixed point: x 2^FP_SHIFT.
const FP_SHIFT: u32 = 10;
/// gamma and baseRTT / avgRTT in fixed point: x 2^RATIO_SHIFT (gamma in 1/1024
/// would move a window far from its target by up to 2^-11 of the distance).
const RATIO_SHIFT: u32 = 20;

/// FAST's parameters (`params`); the reference digest marks FAST's defaults
/// UNVERIFIED (see the module notes).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct FastConfig {
    /// Packets each flow keeps queued at equilibrium (200: Jin et al. 2004's
    /// high-speed setting, as Bullot et al. used).
    #[schemars(range(min = 0, max = 1e6))]
    pub alpha: f64,
    /// The update's smoothing, in (0, 1] (0.5: Jin et al. 2004 section 4).
    #[schemars(range(min = 0.001, max = 1))]
    pub gamma: f64,
    /// Pace (on by default): at 1.2 cwnd / srtt, or where the stack has TCP's
    /// internal pacing (linux-6.6) at Linux's `tcp_update_pacing_rate` rate.
    pub pacing: bool,
}

impl Default for FastConfig {
    fn default() -> Self {
        FastConfig { alpha: ALPHA, gamma: GAMMA, pacing: true }
    }
}

impl AlgorithmConfig for FastConfig {}

#[derive(Clone, Debug)]
pub struct Fast {
    /// alpha x 2^10 (packets) and gamma x 2^20, rounded.
    alpha_fp: u64,
    gamma_fp: u64,
    pacing: bool,
    base_rtt: Time,
    rtt_sum: Time,
    rtt_cnt: u32,
    round_end: u64,
    reno: Reno,
}

impl Fast {
    pub fn new(cfg: &FastConfig) -> Self {
        Fast {
            alpha_fp: (cfg.alpha * (1 << FP_SHIFT) as f64).round() as u64,
            gamma_fp: (cfg.gamma * (1u64 << RATIO_SHIFT) as f64).round() as u64,
            pacing: cfg.pacing,
            base_rtt: Time::MAX,
            rtt_sum: 0,
            rtt_cnt: 0,
            round_end: 0,
            reno: Reno,
        }
    }

    /// The FAST update: the new window from w, baseRTT and avgRTT, in packets
    /// (the fixed point described in the module notes).
    pub fn target(&self, w: u32, base_rtt: Time, avg_rtt: Time) -> u32 {
        let w = w as u64;
        let ratio = (base_rtt.min(avg_rtt) << RATIO_SHIFT) / avg_rtt.max(1);
        // Packets x 2^10: baseRTT/avgRTT x w + alpha, then the gamma blend.
        let fixed_point = ((ratio * w) >> (RATIO_SHIFT - FP_SHIFT)) + self.alpha_fp;
        let keep = (1 << RATIO_SHIFT) - self.gamma_fp;
        let blend = (keep * (w << FP_SHIFT) + self.gamma_fp * fixed_point) >> RATIO_SHIFT;
        (2 * w).min((blend + (1 << (FP_SHIFT - 1))) >> FP_SHIFT).min(u32::MAX as u64) as u32
    }

    fn end_of_round(&mut self, s: &mut CcState, acked: u32) {
        let avg = self.rtt_sum / self.rtt_cnt.max(1) as Time;
        self.rtt_sum = 0;
        self.rtt_cnt = 0;
        self.round_end = s.snd_nxt;
        if avg == 0 || self.base_rtt == Time::MAX {
            return;
        }
        if s.in_slow_start() {
            // Leave slow start once the flow itself queues alpha/2 packets.
            if queued_packets(s.cwnd, avg, self.base_rtt) << (FP_SHIFT + 1) > self.alpha_fp {
                s.ssthresh = s.cwnd;
            } else {
                slow_start(s, acked);
                return;
            }
        }
        s.cwnd = self.target(s.cwnd, self.base_rtt, avg).clamp(2, s.cwnd_clamp);
        s.ssthresh = s.ssthresh.min(s.cwnd);
    }
}

impl CongestionOps for Fast {
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.reno.ssthresh(s)
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        if s.snd_una > self.round_end {
            self.end_of_round(s, acked);
        } else if s.in_slow_start() {
            slow_start(s, acked);
        }
    }

    /// FAST paces, so in flight trails a window it has just raised; like
    /// Vegas's branch, its round update runs whether or not the window is
    /// in use (Caltech's 2.4 patch, built on Vegas, is not public).
    fn waits_for_window_use(&self, _s: &CcState) -> bool {
        false
    }

    fn pkts_acked(&mut self, s: &mut CcState, sample: &AckSample) {
        if let Some(rtt) = sample.rtt {
            self.base_rtt = self.base_rtt.min(rtt);
            if s.ca_state == CaState::Open {
                self.rtt_sum += rtt;
                self.rtt_cnt += 1;
            }
        }
        if self.pacing && s.srtt > 0 {
            s.pacing_rate = PACING_RATIO * s.cwnd as f64 * (s.mss + 52) as f64 * 1e9 / s.srtt as f64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value};
    use crate::cc::harness::Harness;
    use crate::time::MS;

    fn fast(alpha: f64, gamma: f64) -> Fast {
        let mut m = Map::new();
        m.insert("alpha".into(), Value::from(alpha));
        m.insert("gamma".into(), Value::from(gamma));
        crate::cc::params::parse_map(&m).map(|c| Fast::new(&c)).unwrap()
    }

    #[test]
    fn update_rule_by_hand() {
        let f = fast(100.0, 0.5);
        // w = 1000, base 100 ms, avg 110 ms: 0.5*1000 + 0.5*(1000/1.1 + 100) = 1004.545.
        // In fixed point: ratio = 2^20 / 1.1 = 953250 (truncated), x 1000 >> 10 =
        // 930908, + alpha 102400 = 1033308; blend (2^19 x 1024000 + 2^19 x
        // 1033308) >> 20 = 1028654; (1028654 + 512) >> 10 = 1005, the real value
        // rounded.
        assert_eq!(f.target(1000, 100 * MS, 110 * MS), 1005);
        // No queueing: w grows by gamma*alpha = 50 per RTT, capped at 2w.
        assert_eq!(f.target(1000, 100 * MS, 100 * MS), 1050);
        assert_eq!(f.target(10, 100 * MS, 100 * MS), 20);
    }

    #[test]
    fn the_fixed_point_is_the_real_rule_within_a_packet() {
        // Against the paper's real-valued update, rounded: never more than one
        // packet apart, over windows, delays and parameters.
        for &(alpha, gamma) in &[(200.0, 0.5), (20.0, 0.5), (100.0, 0.3), (7.5, 1.0), (1000.0, 0.05)] {
            let f = fast(alpha, gamma);
            for w in [2u32, 10, 37, 413, 1000, 9999, 123_457] {
                for (base, avg) in [(100, 100), (100, 101), (50, 73), (20, 400), (1, 3)] {
                    let (b, a) = (base * MS, avg * MS);
                    let real = (2.0 * w as f64).min((1.0 - gamma) * w as f64 + gamma * (b as f64 / a as f64 * w as f64 + alpha));
                    let got = f.target(w, b, a) as f64;
                    assert!((got - real.round()).abs() <= 1.0, "w {w} base {base} avg {avg}: {got} vs {real}");
                }
            }
        }
    }

    #[test]
    fn equilibrium_keeps_alpha_packets_queued() {
        // Fixed point: w = base/avg w + alpha  <=>  w (avg - base)/avg = alpha,
        // and w (avg - base) / avg is the flow's queue at rate w / avg.
        let f = fast(100.0, 0.5);
        let (base, avg) = (100 * MS, 125 * MS);
        let w = 100 * avg / (avg - base); // 500
        assert_eq!(f.target(w as u32, base, avg), 500);
    }

    #[test]
    fn converges_in_a_harness_with_a_fixed_rtt() {
        let mut h = Harness::new(fast(20.0, 0.5), 10);
        h.s.ssthresh = 2;
        h.rtt = 100 * MS;
        for _ in 0..20 {
            h.ack_round();
        }
        // With no queueing modelled, w grows by gamma*alpha = 10 per RTT.
        assert!((190..=220).contains(&h.s.cwnd), "cwnd {}", h.s.cwnd);
        assert!(h.s.pacing_rate > 0.0, "FAST paces");
    }
}
