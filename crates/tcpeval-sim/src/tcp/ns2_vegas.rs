//! ns-2's own Vegas sender, `Agent/TCP/Vegas` (tcp/tcp-vegas.cc in ns-2.35,
//! Ted Kuo's port of USC's NetBSD Vegas), which the `ns2` stack runs for
//! `cc = "vegas"` (docs/stacks.md). It is not Linux's Vegas module: a
//! Reno-style sender without SACK whose window, loss response and
//! retransmissions are its own.
//!
//! * Once per round (an ACK at or past the round's first segment) it compares
//!   expected and actual rates from the round's mean RTT:
//!   delta = round((expect - actual) baseRTT), expect = (t_seqno - last_ack) /
//!   baseRTT, actual = the round's segments / the round's RTT. In slow start
//!   (cwnd < ssthresh) it grows only every other round, one packet per ACK, and
//!   leaves when delta > gamma with ssthresh 2 and cwnd - cwnd/8. In avoidance
//!   cwnd - 1 when delta > beta, + 1/cwnd per ACK when delta < alpha.
//! * Fine-grained retransmission: on a duplicate ACK, and on the first two new
//!   ACKs after one, the head is resent once it has waited `v_timeout` (its
//!   own RTT estimator, seconds), and at the third duplicate ACK anyway. Then
//!   cwnd becomes 3/4 of the window (1/2 if the head was resent before, 2 below
//!   4 packets), unless the window already changed after the head was sent,
//!   inflated by the duplicate ACKs, deflated by the next new ACK with
//!   ssthresh 2.
//! * The coarse timer: go back to the head, ssthresh half the window, cwnd 2.
//!
//! Sequence numbers are the engine's (ns-2 numbers segments from 0 as well);
//! ns-2's ACK number is the highest in-order segment, the engine's cumulative
//! ACK minus one. Times are seconds since the first segment left
//! (`vegastime()`), as ns-2 computes them, so its `sendTime != 0` test keeps
//! segments sent at that instant out of the RTT samples.

use super::ns2_agent::{Action, AgentWindow, SentSeg};
use crate::time::Time;

/// ns-2's `numdupacks_` (tcl/lib/ns-default.tcl).
const NUMDUPACKS: u32 = 3;
/// ns-2's `v_slowstart_`: cwnd after a timeout.
const CWND_AFTER_TIMEOUT: f64 = 2.0;

#[derive(Clone, Debug)]
pub struct Ns2Vegas {
    alpha: i64,
    beta: i64,
    gamma: i64,
    /// cwnd, ssthresh and the sequence space (`TcpAgent`'s).
    pub w: AgentWindow,
    /// Whether the last window action was a timeout.
    after_timeout: bool,
    first_sent: Option<Time>,
    started: bool,
    rtt: f64,
    sa: f64,
    sd: f64,
    timeout: f64,
    worried: u32,
    beg_seq: u64,
    beg_time: f64,
    cnt_rtt: u32,
    sum_rtt: f64,
    base_rtt: f64,
    incr: f64,
    inc_flag: bool,
    newcwnd: f64,
    cwnd_changed: f64,
}

impl Ns2Vegas {
    /// `v_alpha_`, `v_beta_`, `v_gamma_`; the initial window `windowInit_` and
    /// the receive window `window_` in packets (ssthresh starts there,
    /// `TcpAgent::reset`).
    pub fn new(alpha: u32, beta: u32, gamma: u32, initial_cwnd: u32, wnd: u64) -> Self {
        Ns2Vegas {
            alpha: alpha as i64,
            beta: beta as i64,
            gamma: gamma as i64,
            w: AgentWindow::new(initial_cwnd, wnd),
            after_timeout: false,
            first_sent: None,
            started: false,
            rtt: 0.0,
            sa: 0.0,
            sd: 0.0,
            timeout: 1000.0,
            worried: 0,
            beg_seq: 0,
            beg_time: 0.0,
            cnt_rtt: 0,
            sum_rtt: 0.0,
            base_rtt: 1e9,
            incr: 0.0,
            inc_flag: true,
            newcwnd: 0.0,
            cwnd_changed: 0.0,
        }
    }

    /// `vegastime()`: seconds since the first segment left.
    fn clock(&self, t: Time) -> f64 {
        t.saturating_sub(self.first_sent.unwrap_or(t)) as f64 * 1e-9
    }

