//! The TCP sender: sequence space in segments, a SACK scoreboard, loss detection
//! (RFC 6675 IsLost, NewReno dupACK counting without SACK, lost-retransmission
//! detection), recovery with Proportional Rate Reduction (RFC 6937, as Linux
//! `tcp_cwnd_reduction`), the RTO with backoff, and the window rule. Congestion
//! control is a separate `Cc` called at Linux's hook points.
//!
//! Counters follow Linux (`net/ipv4/tcp_input.c`): packets in flight =
//! packets_out - sacked_out - lost_out + retrans_out.

use crate::cc::{AckSample, CaEvent, CaState, Cc, CcState, CongestionOps, RateSample, INFINITE_SSTHRESH};
use crate::net::{Packet, SegRange};
use crate::tcp::receiver::NO_TS;
use crate::tcp::rtt::RttEstimator;
use crate::time::Time;
use std::collections::VecDeque;

/// RFC 5681/6675 DupThresh (Linux `tcp_reordering` default).
pub const DUP_THRESH: u64 = 3;

const SACKED: u8 = 1;
const LOST: u8 = 2;
/// A retransmission of this segment is in flight. Only lost segments are
/// retransmitted, so RETRANS implies LOST and lost_out >= retrans_out.
const RETRANS: u8 = 4;

/// The flight this segment was (last) sent in was application-limited.
const APP_LIMITED: u8 = 8;
/// The segment was retransmitted at least once (Linux TCPCB_EVER_RETRANS): Karn's
/// rule keeps its ACK out of the RTT samples.
const EVER_RETRANS: u8 = 16;

/// Scoreboard slots reserved when a flow is created: a bulk flow's window reaches
/// this within a few RTTs anyway, and a short transfer reserves only its own
/// size, so 10^5 web-like flows do not each hold a bulk flow's scoreboard.
const INITIAL_SCOREBOARD: u64 = 1024;

#[derive(Clone, Copy, Debug, Default)]
struct Seg {
    flags: u8,
    /// snd_nxt when the segment was last retransmitted.
    retrans_hi: u64,
    /// Delivery-rate bookkeeping at the last transmission (Linux `tcp_skb_cb.tx`).
    tx_time: Time,
    first_tx: Time,
    delivered_at_tx: u64,
    delivered_time_at_tx: Time,
}

/// The newest delivered segment's send-time state, from which an ACK's rate
/// sample is built (Linux `tcp_rate_skb_delivered`).
#[derive(Clone, Copy, Default)]
struct RateTrack {
    have: bool,
    tx_time: Time,
    prior_delivered: u64,
    prior_time: Time,
    send_interval: Time,
    app_limited: bool,
    rtt: RttTrack,
}

/// Send times of the never-retransmitted segments an ACK newly delivers, split
/// by how (Linux `tcp_clean_rtx_queue` first_ackt/last_ackt and `tcp_sacktag_one`
/// first_sackt/last_sackt), from which the ACK's RTT samples come.
#[derive(Clone, Copy, Default)]
struct RttTrack {
    ackt: Option<(Time, Time)>,
    sackt: Option<(Time, Time)>,
    /// A retransmitted segment was cumulatively acknowledged (FLAG_RETRANS_DATA_ACKED).
    retrans_acked: bool,
}

impl RttTrack {
    fn note(&mut self, seg: &Seg, sacked: bool) {
        if seg.flags & EVER_RETRANS != 0 {
            self.retrans_acked |= !sacked;
            return;
        }
        let range = if sacked { &mut self.sackt } else { &mut self.ackt };
        let (lo, hi) = range.unwrap_or((seg.tx_time, seg.tx_time));
        *range = Some((lo.min(seg.tx_time), hi.max(seg.tx_time)));
    }
}

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

