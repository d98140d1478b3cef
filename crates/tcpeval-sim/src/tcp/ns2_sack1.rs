//! ns-2's SACK sender, `Agent/TCP/Sack1` (`Sack1TcpAgent`, tcp/tcp-sack1.cc in
//! ns-2.35, on `TcpAgent` of tcp/tcp.cc and the `ScoreBoardRQ` of
//! tcp/scoreboard-rq.cc). The `ns2` stack runs it for Reno and HighSpeed
//! (`windowOption_` 8, Floyd's RFC 3649 code in tcp.cc) on flows with SACK,
//! the agent seed 004 (dalton2004) ran (docs/stacks.md).
//!
//! * The window is a real number: a new ACK adds 1 below ssthresh, else
//!   1/cwnd (HighSpeed: a(w)/w above `low_window_` 38); the sender keeps
//!   `int(cwnd)` packets out (`window()`).
//! * The first two duplicates that bring new SACK information each send one
//!   segment beyond the window (`singledup_` 1, `send_one`); the third starts
//!   a recovery unless snd_una has not passed the last one's point (`bug_fix_`):
//!   ssthresh int(cwnd/2), cwnd cwnd/2 as a real (`precisionReduce_`; HighSpeed
//!   above 38 cuts by b(w)), the head resent, and the pipe estimate
//!   `maxseq - highest_ack - 3`.
//! * In recovery every ACK takes one off the pipe, a partial ACK one more
//!   (`partial_ack_` false); while pipe < int(cwnd) the sender resends the next
//!   hole below the highest SACK it has not resent (the scoreboard's pointer
//!   only moves forward), else new data within the receive window. The ACK
//!   of the recovery point ends it with cwnd unchanged.
//! * A timeout forgets the SACK information, halves ssthresh, sets cwnd to 1
//!   and goes back to the head (go-back-N, SACKed segments included).
//!
//! Kept as ns-2 has them: `decrease_num_`, which a HighSpeed cut above 38
//! overwrites with b(w), stays so for later cuts below 38 (they cut to
//! b x cwnd); the first cut and cuts in slow start halve. The SACK blocks ns-2
//! knows are the ones reported since its last clear; here, once an ACK has
//! reported any, the engine's scoreboard (every block reported) stands in.
//! Sequence numbers are the engine's; ns-2's ACK number is the engine's
//! cumulative ACK minus one.

use super::ns2_agent::{Action, AgentWindow};
use super::scoreboard::Scoreboard;
use std::cell::Cell;

/// ns-2's `numdupacks_` (tcl/lib/ns-default.tcl).
const NUMDUPACKS: u32 = 3;
/// `low_window_`, `high_window_`, `high_p_`, `high_decrease_` (ns-default.tcl).
const LOW_WINDOW: f64 = 38.0;
const HIGH_WINDOW: f64 = 83000.0;
const HIGH_P: f64 = 1e-7;
const HIGH_DECREASE: f64 = 0.1;

/// How the window opens and closes in congestion avoidance (`windowOption_`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WindowOption {
    /// 1: 1/cwnd per ACK, halve on a loss.
    Standard,
    /// 8: HighSpeed, RFC 3649 on a log-log scale (`increase_param`, `decrease_param`).
    HighSpeed,
}

/// RFC 3649's b(w) and a(w) in ns-2's closed form (`TcpAgent::reset` computes
/// the coefficients): b falls from 0.5 at `low_window_` to `high_decrease_` at
/// `high_window_` linearly in log w; p(w) from 1.5/w^2 to `high_p_` linearly in
/// log-log; a(w) = w^2 p(w) / (1/b(w) - 0.5).
pub fn hs_decrease(w: f64) -> f64 {
    let slope = (HIGH_DECREASE - 0.5) / (HIGH_WINDOW.ln() - LOW_WINDOW.ln());
    0.5 + (w.ln() - LOW_WINDOW.ln()) * slope
}

