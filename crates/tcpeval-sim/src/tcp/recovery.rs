//! The loss-recovery state machine (Linux `tcp_fastretrans_alert`, states of
//! `enum tcp_ca_state`): SACK-based recovery (RFC 6675) or NewReno without SACK
//! (RFC 6582), local congestion (CWR), timeouts (Loss), and the window during a
//! reduction by Proportional Rate Reduction (RFC 6937, as Linux
//! `tcp_cwnd_reduction`). In the spirit of ns-3's TcpRecoveryOps, kept apart
//! from the congestion-control algorithm, which it calls through tcp::hooks.
//!
//! The current state is `CcState::ca_state`, which the algorithms read.

use super::hooks;
use super::scoreboard::{Scoreboard, DUP_THRESH};
use super::undo::{self, Undo, UndoRule};
use crate::cc::{CaEvent, CaState, CcState, CongestionOps};
use crate::time::Time;

/// Proportional Rate Reduction state for one reduction (RFC 6937 section 3).
#[derive(Default)]
pub struct Prr {
    /// RecoverFS: Linux takes cwnd at the start of the reduction.
    prior_cwnd: u32,
    /// prr_delivered and prr_out.
    delivered: u32,
    out: u32,
}

impl Prr {
    fn start(cwnd: u32) -> Self {
        Prr { prior_cwnd: cwnd, delivered: 0, out: 0 }
    }

    /// The window after an ACK during the reduction (RFC 6937 section 3, with
    /// Linux's choices: below ssthresh the slow-start reduction bound where
    /// `slow_start_bound` says so (`Recovery::prr`), else the conservative one;
    /// the fast retransmit forced out on the first ACK). None when the ACK
    /// delivered nothing and lost nothing.
    pub fn cwnd(&mut self, ssthresh: u32, in_flight: u64, slow_start_bound: bool, delivered: u32, newly_lost: u32) -> Option<u32> {
        if delivered == 0 && newly_lost == 0 {
            return None;
        }
        self.delivered += delivered;
        let (in_flight, ssthresh) = (in_flight as i64, ssthresh as i64);
        let delta = ssthresh - in_flight;
        let sndcnt = if delta < 0 {
            // CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out
            let dividend = ssthresh as u64 * self.delivered as u64 + self.prior_cwnd.max(1) as u64 - 1;
            (dividend / self.prior_cwnd.max(1) as u64) as i64 - self.out as i64
        } else if slow_start_bound {
            delta.min((self.delivered as i64 - self.out as i64).max(delivered as i64) + 1)
        } else {
            delta.min(delivered as i64)
        };
        let sndcnt = sndcnt.max(if self.out == 0 { 1 } else { 0 });
        Some((in_flight + sndcnt).max(1) as u32)
    }
}

/// How the window comes down during a reduction (the stack's era).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduction {
    /// Proportional Rate Reduction (RFC 6937; Linux 3.2 on, "Proportional Rate
    /// Reduction for TCP"); cwnd = ssthresh when the episode ends. Below
    /// ssthresh the slow-start reduction bound (PRR-SSRB) only on an ACK that
    /// advanced snd_una and revealed no new loss, else the conservative one
    /// (PRR-CRB), as Linux from "tcp: PRR uses CRB mode by default and SS
    /// mode conditionally" (after 3.16).
    #[default]
    Prr,
    /// PRR as Linux 3.2 to that change: PRR-SSRB on every ACK below ssthresh
    /// (`tcp_cwnd_reduction` in net/ipv4/tcp_input.c read at 3.16.0,
    /// sndrzt/linux-3.16 e8dbc28b).
    PrrSsrb,
    /// Rate-halving, Linux 2.4-3.1 `tcp_cwnd_down` (`rate_halving`); when the
    /// episode ends cwnd = min(cwnd, ssthresh) (`tcp_complete_cwr`, 2.6.22).
    RateHalving,
    /// Linux 2.4's rate-halving (`tcp_cwnd_down` in net/ipv4/tcp_input.c read
    /// at 2.4.22, hooao/linux-2.4.22 aa17aeb): as `RateHalving`, but 2.4 had no
    /// congestion-control modules, so the floor is ssthresh / 2 whatever the
    /// algorithm (`tp->snd_cwnd > tp->snd_ssthresh/2`).
    RateHalving24,
    /// ns-2's Sack1 agent: cwnd = ssthresh at once, sending while the pipe
    /// is below it (tcp/tcp-sack1.cc).
    Halve,
    /// ns-2.35 TCP-Linux's own sender (`LinuxTcpAgent`, tcp/tcp-linux.cc) around
    /// the modules. Entry (`tcp_fastretrans_alert`): cwnd = the module's
    /// `min_cwnd` (else ssthresh) at once, and a pipe target
    /// `next_pkts_in_flight_` = the old cwnd. `send_much` sends while in flight
    /// < max(cwnd, pipe), first taking pipe = min(pipe, in flight + 1) and,
    /// after each packet, pipe = min(pipe, max(in flight - 1, 1)): one packet
    /// per two delivered, down to cwnd. With a send overhead (`overhead_` > 0,
    /// `delayed_send`) packets leave from the delayed-send timer, whose
    /// `LinuxTcpAgent::timeout` brackets `send_much` with `save_from_linux` and
    /// `load_to_linux`; the latter puts back the pipe `send_much` lowered, so
    /// only the per-ACK step remains and the flow keeps its pre-loss rate. Exit
    /// (snd_una past the recovery point, from Recovery or Loss): cwnd = ssthresh
    /// if below it, then at most packets out + `tcp_max_burst` (3,
    /// tcp/linux/ns-linux-param.c; `tcp_moderate_cwnd`); no `CA_EVENT_COMPLETE_CWR`.
    Ns2Linux { delayed_send: bool },
}