pub struct Sender {
    cfg: SenderConfig,
    total_segs: Option<u64>,
    pub cc: Cc,
    pub s: CcState,
    pub state: CaState,
    snd_una: u64,
    snd_nxt: u64,
    segs: VecDeque<Seg>,
    sacked_out: u32,
    lost_out: u32,
    retrans_out: u32,
    /// Our SACK knowledge above snd_una: sorted, disjoint, non-adjacent ranges.
    sacked: VecDeque<SegRange>,
    /// Segments below this have been checked by the IsLost rule.
    lost_scan: u64,
    /// No lost, not-yet-retransmitted segment lies below this.
    retx_hint: u64,
    /// Retransmissions in flight, in the order sent (so retrans_hi is sorted).
    retrans_fifo: VecDeque<u64>,
    /// End of the current recovery episode (RFC 6582 "recover", Linux high_seq).
    high_seq: u64,
    prior_cwnd: u32,
    prr_delivered: u32,
    prr_out: u32,
    pub rtt: RttEstimator,
    /// When the retransmission timer fires, if armed.
    pub rto_deadline: Option<Time>,
    window_seq: u64,
    max_packets_out: u64,
    limited_flag: bool,
    /// Start of the current flight and time of the last delivery (Linux
    /// `first_tx_mstamp`, `delivered_mstamp`).
    first_tx_time: Time,
    delivered_time: Time,
    /// Non-zero while the flow is application-limited: the delivered count at
    /// which that ends (Linux `tp->app_limited`).
    app_limited_until: u64,
    /// Earliest departure time of the next packet when pacing.
    pace_next: Time,
    /// When the pacing timer must call `send` again, if it is waiting.
    pub pace_deadline: Option<Time>,
    /// Free slots in the interface queue (Linux txqueuelen), set by the simulation
    /// before each call; None when unlimited.
    pub nic_room: Option<u64>,
    /// The last send stopped on a full interface queue: call `send` when it drains.
    pub nic_blocked: bool,
    /// The rate sample of the last ACK (for tests and traces).
    pub last_rate_sample: RateSample,
    pub counters: SenderCounters,
    pub completed: Option<Time>,
}

impl Sender {
    pub fn new(cfg: SenderConfig, cc: Cc) -> Self {
        let total_segs = cfg.total_bytes.map(|b| b.div_ceil(cfg.mss as u64).max(1));
        let s = CcState::new(cfg.initial_cwnd, cfg.mss);
        Sender {
            cfg,
            total_segs,
            cc,
            s,
            state: CaState::Open,
            snd_una: 0,
            snd_nxt: 0,
            segs: VecDeque::with_capacity(total_segs.map_or(INITIAL_SCOREBOARD, |t| t.min(INITIAL_SCOREBOARD)) as usize),
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            sacked: VecDeque::new(),
            lost_scan: 0,
            retx_hint: 0,
            retrans_fifo: VecDeque::new(),
            high_seq: 0,
            prior_cwnd: 0,
            prr_delivered: 0,
            prr_out: 0,
            rtt: RttEstimator::default(),
            rto_deadline: None,
            window_seq: 0,
            max_packets_out: 0,
            limited_flag: false,
            first_tx_time: 0,
            delivered_time: 0,
            app_limited_until: 0,
            pace_next: 0,
            pace_deadline: None,
            last_rate_sample: RateSample::default(),
            nic_room: None,
            nic_blocked: false,
            counters: SenderCounters::default(),
            completed: None,
        }
    }

    pub fn packets_out(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    /// Linux `tcp_packets_in_flight`.
    pub fn in_flight(&self) -> u64 {
        (self.packets_out() + self.retrans_out as u64)
            .saturating_sub(self.sacked_out as u64 + self.lost_out as u64)
    }

    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }

    /// Open the connection: initialise the algorithm and send the initial window.
    pub fn start(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.s.now = now;
        self.cc.init(&mut self.s);
        self.send(now, out);
    }

    fn seg(&mut self, seq: u64) -> &mut Seg {
        &mut self.segs[(seq - self.snd_una) as usize]
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
        self.s.snd_una = self.snd_una;
        self.s.snd_nxt = self.snd_nxt;
        self.s.srtt = self.rtt.srtt;
        self.s.min_rtt = self.rtt.min_rtt;
    }

    // ----- ACK processing -------------------------------------------------------