    /// A segment leaves (`output`): the clock starts with the first.
    pub fn on_output(&mut self, now: Time) {
        self.first_sent.get_or_insert(now);
    }

    /// An ACK: `ack` is the engine's cumulative ACK, `acked` the segment just
    /// below it if the ACK is new (before it left the scoreboard), `head` the
    /// first unacknowledged segment after it, `highest_sent` ns-2's `maxseq_`.
    pub fn on_ack(&mut self, ack: u64, acked: Option<SentSeg>, head: Option<SentSeg>, highest_sent: u64, now: Time) -> Action {
        let now_s = self.clock(now);
        if !self.started {
            // The first ACK sets the fine-grained estimator from vegastime().
            self.started = true;
            (self.base_rtt, self.rtt) = (now_s, now_s);
            (self.sa, self.sd) = (now_s * 8.0, now_s);
            self.timeout = (self.sa / 4.0 + self.sd) / 2.0;
        }
        let seqno = ack as i64 - 1;
        let mut action = Action::default();
        if seqno > self.w.last_ack {
            action.resend = self.on_new_ack(seqno, acked, head, now_s);
        } else if seqno == self.w.last_ack {
            action.resend = self.on_dupack(head, highest_sent as i64, now_s);
            action.backoff = action.resend.is_some();
        }
        action.send = self.w.dupacks == 0 || self.w.dupacks > NUMDUPACKS - 1;
        action
    }

    fn on_new_ack(&mut self, seqno: i64, acked: Option<SentSeg>, head: Option<SentSeg>, now_s: f64) -> Option<u64> {
        self.w.delay_growth();
        if self.w.dupacks > NUMDUPACKS && self.w.cwnd > self.newcwnd {
            self.w.cwnd = self.newcwnd;
            self.w.ssthresh = 2;
        }
        self.w.newack(seqno as u64 + 1);
        if seqno >= self.beg_seq as i64 {
            self.end_round(now_s);
        }
        if self.incr == 1.0 && self.w.cwnd >= self.w.ssthresh as f64 {
            self.incr = 0.0;
        }
        if self.incr > 0.0 && self.w.cwnd - self.w.outstanding() <= 2.0 {
            self.w.cwnd += self.incr;
        }
        if let Some(seg) = acked.filter(|s| !s.resent) {
            let send_time = self.clock(seg.tx_time);
            if send_time != 0.0 {
                self.rtt_sample(now_s - send_time);
            }
        }
        if self.worried == 0 {
            return None;
        }
        self.worried -= 1;
        if self.expired_at(head, now_s) {
            self.w.dupacks = NUMDUPACKS;
            return Some(seqno as u64 + 1);
        }
        self.worried = 0;
        None
    }

    fn expired_at(&self, head: Option<SentSeg>, now_s: f64) -> bool {
        head.is_some_and(|h| now_s - self.clock(h.tx_time) >= self.timeout)
    }

    /// The once-per-round decision (tcp-vegas.cc `recv`).
    fn end_round(&mut self, now_s: f64) {
        let rtt = if self.cnt_rtt > 0 { self.sum_rtt / self.cnt_rtt as f64 } else { now_s - self.beg_time };
        (self.sum_rtt, self.cnt_rtt) = (0.0, 0);
        let rtt_len = self.w.t_seqno as i64 - self.beg_seq as i64;
        if rtt > 0.0 {
            if rtt < self.base_rtt || rtt_len <= 1 {
                self.base_rtt = rtt;
            }
            let actual = rtt_len as f64 / rtt;
            let expect = self.w.outstanding() / self.base_rtt;
            // C's int(): truncation toward zero.
            let delta = ((expect - actual) * self.base_rtt + 0.5) as i64;
            if self.w.cwnd < self.w.ssthresh as f64 {
                self.slow_start_round(delta);
            } else if delta > self.beta {
                self.w.cwnd = (self.w.cwnd - 1.0).max(2.0);
                self.incr = 0.0;
            } else if delta < self.alpha {
                self.incr = 1.0 / self.w.cwnd;
            } else {
                self.incr = 0.0;
            }
        }
        self.beg_seq = self.w.t_seqno;
        self.beg_time = now_s;
    }

    /// Slow start grows every other round; a queue above gamma ends it.
    fn slow_start_round(&mut self, delta: i64) {
        self.inc_flag = !self.inc_flag;
        if !self.inc_flag {
            self.incr = 0.0;
        } else if delta > self.gamma {
            self.w.ssthresh = 2;
            self.w.cwnd = (self.w.cwnd - self.w.cwnd / 8.0).max(2.0);
            self.incr = 0.0;
        } else {
            self.incr = 1.0;
        }
    }