impl Reduction {
    /// ns-2 TCP-Linux's rule depends on its agent's `overhead_` (the flow's
    /// `send_jitter`, ns-2's delayed send); the other rules do not.
    pub fn with_send_jitter(self, jitter_ns: u64) -> Reduction {
        match self {
            Reduction::Ns2Linux { .. } => Reduction::Ns2Linux { delayed_send: jitter_ns > 0 },
            other => other,
        }
    }
}

/// What the state machine needs to know of an ACK (Linux's ACK flags).
#[derive(Clone, Copy, Debug, Default)]
pub struct AckInfo {
    /// Segments newly acknowledged cumulatively (FLAG_SND_UNA_ADVANCED when > 0).
    pub acked: u64,
    /// Newly SACKed data (FLAG_DATA_SACKED).
    pub sacked: bool,
    /// A segment never retransmitted was newly acknowledged or SACKed
    /// (FLAG_ORIG_SACK_ACKED): F-RTO's proof of a spurious timeout.
    pub orig_acked: bool,
    /// The timestamp echo, for the undo's Eifel test.
    pub tsecr: Option<Time>,
    /// New data could go out now (data left and the receive window open):
    /// F-RTO's step 2b sends it.
    pub can_send_new: bool,
    /// The head was last sent more than an RTO ago, at a stack that asks
    /// (`FackRule::head_timeout`: 2.4-2.6.22 `tcp_head_timedout`).
    pub head_timed_out: bool,
    /// Early retransmit found recovery due now (3.10-4.10; rack::
    /// early_retransmit_due without its pause).
    pub early_retransmit: bool,
}

impl AckInfo {
    /// An ACK of `acked` segments and nothing else (tests).
    pub fn cum(acked: u64) -> Self {
        AckInfo { acked, ..AckInfo::default() }
    }
}

/// Linux `tcp_cwnd_down` (net/ipv4/tcp_input.c, read at 2.6.22), the window
/// after an ACK during a reduction: on an ACK that delivered something, one
/// packet off cwnd every second such ACK (the parity kept in snd_cwnd_cnt,
/// `cnt`) while cwnd is above `floor`, and never more than in_flight + 1. The
/// floor is `tcp_cwnd_min`: the module's `min_cwnd` (half of ssthresh for Reno,
/// Scalable, HighSpeed...), else ssthresh (CongestionOps::min_cwnd).
pub fn rate_halving(cwnd: u32, cnt: &mut u32, floor: u32, in_flight: u64, progress: bool) -> u32 {
    if !progress {
        return cwnd;
    }
    let decr = *cnt + 1;
    *cnt = decr & 1;
    let mut cwnd = cwnd;
    if decr >> 1 > 0 && cwnd > floor {
        cwnd -= decr >> 1;
    }
    cwnd.min(u32::try_from(in_flight + 1).unwrap_or(u32::MAX))
}

pub struct Recovery {
    sack: bool,
    /// End of the current recovery episode (RFC 6582 "recover", Linux high_seq).
    high_seq: u64,
    prr: Prr,
    reduction: Reduction,
    /// Rate-halving's floor for the current reduction (`tcp_cwnd_min`).
    floor: u32,
    /// ns-2 TCP-Linux's `next_pkts_in_flight_` (Reduction::Ns2Linux): the
    /// sender may fill the pipe up to it while above cwnd; 0 outside a recovery.
    pipe: u32,
    /// Undo of a reduction found unneeded (tcp::undo).
    pub undo: Undo,
    /// F-RTO (RFC 5682, SACK-enhanced; Linux `tp->frto`) is watching the
    /// current timeout.
    frto: bool,
    /// F-RTO step 2b: the next send is new data only (Linux REXMIT_NEW).
    new_data_only: bool,
}

impl Recovery {
    pub fn new(sack: bool) -> Self {
        Recovery {
            sack,
            high_seq: 0,
            prr: Prr::default(),
            reduction: Reduction::Prr,
            floor: 0,
            pipe: 0,
            undo: Undo::default(),
            frto: false,
            new_data_only: false,
        }
    }

    /// The undo rule of the flow's stack.
    pub fn set_undo(&mut self, rule: UndoRule) {
        self.undo = Undo::new(rule);
    }

    /// The reduction rule of the flow's stack.
    pub fn set_reduction(&mut self, reduction: Reduction) {
        self.reduction = reduction;
    }

