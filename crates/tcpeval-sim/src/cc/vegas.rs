//! TCP Vegas (Brakmo & Peterson, JSAC 1995) as Linux ships it
//! (`net/ipv4/tcp_vegas.c`). Once per RTT it compares the window with the one the
//! path would need without queueing: diff = cwnd (rtt - baseRTT) / baseRTT, the
//! packets this flow keeps queued, with rtt the minimum RTT seen in the last round
//! (which filters delayed ACKs) and baseRTT the minimum ever. Below alpha it adds
//! one packet, above beta it removes one; in slow start it leaves for congestion
//! avoidance once diff exceeds gamma, setting cwnd to what the actual rate needs.
//! With too few RTT samples in a round (<= 2, likely all delayed ACKs) it is Reno.
//!
//! `VegasVersion::Linux26` is the step of Linux 2.6.13-2.6.22 (crate::stack), read
//! at 2.6.22: diff comes from the window sent in the previous round (`old_wnd`,
//! snd_nxt - snd_una at its start) in half packets (V_PARAM_SHIFT 1), and cwnd
//! moves by one packet per ACK towards the previous round's cwnd +- 1
//! (`old_snd_cwnd`); leaving slow start sets ssthresh = 2.

use super::params::{self, AlgorithmConfig};
use super::reno::Reno;
use super::{slow_start, AckSample, CaEvent, CaState, CcError, CcState, CongestionOps};
use crate::time::{Time, US};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Linux defaults (packets); ns-2 and the paper use 1 and 3.
pub const ALPHA: u32 = 2;
pub const BETA: u32 = 4;
pub const GAMMA: u32 = 1;

/// Vegas's parameters (`params`): the module parameters of Linux
/// net/ipv4/tcp_vegas.c, in packets queued per flow.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct VegasConfig {
    /// Grow while fewer packets are queued (`alpha` = 2); at most beta.
    pub alpha: u32,
    /// Shrink while more are queued (`beta` = 4).
    pub beta: u32,
    /// Leave slow start when more are queued (`gamma` = 1).
    pub gamma: u32,
}

impl Default for VegasConfig {
    fn default() -> Self {
        VegasConfig { alpha: ALPHA, beta: BETA, gamma: GAMMA }
    }
}

impl AlgorithmConfig for VegasConfig {
    fn check(&self, _alg: &str) -> Result<(), CcError> {
        if self.alpha > self.beta {
            return Err(params::error("alpha", "must not exceed params.beta".into()));
        }
        Ok(())
    }
}

/// The Vegas code of a stack's era (crate::stack).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VegasVersion {
    /// Today's step, described above.
    #[default]
    Current,
    /// Linux 2.6.13-2.6.22's step from the previous round's window.
    Linux26,
}

#[derive(Clone, Debug)]
pub struct Vegas {
    alpha: u32,
    beta: u32,
    gamma: u32,
    beg_snd_nxt: u64,
    doing_vegas_now: bool,
    rtts: RttRound,
    reno: Reno,
    version: VegasVersion,
    /// Linux26: where the previous round started and its cwnd then.
    beg_snd_una: u64,
    beg_snd_cwnd: u32,
}

impl Default for Vegas {
    fn default() -> Self {
        Vegas {
            alpha: ALPHA,
            beta: BETA,
            gamma: GAMMA,
            beg_snd_nxt: 0,
            doing_vegas_now: true,
            rtts: RttRound::default(),
            reno: Reno,
            version: VegasVersion::Current,
            beg_snd_una: 0,
            beg_snd_cwnd: 0,
        }
    }
}

/// RTT samples of the current round, as Vegas keeps them (Linux
/// `tcp_vegas_pkts_acked`): the lifetime minimum, the round's minimum and count.
#[derive(Clone, Debug)]
pub struct RttRound {
    pub base: Time,
    pub min: Time,
    pub count: u32,
}

impl Default for RttRound {
    fn default() -> Self {
        RttRound { base: Time::MAX, min: Time::MAX, count: 0 }
    }
}

impl RttRound {
    pub fn sample(&mut self, rtt: Time) {
        // Linux adds 1 us so that a zero RTT is never taken for "no sample".
        let vrtt = rtt + US;
        self.base = self.base.min(vrtt);
        self.min = self.min.min(vrtt);
        self.count += 1;
    }

    /// Start a new round (the lifetime minimum is kept).
    pub fn next_round(&mut self) {
        self.min = Time::MAX;
        self.count = 0;
    }
}

/// The window a flow would need at its actual rate without queueing, and the
/// packets it keeps queued, from one round's minimum RTT (shared with FAST).
pub fn queued_packets(cwnd: u32, rtt: Time, base_rtt: Time) -> u64 {
    cwnd as u64 * rtt.saturating_sub(base_rtt) / base_rtt.max(1)
}

