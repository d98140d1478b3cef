//! The order in which the sender calls the congestion-control hooks, in one
//! place so that the algorithm test harness (`cc::harness`) drives algorithms
//! exactly as the sender does. Loss detection and the recovery state machine
//! decide *when* (tcp::recovery); these functions say *which hooks, in what
//! order*, as Linux `net/ipv4/tcp_input.c` does:
//!
//! * on an ACK: `pkts_acked` (from `tcp_clean_rtx_queue`), then the state
//!   machine (`tcp_fastretrans_alert`), then `tcp_cong_control`: the algorithm's
//!   `cong_control` if it has one, else PRR during a reduction, else
//!   `cong_avoid` if snd_una advanced and the window was in use; Linux to
//!   3.16 (and ns-2's TCP-Linux) ran `cong_avoid` before the state machine
//!   instead, on the state the ACK found (`cong_avoid_before`);
//! * on entering recovery or CWR: `ssthresh` (`tcp_init_cwnd_reduction`), then
//!   `set_state`; on leaving it: cwnd = ssthresh (`tcp_end_cwnd_reduction`),
//!   `set_state(Open)`, `cwnd_event(CompleteCwr)`;
//! * on a timeout (`tcp_enter_loss`): `ssthresh` unless already recovering,
//!   cwnd = 1, `set_state(Loss)`, `cwnd_event(Loss)`.

use crate::cc::{AckSample, CaEvent, CaState, CcState, CongestionOps, RateSample, INFINITE_SSTHRESH};

/// An ACK delivered packets: the algorithm sees the sample (`pkts_acked`).
pub fn pkts_acked<C: CongestionOps>(cc: &mut C, s: &mut CcState, sample: &AckSample) {
    if sample.acked > 0 {
        cc.pkts_acked(s, sample);
    }
}

/// Linux `tcp_cong_control`, after the state machine: the algorithm's own
/// `cong_control`, else `prr` during a window reduction, else `cong_avoid` when
/// snd_una advanced and `cwnd_limited` holds (asked only then: it records the
/// answer in the state, as `tcp_is_cwnd_limited` is only consulted there);
/// then, without `cong_control`, `tcp_update_pacing_rate` for a paced flow
/// when the stack has TCP's internal pacing (`pacing`: Some(packets_out)).
pub fn cong_control<C: CongestionOps>(
    cc: &mut C,
    s: &mut CcState,
    rs: &RateSample,
    una_advanced: bool,
    prr: impl FnOnce(&mut CcState),
    cwnd_limited: impl FnOnce(&mut CcState) -> bool,
    pacing: Option<u32>,
) {
    if cc.cong_control(s, rs) {
        return;
    }
    if matches!(s.ca_state, CaState::Recovery | CaState::Cwr) {
        prr(s);
    } else if una_advanced {
        grow(cc, s, rs.acked_sacked, cwnd_limited);
    }
    if let Some(packets_out) = pacing.filter(|_| s.pacing_rate > 0.0 && s.srtt > 0) {
        s.pacing_rate = crate::cc::linux_pacing_bytes_per_ns(s, packets_out) * 1e9;
    }
}

/// `cong_avoid` when the window is in use or the algorithm does not wait for
/// it (`CongestionOps::waits_for_window_use`); the test is recorded first.
fn grow<C: CongestionOps>(cc: &mut C, s: &mut CcState, acked: u32, cwnd_limited: impl FnOnce(&mut CcState) -> bool) {
    if cwnd_limited(s) || !cc.waits_for_window_use(s) {
        cc.cong_avoid(s, acked);
    }
}

/// Linux to 3.16 (`tcp_ack` at 2.6.22 and 3.16.0): before the state machine,
/// `cong_avoid` when snd_una advanced, the state the ACK found is neither
/// Recovery nor CWR (`tcp_may_raise_cwnd`) and `cwnd_limited` holds. The
/// reduction step still follows the state machine (`cong_control` with
/// `una_advanced` false).
pub fn cong_avoid_before<C: CongestionOps>(cc: &mut C, s: &mut CcState, acked: u32, una_advanced: bool, cwnd_limited: impl FnOnce(&mut CcState) -> bool) {
    if una_advanced && !matches!(s.ca_state, CaState::Recovery | CaState::Cwr) {
        grow(cc, s, acked, cwnd_limited);
    }
}

/// A state change reaches the algorithm only when the state changes.
pub fn set_state<C: CongestionOps>(cc: &mut C, s: &mut CcState, state: CaState) {
    if s.ca_state != state {
        s.ca_state = state;
        cc.set_state(s, state);
    }
}

/// Start a window reduction (Linux `tcp_init_cwnd_reduction`): the algorithm
/// gives the new ssthresh; the caller then sets the state (Recovery or Cwr).
pub fn init_cwnd_reduction<C: CongestionOps>(cc: &mut C, s: &mut CcState) {
    s.ssthresh = cc.ssthresh(s);
    s.cwnd_cnt = 0;
}