    /// After an ACK's scoreboard update and loss marking: leave a finished
    /// episode (undoing it if it proved spurious), enter recovery when a loss
    /// is detected, else Open or Disorder. Returns whether recovery was entered.
    pub fn on_ack<C: CongestionOps>(&mut self, a: &AckInfo, board: &mut Scoreboard, cc: &mut C, s: &mut CcState) -> bool {
        let (acked, tsecr) = (a.acked, a.tsecr);
        let episode_over = board.snd_una >= self.high_seq;
        match s.ca_state {
            // Linux `tcp_fastretrans_alert` (2.6.22 and 6.6): CWR holds until
            // something *above* high_seq is ACKed, so that the CWR flag, on the
            // first segment sent after it, has reached the receiver (else the
            // ECE of ACKs for data sent before it would reduce twice).
            CaState::Cwr if board.snd_una > self.high_seq => self.end_reduction(cc, s, board.packets_out()),
            CaState::Recovery if episode_over => self.end_recovery(tsecr, board, cc, s),
            CaState::Recovery if !self.sack && acked > 0 => {
                board.mark_head_lost();
            }
            CaState::Recovery => self.dsack_undo(board, cc, s),
            CaState::Loss if episode_over && self.is_ns2_linux() => self.end_reduction(cc, s, board.packets_out()),
            CaState::Loss => self.process_loss(a, board, cc, s),
            CaState::Disorder if episode_over && self.undo.rule == UndoRule::Linux26 => self.leave_disorder(board, cc, s),
            _ => {}
        }
        if matches!(s.ca_state, CaState::Open | CaState::Disorder) && self.undo.rule != UndoRule::Linux26 {
            self.dsack_undo(board, cc, s);
        }
        if matches!(s.ca_state, CaState::Cwr | CaState::Open | CaState::Disorder) && self.time_to_recover(board, a) {
            self.enter_recovery(board, cc, s);
            return true;
        }
        if matches!(s.ca_state, CaState::Open | CaState::Disorder) {
            self.try_to_open(board, cc, s);
        }
        false
    }

    /// An ACK in Loss (Linux `tcp_process_loss` at 3.16 and today; 2.6.22's
    /// Loss branches of `tcp_fastretrans_alert`, which has no F-RTO): an undo
    /// when the ACK shows the timeout spurious, F-RTO's steps, and the end of
    /// the episode once everything sent before the timeout is acknowledged.
    fn process_loss<C: CongestionOps>(&mut self, a: &AckInfo, board: &mut Scoreboard, cc: &mut C, s: &mut CcState) {
        let recovered = board.snd_una >= self.high_seq;
        // Today's Linux asks the Eifel test only of an ACK that advanced snd_una.
        let eifel = self.undo.may_undo(a.tsecr) && (self.undo.rule != UndoRule::Linux66 || a.acked > 0);
        if !recovered && (eifel || (self.frto && a.orig_acked)) {
            return self.undo_loss(board, cc, s);
        }
        if self.frto && !recovered {
            if board.snd_nxt > self.high_seq {
                // Step 3a: new data went out and holes are still reported.
                if a.sacked || a.acked == 0 {
                    self.frto = false;
                }
            } else if a.acked > 0 {
                // Step 2b: send new data, not retransmissions, and wait.
                self.high_seq = board.snd_nxt;
                self.new_data_only = a.can_send_new;
                self.frto = a.can_send_new;
            }
            if self.new_data_only {
                return;
            }
        }
        if recovered {
            self.frto = false;
            if self.undo.may_undo(a.tsecr) {
                self.undo.undo(cc, s, board.in_flight());
            }
            hooks::set_state(cc, s, CaState::Open);
        }
    }

    /// `tcp_try_undo_loss`: nothing is lost after all; window and ssthresh
    /// back, Open.
    fn undo_loss<C: CongestionOps>(&mut self, board: &mut Scoreboard, cc: &mut C, s: &mut CcState) {
        self.frto = false;
        board.unmark_lost();
        self.undo.undo(cc, s, board.in_flight());
        hooks::set_state(cc, s, CaState::Open);
    }

    /// F-RTO's step 2b asked for new data only on this send (consumed).
    #[inline]
    pub fn take_new_data_only(&mut self) -> bool {
        std::mem::take(&mut self.new_data_only)
    }

    /// Linux `tcp_try_to_open`: Disorder while anything is SACKed (and at
    /// 2.6.22 while an undo is still possible, from which state high_seq
    /// marks its end), else Open; 2.6.22 moderates cwnd.
    #[inline]
    fn try_to_open<C: CongestionOps>(&mut self, board: &Scoreboard, cc: &mut C, s: &mut CcState) {
        let linux26 = self.undo.rule == UndoRule::Linux26;
        let disorder = board.sacked_out > 0 || (linux26 && self.undo.pending());
        let state = if disorder { CaState::Disorder } else { CaState::Open };
        self.undo.clear_stamp(board.retrans_out() > 0);
        if linux26 && state != s.ca_state {
            self.high_seq = board.snd_nxt;
        }
        hooks::set_state(cc, s, state);
    }

