//! The TCP sender, coordinating the pieces: the send loop (lost segments first,
//! then new data, within cwnd and the receive window), pacing, back-pressure
//! from the interface queue, the retransmission timer, and ACK processing, which
//! calls into
//! * tcp::scoreboard: which segments are SACKed, lost, retransmitted (RFC 6675);
//! * tcp::rate and tcp::rtt: delivery-rate and RTT samples;
//! * tcp::recovery: the loss-recovery state machine with PRR (RFC 6675/6582/6937);
//! * tcp::hooks: the congestion-control hooks, in Linux's order.
//!
//! Counters follow Linux (`net/ipv4/tcp_input.c`): packets in flight =
//! packets_out - sacked_out - lost_out + retrans_out.

use super::ecn::{EcnMode, EcnSender};
use super::hooks;
use super::ns2_agent::{Ns2Agent, Ns2AgentKind, SentSeg};
use super::rack::{early_retransmit_due, er_delay, ErContext, FackRule, LossDetection, ProbeContext, Rack, RackAck, Tlp, TlpOutcome, TlpVersion, XmitTimer};
use super::rate::{RateState, RateTrack};
use super::recovery::{AckInfo, Recovery};
use super::scoreboard::{Scoreboard, Seg, EVER_RETRANS, INITIAL_SCOREBOARD};
use super::tso::{SendPoint, TsoDefer};
use super::tsq::{SmallQueues, Tsq};
use crate::cc::{pacing_bytes_per_ns_at, AckSample, CaEvent, CaState, Cc, CcState, CongestionOps, RateSample};
use crate::net::{Packet, SegRange};
use crate::stack::TxStart;
use crate::tcp::receiver::NO_TS;
use crate::tcp::rtt::{RttEstimator, RttSampling};
use crate::rng::Rng;
use crate::time::Time;

pub use super::scoreboard::DUP_THRESH;

pub struct SenderConfig {
    pub flow: u32,
    /// Node the data goes to (the receiver).
    pub dst: u32,
    pub mss: u32,
    /// Header bytes on the wire for each data segment (IP + TCP + options).
    pub header_bytes: u32,
    pub total_bytes: Option<u64>,
    /// Receive window in segments (max_window / MSS).
    pub max_window: u64,
    pub sack: bool,
    pub initial_cwnd: u32,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct SenderCounters {
    pub segments_sent: u64,
    pub bytes_sent: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub recoveries: u64,
    /// Window reductions because the sender's interface queue was full.
    pub local_congestion: u64,
    /// Window reductions (CWR) on an ECE from the receiver (tcp::ecn).
    pub ecn_reductions: u64,
    pub acks: u64,
    /// ACK inter-arrival times (ns): running sum and sum of squares, to measure
    /// ACK compression (reverse traffic bunches ACKs together).
    pub ack_gap_sum: f64,
    pub ack_gap_sq_sum: f64,
    last_ack_at: Option<Time>,
}

impl SenderCounters {
    fn note_ack(&mut self, now: Time) {
        if let Some(t) = self.last_ack_at {
            let gap = (now - t) as f64;
            self.ack_gap_sum += gap;
            self.ack_gap_sq_sum += gap * gap;
        }
        self.last_ack_at = Some(now);
        self.acks += 1;
    }

    /// Coefficient of variation of ACK inter-arrival times.
    pub fn ack_gap_cov(&self) -> f64 {
        let n = self.acks.saturating_sub(1) as f64;
        if n < 2.0 {
            return 0.0;
        }
        let mean = self.ack_gap_sum / n;
        let var = (self.ack_gap_sq_sum / n - mean * mean).max(0.0);
        var.sqrt() / mean
    }
}

/// Which test says the window is in use, so that an ACK may grow it (Linux
/// `tcp_is_cwnd_limited`), by era.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CwndTest {
    /// Linux 3.16 on (include/net/tcp.h at 3.16.0 and today): in slow start
    /// cwnd below twice the most packets out this window, else whether the
    /// window was full at a send since the window began (`is_cwnd_limited`,
    /// kept by `tcp_cwnd_validate`).
    #[default]
    Validated,
    /// The packets in flight before the ACK reach cwnd: `tcp_ack`'s
    /// `prior_in_flight >= snd_cwnd` at 2.4.22 and 2.6.11 (net/ipv4/tcp_input.c),
    /// the modules' `tcp_is_cwnd_limited(sk, in_flight)` at 2.6.22 on a host
    /// without TSO/GSO (include/net/tcp.h; the engine sends segment by
    /// segment, so the TSO divisor branch never applies), and ns-2.35
    /// TCP-Linux's copy of it (tcp/linux/ns-linux-c.h).
    PriorInFlight,
    /// No test: ns-2's own agents open the window on every new ACK
    /// (`TcpAgent::opencwnd`, tcp/tcp.cc).
    Always,
}

/// Whether the window has been in use (`CwndTest`, with the `max_packets_out`
/// / `is_cwnd_limited` bookkeeping of Linux `tcp_cwnd_validate`).
#[derive(Default)]
struct WindowUse {
    test: CwndTest,
    window_seq: u64,
    max_packets_out: u64,
    limited_flag: bool,
}

impl WindowUse {
    /// After a send: track the most packets out in this window and whether
    /// the window was full.
    /// `deferred`: TSO deferral held data back for want of window, which
    /// counts as a full window (`tcp_tso_should_defer`'s `is_cwnd_limited`).
    fn note(&mut self, board: &Scoreboard, cwnd: u32, deferred: bool) {
        let full = deferred || board.in_flight() >= cwnd as u64;
        if board.snd_una >= self.window_seq || board.packets_out() > self.max_packets_out {
            self.max_packets_out = board.packets_out();
            self.window_seq = board.snd_nxt;
            self.limited_flag = full;
        } else {
            self.limited_flag |= full;
        }
    }

    /// The stack's test, given the packets in flight before the ACK; recorded
    /// in the state.
    fn cwnd_limited(&self, s: &mut CcState, prior_in_flight: u32) -> bool {
        let limited = match self.test {
            CwndTest::Validated if s.in_slow_start() => (s.cwnd as u64) < 2 * self.max_packets_out,
            CwndTest::Validated => self.limited_flag,
            CwndTest::PriorInFlight => prior_in_flight >= s.cwnd,
            CwndTest::Always => true,
        };
        s.cwnd_limited = limited;
        limited
    }
}

pub struct Sender {
    cfg: SenderConfig,
    total_segs: Option<u64>,
    pub cc: Cc,
    pub s: CcState,
    board: Scoreboard,
    recovery: Recovery,
    rate: RateState,
    window: WindowUse,
    rtt_sampling: RttSampling,
    /// The stack's TCP-internal pacing (crate::stack::Profile::tcp_pacing).
    tcp_pacing: bool,
    /// ns-2's own sender (Vegas, Tahoe, Sack1), which then owns the window (tcp::ns2_agent).
    ns2: Option<Box<Ns2Agent>>,
    pub rtt: RttEstimator,
    /// When the retransmission timer fires, if armed.
    pub rto_deadline: Option<Time>,
    /// Earliest departure time of the next packet when pacing.
    pace_next: Time,
    /// When the pacing timer must call `send` again, if it is waiting.
    pub pace_deadline: Option<Time>,
    /// ns-2's delayed send, if the flow has one (`send_jitter`).
    jitter: Option<SendJitter>,
    /// Free slots in the interface queue (Linux txqueuelen), set by the simulation
    /// before each call; None when unlimited.
    pub nic_room: Option<u64>,
    /// The last send stopped on a full interface queue or on TCP Small Queues:
    /// call `send` when the interface finishes a packet.
    pub nic_blocked: bool,
    /// TCP Small Queues (tcp::tsq), in the stacks that have it.
    tsq: Option<SmallQueues>,
    /// TSO sizing and deferral (tcp::tso), in the stacks that have it.
    tso: Option<TsoDefer>,
    /// This flow's packets in its host's interface (queued or being
    /// serialised), set by the simulation before each call when it tracks
    /// them, and counted up as the sender emits.
    pub nic_queued: u32,
    /// The rate sample of the last ACK (for tests and traces).
    pub last_rate_sample: RateSample,
    pub counters: SenderCounters,
    pub completed: Option<Time>,
    ecn: EcnSender,
    /// RACK loss detection (tcp::rack) instead of RFC 6675 DupThresh.
    use_rack: bool,
    pub(super) rack: Rack,
    /// The tail loss probe, if the flow's loss detection has one.
    pub tlp: Option<Tlp>,
    /// What `rto_deadline` is armed for (with TLP: a probe or RACK's timer too).
    timer: XmitTimer,
    /// Where CA_EVENT_TX_START is raised (the stack's; today's Linux by default).
    tx_start: TxStart,
    /// FACK's details when the flow detects losses by FACK.
    fack: Option<FackRule>,
}

/// ns-2's delayed-send timer (`delsnd_timer_`, armed in `send_much` with
/// `Random::uniform(overhead_)`; tcp/tcp.cc, tcp/tcp-linux.cc at ns-2.35).
/// Floyd and Jacobson (1992) added it to break phase effects; in ns-2 every
/// send then comes from the timer, a whole window's worth at a time.
struct SendJitter {
    max: Time,
    rng: Rng,
    /// When the pending timer fires, if one is.
    due: Option<Time>,
}

impl SendJitter {
    fn draw(&mut self) -> Time {
        (self.rng.uniform() * self.max as f64) as Time
    }
}

impl Sender {
    pub fn new(cfg: SenderConfig, cc: Cc) -> Self {
        let total_segs = cfg.total_bytes.map(|b| b.div_ceil(cfg.mss as u64).max(1));
        let s = CcState::new(cfg.initial_cwnd, cfg.mss);
        let capacity = total_segs.map_or(INITIAL_SCOREBOARD, |t| t.min(INITIAL_SCOREBOARD));
        Sender {
            board: Scoreboard::new(cfg.sack, capacity),
            recovery: Recovery::new(cfg.sack),
            cfg,
            total_segs,
            cc,
            s,
            rate: RateState::default(),
            window: WindowUse::default(),
            rtt_sampling: RttSampling::Current,
            tcp_pacing: false,
            ns2: None,
            rtt: RttEstimator::default(),
            rto_deadline: None,
            pace_next: 0,
            pace_deadline: None,
            jitter: None,
            last_rate_sample: RateSample::default(),
            nic_room: None,
            nic_blocked: false,
            tsq: None,
            tso: None,
            nic_queued: 0,
            counters: SenderCounters::default(),
            completed: None,
            ecn: EcnSender::default(),
            use_rack: false,
            rack: Rack::default(),
            tlp: None,
            timer: XmitTimer::Rto,
            tx_start: TxStart::AnyData,
            fack: None,
        }
    }

    /// Send as ns-2's agents do with `overhead_` = `max` > 0 (SendJitter); the
    /// draws come from `rng`.
    pub fn with_send_jitter(mut self, max: Time, rng: Rng) -> Self {
        self.jitter = (max > 0).then_some(SendJitter { max, rng, due: None });
        self
    }

    /// A connection that negotiated ECN (tcp::ecn), or not.
    pub fn with_ecn(mut self, mode: EcnMode) -> Self {
        self.ecn = EcnSender::new(mode);
        self
    }