/// Linux `tcp_current_ssthresh` outside CWR/Recovery: at least 3/4 of cwnd.
fn current_ssthresh(s: &CcState) -> u32 {
    s.ssthresh.max((s.cwnd >> 1) + (s.cwnd >> 2))
}

impl Vegas {
    pub fn new(cfg: &VegasConfig) -> Self {
        Vegas { alpha: cfg.alpha, beta: cfg.beta, gamma: cfg.gamma, ..Vegas::default() }
    }

    fn enable(&mut self, s: &CcState) {
        self.doing_vegas_now = true;
        self.beg_snd_nxt = s.snd_nxt;
        self.rtts.next_round();
    }

    /// The once-per-RTT adjustment.
    fn adjust(&mut self, s: &mut CcState, acked: u32) {
        let (rtt, base) = (self.rtts.min, self.rtts.base);
        let diff = queued_packets(s.cwnd, rtt, base);
        if diff > self.gamma as u64 && s.in_slow_start() {
            let target = (s.cwnd as u64 * base / rtt.max(1)) as u32;
            s.cwnd = s.cwnd.min(target + 1);
            s.ssthresh = s.ssthresh.min(s.cwnd - 1);
        } else if s.in_slow_start() {
            slow_start(s, acked);
        } else if diff > self.beta as u64 {
            s.cwnd -= 1;
            s.ssthresh = s.ssthresh.min(s.cwnd - 1);
        } else if diff < self.alpha as u64 {
            s.cwnd += 1;
        }
        s.cwnd = s.cwnd.clamp(2, s.cwnd_clamp);
        s.ssthresh = current_ssthresh(s);
    }

    /// Run the code of an earlier version (crate::stack).
    pub fn set_version(&mut self, version: VegasVersion) {
        self.version = version;
    }

    /// Linux 2.6.22's once-per-RTT step (`tcp_vegas_cong_avoid`), in half
    /// packets as Linux keeps alpha, beta and gamma (<< V_PARAM_SHIFT).
    fn adjust_linux26(&mut self, s: &mut CcState, acked: u32) {
        let old_wnd = self.beg_snd_nxt.saturating_sub(self.beg_snd_una);
        let old_snd_cwnd = self.beg_snd_cwnd;
        (self.beg_snd_una, self.beg_snd_nxt, self.beg_snd_cwnd) = (self.beg_snd_nxt, s.snd_nxt, s.cwnd);
        if self.rtts.count <= 2 {
            self.reno_when_in_use(s, acked);
            return;
        }
        let (rtt, base) = (self.rtts.min.max(1), self.rtts.base);
        let target2 = (old_wnd << 1) * base / rtt;
        let diff2 = (old_wnd << 1).saturating_sub(target2);
        if s.in_slow_start() {
            if diff2 > (self.gamma << 1) as u64 {
                s.ssthresh = 2;
                s.cwnd = s.cwnd.min(u32::try_from((target2 >> 1) + 1).unwrap_or(u32::MAX));
            }
            slow_start(s, acked);
        } else {
            // Linux's u32 arithmetic: before any round, old_snd_cwnd - 1 wraps
            // and reads as "grow".
            let next = if diff2 > (self.beta << 1) as u64 {
                old_snd_cwnd.wrapping_sub(1)
            } else if diff2 < (self.alpha << 1) as u64 {
                old_snd_cwnd + 1
            } else {
                old_snd_cwnd
            };
            match next.cmp(&s.cwnd) {
                std::cmp::Ordering::Greater => s.cwnd += 1,
                std::cmp::Ordering::Less => s.cwnd -= 1,
                std::cmp::Ordering::Equal => {}
            }
        }
        s.cwnd = s.cwnd.clamp(2, s.cwnd_clamp);
    }

    pub fn base_rtt(&self) -> Time {
        self.rtts.base
    }

    /// alpha, beta and gamma in packets.
    pub fn params(&self) -> (u32, u32, u32) {
        (self.alpha, self.beta, self.gamma)
    }

    /// Reno's step inside Vegas's own branch: only when the window is in use
    /// (`tcp_reno_cong_avoid` tests `tcp_is_cwnd_limited`; Vegas's branch
    /// itself does not, `waits_for_window_use`).
    fn reno_when_in_use(&mut self, s: &mut CcState, acked: u32) {
        if s.cwnd_limited {
            self.reno.cong_avoid(s, acked);
        }
    }
}

impl CongestionOps for Vegas {
    /// At 2.6.22 `.min_cwnd = tcp_reno_min_cwnd` (net/ipv4/tcp_vegas.c at 2.6.22):
    /// rate-halving may go down to half of ssthresh.
    fn min_cwnd(&mut self, s: &CcState) -> u32 {
        super::reno_min_cwnd(s)
    }