    /// An ACK arrived: update the scoreboard, detect losses, run the state machine
    /// and congestion control, then send what the window allows.
    pub fn on_ack(&mut self, p: &Packet, now: Time, out: &mut Vec<Packet>) {
        if p.ack > self.snd_nxt || p.ack < self.snd_una || self.completed.is_some() {
            return;
        }
        self.counters.note_ack(now);
        self.sync_state(now);
        let prior_in_flight = self.in_flight() as u32;
        let acked = p.ack - self.snd_una;
        let mut track = RateTrack::default();
        let mut delivered = self.ack_cumulative(p.ack, &mut track);
        if self.cfg.sack {
            delivered += self.apply_sack(p.sack_blocks(), &mut track);
        } else {
            delivered = self.count_dupacks(acked, delivered);
        }
        let rtt = self.take_rtt_sample(p, now, acked > 0, &track.rtt);
        self.s.delivered += delivered as u64;
        if delivered > 0 {
            self.delivered_time = now;
        }
        self.sync_state(now);
        if delivered > 0 {
            let tsecr = (p.ts_ecr != NO_TS).then_some(p.ts_ecr);
            let sample = AckSample { acked: delivered, rtt, in_flight: prior_in_flight, rcv_tsval: p.ts_val, rcv_tsecr: tsecr };
            self.cc.pkts_acked(&mut self.s, &sample);
        }
        let newly_lost = if self.cfg.sack { self.mark_lost_sack() + self.mark_lost_retrans() } else { 0 };
        self.run_state_machine(acked);
        self.sync_state(now);
        let mut rs = self.rate_sample(&track, now);
        rs.acked_sacked = delivered;
        rs.losses = newly_lost;
        rs.prior_in_flight = prior_in_flight;
        rs.rtt = rtt;
        self.last_rate_sample = rs;
        if !self.cc.cong_control(&mut self.s, &rs) {
            self.adjust_cwnd(acked, delivered, newly_lost);
        }
        self.restart_rto_after_ack(acked, now);
        self.check_completion(now);
        self.send(now, out);
    }

    /// Drop cumulatively acknowledged segments; returns how many were not SACKed
    /// before (newly delivered).
    fn ack_cumulative(&mut self, ack: u64, track: &mut RateTrack) -> u32 {
        let mut delivered = 0;
        while self.snd_una < ack {
            let seg = self.segs.pop_front().expect("scoreboard shorter than window");
            if seg.flags & SACKED != 0 {
                if self.cfg.sack {
                    self.sacked_out -= 1;
                }
            } else {
                delivered += 1;
                self.note_delivered(&seg, track, false);
            }
            if seg.flags & LOST != 0 {
                self.lost_out -= 1;
            }
            if seg.flags & RETRANS != 0 {
                self.retrans_out -= 1;
            }
            self.snd_una += 1;
        }
        self.prune_sacked();
        self.lost_scan = self.lost_scan.max(self.snd_una);
        self.retx_hint = self.retx_hint.max(self.snd_una);
        delivered
    }

    fn prune_sacked(&mut self) {
        let una = self.snd_una;
        while self.sacked.front().is_some_and(|r| r.1 <= una) {
            self.sacked.pop_front();
        }
        if let Some(first) = self.sacked.front_mut() {
            first.0 = first.0.max(una);
        }
    }

    /// Without SACK, emulate the scoreboard from duplicate ACKs as Linux does
    /// (`tcp_add_reno_sack` / `tcp_remove_reno_sacks`): each dupACK means one more
    /// segment has left the network. Returns packets delivered by this ACK.
    fn count_dupacks(&mut self, acked: u64, delivered: u32) -> u32 {
        if acked == 0 {
            if self.packets_out() > self.sacked_out as u64 {
                self.sacked_out += 1;
                return 1;
            }
            return 0;
        }
        let credited = (acked as u32 - 1).min(self.sacked_out);
        self.sacked_out -= credited;
        delivered - credited
    }

    /// Linux `tcp_ack_update_rtt`: the estimator takes the oldest newly
    /// cumulatively ACKed segment's RTT (none if retransmitted data was ACKed),
    /// else the oldest newly SACKed one's, else, when the ACK advanced snd_una,
    /// the echoed timestamp (RFC 7323 RTTM). Congestion control and the minimum
    /// see the newest delivered segment's RTT (`ca_rtt_us`), so SACKs during
    /// recovery give true path RTTs rather than the age of the last in-order
    /// segment that the timestamp echo carries.
    fn take_rtt_sample(&mut self, p: &Packet, now: Time, advanced: bool, t: &RttTrack) -> Option<Time> {
        let ack = t.ackt.filter(|_| !t.retrans_acked);
        let (mut seq_rtt, mut ca_rtt) = (ack.map(|a| now - a.0), ack.map(|a| now - a.1));
        if let Some((first, last)) = t.sackt {
            seq_rtt = seq_rtt.or(Some(now - first));
            ca_rtt = Some(now - last);
        }
        if seq_rtt.is_none() && advanced && p.ts_ecr != NO_TS && p.ts_ecr <= now {
            seq_rtt = Some(now - p.ts_ecr);
            ca_rtt = seq_rtt;
        }
        let (seq_rtt, ca_rtt) = (seq_rtt?, ca_rtt?);
        self.rtt.sample(seq_rtt);
        self.rtt.note_min(ca_rtt);
        Some(ca_rtt.max(1))
    }

