//! H-TCP (Leith & Shorten, PFLDnet 2004; draft-leith-tcp-htcp) as Linux ships it
//! (`net/ipv4/tcp_htcp.c`). The increase depends on Delta, the time since the
//! last congestion event: alpha = 2 (1 - beta) f(Delta) packets per RTT with
//! f = 1 for Delta <= 1 s and f = 1 + 10 (Delta - 1) + ((Delta - 1)/2)^2 after
//! (Linux computes it in integer jiffies, so f is a whole number: 11 at 2 s, not
//! 11.25), scaled by minRTT / 100 ms clamped to [0.1, 2] (use_rtt_scaling). The
//! decrease is adaptive: beta = minRTT / maxRTT clamped to [0.5, 102/128], but 0.5
//! when the maximum throughput moved by more than 20% (use_bandwidth_switch), and
//! 0.5 until the second congestion event.

use super::params::AlgorithmConfig;
use super::{slow_start, AckSample, CaState, CcState, CongestionOps};
use crate::time::{Time, HZ, JIFFY};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Linux ALPHA_BASE, BETA_MIN, BETA_MAX in << 7 fixed point.
const ALPHA_BASE: u32 = 1 << 7;
const BETA_MIN: u32 = 1 << 6;
const BETA_MAX: u32 = 102;
/// maxRTT only follows samples within 20 ms above it (outlier filter).
const MAX_RTT_STEP: u64 = 20;
/// Adaptive beta needs minRTT above 10 ms.
const MIN_RTT_FOR_BETA: u64 = 10;

/// H-TCP's parameters (`params`): Linux's module parameters of the same names
/// (net/ipv4/tcp_htcp.c), both on by default there.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HtcpConfig {
    /// Scale the increase by minRTT / 100 ms, clamped to [0.1, 2] (Linux
    /// `use_rtt_scaling` = 1).
    pub use_rtt_scaling: bool,
    /// beta = 0.5 when the maximum throughput moved by more than 20% (Linux
    /// `use_bandwidth_switch` = 1).
    pub use_bandwidth_switch: bool,
}

impl Default for HtcpConfig {
    fn default() -> Self {
        HtcpConfig { use_rtt_scaling: true, use_bandwidth_switch: true }
    }
}

impl AlgorithmConfig for HtcpConfig {}

#[derive(Clone, Debug)]
pub struct Htcp {
    use_rtt_scaling: bool,
    use_bandwidth_switch: bool,
    alpha: u32,
    beta: u32,
    modeswitch: bool,
    pkts_acked: u32,
    packetcount: u32,
    /// RTTs in jiffies (ms).
    min_rtt: u64,
    max_rtt: u64,
    last_cong: u64,
    reset_pending: bool,
    min_b: u32,
    max_b: u32,
    old_max_b: u32,
    /// last_cong, max_rtt and old_max_b before the last reduction, which an
    /// undo puts back (`htcp_reset`, `htcp_cwnd_undo`).
    undo: (u64, u64, u32),
    bi: u32,
    lasttime: u64,
}

impl Default for Htcp {
    fn default() -> Self {
        Htcp {
            use_rtt_scaling: true,
            use_bandwidth_switch: true,
            alpha: ALPHA_BASE,
            beta: BETA_MIN,
            modeswitch: false,
            pkts_acked: 1,
            packetcount: 0,
            min_rtt: 0,
            max_rtt: 0,
            last_cong: 0,
            reset_pending: false,
            min_b: 0,
            max_b: 0,
            old_max_b: 0,
            undo: (0, 0, 0),
            bi: 0,
            lasttime: 0,
        }
    }
}

fn jiffies(t: Time) -> u64 {
    t / JIFFY
}

impl Htcp {
    pub fn new(cfg: &HtcpConfig) -> Self {
        Htcp { use_rtt_scaling: cfg.use_rtt_scaling, use_bandwidth_switch: cfg.use_bandwidth_switch, ..Htcp::default() }
    }

    /// f(Delta) in Linux's integer arithmetic, then RTT scaling (`htcp_alpha_update`).
    pub fn factor(&self, delta_jiffies: u64) -> u64 {
        let mut factor = 1;
        if delta_jiffies > HZ {
            let d = delta_jiffies - HZ;
            factor = 1 + (10 * d + (d / 2) * (d / 2) / HZ) / HZ;
        }
        if self.use_rtt_scaling && self.min_rtt > 0 {
            let scale = ((HZ << 3) / (10 * self.min_rtt)).clamp(1 << 2, 10 << 3);
            factor = ((factor << 3) / scale).max(1);
        }
        factor
    }

    fn alpha_update(&mut self, now: u64) {
        let factor = self.factor(now.saturating_sub(self.last_cong));
        self.alpha = (2 * factor * (ALPHA_BASE - self.beta) as u64) as u32;
        if self.alpha == 0 {
            self.alpha = ALPHA_BASE;
        }
    }