    fn init(&mut self, s: &mut CcState) {
        self.rtts = RttRound::default();
        self.enable(s);
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.reno.ssthresh(s)
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        if !self.doing_vegas_now {
            self.reno.cong_avoid(s, acked);
            return;
        }
        if s.snd_una > self.beg_snd_nxt && self.version == VegasVersion::Linux26 {
            self.adjust_linux26(s, acked);
            self.rtts.next_round();
        } else if s.snd_una > self.beg_snd_nxt {
            self.beg_snd_nxt = s.snd_nxt;
            if self.rtts.count <= 2 {
                self.reno_when_in_use(s, acked);
            } else {
                self.adjust(s, acked);
            }
            self.rtts.next_round();
        } else if s.in_slow_start() {
            slow_start(s, acked);
        }
    }

    fn waits_for_window_use(&self, _s: &CcState) -> bool {
        !self.doing_vegas_now
    }

    fn pkts_acked(&mut self, _s: &mut CcState, sample: &AckSample) {
        if let Some(rtt) = sample.rtt {
            self.rtts.sample(rtt);
        }
    }

    fn set_state(&mut self, s: &mut CcState, state: CaState) {
        if state == CaState::Open {
            self.enable(s);
        } else {
            self.doing_vegas_now = false;
        }
    }

    fn cwnd_event(&mut self, s: &mut CcState, event: CaEvent) {
        if event == CaEvent::TxStart {
            self.init(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::harness::Harness;
    use crate::stack::Stack;
    use crate::time::MS;

    fn in_ca(cwnd: u32, base: Time, rtt: Time) -> Harness<Vegas> {
        let mut h = Harness::new(Vegas::default(), cwnd);
        h.s.ssthresh = 2;
        h.cc.rtts.base = base;
        h.rtt = rtt;
        h
    }

    #[test]
    fn diff_is_the_packets_queued() {
        // cwnd 100, base 100 ms, rtt 104 ms: 100 * 4 / 100 = 4 packets queued.
        assert_eq!(queued_packets(100, 104 * MS, 100 * MS), 4);
        assert_eq!(queued_packets(100, 100 * MS, 100 * MS), 0);
    }

    #[test]
    fn grows_below_alpha_shrinks_above_beta_holds_between() {
        // The first round only learns RTTs; the second round's first ACK adjusts:
        // diff = 100 * (rtt - 100) / 100 = 1 (< alpha: +1), 3 (hold), 6 (> beta: -1).
        let base = 100 * MS; // samples add 1 us, so diff is the same
        for (rtt_ms, want) in [(101, 101), (103, 100), (106, 99)] {
            let mut h = in_ca(100, base, rtt_ms * MS);
            h.ack_round();
            h.ack_round();
            assert_eq!(h.s.cwnd, want, "rtt {rtt_ms}");
        }
    }

    #[test]
    fn leaves_slow_start_when_the_queue_builds() {
        let mut h = Harness::new(Vegas::default(), 10);
        h.rtt = 100 * MS;
        h.ack_round();
        h.ack_round(); // baseRTT learnt, cwnd 40
        h.rtt = 110 * MS;
        h.ack_round(); // decided on the previous round's RTTs: still slow start, cwnd 80
        h.ack_round(); // diff = 80 * 10 / 100 = 8 > gamma: cwnd = 80 * 100/110 + 1 = 73
        assert!(!h.s.in_slow_start());
        assert_eq!((h.s.cwnd, h.s.ssthresh), (73, 72));
    }

    /// A round at 100 ms (baseRTT), then 106 ms. Decisions use the previous
    /// round's samples. Linux 2.6.22 moves towards the previous round's cwnd
    /// +- 1 (old_snd_cwnd): +1 (101), then -1 towards 100 - 1 = 99 (100), then
    /// 101 - 1 = 100 (held), 100 - 1 = 99, held: one packet per two rounds.
    /// Today: diff = cwnd * 6 / 100 = 6 > beta every round after the rise: -1 each.
    #[test]
    fn linux_2_6_22_steps_towards_the_previous_round_s_window() {
        for (stack, want) in [(Stack::Linux2622, [100, 101, 100, 100, 99, 99]), (Stack::Linux66, [100, 101, 100, 99, 98, 97])] {
            let mut h = Harness::for_stack(stack, "vegas", 100);
            (h.s.ssthresh, h.rtt) = (2, 100 * MS);
            let mut got = vec![];
            for _ in 0..6 {
                h.ack_round();
                got.push(h.s.cwnd);
                h.rtt = 106 * MS;
            }
            assert_eq!(got, want, "{}", stack.name());
        }
    }

    #[test]
    fn alpha_may_not_exceed_beta() {
        let parse = |v: serde_json::Value| crate::cc::params::parse_map::<VegasConfig>(v.as_object().unwrap());
        assert!(parse(serde_json::json!({"alpha": 4, "beta": 4})).is_ok());
        let e = parse(serde_json::json!({"alpha": 5})).unwrap_err();
        assert_eq!(e, "params.alpha: must not exceed params.beta");
    }
}