    /// Merge the ACK's SACK blocks into the scoreboard; returns newly SACKed count.
    fn apply_sack(&mut self, blocks: &[SegRange], track: &mut RateTrack) -> u32 {
        let mut newly = 0;
        for &(start, end) in blocks {
            let (start, end) = (start.max(self.snd_una), end.min(self.snd_nxt));
            if start < end {
                newly += self.merge_sack_range(start, end, track);
            }
        }
        newly
    }

    fn merge_sack_range(&mut self, start: u64, end: u64, track: &mut RateTrack) -> u32 {
        // Ranges touching [start, end) (overlapping or adjacent) are merged into one.
        let first = self.sacked.partition_point(|r| r.1 < start);
        let last = self.sacked.partition_point(|r| r.0 <= end);
        let mut newly = 0;
        let mut cur = start;
        for i in first..last {
            let (rs, re) = self.sacked[i];
            if rs > cur {
                newly += self.mark_sacked(cur, rs.min(end), track);
            }
            cur = cur.max(re);
        }
        if cur < end {
            newly += self.mark_sacked(cur, end, track);
        }
        if first == last {
            self.sacked.insert(first, (start, end));
        } else {
            let merged = (start.min(self.sacked[first].0), end.max(self.sacked[last - 1].1));
            self.sacked[first] = merged;
            self.sacked.drain(first + 1..last);
        }
        newly
    }

    fn mark_sacked(&mut self, start: u64, end: u64, track: &mut RateTrack) -> u32 {
        for seq in start..end {
            let seg = *self.seg(seq);
            self.note_delivered(&seg, track, true);
            let flags = seg.flags;
            self.seg(seq).flags = SACKED;
            if flags & LOST != 0 {
                self.lost_out -= 1;
            }
            if flags & RETRANS != 0 {
                self.retrans_out -= 1;
            }
        }
        self.sacked_out += (end - start) as u32;
        (end - start) as u32
    }

    /// Remember the most recently sent of the segments this ACK delivers (Linux
    /// `tcp_rate_skb_delivered`); its flight's start opens the next flight.
    fn note_delivered(&mut self, seg: &Seg, track: &mut RateTrack, sacked: bool) {
        track.rtt.note(seg, sacked);
        if track.have && seg.tx_time < track.tx_time {
            return;
        }
        *track = RateTrack {
            rtt: track.rtt,
            have: true,
            tx_time: seg.tx_time,
            prior_delivered: seg.delivered_at_tx,
            prior_time: seg.delivered_time_at_tx,
            send_interval: seg.tx_time.saturating_sub(seg.first_tx),
            app_limited: seg.flags & APP_LIMITED != 0,
        };
        self.first_tx_time = seg.tx_time;
    }

    /// Linux `tcp_rate_gen`: delivered over max(send interval, ACK interval); an
    /// interval shorter than the minimum RTT is not a valid sample.
    fn rate_sample(&mut self, track: &RateTrack, now: Time) -> RateSample {
        if self.app_limited_until != 0 && self.s.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        if !track.have {
            return RateSample::default();
        }
        let interval = track.send_interval.max(now.saturating_sub(track.prior_time));
        let valid = interval > 0 && interval >= self.rtt.min_rtt;
        RateSample {
            delivered: self.s.delivered - track.prior_delivered,
            interval: if valid { interval } else { 0 },
            is_app_limited: track.app_limited,
            prior_delivered: track.prior_delivered,
            ..RateSample::default()
        }
    }

    /// RFC 6675 IsLost: a segment with at least DupThresh SACKed segments above it
    /// is lost. Segments below the DupThresh-th highest SACKed one qualify.
    fn mark_lost_sack(&mut self) -> u32 {
        let Some(limit) = self.lost_limit() else { return 0 };
        let mut newly = 0;
        for seq in self.lost_scan.max(self.snd_una)..limit {
            let seg = self.seg(seq);
            if seg.flags & (SACKED | LOST | RETRANS) == 0 {
                seg.flags |= LOST;
                newly += 1;
                self.retx_hint = self.retx_hint.min(seq);
            }
        }
        self.lost_out += newly;
        self.lost_scan = self.lost_scan.max(limit);
        newly
    }

