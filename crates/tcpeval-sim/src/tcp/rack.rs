//! RACK-TLP loss detection (RFC 8985) as Linux runs it, and the loss
//! detection each stack used:
//!
//! * RACK (Recent ACKnowledgment, RFC 8985 section 6): a segment is lost when
//!   a segment sent after it has been delivered and more than RACK.rtt +
//!   reo_wnd has passed since it was sent; read at Linux 6.6,
//!   net/ipv4/tcp_recovery.c (`tcp_rack_advance`, `tcp_rack_reo_wnd`,
//!   `tcp_rack_detect_loss`, `tcp_rack_mark_lost`, `tcp_rack_reo_timeout`)
//!   and tcp_input.c (`tcp_timeout_mark_lost`, `tcp_check_sack_reordering`);
//! * TLP (Tail Loss Probe, RFC 8985 section 7): with nothing else to trigger
//!   loss detection, one segment (new data, else the last one sent) goes out
//!   a probe timeout (PTO) after the last transmission, so that its ACK
//!   reveals a tail loss to RACK or repairs it; Linux tcp_output.c
//!   `tcp_schedule_loss_probe` / `tcp_send_loss_probe` and tcp_input.c
//!   `tcp_process_tlp_ack`, in two versions: 6.6 and 3.10 (which 3.16 runs).
//!
//! The RACK marking and the timers' rules live here; the sender calls them
//! (tcp::sender), recovery reacts to what they mark (tcp::recovery).
//!
//! * D-SACK (RFC 2883, RFC 8985 section 6.2 step 4): a D-SACK after
//!   reordering was seen widens the reordering window by min_rtt/4, at most
//!   once a round trip, up to SRTT, and the widening lasts 16 recoveries
//!   (Linux 6.6 tcp_input.c `tcp_dsack_seen`, tcp_recovery.c
//!   `tcp_rack_update_reo_wnd`, `tcp_try_undo_recovery`); a D-SACK of the
//!   probe ends its TLP episode with no loss (FLAG_DSACK_TLP).
//!
//! A D-SACK proving every retransmission spurious also undoes the reduction
//! (tcp::undo).

use super::scoreboard::{Scoreboard, Seg, EVER_RETRANS, LOST, RETRANS, SACKED};
use crate::cc::CaState;
use crate::net::SegRange;
use std::collections::VecDeque;
use crate::time::{Time, MS, SEC};

/// How a flow's sender detects losses: its stack's (stack::Profile) or the
/// flow's `loss_detection`. Without SACK every choice is NewReno's DupThresh
/// (RFC 6582; Linux `tcp_is_reno`: RACK and TLP need SACK).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LossDetection {
    /// RFC 6675 DupThresh (IsLost) only: Linux before 3.10, ns-2.
    #[default]
    DupThresh,
    /// DupThresh with the tail loss probe and early retransmit: Linux
    /// 3.10-4.3 with `tcp_fack` off (`tcp_early_retrans` = 3 from 3.10, "tcp:
    /// Tail loss probe (TLP)": delayed early retransmit plus TLP).
    DupThreshTlp,
    /// RACK-TLP: RACK beside DupThresh from 4.4 ("tcp: use RACK to detect
    /// losses"), RACK alone from 4.18 ("tcp: disable RFC6675 loss detection":
    /// `tcp_recovery` = 1 chooses RACK instead of RFC 6675), as 6.6 runs it.
    Rack,
    /// Forward acknowledgment (Mathis and Mahdavi, SIGCOMM 1996), Linux's
    /// default from 2.2 to 4.14 (`sysctl_tcp_fack` = 1): every segment more
    /// than `reordering` below the highest SACKed one is lost, SACKed or not
    /// what lies between (`tcp_update_scoreboard`, `tcp_mark_head_lost`), and
    /// a retransmission is lost once anything sent after it is SACKed
    /// (`tcp_mark_lost_retrans`); the stack's FackRule gives the details.
    Fack,
    /// FACK with the tail loss probe and early retransmit: Linux 3.10-4.14's
    /// defaults (`tcp_fack` = 1, `tcp_early_retrans` = 3), so 3.16.
    FackTlp,
}

/// The names flows use, in the order of LossDetection's variants.
pub const LOSS_DETECTION_NAMES: [&str; 5] = ["dupthresh", "dupthresh-tlp", "rack", "fack", "fack-tlp"];

/// FACK's details by stack (LossDetection::Fack).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FackRule {
    /// Segments marked lost lie more than this below the highest SACKed one:
    /// Linux `tp->reordering` (3, `sysctl_tcp_reordering`); ns-2.35's
    /// ScoreBoard1 marks at or below `fack_ - (dupack_threshold + 1)`, one
    /// segment fewer (tcp/scoreboard1.cc).
    pub gap: u64,
    /// Marking stops at the recovery point (`tcp_mark_head_lost`'s high_seq
    /// bound at 2.6.22); from 2.6.26 ("Use SACK to deduce losses of new
    /// sequences sent during recovery", as 3.16 has it) and in ns-2 it goes
    /// up to snd_nxt.
    pub below_recovery_point: bool,
    /// In Recovery a duplicate ACK marks the head lost however few segments
    /// are SACKed above it (`tcp_update_scoreboard`'s `lost = 1`, 2.6.22 and
    /// 3.16); ns-2.35 TCP-Linux has none ("We don't have tcp_mark_head_lost
    /// yet", tcp/tcp-linux.cc).
    pub head_on_dupack: bool,
    /// In Recovery, segments last sent more than an RTO ago are lost
    /// (`tcp_head_timedout` in `tcp_update_scoreboard`, 2.6.22; gone by 3.16).
    pub head_timeout: bool,
}

impl FackRule {
    /// Linux 2.4 to 2.6.25 (net/ipv4/tcp_input.c at 2.6.22).
    pub const LINUX_OLD: FackRule = FackRule { gap: 3, below_recovery_point: true, head_on_dupack: true, head_timeout: true };
    /// Linux 2.6.26 to 4.14 (net/ipv4/tcp_input.c at 3.16).
    pub const LINUX_316: FackRule = FackRule { gap: 3, below_recovery_point: false, head_on_dupack: true, head_timeout: false };
    /// ns-2.35 TCP-Linux's ScoreBoard1.
    pub const NS2: FackRule = FackRule { gap: 4, below_recovery_point: false, head_on_dupack: false, head_timeout: false };
}

