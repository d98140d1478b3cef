//! DCTCP (RFC 8257; Alizadeh et al., SIGCOMM 2010) as Linux ships it
//! (`net/ipv4/tcp_dctcp.c` and `tcp_dctcp.h`, Linux 6.6; read at a 6.x commit,
//! 01581a2, whose DCTCP code is 6.6's).
//!
//! The sender keeps alpha, an EWMA of the fraction of delivered packets that
//! were CE-marked, updated once per window of data (`dctcp_update_alpha`, on
//! every ACK once snd_una passes the snd_nxt of the previous update):
//! alpha <- alpha - alpha * g + g * F, in units of 1/1024, g = 1/16. On the
//! first ECE of a window the sender enters CWR (tcp::ecn) with
//! ssthresh = cwnd - cwnd * alpha / 2 (`dctcp_ssthresh`); growth is Reno's. A
//! loss halves the window as Reno does (`dctcp_react_to_loss`, from
//! `dctcp_state` on entering Recovery and `CA_EVENT_LOSS` on a timeout).
//!
//! The receiver's half, the exact CE echo (`DctcpEcho`), is the state machine
//! of `dctcp_ece_ack_update`: ECE on an ACK says whether the packets it
//! acknowledges were CE, and a change of CE state sends the delayed ACK first.
//! DCTCP sets Linux's `TCP_CONG_NEEDS_ECN`: a DCTCP flow negotiates ECN whatever
//! its `ecn` switch says (tcp::ecn::EcnMode::CaNeedsEcn).

use super::params::{self, AlgorithmConfig};
use super::{CaEvent, CaState, CcError, CcState, CongestionOps, Reno};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Linux DCTCP_MAX_ALPHA: alpha = 1 in units of 1/1024.
pub const MAX_ALPHA: u32 = 1024;
/// Linux `dctcp_shift_g` default: g = 1/2^4 (RFC 8257 section 4.2: 1/16).
pub const SHIFT_G: u32 = 4;

/// DCTCP's parameters (`params`): Linux's module parameters.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DctcpConfig {
    /// The EWMA gain is g = 1 / 2^shift_g, 0..10 (Linux `dctcp_shift_g`: 4,
    /// g = 1/16 as RFC 8257 section 4.2).
    pub shift_g: u32,
    /// Initial alpha in units of 1/1024, at most 1024 (Linux
    /// `dctcp_alpha_on_init`: 1024, the first reduction halves the window).
    pub alpha_on_init: u32,
}

impl Default for DctcpConfig {
    fn default() -> Self {
        DctcpConfig { shift_g: SHIFT_G, alpha_on_init: MAX_ALPHA }
    }
}

