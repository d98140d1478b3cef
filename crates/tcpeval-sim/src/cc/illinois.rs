//! TCP-Illinois (Liu, Basar & Srikant 2006/2008) as Linux ships it
//! (`net/ipv4/tcp_illinois.c`): loss-based AIMD whose increase alpha and
//! decrease beta follow the average queueing delay measured once per RTT. With
//! dm the largest queueing delay seen and da the round's average:
//!     alpha = alpha_max (10) while da <= dm/100, falling as
//!             k1 / (k2 + da) to alpha_min (0.3) at da = dm;
//!     beta = 1/8 while da <= dm/10, rising linearly to 1/2 at da >= 0.8 dm.
//! Below 15 packets it is Reno (alpha 1, beta 1/2). After delay has been high,
//! alpha returns to its maximum only after theta = 5 low-delay rounds.
//!
//! `IllinoisVersion::Linux2622` is the module as Linux 2.6.22 shipped it
//! (crate::stack): its `tcp_illinois_ssthresh` returned `cwnd * beta` (keeping
//! the fraction beta) where today's returns `cwnd - cwnd * beta` (removing it),
//! so a loss at low delay (beta 1/8) cut the window to 1/8, not 7/8.

use super::params::{self, AlgorithmConfig};
use super::{slow_start, AckSample, CaState, CcError, CcState, CongestionOps};
use crate::time::US;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Fixed point as Linux: alpha << 7, beta << 6.
const ALPHA_SHIFT: u32 = 7;
const ALPHA_SCALE: u64 = 1 << ALPHA_SHIFT;
const BETA_SHIFT: u32 = 6;
const BETA_SCALE: u64 = 1 << BETA_SHIFT;
/// Linux `ALPHA_MIN` ((3 * 128) / 10 = 38, i.e. 0.297) and `ALPHA_MAX` (10.0):
/// the additive increase per RTT at the largest and smallest queueing delay.
pub const ALPHA_MIN: f64 = 0.3;
pub const ALPHA_MAX: f64 = 10.0;
/// Linux `ALPHA_BASE` (1.0): Reno's increase, below win_thresh and after a timeout.
const ALPHA_BASE: u64 = ALPHA_SCALE;
/// Linux `BETA_MIN` (1/8) and `BETA_MAX` (1/2): the decrease fraction at small
/// and large queueing delay; `BETA_BASE` = BETA_MAX.
pub const BETA_MIN: f64 = 0.125;
pub const BETA_MAX: f64 = 0.5;
/// Linux module parameters `win_thresh` (the paper uses 10) and `theta`.
pub const WIN_THRESH: u32 = 15;
pub const THETA: u32 = 5;

/// The smallest alpha the fixed point holds (1/128).
const ALPHA_LOWEST: f64 = 1.0 / ALPHA_SCALE as f64;

/// Illinois's parameters (`params`): Linux's constants and module parameters
/// (net/ipv4/tcp_illinois.c). Alpha and beta are given as numbers and kept in
/// Linux's fixed point (alpha << 7, beta << 6, truncated).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct IllinoisConfig {
    /// Increase per RTT at the largest queueing delay (Linux `ALPHA_MIN` =
    /// 3 * 128 / 10, i.e. 0.297 after truncation).
    #[schemars(range(min = "ALPHA_LOWEST", max = 100))]
    pub alpha_min: f64,
    /// Increase per RTT at small queueing delay (Linux `ALPHA_MAX` = 10).
    #[schemars(range(min = "ALPHA_LOWEST", max = 100))]
    pub alpha_max: f64,
    /// Decrease at small queueing delay (Linux `BETA_MIN` = 1/8).
    #[schemars(range(min = 0, max = 1))]
    pub beta_min: f64,
    /// Decrease at large queueing delay (Linux `BETA_MAX` = 1/2).
    #[schemars(range(min = 0, max = 1))]
    pub beta_max: f64,
    /// Below this window Illinois is Reno (module parameter `win_thresh` = 15;
    /// the paper uses 10).
    pub win_thresh: u32,
    /// Low-delay rounds before alpha returns to its maximum (module parameter
    /// `theta` = 5).
    pub theta: u32,
}