impl LossDetection {
    pub fn name(self) -> &'static str {
        LOSS_DETECTION_NAMES[self as usize]
    }

    /// The rule of a flow's `loss_detection`; an unknown name is an error
    /// listing the allowed ones.
    pub fn from_name(name: &str) -> Result<LossDetection, String> {
        match name {
            "dupthresh" => Ok(LossDetection::DupThresh),
            "dupthresh-tlp" => Ok(LossDetection::DupThreshTlp),
            "rack" => Ok(LossDetection::Rack),
            "fack" => Ok(LossDetection::Fack),
            "fack-tlp" => Ok(LossDetection::FackTlp),
            _ => Err(format!("unknown loss detection '{name}'; allowed: {}", LOSS_DETECTION_NAMES.join(", "))),
        }
    }

    /// FACK's marking (with the stack's FackRule).
    pub fn fack(self) -> bool {
        matches!(self, LossDetection::Fack | LossDetection::FackTlp)
    }

    /// The tail loss probe's rules, if this detection has one.
    pub fn tlp(self) -> Option<TlpVersion> {
        match self {
            LossDetection::DupThresh | LossDetection::Fack => None,
            LossDetection::DupThreshTlp | LossDetection::FackTlp => Some(TlpVersion::Linux310),
            LossDetection::Rack => Some(TlpVersion::Linux66),
        }
    }
}

/// Linux TCP_RTO_MIN (HZ/5) and TCP_DELACK_MAX (HZ/5): the PTO's allowance for
/// a delayed ACK when one packet is out (RFC 8985 section 7.2 WCDelAckT).
const DELACK_ALLOWANCE: Time = 200 * MS;
/// Linux TCP_TIMEOUT_MIN (2 jiffies; HZ = 1000 assumed): added to the PTO with
/// several packets out and to every reordering timer (timer slack).
const TIMEOUT_MIN: Time = 2 * MS;
/// Linux TCP_TIMEOUT_INIT (1 s, include/net/tcp.h at 6.6): the PTO before any
/// RTT sample.
const PTO_NO_SAMPLE: Time = SEC;
/// Linux 3.10-3.19 `tcp_schedule_loss_probe`: the PTO is at least 10 ms.
const PTO_FLOOR_310: Time = 10 * MS;

/// Linux 3.6-4.10 `tcp_pause_early_retransmit`: early retransmit waits
/// max(SRTT / 4, 2 ms) (`srtt_us >> 5`, `msecs_to_jiffies(2)`).
const ER_DELAY_FLOOR: Time = 2 * MS;

/// What the sender's one retransmission timer is armed for (Linux
/// `icsk_pending`: ICSK_TIME_RETRANS, _LOSS_PROBE, _REO_TIMEOUT,
/// _EARLY_RETRANS).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum XmitTimer {
    #[default]
    Rto,
    Probe,
    Reorder,
    EarlyRetrans,
}

/// The flow's state on an ACK, for early retransmit.
#[derive(Clone, Copy, Debug)]
pub struct ErContext {
    pub retrans_out: u64,
    pub sacked_out: u64,
    pub packets_out: u64,
    /// The window has room and there is new data (`tcp_may_send_now`).
    pub can_send_more: bool,
}

/// Early retransmit (RFC 5827) as Linux 3.5-4.10 runs it with
/// `tcp_early_retrans` = 3 ("Trick#6" of `tcp_time_to_recover`, tcp_input.c
/// at v3.16): with fewer than 4 segments out, nothing retransmitted, at least
/// one SACKed and one not, and nothing new that may go out, recovery is due;
/// RFC 5827's mitigation A.3 first waits `er_delay` (removed in 4.11, "tcp:
/// remove early retransmit", when RACK took over).
pub fn early_retransmit_due(c: &ErContext) -> bool {
    c.retrans_out == 0 && c.sacked_out > 0 && c.packets_out > c.sacked_out && c.packets_out < 4 && !c.can_send_more
}

/// How long early retransmit waits (`tcp_pause_early_retransmit`).
pub fn er_delay(srtt: Time) -> Time {
    (srtt / 4).max(ER_DELAY_FLOOR)
}

/// The tail loss probe's rules by Linux version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlpVersion {
    /// 3.10 as 3.16 has it (net/ipv4/tcp_output.c at v3.16): PTO = max(2 SRTT,
    /// 10 ms), with one packet out at least 1.5 SRTT + TCP_DELACK_MAX; only in
    /// Open, with an RTT sample, when the window is full or nothing is left to
    /// send; a new-data probe opens no TLP episode.
    Linux310,
    /// 6.6 (tcp_output.c at v6.6): PTO = 2 SRTT + TCP_RTO_MIN with one packet
    /// out, else 2 SRTT + TCP_TIMEOUT_MIN; TCP_TIMEOUT_INIT without a sample;
    /// in Open or CWR.
    Linux66,
}

/// The flow's state when a probe may be scheduled.
#[derive(Clone, Copy, Debug)]
pub struct ProbeContext {
    pub srtt: Time,
    pub packets_out: u64,
    pub state: CaState,
    /// The window has room and there is new data to send (3.10's check).
    pub can_send_more: bool,
    /// The latest the probe may fire: when the RTO would (both versions: "if
    /// the RTO formula yields an earlier time, use that time").
    pub rto_in: Time,
}

impl TlpVersion {
    /// The probe timeout from now, or None when no probe is scheduled.
    pub fn pto(self, c: &ProbeContext) -> Option<Time> {
        if c.packets_out == 0 {
            return None;
        }
        let pto = match self {
            TlpVersion::Linux310 => {
                if c.srtt == 0 || c.state != CaState::Open || c.can_send_more {
                    return None;
                }
                let one_out = if c.packets_out == 1 { c.srtt + c.srtt / 2 + DELACK_ALLOWANCE } else { 0 };
                (2 * c.srtt).max(one_out).max(PTO_FLOOR_310)
            }
            TlpVersion::Linux66 => {
                if !matches!(c.state, CaState::Open | CaState::Cwr) {
                    return None;
                }
                match (c.srtt, c.packets_out) {
                    (0, _) => PTO_NO_SAMPLE,
                    (srtt, 1) => 2 * srtt + DELACK_ALLOWANCE,
                    (srtt, _) => 2 * srtt + TIMEOUT_MIN,
                }
            }
        };
        Some(if c.rto_in > 0 { pto.min(c.rto_in) } else { pto })
    }

    /// Whether a probe of new data opens a TLP episode (6.6 records
    /// tlp_high_seq for it, 3.10 only for a retransmission).
    fn new_data_episode(self) -> bool {
        self == TlpVersion::Linux66
    }

    /// Early retransmit comes with 3.10's probe (`tcp_early_retrans` = 3
    /// turns on both); 6.6 has none (RACK replaced it in 4.11).
    pub fn early_retransmit(self) -> bool {
        self == TlpVersion::Linux310
    }
}

/// The TLP episode (Linux `tlp_high_seq`, `tlp_retrans`).
#[derive(Clone, Copy, Debug)]
pub struct Tlp {
    pub version: TlpVersion,
    /// snd_nxt when the probe went out, while its episode lasts.
    pub high_seq: Option<u64>,
    /// The probe was a retransmission (not new data).
    retrans: bool,
    /// Probes sent (Linux LINUX_MIB_TCPLOSSPROBES).
    pub probes: u64,
}