impl AlgorithmConfig for DctcpConfig {
    fn check(&self, _alg: &str) -> Result<(), CcError> {
        if self.shift_g > 10 {
            return Err(params::error("shift_g", "must be 0..10 (Linux dctcp_shift_g)".into()));
        }
        if self.alpha_on_init > MAX_ALPHA {
            return Err(params::error("alpha_on_init", format!("must be at most {MAX_ALPHA} (alpha 1)")));
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct Dctcp {
    shift_g: u32,
    alpha_on_init: u32,
    /// Fraction of marked packets, EWMA, in units of 1/1024.
    pub alpha: u32,
    /// The window ends when snd_una reaches this (Linux `next_seq`).
    next_seq: u64,
    old_delivered: u64,
    old_delivered_ce: u64,
    /// cwnd when the last reduction started (Linux `loss_cwnd`).
    loss_cwnd: u32,
    /// `ssthresh` ran for a reduction not yet under way: a timeout then halves
    /// the window (Linux raises CA_EVENT_LOSS only with a new ssthresh).
    fresh_ssthresh: bool,
}

impl Dctcp {
    pub fn new(c: &DctcpConfig) -> Self {
        Dctcp {
            shift_g: c.shift_g,
            alpha_on_init: c.alpha_on_init,
            alpha: c.alpha_on_init.min(MAX_ALPHA),
            next_seq: 0,
            old_delivered: 0,
            old_delivered_ce: 0,
            loss_cwnd: 0,
            fresh_ssthresh: false,
        }
    }

    /// Linux `dctcp_reset`: a new window starts at snd_nxt.
    fn reset(&mut self, s: &CcState) {
        self.next_seq = s.snd_nxt;
        self.old_delivered = s.delivered;
        self.old_delivered_ce = s.delivered_ce;
    }

    /// Linux `dctcp_update_alpha`, once snd_una has passed the window:
    /// alpha -= min_not_zero(alpha, alpha >> g) (so below 2^g it falls to 0),
    /// then + F * 1024 * g with F = delivered_ce / delivered of the window.
    fn update_alpha(&mut self, s: &CcState) {
        if s.snd_una < self.next_seq {
            return;
        }
        let decay = self.alpha >> self.shift_g;
        let mut alpha = self.alpha - if decay == 0 { self.alpha } else { decay };
        let marked = s.delivered_ce - self.old_delivered_ce;
        if marked > 0 {
            let delivered = (s.delivered - self.old_delivered).max(1);
            let gain = (marked << (10 - self.shift_g)) / delivered;
            alpha = (alpha as u64 + gain).min(MAX_ALPHA as u64) as u32;
        }
        self.alpha = alpha;
        self.reset(s);
    }

    /// Linux `dctcp_react_to_loss`: Reno's halving.
    fn react_to_loss(&mut self, s: &mut CcState, cwnd: u32) {
        self.loss_cwnd = cwnd;
        s.ssthresh = (cwnd >> 1).max(2);
    }
}

impl CongestionOps for Dctcp {
    fn init(&mut self, s: &mut CcState) {
        self.alpha = self.alpha_on_init.min(MAX_ALPHA);
        self.loss_cwnd = 0;
        self.reset(s);
    }

    /// Linux `dctcp_ssthresh`: cwnd - cwnd * alpha / 2 (alpha in 1/1024:
    /// `>> 11`), at least 2.
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.loss_cwnd = s.cwnd;
        self.fresh_ssthresh = true;
        let cut = (s.cwnd as u64 * self.alpha as u64) >> 11;
        (s.cwnd - cut as u32).max(2)
    }

    /// Linux `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        Reno.cong_avoid(s, acked);
    }

    fn in_ack_event(&mut self, s: &mut CcState, _ece: bool) {
        self.update_alpha(s);
    }

    /// Linux `dctcp_state`: entering Recovery halves the window (the sender
    /// calls this only on a change of state).
    fn set_state(&mut self, s: &mut CcState, state: CaState) {
        match state {
            CaState::Recovery => self.react_to_loss(s, s.cwnd),
            CaState::Loss => return,
            _ => {}
        }
        self.fresh_ssthresh = false;
    }

    /// Linux `dctcp_cwnd_event`, CA_EVENT_LOSS: a timeout that took a new
    /// ssthresh halves the window it had (the sender has already set cwnd to 1).
    fn cwnd_event(&mut self, s: &mut CcState, event: CaEvent) {
        if event == CaEvent::Loss && self.fresh_ssthresh {
            self.fresh_ssthresh = false;
            let cwnd = self.loss_cwnd;
            self.react_to_loss(s, cwnd);
        }
    }
}

/// What the receiver does after DCTCP's echo saw a data packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EchoStep {
    /// Send the delayed ACK now, before this packet's, with this ECE (the CE
    /// state of the packets it covers).
    pub flush: Option<bool>,
    /// The CE state changed: acknowledge this packet at once.
    pub ack_now: bool,
}

/// DCTCP's receiver (RFC 8257 section 3.2; Linux `dctcp_ece_ack_update` in
/// net/ipv4/tcp_dctcp.h, 6.6): ECE on each ACK is the CE state of the last
/// packet; when the state changes, a pending delayed ACK goes out first with
/// the old state (for Linux's `prior_rcv_nxt`, the receiver's cumulative point
/// before this packet) and this packet is ACKed at once.
#[derive(Clone, Copy, Debug, Default)]
pub struct DctcpEcho {
    /// Linux `ce_state`: the last data packet was CE.
    pub ce_state: bool,
}