    fn beta_update(&mut self) {
        if self.use_bandwidth_switch {
            let (max_b, old) = (self.max_b as u64, self.old_max_b as u64);
            self.old_max_b = self.max_b;
            if !(4 * old..=6 * old).contains(&(5 * max_b)) {
                self.beta = BETA_MIN;
                self.modeswitch = false;
                return;
            }
        }
        if self.modeswitch && self.min_rtt > MIN_RTT_FOR_BETA && self.max_rtt > 0 {
            self.beta = ((self.min_rtt << 7) / self.max_rtt).clamp(BETA_MIN as u64, BETA_MAX as u64) as u32;
        } else {
            self.beta = BETA_MIN;
            self.modeswitch = true;
        }
    }

    fn measure_rtt(&mut self, rtt: u64, open: bool) {
        if self.min_rtt == 0 || self.min_rtt > rtt {
            self.min_rtt = rtt;
        }
        if open {
            self.max_rtt = self.max_rtt.max(self.min_rtt);
            if self.max_rtt < rtt && rtt <= self.max_rtt + MAX_RTT_STEP {
                self.max_rtt = rtt;
            }
        }
    }

    /// Linux `measure_achieved_throughput`: packets per second over at least a
    /// window and a minimum RTT, smoothed 3/4 (Bi), with its maximum maxB.
    fn measure_throughput(&mut self, s: &CcState, acked: u32, now: u64) {
        if !matches!(s.ca_state, CaState::Open | CaState::Disorder) {
            self.packetcount = 0;
            self.lasttime = now;
            return;
        }
        self.packetcount += acked;
        let alpha_pkts = (self.alpha >> 7).max(1);
        let elapsed = now.saturating_sub(self.lasttime);
        if self.packetcount >= s.cwnd.saturating_sub(alpha_pkts) && elapsed >= self.min_rtt && self.min_rtt > 0 && elapsed > 0 {
            let cur = (self.packetcount as u64 * HZ / elapsed) as u32;
            let since_backoff = now.saturating_sub(self.last_cong) / self.min_rtt;
            if since_backoff <= 3 {
                self.min_b = cur;
                self.max_b = cur;
                self.bi = cur;
            } else {
                self.bi = ((3 * self.bi as u64 + cur as u64) / 4) as u32;
                self.max_b = self.max_b.max(self.bi);
                self.min_b = self.min_b.min(self.max_b);
            }
            self.packetcount = 0;
            self.lasttime = now;
        }
    }

    pub fn alpha_pkts(&self) -> f64 {
        self.alpha as f64 / 128.0
    }

    pub fn beta(&self) -> f64 {
        self.beta as f64 / 128.0
    }
}

impl CongestionOps for Htcp {
    fn init(&mut self, s: &mut CcState) {
        *self = Htcp { use_rtt_scaling: self.use_rtt_scaling, use_bandwidth_switch: self.use_bandwidth_switch, ..Htcp::default() };
        self.last_cong = jiffies(s.now);
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        // Linux htcp_param_update: beta, then alpha, then fade maxRTT.
        self.beta_update();
        self.alpha_update(jiffies(s.now));
        if self.min_rtt > 0 && self.max_rtt > self.min_rtt {
            self.max_rtt = self.min_rtt + (self.max_rtt - self.min_rtt) * 95 / 100;
        }
        (((s.cwnd as u64 * self.beta as u64) >> 7) as u32).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        if s.in_slow_start() {
            slow_start(s, acked);
            return;
        }
        // cwnd += alpha / cwnd per packet, counted as Linux does.
        if ((s.cwnd_cnt as u64 * self.alpha as u64) >> 7) >= s.cwnd as u64 {
            if s.cwnd < s.cwnd_clamp {
                s.cwnd += 1;
            }
            s.cwnd_cnt = 0;
            self.alpha_update(jiffies(s.now));
        } else {
            s.cwnd_cnt += self.pkts_acked;
        }
        self.pkts_acked = 1;
    }

    fn pkts_acked(&mut self, s: &mut CcState, sample: &AckSample) {
        let now = jiffies(s.now);
        if s.ca_state == CaState::Open {
            self.pkts_acked = sample.acked;
        }
        if let Some(rtt) = sample.rtt {
            self.measure_rtt(jiffies(rtt).max(1), s.ca_state == CaState::Open);
        }
        if self.use_bandwidth_switch {
            self.measure_throughput(s, sample.acked, now);
        }
    }

    fn set_state(&mut self, s: &mut CcState, state: CaState) {
        match state {
            // Delta counts from the end of the congestion event.
            CaState::Open if self.reset_pending => {
                self.last_cong = jiffies(s.now);
                self.reset_pending = false;
            }
            CaState::Cwr | CaState::Recovery | CaState::Loss => {
                self.undo = (self.last_cong, self.max_rtt, self.old_max_b);
                self.last_cong = jiffies(s.now);
                self.reset_pending = true;
            }
            _ => {}
        }
    }