impl Default for IllinoisConfig {
    fn default() -> Self {
        IllinoisConfig { alpha_min: ALPHA_MIN, alpha_max: ALPHA_MAX, beta_min: BETA_MIN, beta_max: BETA_MAX, win_thresh: WIN_THRESH, theta: THETA }
    }
}

impl IllinoisConfig {
    /// Linux's fixed point: (alpha_min, alpha_max, beta_min, beta_max).
    fn fixed_point(&self) -> (u64, u64, u64, u64) {
        let alpha = |a: f64| (a * ALPHA_SCALE as f64) as u64;
        let beta = |b: f64| (b * BETA_SCALE as f64) as u64;
        (alpha(self.alpha_min), alpha(self.alpha_max), beta(self.beta_min), beta(self.beta_max))
    }
}

impl AlgorithmConfig for IllinoisConfig {
    /// The bounds are compared in fixed point, as the algorithm uses them.
    fn check(&self, _alg: &str) -> Result<(), CcError> {
        let (alpha_min, alpha_max, beta_min, beta_max) = self.fixed_point();
        if alpha_min > alpha_max {
            return Err(params::error("alpha_min", "must not exceed params.alpha_max".into()));
        }
        if beta_min > beta_max {
            return Err(params::error("beta_min", "must not exceed params.beta_max".into()));
        }
        Ok(())
    }
}

/// The Illinois code of a stack's era (crate::stack).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IllinoisVersion {
    /// Today's decrease: ssthresh = cwnd - cwnd * beta.
    #[default]
    Current,
    /// Linux 2.6.22's decrease: ssthresh = cwnd * beta (`tcp_illinois_ssthresh`
    /// of net/ipv4/tcp_illinois.c at 2.6.22, as ns-2.35's TCP-Linux copies it
    /// from 2.6.22.6 in tcp/linux/src/tcp_illinois.c).
    Linux2622,
}

#[derive(Clone, Debug)]
pub struct Illinois {
    version: IllinoisVersion,
    win_thresh: u32,
    theta: u32,
    /// Fixed-point bounds (alpha << 7, beta << 6).
    alpha_min: u64,
    alpha_max: u64,
    beta_min: u64,
    beta_max: u64,
    /// Linux `RTT_MAX` (U32_MAX / ALPHA_MAX us, about 3.3 s): longer samples are
    /// capped so the alpha arithmetic stays within 32 bits.
    rtt_max_us: u64,
    sum_rtt: u64,
    cnt_rtt: u64,
    base_rtt: u64,
    max_rtt: u64,
    end_seq: u64,
    alpha: u64,
    beta: u64,
    acked: u32,
    rtt_above: bool,
    rtt_low: u32,
}

impl Illinois {
    pub fn new(cfg: &IllinoisConfig) -> Self {
        let (alpha_min, alpha_max, beta_min, beta_max) = cfg.fixed_point();
        Illinois {
            version: IllinoisVersion::Current,
            win_thresh: cfg.win_thresh,
            theta: cfg.theta,
            alpha_min,
            alpha_max,
            beta_min,
            beta_max,
            rtt_max_us: u32::MAX as u64 / alpha_max,
            sum_rtt: 0,
            cnt_rtt: 0,
            base_rtt: u64::MAX,
            max_rtt: 0,
            end_seq: 0,
            alpha: alpha_max,
            beta: beta_max,
            acked: 0,
            rtt_above: false,
            rtt_low: 0,
        }
    }

    /// Run the code of an earlier version (crate::stack).
    pub fn set_version(&mut self, version: IllinoisVersion) {
        self.version = version;
    }