/// What the ACK of a TLP episode says (`tcp_process_tlp_ack`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlpOutcome {
    /// The episode goes on.
    Pending,
    /// Over, nothing lost (a new-data probe acknowledged, or a duplicate ACK
    /// saying the original and the probe both arrived).
    NoLoss,
    /// The probe repaired a loss: reduce the window once, as for CWR.
    Repaired,
}

impl Tlp {
    pub fn new(version: TlpVersion) -> Self {
        Tlp { version, high_seq: None, retrans: false, probes: 0 }
    }

    /// The D-SACK reports the episode's probe (6.6 `tcp_dsack_seen`: one
    /// segment ending at tlp_high_seq).
    pub fn is_probe_dsack(&self, dsack: Option<SegRange>) -> bool {
        dsack.is_some_and(|d| d.1 - d.0 == 1 && self.high_seq == Some(d.1))
    }

    /// A probe went out; snd_nxt after it.
    pub fn sent(&mut self, snd_nxt: u64, retrans: bool) {
        self.probes += 1;
        if retrans || self.version.new_data_episode() {
            self.high_seq = Some(snd_nxt);
            self.retrans = retrans;
        }
    }

    /// An ACK for `ack` during an episode; `dupack`: it acknowledged and SACKed
    /// nothing new (Linux: none of FLAG_SND_UNA_ADVANCED, FLAG_NOT_DUP,
    /// FLAG_DATA_SACKED).
    /// `dsack`: the ACK's D-SACK block. 6.6 ends the episode with no loss on
    /// a D-SACK of the probe (FLAG_DSACK_TLP: the original and the probe
    /// both arrived); 3.10 does not reduce on any D-SACKing ACK
    /// (FLAG_DSACKING_ACK, tcp_input.c at v3.16).
    pub fn on_ack(&mut self, ack: u64, dupack: bool, dsack: Option<SegRange>) -> TlpOutcome {
        let Some(high) = self.high_seq else { return TlpOutcome::Pending };
        let spurious = match self.version {
            TlpVersion::Linux310 => dsack.is_some(),
            TlpVersion::Linux66 => self.is_probe_dsack(dsack),
        };
        let outcome = if ack < high {
            TlpOutcome::Pending
        } else if !self.retrans || spurious {
            TlpOutcome::NoLoss
        } else if ack > high {
            TlpOutcome::Repaired
        } else if dupack {
            TlpOutcome::NoLoss
        } else {
            TlpOutcome::Pending
        };
        if outcome != TlpOutcome::Pending {
            self.high_seq = None;
        }
        outcome
    }
}

/// (send time, sequence): RACK orders transmissions by time, ties by sequence
/// (`tcp_skb_sent_after`).
type Sent = (Time, u64);

/// What one ACK delivered, for `Rack::advance` (RFC 8985 section 6.2 steps
/// 1-2, as `tcp_rack_advance` is called for each newly (s)acked segment).
pub struct RackAck {
    now: Time,
    /// Linux `tcp_min_rtt`; None before the first sample.
    min_rtt: Option<Time>,
    /// The highest SACKed sequence before this ACK (Linux prior_fack).
    prior_fack: u64,
    newest: Option<Sent>,
    reordered: bool,
}

impl RackAck {
    pub fn new(now: Time, min_rtt: Time, prior_fack: u64) -> Self {
        RackAck { now, min_rtt: (min_rtt > 0).then_some(min_rtt), prior_fack, newest: None, reordered: false }
    }

    /// A segment this ACK delivers (cumulatively or by SACK) for the first time.
    pub fn note(&mut self, seq: u64, seg: &Seg) {
        let retransmitted = seg.flags & EVER_RETRANS != 0;
        // Delivered below a sequence SACKed before and never retransmitted: it
        // arrived after a segment sent later (`tcp_check_sack_reordering`).
        if !retransmitted && seq < self.prior_fack {
            self.reordered = true;
        }
        // A retransmitted segment delivered sooner than the minimum RTT after
        // its retransmission: the original arrived, its time says nothing.
        if retransmitted && self.min_rtt.is_none_or(|m| self.now - seg.tx_time < m) {
            return;
        }
        let sent = (seg.tx_time, seq);
        if self.newest.is_none_or(|n| sent > n) {
            self.newest = Some(sent);
        }
    }
}

/// Linux TCP_RACK_RECOVERY_THRESH (include/net/tcp.h at 6.6): recoveries a
/// widened reordering window lasts without a new D-SACK.
const RECOVERY_THRESH: u32 = 16;
/// Linux keeps `reo_wnd_steps` in a u8 (`min_t(u32, 0xFF, ...)`).
const MAX_REO_WND_STEPS: u32 = 0xFF;

/// The RACK state (Linux `tp->rack`, `tp->reord_seen`, `tsorted_sent_queue`).
#[derive(Clone, Debug)]
pub struct Rack {
    /// Transmissions in the order sent, (time, sequence) (Linux
    /// `tsorted_sent_queue`): the scan walks these instead of the whole
    /// scoreboard. An entry is stale once its segment is acknowledged, SACKed,
    /// marked lost and not yet resent, or sent again (a newer entry).
    sent: VecDeque<Sent>,
    /// The most recently sent delivered segment (RACK.xmit_ts, RACK.end_seq).
    newest: Option<Sent>,
    /// RACK.rtt: the RTT of the newest delivered segment of the last ACK.
    pub rtt: Time,
    /// A new delivery since the last scan (Linux `rack.advanced`).
    advanced: bool,
    /// Reordering has been seen (Linux `reord_seen`).
    pub reord_seen: bool,
    /// reo_wnd in units of min_rtt/4 (`rack.reo_wnd_steps`).
    pub reo_wnd_steps: u32,
    /// Recoveries the widened window still lasts (`rack.reo_wnd_persist`).
    reo_wnd_persist: u32,
    /// A D-SACK to widen the window for (`rack.dsack_seen`).
    dsack_seen: bool,
    /// The delivered count at the last widening (`rack.last_delivered`).
    last_delivered: u64,
    /// Segments reported by D-SACKs (`tp->dsack_dups`).
    pub dsack_dups: u64,
}

impl Default for Rack {
    fn default() -> Self {
        Rack {
            sent: VecDeque::new(),
            newest: None,
            rtt: 0,
            advanced: false,
            reord_seen: false,
            reo_wnd_steps: 1,
            reo_wnd_persist: 0,
            dsack_seen: false,
            last_delivered: 0,
            dsack_dups: 0,
        }
    }
}

