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

use super::ns2_agent::{Action, AgentWindow};

/// ns-2's `numdupacks_` (tcl/lib/ns-default.tcl).
const NUMDUPACKS: u32 = 3;

#[derive(Clone, Debug)]
pub struct Ns2Tahoe {
    /// cwnd, ssthresh and the sequence space (`TcpAgent`'s).
    pub w: AgentWindow,
}

impl Ns2Tahoe {
    pub fn new(initial_cwnd: u32, wnd: u64) -> Self {
        Ns2Tahoe { w: AgentWindow::new(initial_cwnd, wnd) }
    }

    /// An ACK (the engine's cumulative ACK `ack`); `highest_sent` is ns-2's
    /// `maxseq_`. Returns what to send: `send_much` unless this is one of the
    /// first two duplicates, which send one segment at once instead
    /// (`send_one`; the send loop's test `may_send_one` lets it out).
    pub fn on_ack(&mut self, ack: u64, highest_sent: u64) -> Action {
        let seqno = ack as i64 - 1;
        let mut action = Action::default();
        if seqno > self.w.last_ack {
            self.w.newack(ack);
            self.w.cwnd += if self.w.cwnd < self.w.ssthresh as f64 { 1.0 } else { 1.0 / self.w.cwnd };
            self.w.delay_growth();
        } else if seqno == self.w.last_ack {
            self.w.dupacks += 1;
            if self.w.dupacks == NUMDUPACKS {
                action.restart = self.dupack_action(highest_sent as i64);
            }
        }
        action.send_one = (1..NUMDUPACKS).contains(&self.w.dupacks);
        action.send = !action.send_one;
        action
    }

    /// The first two duplicates may send one segment past the window
    /// (`send_one`: within wnd and cwnd + dupacks).
    pub fn may_send_one(&self) -> bool {
        let t = self.w.t_seqno as i64;
        (1..NUMDUPACKS).contains(&self.w.dupacks)
            && t <= self.w.last_ack + self.w.wnd as i64
            && (t as f64) <= self.w.last_ack as f64 + self.w.cwnd + self.w.dupacks as f64
    }

    /// The third duplicate: Tahoe's cut, unless the window was cut already.
    fn dupack_action(&mut self, maxseq: i64) -> bool {
        let recovered = self.w.last_ack > self.w.recover;
        if !(recovered || self.w.last_ack == 0) {
            return false;
        }
        self.w.recover = maxseq;
        // `slowdown(CLOSE_SSTHRESH_HALF|CLOSE_CWND_ONE)`, `reset_rtx_timer(0, 0)`.
        self.w.cut_to(1.0);
        true
    }

    /// The coarse timer fired with data outstanding: the same cut
    /// (`slowdown(CLOSE_SSTHRESH_HALF|CLOSE_CWND_RESTART)`, `wnd_restart_` 1).
    pub fn on_timeout(&mut self, highest_sent: u64) {
        self.w.recover = highest_sent as i64;
        self.w.dupacks = 0;
        self.w.cut_to(1.0);
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
        t.w.cwnd = t.w.initial; // past the first segment (the SYN's stand-in)
        (t.w.ssthresh, t.w.t_seqno, t.w.last_ack) = (5, 15, 4);
        assert!(!t.w.may_send());
        for k in 1..=2 {
            let a = t.on_ack(5, 14);
            assert!(a.send_one && !a.send && !a.restart);
            assert!(t.may_send_one(), "duplicate {k}");
            t.w.t_seqno += 1;
        }
        assert!(!t.may_send_one(), "one segment per duplicate");
        let a = t.on_ack(5, 16);
        assert!(a.restart);
        assert_eq!((t.w.ssthresh, t.w.cwnd, t.w.t_seqno), (5, 1.0, 5));
        assert!(t.w.may_send());
        // More duplicates of the same window change nothing.
        t.on_ack(5, 16);
        assert_eq!((t.w.cwnd, t.w.t_seqno), (1.0, 5));
    }

    /// ns-2 has no fast retransmit for the first segment (`highest_ack_` -1
    /// is not past `recover_` 0): the timer resends it.
    #[test]
    fn the_first_segment_s_loss_waits_for_the_timer() {
        let mut t = Ns2Tahoe::new(10, 1000);
        t.w.cwnd = t.w.initial; // past the first segment (the SYN's stand-in)
        t.w.t_seqno = 10;
        for _ in 0..3 {
            assert!(!t.on_ack(0, 9).restart);
        }
        assert_eq!(t.w.cwnd, 10.0);
    }

    /// The first segment stands in for the SYN: the window is 1 until its
    /// ACK, which sets `windowInit_` (2); then a packet per ACK below
    /// ssthresh, then 1/cwnd.
    #[test]
    fn the_window_opens_per_ack() {
        let mut t = Ns2Tahoe::new(2, 1000);
        t.w.ssthresh = 3;
        assert_eq!(t.w.cwnd, 1.0);
        t.on_ack(1, 1);
        assert_eq!(t.w.cwnd, 2.0, "windowInit_ once the first segment is ACKed");
        t.on_ack(2, 2);
        assert_eq!(t.w.cwnd, 3.0);
        t.on_ack(3, 3);
        assert!((t.w.cwnd - (3.0 + 1.0 / 3.0)).abs() < 1e-12);
    }

    /// After a cut the losses of that window do not cut again until snd_una
    /// passes the recovery point; then they do.
    #[test]
    fn one_cut_per_window() {
        let mut t = Ns2Tahoe::new(20, 1000);
        t.w.cwnd = t.w.initial; // past the first segment (the SYN's stand-in)
        (t.w.ssthresh, t.w.t_seqno, t.w.last_ack) = (10, 30, 5);
        t.w.recover = 0;
        for _ in 0..3 {
            t.on_ack(6, 29);
        }
        assert_eq!((t.w.ssthresh, t.w.recover), (10, 29));
        t.w.t_seqno = 20;
        t.on_ack(12, 29);
        for _ in 0..3 {
            t.on_ack(12, 29);
        }
        assert_eq!(t.w.cwnd, 2.0, "12 <= recover 29: no second cut");
        t.on_timeout(29);
        assert_eq!((t.w.ssthresh, t.w.cwnd, t.w.t_seqno), (2, 1.0, 12));
    }
}