    /// A fine-grained RTT sample of a segment sent once: the round's mean and
    /// `v_timeout` (Jacobson's estimator in seconds, plus 1/16).
    fn rtt_sample(&mut self, rtt: f64) {
        self.sum_rtt += rtt;
        self.cnt_rtt += 1;
        if rtt <= 0.0 {
            return;
        }
        self.rtt = rtt;
        self.base_rtt = self.base_rtt.min(rtt);
        let n = rtt - self.sa / 8.0;
        self.sa += n;
        self.sd += n.abs() - self.sd / 4.0;
        self.timeout = (self.sa / 4.0 + self.sd) / 2.0;
        self.timeout += self.timeout / 16.0;
    }

    fn on_dupack(&mut self, head: Option<SentSeg>, maxseq: i64, now_s: f64) -> Option<u64> {
        self.w.dupacks += 1;
        if !(self.expired_at(head, now_s) || self.w.dupacks == NUMDUPACKS) {
            if self.w.dupacks > NUMDUPACKS {
                self.w.cwnd += 1.0;
            }
            return None;
        }
        // bug_fix_: no second window cut for losses of the window a timeout resent.
        if self.w.last_ack <= self.w.recover && self.after_timeout {
            return None;
        }
        let head = head?;
        let mut win = self.w.window();
        self.after_timeout = false;
        self.w.recover = maxseq;
        self.worried = (self.w.outstanding() as u32).min(2);
        self.timeout = if head.resent { self.timeout * 2.0 } else { self.timeout + self.timeout / 8.0 };
        if self.cwnd_changed < self.clock(head.tx_time) {
            win = if win <= 3 {
                2
            } else if head.resent {
                win >> 1
            } else {
                win - (win >> 2)
            };
            self.newcwnd = win as f64;
            self.w.cwnd = self.newcwnd + self.w.dupacks as f64;
            self.cwnd_changed = now_s;
        }
        if !head.resent {
            self.w.dupacks = NUMDUPACKS;
        }
        Some((self.w.last_ack + 1) as u64)
    }