impl Rack {
    /// A segment left at `now` (new, retransmitted or a probe).
    pub fn on_send(&mut self, seq: u64, now: Time) {
        self.sent.push_back((now, seq));
    }

    /// The transfer is over: give the memory back.
    pub fn release(&mut self) {
        self.sent = VecDeque::new();
    }

    /// Fold in an ACK's deliveries (RFC 8985 section 6.2 step 2; RACK.rtt is
    /// that of the last segment in send order, as the RFC processes them).
    pub fn advance(&mut self, ack: &RackAck) {
        self.reord_seen |= ack.reordered;
        let Some(sent) = ack.newest else { return };
        self.rtt = ack.now - sent.0;
        self.advanced = true;
        if self.newest.is_none_or(|n| sent > n) {
            self.newest = Some(sent);
        }
    }

    /// Linux 6.6 `tcp_rack_reo_wnd`: no allowance for reordering before any
    /// was seen once in recovery (or Loss) or with DupThresh segments SACKed
    /// (`tcp_reordering` = 3, TCP_RACK_NO_DUPTHRESH unset by default); else
    /// min_rtt/4 per step (RFC 8985 section 6.2 step 4), at most SRTT.
    pub fn reo_wnd(&self, state: CaState, sacked_out: u32, min_rtt: Time, srtt: Time) -> Time {
        if !self.reord_seen && (matches!(state, CaState::Recovery | CaState::Loss) || sacked_out as u64 >= super::scoreboard::DUP_THRESH) {
            return 0;
        }
        (min_rtt / 4 * self.reo_wnd_steps as Time).min(srtt)
    }

    /// An ACK carries a D-SACK of `segs` segments (Linux 6.6 `tcp_dsack_seen`);
    /// `retransmitted`: the sender's retransmissions so far; `of_probe`: it
    /// reports the TLP probe (its end is the episode's tlp_high_seq). Returns
    /// whether it counts: a D-SACK of more duplicates than were ever resent
    /// came from the network, not from a spurious retransmission. Only a
    /// counted D-SACK after reordering was seen, not of a probe (timer-driven,
    /// not RACK's doing), asks for a wider window.
    pub fn on_dsack(&mut self, segs: u64, retransmitted: u64, of_probe: bool) -> bool {
        self.dsack_dups += segs;
        if self.dsack_dups > retransmitted {
            return false;
        }
        if self.reord_seen && !of_probe {
            self.dsack_seen = true;
        }
        true
    }

    /// After each ACK's scoreboard update (Linux 6.6 `tcp_rack_update_reo_wnd`):
    /// widen by one step for a pending D-SACK, at most once a round trip (the
    /// ACK's newest delivered segment was sent after the last widening), and
    /// hold it for RECOVERY_THRESH recoveries; without a D-SACK once those
    /// are over, back to one step. `prior_delivered`: the delivered count
    /// when that segment was sent (0: no sample, nothing done).
    pub fn update_reo_wnd(&mut self, prior_delivered: u64, delivered: u64) {
        if prior_delivered == 0 {
            return;
        }
        if prior_delivered < self.last_delivered {
            self.dsack_seen = false;
        }
        if std::mem::take(&mut self.dsack_seen) {
            self.reo_wnd_steps = (self.reo_wnd_steps + 1).min(MAX_REO_WND_STEPS);
            self.last_delivered = delivered;
            self.reo_wnd_persist = RECOVERY_THRESH;
        } else if self.reo_wnd_persist == 0 {
            self.reo_wnd_steps = 1;
        }
    }

    /// A recovery (fast or after an RTO) ended without undo (Linux
    /// `tcp_try_undo_recovery`): one fewer for the widened window to last.
    pub fn on_recovery_end(&mut self) {
        self.reo_wnd_persist = self.reo_wnd_persist.saturating_sub(1);
    }

    /// After an ACK (`tcp_rack_mark_lost`): scan only when something new was
    /// delivered. Returns the newly lost and the reordering timer to arm.
    pub fn mark_lost(&mut self, board: &mut Scoreboard, now: Time, reo_wnd: Time) -> (u32, Option<Time>) {
        if !std::mem::take(&mut self.advanced) {
            return (0, None);
        }
        self.detect_loss(board, now, reo_wnd)
    }

    /// RFC 8985 section 6.2 step 5 (`tcp_rack_detect_loss`): each segment in
    /// flight sent before RACK.xmit_ts is lost once RACK.rtt + reo_wnd has
    /// passed since it was sent; those not yet are waited for. Returns the
    /// newly lost (lost retransmissions included) and, if some wait, the
    /// reordering timer: the longest wait plus TCP_TIMEOUT_MIN. Stale entries
    /// at the front are dropped, so a scan costs the segments in flight sent
    /// before RACK.xmit_ts, as Linux's walk of its time-sorted queue.
    pub fn detect_loss(&mut self, board: &mut Scoreboard, now: Time, reo_wnd: Time) -> (u32, Option<Time>) {
        let Some(newest) = self.newest else { return (0, None) };
        let (mut lost, mut wait) = (0, None::<Time>);
        let mut i = 0;
        while let Some(&(tx, seq)) = self.sent.get(i) {
            // Sent strictly later: so is every entry after it.
            if tx > newest.0 {
                break;
            }
            let live = in_flight_since(board, seq, tx);
            if live && (tx, seq) < newest {
                let expires = tx + self.rtt + reo_wnd;
                if expires > now {
                    wait = wait.max(Some(expires - now));
                    i += 1;
                    continue;
                }
                board.mark_lost(seq);
                lost += 1;
            } else if live {
                i += 1;
                continue;
            }
            // Stale, or just marked lost (Linux `list_del_init`).
            if i == 0 {
                self.sent.pop_front();
            } else {
                i += 1;
            }
        }
        (lost, wait.map(|w| w + TIMEOUT_MIN))
    }

    /// An RTO with RACK (`tcp_timeout_mark_lost`, 6.6): the head and every
    /// segment RACK.rtt old are lost; the more recently sent stay in flight.
    pub fn mark_lost_on_timeout(&self, board: &mut Scoreboard, now: Time) {
        let head = board.snd_una;
        for seq in board.snd_una..board.snd_nxt {
            let seg = board.segs[(seq - head) as usize];
            let sacked = board.is_sacked(seq);
            if !sacked && (seq == head || seg.tx_time + self.rtt <= now) {
                board.mark_lost(seq);
            }
        }
    }
}