    pub fn alpha(&self) -> f64 {
        self.alpha as f64 / ALPHA_SCALE as f64
    }

    pub fn beta(&self) -> f64 {
        self.beta as f64 / BETA_SCALE as f64
    }

    /// The delays alpha and beta are chosen from (microseconds): the largest
    /// queueing delay seen (max RTT - base RTT) and that of the current round so
    /// far (its average RTT - base RTT).
    pub fn queueing_delays_us(&self) -> (u64, Option<u64>) {
        let dm = self.max_rtt.saturating_sub(self.base_rtt);
        (dm, self.sum_rtt.checked_div(self.cnt_rtt).map(|a| a.saturating_sub(self.base_rtt)))
    }

    fn rtt_reset(&mut self, s: &CcState) {
        self.end_seq = s.snd_nxt;
        self.cnt_rtt = 0;
        self.sum_rtt = 0;
    }

    /// Linux `alpha()`: delays in microseconds.
    fn alpha_for(&mut self, da: u64, dm: u64) -> u64 {
        let d1 = dm / 100;
        if da <= d1 {
            if !self.rtt_above {
                return self.alpha_max;
            }
            self.rtt_low += 1;
            if self.rtt_low < self.theta {
                return self.alpha;
            }
            self.rtt_low = 0;
            self.rtt_above = false;
            return self.alpha_max;
        }
        self.rtt_above = true;
        let (dm, da) = (dm - d1, da - d1);
        (dm * self.alpha_max) / (dm + da * (self.alpha_max - self.alpha_min) / self.alpha_min)
    }

    /// Linux `beta()`.
    fn beta_for(&self, da: u64, dm: u64) -> u64 {
        let (bmin, bmax) = (self.beta_min, self.beta_max);
        let d2 = dm / 10;
        if da <= d2 {
            return bmin;
        }
        let d3 = 8 * dm / 10;
        if da >= d3 || d3 <= d2 {
            return bmax;
        }
        (bmin * d3 + (bmax - bmin) * da - bmax * d2) / (d3 - d2)
    }

    fn update_params(&mut self, s: &CcState) {
        if s.cwnd < self.win_thresh {
            self.alpha = ALPHA_BASE;
            self.beta = self.beta_max;
        } else if let Some(avg) = self.sum_rtt.checked_div(self.cnt_rtt) {
            let dm = self.max_rtt.saturating_sub(self.base_rtt);
            let da = avg.saturating_sub(self.base_rtt);
            self.alpha = self.alpha_for(da, dm);
            self.beta = self.beta_for(da, dm);
        }
        self.rtt_reset(s);
    }
}

impl CongestionOps for Illinois {
    /// At 2.6.22 `.min_cwnd = tcp_reno_min_cwnd` (net/ipv4/tcp_illinois.c at 2.6.22):
    /// rate-halving may go down to half of ssthresh.
    fn min_cwnd(&mut self, s: &CcState) -> u32 {
        super::reno_min_cwnd(s)
    }

    fn init(&mut self, s: &mut CcState) {
        self.rtt_reset(s);
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        let decrease = ((s.cwnd as u64 * self.beta) >> BETA_SHIFT) as u32;
        match self.version {
            IllinoisVersion::Current => (s.cwnd - decrease).max(2),
            IllinoisVersion::Linux2622 => decrease.max(2),
        }
    }

    /// The round's update of alpha and beta runs whether or not the window is
    /// in use; only the growth waits for it (tcp_illinois.c calls
    /// `update_params` before its `tcp_is_cwnd_limited` test, at 2.6.22 as
    /// today).
    fn waits_for_window_use(&self, _s: &CcState) -> bool {
        false
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        if s.snd_una > self.end_seq {
            self.update_params(s);
        }
        if !s.cwnd_limited {
            return;
        }
        if s.in_slow_start() {
            slow_start(s, acked);
            return;
        }
        s.cwnd_cnt += self.acked;
        self.acked = 1;
        let delta = ((s.cwnd_cnt as u64 * self.alpha) >> ALPHA_SHIFT) as u32;
        if delta >= s.cwnd {
            s.cwnd = (s.cwnd + delta / s.cwnd).min(s.cwnd_clamp);
            s.cwnd_cnt = 0;
        }
    }