    /// The coarse timer fired with data outstanding (`VegasTcpAgent::timeout`):
    /// go back to the head, ssthresh half the window (at least 2), cwnd 2.
    pub fn on_timeout(&mut self, highest_sent: u64, now: Time) {
        self.w.dupacks = 0;
        self.w.recover = highest_sent as i64;
        self.after_timeout = true;
        self.w.cut_to(CWND_AFTER_TIMEOUT);
        self.newcwnd = 0.0;
        self.cwnd_changed = self.clock(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    fn seg(ms: u64, resent: bool) -> Option<SentSeg> {
        Some(SentSeg { tx_time: ms * MS, resent })
    }

    /// Started at 0 with 2 segments; the first ACK at 100 ms sets the
    /// estimator: sa = 0.8, sd = 0.1, v_timeout = (0.2 + 0.1) / 2 = 0.15 s.
    fn started() -> Ns2Vegas {
        let mut v = Ns2Vegas::new(1, 3, 1, 2, 1000);
        v.w.cwnd = v.w.initial; // past the first segment (the SYN's stand-in)
        v.on_output(0);
        v.w.t_seqno = 2;
        v.on_ack(1, seg(0, false), seg(0, false), 1, 100 * MS);
        v
    }

    #[test]
    fn the_first_ack_sets_the_fine_grained_timer_and_ends_the_first_round() {
        let v = started();
        assert!((v.timeout - 0.15).abs() < 1e-12, "{}", v.timeout);
        // The first round (from segment 0) ended: rtt = 0.1 s from the clock,
        // 2 segments in it; baseRTT 0.1, expect (2 - 0) / 0.1 = 20, actual
        // 2 / 0.1 = 20: delta 0. Slow start's flag flips off: no growth.
        assert_eq!((v.inc_flag, v.incr, v.beg_seq), (false, 0.0, 2));
        assert_eq!(v.w.cwnd, 2.0);
    }

    /// Segment 0 at 0 ms, its ACK at 100 ms; a segment sent once at 50 ms
    /// ACKed at 130 ms is an 80 ms sample: sa = 0.8 + (0.08 - 0.1) = 0.78,
    /// sd = 0.1 + 0.02 - 0.025 = 0.095, v_timeout = (0.195 + 0.095) / 2 x 17/16.
    #[test]
    fn a_sample_updates_v_timeout_as_ns2_does() {
        let mut v = started();
        v.w.t_seqno = 4;
        v.on_ack(2, seg(50, false), None, 3, 130 * MS);
        let want = (0.78 / 4.0 + 0.095) / 2.0 * 17.0 / 16.0;
        assert!((v.timeout - want).abs() < 1e-12, "{} vs {want}", v.timeout);
        assert_eq!((v.cnt_rtt, v.base_rtt), (1, 0.08));
    }

    /// cwnd 20 in avoidance, segments 10-29 out, segment 10 sent at 1 s and
    /// lost. Duplicate ACKs: the first at 1.05 s finds the head 50 ms old,
    /// under v_timeout 0.15 s; the third resends it and cuts cwnd to 3/4 of
    /// 20 = 15, inflated by the 3 duplicates to 18; a fourth inflates to 19.
    /// The new ACK deflates to 15 with ssthresh 2.
    #[test]
    fn the_third_duplicate_resends_and_cuts_to_three_quarters() {
        let mut v = started();
        (v.w.cwnd, v.w.ssthresh, v.w.t_seqno, v.w.last_ack, v.beg_seq) = (20.0, 2, 30, 9, 100);
        let head = seg(1000, false);
        for (k, t) in [1050u64, 1051].into_iter().enumerate() {
            let a = v.on_ack(10, None, head, 29, t * MS);
            assert_eq!((a.resend, a.send, v.w.dupacks), (None, false, k as u32 + 1));
        }
        let a = v.on_ack(10, None, head, 29, 1052 * MS);
        assert_eq!((a.resend, a.send, a.backoff, v.w.cwnd, v.newcwnd), (Some(10), true, true, 18.0, 15.0));
        v.on_ack(10, None, head, 29, 1053 * MS);
        assert_eq!(v.w.cwnd, 19.0);
        let a = v.on_ack(11, seg(1000, true), seg(1001, false), 29, 1100 * MS);
        assert_eq!((v.w.cwnd, v.w.ssthresh, a.resend), (15.0, 2, None));
    }

    /// A head that waited v_timeout is resent on the first duplicate ACK,
    /// and once resent a later cut halves.
    #[test]
    fn an_expired_head_is_resent_on_the_first_duplicate() {
        let mut v = started();
        (v.w.cwnd, v.w.ssthresh, v.w.t_seqno, v.w.last_ack, v.beg_seq) = (20.0, 2, 30, 9, 100);
        let a = v.on_ack(10, None, seg(1000, false), 29, 1200 * MS);
        assert_eq!((a.resend, v.w.cwnd), (Some(10), 16.0));
        // Resent at 1.2 s; at 1.6 s it has waited past the doubled timer.
        v.cwnd_changed = 0.0;
        let a = v.on_ack(10, None, seg(1200, true), 29, 1600 * MS);
        assert_eq!((a.resend, v.newcwnd), (Some(10), 8.0));
    }

    /// The coarse timer: back to the head, ssthresh half the window, cwnd 2.
    #[test]
    fn a_timeout_goes_back_to_the_head() {
        let mut v = started();
        (v.w.cwnd, v.w.t_seqno, v.w.last_ack) = (21.0, 30, 9);
        v.on_timeout(29, 2000 * MS);
        assert_eq!((v.w.t_seqno, v.w.ssthresh, v.w.cwnd), (10, 10, 2.0));
        assert!(v.w.may_send());
    }

    /// Slow start grows one packet per ACK every other round and leaves when
    /// the queue passes gamma: cwnd - cwnd/8, ssthresh 2.
    #[test]
    fn slow_start_leaves_with_an_eighth_off() {
        let mut v = started();
        (v.w.cwnd, v.w.t_seqno, v.w.last_ack, v.beg_seq, v.beg_time) = (16.0, 18, 1, 2, 0.1);
        // Round of 16 segments at 0.2 s mean RTT against baseRTT 0.1:
        // expect 16 / 0.1 = 160, actual 16 / 0.2 = 80, delta = 8 > gamma.
        (v.sum_rtt, v.cnt_rtt) = (0.2, 1);
        v.on_ack(3, None, None, 17, 300 * MS);
        assert_eq!((v.w.ssthresh, v.w.cwnd), (2, 14.0));
    }
}