    /// Run as the flow's stack does (crate::stack): growth counting, the
    /// reduction rule and the initial RTO. The initial window is the flow's.
    pub fn with_stack(mut self, profile: &crate::stack::Profile) -> Self {
        self.s.growth = profile.growth;
        self.recovery.set_reduction(profile.reduction);
        self.recovery.set_undo(profile.undo);
        self.rtt.initial_rto = Some(profile.initial_rto);
        self.tx_start = profile.tx_start;
        self.window.test = profile.cwnd_test;
        self.rtt_sampling = profile.rtt_sampling;
        self.tcp_pacing = profile.tcp_pacing;
        self.tso = profile.tso;
        let sender = self.with_loss_detection(profile.loss_detection, profile.fack);
        match profile.ns2_agent {
            Some(kind) => sender.with_ns2_agent(kind),
            None => sender,
        }
    }

    /// Run one of ns-2's own senders (tcp::ns2_agent): its own window and
    /// retransmissions, SACK only for Sack1; the algorithm's hooks are not
    /// called. Where the agent cannot run (`Ns2Agent::new`), the engine's own
    /// sender stays.
    fn with_ns2_agent(mut self, kind: Ns2AgentKind) -> Self {
        let vegas = match &self.cc {
            Cc::Vegas(v) => Some(v.params()),
            _ => None,
        };
        let Some(agent) = Ns2Agent::new(kind, vegas, self.cfg.sack, self.cfg.initial_cwnd, self.cfg.max_window) else {
            return self;
        };
        if !agent.uses_sack() {
            self.cfg.sack = false;
            self.board = Scoreboard::new(false, self.board.segs.capacity() as u64);
        }
        self.recovery = Recovery::new(false);
        self.fack = None;
        self.ns2 = Some(Box::new(agent));
        self.sync_ns2();
        self
    }

    /// Detect losses by this rule (tcp::rack); RACK and TLP need SACK.
    /// The loss detection `rule`, with FACK's details `fack` (the stack's).
    pub fn with_loss_detection(mut self, rule: LossDetection, fack: FackRule) -> Self {
        let rule = if self.cfg.sack { rule } else { LossDetection::DupThresh };
        self.fack = rule.fack().then_some(fack);
        self.use_rack = rule == LossDetection::Rack;
        if self.use_rack {
            self.board.use_rack();
        }
        self.tlp = rule.tlp().map(Tlp::new);
        self
    }

    pub fn packets_out(&self) -> u64 {
        self.board.packets_out()
    }

    /// Linux `tcp_packets_in_flight`.
    pub fn in_flight(&self) -> u64 {
        self.board.in_flight()
    }

    pub fn snd_una(&self) -> u64 {
        self.board.snd_una
    }

    pub fn snd_nxt(&self) -> u64 {
        self.board.snd_nxt
    }

    /// The loss-recovery state (Linux `icsk_ca_state`).
    pub fn state(&self) -> CaState {
        self.s.ca_state
    }

    /// Open the connection: initialise the algorithm and send the initial window.
    pub fn start(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.s.now = now;
        self.cc.init(&mut self.s);
        self.send_or_defer(now, out);
    }

    fn seg_payload(&self, seq: u64) -> u32 {
        let mss = self.cfg.mss as u64;
        match self.cfg.total_bytes {
            Some(total) => total.saturating_sub(seq * mss).min(mss) as u32,
            None => self.cfg.mss,
        }
    }

    fn sync_state(&mut self, now: Time) {
        self.s.now = now;
        self.s.in_flight = self.in_flight() as u32;
        self.s.snd_una = self.board.snd_una;
        self.s.snd_nxt = self.board.snd_nxt;
        self.s.srtt = self.rtt.srtt;
        self.s.min_rtt = self.rtt.min_rtt;
        (self.s.lost, self.s.delivered_time) = (self.board.lost, self.rate.delivered_time());
    }

    // ----- ACK processing -------------------------------------------------------

    /// An ACK arrived: update the scoreboard, detect losses, run the state machine
    /// and congestion control, then send what the window allows.
    pub fn on_ack(&mut self, p: &Packet, now: Time, out: &mut Vec<Packet>) {
        if p.ack > self.snd_nxt() || p.ack < self.snd_una() || self.completed.is_some() {
            return;
        }
        self.counters.note_ack(now);
        self.sync_state(now);
        if self.ns2.is_some() {
            return self.on_ack_ns2(p, now, out);
        }
        self.cancel_early_timers(now);
        let prior_in_flight = self.in_flight() as u32;
        let acked = p.ack - self.snd_una();
        let dsack = if self.cfg.sack { Scoreboard::dsack_block(p.ack, p.sack_blocks()) } else { None };
        if let Some(d) = dsack {
            self.recovery.undo.on_dsack(d, self.board.snd_una, &self.board);
        }
        let (track, delivered, sacked, orig_acked) = self.update_scoreboard(p, acked, dsack.is_some(), now);
        let rtt = self.take_rtt_sample(p, now, acked > 0, &track);
        let ece = self.ecn.ece(p);
        if self.ecn.on() {
            self.ecn_ack(ece, delivered);
        }
        self.s.delivered += delivered as u64;
        self.rate.on_ack(&track, now, delivered);
        self.sync_state(now);
        let tsecr = (p.ts_ecr != NO_TS).then_some(p.ts_ecr);
        let newest_acked_tx = track.rtt.newest_acked();
        let sample = AckSample { acked: delivered, rtt, in_flight: prior_in_flight, rcv_tsval: p.ts_val, rcv_tsecr: tsecr, newest_acked_tx };
        hooks::pkts_acked(&mut self.cc, &mut self.s, &sample);
        self.note_dsack(dsack, track.prior_delivered());
        self.process_tlp_ack(p.ack, acked == 0 && delivered == 0, dsack);
        let (mut newly_lost, reo_armed) = self.detect_losses(acked == 0, now);
        let prior_state = self.s.ca_state;
        let grow_first = self.recovery.grows_before_state_machine();
        if grow_first {
            let window = &self.window;
            hooks::cong_avoid_before(&mut self.cc, &mut self.s, delivered, acked > 0, |s| window.cwnd_limited(s, prior_in_flight));
        }
        if ece {
            self.recovery.undo.forbid_window_undo();
        }
        let can_send_new = prior_state == CaState::Loss && self.may_send_new();
        let head_timed_out = self.fack.is_some_and(|r| r.head_timeout) && self.board.head_timed_out(now, self.rtt.rto());
        let early_retransmit = self.early_retransmit_now(now);
        let info = AckInfo { acked, sacked, orig_acked, tsecr, can_send_new, head_timed_out, early_retransmit };
        let entered = self.recovery.on_ack(&info, &mut self.board, &mut self.cc, &mut self.s);
        if entered && head_timed_out {
            // 2.6.22 `tcp_fastretrans_alert`: `tcp_update_scoreboard` right after
            // entering, which marks the timed-out segments from the head.
            newly_lost += self.board.mark_timed_out(now, self.rtt.rto());
        }
        if matches!(prior_state, CaState::Recovery | CaState::Loss) && (entered || self.s.ca_state != prior_state) {
            self.rack.on_recovery_end();
        }
        if entered {
            self.counters.recoveries += 1;
            self.end_tlp_episode();
            self.ecn.queue_cwr();
        } else if ece {
            self.ecn_reduce();
        }
        self.sync_state(now);
        let mut rs = self.rate.sample(&track, now, self.s.delivered, self.rtt.min_rtt);
        rs.acked_sacked = delivered;
        rs.losses = newly_lost;
        rs.lost = track.lost_since_tx(self.board.lost);
        rs.prior_in_flight = prior_in_flight;
        if self.ecn.on() {
            rs.delivered_ce = track.delivered_ce_since(self.s.delivered_ce);
        }
        rs.rtt = rtt;
        let (recovery, window, in_flight) = (&mut self.recovery, &self.window, self.board.in_flight());
        let raise = acked > 0 && !grow_first;
        let prr = |s: &mut CcState| recovery.prr(s, in_flight, acked > 0, delivered, newly_lost);
        let pacing = self.tcp_pacing.then(|| self.board.packets_out() as u32);
        hooks::cong_control(&mut self.cc, &mut self.s, &rs, raise, prr, |s| window.cwnd_limited(s, prior_in_flight), pacing);
        recovery.moderate_after_ack(prior_state, &mut self.s, in_flight);
        if std::mem::take(&mut self.s.mark_app_limited) {
            self.rate.mark_app_limited(self.s.delivered, in_flight);
        }
        // Kept after the algorithm has run, not before: `rs` was just written
        // field by field, and copying it at once stalls on store forwarding
        // (perf annotate of on_ack, issue 29).
        self.last_rate_sample = rs;
        if self.tlp.is_some() {
            self.set_xmit_timer_after_ack(acked, reo_armed, now);
        } else {
            self.restart_rto_after_ack(acked, now);
        }
        self.check_completion(now);
        self.send_or_defer(now, out);
    }

    /// An ACK for ns-2's own agent: the scoreboard and the coarse timer's
    /// estimator as for any flow without SACK, then the agent decides
    /// (tcp::ns2_agent): a resend, the timer, and whether to send.
    fn on_ack_ns2(&mut self, p: &Packet, now: Time, out: &mut Vec<Packet>) {
        let sent = |b: &Scoreboard, seq: u64| b.sent_seg(seq).map(|(tx_time, resent)| SentSeg { tx_time, resent });
        let acked = p.ack - self.snd_una();
        let acked_seg = if acked > 0 { sent(&self.board, p.ack - 1) } else { None };
        let (track, delivered, sack_news, _) = self.update_scoreboard(p, acked, false, now);
        self.take_rtt_sample(p, now, acked > 0, &track);
        self.s.delivered += delivered as u64;
        let (head, highest) = (sent(&self.board, p.ack), self.snd_nxt().saturating_sub(1));
        let action = self.ns2.as_mut().expect("the agent").on_ack(p.ack, acked_seg, head, sack_news, highest, now);
        self.sync_ns2();
        if let Some(seq) = action.resend {
            self.ns2_resend(seq, now, out);
        }
        if action.backoff {
            // `reset_rtx_timer(1)`: the coarse timer backs off and restarts.
            self.rtt.backoff += 1;
        }
        if action.backoff || action.restart {
            self.rto_deadline = Some(now + self.rtt.rto());
        } else {
            self.restart_rto_after_ack(acked, now);
        }
        self.check_completion(now);
        if action.send_one && self.completed.is_none() {
            self.send_ns2(now, out);
        }
        if action.send && self.completed.is_none() {
            self.send_or_defer(now, out);
        }
    }

    /// The agent's window and ssthresh, whole packets, for the traces.
    fn sync_ns2(&mut self) {
        if let Some(a) = &self.ns2 {
            (self.s.cwnd, self.s.ssthresh) = a.window();
        }
    }

    /// ns-2's `output(seqno)` of a segment sent before: a retransmission,
    /// whatever the window. Going back after a timeout, Sack1 also resends
    /// what the receiver holds (its scoreboard was cleared): sent again,
    /// counted, but it stays SACKed here.
    fn ns2_resend(&mut self, seq: u64, now: Time, out: &mut Vec<Packet>) {
        if self.board.is_sacked(seq) {
            self.counters.retransmits += 1;
            return self.emit(seq, false, now, out);
        }
        self.board.mark_lost(seq);
        self.retransmit(seq, now, out);
    }