    fn pkts_acked(&mut self, _s: &mut CcState, sample: &AckSample) {
        self.acked = sample.acked;
        let Some(rtt) = sample.rtt else { return };
        let rtt = (rtt / US).min(self.rtt_max_us);
        self.base_rtt = self.base_rtt.min(rtt);
        self.max_rtt = self.max_rtt.max(rtt);
        self.cnt_rtt += 1;
        self.sum_rtt += rtt;
    }

    fn set_state(&mut self, s: &mut CcState, state: CaState) {
        if state == CaState::Loss {
            self.alpha = ALPHA_BASE;
            self.beta = self.beta_max;
            self.rtt_low = 0;
            self.rtt_above = false;
            self.rtt_reset(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;
    use crate::cc::harness::Harness;
    use crate::time::MS;

    fn ill() -> Illinois {
        crate::cc::params::parse_map(&Map::new()).map(|c| Illinois::new(&c)).unwrap()
    }

    /// 100 ms of queueing delay, in microseconds.
    const DM: u64 = 100_000;

    #[test]
    fn fixed_point_constants_match_linux() {
        let c = ill();
        // ALPHA_MIN = (3 * 128) / 10 = 38, ALPHA_MAX = 1280, BETA 8..32 (<< 6),
        // RTT_MAX = U32_MAX / 1280 us.
        assert_eq!((c.alpha_min, c.alpha_max, c.beta_min, c.beta_max), (38, 1280, 8, 32));
        assert_eq!(c.rtt_max_us, 3_355_443);
    }

    #[test]
    fn alpha_falls_from_ten_to_point_three_as_delay_rises() {
        let mut c = ill();
        assert_eq!(c.alpha_for(0, DM), 1280); // no queueing yet: 10
        // d1 = 1000 us; dm' = 99000; at da = dm: 99000 * 1280 /
        // (99000 + 99000 * 1242 / 38 = 3235736) = 126720000 / 3334736 = 38 (0.3).
        assert_eq!(c.alpha_for(DM, DM), 38);
        // At da = dm/2: da' = 49000, 49000 * 1242 / 38 = 1601526:
        // 126720000 / 1700526 = 74 (0.58).
        assert_eq!(c.alpha_for(DM / 2, DM), 74);
    }

    #[test]
    fn alpha_recovers_only_after_theta_low_delay_rounds() {
        let mut c = ill();
        c.alpha = c.alpha_for(DM / 2, DM); // delay was high: 74
        for _ in 0..4 {
            c.alpha = c.alpha_for(0, DM);
            assert_eq!(c.alpha, 74);
        }
        c.alpha = c.alpha_for(0, DM); // the 5th (theta) low-delay round
        assert_eq!(c.alpha, 1280);
    }

    #[test]
    fn beta_rises_from_one_eighth_to_one_half() {
        let c = ill();
        assert_eq!(c.beta_for(DM / 20, DM), 8); // below d2 = dm/10: 1/8
        assert_eq!(c.beta_for(9 * DM / 10, DM), 32); // above d3 = 0.8 dm: 1/2
        // Between: (8 * 80000 + 24 * 45000 - 32 * 10000) / 70000 = 20 (0.3125).
        assert_eq!(c.beta_for(45 * DM / 100, DM), 20);
    }

    #[test]
    fn increase_is_alpha_per_rtt_and_decrease_beta() {
        // No queueing (every RTT equal): the first ACK of the round sets alpha =
        // 10, beta = 1/8. cwnd c grows once 10 cnt >= c: +1 after 10 ACKs at 100,
        // then after 11 at 101..110: 10 + 8 * 11 = 98 ACKs reach 109.
        let mut h = Harness::new(ill(), 100);
        h.s.ssthresh = 10;
        h.ack_round();
        assert_eq!((h.s.cwnd, h.cc.alpha(), h.cc.beta()), (109, 10.0, 0.125));
        // ssthresh = 109 - (109 * 8 >> 6) = 109 - 13 = 96.
        assert_eq!(h.lose(), 96);
    }

    #[test]
    fn a_round_with_the_window_unused_updates_alpha_but_does_not_grow() {
        // tcp_illinois.c updates alpha and beta at the end of each round before
        // its tcp_is_cwnd_limited test. One round at the base RTT, then rounds
        // with 50 ms of queueing while the window is unused: alpha falls from
        // 10 (the delay is the maximum seen) and cwnd stays.
        let mut h = Harness::new(ill(), 100);
        h.s.ssthresh = 10;
        h.ack_round();
        let cwnd = h.s.cwnd;
        h.s.cwnd_limited = false;
        h.rtt = 150 * MS;
        h.ack_round();
        h.ack_round();
        assert_eq!(h.s.cwnd, cwnd);
        assert!(h.cc.alpha() < 1.0, "alpha {}", h.cc.alpha());
    }

    #[test]
    fn linux_2622_keeps_beta_of_the_window_instead_of_removing_it() {
        // As increase_is_alpha_per_rtt_and_decrease_beta: cwnd 109, beta 1/8.
        // 2.6.22: ssthresh = 109 * 8 >> 6 = 13 (today's: 96); at beta 1/2
        // (below win_thresh) both give half.
        let mut c = ill();
        c.set_version(IllinoisVersion::Linux2622);
        let mut h = Harness::new(c, 100);
        h.s.ssthresh = 10;
        h.ack_round();
        assert_eq!((h.s.cwnd, h.cc.beta()), (109, 0.125));
        assert_eq!(h.lose(), 13);
        let mut c = ill();
        c.set_version(IllinoisVersion::Linux2622);
        let mut h = Harness::new(c, 10);
        h.s.ssthresh = 2;
        h.ack_round();
        assert_eq!(h.lose(), 5); // 11 * 32 >> 6 = 5 (today's 11 - 5 = 6)
    }

    #[test]
    fn reno_below_win_thresh_and_after_a_timeout() {
        // cwnd 10 < 15: alpha 1, beta 1/2: +1 per window, ssthresh 11 - 5 = 6.
        let mut h = Harness::new(ill(), 10);
        h.s.ssthresh = 2;
        h.ack_round();
        assert_eq!((h.s.cwnd, h.cc.alpha(), h.cc.beta()), (11, 1.0, 0.5));
        assert_eq!(h.lose(), 6);
        let mut h = Harness::new(ill(), 100);
        h.s.ssthresh = 10;
        h.ack_round(); // alpha 10, beta 1/8
        h.timeout();
        assert_eq!((h.cc.alpha(), h.cc.beta()), (1.0, 0.5));
    }

    #[test]
    fn ranges_are_parameters() {
        let mut p = Map::new();
        p.insert("alpha_max".into(), 5.0.into());
        p.insert("beta_min".into(), 0.25.into());
        let c = crate::cc::params::parse_map(&p).map(|c| Illinois::new(&c)).unwrap();
        assert_eq!((c.alpha_max, c.beta_min), (640, 16));
        p.insert("beta_max".into(), 0.2.into());
        assert!(crate::cc::params::parse_map(&p).map(|c| Illinois::new(&c)).unwrap_err().contains("params.beta_min"));
        let mut p = Map::new();
        p.insert("gamma".into(), 1.into());
        assert!(crate::cc::params::parse_map(&p).map(|c| Illinois::new(&c)).unwrap_err().contains("alpha_min"));
    }
}
