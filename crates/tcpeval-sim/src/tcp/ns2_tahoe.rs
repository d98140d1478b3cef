//! ns-2's default sender, `Agent/TCP` (`TcpAgent`, tcp/tcp.cc in ns-2.35):
//! Tahoe. The `ns2` stack runs it for `cc = "tahoe"` (docs/stacks.md), as
//! dalton2004's "standard TCP" ran (docs/studies/dalton2004.md).
//!
//! * A new ACK opens the window (`opencwnd`, `windowOption_` 1): one packet
//!   while cwnd < ssthresh, else 1/cwnd.
//! * The first two duplicate ACKs each send one new segment beyond the window
//!   (`singledup_` 1, limited transmit: `send_one`); the third, unless its
//!   losses belong to a window already cut (`bug_fix_`: snd_una not past
//!   `recover_`, except for the first segment's loss), halves ssthresh, sets
//!   cwnd to 1 and goes back to the head (`dupack_action`'s `tahoe_action`,
//!   `slowdown(CLOSE_SSTHRESH_HALF|CLOSE_CWND_ONE)`, `reset_rtx_timer(0, 0)`).
//! * The coarse timer does the same with a backed-off timer (`timeout`).
//!
//! No SACK (the sink's blocks are ignored); ssthresh starts at the receive
//! window (`TcpAgent::reset`). Sequence numbers are the engine's; ns-2's ACK
//! number is the engine's cumulative ACK minus one.

use super::ns2_vegas::Action;

/// ns-2's `numdupacks_` (tcl/lib/ns-default.tcl).
const NUMDUPACKS: u32 = 3;

#[derive(Clone, Debug)]
pub struct Ns2Tahoe {
    /// `cwnd_` (a double) and `ssthresh_` (an int).
    pub cwnd: f64,
    pub ssthresh: i64,
    /// The receive window `wnd_` in packets.
    wnd: f64,
    dupacks: u32,
    /// The next segment to send (`t_seqno_`).
    pub t_seqno: u64,
    /// `last_ack_` (= `highest_ack_`): the highest in-order segment, -1 first.
    last_ack: i64,
    recover: i64,
}

impl Ns2Tahoe {
    pub fn new(initial_cwnd: u32, wnd: u64) -> Self {
        let wnd = wnd.min(i32::MAX as u64) as f64;
        Ns2Tahoe { cwnd: initial_cwnd as f64, ssthresh: wnd as i64, wnd, dupacks: 0, t_seqno: 0, last_ack: -1, recover: 0 }
    }

    /// `window()`: min(cwnd, wnd) in whole packets.
    fn window(&self) -> i64 {
        self.cwnd.min(self.wnd) as i64
    }

    /// `send_much`'s test for segment `t_seqno`.
    pub fn may_send(&self) -> bool {
        (self.t_seqno as i64) <= self.last_ack + self.window()
    }

    /// An ACK (the engine's cumulative ACK `ack`); `highest_sent` is ns-2's
    /// `maxseq_`. Returns what to send: `send_one`'s segment rides on `send`
    /// (the loop's test `may_send_one` lets it out).
    pub fn on_ack(&mut self, ack: u64, highest_sent: u64) -> Action {
        let seqno = ack as i64 - 1;
        let mut action = Action { send: true, ..Action::default() };
        if seqno > self.last_ack {
            self.dupacks = 0;
            self.last_ack = seqno;
            self.t_seqno = self.t_seqno.max(ack);
            self.cwnd += if self.cwnd < self.ssthresh as f64 { 1.0 } else { 1.0 / self.cwnd };
        } else if seqno == self.last_ack {
            self.dupacks += 1;
            if self.dupacks == NUMDUPACKS {
                action.restart = self.dupack_action(highest_sent as i64);
            }
        }
        action
    }

    /// The first two duplicates may send one segment past the window
    /// (`send_one`: within wnd and cwnd + dupacks).
    pub fn may_send_one(&self) -> bool {
        let t = self.t_seqno as i64;
        (1..NUMDUPACKS).contains(&self.dupacks)
            && t <= self.last_ack + self.wnd as i64
            && (t as f64) <= self.last_ack as f64 + self.cwnd + self.dupacks as f64
    }