pub fn hs_increase(w: f64) -> f64 {
    let low_p = 1.5 / (LOW_WINDOW * LOW_WINDOW);
    let slope = (HIGH_P.ln() - low_p.ln()) / (HIGH_WINDOW.ln() - LOW_WINDOW.ln());
    let p = (low_p.ln() + (w.ln() - LOW_WINDOW.ln()) * slope).exp();
    w * w * p / (1.0 / hs_decrease(w) - 0.5)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LastCut {
    None,
    Dupack,
    Timeout,
}

#[derive(Clone, Debug)]
pub struct Ns2Sack1 {
    /// cwnd, ssthresh, the receive window, duplicates, `t_seqno_`,
    /// `last_ack_` and `recover_` (`TcpAgent`'s).
    pub w: AgentWindow,
    option: WindowOption,
    /// `highest_ack_`: partial ACKs move it, not `last_ack_`.
    highest_ack: i64,
    fastrecov: bool,
    pipe: i64,
    /// `timeout_`: set by a timeout until the next new ACK; duplicates are ignored.
    timeout: bool,
    /// The scoreboard's retransmission pointer (`h_seqno_`).
    h_seqno: i64,
    /// Where the last search for a hole stopped: below it every segment from
    /// the pointer up is SACKed (a SACK is never withdrawn), so a search in
    /// a long recovery does not rescan the window for each packet.
    scanned: Cell<u64>,
    /// Whether an ACK has reported SACK blocks since the scoreboard was cleared.
    sack_known: bool,
    /// A duplicate asked for `send_one`.
    one_pending: bool,
    first_decrease: bool,
    decrease_num: f64,
    last_cut: LastCut,
}

impl Ns2Sack1 {
    pub fn new(option: WindowOption, initial_cwnd: u32, wnd: u64) -> Self {
        Ns2Sack1 {
            w: AgentWindow::new(initial_cwnd, wnd),
            option,
            highest_ack: -1,
            fastrecov: false,
            pipe: -1,
            timeout: false,
            h_seqno: -1,
            scanned: Cell::new(0),
            sack_known: false,
            one_pending: false,
            first_decrease: true,
            decrease_num: 0.5,
            last_cut: LastCut::None,
        }
    }

    /// An ACK (the engine's cumulative ACK `ack`); `sack_news`: it SACKed
    /// something new (`CheckUpdate`); `maxseq` the highest segment sent.
    pub fn on_ack(&mut self, ack: u64, sack_news: bool, maxseq: i64) -> Action {
        let seqno = ack as i64 - 1;
        self.one_pending = false;
        if self.fastrecov {
            return self.on_ack_in_recovery(ack, sack_news);
        }
        let mut action = Action::default();
        if seqno > self.w.last_ack {
            // recv_newack_helper: newack, then opencwnd.
            self.newack(ack);
            self.open_cwnd();
            self.w.delay_growth();
            self.timeout = false;
            self.clear_scoreboard();
        } else if seqno == self.w.last_ack && !self.timeout {
            self.sack_known = true;
            if sack_news {
                self.w.dupacks += 1;
                if self.w.dupacks == NUMDUPACKS {
                    action = self.dupack_action(maxseq);
                } else if self.w.dupacks < NUMDUPACKS {
                    self.one_pending = true;
                }
            }
        }
        // send_much runs only without duplicates; send_one goes at once.
        action.send = self.w.dupacks == 0;
        action.send_one = self.one_pending;
        action
    }

    fn on_ack_in_recovery(&mut self, ack: u64, sack_news: bool) -> Action {
        let seqno = ack as i64 - 1;
        self.pipe -= 1;
        if seqno >= self.w.recover {
            // The recovery is over: the window stays where the cut left it.
            self.w.recover = 0;
            self.fastrecov = false;
            self.newack(ack);
            self.timeout = false;
            self.clear_scoreboard();
        } else if seqno > self.highest_ack {
            // A partial ACK: `partial_ack_` false takes one more off the pipe.
            self.highest_ack = seqno;
            self.sack_known = true;
            self.pipe -= 1;
        } else if !self.timeout {
            self.sack_known = true;
            if sack_news && self.w.dupacks > 0 {
                self.w.dupacks += 1;
            }
        }
        Action { send: true, ..Action::default() }
    }

    /// `newack`: last_ack_ and highest_ack_ move to the ACK.
    fn newack(&mut self, ack: u64) {
        self.w.newack(ack);
        self.highest_ack = self.w.last_ack;
    }

    fn clear_scoreboard(&mut self) {
        self.sack_known = false;
        self.h_seqno = -1;
    }

    /// `opencwnd` (no `max_ssthresh_`, no `maxcwnd_`).
    fn open_cwnd(&mut self) {
        let w = &mut self.w;
        w.cwnd += if w.cwnd < w.ssthresh as f64 {
            1.0
        } else if self.option == WindowOption::HighSpeed && w.cwnd > LOW_WINDOW {
            hs_increase(w.cwnd) / w.cwnd
        } else {
            1.0 / w.cwnd
        };
    }

    /// The third duplicate (`dupack_action`, `sack_action`).
    fn dupack_action(&mut self, maxseq: i64) -> Action {
        let recovered = self.highest_ack > self.w.recover;
        if !(recovered || self.highest_ack == 0) {
            return Action::default();
        }
        self.w.recover = maxseq;
        self.pipe = maxseq - self.highest_ack - NUMDUPACKS as i64;
        self.fastrecov = true;
        self.mark_retran(self.highest_ack + 1);
        self.last_cut = LastCut::Dupack;
        let half = self.slowdown();
        self.w.cwnd = half;
        // `output(last_ack_ + 1)` and `reset_rtx_timer(1, 0)`: the head goes
        // now, outside the pipe's count, and the timer restarts.
        Action { resend: Some((self.w.last_ack + 1) as u64), restart: true, ..Action::default() }
    }

    /// `slowdown(CLOSE_SSTHRESH_HALF | ...)` with `precisionReduce_`: sets
    /// ssthresh and returns the window `CLOSE_CWND_HALF` would set.
    fn slowdown(&mut self) -> f64 {
        let slow_start = self.w.cwnd < self.w.ssthresh as f64;
        let win = self.w.cwnd.min(self.w.wnd);
        let half = win / 2.0;
        let reduced = if self.option == WindowOption::HighSpeed && self.w.cwnd > LOW_WINDOW {
            self.decrease_num = hs_decrease(self.w.cwnd);
            win - self.decrease_num * win
        } else {
            self.decrease_num * win
        };
        let plain = self.first_decrease || slow_start;
        let ssthresh = if plain || self.last_cut == LastCut::Timeout { half } else { reduced };
        self.w.ssthresh = (ssthresh as i64).max(2);
        self.first_decrease = false;
        let cwnd = if plain || self.decrease_num == 0.5 { half } else { reduced };
        cwnd.max(1.0)
    }

    /// `MarkRetran`: the pointer passes `seq`.
    fn mark_retran(&mut self, seq: i64) {
        self.h_seqno = self.h_seqno.max(seq + 1);
    }

    /// `GetNextRetran`: the first segment from the pointer (at least snd_una)
    /// that is not SACKed and has SACKed data above it.
    fn next_retran(&self, board: &Scoreboard) -> Option<u64> {
        if !self.sack_known {
            return None;
        }
        let from = (self.h_seqno.max(0) as u64).max(board.snd_una).max(self.scanned.get());
        let end = board.highest_sacked();
        let hole = (from..end).find(|&s| !board.is_sacked(s));
        self.scanned.set(hole.unwrap_or(end.max(from)));
        hole
    }

    /// The next segment `send_much` (or `send_one`) would send, and whether it
    /// is a resend of a hole.
    pub fn next_send(&self, board: &Scoreboard) -> Option<(u64, bool)> {
        let t = self.w.t_seqno as i64;
        let wnd = self.w.wnd as i64;
        if self.one_pending {
            let fits = t <= self.highest_ack + wnd && (t as f64) <= self.highest_ack as f64 + self.w.cwnd + self.w.dupacks as f64;
            return fits.then_some((t as u64, false));
        }
        let win = self.w.window();
        let open = if self.fastrecov { self.pipe < self.w.cwnd as i64 } else { self.w.dupacks == 0 && t <= self.w.last_ack + win };
        if !open {
            return None;
        }
        match self.next_retran(board) {
            Some(x) => (self.w.recover > 0 && x as i64 <= self.highest_ack + wnd).then_some((x, true)),
            None => {
                let limit = if self.fastrecov { wnd } else { win };
                (t <= self.highest_ack + limit).then_some((t as u64, false))
            }
        }
    }

    /// Segment `seq` left (`hole`: a resend of a hole).
    pub fn sent(&mut self, seq: u64, hole: bool) {
        if std::mem::take(&mut self.one_pending) {
            self.w.t_seqno += 1;
            return;
        }
        if hole {
            self.mark_retran(seq as i64);
        }
        self.w.t_seqno = self.w.t_seqno.max(seq + 1);
        self.pipe += 1;
    }

    /// The coarse timer fired with data outstanding (`Sack1TcpAgent::timeout`,
    /// then `TcpAgent::timeout`: `slowdown(CLOSE_SSTHRESH_HALF|CLOSE_CWND_RESTART)`,
    /// `wnd_restart_` 1, `reset_rtx_timer(0, 1)`).
    pub fn on_timeout(&mut self, maxseq: i64) {
        self.w.dupacks = 0;
        self.one_pending = false;
        self.fastrecov = false;
        self.timeout = true;
        self.w.last_ack = self.w.last_ack.max(self.highest_ack);
        self.clear_scoreboard();
        self.w.cwnd = self.w.cwnd.max(1.0);
        self.w.recover = maxseq;
        self.last_cut = LastCut::Timeout;
        self.slowdown();
        self.w.cwnd = 1.0;
        self.w.t_seqno = (self.highest_ack + 1) as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Standard Sack1 past its first segment (the SYN's stand-in), with this
    /// window, ssthresh and next segment.
    fn standard(cwnd: f64, ssthresh: i64, t_seqno: u64) -> Ns2Sack1 {
        let mut a = Ns2Sack1::new(WindowOption::Standard, 10, 1000);
        (a.w.cwnd, a.w.ssthresh, a.w.t_seqno) = (cwnd, ssthresh, t_seqno);
        a
    }

    /// A scoreboard with `n` segments out from 0, those in `sacked` SACKed.
    fn board(n: u64, sacked: &[(u64, u64)]) -> Scoreboard {
        let mut b = Scoreboard::new(true, 64);
        for _ in 0..n {
            b.push_new();
        }
        b.apply_sack(sacked, &mut |_, _, _| {});
        b
    }

    /// Standard window 10 in avoidance, 0-9 out, 0 ACKed (the SYN's stand-in:
    /// cwnd becomes `windowInit_` 10), 1 lost; 2, 3, 4 arrive. The first two
    /// duplicates each let one segment past the window (10, 11); the third
    /// halves (cwnd 5, ssthresh 5), resends 1 and sets the pipe to maxseq 11 -
    /// highest_ack 0 - 3 = 8: nothing more leaves until the pipe falls below
    /// int(cwnd) 5.
    #[test]
    fn three_duplicates_halve_and_the_pipe_gates_sending() {
        let mut a = standard(10.0, 5, 10);
        a.on_ack(1, false, 9);
        assert_eq!(a.w.cwnd, 10.0);
        for (k, seq) in [(3u64, 10u64), (4, 11)] {
            let act = a.on_ack(1, true, seq as i64 - 1);
            assert!(act.send_one && !act.send && act.resend.is_none());
            let b = board(seq, &[(2, k)]);
            assert_eq!(a.next_send(&b), Some((seq, false)));
            a.sent(seq, false);
            assert_eq!(a.next_send(&b), None, "one segment per duplicate");
        }
        let act = a.on_ack(1, true, 11);
        assert_eq!((act.resend, act.restart, act.send), (Some(1), true, false));
        assert_eq!(a.w.cwnd, 5.0);
        assert_eq!((a.w.ssthresh, a.pipe, a.w.recover), (5, 8, 11));
        let b = board(12, &[(2, 5)]);
        assert_eq!(a.next_send(&b), None);
        // Four more duplicates (5-8 arrive): pipe 4 < 5 lets 12 out, 9 not
        // being below the highest SACK.
        for _ in 0..4 {
            a.on_ack(1, true, 11);
        }
        assert_eq!(a.pipe, 4);
        // Had 10 arrived instead of 8, 8 would be a hole: ns-2 resends it.
        assert_eq!(a.clone().next_send(&board(12, &[(2, 8), (10, 11)])), Some((8, true)));
        assert_eq!(a.next_send(&board(12, &[(2, 9)])), Some((12, false)));
    }

    /// In recovery the holes below the highest SACK go first, each once (the
    /// pointer moves past it), then new data; a partial ACK takes two off
    /// the pipe; the recovery point's ACK ends it with cwnd unchanged.
    #[test]
    fn recovery_resends_each_hole_once_and_ends_at_the_point() {
        let mut a = standard(10.0, 5, 20);
        a.on_ack(1, false, 19);
        for _ in 0..3 {
            a.on_ack(1, true, 19);
        }
        assert!(a.fastrecov);
        let (cwnd, recover) = (a.w.cwnd, a.w.recover);
        // 1 and 4 lost; SACKs for 2-3 and 5-12. The head was resent; 4 next.
        let b = board(20, &[(2, 4), (5, 13)]);
        a.pipe = 3;
        assert_eq!(a.next_send(&b), Some((4, true)));
        a.sent(4, true);
        assert_eq!(a.pipe, 4);
        assert_eq!(a.next_send(&b), Some((20, false)), "no hole left below 13 past the pointer");
        // A partial ACK (1 arrived: cumulative 4): pipe 4 - 2.
        a.on_ack(4, false, 20);
        assert_eq!((a.pipe, a.highest_ack, a.w.last_ack), (2, 3, 0));
        a.on_ack(recover as u64 + 1, false, 20);
        assert!(!a.fastrecov);
        assert_eq!((a.w.cwnd, a.w.last_ack, a.w.recover), (cwnd, recover, 0));
    }

    /// HighSpeed's a(w) and b(w) against RFC 3649's table (Appendix B, rounded
    /// there): w 118: 2, 0.44; 221: 3, 0.41; 1058: 8, 0.33; and 1, 0.5 at 38.
    #[test]
    fn highspeed_follows_rfc_3649_s_table() {
        for (w, a, b) in [(38.0, 1.0, 0.5), (118.0, 2.0, 0.44), (221.0, 3.0, 0.41), (1058.0, 8.0, 0.33)] {
            assert!((hs_increase(w) - a).abs() < 0.35, "a({w}) = {}", hs_increase(w));
            assert!((hs_decrease(w) - b).abs() < 0.005, "b({w}) = {}", hs_decrease(w));
        }
    }

    /// ns-2 keeps the b(w) of a HighSpeed cut above 38 in `decrease_num_`: a
    /// later cut at cwnd 20 sets cwnd to b(100) x 20, not 10. The first cut
    /// of a connection halves whatever the window.
    #[test]
    fn highspeed_keeps_its_last_decrease_below_low_window() {
        let mut a = Ns2Sack1::new(WindowOption::HighSpeed, 100, 100_000);
        a.w.cwnd = a.w.initial; // past the first segment (the SYN's stand-in)
        a.w.ssthresh = 50;
        assert_eq!(a.slowdown(), 50.0, "the first cut halves");
        assert_eq!(a.w.ssthresh, 50);
        a.w.cwnd = 100.0;
        let b100 = hs_decrease(100.0);
        assert!((a.slowdown() - (100.0 - b100 * 100.0)).abs() < 1e-9);
        (a.w.cwnd, a.w.ssthresh) = (20.0, 10);
        assert!((a.slowdown() - b100 * 20.0).abs() < 1e-9);
        assert_eq!(a.w.ssthresh, (b100 * 20.0) as i64);
    }

    /// A timeout: ssthresh int(11.6 / 2) = 5, cwnd 1, back to the head, and
    /// the SACK information is gone: 2, though SACKed, is sent again.
    #[test]
    fn a_timeout_forgets_the_sacks_and_goes_back_to_the_head() {
        let mut a = standard(11.6, 5, 12);
        a.on_ack(1, false, 11);
        a.on_ack(1, true, 11);
        a.on_timeout(11);
        assert_eq!((a.w.ssthresh, a.w.cwnd, a.w.t_seqno), (5, 1.0, 1));
        let b = board(12, &[(2, 3)]);
        assert_eq!(a.next_send(&b), Some((1, false)));
        a.sent(1, false);
        assert_eq!(a.next_send(&b), None, "cwnd 1");
        // Duplicates are ignored until a new ACK; that one opens to 2 and 2 goes again.
        assert_eq!(a.on_ack(1, true, 11).resend, None);
        a.on_ack(2, false, 11);
        assert_eq!(a.next_send(&b), Some((2, false)));
    }
}