    fn lost_limit(&self) -> Option<u64> {
        let mut above = 0;
        for &(start, end) in self.sacked.iter().rev() {
            if above + (end - start) >= DUP_THRESH {
                return Some(end - (DUP_THRESH - above));
            }
            above += end - start;
        }
        None
    }

    /// A retransmission is lost when DupThresh segments sent after it have been
    /// SACKed (the idea of Linux's pre-RACK `tcp_mark_lost_retrans`).
    fn mark_lost_retrans(&mut self) -> u32 {
        let high_sacked = self.sacked.back().map_or(0, |r| r.1);
        let mut newly = 0;
        while let Some(&seq) = self.retrans_fifo.front() {
            if seq < self.snd_una || self.seg(seq).flags & RETRANS == 0 {
                self.retrans_fifo.pop_front();
                continue;
            }
            if high_sacked < self.seg(seq).retrans_hi + DUP_THRESH {
                break;
            }
            self.retrans_fifo.pop_front();
            self.seg(seq).flags &= !RETRANS;
            self.retrans_out -= 1;
            self.retx_hint = self.retx_hint.min(seq);
            newly += 1;
        }
        newly
    }

    // ----- state machine ----------------------------------------------------------

    fn set_state(&mut self, state: CaState) {
        if self.state != state {
            self.state = state;
            self.s.ca_state = state;
            self.cc.set_state(&mut self.s, state);
        }
    }

    fn run_state_machine(&mut self, acked: u64) {
        match self.state {
            CaState::Recovery | CaState::Cwr if self.snd_una >= self.high_seq => self.exit_recovery(),
            CaState::Recovery if !self.cfg.sack && acked > 0 => self.mark_head_lost(),
            CaState::Loss if self.snd_una >= self.high_seq => self.set_state(CaState::Open),
            _ => {}
        }
        if self.state == CaState::Cwr && self.time_to_recover() {
            self.enter_recovery();
        }
        if matches!(self.state, CaState::Open | CaState::Disorder) {
            if self.time_to_recover() {
                self.enter_recovery();
            } else if self.sacked_out > 0 {
                self.set_state(CaState::Disorder);
            } else {
                self.set_state(CaState::Open);
            }
        }
    }

    fn time_to_recover(&self) -> bool {
        if self.cfg.sack {
            self.lost_out > 0
        } else {
            self.sacked_out as u64 >= DUP_THRESH && self.snd_una >= self.high_seq
        }
    }

    /// Start a window reduction (Linux `tcp_init_cwnd_reduction`): ssthresh from
    /// the algorithm, PRR from the current cwnd, until everything now in flight is
    /// acknowledged.
    fn init_cwnd_reduction(&mut self) {
        self.high_seq = self.snd_nxt;
        self.prior_cwnd = self.s.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.s.ssthresh = self.cc.ssthresh(&self.s);
        self.s.cwnd_cnt = 0;
    }

    fn enter_recovery(&mut self) {
        self.counters.recoveries += 1;
        // From CWR the reduction is already under way (Linux `tcp_enter_recovery`).
        if self.state != CaState::Cwr {
            self.init_cwnd_reduction();
        }
        self.high_seq = self.snd_nxt;
        self.set_state(CaState::Recovery);
        if !self.cfg.sack {
            self.mark_head_lost();
        }
    }

    /// NewReno (RFC 6582): the first unacknowledged segment is presumed lost.
    fn mark_head_lost(&mut self) {
        if self.snd_una < self.snd_nxt && self.seg(self.snd_una).flags & (SACKED | LOST | RETRANS) == 0 {
            self.seg(self.snd_una).flags |= LOST;
            self.lost_out += 1;
            self.retx_hint = self.snd_una;
        }
    }

    fn exit_recovery(&mut self) {
        if self.s.ssthresh < INFINITE_SSTHRESH && !self.cc.owns_window() {
            self.s.cwnd = self.s.ssthresh;
        }
        self.set_state(CaState::Open);
        self.cc.cwnd_event(&mut self.s, CaEvent::CompleteCwr);
    }