    /// The third duplicate: Tahoe's cut, unless the window was cut already.
    fn dupack_action(&mut self, maxseq: i64) -> bool {
        let recovered = self.last_ack > self.recover;
        if !(recovered || self.last_ack == 0) {
            return false;
        }
        self.recover = maxseq;
        self.cut();
        true
    }

    /// `slowdown(CLOSE_SSTHRESH_HALF|CLOSE_CWND_ONE)` and a go-back to the head.
    fn cut(&mut self) {
        self.ssthresh = (self.window() / 2).max(2);
        self.cwnd = 1.0;
        self.t_seqno = (self.last_ack + 1) as u64;
    }

    /// The coarse timer fired with data outstanding: the same cut
    /// (`slowdown(CLOSE_SSTHRESH_HALF|CLOSE_CWND_RESTART)`, `wnd_restart_` 1).
    pub fn on_timeout(&mut self, highest_sent: u64) {
        self.recover = highest_sent as i64;
        self.dupacks = 0;
        self.cut();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cwnd 10 in avoidance (ssthresh 5), segments 0-4 ACKed, 5-14 out, 5
    /// lost: two duplicates each allow one segment past the window (15, 16),
    /// the third halves: ssthresh 5, cwnd 1, back to segment 5.
    #[test]
    fn three_duplicates_halve_ssthresh_and_go_back_to_one() {
        let mut t = Ns2Tahoe::new(10, 1000);
        (t.ssthresh, t.t_seqno, t.last_ack) = (5, 15, 4);
        assert!(!t.may_send());
        for k in 1..=2 {
            let a = t.on_ack(5, 14);
            assert!(a.send && !a.restart);
            assert!(t.may_send_one(), "duplicate {k}");
            t.t_seqno += 1;
        }
        assert!(!t.may_send_one(), "one segment per duplicate");
        let a = t.on_ack(5, 16);
        assert!(a.restart);
        assert_eq!((t.ssthresh, t.cwnd, t.t_seqno), (5, 1.0, 5));
        assert!(t.may_send());
        // More duplicates of the same window change nothing.
        t.on_ack(5, 16);
        assert_eq!((t.cwnd, t.t_seqno), (1.0, 5));
    }

    /// ns-2 has no fast retransmit for the first segment (`highest_ack_` -1
    /// is not past `recover_` 0): the timer resends it.
    #[test]
    fn the_first_segment_s_loss_waits_for_the_timer() {
        let mut t = Ns2Tahoe::new(10, 1000);
        t.t_seqno = 10;
        for _ in 0..3 {
            assert!(!t.on_ack(0, 9).restart);
        }
        assert_eq!(t.cwnd, 10.0);
    }

    /// Slow start adds a packet per ACK below ssthresh, then 1/cwnd.
    #[test]
    fn the_window_opens_per_ack() {
        let mut t = Ns2Tahoe::new(2, 1000);
        t.ssthresh = 3;
        t.on_ack(1, 1);
        assert_eq!(t.cwnd, 3.0);
        t.on_ack(2, 2);
        assert!((t.cwnd - (3.0 + 1.0 / 3.0)).abs() < 1e-12);
    }

    /// After a cut the losses of that window do not cut again until snd_una
    /// passes the recovery point; then they do.
    #[test]
    fn one_cut_per_window() {
        let mut t = Ns2Tahoe::new(20, 1000);
        (t.ssthresh, t.t_seqno, t.last_ack) = (10, 30, 5);
        t.recover = 0;
        for _ in 0..3 {
            t.on_ack(6, 29);
        }
        assert_eq!((t.ssthresh, t.recover), (10, 29));
        t.t_seqno = 20;
        t.on_ack(12, 29);
        for _ in 0..3 {
            t.on_ack(12, 29);
        }
        assert_eq!(t.cwnd, 2.0, "12 <= recover 29: no second cut");
        t.on_timeout(29);
        assert_eq!((t.ssthresh, t.cwnd, t.t_seqno), (2, 1.0, 12));
    }
}
