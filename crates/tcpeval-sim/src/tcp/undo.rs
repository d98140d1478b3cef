//! Undo of a window reduction that turns out to be unneeded (Linux
//! `tcp_try_undo_*`, net/ipv4/tcp_input.c): when every retransmission of an
//! episode proves spurious (D-SACKs, RFC 2883) or the first ACK after the
//! first retransmission echoes a timestamp older than it (Eifel detection,
//! RFC 3522: the original got through), the sender puts back the window and
//! ssthresh it had before.
//!
//! The bookkeeping is Linux's: `undo_marker` (snd_una when the episode began;
//! None once undone or given up), `undo_retrans` (retransmissions of the
//! episode not yet D-SACKed), `retrans_stamp` (send time of its first
//! retransmission) and `prior_ssthresh`/`prior_cwnd`. The simulated paths
//! never reorder packets, so Linux's undo after a partial ACK
//! (`tcp_try_undo_partial`: a hole filled by the original segment) cannot
//! arise and is not modelled; what remains are spurious timeouts and their
//! go-back-N retransmissions, and spurious fast retransmits after them.
//!
//! Read at 2.6.22 (`UndoRule::Linux26`: `tcp_undo_cwr`, `tcp_may_undo`,
//! `tcp_try_undo_recovery`, `tcp_try_undo_dsack`, `tcp_try_undo_loss`,
//! `tcp_try_to_open`; tcp_output.c `tcp_retransmit_skb`; 2.4.22 has the same
//! functions) and at 3.16.0 (`UndoRule::Linux316`: `tcp_undo_cwnd_reduction`,
//! `tcp_enter_recovery`, `tcp_enter_loss`, `tcp_try_keep_open`); today's
//! `tcp_undo_cwnd_reduction` as 3.16's but for the default window
//! (`UndoRule::Linux66`: `tcp_reno_undo_cwnd`, max(cwnd, prior_cwnd)).

use super::scoreboard::Scoreboard;
use crate::cc::{CcState, CongestionOps};
use crate::net::SegRange;
use crate::time::Time;

/// Linux `tcp_max_burst` (tp->reordering, 3): `tcp_moderate_cwnd` allows
/// this many packets above those in flight; ns-2.35's TCP-Linux has its own
/// `tcp_max_burst` = 3 (tcp/linux/ns-linux-param.c), the same.
pub const MAX_BURST: u64 = 3;

/// Which stack's undo the flow runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UndoRule {
    /// No undo: ns-2's agents ("We don't have undo yet", tcp/tcp-linux.cc).
    #[default]
    Off,
    /// Linux 2.4-2.6.22: `tcp_undo_cwr` restores the module's `undo_cwnd` or
    /// max(cwnd, 2 ssthresh), then moderates cwnd to in flight + 3; the
    /// sender stays in Disorder while an undo is still possible
    /// (`tcp_try_to_open`: "left_out || retrans_out || undo_marker"), for
    /// about one RTT after each recovery, moderating cwnd on every ACK.
    Linux26,
    /// Linux 3.16: no moderation, no Disorder for the undo's sake
    /// (`tcp_try_keep_open`), undo_retrans -1 when nothing was retransmitted,
    /// and a recovery that was undone keeps its window at the end
    /// (`tcp_end_cwnd_reduction` sets ssthresh only while `undo_marker`).
    Linux316,
    /// Today's Linux: 3.16's, with `undo_cwnd` mandatory (Reno's: max(cwnd,
    /// prior_cwnd), "tcp: make undo_cwnd mandatory for congestion modules", 4.13).
    Linux66,
}

/// The undo state of one sender.
#[derive(Clone, Copy, Debug, Default)]
pub struct Undo {
    pub rule: UndoRule,
    marker: Option<u64>,
    retrans: i64,
    stamp: Option<Time>,
    prior_ssthresh: u32,
    prior_cwnd: u32,
    /// Undos done (Linux's TCPFullUndo, TCPDSACKUndo, TCPLossUndo together).
    pub count: u64,
}

/// Linux `tcp_current_ssthresh`: in Open or Disorder, at least 3/4 of cwnd.
fn current_ssthresh(s: &CcState) -> u32 {
    s.ssthresh.max((s.cwnd >> 1) + (s.cwnd >> 2))
}

impl Undo {
    pub fn new(rule: UndoRule) -> Self {
        Undo { rule, ..Undo::default() }
    }

    fn on(&self) -> bool {
        self.rule != UndoRule::Off
    }

    /// Whether an undo is still possible (Linux `undo_marker` set).
    pub fn pending(&self) -> bool {
        self.marker.is_some()
    }

    /// A segment is retransmitted at `now` (`tcp_retransmit_skb`).
    pub fn on_retransmit(&mut self, now: Time) {
        if !self.on() {
            return;
        }
        self.stamp.get_or_insert(now);
        // 3.16 on: -1 (nothing retransmitted) counts from 0; 2.6.22 counts on
        // from wherever blind D-SACK counting took it.
        if self.rule != UndoRule::Linux26 {
            self.retrans = self.retrans.max(0);
        }
        self.retrans += 1;
    }