    /// 2.6.22's exit from Disorder once high_seq is acknowledged: a last
    /// chance for D-SACKs to undo, then no undo any more.
    fn leave_disorder<C: CongestionOps>(&mut self, board: &Scoreboard, cc: &mut C, s: &mut CcState) {
        if self.undo.dsacks_undo_all() {
            self.undo.undo(cc, s, board.in_flight());
        }
        if !self.undo.pending() || board.snd_una != self.high_seq {
            self.undo.give_up();
            hooks::set_state(cc, s, CaState::Open);
        }
    }

    /// Recovery ends (`tcp_try_undo_recovery`, then `tcp_complete_cwr` at
    /// 2.6.22 or `tcp_end_cwnd_reduction` later, which leaves an undone
    /// window as it is).
    fn end_recovery<C: CongestionOps>(&mut self, tsecr: Option<Time>, board: &Scoreboard, cc: &mut C, s: &mut CcState) {
        if !self.undo.may_undo(tsecr) {
            return self.end_reduction(cc, s, board.packets_out());
        }
        self.undo.undo(cc, s, board.in_flight());
        if self.undo.rule == UndoRule::Linux26 {
            return self.end_reduction(cc, s, board.packets_out());
        }
        hooks::set_state(cc, s, CaState::Open);
        cc.cwnd_event(s, CaEvent::CompleteCwr);
    }

    /// 3.16 and today: D-SACKs showed every retransmission spurious
    /// (`tcp_try_undo_dsack`); in Recovery the episode ends
    /// (`tcp_try_keep_open`).
    #[inline]
    fn dsack_undo<C: CongestionOps>(&mut self, board: &Scoreboard, cc: &mut C, s: &mut CcState) {
        if self.undo.rule == UndoRule::Linux26 || !self.undo.dsacks_undo_all() {
            return;
        }
        self.undo.undo(cc, s, board.in_flight());
        if s.ca_state == CaState::Recovery {
            let state = if board.sacked_out > 0 || board.retrans_out() > 0 { CaState::Disorder } else { CaState::Open };
            hooks::set_state(cc, s, state);
            self.high_seq = board.snd_nxt;
        }
    }

    /// 2.6.22's `tcp_moderate_cwnd` on an ACK handled in Disorder
    /// (`tcp_try_to_open`), after congestion avoidance.
    #[inline]
    pub fn moderate_after_ack(&self, prior: CaState, s: &mut CcState, in_flight: u64) {
        if self.undo.rule == UndoRule::Linux26 && (prior == CaState::Disorder || s.ca_state == CaState::Disorder) {
            undo::moderate(s, in_flight);
        }
    }

    /// The end of the current (or last) recovery episode (Linux high_seq).
    pub fn recovery_point(&self) -> u64 {
        self.high_seq
    }

    fn is_ns2_linux(&self) -> bool {
        matches!(self.reduction, Reduction::Ns2Linux { .. })
    }

    /// Leave a reduction: cwnd = ssthresh, or no more than ssthresh after
    /// rate-halving, which may have taken it lower (Linux 2.6 `tcp_complete_cwr`).
    /// `packets_out`: snd_nxt - snd_una, what ns-2 counts in flight once it has
    /// cleared its scoreboard at the exit.
    fn end_reduction<C: CongestionOps>(&mut self, cc: &mut C, s: &mut CcState, packets_out: u64) {
        if self.is_ns2_linux() {
            return self.end_ns2_linux(cc, s, packets_out);
        }
        let cwnd = s.cwnd;
        hooks::end_cwnd_reduction(cc, s);
        if matches!(self.reduction, Reduction::RateHalving | Reduction::RateHalving24) {
            s.cwnd = s.cwnd.min(cwnd);
        }
    }

    /// ns-2.35 `LinuxTcpAgent::tcp_fastretrans_alert`'s exit: ssthresh if cwnd
    /// is below it, moderated to packets out + 3 (`tcp_moderate_cwnd`), Open,
    /// the pipe target dropped; no `CA_EVENT_COMPLETE_CWR`.
    fn end_ns2_linux<C: CongestionOps>(&mut self, cc: &mut C, s: &mut CcState, packets_out: u64) {
        if s.cwnd < s.ssthresh {
            s.cwnd = s.ssthresh;
            undo::moderate(s, packets_out);
        }
        self.pipe = 0;
        hooks::set_state(cc, s, CaState::Open);
    }

    /// With SACK, any lost segment (RFC 6675 IsLost), or at 2.4-2.6.22 a head
    /// sent more than an RTO ago (`tcp_time_to_recover`'s "Trick#3": the RTO
    /// restarts on every ACK that advances snd_una, so the timer may not have
    /// fired yet); without SACK, DupThresh duplicate ACKs outside a previous
    /// episode (RFC 6582 section 3.2 step 2).
    fn time_to_recover(&self, board: &Scoreboard, a: &AckInfo) -> bool {
        if self.sack {
            board.lost_out > 0 || a.head_timed_out || a.early_retransmit
        } else {
            board.sacked_out as u64 >= DUP_THRESH && board.snd_una >= self.high_seq
        }
    }

