//! TCP-Illinois (Liu, Basar & Srikant 2006/2008) as Linux ships it
//! (`net/ipv4/tcp_illinois.c`): loss-based AIMD whose increase alpha and
//! decrease beta follow the average queueing delay measured once per RTT. With
//! dm the largest queueing delay seen and da the round's average:
//!     alpha = alpha_max (10) while da <= dm/100, falling as
//!             k1 / (k2 + da) to alpha_min (0.3) at da = dm;
//!     beta = 1/8 while da <= dm/10, rising linearly to 1/2 at da >= 0.8 dm.
//! Below 15 packets it is Reno (alpha 1, beta 1/2). After delay has been high,
//! alpha returns to its maximum only after theta = 5 low-delay rounds.

use super::params::Params;
use super::{slow_start, AckSample, CaState, CcState, CongestionOps};
use crate::time::US;
use serde_json::{Map, Value};

/// Fixed point as Linux: alpha << 7, beta << 6.
const ALPHA_SHIFT: u32 = 7;
const ALPHA_SCALE: u64 = 1 << ALPHA_SHIFT;
const ALPHA_MIN: u64 = 3 * ALPHA_SCALE / 10;
const ALPHA_MAX: u64 = 10 * ALPHA_SCALE;
const ALPHA_BASE: u64 = ALPHA_SCALE;
const BETA_SHIFT: u32 = 6;
const BETA_SCALE: u64 = 1 << BETA_SHIFT;
const BETA_MIN: u64 = BETA_SCALE / 8;
const BETA_MAX: u64 = BETA_SCALE / 2;
const BETA_BASE: u64 = BETA_MAX;
/// Linux RTT_MAX: samples are capped near 3.3 s.
const RTT_MAX_US: u64 = u32::MAX as u64 / ALPHA_MAX;
/// Linux module parameters.
const WIN_THRESH: u32 = 15;
const THETA: u32 = 5;

#[derive(Clone, Debug)]
pub struct Illinois {
    win_thresh: u32,
    theta: u32,
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
    pub fn from_params(map: &Map<String, Value>) -> Result<Self, String> {
        let p = Params::new("illinois", map, &["win_thresh", "theta"])?;
        Ok(Illinois {
            win_thresh: p.u32("win_thresh", WIN_THRESH)?,
            theta: p.u32("theta", THETA)?,
            sum_rtt: 0,
            cnt_rtt: 0,
            base_rtt: u64::MAX,
            max_rtt: 0,
            end_seq: 0,
            alpha: ALPHA_MAX,
            beta: BETA_BASE,
            acked: 0,
            rtt_above: false,
            rtt_low: 0,
        })
    }

    pub fn alpha(&self) -> f64 {
        self.alpha as f64 / ALPHA_SCALE as f64
    }

    pub fn beta(&self) -> f64 {
        self.beta as f64 / BETA_SCALE as f64
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
                return ALPHA_MAX;
            }
            self.rtt_low += 1;
            if self.rtt_low < self.theta {
                return self.alpha;
            }
            self.rtt_low = 0;
            self.rtt_above = false;
            return ALPHA_MAX;
        }
        self.rtt_above = true;
        let (dm, da) = (dm - d1, da - d1);
        (dm * ALPHA_MAX) / (dm + da * (ALPHA_MAX - ALPHA_MIN) / ALPHA_MIN)
    }

    /// Linux `beta()`.
    fn beta_for(da: u64, dm: u64) -> u64 {
        let d2 = dm / 10;
        if da <= d2 {
            return BETA_MIN;
        }
        let d3 = 8 * dm / 10;
        if da >= d3 || d3 <= d2 {
            return BETA_MAX;
        }
        (BETA_MIN * d3 - BETA_MAX * d2 + (BETA_MAX - BETA_MIN) * da) / (d3 - d2)
    }

    fn update_params(&mut self, s: &CcState) {
        if s.cwnd < self.win_thresh {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_BASE;
        } else if let Some(avg) = self.sum_rtt.checked_div(self.cnt_rtt) {
            let dm = self.max_rtt.saturating_sub(self.base_rtt);
            let da = avg.saturating_sub(self.base_rtt);
            self.alpha = self.alpha_for(da, dm);
            self.beta = Self::beta_for(da, dm);
        }
        self.rtt_reset(s);
    }
}

impl CongestionOps for Illinois {
    fn init(&mut self, s: &mut CcState) {
        self.rtt_reset(s);
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        (s.cwnd - ((s.cwnd as u64 * self.beta) >> BETA_SHIFT) as u32).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        if s.snd_una > self.end_seq {
            self.update_params(s);
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
        let rtt = (rtt / US).min(RTT_MAX_US);
        self.base_rtt = self.base_rtt.min(rtt);
        self.max_rtt = self.max_rtt.max(rtt);
        self.cnt_rtt += 1;
        self.sum_rtt += rtt;
    }

    fn set_state(&mut self, s: &mut CcState, state: CaState) {
        if state == CaState::Loss {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_BASE;
            self.rtt_low = 0;
            self.rtt_above = false;
            self.rtt_reset(s);
        }
    }
}

/// A delay in microseconds, for tests.
#[cfg(test)]
fn us(t: crate::time::Time) -> u64 {
    t / US
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    fn ill() -> Illinois {
        Illinois::from_params(&Map::new()).unwrap()
    }

    #[test]
    fn alpha_falls_from_ten_to_point_three_as_delay_rises() {
        let dm = us(100 * MS);
        let mut c = ill();
        assert_eq!(c.alpha_for(0, dm), ALPHA_MAX); // no queueing yet: 10
        // At da = dm: alpha = AMAX / (1 + (AMAX - AMIN)/AMIN) = AMIN (0.3).
        assert!(c.alpha_for(dm, dm).abs_diff(ALPHA_MIN) <= 1);
        let mid = c.alpha_for(dm / 2, dm);
        assert!(mid > ALPHA_MIN && mid < ALPHA_MAX / 10, "alpha at half the delay {mid}");
    }

    #[test]
    fn alpha_recovers_only_after_theta_low_delay_rounds() {
        let dm = us(100 * MS);
        let mut c = ill();
        c.alpha = c.alpha_for(dm / 2, dm); // delay was high
        let high = c.alpha;
        for _ in 0..4 {
            c.alpha = c.alpha_for(0, dm);
            assert_eq!(c.alpha, high);
        }
        c.alpha = c.alpha_for(0, dm);
        assert_eq!(c.alpha, ALPHA_MAX);
    }

    #[test]
    fn beta_rises_from_one_eighth_to_one_half() {
        let dm = us(100 * MS);
        assert_eq!(Illinois::beta_for(dm / 20, dm), BETA_MIN);
        assert_eq!(Illinois::beta_for(9 * dm / 10, dm), BETA_MAX);
        // Halfway between d2 = dm/10 and d3 = 0.8 dm: (8 + 32) / 2 = 20, i.e. 0.3125.
        assert_eq!(Illinois::beta_for(45 * dm / 100, dm), (BETA_MIN + BETA_MAX) / 2);
    }
}