/// Whether the transmission of `seq` at `tx` is still in flight: its last,
/// not acknowledged, not SACKed, not marked lost awaiting a resend.
fn in_flight_since(board: &Scoreboard, seq: u64, tx: Time) -> bool {
    if seq < board.snd_una || seq >= board.snd_nxt {
        return false;
    }
    let seg = &board.segs[(seq - board.snd_una) as usize];
    seg.tx_time == tx && seg.flags & SACKED == 0 && seg.flags & (LOST | RETRANS) != LOST
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{Cc, Reno};
    use crate::net::{Kind, Packet};
    use crate::tcp::receiver::{Receiver, ReceiverConfig, NO_TS as NO_TS_ECR};
    use crate::tcp::sender::{Sender, SenderConfig};
    use crate::time::US;

    /// Segments sent at `times`, recorded by the scoreboard and by RACK.
    fn sent_at(rack: &mut Rack, times: &[Time]) -> Scoreboard {
        let mut b = Scoreboard::new(true, times.len() as u64);
        for &t in times {
            let seq = b.push_new();
            send(rack, &mut b, seq, t);
        }
        b
    }

    fn send(rack: &mut Rack, b: &mut Scoreboard, seq: u64, t: Time) {
        b.seg(seq).tx_time = t;
        rack.on_send(seq, t);
    }

    /// SACK `blocks` at `now` and fold them into `rack` as the sender does.
    fn ack(rack: &mut Rack, b: &mut Scoreboard, blocks: &[(u64, u64)], now: Time, min_rtt: Time) {
        let prior_fack = b.sacked.back().map_or(0, |r| r.1);
        let mut a = RackAck::new(now, min_rtt, prior_fack);
        b.apply_sack(blocks, &mut |seq, seg, _| a.note(seq, seg));
        rack.advance(&a);
    }

    #[test]
    fn names_round_trip_and_an_unknown_one_lists_them() {
        for name in LOSS_DETECTION_NAMES {
            assert_eq!(LossDetection::from_name(name).unwrap().name(), name);
        }
        assert_eq!(LossDetection::from_name("sack").unwrap_err(), "unknown loss detection 'sack'; allowed: dupthresh, dupthresh-tlp, rack, fack, fack-tlp");
    }

    /// RFC 8985 section 7.2 at Linux 6.6: 2 SRTT + 200 ms with one packet
    /// out, 2 SRTT + 2 ms with more, never past the RTO; 3.10's formula.
    #[test]
    fn probe_timeout_with_one_and_with_several_packets_out() {
        let c = |packets_out, rto_in| ProbeContext { srtt: 50 * MS, packets_out, state: CaState::Open, can_send_more: false, rto_in };
        let v66 = TlpVersion::Linux66;
        assert_eq!(v66.pto(&c(1, SEC)), Some(300 * MS));
        assert_eq!(v66.pto(&c(5, SEC)), Some(102 * MS));
        assert_eq!(v66.pto(&c(1, 250 * MS)), Some(250 * MS), "capped at the RTO");
        assert_eq!(v66.pto(&ProbeContext { srtt: 0, ..c(5, 3 * SEC) }), Some(SEC), "no sample yet");
        assert_eq!(v66.pto(&ProbeContext { state: CaState::Recovery, ..c(5, SEC) }), None);
        assert_eq!(v66.pto(&c(0, SEC)), None);
        let v310 = TlpVersion::Linux310;
        // max(2 * 50, 1.5 * 50 + 200) = 275 ms with one out; 100 ms with more.
        assert_eq!((v310.pto(&c(1, SEC)), v310.pto(&c(5, SEC))), (Some(275 * MS), Some(100 * MS)));
        assert_eq!(v310.pto(&ProbeContext { srtt: 2 * MS, ..c(5, SEC) }), Some(10 * MS), "10 ms floor");
        assert_eq!(v310.pto(&ProbeContext { state: CaState::Cwr, ..c(5, SEC) }), None, "Open only");
        assert_eq!(v310.pto(&ProbeContext { can_send_more: true, ..c(5, SEC) }), None);
        assert_eq!(v310.pto(&ProbeContext { srtt: 0, ..c(5, SEC) }), None);
    }

    /// Segments 0..4 sent at 0, 1, 2, 3 ms; RTT 10 ms, min_rtt 8 ms: reo_wnd
    /// = 2 ms outside recovery with fewer than 3 SACKed. 3 SACKed at 13 ms:
    /// RACK.rtt 10 ms, 0..2 sent before it; 0 expires at 0 + 10 + 2 = 12 <= 13
    /// (lost), 1 at 13 (lost), 2 at 14: wait 1 ms (+2 ms timer slack).
    #[test]
    fn reordering_within_reo_wnd_is_not_a_loss_beyond_it_is() {
        let mut rack = Rack::default();
        let mut b = sent_at(&mut rack, &[0, MS, 2 * MS, 3 * MS]);
        ack(&mut rack, &mut b, &[(3, 4)], 13 * MS, 8 * MS);
        assert_eq!(rack.rtt, 10 * MS);
        let reo = rack.reo_wnd(CaState::Disorder, b.sacked_out, 8 * MS, 10 * MS);
        assert_eq!(reo, 2 * MS);
        assert_eq!(rack.mark_lost(&mut b, 13 * MS, reo), (2, Some(3 * MS)));
        assert_eq!((b.lost_out, b.next_lost()), (2, Some(0)));
        // Segment 2 arrives at 14.5 ms, within its window: reordering, not a
        // loss; it is seen as such (it lies below the SACKed 3).
        ack(&mut rack, &mut b, &[(2, 4)], 14 * MS + MS / 2, 8 * MS);
        assert!(rack.reord_seen);
        assert_eq!(rack.mark_lost(&mut b, 14 * MS + MS / 2, 2 * MS), (0, None));
        assert_eq!(b.lost_out, 2);
        b.check_invariants().unwrap();
    }

    /// Without reordering seen, DupThresh SACKed segments drop the window to
    /// zero: everything sent before the newest delivered is lost at once.
    #[test]
    fn three_sacked_take_the_reordering_window_away_until_reordering_is_seen() {
        let rack = Rack::default();
        assert_eq!(rack.reo_wnd(CaState::Disorder, 3, 8 * MS, 10 * MS), 0);
        assert_eq!(rack.reo_wnd(CaState::Recovery, 0, 8 * MS, 10 * MS), 0);
        assert_eq!(rack.reo_wnd(CaState::Open, 2, 8 * MS, 10 * MS), 2 * MS);
        assert_eq!(rack.reo_wnd(CaState::Open, 2, 80 * MS, 10 * MS), 10 * MS, "at most SRTT");
        let seen = Rack { reord_seen: true, ..Rack::default() };
        assert_eq!(seen.reo_wnd(CaState::Recovery, 5, 8 * MS, 10 * MS), 2 * MS);
    }

    /// A retransmission sent at 20 ms is lost too; 0..6 at 0, retransmission
    /// of 0 at 20 ms, new 6, 7 at 21 ms. SACK of 6 at 31 ms (RACK.rtt 10 ms,
    /// in recovery: reo_wnd 0): the retransmission (sent at 20 ms < 21 ms)
    /// expired at 30 ms: lost again. DupThresh needs 3 SACKed after it.
    #[test]
    fn a_lost_retransmission_is_detected_by_time() {
        let mut rack = Rack::default();
        let mut b = sent_at(&mut rack, &[0, 0, 0, 0, 0, 0]);
        ack(&mut rack, &mut b, &[(1, 6)], 10 * MS, 10 * MS);
        assert_eq!(rack.mark_lost(&mut b, 10 * MS, 0), (1, None));
        b.note_retransmit(0);
        send(&mut rack, &mut b, 0, 20 * MS);
        for _ in 0..2 {
            let seq = b.push_new();
            send(&mut rack, &mut b, seq, 21 * MS);
        }
        ack(&mut rack, &mut b, &[(1, 7)], 31 * MS, 10 * MS);
        assert_eq!(b.mark_lost_retrans(crate::tcp::scoreboard::DUP_THRESH), 0, "one SACKed after it is not DupThresh");
        assert_eq!(rack.mark_lost(&mut b, 31 * MS, 0), (1, None));
        assert_eq!((b.lost_out, b.next_lost()), (1, Some(0)), "to be retransmitted again");
        b.check_invariants().unwrap();
    }

    /// A retransmission SACKed sooner than min_rtt after it left: the
    /// original arrived; RACK does not take its send time.
    #[test]
    fn a_too_quick_sack_of_a_retransmission_does_not_advance_rack() {
        let mut rack = Rack::default();
        let mut b = sent_at(&mut rack, &[0, 0]);
        b.seg(0).flags |= EVER_RETRANS;
        send(&mut rack, &mut b, 0, 25 * MS);
        ack(&mut rack, &mut b, &[(0, 1)], 30 * MS, 10 * MS);
        assert_eq!((rack.newest, rack.advanced), (None, false));
        ack(&mut rack, &mut b, &[(1, 2)], 30 * MS, 10 * MS);
        assert_eq!((rack.newest, rack.rtt), (Some((0, 1)), 30 * MS));
    }

    #[test]
    fn a_retransmitted_probe_is_repaired_when_the_ack_passes_it() {
        let mut t = Tlp::new(TlpVersion::Linux66);
        t.sent(10, true);
        assert_eq!(t.on_ack(9, false, None), TlpOutcome::Pending);
        assert_eq!(t.on_ack(10, false, None), TlpOutcome::Pending, "ACK of the probe itself");
        assert_eq!(t.on_ack(11, false, None), TlpOutcome::Repaired);
        assert_eq!(t.high_seq, None);
        t.sent(20, true);
        assert_eq!(t.on_ack(20, true, None), TlpOutcome::NoLoss, "both copies arrived");
        t.sent(30, false);
        assert_eq!(t.on_ack(30, false, None), TlpOutcome::NoLoss);
        let mut old = Tlp::new(TlpVersion::Linux310);
        old.sent(30, false);
        assert_eq!((old.high_seq, old.probes), (None, 1), "3.10: new data opens no episode");
    }

    /// A sender and a receiver (ACK per segment) joined by a path of `rtt`
    /// that drops a segment's first k transmissions if `drop` lists it k times, Reno, a
    /// 10-segment window; run until the transfer of `segs` completes.
    fn transfer(rule: LossDetection, segs: u64, drop: &[u64], rtt: Time) -> Sender {
        transfer_reordered(rule, segs, drop, &[], false, rtt)
    }

    /// `transfer`, with the first transmission of each segment `late` lists
    /// delayed on the way by its time (reordering), and D-SACK on or off.
    fn transfer_reordered(rule: LossDetection, segs: u64, drop: &[u64], late: &[(u64, Time)], dsack: bool, rtt: Time) -> Sender {
        let cfg = SenderConfig { flow: 0, dst: 1, mss: 1000, header_bytes: 52, total_bytes: Some(segs * 1000), max_window: u64::MAX, sack: true, initial_cwnd: 10 };
        let mut s = Sender::new(cfg, Cc::Reno(Reno)).with_loss_detection(rule, FackRule::LINUX_316);
        let rcfg = ReceiverConfig { flow: 0, dst: 0, mss: 1000, total_bytes: Some(segs * 1000), delayed_ack: false, delack_timeout: 40 * MS, ack_bytes: 52 };
        let mut r = Receiver::new(rcfg).with_dsack(dsack);
        // (arrival, order, packet): data to the receiver, ACKs (kind Ack) back.
        let mut wire: Vec<(Time, usize, Packet)> = vec![];
        let mut sent = vec![0; segs as usize];
        let mut out = vec![];
        let (mut now, mut order) = (0, 0);
        s.start(0, &mut out);
        while s.completed.is_none() {
            for p in out.drain(..) {
                let k = sent[p.seq as usize];
                sent[p.seq as usize] += 1;
                if k >= drop.iter().filter(|&&d| d == p.seq).count() {
                    let extra = late.iter().find(|l| l.0 == p.seq && k == 0).map_or(0, |l| l.1);
                    order += 1;
                    wire.push((now + rtt / 2 + extra, order, p));
                }
            }
            let next = wire.iter().enumerate().min_by_key(|(_, w)| (w.0, w.1)).map(|(i, w)| (i, w.0));
            match (next, s.rto_deadline) {
                (Some((_, t)), Some(d)) if d < t => {
                    now = d;
                    s.on_rto(d, &mut out);
                }
                (None, Some(d)) => {
                    now = d;
                    s.on_rto(d, &mut out);
                }
                (Some((i, t)), _) => {
                    now = t;
                    let (_, _, p) = wire.remove(i);
                    if p.kind == Kind::Ack {
                        s.on_ack(&p, now, &mut out);
                    } else if let Some(ack) = r.on_data(&p, now) {
                        order += 1;
                        wire.push((now + rtt / 2, order, ack));
                    }
                }
                (None, None) => panic!("stalled at {now}"),
            }
            s.check_invariants().unwrap();
        }
        s
    }

    /// 10 segments over 10 ms, the last three lost. RACK-TLP: the ACKs at
    /// 10 ms leave 3 out, PTO = 2 * 10 + 2 = 22 ms: the probe resends 9 at
    /// 32 ms; its SACK at 42 ms shows 7 and 8 (sent at 0, RACK.rtt 10 ms,
    /// reo_wnd 2.5 ms) lost: recovery resends 7 at 42, 8 at 52 (PRR), all
    /// ACKed at 62 ms. DupThresh has one SACK at most: the RTO (srtt 10 +
    /// 200 ms) fires at 220 ms, then 7 and 8, 9 one RTT apart: 240 ms.
    #[test]
    fn a_tail_loss_is_recovered_by_the_probe_and_rack_without_an_rto() {
        let rack = transfer(LossDetection::Rack, 10, &[7, 8, 9], 10 * MS);
        assert_eq!(rack.completed, Some(62 * MS));
        assert_eq!((rack.counters.timeouts, rack.counters.recoveries, rack.counters.retransmits), (0, 1, 3));
        assert_eq!(rack.tlp.map(|t| t.probes), Some(1));
        let dupthresh = transfer(LossDetection::DupThresh, 10, &[7, 8, 9], 10 * MS);
        assert_eq!(dupthresh.completed, Some(240 * MS));
        assert_eq!((dupthresh.counters.timeouts, dupthresh.counters.retransmits), (1, 3));
    }

    /// One segment out: the PTO takes the delayed-ACK allowance (2 * 10 +
    /// 200 ms), capped at the RTO (210 ms): the probe goes out when the RTO
    /// would have, but the window is not collapsed.
    #[test]
    fn with_one_packet_out_the_probe_waits_as_long_as_the_rto() {
        let rack = transfer(LossDetection::Rack, 10, &[9], 10 * MS);
        assert_eq!((rack.completed, rack.counters.timeouts), (Some(230 * MS), 0));
        let dupthresh = transfer(LossDetection::DupThresh, 10, &[9], 10 * MS);
        assert_eq!((dupthresh.completed, dupthresh.counters.timeouts), (Some(230 * MS), 1));
    }

    /// 12 segments, segment 5 lost twice. The first ACKs at 10 ms send 10
    /// and 11; the third SACK marks 5 lost (RACK: reo_wnd 0 with 3 SACKed)
    /// and its retransmission leaves at 10 ms, after them in RACK's order
    /// (same time, ties by sequence: Linux `tcp_skb_sent_after`). Their SACKs
    /// at 20 ms show it lost again (10 + 10 + 0 <= 20): resent, done at 30 ms.
    /// DupThresh needs 3 segments SACKed beyond snd_nxt at the retransmission
    /// (12) and none is ever sent: the RTO at 10 + 210 ms, done at 230 ms.
    #[test]
    fn a_lost_retransmission_is_resent_without_an_rto() {
        let rack = transfer(LossDetection::Rack, 12, &[5, 5], 10 * MS);
        assert_eq!((rack.completed, rack.counters.timeouts, rack.counters.retransmits), (Some(30 * MS), 0, 2));
        let dupthresh = transfer(LossDetection::DupThresh, 12, &[5, 5], 10 * MS);
        assert_eq!((dupthresh.completed, dupthresh.counters.timeouts), (Some(230 * MS), 1));
    }

    /// 3 segments over 10 ms, segment 1 lost. The ACK of 0 and the SACK of 2
    /// arrive at 10 ms: 2 out, 1 SACKed, nothing new to send. 3.16's early
    /// retransmit waits max(srtt / 4, 2 ms) = 2.5 ms, then resends 1: done at
    /// 22.5 ms. FACK alone (fackets_out 2, not above 3) and DupThresh wait for
    /// the RTO (10 + 210 ms): done at 230 ms.
    #[test]
    fn early_retransmit_resends_a_hole_with_fewer_than_four_out() {
        for rule in [LossDetection::FackTlp, LossDetection::DupThreshTlp] {
            let er = transfer(rule, 3, &[1], 10 * MS);
            assert_eq!(er.completed, Some(22 * MS + 500 * US), "{rule:?}");
            assert_eq!((er.counters.timeouts, er.counters.recoveries, er.counters.retransmits), (0, 1, 1), "{rule:?}");
            assert_eq!(er.tlp.map(|t| t.probes), Some(0), "{rule:?}");
        }
        for rule in [LossDetection::Fack, LossDetection::DupThresh] {
            let plain = transfer(rule, 3, &[1], 10 * MS);
            assert_eq!((plain.completed, plain.counters.timeouts), (Some(230 * MS), 1), "{rule:?}");
        }
    }

    /// 12 segments over 10 ms, 7, 10 and 11 lost. The ACKs at 10 ms leave
    /// 7-11 out and schedule the probe for 30 ms; the SACKs of 8 and 9 put
    /// the flow in Disorder (fackets_out 3: no recovery; 5 out: no early
    /// retransmit). 3.16's `tcp_ack` turns the probe back into the RTO and
    /// schedules no probe outside Open, so the RTO fires, counted from 7's
    /// transmission (`tcp_rearm_rto` replacing a probe): at 210 ms; 7 is
    /// ACKed at 220, 10 and 11 at 230 ms. A probe kept pending would have
    /// resent 11 at 30 ms and started recovery on its SACK. FACK alone
    /// restarted the RTO at the 10 ms ACKs: done at 240 ms.
    #[test]
    fn a_duplicate_ack_cancels_the_pending_probe_at_3_16() {
        let tlp = transfer(LossDetection::FackTlp, 12, &[7, 10, 11], 10 * MS);
        assert_eq!((tlp.completed, tlp.counters.timeouts, tlp.tlp.map(|t| t.probes)), (Some(230 * MS), 1, Some(0)));
        let fack = transfer(LossDetection::Fack, 12, &[7, 10, 11], 10 * MS);
        assert_eq!((fack.completed, fack.counters.timeouts), (Some(240 * MS), 1));
    }

    proptest::proptest! {
        /// Whatever the send times and the SACKs, RACK marks exactly the
        /// segments in flight sent before the newest delivered one whose
        /// RACK.rtt + reo_wnd has passed, and waits for the rest of those.
        #[test]
        fn rack_marks_exactly_the_expired_segments_sent_before_the_newest_delivered(
            gaps in proptest::collection::vec(0u64..3, 2..60),
            sacked in proptest::collection::vec(proptest::bool::ANY, 60),
            reo in 0u64..5,
            wait in 0u64..30,
        ) {
            let times: Vec<Time> = gaps.iter().scan(0, |t, g| { *t += g * MS; Some(*t) }).collect();
            let mut rack = Rack::default();
            let mut b = sent_at(&mut rack, &times);
            let blocks: Vec<(u64, u64)> = (0..times.len() as u64).filter(|&q| sacked[q as usize]).map(|q| (q, q + 1)).collect();
            let now = times[times.len() - 1] + 10 * MS + wait * MS;
            for chunk in blocks.chunks(4) {
                ack(&mut rack, &mut b, chunk, now, MS);
            }
            let (lost, timer) = rack.mark_lost(&mut b, now, reo * MS);
            let Some(newest) = rack.newest else {
                proptest::prop_assert_eq!((lost, timer), (0, None));
                return Ok(());
            };
            let (mut want_lost, mut want_wait) = (0, None::<Time>);
            for (q, &t) in times.iter().enumerate() {
                let (q, expires) = (q as u64, t + rack.rtt + reo * MS);
                if sacked[q as usize] || (t, q) >= newest {
                    proptest::prop_assert!(b.segs[q as usize].flags & LOST == 0, "{} marked", q);
                } else if expires <= now {
                    want_lost += 1;
                    proptest::prop_assert!(b.segs[q as usize].flags & LOST != 0, "{} not marked", q);
                } else {
                    want_wait = want_wait.max(Some(expires - now + TIMEOUT_MIN));
                }
            }
            proptest::prop_assert_eq!((lost, timer), (want_lost, want_wait));
            proptest::prop_assert!(b.check_invariants().is_ok());
        }
    }

    /// An RTO with RACK marks the head and what is RACK.rtt old, not the
    /// segments sent since.
    #[test]
    fn a_timeout_leaves_recently_sent_segments_in_flight() {
        let mut rack = Rack::default();
        let mut b = sent_at(&mut rack, &[0, 0, 50 * MS, 90 * MS]);
        rack.rtt = 30 * MS;
        rack.mark_lost_on_timeout(&mut b, 100 * MS);
        assert_eq!((b.lost_out, b.in_flight()), (3, 1));
        b.check_invariants().unwrap();
    }

    /// Reordering of segment 8 by 0.1 ms (only 9 SACKed before it: reo_wnd
    /// min_rtt/4 = 2.5 ms) is seen, not a loss. Segment 14, sent at 10 ms,
    /// is 6 ms late: the SACKs at 20 ms arm the reordering timer for 10 +
    /// 10 + 2.5 + 2 ms slack = 24.5 ms, before its ACK at 26 ms: a spurious
    /// retransmission, whose duplicate the receiver D-SACKs at 34.5 ms: two
    /// steps, reo_wnd 5 ms. Segment 60, as late, then waits until tx + 17 ms,
    /// past its ACK at tx + 16 ms: no retransmission. Without D-SACK it is
    /// resent too: a second recovery, 50 ms later done.
    #[test]
    fn a_dsack_widens_the_reordering_window_and_spares_the_next_late_segment() {
        let late = [(8, MS / 10), (14, 6 * MS), (60, 6 * MS)];
        let with = transfer_reordered(LossDetection::Rack, 300, &[], &late, true, 10 * MS);
        assert!(with.rack.reord_seen);
        assert_eq!((with.rack.dsack_dups, with.rack.reo_wnd_steps), (1, 2));
        assert_eq!((with.counters.retransmits, with.counters.recoveries, with.completed), (1, 1, Some(180 * MS)));
        let without = transfer_reordered(LossDetection::Rack, 300, &[], &late, false, 10 * MS);
        assert_eq!((without.rack.dsack_dups, without.rack.reo_wnd_steps), (0, 1));
        assert_eq!((without.counters.retransmits, without.counters.recoveries, without.completed), (2, 2, Some(230 * MS)));
        let only_first = transfer_reordered(LossDetection::Rack, 300, &[], &late[..2], true, 10 * MS);
        assert_eq!(only_first.counters.retransmits, 1, "segment 60 cost the second retransmission");
    }

    /// Linux 6.6 `tcp_rack_update_reo_wnd` by hand (min_rtt 8 ms, SRTT 10 ms):
    /// a D-SACK after reordering was seen adds a step of 2 ms on the next ACK
    /// that delivers, once a round (an ACK of data sent before the last
    /// widening's delivered count 20 does not count), up to SRTT; after 16
    /// recoveries without one it falls back to one step.
    #[test]
    fn reo_wnd_steps_up_once_a_round_on_dsacks_and_decays_after_16_recoveries() {
        let mut rack = Rack { reord_seen: true, ..Rack::default() };
        let reo = |r: &Rack| r.reo_wnd(CaState::Open, 0, 8 * MS, 10 * MS);
        assert!(rack.on_dsack(1, 1, false));
        rack.update_reo_wnd(0, 20);
        assert_eq!(reo(&rack), 2 * MS, "no rate sample: the D-SACK waits");
        rack.update_reo_wnd(5, 20);
        assert_eq!(reo(&rack), 4 * MS);
        rack.on_dsack(1, 2, false);
        rack.update_reo_wnd(19, 25);
        assert_eq!(reo(&rack), 4 * MS, "same round");
        for (k, want) in [(3, 6), (4, 8), (5, 10), (6, 10)] {
            rack.on_dsack(1, k, false);
            rack.update_reo_wnd(25 * k, 25 * k + 20);
            assert_eq!((rack.reo_wnd_steps, reo(&rack)), (k as u32, want * MS), "capped at SRTT");
        }
        for _ in 0..15 {
            rack.on_recovery_end();
            rack.update_reo_wnd(500, 510);
        }
        assert_eq!(rack.reo_wnd_steps, 6, "15 recoveries: held");
        rack.on_recovery_end();
        rack.update_reo_wnd(600, 610);
        assert_eq!(reo(&rack), 2 * MS, "16: back to min_rtt/4");
        assert!(!rack.on_dsack(10, 9, false), "more duplicates than retransmissions: the network's");
        assert!(rack.on_dsack(1, 50, true));
        rack.update_reo_wnd(700, 710);
        assert_eq!(rack.reo_wnd_steps, 1, "the probe's D-SACK does not widen");
        let mut unseen = Rack::default();
        assert!(unseen.on_dsack(1, 1, false));
        unseen.update_reo_wnd(5, 20);
        assert_eq!(unseen.reo_wnd_steps, 1, "no reordering seen yet");
    }

    /// The sender takes a first block inside the second (RFC 2883 section 4)
    /// as a D-SACK, counts it once and SACKs only the second block's news.
    #[test]
    fn the_sender_counts_a_dsack_and_takes_no_news_from_it() {
        let cfg = SenderConfig { flow: 0, dst: 1, mss: 1000, header_bytes: 52, total_bytes: None, max_window: u64::MAX, sack: true, initial_cwnd: 10 };
        let mut s = Sender::new(cfg, Cc::Reno(Reno)).with_loss_detection(LossDetection::Rack, FackRule::LINUX_316);
        let mut out = vec![];
        s.start(0, &mut out);
        let mut a = Packet::ack(0, 0, 2, 52, 10 * MS, NO_TS_ECR);
        a.sack[..2].copy_from_slice(&[(5, 6), (4, 8)]);
        a.nsack = 2;
        s.on_ack(&a, 10 * MS, &mut out);
        assert_eq!((s.rack.dsack_dups, s.last_rate_sample.acked_sacked), (1, 6));
        let mut b = Packet::ack(0, 0, 2, 52, 11 * MS, NO_TS_ECR);
        b.sack[..2].copy_from_slice(&[(9, 10), (4, 8)]);
        b.nsack = 2;
        s.on_ack(&b, 11 * MS, &mut out);
        assert_eq!((s.rack.dsack_dups, s.last_rate_sample.acked_sacked), (1, 1), "an ordinary block");
        s.check_invariants().unwrap();
    }
}