    /// Start a window reduction until everything now in flight is acknowledged.
    fn init_cwnd_reduction<C: CongestionOps>(&mut self, board: &Scoreboard, cc: &mut C, s: &mut CcState) {
        self.high_seq = board.snd_nxt;
        self.prr = Prr::start(s.cwnd);
        hooks::init_cwnd_reduction(cc, s);
        self.floor = if self.reduction == Reduction::RateHalving24 { s.ssthresh / 2 } else { cc.min_cwnd(s) };
        if self.is_ns2_linux() {
            // tcp-linux.cc: "next_pkts_in_flight_ = linux_.snd_cwnd; //we do
            // rate halving", then snd_cwnd = min_cwnd() or ssthresh at once.
            self.pipe = self.prr.prior_cwnd;
            s.cwnd = self.floor;
        }
    }

    fn enter_recovery<C: CongestionOps>(&mut self, board: &mut Scoreboard, cc: &mut C, s: &mut CcState) {
        self.undo.start_recovery(board.snd_una, board.retrans_out(), s, s.ca_state != CaState::Cwr);
        // From CWR the reduction is already under way (Linux `tcp_enter_recovery`).
        if s.ca_state != CaState::Cwr {
            self.init_cwnd_reduction(board, cc, s);
        }
        self.high_seq = board.snd_nxt;
        hooks::set_state(cc, s, CaState::Recovery);
        if !self.sack {
            board.mark_head_lost();
        }
    }

    /// The interface queue refused a packet: local congestion. Linux 2.6's
    /// `tcp_transmit_skb` then calls `tcp_enter_cwr`: reduce the window as for a
    /// loss, without retransmitting anything (the packet was never sent).
    /// Returns whether a reduction started.
    pub fn enter_cwr<C: CongestionOps>(&mut self, board: &Scoreboard, cc: &mut C, s: &mut CcState) -> bool {
        self.undo.forbid_window_undo();
        if !matches!(s.ca_state, CaState::Open | CaState::Disorder) {
            return false;
        }
        self.undo.give_up();
        self.init_cwnd_reduction(board, cc, s);
        hooks::set_state(cc, s, CaState::Cwr);
        true
    }

    /// The retransmission timer fired: everything not SACKed is lost.
    /// `repeated`: the timer fired again for the same data (backed off).
    pub fn on_rto<C: CongestionOps>(&mut self, repeated: bool, board: &mut Scoreboard, cc: &mut C, s: &mut CcState) {
        self.start_loss_undo(repeated, board, s);
        self.high_seq = board.snd_nxt;
        board.mark_all_lost();
        if self.is_ns2_linux() {
            // ns-2's `enter_loss` asks the module for ssthresh in every state
            // (Linux, and hooks::enter_loss, only from Open or Disorder);
            // `timeout` drops the pipe target.
            if !matches!(s.ca_state, CaState::Open | CaState::Disorder) {
                s.ssthresh = cc.ssthresh(s);
            }
            self.pipe = 0;
        }
        s.lost = board.lost;
        hooks::enter_loss(cc, s);
    }

    /// `tcp_enter_loss`'s undo bookkeeping, before the losses are marked: a
    /// new ssthresh where hooks::enter_loss takes one. F-RTO (3.16 on,
    /// `tcp_frto` 2) watches a timeout that starts an episode or repeats one
    /// (RFC 5682 section 3.1 step 1, 3.2).
    fn start_loss_undo(&mut self, repeated: bool, board: &Scoreboard, s: &CcState) {
        let reduces = matches!(s.ca_state, CaState::Open | CaState::Disorder);
        let retransmitted = board.any_retransmitted(self.undo.rule == UndoRule::Linux26);
        self.undo.start_loss(board.snd_una, s, reduces, retransmitted);
        let frto_stack = matches!(self.undo.rule, UndoRule::Linux316 | UndoRule::Linux66);
        self.frto = frto_stack && self.sack && (reduces || repeated);
        self.new_data_only = false;
    }

    /// An RTO when RACK has marked the losses (tcp::rack,
    /// `tcp_timeout_mark_lost`): Loss as `on_rto`, then Linux 6.6
    /// `tcp_enter_loss` sets cwnd = in_flight + 1, which counts the segments
    /// RACK left in flight (1 when all are lost, as before).
    pub fn on_rto_marked<C: CongestionOps>(&mut self, repeated: bool, board: &mut Scoreboard, cc: &mut C, s: &mut CcState) {
        self.start_loss_undo(repeated, board, s);
        self.high_seq = board.snd_nxt;
        s.lost = board.lost;
        hooks::enter_loss(cc, s);
        s.cwnd = u32::try_from(board.in_flight() + 1).unwrap_or(u32::MAX);
    }