    /// The interface queue refused a packet: local congestion. Linux 2.6's
    /// `tcp_transmit_skb` then calls `tcp_enter_cwr`: reduce the window as for a
    /// loss, without retransmitting anything (the packet was never sent).
    fn local_congestion(&mut self) {
        if matches!(self.state, CaState::Open | CaState::Disorder) {
            self.counters.local_congestion += 1;
            self.init_cwnd_reduction();
            self.set_state(CaState::Cwr);
        }
    }

    fn adjust_cwnd(&mut self, acked: u64, delivered: u32, newly_lost: u32) {
        if matches!(self.state, CaState::Recovery | CaState::Cwr) {
            self.prr(acked > 0, delivered, newly_lost);
        } else if acked > 0 && self.cwnd_limited() {
            self.cc.cong_avoid(&mut self.s, delivered);
        }
    }

    /// Proportional Rate Reduction (RFC 6937 section 3, with Linux's choices:
    /// RecoverFS = cwnd at entry; the slow-start reduction bound only when the
    /// ACK advanced snd_una and revealed no new loss).
    fn prr(&mut self, una_advanced: bool, delivered: u32, newly_lost: u32) {
        if delivered == 0 && newly_lost == 0 {
            return;
        }
        self.prr_delivered += delivered;
        let in_flight = self.in_flight() as i64;
        let ssthresh = self.s.ssthresh as i64;
        let delta = ssthresh - in_flight;
        let sndcnt = if delta < 0 {
            let dividend = ssthresh as u64 * self.prr_delivered as u64 + self.prior_cwnd.max(1) as u64 - 1;
            (dividend / self.prior_cwnd.max(1) as u64) as i64 - self.prr_out as i64
        } else if una_advanced && newly_lost == 0 {
            delta.min((self.prr_delivered as i64 - self.prr_out as i64).max(delivered as i64) + 1)
        } else {
            delta.min(delivered as i64)
        };
        // Linux forces the fast retransmit out on the first ACK of recovery.
        let sndcnt = sndcnt.max(if self.prr_out == 0 { 1 } else { 0 });
        self.s.cwnd = (in_flight + sndcnt).max(1) as u32;
    }

    /// Linux `tcp_is_cwnd_limited`: in slow start, cwnd below twice the most
    /// packets out; otherwise whether the window was fully used recently.
    fn cwnd_limited(&mut self) -> bool {
        let limited = if self.s.in_slow_start() {
            (self.s.cwnd as u64) < 2 * self.max_packets_out
        } else {
            self.limited_flag
        };
        self.s.cwnd_limited = limited;
        limited
    }

    fn note_window_use(&mut self) {
        let full = self.in_flight() >= self.s.cwnd as u64;
        if self.snd_una >= self.window_seq || self.packets_out() > self.max_packets_out {
            self.max_packets_out = self.packets_out();
            self.window_seq = self.snd_nxt;
            self.limited_flag = full;
        } else {
            self.limited_flag |= full;
        }
    }

    // ----- timers -----------------------------------------------------------------