    /// Recovery starts (`tcp_enter_recovery`), before the new ssthresh: from
    /// Open or Disorder the old ssthresh is kept for an undo, from CWR (or on
    /// an ECE ACK) only the state is.
    pub fn start_recovery(&mut self, snd_una: u64, retrans_out: u32, s: &CcState, reduces: bool) {
        if !self.on() {
            return;
        }
        self.marker = Some(snd_una);
        self.retrans = if retrans_out > 0 || self.rule == UndoRule::Linux26 { retrans_out as i64 } else { -1 };
        self.prior_ssthresh = if reduces { current_ssthresh(s) } else { 0 };
        self.prior_cwnd = s.cwnd;
    }

    /// A retransmission timeout (`tcp_enter_loss`, before the segments are
    /// marked lost): `reduces` when it takes a new ssthresh; `retransmitted`
    /// when an outstanding segment was retransmitted before (2.6.22: ever,
    /// TCPCB_RETRANS; 3.16: in flight, TCPCB_SACKED_RETRANS), which rules the
    /// undo out. Today's Linux sets the marker only with a new ssthresh
    /// (`tcp_init_undo` inside that branch).
    pub fn start_loss(&mut self, snd_una: u64, s: &CcState, reduces: bool, retransmitted: bool) {
        if !self.on() {
            return;
        }
        if reduces {
            self.prior_ssthresh = current_ssthresh(s);
            self.prior_cwnd = s.cwnd;
        }
        self.retrans = if self.rule == UndoRule::Linux26 { 0 } else { -1 };
        let keeps = reduces || self.rule != UndoRule::Linux66;
        self.marker = (keeps && !retransmitted).then_some(snd_una);
    }

    /// ECN proved congestion (an ECE, `tcp_enter_cwr`): an undo may end the
    /// episode but not restore the window.
    pub fn forbid_window_undo(&mut self) {
        self.prior_ssthresh = 0;
    }

    /// A D-SACK reports `dsack` (segments) as received twice
    /// (`tcp_check_dsack`, `tcp_sacktag_one`): below `prior_una` counted
    /// blindly, above it per segment that was retransmitted.
    pub fn on_dsack(&mut self, dsack: SegRange, prior_una: u64, board: &Scoreboard) {
        let Some(marker) = self.marker else { return };
        let guarded = self.rule != UndoRule::Linux26;
        let mut take = |n: i64| {
            if !guarded || self.retrans > 0 {
                self.retrans -= n;
            }
        };
        if dsack.1 <= prior_una {
            if dsack.1 > marker {
                take(1);
            }
            return;
        }
        let from = dsack.0.max(board.snd_una).max(marker);
        let n = (from..dsack.1.min(board.snd_nxt)).filter(|&q| board.ever_retransmitted(q)).count();
        take(n as i64);
    }

    /// Linux `tcp_packet_delayed`: nothing retransmitted, or the ACK echoes a
    /// timestamp older than the first retransmission.
    fn packet_delayed(&self, tsecr: Option<Time>) -> bool {
        match self.stamp {
            None => true,
            Some(stamp) => tsecr.is_some_and(|e| e < stamp),
        }
    }

    /// Linux `tcp_may_undo`.
    pub fn may_undo(&self, tsecr: Option<Time>) -> bool {
        self.marker.is_some() && (self.retrans == 0 || self.packet_delayed(tsecr))
    }

    /// `tcp_try_undo_dsack`: every retransmission was D-SACKed.
    pub fn dsacks_undo_all(&self) -> bool {
        self.marker.is_some() && self.retrans == 0
    }

    /// Put the window and ssthresh back (`tcp_undo_cwr` at 2.6.22,
    /// `tcp_undo_cwnd_reduction` at 3.16 and today). `in_flight`: after the
    /// ACK, for 2.6.22's moderation.
    pub fn undo<C: CongestionOps>(&mut self, cc: &mut C, s: &mut CcState, in_flight: u64) {
        self.count += 1;
        self.marker = None;
        if self.prior_ssthresh > 0 {
            let fallback = match self.rule {
                UndoRule::Linux66 => s.cwnd.max(self.prior_cwnd),
                _ => s.cwnd.max(s.ssthresh.saturating_mul(2)),
            };
            s.cwnd = cc.undo_cwnd(s).unwrap_or(fallback);
            s.ssthresh = s.ssthresh.max(self.prior_ssthresh);
        } else if self.rule != UndoRule::Linux66 {
            s.cwnd = s.cwnd.max(s.ssthresh);
        }
        if self.rule == UndoRule::Linux26 {
            moderate(s, in_flight);
        }
    }

    /// The episode is over and the window stays reduced: no undo any more.
    pub fn give_up(&mut self) {
        self.marker = None;
    }

    /// Back in Open with nothing retransmitted in flight: the next
    /// retransmission starts a new stamp (`tcp_try_to_open`,
    /// `tcp_fastretrans_alert` in Open).
    #[inline]
    pub fn clear_stamp(&mut self, retrans_in_flight: bool) {
        if !retrans_in_flight && self.stamp.is_some() {
            self.stamp = None;
        }
    }
}

/// Linux `tcp_moderate_cwnd`: no more than 3 packets above those in flight.
pub fn moderate(s: &mut CcState, in_flight: u64) {
    let cap = u32::try_from(in_flight + MAX_BURST).unwrap_or(u32::MAX);
    s.cwnd = s.cwnd.min(cap);
}