    /// A tail loss probe repaired a loss (Linux `tcp_process_tlp_ack`): one
    /// reduction, entered and ended at once (cwnd = ssthresh), then Open or
    /// Disorder (`tcp_try_keep_open`).
    pub fn reduce_once<C: CongestionOps>(&mut self, board: &Scoreboard, cc: &mut C, s: &mut CcState) {
        self.init_cwnd_reduction(board, cc, s);
        hooks::set_state(cc, s, CaState::Cwr);
        self.end_reduction(cc, s, board.packets_out());
        let state = if board.sacked_out + board.lost_out > 0 { CaState::Disorder } else { CaState::Open };
        hooks::set_state(cc, s, state);
    }

    /// RACK's reordering timer marked losses (`tcp_rack_reo_timeout`):
    /// recovery starts unless it is under way (or the flow is in Loss, which
    /// retransmits the lost anyway). Returns whether it started.
    pub fn enter_on_timer<C: CongestionOps>(&mut self, board: &mut Scoreboard, cc: &mut C, s: &mut CcState) -> bool {
        if !matches!(s.ca_state, CaState::Open | CaState::Disorder | CaState::Cwr) {
            return false;
        }
        self.enter_recovery(board, cc, s);
        true
    }

    /// A segment went out (PRR counts those sent during a reduction, prr_out:
    /// Linux `tcp_write_xmit` and `tcp_xmit_retransmit_queue` count them while
    /// `tcp_in_cwnd_reduction`, CWR included).
    /// `in_flight`: after the segment (ns-2's `send_much` lowers its pipe
    /// target then, unless the send came from the delayed-send timer).
    pub fn on_send(&mut self, state: CaState, in_flight: u64) {
        if matches!(state, CaState::Recovery | CaState::Cwr) {
            self.prr.out += 1;
        }
        if self.reduction == (Reduction::Ns2Linux { delayed_send: false }) {
            self.pipe = self.pipe.min(in_flight.saturating_sub(1).max(1) as u32);
        }
    }

    /// Whether congestion avoidance runs before the state machine, on the
    /// state the ACK found: Linux to 3.16 calls `tcp_cong_avoid` before
    /// `tcp_fastretrans_alert`, gated by `tcp_may_raise_cwnd` (not in Recovery
    /// or CWR; tcp_ack read at 2.6.22 and 3.16.0), and so does ns-2.35's
    /// TCP-Linux `recv`. Today's `tcp_cong_control` runs after it, on the
    /// state it leaves, and ns-2's Sack1 agent opens cwnd after its own
    /// recovery logic.
    #[inline]
    pub fn grows_before_state_machine(&self) -> bool {
        !matches!(self.reduction, Reduction::Prr | Reduction::Halve)
    }

    /// ns-2's `send_much` starts from pipe = min(pipe, in flight + 1); 0 (no
    /// pipe target) at every other rule.
    pub fn clamp_pipe(&mut self, in_flight: u64) {
        self.pipe = self.pipe.min(u32::try_from(in_flight + 1).unwrap_or(u32::MAX));
    }

    /// What the sender may have in flight: cwnd, or ns-2 TCP-Linux's pipe
    /// target while it is above cwnd (`max(win, next_pkts_in_flight_)`).
    pub fn send_window(&self, cwnd: u32) -> u64 {
        cwnd.max(self.pipe) as u64
    }