    /// Linux `htcp_cwnd_undo` (2.6.22 to today): the congestion epoch, maxRTT
    /// and throughput memory from before the reduction, and the window that
    /// ssthresh came from. Linux keeps `undo_last_cong` set, so the return
    /// to Open that follows restarts the epoch all the same (`htcp_state`).
    fn undo_cwnd(&mut self, s: &CcState) -> Option<u32> {
        (self.last_cong, self.max_rtt, self.old_max_b) = self.undo;
        Some(s.cwnd.max(((s.ssthresh as u64) << 7).checked_div(self.beta as u64).unwrap_or(0) as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::harness::Harness;
    use crate::time::{MS, SEC};

    fn alpha_at(delta_s: f64, beta: u32, min_rtt_ms: u64, scaling: bool) -> f64 {
        let mut h = Htcp { use_rtt_scaling: scaling, beta, min_rtt: min_rtt_ms, ..Htcp::default() };
        h.last_cong = 0;
        h.alpha_update((delta_s * 1000.0) as u64);
        h.alpha_pkts()
    }

    #[test]
    fn alpha_of_delta_follows_linux() {
        // beta = 0.5: alpha = f(Delta). f(1 s) = 1; f(2 s) = 1 + (10*1000 + 500*500/1000)/1000
        // = 1 + 10250/1000 = 11 (integer); f(5 s) = 1 + (40000 + 4000)/1000 = 45.
        assert_eq!(alpha_at(1.0, BETA_MIN, 100, false), 1.0);
        assert_eq!(alpha_at(2.0, BETA_MIN, 100, false), 11.0);
        assert_eq!(alpha_at(5.0, BETA_MIN, 100, false), 45.0);
        // beta = 0.8 (102/128): alpha = 2 * f * (128 - 102) / 128 = 0.40625 f.
        assert_eq!(alpha_at(5.0, BETA_MAX, 100, false), 2.0 * 45.0 * 26.0 / 128.0);
    }

    #[test]
    fn rtt_scaling_multiplies_by_min_rtt_over_100ms_clamped() {
        // minRTT 100 ms: scale 8 -> factor unchanged; 50 ms: scale 16 -> f/2 (integer);
        // 400 ms: scale 2 clamped to 4 -> 2f; 5 ms: scale 160 clamped to 80 -> f/10.
        assert_eq!(alpha_at(5.0, BETA_MIN, 100, true), 45.0);
        assert_eq!(alpha_at(5.0, BETA_MIN, 50, true), 22.0);
        assert_eq!(alpha_at(5.0, BETA_MIN, 400, true), 90.0);
        assert_eq!(alpha_at(5.0, BETA_MIN, 5, true), 4.0);
    }

    #[test]
    fn beta_is_rtt_ratio_clamped_after_the_first_event() {
        for (min, max, want) in [(30, 100, 64), (90, 100, 102), (60, 100, 76)] {
            let mut h = Htcp { min_rtt: min, max_rtt: max, modeswitch: true, use_bandwidth_switch: false, ..Htcp::default() };
            h.beta_update();
            assert_eq!(h.beta, want, "min {min} max {max}");
        }
        let mut first = Htcp { min_rtt: 90, max_rtt: 100, use_bandwidth_switch: false, ..Htcp::default() };
        first.beta_update();
        assert_eq!((first.beta, first.modeswitch), (BETA_MIN, true), "0.5 until the second event");
    }

    #[test]
    fn bandwidth_switch_falls_back_to_half() {
        let mut h = Htcp { min_rtt: 90, max_rtt: 100, modeswitch: true, max_b: 1300, old_max_b: 1000, ..Htcp::default() };
        h.beta_update(); // 5 * 1300 = 6500 > 6 * 1000: throughput moved > 20%
        assert_eq!(h.beta, BETA_MIN);
        let mut steady = Htcp { min_rtt: 90, max_rtt: 100, modeswitch: true, max_b: 1100, old_max_b: 1000, ..Htcp::default() };
        steady.beta_update();
        assert_eq!(steady.beta, 102);
    }

    #[test]
    fn reno_like_within_a_second_of_a_loss() {
        // alpha = 2 (1 - 0.5) * 1 = 1 packet per RTT for Delta <= 1 s.
        let mut h = Harness::new(Htcp { use_rtt_scaling: false, ..Htcp::default() }, 100);
        h.cc.init(&mut h.s);
        h.s.ssthresh = 10;
        h.rtt = 100 * MS;
        for _ in 0..5 {
            h.ack_round_in_pairs();
        }
        // Linux adds an ACK's packets only when it does not trigger the +1, so with
        // 2-packet ACKs each +1 takes 51 ACKs: 250 ACKs give +4 (about 1 per RTT).
        assert_eq!(h.s.cwnd, 104);
        // After 2 s without loss alpha reaches 11 per RTT.
        h.advance(2 * SEC);
        let before = h.s.cwnd;
        h.ack_round();
        assert!(h.s.cwnd - before >= 10, "growth {}", h.s.cwnd - before);
    }
}