/// A reduction is over (Linux `tcp_end_cwnd_reduction` and `tcp_try_undo_recovery`):
/// cwnd = ssthresh unless the algorithm owns the window, back to Open.
pub fn end_cwnd_reduction<C: CongestionOps>(cc: &mut C, s: &mut CcState) {
    if s.ssthresh < INFINITE_SSTHRESH && !cc.owns_window() {
        s.cwnd = s.ssthresh;
    }
    set_state(cc, s, CaState::Open);
    cc.cwnd_event(s, CaEvent::CompleteCwr);
}

/// A retransmission timeout (Linux `tcp_enter_loss`): a new ssthresh only for a
/// new loss episode, one packet of window.
pub fn enter_loss<C: CongestionOps>(cc: &mut C, s: &mut CcState) {
    if matches!(s.ca_state, CaState::Open | CaState::Disorder) {
        s.ssthresh = cc.ssthresh(s);
    }
    s.cwnd = 1;
    s.cwnd_cnt = 0;
    set_state(cc, s, CaState::Loss);
    cc.cwnd_event(s, CaEvent::Loss);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the hooks called, in order.
    #[derive(Default)]
    struct Log(Vec<String>, bool);

    impl CongestionOps for Log {
        fn ssthresh(&mut self, s: &CcState) -> u32 {
            self.0.push("ssthresh".into());
            s.cwnd / 2
        }
        fn cong_avoid(&mut self, _s: &mut CcState, acked: u32) {
            self.0.push(format!("cong_avoid {acked}"));
        }
        fn pkts_acked(&mut self, _s: &mut CcState, sample: &AckSample) {
            self.0.push(format!("pkts_acked {}", sample.acked));
        }
        fn set_state(&mut self, s: &mut CcState, state: CaState) {
            self.0.push(format!("set_state {state:?} (cwnd {})", s.cwnd));
        }
        fn cwnd_event(&mut self, _s: &mut CcState, event: CaEvent) {
            self.0.push(format!("cwnd_event {event:?}"));
        }
        fn cong_control(&mut self, _s: &mut CcState, _rs: &RateSample) -> bool {
            self.0.push("cong_control".into());
            self.1
        }
        fn owns_window(&self) -> bool {
            self.1
        }
    }

    fn ack(cc: &mut Log, s: &mut CcState, advanced: bool, limited: bool) {
        let rs = RateSample { acked_sacked: 2, ..Default::default() };
        pkts_acked(cc, s, &AckSample { acked: 2, ..Default::default() });
        cong_control(cc, s, &rs, advanced, |s| s.cwnd = 7, |_| limited, None);
    }

    #[test]
    fn an_ack_grows_the_window_only_when_una_advanced_and_cwnd_limited() {
        let (mut cc, mut s) = (Log::default(), CcState::new(10, 1448));
        ack(&mut cc, &mut s, true, true);
        ack(&mut cc, &mut s, false, true);
        ack(&mut cc, &mut s, true, false);
        let want = ["pkts_acked 2", "cong_control", "cong_avoid 2", "pkts_acked 2", "cong_control", "pkts_acked 2", "cong_control"];
        assert_eq!(cc.0, want);
    }

    #[test]
    fn a_reduction_calls_ssthresh_then_prr_then_restores_cwnd() {
        let (mut cc, mut s) = (Log::default(), CcState::new(10, 1448));
        init_cwnd_reduction(&mut cc, &mut s);
        set_state(&mut cc, &mut s, CaState::Recovery);
        set_state(&mut cc, &mut s, CaState::Recovery); // no change: no call
        ack(&mut cc, &mut s, true, true);
        assert_eq!(s.cwnd, 7, "PRR, not cong_avoid, during recovery");
        end_cwnd_reduction(&mut cc, &mut s);
        assert_eq!((s.cwnd, s.ca_state), (5, CaState::Open));
        let want =
            ["ssthresh", "set_state Recovery (cwnd 10)", "pkts_acked 2", "cong_control", "set_state Open (cwnd 5)", "cwnd_event CompleteCwr"];
        assert_eq!(cc.0, want);
    }

    #[test]
    fn an_algorithm_with_cong_control_owns_the_window() {
        let (mut cc, mut s) = (Log(vec![], true), CcState::new(10, 1448));
        init_cwnd_reduction(&mut cc, &mut s);
        set_state(&mut cc, &mut s, CaState::Recovery);
        ack(&mut cc, &mut s, true, true);
        end_cwnd_reduction(&mut cc, &mut s);
        assert_eq!(s.cwnd, 10, "neither PRR nor cwnd = ssthresh");
    }

    #[test]
    fn a_second_timeout_keeps_ssthresh() {
        let (mut cc, mut s) = (Log::default(), CcState::new(10, 1448));
        enter_loss(&mut cc, &mut s);
        assert_eq!((s.cwnd, s.ssthresh), (1, 5));
        enter_loss(&mut cc, &mut s);
        assert_eq!(s.ssthresh, 5);
        assert_eq!(cc.0, ["ssthresh", "set_state Loss (cwnd 1)", "cwnd_event Loss", "cwnd_event Loss"]);
    }
}