    /// The window step of an ACK during a reduction, by the stack's rule.
    pub fn prr(&mut self, s: &mut CcState, in_flight: u64, una_advanced: bool, delivered: u32, newly_lost: u32) {
        match self.reduction {
            Reduction::Prr | Reduction::PrrSsrb => {
                let ssrb = self.reduction == Reduction::PrrSsrb || (una_advanced && newly_lost == 0);
                if let Some(cwnd) = self.prr.cwnd(s.ssthresh, in_flight, ssrb, delivered, newly_lost) {
                    s.cwnd = cwnd;
                }
            }
            Reduction::RateHalving | Reduction::RateHalving24 => s.cwnd = rate_halving(s.cwnd, &mut s.cwnd_cnt, self.floor, in_flight, delivered > 0),
            Reduction::Halve => s.cwnd = s.ssthresh,
            // cwnd was set at the entry; the pipe target does the rest (send).
            Reduction::Ns2Linux { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::Reno;

    /// RFC 6937 section 3, proportional part: RecoverFS 20, ssthresh 10, one
    /// packet delivered per ACK with in_flight above ssthresh: one packet sent
    /// every other ACK, sndcnt = CEIL(prr_delivered * 10 / 20) - prr_out.
    #[test]
    fn prr_sends_ssthresh_over_recoverfs_per_packet_delivered() {
        let mut prr = Prr::start(20);
        // ACK 1: CEIL(1 * 10 / 20) - 0 = 1 (the fast retransmit).
        assert_eq!(prr.cwnd(10, 19, false, 1, 0), Some(20));
        prr.out += 1;
        // ACK 2: CEIL(2 * 10 / 20) - 1 = 0: cwnd = in_flight, nothing sent.
        assert_eq!(prr.cwnd(10, 18, false, 1, 0), Some(18));
        // ACK 3: CEIL(3 * 10 / 20) - 1 = 1.
        assert_eq!(prr.cwnd(10, 17, false, 1, 0), Some(18));
        // An ACK that delivers and loses nothing changes nothing.
        assert_eq!(prr.cwnd(10, 17, false, 0, 0), None);
    }

    /// Below ssthresh: PRR-SSRB (slow-start reduction bound) when snd_una
    /// advanced and nothing new was lost, else PRR-CRB (conservative: no more
    /// than delivered), never past ssthresh.
    #[test]
    fn prr_below_ssthresh_uses_the_reduction_bounds() {
        let mut prr = Prr { prior_cwnd: 20, delivered: 10, out: 8 };
        // SSRB: MIN(ssthresh - pipe, MAX(prr_delivered - prr_out, delivered) + 1)
        // = MIN(10 - 6, MAX(12 - 8, 2) + 1) = 4.
        assert_eq!(prr.cwnd(10, 6, true, 2, 0), Some(10));
        let mut prr = Prr { prior_cwnd: 20, delivered: 10, out: 8 };
        // CRB: MIN(4, delivered = 2).
        assert_eq!(prr.cwnd(10, 6, false, 2, 1), Some(8));
    }

    /// Which bound an ACK below ssthresh gets: with the numbers above, SSRB
    /// gives cwnd 10, CRB 8. Linux 3.16.0 takes SSRB on every ACK; today's
    /// takes CRB on an ACK that revealed a new loss or did not advance snd_una.
    #[test]
    fn linux_3_16_prr_takes_the_slow_start_bound_on_every_ack_below_ssthresh() {
        let got = [Reduction::PrrSsrb, Reduction::Prr].map(|reduction| {
            let mut r = Recovery::new(true);
            r.set_reduction(reduction);
            let mut s = CcState::new(20, 1448);
            s.ssthresh = 10;
            let mut step = |una_advanced, newly_lost| {
                r.prr = Prr { prior_cwnd: 20, delivered: 10, out: 8 };
                r.prr(&mut s, 6, una_advanced, 2, newly_lost);
                s.cwnd
            };
            [step(true, 1), step(false, 0), step(true, 0)]
        });
        assert_eq!(got, [[10, 10, 10], [8, 8, 10]]);
    }

    /// Linux 2.6 `tcp_cwnd_down`: one packet off every second ACK that
    /// delivers, down to ssthresh, never above in_flight + 1.
    #[test]
    fn rate_halving_takes_a_packet_every_second_ack_down_to_ssthresh() {
        let (mut cwnd, mut cnt) = (20, 0);
        let mut seen = vec![];
        for _ in 0..7 {
            cwnd = rate_halving(cwnd, &mut cnt, 17, 100, true);
            seen.push(cwnd);
        }
        assert_eq!(seen, [20, 19, 19, 18, 18, 17, 17]);
        assert_eq!((rate_halving(17, &mut cnt, 10, 5, false), cnt), (17, 1), "no progress, no change");
        assert_eq!(rate_halving(17, &mut cnt, 10, 5, true), 6);
    }

    /// Linux 2.6.22's `tcp_cwnd_down` goes down to `tcp_cwnd_min`: Scalable's
    /// `min_cwnd` is tcp_reno_min_cwnd, half of ssthresh; BIC has none, so
    /// ssthresh. From cwnd 16, one packet off every second delivering ACK: 20
    /// ACKs would take 10. Scalable (ssthresh 16 - 16/8 = 14, floor 7) stops at
    /// 7 and leaves recovery there (min(cwnd, ssthresh)); BIC (ssthresh
    /// 16 x 819/1024 = 12) stops at 12. Linux 2.4.22's has no modules: BIC
    /// too goes down to 12 / 2 = 6 (ten steps from 16).
    #[test]
    fn rate_halving_goes_down_to_the_module_s_min_cwnd() {
        fn halve<C: CongestionOps>(mut cc: C, reduction: Reduction) -> (u32, u32, u32) {
            let mut board = Scoreboard::new(false, 16);
            for _ in 0..16 {
                board.push_new();
            }
            let (mut r, mut s) = (Recovery::new(false), CcState::new(16, 1448));
            r.set_reduction(reduction);
            for _ in 0..3 {
                board.count_dupacks(0, 0);
                r.on_ack(&AckInfo::cum(0), &mut board, &mut cc, &mut s);
            }
            for _ in 0..20 {
                r.prr(&mut s, 100, false, 1, 0);
            }
            let during = s.cwnd;
            r.end_reduction(&mut cc, &mut s, 0);
            (s.ssthresh, during, s.cwnd)
        }
        assert_eq!(halve(crate::cc::Scalable::default(), Reduction::RateHalving), (14, 7, 7));
        assert_eq!(halve(crate::cc::Bic::default(), Reduction::RateHalving), (12, 12, 12));
        assert_eq!(halve(crate::cc::Bic::default(), Reduction::RateHalving24), (12, 6, 6));
        assert_eq!(halve(crate::cc::Scalable::default(), Reduction::RateHalving24), (14, 7, 7));
    }

    /// Leaving recovery, PRR sets cwnd = ssthresh; after rate-halving Linux 2.6
    /// keeps cwnd if it is lower (`tcp_complete_cwr`), ns-2 has halved at once.
    #[test]
    fn each_reduction_rule_leaves_recovery_with_its_window() {
        for (reduction, during, after) in [(Reduction::Prr, 4, 5), (Reduction::RateHalving, 3, 3), (Reduction::Halve, 5, 5)] {
            let (mut r, mut board, mut cc, mut s) = sent(false, 10);
            r.set_reduction(reduction);
            for _ in 0..3 {
                board.count_dupacks(0, 0);
                r.on_ack(&AckInfo::cum(0), &mut board, &mut cc, &mut s);
            }
            r.prr(&mut s, 2, true, 1, 0); // two in flight, one packet delivered
            assert_eq!(s.cwnd, during, "{reduction:?}");
            board.ack_cumulative(10, &mut |_, _, _| {});
            board.count_dupacks(10, 10);
            r.on_ack(&AckInfo::cum(10), &mut board, &mut cc, &mut s);
            assert_eq!((s.ca_state, s.cwnd), (CaState::Open, after), "{reduction:?}");
        }
    }

    fn sent(sack: bool, n: u64) -> (Recovery, Scoreboard, Reno, CcState) {
        let mut board = Scoreboard::new(sack, n);
        for _ in 0..n {
            board.push_new();
        }
        (Recovery::new(sack), board, Reno, CcState::new(n as u32, 1448))
    }

    #[test]
    fn newreno_enters_on_the_third_dupack_and_leaves_at_the_recovery_point() {
        let (mut r, mut board, mut cc, mut s) = sent(false, 10);
        for k in 1..=3 {
            board.count_dupacks(0, 0);
            assert_eq!(r.on_ack(&AckInfo::cum(0), &mut board, &mut cc, &mut s), k == 3);
        }
        assert_eq!((s.ca_state, s.ssthresh, board.next_lost()), (CaState::Recovery, 5, Some(0)));
        // A partial ACK (RFC 6582 step 5): the next hole is presumed lost.
        board.ack_cumulative(4, &mut |_, _, _| {});
        board.count_dupacks(4, 4);
        r.on_ack(&AckInfo::cum(4), &mut board, &mut cc, &mut s);
        assert_eq!((s.ca_state, board.next_lost()), (CaState::Recovery, Some(4)));
        // Everything sent before recovery acknowledged: cwnd = ssthresh, Open.
        board.ack_cumulative(10, &mut |_, _, _| {});
        r.on_ack(&AckInfo::cum(6), &mut board, &mut cc, &mut s);
        assert_eq!((s.ca_state, s.cwnd), (CaState::Open, 5));
    }

    /// ns-2 TCP-Linux's timeout (`enter_loss`) asks Reno for ssthresh again
    /// in Recovery: cwnd 10 -> Recovery (ssthresh 5, cwnd = min_cwnd 2) -> RTO:
    /// ssthresh = max(2 / 2, 2) = 2, where Linux keeps 5. Leaving Loss, ns-2
    /// lifts cwnd to ssthresh capped at packets out + 3; Linux leaves it.
    #[test]
    fn ns2_linux_timeout_takes_a_new_ssthresh_and_the_loss_exit_moderates() {
        for (reduction, ssthresh, exit_cwnd) in [(Reduction::Ns2Linux { delayed_send: false }, 2, 2), (Reduction::RateHalving, 5, 1)] {
            let (mut r, mut board, mut cc, mut s) = sent(false, 10);
            r.set_reduction(reduction);
            for _ in 0..3 {
                board.count_dupacks(0, 0);
                r.on_ack(&AckInfo::cum(0), &mut board, &mut cc, &mut s);
            }
            assert_eq!((s.ca_state, s.ssthresh), (CaState::Recovery, 5));
            r.on_rto(false, &mut board, &mut cc, &mut s);
            assert_eq!((s.ca_state, s.cwnd, s.ssthresh), (CaState::Loss, 1, ssthresh), "{reduction:?}");
            board.ack_cumulative(10, &mut |_, _, _| {});
            r.on_ack(&AckInfo::cum(10), &mut board, &mut cc, &mut s);
            assert_eq!((s.ca_state, s.cwnd), (CaState::Open, exit_cwnd), "{reduction:?}");
        }
    }

    #[test]
    fn local_congestion_reduces_once_and_a_timeout_marks_all_lost() {
        let (mut r, mut board, mut cc, mut s) = sent(true, 10);
        assert!(r.enter_cwr(&board, &mut cc, &mut s));
        assert!(!r.enter_cwr(&board, &mut cc, &mut s), "already reducing");
        assert_eq!((s.ca_state, s.ssthresh), (CaState::Cwr, 5));
        r.on_rto(false, &mut board, &mut cc, &mut s);
        assert_eq!((s.ca_state, s.cwnd, s.ssthresh), (CaState::Loss, 1, 5));
        assert_eq!(board.in_flight(), 0);
    }
}