    fn restart_rto_after_ack(&mut self, acked: u64, now: Time) {
        if self.packets_out() == 0 {
            self.rto_deadline = None;
        } else if acked > 0 {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// The retransmission timer fired (the caller checked the deadline).
    pub fn on_rto(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.rto_deadline = None;
        if self.packets_out() == 0 || self.completed.is_some() {
            return;
        }
        self.sync_state(now);
        self.counters.timeouts += 1;
        // Linux `tcp_enter_loss`: a new ssthresh only for a new loss episode.
        if matches!(self.state, CaState::Open | CaState::Disorder) {
            self.s.ssthresh = self.cc.ssthresh(&self.s);
        }
        self.s.cwnd = 1;
        self.s.cwnd_cnt = 0;
        self.high_seq = self.snd_nxt;
        self.mark_all_lost();
        self.set_state(CaState::Loss);
        self.cc.cwnd_event(&mut self.s, CaEvent::Loss);
        self.rtt.backoff += 1;
        self.rto_deadline = Some(now + self.rtt.rto());
        self.send(now, out);
    }

    fn mark_all_lost(&mut self) {
        if !self.cfg.sack {
            self.sacked_out = 0;
        }
        let mut lost = 0;
        for seg in self.segs.iter_mut() {
            if seg.flags & SACKED == 0 {
                seg.flags = LOST;
                lost += 1;
            }
        }
        self.lost_out = lost;
        self.retrans_out = 0;
        self.retrans_fifo.clear();
        self.retx_hint = self.snd_una;
        self.lost_scan = self.snd_nxt;
    }

    fn check_completion(&mut self, now: Time) {
        if self.total_segs == Some(self.snd_una) {
            self.completed = Some(now);
            self.rto_deadline = None;
            // Nothing is in flight and nothing more will be sent: give the
            // scoreboard's memory back (a web-like run finishes 10^5 flows).
            self.segs = VecDeque::new();
            self.sacked = VecDeque::new();
            self.retrans_fifo = VecDeque::new();
        }
    }

    // ----- transmission -----------------------------------------------------------

    /// The application stops offering new data: the transfer ends with what has
    /// been sent so far.
    pub fn stop(&mut self, now: Time) {
        let cap = self.snd_nxt;
        self.total_segs = Some(self.total_segs.map_or(cap, |t| t.min(cap)));
        self.check_completion(now);
    }

    /// Send while the window allows: lost segments first, then new data.
    pub fn send(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.nic_blocked = false;
        while self.in_flight() < self.s.cwnd as u64 && !self.pacing_wait(now) {
            if self.nic_room == Some(0) {
                self.nic_blocked = true;
                self.local_congestion();
                break;
            }
            if let Some(room) = self.nic_room.as_mut() {
                *room -= 1;
            }
            if let Some(seq) = self.next_lost() {
                self.retransmit(seq, now, out);
            } else if self.may_send_new() {
                self.send_new(now, out);
            } else {
                // Nothing to send with window to spare: application-limited
                // (Linux `tcp_rate_check_app_limited`).
                self.app_limited_until = (self.s.delivered + self.in_flight()).max(1);
                break;
            }
        }
        self.note_window_use();
        if self.packets_out() > 0 && self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// The interface queue drained a packet after a send was refused.
    pub fn on_nic_drained(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.completed.is_none() {
            self.s.now = now;
            self.send(now, out);
        }
    }

    /// The pacing timer fired.
    pub fn on_pace_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.pace_deadline = None;
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

    fn next_lost(&mut self) -> Option<u64> {
        if self.lost_out == self.retrans_out {
            return None;
        }
        while self.retx_hint < self.snd_nxt {
            let seq = self.retx_hint;
            if self.seg(seq).flags & (LOST | RETRANS) == LOST {
                return Some(seq);
            }
            self.retx_hint += 1;
        }
        None
    }

    fn may_send_new(&self) -> bool {
        self.total_segs.is_none_or(|t| self.snd_nxt < t) && self.packets_out() < self.cfg.max_window
    }

    fn emit(&mut self, seq: u64, now: Time, out: &mut Vec<Packet>) {
        let payload = self.seg_payload(seq);
        let wire = payload + self.cfg.header_bytes;
        if self.s.pacing_rate > 0.0 {
            let gap = (wire as f64 * 1e9 / self.s.pacing_rate) as Time;
            self.pace_next = self.pace_next.max(now) + gap;
        }
        out.push(Packet::data(self.cfg.flow, self.cfg.dst, seq, payload, wire, now));
        self.s.last_send_time = now;
        self.counters.segments_sent += 1;
        self.counters.bytes_sent += payload as u64;
        if self.state == CaState::Recovery {
            self.prr_out += 1;
        }
    }

    /// Linux `tcp_rate_skb_sent`: record the flight state the segment leaves in;
    /// sending into an empty network starts a new flight.
    fn stamp_for_rate(&mut self, seq: u64, now: Time, network_empty: bool) {
        if network_empty {
            self.first_tx_time = now;
            self.delivered_time = now;
        }
        let (first_tx, delivered, delivered_time) = (self.first_tx_time, self.s.delivered, self.delivered_time);
        let app_limited = self.app_limited_until != 0;
        let seg = self.seg(seq);
        seg.tx_time = now;
        seg.first_tx = first_tx;
        seg.delivered_at_tx = delivered;
        seg.delivered_time_at_tx = delivered_time;
        if app_limited {
            seg.flags |= APP_LIMITED;
        } else {
            seg.flags &= !APP_LIMITED;
        }
    }

    fn retransmit(&mut self, seq: u64, now: Time, out: &mut Vec<Packet>) {
        let hi = self.snd_nxt;
        let seg = self.seg(seq);
        seg.flags |= RETRANS | EVER_RETRANS;
        seg.retrans_hi = hi;
        self.retrans_out += 1;
        self.retrans_fifo.push_back(seq);
        self.counters.retransmits += 1;
        self.stamp_for_rate(seq, now, false);
        self.emit(seq, now, out);
    }

    fn send_new(&mut self, now: Time, out: &mut Vec<Packet>) {
        let network_empty = self.packets_out() == 0;
        if network_empty {
            self.cc.cwnd_event(&mut self.s, CaEvent::TxStart);
        }
        let seq = self.snd_nxt;
        self.segs.push_back(Seg::default());
        self.snd_nxt += 1;
        self.stamp_for_rate(seq, now, network_empty);
        self.emit(seq, now, out);
    }

    /// Check the scoreboard against its counters (used by tests).
    pub fn check_invariants(&self) -> Result<(), String> {
        let count = |f: u8| self.segs.iter().filter(|s| s.flags & f != 0).count() as u32;
        if self.segs.iter().any(|s| s.flags & SACKED != 0 && s.flags & (LOST | RETRANS) != 0) {
            return Err("a SACKed segment is still marked lost or retransmitted".into());
        }
        if self.segs.len() as u64 != self.packets_out() {
            return Err("scoreboard length != packets_out".into());
        }
        if self.cfg.sack && count(SACKED) != self.sacked_out {
            return Err(format!("sacked_out {} != {}", self.sacked_out, count(SACKED)));
        }
        if count(LOST) != self.lost_out || count(RETRANS) != self.retrans_out {
            return Err(format!("lost/retrans counters {}/{} != {}/{}", self.lost_out, self.retrans_out, count(LOST), count(RETRANS)));
        }
        if self.lost_out < self.retrans_out {
            return Err("retransmitted segment not marked lost".into());
        }
        Ok(())
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
        assert!((5..INITIAL_SCOREBOARD as usize).contains(&s.segs.capacity()));
        assert!(sender(true).segs.capacity() >= INITIAL_SCOREBOARD as usize);
        let mut out = vec![];
        s.start(0, &mut out);
        assert_eq!(out.len(), 5);
        s.on_ack(&ack(3, &[], 0), 10 * MS, &mut out);
        assert!(s.completed.is_none() && s.segs.capacity() >= 2);
        s.on_ack(&ack(5, &[], 0), 11 * MS, &mut out);
        assert_eq!(s.completed, Some(11 * MS));
        assert_eq!(s.segs.capacity() + s.sacked.capacity() + s.retrans_fifo.capacity(), 0);
        s.check_invariants().unwrap();
    }

    fn ack(cum: u64, sack: &[(u64, u64)], ts_ecr: Time) -> Packet {
        let mut p = Packet::ack(0, 0, cum, 52, 0, ts_ecr);
        p.sack[..sack.len()].copy_from_slice(sack);
        p.nsack = sack.len() as u8;
        p
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
        assert_eq!(s.state, CaState::Disorder);
        // Two segments left the network: two new ones go out (as limited transmit).
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![10, 11]);
        out.clear();
        s.on_ack(&ack(0, &[(1, 4)], 0), 51 * MS, &mut out);
        assert_eq!(s.state, CaState::Recovery);
        assert_eq!(s.s.ssthresh, 5);
        assert_eq!(out[0].seq, 0, "the hole is retransmitted first");
        assert_eq!(s.counters.retransmits, 1);
        s.check_invariants().unwrap();
        // The retransmission fills the hole: recovery ends with cwnd = ssthresh,
        // then (as Linux's tcp_ack orders it) congestion avoidance runs on the same
        // ACK, which delivers more than cwnd = 5 packets: +1.
        let snd_nxt = s.snd_nxt();
        s.on_ack(&ack(snd_nxt, &[], 0), 100 * MS, &mut out);
        assert_eq!(s.state, CaState::Open);
        assert_eq!((s.s.ssthresh, s.s.cwnd), (5, 6));
        s.check_invariants().unwrap();
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
        assert_eq!(s.state, CaState::Recovery);
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
        assert_eq!((s.s.cwnd, s.s.ssthresh, s.state), (1, 5, CaState::Loss));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, 0);
        assert_eq!(s.rtt.backoff, 1);
        s.check_invariants().unwrap();
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
}
