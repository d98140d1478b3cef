//! Compound TCP (Tan, Song, Zhang & Sridharan, INFOCOM 2006;
//! draft-sridharan-tcpm-ctcp-02). The send window is the sum of a loss-based
//! window (Reno: +1 per RTT, halved on loss) and a delay-based window dwnd that
//! grows like a high-speed protocol while the path is not queueing and shrinks
//! once it is. Once per RTT, with diff = win (RTT - baseRTT) / RTT the packets
//! queued (RTT the minimum of the round):
//!     diff < gamma:  dwnd += max(alpha win^k - 1, 0)
//!     diff >= gamma: dwnd = max(dwnd - zeta diff, 0)
//! On a loss: win' = win (1 - beta), the loss window halves and
//! dwnd = max(win (1 - beta) - cwnd / 2, 0). A timeout clears dwnd.
//!
//! The draft's constants: alpha 1/8, beta 1/2, k 0.75, zeta 1, gamma 30 packets
//! (auto-tuned between 5 and 30 in Windows; fixed here, a parameter). The delay
//! window is used only above a low window of 41 packets (the reference digest
//! marks it UNVERIFIED: from the Windows implementation notes; a parameter).

use super::params::AlgorithmConfig;
use super::{slow_start, AckSample, CaEvent, CaState, CcState, CongestionOps};
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const ALPHA: f64 = 0.125;
pub const BETA: f64 = 0.5;
pub const K: f64 = 0.75;
pub const ZETA: f64 = 1.0;
pub const GAMMA: f64 = 30.0;
pub const LOW_WINDOW: f64 = 41.0;

/// Compound TCP's parameters (`params`), defaults from
/// draft-sridharan-tcpm-ctcp-02 section 3 unless noted.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CompoundConfig {
    /// The delay window's increase alpha win^k per RTT (draft: 1/8).
    #[schemars(range(min = 0, max = 10))]
    pub alpha: f64,
    /// The multiplicative decrease on loss (draft: 1/2).
    #[schemars(range(min = 0.01, max = 0.99))]
    pub beta: f64,
    /// The exponent of the delay window's increase (draft: 0.75, HighSpeed-like).
    #[schemars(range(min = 0, max = 2))]
    pub k: f64,
    /// The delay window's decrease per packet queued (draft: 1).
    #[schemars(range(min = 0, max = 100))]
    pub zeta: f64,
    /// Packets queued above which the delay window shrinks (draft: 30; Windows
    /// auto-tunes it between 5 and 30, not modelled).
    #[schemars(range(min = 0, max = 1e6))]
    pub gamma: f64,
    /// The delay window is used only above this window (41 packets; the
    /// reference digest marks it UNVERIFIED, from Windows implementation notes).
    #[schemars(range(min = 0, max = 1e9))]
    pub low_window: f64,
}

impl Default for CompoundConfig {
    fn default() -> Self {
        CompoundConfig { alpha: ALPHA, beta: BETA, k: K, zeta: ZETA, gamma: GAMMA, low_window: LOW_WINDOW }
    }
}

impl AlgorithmConfig for CompoundConfig {}

#[derive(Clone, Debug)]
pub struct Compound {
    alpha: f64,
    beta: f64,
    k: f64,
    zeta: f64,
    gamma: f64,
    low_window: f64,
    /// Loss window and delay window, in packets (fractional).
    lwnd: f64,
    dwnd: f64,
    base_rtt: Time,
    round_min_rtt: Time,
    round_end: u64,
}

impl Compound {
    pub fn new(cfg: &CompoundConfig) -> Self {
        Compound {
            alpha: cfg.alpha,
            beta: cfg.beta,
            k: cfg.k,
            zeta: cfg.zeta,
            gamma: cfg.gamma,
            low_window: cfg.low_window,
            lwnd: 0.0,
            dwnd: 0.0,
            base_rtt: Time::MAX,
            round_min_rtt: Time::MAX,
            round_end: 0,
        }
    }

    pub fn loss_window(&self) -> f64 {
        self.lwnd
    }

    pub fn delay_window(&self) -> f64 {
        self.dwnd
    }

    fn apply(&self, s: &mut CcState) {
        s.cwnd = ((self.lwnd + self.dwnd) as u32).clamp(1, s.cwnd_clamp);
    }

    /// The once-per-RTT delay-window update.
    pub fn update_dwnd(&mut self, win: f64, rtt: Time) {
        if win < self.low_window || self.base_rtt == Time::MAX {
            self.dwnd = 0.0;
            return;
        }
        let diff = win * rtt.saturating_sub(self.base_rtt) as f64 / rtt.max(1) as f64;
        if diff < self.gamma {
            self.dwnd += (self.alpha * win.powf(self.k) - 1.0).max(0.0);
        } else {
            self.dwnd = (self.dwnd - self.zeta * diff).max(0.0);
        }
    }
}