impl DctcpEcho {
    /// A data packet arrived (`CA_EVENT_ECN_IS_CE` or `_NO_CE`); `delack_pending`:
    /// an ACK is being delayed (Linux `ICSK_ACK_TIMER`).
    pub fn on_data(&mut self, event: CaEvent, delack_pending: bool) -> EchoStep {
        let ce = event == CaEvent::EcnIsCe;
        let mut step = EchoStep::default();
        if ce != self.ce_state {
            step.flush = delack_pending.then_some(self.ce_state);
            step.ack_now = true;
        }
        self.ce_state = ce;
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::harness::Harness;

    fn dctcp() -> Dctcp {
        Dctcp::new(&DctcpConfig::default())
    }

    /// One window of `n` packets, `marked` of them CE, acknowledged while the
    /// next window is out: the ACK that reaches the window's end updates alpha.
    fn window(d: &mut Dctcp, s: &mut CcState, n: u64, marked: u64) {
        s.snd_una += n;
        s.snd_nxt = s.snd_una + n;
        s.delivered += n;
        s.delivered_ce += marked;
        d.in_ack_event(s, marked > 0);
    }

    /// RFC 8257 section 3.3 by hand: alpha starts at 1024; a window with no
    /// marks takes 1024 >> 4 = 64 off: 960, then 900; a window with all 10
    /// packets marked adds (10 << 6) / 10 = 64 after the decay (900 - 56 + 64).
    #[test]
    fn alpha_is_the_hand_computed_ewma_of_marked_fractions() {
        let (mut d, mut s) = (dctcp(), CcState::new(10, 1448));
        d.init(&mut s);
        let mut seen = vec![];
        for marked in [0, 0, 10, 5] {
            window(&mut d, &mut s, 10, marked);
            seen.push(d.alpha);
        }
        // 908 - 56 = 852, + (5 << 6) / 10 = 32: 884.
        assert_eq!(seen, [960, 900, 908, 884]);
        // An ACK inside the next window (it ends at 50) changes nothing.
        s.snd_una += 5;
        d.in_ack_event(&mut s, false);
        assert_eq!(d.alpha, 884);
    }

    /// Below 2^g, alpha - alpha >> g would never reach 0: Linux's
    /// min_not_zero takes alpha to 0 at once.
    #[test]
    fn a_small_alpha_without_marks_falls_to_zero() {
        let (mut d, mut s) = (Dctcp::new(&DctcpConfig { shift_g: 4, alpha_on_init: 15 }), CcState::new(10, 1448));
        d.init(&mut s);
        window(&mut d, &mut s, 10, 0);
        assert_eq!(d.alpha, 0);
        window(&mut d, &mut s, 10, 0);
        assert_eq!(d.alpha, 0);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]
        /// Under a fixed marking pattern (k of every n packets CE), alpha
        /// converges to the marked fraction k/n (RFC 8257 section 3.3: the
        /// EWMA's fixed point), within the integer truncation of the update:
        /// each step loses under 1/1024 in the gain and alpha >> 4 rounds down,
        /// so the fixed point sits within 16 + 16 units of 1024 k/n.
        #[test]
        fn alpha_converges_to_the_marked_fraction(n in 4u64..200, k_frac in 0.0f64..=1.0) {
            let k = ((n as f64) * k_frac).round() as u64;
            let (mut d, mut s) = (dctcp(), CcState::new(10, 1448));
            d.init(&mut s);
            for _ in 0..400 {
                window(&mut d, &mut s, n, k);
            }
            let target = 1024.0 * k as f64 / n as f64;
            proptest::prop_assert!((d.alpha as f64 - target).abs() <= 32.0, "alpha {} vs {target:.1}", d.alpha);
        }
    }

    /// ssthresh = cwnd - cwnd * alpha / 2: halved at alpha 1, cwnd - cwnd/8
    /// at alpha 1/4, never below 2.
    #[test]
    fn ssthresh_takes_alpha_over_two_of_the_window() {
        let (mut d, s) = (dctcp(), CcState::new(100, 1448));
        assert_eq!(d.ssthresh(&s), 50);
        d.alpha = 256;
        assert_eq!(d.ssthresh(&s), 100 - 12); // 100 * 256 >> 11 = 12
        d.alpha = 0;
        assert_eq!(d.ssthresh(&s), 100);
        let small = CcState::new(2, 1448);
        d.alpha = 1024;
        assert_eq!(d.ssthresh(&small), 2);
    }

    /// A loss halves the window whatever alpha is (Recovery and timeout), as
    /// Reno; congestion avoidance is Reno's.
    #[test]
    fn loss_halves_like_reno_whatever_alpha() {
        let mut h = Harness::new(dctcp(), 100);
        h.cc.alpha = 100;
        assert_eq!(h.lose(), 50);
        h.s.cwnd = 80;
        h.cc.alpha = 100;
        assert_eq!(h.timeout(), 40, "timeout from Open: half the window before it");
        assert_eq!(h.s.cwnd, 1);
        let mut h = Harness::new(dctcp(), 10);
        h.s.ssthresh = 10;
        h.ack_round_in_pairs();
        assert_eq!(h.s.cwnd, 11, "Reno: one packet per round");
    }

    /// Linux added DCTCP in 3.18: the 3.16 stack does not offer it.
    #[test]
    fn only_todays_stack_offers_dctcp() {
        use crate::stack::Stack;
        assert!(Stack::Linux66.offers("dctcp").is_ok());
        assert!(Stack::Linux316.offers("dctcp").unwrap_err().contains("not 'dctcp'"));
    }

    /// The echo of RFC 8257 section 3.2 (figure 1): the state flips on a CE
    /// change and then the held ACK goes out with the old state.
    #[test]
    fn echo_flushes_the_delayed_ack_with_the_old_state_on_a_change() {
        let mut e = DctcpEcho::default();
        assert_eq!(e.on_data(CaEvent::EcnNoCe, true), EchoStep::default());
        assert_eq!(e.on_data(CaEvent::EcnIsCe, true), EchoStep { flush: Some(false), ack_now: true });
        assert_eq!(e.on_data(CaEvent::EcnIsCe, true), EchoStep::default());
        assert_eq!(e.on_data(CaEvent::EcnNoCe, false), EchoStep { flush: None, ack_now: true });
        assert!(!e.ce_state);
    }
}