    /// `send_much` for the agent: segments from `t_seqno` while it allows,
    /// resending those it went back over.
    fn send_ns2(&mut self, now: Time, out: &mut Vec<Packet>) {
        while let Some((seq, hole)) = self.ns2.as_ref().and_then(|a| a.next_send(&self.board)) {
            if self.nic_room == Some(0) {
                self.nic_blocked = true;
                break;
            }
            if seq < self.snd_nxt() {
                self.ns2_resend(seq, now, out);
            } else if self.may_send_new() {
                self.send_new(now, out);
            } else {
                break;
            }
            if let Some(room) = self.nic_room.as_mut() {
                *room -= 1;
            }
            self.ns2.as_mut().expect("the agent").sent(seq, hole, now);
        }
        if self.packets_out() > 0 && self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// Take what the ACK reports off the scoreboard; returns the ACK's send-time
    /// bookkeeping, the packets it newly delivered, whether some were newly
    /// SACKed and whether one of them, sent before the recovery point, had
    /// never been retransmitted (Linux FLAG_ORIG_SACK_ACKED:
    /// `tcp_sacktag_one`, `tcp_clean_rtx_queue`).
    /// `dsack`: the first SACK block is a D-SACK (Scoreboard::dsack_block), a
    /// duplicate and no news: skipped.
    #[inline(always)]
    fn update_scoreboard(&mut self, p: &Packet, acked: u64, dsack: bool, now: Time) -> (RateTrack, u32, bool, bool) {
        let mut track = RateTrack::default();
        // Only Loss asks (F-RTO, tcp::recovery): the test stays out of the
        // per-segment loop otherwise (issue 29's engine benchmark, scenario e).
        let (mut orig, in_loss, high_seq) = (false, self.s.ca_state == CaState::Loss, self.recovery.recovery_point());
        let (use_rack, mut rack_ack) = (self.use_rack, RackAck::new(now, self.rtt.min_rtt, self.board.highest_sacked()));
        let mut note = |seq: u64, seg: &Seg, sacked: bool| {
            track.note(seg, sacked);
            if in_loss {
                orig |= seq < high_seq && seg.flags & EVER_RETRANS == 0;
            }
            if use_rack {
                rack_ack.note(seq, seg);
            }
        };
        let mut delivered = self.board.ack_cumulative(p.ack, &mut note);
        let mut sacked = false;
        if self.cfg.sack {
            let newly = self.board.apply_sack(&p.sack_blocks()[dsack as usize..], &mut note);
            sacked = newly > 0;
            delivered += newly;
        } else {
            delivered = self.board.count_dupacks(acked, delivered);
        }
        self.rack.advance(&rack_ack);
        (track, delivered, sacked, orig)
    }

    /// The ACK's RTT samples (tcp::rtt::RttTrack::samples) feed the estimator;
    /// returns the one congestion control sees.
    fn take_rtt_sample(&mut self, p: &Packet, now: Time, advanced: bool, track: &RateTrack) -> Option<Time> {
        let ts_ecr = (p.ts_ecr != NO_TS).then_some(p.ts_ecr);
        let (seq_rtt, ca_rtt) = track.rtt.samples(now, advanced, ts_ecr, self.rtt_sampling);
        if let Some(r) = seq_rtt {
            self.rtt.sample(r);
        }
        let ca_rtt = ca_rtt?;
        self.rtt.note_min(ca_rtt);
        Some(ca_rtt.max(1))
    }

    /// The interface queue refused a packet: local congestion (tcp::recovery).
    fn local_congestion(&mut self) {
        if self.recovery.enter_cwr(&self.board, &mut self.cc, &mut self.s) {
            self.counters.local_congestion += 1;
            self.end_tlp_episode();
            self.ecn.queue_cwr();
        }
    }

    /// An ACK of an ECN flow: the algorithm's `in_ack_event` (snd_una moved,
    /// this ACK's deliveries not yet counted: Linux counts the SACKed part
    /// before it, the cumulative part after), then the packets an ECE ACK
    /// delivers count as CE (Linux `tcp_count_delivered`).
    fn ecn_ack(&mut self, ece: bool, delivered: u32) {
        self.s.snd_una = self.board.snd_una;
        self.cc.in_ack_event(&mut self.s, ece);
        if ece {
            self.s.delivered_ce += delivered as u64;
        }
    }

    /// ECE in Open or Disorder: Linux `tcp_enter_cwr` (from `tcp_try_to_open`)
    /// reduces the window once; later ECEs find the state CWR and do nothing
    /// until snd_una passes the reduction's high mark (tcp::recovery).
    fn ecn_reduce(&mut self) {
        if self.recovery.enter_cwr(&self.board, &mut self.cc, &mut self.s) {
            self.counters.ecn_reductions += 1;
            self.ecn.queue_cwr();
        }
    }

    // ----- timers -----------------------------------------------------------------

    /// RFC 6298 (5.3): restart the timer when new data is acknowledged; (5.2)
    /// stop it when nothing is outstanding.
    fn restart_rto_after_ack(&mut self, acked: u64, now: Time) {
        if self.packets_out() == 0 {
            self.rto_deadline = None;
        } else if acked > 0 {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// The retransmission timer fired (the caller checked the deadline): the
    /// RTO, or with TLP whatever it is armed for (Linux `tcp_write_timer_handler`).
    pub fn on_rto(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.rto_deadline = None;
        if self.packets_out() == 0 || self.completed.is_some() {
            return;
        }
        self.sync_state(now);
        match std::mem::take(&mut self.timer) {
            XmitTimer::Probe => return self.send_loss_probe(now, out),
            XmitTimer::Reorder => return self.on_reorder_timer(now, out),
            XmitTimer::EarlyRetrans => return self.on_early_retrans_timer(now, out),
            XmitTimer::Rto => {}
        }
        self.counters.timeouts += 1;
        if let Some(agent) = self.ns2.as_mut() {
            agent.on_timeout(self.board.snd_nxt - 1, now);
            self.board.mark_all_lost();
            self.sync_ns2();
            self.rtt.backoff += 1;
            self.rto_deadline = Some(now + self.rtt.rto());
            return self.send_or_defer(now, out);
        }
        let repeated = self.rtt.backoff > 0;
        self.end_tlp_episode();
        if self.use_rack {
            self.rack.mark_lost_on_timeout(&mut self.board, now);
            self.recovery.on_rto_marked(repeated, &mut self.board, &mut self.cc, &mut self.s);
        } else {
            self.recovery.on_rto(repeated, &mut self.board, &mut self.cc, &mut self.s);
        }
        self.ecn.queue_cwr();
        // RFC 6298 (5.5): back off the timer.
        self.rtt.backoff += 1;
        self.rto_deadline = Some(now + self.rtt.rto());
        self.send_or_defer(now, out);
    }

    fn check_completion(&mut self, now: Time) {
        if self.total_segs == Some(self.snd_una()) {
            self.completed = Some(now);
            self.rto_deadline = None;
            // Nothing is in flight and nothing more will be sent.
            self.board.release();
            self.rack.release();
        }
    }

    // ----- transmission -----------------------------------------------------------

    /// The application stops offering new data: the transfer ends with what has
    /// been sent so far.
    pub fn stop(&mut self, now: Time) {
        let cap = self.snd_nxt();
        self.total_segs = Some(self.total_segs.map_or(cap, |t| t.min(cap)));
        self.check_completion(now);
    }

    /// Send while the window allows: lost segments first, then new data.
    pub fn send(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.nic_blocked = false;
        if self.ns2.is_some() {
            return self.send_ns2(now, out);
        }
        let (prior_out, prior_nxt, sent_before) = (self.packets_out(), self.snd_nxt(), self.counters.segments_sent);
        self.recovery.clamp_pipe(self.in_flight());
        let new_only = self.recovery.take_new_data_only();
        let tsq_term = self.small_queue_term();
        // Segments left in the skb being sent (tcp::tso); 0: the next new
        // segment starts an skb, which may be deferred.
        let (mut skb_left, mut deferred) = (0, false);
        // A paced skb leaves whole: the pacing check is per skb
        // (`tcp_pacing_check` in `tcp_write_xmit`), its segments' gaps add up.
        while self.window_open() && (skb_left > 0 || !self.pacing_wait(now)) {
            if self.nic_room == Some(0) {
                self.nic_blocked = true;
                self.local_congestion();
                break;
            }
            let lost = if new_only { None } else { self.board.next_lost() };
            let new_skb = lost.is_none() && skb_left == 0 && self.may_send_new();
            if new_skb {
                match self.next_skb(now) {
                    Ok(segs) => skb_left = segs,
                    Err(cwnd_limited) => {
                        deferred = cwnd_limited;
                        break;
                    }
                }
            }
            if (new_skb || lost.is_some()) && self.held_by_small_queues(tsq_term, lost.is_some(), skb_left) {
                self.nic_blocked = true;
                break;
            }
            if let Some(room) = self.nic_room.as_mut() {
                *room -= 1;
            }
            if let Some(seq) = lost {
                self.retransmit(seq, now, out);
            } else if self.may_send_new() {
                skb_left -= 1;
                self.send_new(now, out);
            } else {
                self.rate.mark_app_limited(self.s.delivered, self.in_flight());
                break;
            }
        }
        self.window.note(&self.board, self.s.cwnd, deferred);
        if self.tlp.is_some() {
            let retransmitted = self.counters.segments_sent - sent_before > self.snd_nxt() - prior_nxt;
            self.arm_after_send(prior_out, self.snd_nxt() > prior_nxt, retransmitted, now);
        } else if self.packets_out() > 0 && self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// TCP Small Queues' rate term for this send (tcp::tsq), computed once a
    /// send: the rate moves only on ACKs.
    fn small_queue_term(&self) -> Option<u64> {
        let q = self.tsq?;
        Some(q.rate_term(self.sk_pacing_rate(), self.s.pacing_rate > 0.0))
    }

    /// Linux's `sk_pacing_rate` in bytes per second: the flow's pacing rate,
    /// or for one that does not pace `tcp_update_pacing_rate`'s all the same,
    /// from the handshake's RTT before the first sample.
    fn sk_pacing_rate(&self) -> f64 {
        if self.s.pacing_rate > 0.0 {
            return self.s.pacing_rate;
        }
        pacing_bytes_per_ns_at(&self.s, self.packets_out() as u32, self.s.srtt_or_handshake()) * 1e9
    }

    /// The skb `tcp_write_xmit` would send next (tcp::tso): how many new
    /// segments go together, or, outside recovery, Err when Linux defers it
    /// to wait for more ACKs (true: for want of window). Without the rule,
    /// one segment an skb (no GSO).
    fn next_skb(&self, now: Time) -> Result<u64, bool> {
        let Some(rule) = self.tso else { return Ok(1) };
        let p = self.send_point(now);
        if !matches!(self.s.ca_state, CaState::Recovery | CaState::Loss) && rule.should_defer(&p) {
            return Err(p.cwnd_limited_when_deferred());
        }
        Ok(p.max_segs.min(p.skb_len))
    }

    /// What `tcp_tso_should_defer` reads at this send (tcp::tso::SendPoint).
    /// The write queue holds skbs of one GSO packet from the flow's start.
    fn send_point(&self, now: Time) -> SendPoint {
        let mss = self.cfg.mss;
        let nxt = self.snd_nxt();
        let goal = TsoDefer::size_goal(mss);
        let end = (nxt / goal + 1) * goal;
        let last = self.total_segs.unwrap_or(u64::MAX);
        let min_rtt = [self.rtt.min_rtt, self.s.handshake_rtt].into_iter().find(|&r| r > 0).unwrap_or(Time::MAX);
        let paced = self.s.pacing_rate > 0.0;
        SendPoint {
            now,
            cwnd: self.s.cwnd as u64,
            in_flight: self.in_flight(),
            rwnd_left: self.cfg.max_window.saturating_sub(self.packets_out()),
            rwnd: self.cfg.max_window,
            skb_len: end.min(last) - nxt,
            skb_is_tail: end >= last,
            last_departure: if paced { self.pace_next.max(self.s.last_send_time) } else { self.s.last_send_time },
            head_sent: self.board.head_sent(),
            srtt: self.s.srtt_or_handshake(),
            max_segs: TsoDefer::max_segs(self.sk_pacing_rate(), min_rtt, mss),
        }
    }

    /// TCP Small Queues hold the next skb (`skb_segs` new segments, or one
    /// retransmission): enough of the flow's are in the interface and
    /// something sent is unacknowledged.
    fn held_by_small_queues(&self, term: Option<u64>, retransmit: bool, skb_segs: u64) -> bool {
        let (Some(q), Some(term)) = (self.tsq, term) else { return false };
        let segs = if retransmit { 1 } else { skb_segs.min(u64::from(u32::MAX)) as u32 };
        self.packets_out() > 0 && q.holds(self.nic_queued, segs, self.cfg.mss, term, retransmit)
    }

    /// Whether TCP Small Queues hold this sender: the simulation must then keep
    /// `nic_queued` and call `on_nic_drained`.
    pub fn small_queues(&self) -> bool {
        self.tsq.is_some()
    }

    /// Hand segments down under the stack's TCP Small Queues (tcp::tsq). Only
    /// a sender whose host interface the simulation tracks takes them
    /// (build.rs): a bare sender, as in unit tests, has an interface that
    /// never holds anything.
    pub fn with_small_queues(mut self, rule: Option<Tsq>) -> Self {
        self.tsq = rule.map(|rule| SmallQueues { rule });
        self
    }

    /// The handshake's RTT, Linux's srtt before the first data RTT sample
    /// (`CcState::handshake_rtt`).
    pub fn with_handshake_rtt(mut self, rtt: Time) -> Self {
        self.s.handshake_rtt = rtt;
        self
    }

    /// The interface queue drained a packet after a send was refused.
    pub fn on_nic_drained(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.completed.is_none() {
            self.s.now = now;
            self.send(now, out);
        }
    }

    /// Send now, or with ns-2's delayed send arm its timer: `send_much` without
    /// `force` does nothing while the timer is pending, else clamps the pipe
    /// target and, if the window has room, draws the wait.
    fn send_or_defer(&mut self, now: Time, out: &mut Vec<Packet>) {
        match &self.jitter {
            None => return self.send(now, out),
            Some(j) if j.due.is_some() => return,
            Some(_) => {}
        }
        self.recovery.clamp_pipe(self.in_flight());
        if self.window_open() {
            if let Some(j) = self.jitter.as_mut() {
                j.due = Some(now + j.draw());
            }
        }
    }

    /// Whether the window lets another segment out (cwnd, or ns-2 TCP-Linux's
    /// pipe target while it is above cwnd).
    fn window_open(&self) -> bool {
        match &self.ns2 {
            Some(agent) => agent.next_send(&self.board).is_some(),
            None => self.in_flight() < self.recovery.send_window(self.s.cwnd),
        }
    }

    /// When the sender's timer (pacing, or ns-2's delayed send) must fire next.
    pub fn send_timer(&self) -> Option<Time> {
        self.pace_deadline.into_iter().chain(self.jitter.as_ref().and_then(|j| j.due)).min()
    }

    /// The pacing or delayed-send timer fired: send what the window allows.
    pub fn on_pace_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.pace_deadline = None;
        if let Some(j) = self.jitter.as_mut().filter(|j| j.due.is_some_and(|t| t <= now)) {
            j.due = None;
        }
        if self.completed.is_none() {
            self.s.now = now;
            self.send(now, out);
        }
    }

    /// With a pacing rate set, hold the next packet until its departure time
    /// (Linux internal pacing / fq: per-flow earliest departure times).
    fn pacing_wait(&mut self, now: Time) -> bool {
        if self.s.pacing_rate <= 0.0 || self.pace_next <= now {
            return false;
        }
        self.pace_deadline = Some(self.pace_next);
        true
    }

    /// The window has room and new data may go out (Linux `tcp_may_send_now`,
    /// Nagle aside).
    fn may_send_now(&self) -> bool {
        self.in_flight() < self.s.cwnd as u64 && self.may_send_new()
    }

    fn may_send_new(&self) -> bool {
        self.total_segs.is_none_or(|t| self.snd_nxt() < t) && self.packets_out() < self.cfg.max_window
    }

    /// Put segment `seq` on the wire; `fresh`: its first transmission.
    fn emit(&mut self, seq: u64, fresh: bool, now: Time, out: &mut Vec<Packet>) {
        let payload = self.seg_payload(seq);
        let wire = payload + self.cfg.header_bytes;
        if self.s.pacing_rate > 0.0 {
            let gap = (wire as f64 * 1e9 / self.s.pacing_rate) as Time;
            self.pace_next = self.pace_next.max(now) + gap;
        }
        self.nic_queued += 1;
        let mut p = Packet::data(self.cfg.flow, self.cfg.dst, seq, payload, wire, now);
        if self.ecn.on() {
            self.ecn.mark(&mut p, fresh);
            self.board.seg(seq).delivered_ce_at_tx = self.s.delivered_ce as u32;
        }
        out.push(p);
        if self.use_rack {
            self.rack.on_send(seq, now);
        }
        self.s.last_send_time = now;
        self.counters.segments_sent += 1;
        self.counters.bytes_sent += payload as u64;
        self.recovery.on_send(self.s.ca_state, self.in_flight());
    }

    /// CA_EVENT_TX_START where the stack raises it (crate::stack::TxStart):
    /// called before the segment counts as in flight, as Linux tests
    /// `tcp_packets_in_flight` before `retrans_out` or `packets_out` grows.
    fn raise_tx_start(&mut self) {
        if self.tx_start == TxStart::AnyData && self.in_flight() == 0 {
            self.cc.cwnd_event(&mut self.s, CaEvent::TxStart);
        }
    }

    fn retransmit(&mut self, seq: u64, now: Time, out: &mut Vec<Packet>) {
        self.raise_tx_start();
        self.board.note_retransmit(seq);
        self.recovery.undo.on_retransmit(now);
        self.counters.retransmits += 1;
        self.rate.stamp(self.board.seg(seq), now, false, self.s.delivered);
        self.board.stamp_flight(seq);
        self.emit(seq, false, now, out);
    }

    fn send_new(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.raise_tx_start();
        let network_empty = self.packets_out() == 0;
        let seq = self.board.push_new();
        self.rate.stamp(self.board.seg(seq), now, network_empty, self.s.delivered);
        self.board.stamp_flight(seq);
        self.emit(seq, true, now, out);
    }

    /// Check the scoreboard against its counters (used by tests).
    pub fn check_invariants(&self) -> Result<(), String> {
        self.board.check_invariants()
    }
}

// ----- RACK-TLP (tcp::rack): loss detection and the timer's other uses -----------

impl Sender {
    /// Mark what the ACK shows lost: RACK's rule or RFC 6675 DupThresh (with
    /// SACK; without, NewReno marks in tcp::recovery). Returns the newly lost
    /// and whether RACK armed its reordering timer. `dupack`: the ACK did not
    /// advance snd_una.
    fn detect_losses(&mut self, dupack: bool, now: Time) -> (u32, bool) {
        if !self.cfg.sack {
            return (0, false);
        }
        if let Some(rule) = self.fack {
            return (self.detect_losses_fack(rule, dupack, now), false);
        }
        if !self.use_rack {
            return (self.board.mark_lost_sack() + self.board.mark_lost_retrans(DUP_THRESH), false);
        }
        let reo_wnd = self.rack.reo_wnd(self.s.ca_state, self.board.sacked_out, self.rtt.min_rtt, self.rtt.srtt);
        let (lost, wait) = self.rack.mark_lost(&mut self.board, now, reo_wnd);
        if let Some(wait) = wait {
            // `tcp_rack_mark_lost`: ICSK_TIME_REO_TIMEOUT, at most the RTO away.
            self.arm_timer(XmitTimer::Reorder, now + wait.min(self.rtt.rto()));
        }
        (lost, wait.is_some())
    }

    /// FACK's marking (LossDetection::Fack), and in Recovery what Linux's
    /// `tcp_update_scoreboard` adds: lost retransmissions
    /// (`tcp_mark_lost_retrans`), the head on a duplicate ACK even when
    /// fewer than `gap` segments are SACKed above it (`lost = 1` when
    /// fackets_out <= reordering), and at 2.6.22 every segment from the head
    /// last sent more than an RTO ago (`tcp_head_timedout`).
    fn detect_losses_fack(&mut self, rule: FackRule, dupack: bool, now: Time) -> u32 {
        let in_recovery = self.s.ca_state == CaState::Recovery;
        let bound = if rule.below_recovery_point && in_recovery { self.recovery.recovery_point() } else { self.board.snd_nxt };
        let mut lost = self.board.mark_lost_fack(rule.gap, bound);
        if in_recovery {
            lost += self.board.mark_lost_retrans(1);
            lost += (rule.head_on_dupack && dupack && self.board.mark_head_lost()) as u32;
            if rule.head_timeout {
                lost += self.board.mark_timed_out(now, self.rtt.rto());
            }
        }
        lost
    }

    /// A D-SACK (Linux `tcp_dsack_seen`) and then RACK's window update
    /// (`tcp_rack_update_reo_wnd`, run on every ACK, after the scoreboard's;
    /// `prior_delivered`: the ACK's rate sample's). Without RACK a D-SACK
    /// changes nothing here (the undo counts it in `on_ack`; raising the
    /// DupThresh by `tcp_update_reordering` is not modelled).
    fn note_dsack(&mut self, dsack: Option<SegRange>, prior_delivered: u64) {
        if !self.use_rack {
            return;
        }
        if let Some(d) = dsack {
            let of_probe = self.tlp.is_some_and(|t| t.is_probe_dsack(dsack));
            self.rack.on_dsack(d.1 - d.0, self.counters.retransmits, of_probe);
        }
        self.rack.update_reo_wnd(prior_delivered, self.s.delivered);
    }

    /// Linux `tcp_process_tlp_ack`: a probe that repaired a loss reduces the
    /// window once (CWR entered and left at once); `dupack`: the ACK
    /// acknowledged and SACKed nothing new.
    fn process_tlp_ack(&mut self, ack: u64, dupack: bool, dsack: Option<SegRange>) {
        let Some(tlp) = self.tlp.as_mut() else { return };
        if tlp.on_ack(ack, dupack, dsack) == TlpOutcome::Repaired {
            self.recovery.reduce_once(&self.board, &mut self.cc, &mut self.s);
        }
    }

    /// A window reduction or a timeout ends the TLP episode (Linux
    /// `tcp_init_cwnd_reduction` clears tlp_high_seq).
    fn end_tlp_episode(&mut self) {
        if let Some(tlp) = self.tlp.as_mut() {
            tlp.high_seq = None;
        }
    }

    fn arm_timer(&mut self, kind: XmitTimer, at: Time) {
        self.timer = kind;
        self.rto_deadline = Some(at);
    }

    /// Linux `tcp_rearm_rto`: the RTO from now, or, replacing a probe or
    /// reordering timer, from the head's last transmission (`tcp_rto_delta_us`).
    fn rearm_rto(&mut self, now: Time) {
        let Some(head_tx) = self.board.head_tx_time() else {
            self.rto_deadline = None;
            return;
        };
        let from = if self.timer == XmitTimer::Rto { now } else { head_tx };
        self.arm_timer(XmitTimer::Rto, (from + self.rtt.rto()).max(now + 1));
    }

    /// Linux `tcp_schedule_loss_probe`: arm the probe timer if the rules allow,
    /// no later than the RTO (`rto_in` from now). Returns whether it did.
    fn schedule_loss_probe(&mut self, rto_in: Time, now: Time) -> bool {
        let Some(tlp) = self.tlp else { return false };
        let c = ProbeContext {
            srtt: self.rtt.srtt,
            packets_out: self.packets_out(),
            state: self.s.ca_state,
            can_send_more: self.may_send_now(),
            rto_in,
        };
        let Some(pto) = tlp.version.pto(&c) else { return false };
        self.arm_timer(XmitTimer::Probe, now + pto);
        true
    }

    /// The RTO's time left: 6.6 counts it from the head's last transmission
    /// (`tcp_rto_delta_us`), 3.10 takes the armed RTO's expiry. 0: none left.
    fn rto_left(&self, version: TlpVersion, now: Time) -> Time {
        match (version, self.timer, self.rto_deadline) {
            (TlpVersion::Linux66, _, _) => self.board.head_tx_time().map_or(0, |t| (t + self.rtt.rto()).saturating_sub(now)),
            (TlpVersion::Linux310, XmitTimer::Rto, Some(at)) => at.saturating_sub(now),
            _ => 0,
        }
    }

    /// After an ACK. 6.6 (`tcp_set_xmit_timer` on FLAG_SET_XMIT_TIMER): when
    /// it acknowledged data and RACK armed no timer, a probe capped at a full
    /// RTO, else the RTO. 3.10 (`tcp_ack`): the RTO restarted on acknowledged
    /// data, then a probe in its place if the rules allow.
    fn set_xmit_timer_after_ack(&mut self, acked: u64, reo_armed: bool, now: Time) {
        let Some(tlp) = self.tlp else { return };
        // Armed by this ACK's state machine, after 3.16's RTO restart on
        // acknowledged data (`tcp_clean_rtx_queue`); the probe is only
        // scheduled in place of an RTO.
        if self.timer == XmitTimer::EarlyRetrans {
            return;
        }
        if self.packets_out() == 0 {
            self.rto_deadline = None;
            return;
        }
        match tlp.version {
            TlpVersion::Linux66 => {
                if acked > 0 && !reo_armed && !self.schedule_loss_probe(self.rtt.rto(), now) {
                    self.rearm_rto(now);
                }
            }
            TlpVersion::Linux310 => {
                if acked > 0 {
                    self.rearm_rto(now);
                }
                let left = self.rto_left(tlp.version, now);
                if left > 0 {
                    self.schedule_loss_probe(left, now);
                }
            }
        }
    }

    /// After a send: a retransmitted head restarts the RTO unless RACK's
    /// timer is pending (`tcp_xmit_retransmit_queue`); new data restarts it if
    /// nothing was out or a probe was pending (`tcp_event_new_data_sent`),
    /// then (re)schedules the probe within the RTO's time left
    /// (`tcp_write_xmit`; 3.10 only in place of an RTO).
    fn arm_after_send(&mut self, prior_out: u64, sent_new: bool, retransmitted: bool, now: Time) {
        let Some(tlp) = self.tlp else { return };
        if self.rto_deadline.is_none() {
            self.timer = XmitTimer::Rto;
        }
        if retransmitted && self.timer != XmitTimer::Reorder && self.board.head_tx_time() == Some(now) {
            self.arm_timer(XmitTimer::Rto, now + self.rtt.rto());
        }
        if sent_new {
            if prior_out == 0 || self.timer == XmitTimer::Probe || self.rto_deadline.is_none() {
                self.rearm_rto(now);
            }
            let left = self.rto_left(tlp.version, now);
            if left > 0 && (tlp.version == TlpVersion::Linux66 || self.timer == XmitTimer::Rto) {
                self.schedule_loss_probe(left, now);
            }
        }
        if self.packets_out() > 0 && self.rto_deadline.is_none() {
            self.arm_timer(XmitTimer::Rto, now + self.rtt.rto());
        }
    }

    /// The probe timer fired (`tcp_send_loss_probe`): one probe per episode,
    /// new data if the receive window allows (whatever cwnd says), else the
    /// last segment sent again; then the RTO from now.
    fn send_loss_probe(&mut self, now: Time, out: &mut Vec<Packet>) {
        let Some(tlp) = self.tlp else { return };
        let last = self.snd_nxt() - 1;
        if tlp.high_seq.is_some() || self.nic_room == Some(0) || (!self.may_send_new() && self.board.is_sacked(last)) {
            self.timer = XmitTimer::Probe;
            return self.rearm_rto(now);
        }
        let retrans = !self.may_send_new();
        if retrans {
            self.raise_tx_start();
            self.board.note_probe(last);
            self.counters.retransmits += 1;
            self.rate.stamp(self.board.seg(last), now, false, self.s.delivered);
            self.board.stamp_flight(last);
            self.emit(last, false, now, out);
        } else {
            self.send_new(now, out);
        }
        let snd_nxt = self.snd_nxt();
        if let Some(tlp) = self.tlp.as_mut() {
            tlp.sent(snd_nxt, retrans);
        }
        self.arm_timer(XmitTimer::Rto, now + self.rtt.rto());
    }

    /// 3.10's rules: early retransmit comes with the probe.
    fn has_early_retransmit(&self) -> bool {
        self.tlp.is_some_and(|t| t.version.early_retransmit())
    }

    /// 3.10-4.10 `tcp_ack` first turns a pending probe or early-retransmit
    /// timer back into the RTO (`tcp_rearm_rto`); the ACK may schedule either
    /// again.
    fn cancel_early_timers(&mut self, now: Time) {
        if self.has_early_retransmit() && matches!(self.timer, XmitTimer::Probe | XmitTimer::EarlyRetrans) && self.rto_deadline.is_some() {
            self.rearm_rto(now);
        }
    }

    /// Early retransmit on this ACK (rack::early_retransmit_due): whether
    /// recovery starts now. It waits for its timer instead when there is an
    /// RTT sample and the RTO would not fire first
    /// (`tcp_pause_early_retransmit`).
    fn early_retransmit_now(&mut self, now: Time) -> bool {
        // A loss already marked makes recovery due without it (Trick#1 first).
        if !self.has_early_retransmit() || self.board.lost_out > 0 || !matches!(self.s.ca_state, CaState::Open | CaState::Disorder | CaState::Cwr) {
            return false;
        }
        let c = ErContext {
            retrans_out: self.board.retrans_out() as u64,
            sacked_out: self.board.sacked_out as u64,
            packets_out: self.packets_out(),
            can_send_more: self.may_send_now(),
        };
        if !early_retransmit_due(&c) {
            return false;
        }
        let delay = er_delay(self.rtt.srtt);
        if self.rtt.srtt == 0 || self.rto_deadline.is_none_or(|at| at <= now + delay) {
            return true;
        }
        self.arm_timer(XmitTimer::EarlyRetrans, now + delay);
        false
    }

    /// The early-retransmit timer fired (`tcp_resume_early_retransmit`):
    /// the RTO from the head's transmission, recovery, the head marked lost
    /// (`tcp_update_scoreboard(sk, 1)`) and resent; no window step until the
    /// next ACK.
    fn on_early_retrans_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.timer = XmitTimer::EarlyRetrans;
        self.rearm_rto(now);
        if self.recovery.enter_on_timer(&mut self.board, &mut self.cc, &mut self.s) {
            self.counters.recoveries += 1;
            self.end_tlp_episode();
            self.board.mark_head_lost();
            self.sync_state(now);
            self.send(now, out);
        }
    }

    /// RACK's reordering timer fired (`tcp_rack_reo_timeout`): mark what has
    /// waited long enough; if anything, recovery starts (with one PRR step for
    /// an algorithm without its own window control) and the lost go out.
    fn on_reorder_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        let reo_wnd = self.rack.reo_wnd(self.s.ca_state, self.board.sacked_out, self.rtt.min_rtt, self.rtt.srtt);
        let (lost, _) = self.rack.detect_loss(&mut self.board, now, reo_wnd);
        self.timer = XmitTimer::Reorder;
        self.rearm_rto(now);
        if lost > 0 {
            if self.recovery.enter_on_timer(&mut self.board, &mut self.cc, &mut self.s) {
                self.counters.recoveries += 1;
                self.end_tlp_episode();
                if !self.cc.owns_window() {
                    let in_flight = self.in_flight();
                    self.recovery.prr(&mut self.s, in_flight, false, 1, lost);
                }
            }
            self.sync_state(now);
            self.send(now, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::Reno;
    use crate::time::MS;

    fn sender(sack: bool) -> Sender {
        transfer(sack, None)
    }

    fn transfer(sack: bool, total_bytes: Option<u64>) -> Sender {
        let cfg = SenderConfig {
            flow: 0,
            dst: 1,
            mss: 1448,
            header_bytes: 52,
            total_bytes,
            max_window: u64::MAX,
            sack,
            initial_cwnd: 10,
        };
        Sender::new(cfg, Cc::Reno(Reno))
    }

    #[test]
    fn a_short_transfer_reserves_its_own_size_and_frees_it_when_complete() {
        let mut s = transfer(true, Some(5 * 1448));
        assert!((5..INITIAL_SCOREBOARD as usize).contains(&s.board.segs.capacity()));
        assert!(sender(true).board.segs.capacity() >= INITIAL_SCOREBOARD as usize);
        let mut out = vec![];
        s.start(0, &mut out);
        assert_eq!(out.len(), 5);
        s.on_ack(&ack(3, &[], 0), 10 * MS, &mut out);
        assert!(s.completed.is_none() && s.board.segs.capacity() >= 2);
        s.on_ack(&ack(5, &[], 0), 11 * MS, &mut out);
        assert_eq!(s.completed, Some(11 * MS));
        assert_eq!(s.board.segs.capacity() + s.board.sacked.capacity() + s.board.retrans_fifo.capacity(), 0);
        s.check_invariants().unwrap();
    }

    fn ack(cum: u64, sack: &[(u64, u64)], ts_ecr: Time) -> Packet {
        let mut p = Packet::ack(0, 0, cum, 52, 0, ts_ecr);
        p.sack[..sack.len()].copy_from_slice(sack);
        p.nsack = sack.len() as u8;
        p
    }

    /// ns-2's delayed send (`send_much` with `overhead_`): the start and each
    /// ACK arm one timer within [now, now + max); ACKs while it is pending send
    /// nothing and leave it be; when it fires, the whole window goes at once.
    #[test]
    fn send_jitter_defers_each_send_to_one_timer() {
        let max = 60_000;
        let mut s = sender(true).with_send_jitter(max, Rng::new(1, 0));
        let mut out = vec![];
        s.start(0, &mut out);
        let due = s.send_timer().expect("the start arms the timer");
        assert!(out.is_empty() && due < max, "{due}");
        s.on_pace_timer(due, &mut out);
        assert_eq!((out.len(), s.send_timer()), (10, None));
        out.clear();
        let t = 10 * MS;
        s.on_ack(&ack(2, &[], 0), t, &mut out);
        let due = s.send_timer().expect("an ACK arms the timer");
        assert!(out.is_empty() && (t..t + max).contains(&due), "{due}");
        s.on_ack(&ack(4, &[], 0), t + 1, &mut out);
        assert_eq!((out.len(), s.send_timer()), (0, Some(due)), "a pending timer absorbs the ACK");
        s.on_pace_timer(due, &mut out);
        // Four delivered, Reno in slow start: cwnd 14, so 14 - 6 in flight go out.
        assert_eq!((out.len(), s.in_flight()), (8, 14));
        s.check_invariants().unwrap();
    }

    #[test]
    fn without_send_jitter_an_ack_sends_at_once() {
        let mut s = sender(true).with_send_jitter(0, Rng::new(1, 0));
        let mut out = vec![];
        s.start(0, &mut out);
        out.clear();
        s.on_ack(&ack(2, &[], 0), 10 * MS, &mut out);
        assert_eq!((out.len(), s.send_timer()), (4, None));
    }

    #[test]
    fn initial_window_goes_out_at_once_without_pacing() {
        let mut s = sender(true);
        let mut out = vec![];
        s.start(0, &mut out);
        assert_eq!(out.len(), 10);
        assert_eq!(s.pace_deadline, None);
        assert!(s.rto_deadline.is_some());
    }

    #[test]
    fn pacing_spaces_packets_by_size_over_rate() {
        let mut s = sender(true);
        s.s.pacing_rate = 1500.0 * 1000.0; // one 1500-byte packet per ms
        let mut out = vec![];
        s.start(0, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(s.pace_deadline, Some(MS));
        s.on_pace_timer(MS, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(s.pace_deadline, Some(2 * MS));
    }

    #[test]
    fn rate_sample_is_delivered_over_the_ack_interval() {
        let mut s = sender(true);
        let mut out = vec![];
        s.start(0, &mut out);
        s.on_ack(&ack(10, &[], 0), 100 * MS, &mut out);
        let rs = s.last_rate_sample;
        assert_eq!((rs.delivered, rs.interval, rs.acked_sacked), (10, 100 * MS, 10));
        assert_eq!(rs.rate_pps(), Some(100.0));
    }

    #[test]
    fn three_sacked_segments_above_a_hole_start_recovery() {
        let mut s = sender(true);
        let mut out = vec![];
        s.start(0, &mut out);
        out.clear();
        s.on_ack(&ack(0, &[(1, 3)], 0), 50 * MS, &mut out);
        assert_eq!(s.state(), CaState::Disorder);
        // Two segments left the network: two new ones go out (as limited transmit).
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![10, 11]);
        out.clear();
        s.on_ack(&ack(0, &[(1, 4)], 0), 51 * MS, &mut out);
        assert_eq!(s.state(), CaState::Recovery);
        assert_eq!(s.s.ssthresh, 5);
        assert_eq!(out[0].seq, 0, "the hole is retransmitted first");
        assert_eq!(s.counters.retransmits, 1);
        s.check_invariants().unwrap();
        // The retransmission fills the hole: recovery ends with cwnd = ssthresh,
        // then (as Linux's tcp_ack orders it) congestion avoidance runs on the same
        // ACK, which delivers more than cwnd = 5 packets: +1.
        let snd_nxt = s.snd_nxt();
        s.on_ack(&ack(snd_nxt, &[], 0), 100 * MS, &mut out);
        assert_eq!(s.state(), CaState::Open);
        assert_eq!((s.s.ssthresh, s.s.cwnd), (5, 6));
        s.check_invariants().unwrap();
    }

    /// Reno at cwnd 20 loses segment 0; each ACK SACKs one more of 1..=11,
    /// then one ACK covers all sent before the loss (22). Returns the packets
    /// sent on each ACK from the third (recovery), cwnd during recovery, and
    /// cwnd and the packets sent after the exit.
    fn recovery_trajectory(stack: crate::stack::Stack, overhead_ns: u64) -> (Vec<usize>, u32, u32, usize) {
        let (cc, mut profile) = stack.build("reno", &serde_json::Map::new()).unwrap();
        profile.reduction = profile.reduction.with_send_jitter(overhead_ns);
        // The reduction alone: every stack enters on the third SACK here
        // (FACK's gap differs between Linux and ns-2: fack_marks_* below).
        profile.loss_detection = LossDetection::DupThresh;
        let cfg = SenderConfig { flow: 0, dst: 1, mss: 1448, header_bytes: 52, total_bytes: None, max_window: u64::MAX, sack: true, initial_cwnd: 20 };
        let mut s = Sender::new(cfg, cc).with_stack(&profile);
        let mut out = vec![];
        s.start(0, &mut out);
        s.s.ssthresh = 10; // past slow start: no growth before the loss
        let mut sent = vec![];
        for k in 1..=11 {
            out.clear();
            s.on_ack(&ack(0, &[(1, 1 + k)], 0), (50 + k) * MS, &mut out);
            if k >= 3 {
                sent.push(out.len());
            }
        }
        assert_eq!((s.state(), s.s.ssthresh), (CaState::Recovery, 10));
        let during = s.s.cwnd;
        out.clear();
        // It echoes the retransmission's timestamp (sent at 53 ms): no undo.
        s.on_ack(&ack(22, &[], 60 * MS), 100 * MS, &mut out);
        let undo_pending = profile.undo == crate::tcp::undo::UndoRule::Linux26;
        assert_eq!(s.state(), if undo_pending { CaState::Disorder } else { CaState::Open });
        s.check_invariants().unwrap();
        (sent, during, s.s.cwnd, out.len())
    }

    /// Hand-computed: Linux 2.6.22 rate-halves (`tcp_cwnd_down`): cwnd 19 at the
    /// entry (in flight 18 + 1), one packet off every second ACK, 15 by the
    /// eleventh; one packet sent per two ACKs; the exit leaves min(15,
    /// ssthresh 10) = 10 with no congestion avoidance on that ACK (2.6.22's
    /// tcp_ack ran it before the state machine, in Recovery); the flow goes to
    /// Disorder while the episode could still be undone, where
    /// `tcp_moderate_cwnd` caps cwnd at in flight 4 (22 to 26 sent) + 3 = 7,
    /// so 3 out: what ns-2 copied (below).
    /// ns-2 TCP-Linux without overhead sends the same pattern from its pipe
    /// target (20, then min(pipe, in flight + 1) per ACK and min(pipe, in
    /// flight - 1) per packet: 19, 18, 18, 17, ...) while cwnd is Reno's
    /// `min_cwnd` 5 at once; the exit gives min(ssthresh 10, packets out 4 + 3)
    /// = 7, and no cong_avoid on that ACK, so 3 out. With overhead the pipe
    /// stays 19: a packet on every ACK, and the exit finds 8 out, so cwnd 10
    /// and 2 out.
    #[test]
    fn ns2_linux_recovery_follows_tcp_linux_cc_not_rate_halving() {
        use crate::stack::Stack;
        let halving = vec![1, 0, 1, 0, 1, 0, 1, 0, 1];
        assert_eq!(recovery_trajectory(Stack::Linux2622, 0), (halving.clone(), 15, 7, 3));
        assert_eq!(recovery_trajectory(Stack::Ns2Linux, 0), (halving, 5, 7, 3));
        assert_eq!(recovery_trajectory(Stack::Ns2Linux, 60_000), (vec![1; 9], 5, 10, 2));
    }

    /// Segments 0-3 lost, the first ACK SACKs 4: Linux 2.6.22's FACK has
    /// fackets_out 5 > reordering 3, so segments 0 and 1 (below 5 - 3) are lost
    /// and recovery starts at once, retransmitting 0 (rate-halving: cwnd
    /// min(20, in flight 17 + 1)); RFC 6675 waits for three SACKed segments;
    /// ns-2's scoreboard, one segment further off, marks 0 only.
    #[test]
    fn fack_starts_recovery_on_one_sack_above_a_burst_of_losses() {
        use crate::stack::Stack;
        let first_ack = |stack: Stack, rule: Option<LossDetection>| {
            let (cc, mut profile) = stack.build("reno", &serde_json::Map::new()).unwrap();
            if let Some(rule) = rule {
                profile.loss_detection = rule;
            }
            let cfg = SenderConfig { flow: 0, dst: 1, mss: 1448, header_bytes: 52, total_bytes: None, max_window: u64::MAX, sack: true, initial_cwnd: 20 };
            let mut s = Sender::new(cfg, cc).with_stack(&profile);
            let mut out = vec![];
            s.start(0, &mut out);
            out.clear();
            s.on_ack(&ack(0, &[(4, 5)], 0), 50 * MS, &mut out);
            let retransmitted: Vec<u64> = out.iter().filter(|p| p.seq < 20).map(|p| p.seq).collect();
            (s.state(), s.board.lost_out, retransmitted)
        };
        assert_eq!(first_ack(Stack::Linux2622, None), (CaState::Recovery, 2, vec![0]));
        assert_eq!(first_ack(Stack::Linux316, None).0, CaState::Recovery);
        assert_eq!(first_ack(Stack::Ns2Linux, None).1, 1);
        assert_eq!(first_ack(Stack::Linux2622, Some(LossDetection::DupThresh)), (CaState::Disorder, 0, vec![]));
    }

    #[test]
    fn three_dupacks_without_sack_retransmit_the_head() {
        let mut s = sender(false);
        let mut out = vec![];
        s.start(0, &mut out);
        out.clear();
        for k in 0..3 {
            s.on_ack(&ack(0, &[], 0), (50 + k) * MS, &mut out);
        }
        assert_eq!(s.state(), CaState::Recovery);
        assert_eq!(out.iter().filter(|p| p.seq == 0).count(), 1);
        s.check_invariants().unwrap();
    }

    #[test]
    fn timeout_resets_cwnd_and_resends_the_head() {
        let mut s = sender(true);
        let mut out = vec![];
        s.start(0, &mut out);
        out.clear();
        s.on_rto(1000 * MS, &mut out);
        assert_eq!((s.s.cwnd, s.s.ssthresh, s.state()), (1, 5, CaState::Loss));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, 0);
        assert_eq!(s.rtt.backoff, 1);
        s.check_invariants().unwrap();
    }

    /// Reno at `stack` (its loss detection, or `detection`), 20 segments sent
    /// at 0 with ssthresh 10 (past slow start); `max_window` in segments.
    fn reno_sent_20(stack: crate::stack::Stack, detection: Option<LossDetection>, max_window: u64) -> Sender {
        let (cc, mut profile) = stack.build("reno", &serde_json::Map::new()).unwrap();
        profile.loss_detection = detection.unwrap_or(profile.loss_detection);
        let cfg = SenderConfig { flow: 0, dst: 1, mss: 1448, header_bytes: 52, total_bytes: None, max_window, sack: true, initial_cwnd: 20 };
        let mut s = Sender::new(cfg, cc).with_stack(&profile);
        s.start(0, &mut vec![]);
        // ns-2's agents send one segment first (the SYN's stand-in): past it.
        if let Some(Ns2Agent::Sack1(a)) = s.ns2.as_deref_mut() {
            a.w.cwnd = a.w.initial;
            s.send(0, &mut vec![]);
        }
        s.s.ssthresh = 10;
        s
    }

    /// Reno at cwnd 20 (ssthresh 10, segments 0-19 sent at 0) times out at
    /// 1 s and resends segment 0; then an ACK up to `ack_to` arrives echoing
    /// `echo`. Returns (state, cwnd, ssthresh, undos) after it, the segments
    /// it sent, and the sender.
    fn after_timeout(stack: crate::stack::Stack, ack_to: u64, echo: Time) -> ((CaState, u32, u32, u64), Vec<u64>, Sender) {
        // No tail loss probe: the timer is the RTO at every stack.
        let mut s = reno_sent_20(stack, Some(LossDetection::Fack), u64::MAX);
        let mut out = vec![];
        s.on_rto(1000 * MS, &mut out);
        assert_eq!((s.state(), s.s.ssthresh), (CaState::Loss, 10));
        out.clear();
        s.on_ack(&ack(ack_to, &[], echo), 1010 * MS, &mut out);
        s.check_invariants().unwrap();
        ((s.state(), s.s.cwnd, s.s.ssthresh, s.recovery.undo.count), out.iter().map(|p| p.seq).collect(), s)
    }

    /// A spurious timeout: the ACK of 0-9 echoes the originals' timestamp
    /// (0), older than the retransmission at 1 s (Eifel, `tcp_packet_delayed`),
    /// so the Linux stacks undo (`tcp_try_undo_loss`): ssthresh back to
    /// `tcp_current_ssthresh` = max(10, 3/4 x 20) = 15, Open. 2.6.22: slow
    /// start first (cwnd 1 -> 2 in Loss: `tcp_cong_avoid` ran before the
    /// state machine), then max(2, 2 x 10) = 20, moderated to in flight 10 +
    /// 3 = 13; 3.16: 20, unmoderated; today: Reno's max(cwnd, prior_cwnd 20).
    /// ns-2 has no undo: still Loss. With the retransmission's echo, 3.16 and
    /// today undo all the same by F-RTO (segments 1-9 were never resent, RFC
    /// 5682 step 3b); 2.6.22 has no F-RTO.
    #[test]
    fn a_spurious_timeout_is_undone_by_the_linux_stacks() {
        use crate::stack::Stack;
        assert_eq!(after_timeout(Stack::Linux2622, 10, 0).0, (CaState::Open, 13, 15, 1));
        assert_eq!(after_timeout(Stack::Linux24, 10, 0).0, (CaState::Open, 13, 15, 1));
        assert_eq!(after_timeout(Stack::Linux316, 10, 0).0, (CaState::Open, 20, 15, 1));
        assert_eq!(after_timeout(Stack::Linux66, 10, 0).0, (CaState::Open, 20, 15, 1));
        assert_eq!(after_timeout(Stack::Ns2Linux, 10, 0).0 .3, 0);
        assert_eq!(after_timeout(Stack::Linux2622, 10, 1000 * MS).0, (CaState::Loss, 2, 10, 0));
        assert_eq!(after_timeout(Stack::Linux316, 10, 1000 * MS).0, (CaState::Open, 20, 15, 1));
    }

    /// A real timeout: the ACK covers only the resent segment 0 and echoes
    /// its timestamp. Nothing is undone. 2.6.22 (slow start to 2) resends 1
    /// and 2; 3.16 and today send new data instead, 20 and 21 (F-RTO step
    /// 2b), and when the next ACK SACKs 20 with 1 still missing, the loss was
    /// real (step 3a): 1 and 2 go out again by the rules of Loss.
    #[test]
    fn frto_sends_new_data_after_a_timeout_then_resends_when_the_loss_is_real() {
        use crate::stack::Stack;
        let (state, sent, _) = after_timeout(Stack::Linux2622, 1, 1000 * MS);
        assert_eq!((state, sent), ((CaState::Loss, 2, 10, 0), vec![1, 2]));
        for stack in [Stack::Linux316, Stack::Linux66] {
            let (state, sent, mut s) = after_timeout(stack, 1, 1000 * MS);
            assert_eq!((state, sent), ((CaState::Loss, 2, 10, 0), vec![20, 21]), "{}", stack.name());
            let mut out = vec![];
            s.on_ack(&ack(1, &[(20, 21)], 1010 * MS), 1020 * MS, &mut out);
            assert_eq!(s.state(), CaState::Loss);
            assert_eq!(out.first().map(|p| p.seq), Some(1), "{}", stack.name());
            s.check_invariants().unwrap();
        }
    }

    /// A Reno sender at `stack` (its FACK rule) with cwnd 20 and segments 0-19
    /// sent at 0, segment 0 lost: three SACKs start recovery.
    fn fack_recovery(stack: crate::stack::Stack) -> Sender {
        let mut s = reno_sent_20(stack, None, 20);
        let mut out = vec![];
        for k in 1..=4 {
            s.on_ack(&ack(0, &[(1, 1 + k)], 0), (50 + k) * MS, &mut out);
        }
        assert_eq!(s.state(), CaState::Recovery);
        s
    }

    /// Segments 0 and 16 lost. The partial ACK up to 16 SACKs 17: 16 lies
    /// within 3 of the highest SACK, so FACK does not mark it. A duplicate
    /// ACK then marks the head anyway at Linux (`tcp_update_scoreboard`'s
    /// `lost = 1`) and it is resent; ns-2's TCP-Linux has no such rule.
    #[test]
    fn a_dupack_in_recovery_marks_the_head_lost_at_linux() {
        use crate::stack::Stack;
        for (stack, resent) in [(Stack::Linux2622, true), (Stack::Linux316, true), (Stack::Ns2Linux, false)] {
            let mut s = fack_recovery(stack);
            let mut out = vec![];
            s.on_ack(&ack(16, &[(17, 18)], 60 * MS), 110 * MS, &mut out);
            out.clear();
            s.on_ack(&ack(16, &[(17, 19)], 60 * MS), 111 * MS, &mut out);
            assert_eq!(out.iter().any(|p| p.seq == 16), resent, "{}", stack.name());
            s.check_invariants().unwrap();
        }
    }

    /// 2.6.22's timed-out-head heuristic: in Recovery, a duplicate ACK 400 ms
    /// after segments 5-19 were sent (RTO about 250 ms after one 51 ms RTT
    /// sample, given here: 2.6.22 takes none from the SACKs) marks them lost;
    /// 3.16 waits for the timer.
    #[test]
    fn at_2622_segments_older_than_the_rto_are_lost_in_recovery() {
        use crate::stack::Stack;
        for (stack, marked) in [(Stack::Linux2622, true), (Stack::Linux316, false)] {
            let mut s = fack_recovery(stack);
            if stack == Stack::Linux2622 {
                s.rtt.sample(51 * MS);
            }
            assert!(s.rtt.rto() < 400 * MS);
            let lost_before = s.board.lost_out;
            let mut out = vec![];
            s.on_ack(&ack(0, &[(1, 5)], 0), 400 * MS, &mut out);
            assert_eq!(s.board.lost_out > lost_before, marked, "{}", stack.name());
            s.check_invariants().unwrap();
        }
    }

    /// Linux 2.6.22 keeps the sender in Disorder for a round after a recovery
    /// that may still be undone; a D-SACK of its one retransmission then
    /// undoes it there (`tcp_try_undo_dsack`). Segment 0 "lost" (three SACKs),
    /// retransmitted; the exit ACK echoes the retransmission (no Eifel undo),
    /// then a D-SACK for 0 arrives.
    #[test]
    fn a_dsack_of_the_only_retransmission_undoes_the_recovery() {
        use crate::stack::Stack;
        for (stack, cwnd_after) in [(Stack::Linux2622, None), (Stack::Linux316, Some(20))] {
            let mut s = reno_sent_20(stack, Some(LossDetection::DupThresh), u64::MAX);
            let mut out = vec![];
            for k in 1..=3 {
                s.on_ack(&ack(0, &[(1, 1 + k)], 0), (50 + k) * MS, &mut out);
            }
            assert_eq!(s.state(), CaState::Recovery);
            let high = s.snd_nxt();
            s.on_ack(&ack(high, &[], 60 * MS), 100 * MS, &mut out);
            assert_eq!(s.recovery.undo.count, 0);
            let expect_state = if stack == Stack::Linux2622 { CaState::Disorder } else { CaState::Open };
            assert_eq!(s.state(), expect_state, "{}", stack.name());
            let reduced = s.s.ssthresh;
            s.on_ack(&ack(high, &[(0, 1)], 60 * MS), 110 * MS, &mut out);
            assert_eq!((s.recovery.undo.count, s.state()), (1, CaState::Open), "{}", stack.name());
            assert_eq!((reduced, s.s.ssthresh), (10, 15));
            if let Some(c) = cwnd_after {
                assert_eq!(s.s.cwnd, c);
            }
            s.check_invariants().unwrap();
        }
    }

    /// RTT samples as Linux `tcp_ack_update_rtt`: SACKs report the newest
    /// SACKed segment's RTT to congestion control and the oldest's to the
    /// estimator, whatever the echoed timestamp says; a cumulative ACK of a
    /// retransmission gives none from send times (Karn) and falls back to the
    /// echoed timestamp.
    #[test]
    fn rtt_samples_come_from_send_times_of_delivered_segments() {
        let mut s = sender(true);
        let mut out = vec![];
        s.start(0, &mut out); // segments 0..10 sent at t = 0
        out.clear();
        // SACK of 1..3 at 50 ms; its echoed timestamp (1 ms) must be ignored.
        s.on_ack(&ack(0, &[(1, 3)], MS), 50 * MS, &mut out);
        assert_eq!(s.rtt.srtt, 50 * MS, "the SACKed segments were sent at 0");
        assert_eq!(s.last_rate_sample.rtt, Some(50 * MS));
        // Segments 10 and 11 went out at 50 ms; SACKing 10..12 and 3..4 at 80 ms:
        // the estimator takes the oldest newly SACKed (3, sent at 0: 80 ms), CC
        // the newest (11, sent at 50 ms: 30 ms).
        s.on_ack(&ack(0, &[(1, 4), (10, 12)], 0), 80 * MS, &mut out);
        assert_eq!(s.last_rate_sample.rtt, Some(30 * MS));
        assert_eq!(s.rtt.min_rtt, 30 * MS);
        assert_eq!(s.rtt.srtt, (7 * 50 * MS + 80 * MS) / 8);
        // Recovery retransmits segment 0; its cumulative ACK at 200 ms carries
        // no send-time sample (Karn) and uses the echoed timestamp (150 ms).
        s.on_ack(&ack(0, &[(1, 5), (10, 12)], 0), 90 * MS, &mut out);
        assert!(s.counters.retransmits >= 1);
        let srtt = s.rtt.srtt;
        s.on_ack(&ack(5, &[(10, 12)], 50 * MS), 200 * MS, &mut out);
        assert_eq!(s.last_rate_sample.rtt, Some(150 * MS));
        assert_eq!(s.rtt.srtt, (7 * srtt + 150 * MS) / 8);
        s.check_invariants().unwrap();
    }

    /// Vegas (`tcp_vegas_cwnd_event` re-initialises on TX_START, baseRTT
    /// included) at `stack`, 10 segments out at 0 ms: the ACK of segment 0 at
    /// 100 ms gives baseRTT 100 ms + 1 us; all sent after segment 0 is lost.
    /// Returns baseRTT after the retransmission that follows (the RTO's, or
    /// with `sack_hole` the fast retransmit of segment 1 when 2-4 are SACKed).
    fn vegas_base_after_loss(stack: crate::stack::Stack, sack_hole: bool) -> Time {
        let (cc, profile) = stack.build("vegas", &serde_json::Map::new()).unwrap();
        let cfg = SenderConfig { flow: 0, dst: 1, mss: 1448, header_bytes: 52, total_bytes: None, max_window: u64::MAX, sack: true, initial_cwnd: 10 };
        let mut s = Sender::new(cfg, cc).with_stack(&profile);
        let mut out = vec![];
        s.start(0, &mut out);
        s.on_ack(&ack(1, &[], 0), 100 * MS, &mut out);
        let Cc::Vegas(v) = &s.cc else { unreachable!() };
        assert_eq!(v.base_rtt(), 100 * MS + 1000);
        out.clear();
        if sack_hole {
            for k in 0..3 {
                s.on_ack(&ack(1, &[(2, 3 + k)], 0), (101 + k) * MS, &mut out);
            }
            assert_eq!(s.state(), CaState::Recovery);
        } else {
            // With TLP (linux-6.6) the timer first sends a probe; the RTO follows.
            for k in 1..=3 {
                if s.counters.timeouts == 0 {
                    s.on_rto(k * 2000 * MS, &mut out);
                }
            }
            assert_eq!((s.counters.timeouts, s.state()), (1, CaState::Loss));
            assert_eq!(s.in_flight(), 1, "only the retransmission is in flight");
        }
        assert_eq!(out.iter().filter(|p| p.seq == 1).count(), 1, "segment 1 resent");
        let Cc::Vegas(v) = &s.cc else { unreachable!() };
        v.base_rtt()
    }

    /// The RTO marks everything lost, so its retransmission leaves with
    /// nothing in flight: CA_EVENT_TX_START at every Linux stack (2.6.22's
    /// `tcp_transmit_skb`, today's `tcp_event_data_sent`, both before
    /// `retrans_out` grows), and Vegas forgets its baseRTT; ns-2's TCP-Linux
    /// never raises it (ns-2's own agents run no Linux module: ns2's Vegas
    /// is `Agent/TCP/Vegas`, tested in tcp::ns2_vegas). A fast retransmission
    /// has segments in flight: no event.
    #[test]
    fn a_timeout_retransmission_raises_tx_start_where_the_stack_does() {
        use crate::stack::Stack;
        let learned = 100 * MS + 1000;
        for stack in [Stack::Linux24, Stack::Linux2613, Stack::Linux2622, Stack::Linux316, Stack::Linux66] {
            assert_eq!(vegas_base_after_loss(stack, false), Time::MAX, "{stack:?}");
            assert_eq!(vegas_base_after_loss(stack, true), learned, "{stack:?}");
        }
        assert_eq!(vegas_base_after_loss(Stack::Ns2Linux, false), learned);
    }

    /// A receive window of 6 segments under a slow-start cwnd of 10: each of
    /// six ACKs of one segment finds 6 in flight. 2.4-2.6.22 and ns-2's
    /// TCP-Linux grow only when the packets in flight before the ACK reach
    /// cwnd: never (10). 3.16 and today grow while cwnd is below twice the
    /// most packets out (12). ns-2's own agents grow on every new ACK but the
    /// first, whose ACK of segment 0 sets `windowInit_` (15).
    #[test]
    fn the_window_grows_as_the_stacks_test_allows() {
        use crate::stack::{Stack, STACKS};
        for stack in STACKS {
            let mut s = reno_sent_20(stack, None, 6);
            s.s.ssthresh = u32::MAX;
            s.s.cwnd = 10;
            // ns-2's Reno is its Sack1 agent, which keeps its own window; the
            // ACK of segment 0 (the SYN's stand-in) sets it to `windowInit_`
            // instead of growing it.
            if let Some(Ns2Agent::Sack1(a)) = s.ns2.as_deref_mut() {
                (a.w.cwnd, a.w.initial, a.w.ssthresh) = (10.0, 10.0, i64::MAX);
            }
            let mut out = vec![];
            for k in 1..=6 {
                s.on_ack(&ack(k, &[], 0), k * MS, &mut out);
            }
            let want = match stack {
                Stack::Linux24 | Stack::Linux2613 | Stack::Linux2622 | Stack::Ns2Linux => 10,
                Stack::Linux316 | Stack::Linux66 => 12,
                Stack::Ns2 => 15,
            };
            assert_eq!(s.s.cwnd, want, "{}", stack.name());
            s.check_invariants().unwrap();
        }
    }

    /// 2.4-2.6.22's `tcp_time_to_recover` Trick#3: segments 0-19 sent at 0;
    /// the ACK of 0-4 at 50 ms (one 50 ms sample: RTO 250 ms, restarted, so
    /// due at 300 ms) sends 20-24. At 280 ms a duplicate ACK SACKs 6-7: two
    /// SACKs, FACK alone waits, but head 5 was sent 280 ms ago. 2.6.22 enters
    /// Recovery and resends 5 (with 8-19, all sent at 0, marked lost); 3.16
    /// and ns-2's TCP-Linux stay out of it.
    #[test]
    fn at_2622_a_timed_out_head_starts_recovery() {
        use crate::stack::Stack;
        for (stack, enters) in [(Stack::Linux2622, true), (Stack::Linux24, true), (Stack::Linux316, false), (Stack::Ns2Linux, false)] {
            let mut s = reno_sent_20(stack, None, 25);
            let mut out = vec![];
            s.on_ack(&ack(5, &[], 0), 50 * MS, &mut out);
            assert_eq!(s.rtt.rto(), 250 * MS, "{}", stack.name());
            out.clear();
            s.on_ack(&ack(5, &[(6, 8)], 0), 280 * MS, &mut out);
            assert_eq!(s.state() == CaState::Recovery, enters, "{}", stack.name());
            assert_eq!(out.first().map(|p| p.seq) == Some(5), enters, "{}", stack.name());
            assert_eq!(s.board.lost_out, if enters { 13 } else { 0 }, "{}", stack.name());
            s.check_invariants().unwrap();
        }
    }

    /// ns-2's Sack1 agent in the sender (Reno at the ns2 stack): one segment
    /// at 0, the SYN's stand-in; its ACK sets the window to `windowInit_` 10
    /// and lets 1-10 out. Segment 1 is lost; the first two duplicates
    /// (SACKing 2, then 2-3) each send one segment past the window (11, 12),
    /// the third resends 1 and halves to 5 (in slow start: ssthresh 5) with
    /// the pipe at maxseq 12 - 0 - 3 = 9. A timeout halves ssthresh (2) and
    /// goes back to the head with cwnd 1.
    #[test]
    fn ns2_sack1_runs_the_agent() {
        let mut s = ns2_sender("reno");
        let mut out = vec![];
        s.start(0, &mut out);
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), [0]);
        out.clear();
        s.on_ack(&ack(1, &[], 0), 50 * MS, &mut out);
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), (1..=10).collect::<Vec<_>>());
        out.clear();
        for k in 0..2 {
            s.on_ack(&ack(1, &[(2, 3 + k)], 0), (101 + k) * MS, &mut out);
        }
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), [11, 12], "limited transmit");
        out.clear();
        s.on_ack(&ack(1, &[(2, 5)], 0), 103 * MS, &mut out);
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), [1], "the third duplicate resends the head only");
        assert_eq!((s.s.cwnd, s.s.ssthresh, s.counters.retransmits), (5, 5, 1));
        s.check_invariants().unwrap();
        out.clear();
        s.on_rto(5000 * MS, &mut out);
        assert_eq!((s.s.cwnd, s.s.ssthresh), (1, 2));
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), [1]);
        s.check_invariants().unwrap();
    }

    /// `cc` at the ns2 stack (ns-2's own agent where it has one): initial
    /// window 10, receive window 100, SACK.
    fn ns2_sender(cc: &str) -> Sender {
        let (cc_impl, profile) = crate::stack::Stack::Ns2.build(cc, &serde_json::Map::new()).unwrap();
        let cfg = SenderConfig { flow: 0, dst: 1, mss: 1448, header_bytes: 52, total_bytes: None, max_window: 100, sack: true, initial_cwnd: 10 };
        Sender::new(cfg, cc_impl).with_stack(&profile)
    }

    /// ns-2's delayed send (`overhead_`) holds `send_much`, not `send_one`:
    /// with a send jitter, each of the first two duplicates still sends its
    /// segment past the window at once (here 11, then 12), while the ACK of
    /// segment 0 only arms the timer.
    #[test]
    fn ns2_limited_transmit_is_not_held_by_the_send_jitter() {
        let mut s = ns2_sender("reno").with_send_jitter(24_000, Rng::new(1, 0));
        let mut out = vec![];
        s.start(0, &mut out);
        let due = s.send_timer().unwrap_or(0);
        s.on_pace_timer(due, &mut out);
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), [0]);
        out.clear();
        s.on_ack(&ack(1, &[], 0), 50 * MS, &mut out);
        assert!(out.is_empty(), "send_much waits for the delayed send");
        s.on_pace_timer(s.send_timer().unwrap(), &mut out);
        assert_eq!(out.len(), 10);
        out.clear();
        for (k, seq) in [(0, 11), (1, 12)] {
            s.on_ack(&ack(1, &[(2, 3 + k)], 0), (101 + k) * MS, &mut out);
            assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), [seq], "at once");
            out.clear();
        }
    }

    /// ns-2's Vegas agent in the sender: 10 segments at 0; the ACK of 0 at
    /// 100 ms ends the first round (its every-other-round flag turns growth
    /// off) and lets one new segment out. Segment 1 is lost; the SACK blocks
    /// of the duplicate ACKs are ignored, and the third resends it. It left
    /// at time 0, not after the window last changed (`t_cwnd_changed_` 0 is not
    /// below it), so ns-2 does not cut: cwnd stays 10. A timeout goes back to
    /// the head with cwnd 2 and ssthresh 5, resending 1 and 2.
    #[test]
    fn ns2_vegas_runs_the_agent() {
        let mut s = ns2_sender("vegas");
        let mut out = vec![];
        s.start(0, &mut out);
        assert_eq!(out.len(), 1, "the first segment stands in for the SYN");
        // Past it (tcp::ns2_vegas tests its own start): the window of 10.
        if let Some(Ns2Agent::Vegas(v)) = s.ns2.as_deref_mut() {
            v.w.cwnd = v.w.initial;
        }
        s.send(0, &mut out);
        assert_eq!(out.len(), 10);
        out.clear();
        // Segment 0 arrives; 1 is lost; 2, 3, 4 bring duplicate ACKs.
        s.on_ack(&ack(1, &[], 0), 100 * MS, &mut out);
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), [10]);
        out.clear();
        for k in 0..2 {
            s.on_ack(&ack(1, &[(2, 3 + k)], 0), (101 + k) * MS, &mut out);
        }
        assert!(out.is_empty(), "ns-2 sends nothing on the first two duplicates");
        s.on_ack(&ack(1, &[(2, 5)], 0), 103 * MS, &mut out);
        assert_eq!(out.first().map(|p| p.seq), Some(1), "the third duplicate resends the head");
        assert_eq!((s.s.cwnd, s.counters.retransmits), (10, 1));
        s.check_invariants().unwrap();
        out.clear();
        s.on_rto(5000 * MS, &mut out);
        assert_eq!((s.s.cwnd, s.s.ssthresh), (2, 5));
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), [1, 2]);
        s.check_invariants().unwrap();
    }
}