impl CongestionOps for Compound {
    /// `.min_cwnd = tcp_reno_min_cwnd` in the 2.6 Compound module (ns-2.35's
    /// tcp/linux/src/tcp_compound.c): rate-halving may go down to half of ssthresh.
    fn min_cwnd(&mut self, s: &CcState) -> u32 {
        super::reno_min_cwnd(s)
    }

    fn init(&mut self, s: &mut CcState) {
        self.lwnd = s.cwnd as f64;
        self.dwnd = 0.0;
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        let win = s.cwnd as f64;
        self.lwnd = (self.lwnd / 2.0).max(1.0);
        self.dwnd = (win * (1.0 - self.beta) - self.lwnd).max(0.0);
        ((win * (1.0 - self.beta)) as u32).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        if s.in_slow_start() {
            slow_start(s, acked);
            self.lwnd = s.cwnd as f64 - self.dwnd;
            return;
        }
        // Loss window: +1 per window of data (1/win per packet).
        self.lwnd += acked as f64 / s.cwnd.max(1) as f64;
        if s.snd_una > self.round_end && self.round_min_rtt != Time::MAX {
            self.update_dwnd(s.cwnd as f64, self.round_min_rtt);
            self.round_min_rtt = Time::MAX;
            self.round_end = s.snd_nxt;
        }
        self.apply(s);
    }

    fn pkts_acked(&mut self, _s: &mut CcState, sample: &AckSample) {
        if let Some(rtt) = sample.rtt {
            self.base_rtt = self.base_rtt.min(rtt);
            self.round_min_rtt = self.round_min_rtt.min(rtt);
        }
    }

    fn set_state(&mut self, s: &mut CcState, state: CaState) {
        if state == CaState::Loss {
            self.lwnd = 1.0;
            self.dwnd = 0.0;
            s.cwnd_cnt = 0;
        }
    }

    fn cwnd_event(&mut self, s: &mut CcState, event: CaEvent) {
        // Recovery set cwnd = ssthresh = win (1 - beta): keep the split.
        if event == CaEvent::CompleteCwr {
            self.dwnd = (s.cwnd as f64 - self.lwnd).max(0.0);
            self.lwnd = s.cwnd as f64 - self.dwnd;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;
    use crate::cc::harness::Harness;
    use crate::time::MS;

    fn ctcp() -> Compound {
        crate::cc::params::parse_map(&Map::new()).map(|c| Compound::new(&c)).unwrap()
    }

    #[test]
    fn delay_window_grows_without_queueing_and_shrinks_beyond_gamma() {
        let mut c = ctcp();
        c.base_rtt = 100 * MS;
        // win 1000, no queueing: dwnd += 0.125 * 1000^0.75 - 1 = 22.72 - 1 = 21.2
        c.update_dwnd(1000.0, 100 * MS);
        assert!((c.delay_window() - (0.125 * 1000f64.powf(0.75) - 1.0)).abs() < 1e-9);
        // diff = 1000 * 10 / 110 = 90.9 packets >= gamma: dwnd -= 90.9, floored at 0.
        c.dwnd = 200.0;
        c.update_dwnd(1000.0, 110 * MS);
        assert!((c.delay_window() - (200.0 - 1000.0 * 10.0 / 110.0)).abs() < 1e-9);
        c.update_dwnd(1000.0, 110 * MS);
        c.update_dwnd(1000.0, 110 * MS);
        assert_eq!(c.delay_window(), 0.0);
    }

    #[test]
    fn below_the_low_window_it_is_reno() {
        let mut c = ctcp();
        c.base_rtt = 100 * MS;
        c.dwnd = 5.0;
        c.update_dwnd(30.0, 100 * MS);
        assert_eq!(c.delay_window(), 0.0);
        let mut h = Harness::new(ctcp(), 30);
        h.s.ssthresh = 10;
        h.ack_round();
        assert_eq!(h.s.cwnd, 31);
    }

    #[test]
    fn loss_halves_the_total_window_and_splits_it() {
        let mut h = Harness::new(ctcp(), 100);
        h.cc.lwnd = 60.0;
        h.cc.dwnd = 40.0;
        // win 100: ssthresh = 50; loss window 60 -> 30; dwnd = 50 - 30 = 20.
        assert_eq!(h.lose(), 50);
        assert_eq!((h.cc.loss_window(), h.cc.delay_window()), (30.0, 20.0));
        assert_eq!(h.s.cwnd, 50);
    }
}
