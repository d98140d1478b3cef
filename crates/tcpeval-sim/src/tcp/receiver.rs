//! The TCP receiver: cumulative ACKs, SACK blocks (RFC 2018), timestamps echo
//! (RFC 7323 section 4.3), and Linux-style delayed ACKs: an ACK for every second
//! full segment, a timer otherwise, an immediate ACK for out-of-order data or data
//! that fills a hole (RFC 5681 section 4.2), and quick-ACK mode at connection start.
//! With ECN negotiated, the echo of CE marks (tcp::ecn::EcnReceiver).
//! With D-SACK on (RFC 2883; Linux `tcp_dsack` = 1, the default since 2.4),
//! the ACK of a duplicate segment reports it in a first, D-SACK block.
//! With SACK compression (Linux 4.20 on, `SackCompression`), out-of-order
//! data past the third duplicate ACK for one rcv_nxt is ACKed at most once a
//! millisecond or every 44 segments.

use super::ecn::{EcnMode, EcnReceiver};
use super::scoreboard::DUP_THRESH;
use crate::net::{Packet, SegRange, MAX_SACK_BLOCKS};
use crate::time::{Time, MS};
use std::collections::VecDeque;

/// Linux TCP_MAX_QUICKACKS: segments ACKed at once at connection start.
pub const QUICKACKS: u32 = 16;
/// Marker for "no timestamp to echo".
pub const NO_TS: Time = Time::MAX;
/// Linux TCP_NUM_SACKS: the SACK blocks a receiver keeps (three fit in an
/// ACK with timestamps, `MAX_SACK_BLOCKS`).
const KEPT_SACK_BLOCKS: usize = 4;

/// Linux's SACK compression (net/ipv4/tcp_input.c `__tcp_ack_snd_check`,
/// 4.20 "tcp: add SACK compression"; 5.11 "tcp: defer SACK compression after
/// DupThresh" and its `dup_ack_counter`; read at 6.6): while out-of-order
/// data is held, the first three ACKs for one rcv_nxt go at once and later
/// ones wait, up to `max_held` of them, for a timer of min(`max_delay`, RTT /
/// 20) that sends one ACK for all; any ACK sent ends the wait. Defaults are
/// the sysctls `tcp_comp_sack_nr` = 44 and `tcp_comp_sack_delay_ns` = 1 ms
/// (Documentation/networking/ip-sysctl.rst); the timer's 100 us slack
/// (`tcp_comp_sack_slack_ns`) is left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SackCompression {
    pub max_delay: Time,
    pub max_held: u32,
}

impl SackCompression {
    pub const LINUX: SackCompression = SackCompression { max_delay: MS, max_held: 44 };
}

pub struct ReceiverConfig {
    pub flow: u32,
    /// Node the ACKs go to (the sender).
    pub dst: u32,
    pub mss: u32,
    pub total_bytes: Option<u64>,
    pub delayed_ack: bool,
    pub delack_timeout: Time,
    /// Wire size of an ACK without SACK blocks (IP + TCP + timestamp option).
    pub ack_bytes: u32,
}

pub struct Receiver {
    cfg: ReceiverConfig,
    pub rcv_nxt: u64,
    /// Out-of-order data held: sorted, disjoint, non-adjacent ranges.
    ooo: VecDeque<SegRange>,
    /// The SACK blocks to report, most recently changed first (RFC 2018 section 4):
    /// always current ranges of `ooo`, so building an ACK costs O(1).
    recent: [SegRange; MAX_SACK_BLOCKS],
    nrecent: usize,
    /// Report duplicates by D-SACK (Linux: SACK negotiated and `tcp_dsack`).
    dsack_on: bool,
    /// The duplicate segment the next ACK reports first (Linux
    /// `tcp_dsack_set`: `rx_opt.dsack`, cleared once sent).
    dsack: Option<SegRange>,
    last_ack_sent: u64,
    ts_recent: Time,
    unacked: u32,
    quickacks: u32,
    /// When the delayed-ACK timer fires, if armed.
    pub delack_deadline: Option<Time>,
    /// Payload bytes delivered in order to the application.
    pub delivered_bytes: u64,
    /// Payload bytes that arrived, duplicates included (for conservation checks).
    pub received_bytes: u64,
    pub acks_sent: u64,
    ecn: EcnReceiver,
    /// An ACK `on_data` sent before the one it returns (DCTCP's echo sends
    /// the held delayed ACK first on a change of CE state; SACK compression
    /// its held ACK before a new block pushes the oldest out): send it first.
    pub echo_ack: Option<Packet>,
    /// SACK compression, if the stack has it (None: every out-of-order
    /// segment is ACKed at once), its `max_delay` this flow's timer.
    compression: Option<SackCompression>,
    /// ACKs held by it (Linux `compressed_ack`); their timer is
    /// `delack_deadline`, which no delayed ACK uses meanwhile (one is held
    /// only while no out-of-order data is).
    held: u32,
    /// Immediate duplicate ACKs sent for `dup_rcv_nxt` (Linux
    /// `dup_ack_counter`, `compressed_ack_rcv_nxt`).
    dup_acks: u32,
    dup_rcv_nxt: u64,
}

impl Receiver {
    pub fn new(cfg: ReceiverConfig) -> Self {
        Receiver {
            cfg,
            rcv_nxt: 0,
            ooo: VecDeque::new(),
            recent: [(0, 0); MAX_SACK_BLOCKS],
            nrecent: 0,
            dsack_on: false,
            dsack: None,
            last_ack_sent: 0,
            ts_recent: NO_TS,
            unacked: 0,
            quickacks: QUICKACKS,
            delack_deadline: None,
            delivered_bytes: 0,
            received_bytes: 0,
            acks_sent: 0,
            ecn: EcnReceiver::default(),
            echo_ack: None,
            compression: None,
            held: 0,
            dup_acks: 0,
            dup_rcv_nxt: 0,
        }
    }

    /// Compress SACKs as the stack does (crate::stack::Profile), with the
    /// flow's base RTT for the timer (Linux takes the lower of the receiver's
    /// RTT estimate and its srtt, both near it on an idle path). Only for a
    /// flow with SACK (Linux: `tcp_is_sack`).
    pub fn with_sack_compression(mut self, rule: Option<SackCompression>, rtt: Time) -> Self {
        self.compression = rule.map(|r| SackCompression { max_delay: r.max_delay.min(rtt / 20), ..r });
        self
    }

    /// A connection that negotiated ECN (tcp::ecn), or not.
    pub fn with_ecn(mut self, mode: EcnMode) -> Self {
        self.ecn = EcnReceiver::new(mode);
        self
    }

    /// Report duplicate segments by D-SACK (the flow has SACK and its stack
    /// sends D-SACKs: crate::stack::Profile::dsack).
    pub fn with_dsack(mut self, on: bool) -> Self {
        self.dsack_on = on;
        self
    }

    /// Acknowledge as the flow's stack does (crate::stack): its quick-ACK
    /// count at start. The delayed-ACK timer stays the flow's.
    pub fn with_stack(mut self, profile: &crate::stack::Profile) -> Self {
        self.quickacks = profile.quickacks;
        self
    }

    fn seg_bytes(&self, seq: u64) -> u64 {
        let mss = self.cfg.mss as u64;
        match self.cfg.total_bytes {
            Some(total) => total.saturating_sub(seq * mss).min(mss),
            None => mss,
        }
    }

    fn advance_to(&mut self, next: u64) {
        while self.rcv_nxt < next {
            self.delivered_bytes += self.seg_bytes(self.rcv_nxt);
            self.rcv_nxt += 1;
        }
    }

    /// A data segment arrived; returns the ACK to send now, if any.
    pub fn on_data(&mut self, p: &Packet, now: Time) -> Option<Packet> {
        self.received_bytes += p.payload as u64;
        let mut ack_now = false;
        if self.ecn.on() {
            ack_now = self.ecn.accept_cwr(p);
        }
        // RFC 7323 4.3: remember the timestamp of the segment at the left edge.
        if p.seq <= self.last_ack_sent && (self.ts_recent == NO_TS || p.ts_val >= self.ts_recent) {
            self.ts_recent = p.ts_val;
        }
        if p.seq < self.rcv_nxt || self.in_ooo(p.seq) {
            // Duplicate: ACK at once, reporting it (Linux `tcp_data_queue`,
            // `tcp_data_queue_ofo`: tcp_dsack_set with the segment's range).
            if self.dsack_on {
                self.dsack = Some((p.seq, p.seq + 1));
            }
            return Some(self.make_ack(now));
        }
        if self.ecn.on() {
            ack_now |= self.check_ce(p, now);
        }
        if p.seq > self.rcv_nxt {
            let ranges_before = self.ooo.len();
            let range = self.insert_ooo(p.seq);
            let flushed = self.flush_before_new_block(range, ranges_before, now);
            self.note_recent(range);
            let own = self.ack_out_of_order(now, ack_now);
            return match (flushed, own) {
                (Some(first), Some(own)) => {
                    self.echo_ack = Some(first);
                    Some(own)
                }
                (first, own) => first.or(own),
            };
        }
        let prior = self.last_ack_sent;
        self.advance_to(p.seq + 1);
        let filled_hole = !self.ooo.is_empty();
        if let Some(&(start, end)) = self.ooo.front() {
            if start == self.rcv_nxt {
                self.advance_to(end);
                self.ooo.pop_front();
            }
        }
        self.forget_acked_blocks();
        self.unacked += 1;
        if self.compression.is_some() && !self.ooo.is_empty() && self.rcv_nxt - prior == 1 {
            // Linux: one segment past the last ACK with a hole left is no
            // "more than one full frame"; the compression path sends it at
            // once as the first duplicate ACK for the new rcv_nxt.
            (self.dup_rcv_nxt, self.dup_acks) = (self.rcv_nxt, 1);
        }
        if ack_now || filled_hole || !self.cfg.delayed_ack || self.unacked >= 2 || self.quickacks > 0 {
            self.quickacks = self.quickacks.saturating_sub(1);
            return Some(self.make_ack(now));
        }
        if self.delack_deadline.is_none() {
            self.delack_deadline = Some(now + self.cfg.delack_timeout);
        }
        None
    }

    /// Linux `tcp_ecn_check_ce` for new data, before rcv_nxt moves (so a
    /// held ACK flushed here acknowledges what preceded this packet, Linux's
    /// `prior_rcv_nxt`); returns whether this packet must be ACKed at once.
    fn check_ce(&mut self, p: &Packet, now: Time) -> bool {
        let step = self.ecn.check_ce(p.ecn, self.delack_deadline.is_some());
        self.quickacks = self.quickacks.max(step.quickacks);
        if let Some(ece) = step.flush {
            let echo = self.ecn.ece();
            self.ecn.set_ece(ece);
            self.echo_ack = Some(self.make_ack(now));
            self.ecn.set_ece(echo);
        }
        step.ack_now
    }

    /// The delayed-ACK timer fired, or SACK compression's (Linux
    /// `tcp_compressed_ack_kick`).
    pub fn on_delack_timer(&mut self, now: Time) -> Option<Packet> {
        match self.delack_deadline {
            Some(t) if t <= now => {
                self.delack_deadline = None;
                (self.unacked > 0 || self.held > 0).then(|| self.make_ack(now))
            }
            _ => None,
        }
    }

    /// The ACK for an out-of-order segment (Linux `__tcp_ack_snd_check` with
    /// data held out of order): at once without SACK compression, in quick-ACK
    /// mode or when the ECN echo asks for it; else compressed (see
    /// `SackCompression`).
    fn ack_out_of_order(&mut self, now: Time, ack_now: bool) -> Option<Packet> {
        let Some(rule) = self.compression else {
            return Some(self.make_ack(now));
        };
        if ack_now || self.quickacks > 0 || self.held >= rule.max_held {
            self.quickacks = self.quickacks.saturating_sub(1);
            return Some(self.make_ack(now));
        }
        if self.dup_rcv_nxt != self.rcv_nxt {
            (self.dup_rcv_nxt, self.dup_acks) = (self.rcv_nxt, 0);
        }
        if (self.dup_acks as u64) < DUP_THRESH {
            self.dup_acks += 1;
            return Some(self.make_ack(now));
        }
        self.held += 1;
        if self.delack_deadline.is_none() {
            self.delack_deadline = Some(now + rule.max_delay);
        }
        None
    }

    /// Linux `tcp_sack_new_ofo_skb` (`tcp_sack_compress_send_ack`): a segment
    /// that starts a new block (`range`, just inserted, is that segment
    /// alone) when four are kept pushes the oldest out, so an ACK held by
    /// compression goes first, reporting the blocks as they were (called
    /// before `note_recent`).
    fn flush_before_new_block(&mut self, range: SegRange, ranges_before: usize, now: Time) -> Option<Packet> {
        let new_block = range.1 - range.0 == 1;
        (self.held > 0 && ranges_before >= KEPT_SACK_BLOCKS && new_block).then(|| self.make_ack(now))
    }

    fn in_ooo(&self, seq: u64) -> bool {
        let i = self.ooo.partition_point(|r| r.1 <= seq);
        self.ooo.get(i).is_some_and(|r| r.0 <= seq)
    }

    /// Add one segment above rcv_nxt; returns the range now holding it.
    fn insert_ooo(&mut self, seq: u64) -> SegRange {
        let i = self.ooo.partition_point(|r| r.1 < seq);
        let joins_left = i < self.ooo.len() && self.ooo[i].1 == seq;
        let right = if joins_left { i + 1 } else { i };
        let joins_right = right < self.ooo.len() && self.ooo[right].0 == seq + 1;
        match (joins_left, joins_right) {
            (true, true) => {
                self.ooo[i].1 = self.ooo[i + 1].1;
                self.ooo.remove(i + 1);
            }
            (true, false) => self.ooo[i].1 = seq + 1,
            (false, true) => self.ooo[i].0 = seq,
            (false, false) => self.ooo.insert(i, (seq, seq + 1)),
        }
        self.ooo[i]
    }

    /// Put `range` first among the reported blocks, dropping blocks it absorbed.
    fn note_recent(&mut self, range: SegRange) {
        let mut kept = [(0, 0); MAX_SACK_BLOCKS];
        kept[0] = range;
        let mut n = 1;
        for &b in &self.recent[..self.nrecent] {
            let overlaps = b.0 < range.1 && range.0 < b.1;
            if !overlaps && n < MAX_SACK_BLOCKS {
                kept[n] = b;
                n += 1;
            }
        }
        self.recent = kept;
        self.nrecent = n;
    }

    fn forget_acked_blocks(&mut self) {
        let una = self.rcv_nxt;
        let mut n = 0;
        for k in 0..self.nrecent {
            if self.recent[k].1 > una {
                self.recent[n] = self.recent[k];
                n += 1;
            }
        }
        self.nrecent = n;
    }

    /// The SACK blocks of an ACK reporting the duplicate `dup`: the D-SACK
    /// block first, then the block holding it if it lies above rcv_nxt (RFC
    /// 2883 section 4, so the sender can tell a D-SACK above its cumulative
    /// ACK), then the other blocks, most recent first, as many as fit.
    fn put_dsack(&self, out: &mut [SegRange; MAX_SACK_BLOCKS], dup: SegRange) -> usize {
        out[0] = dup;
        // The held range, even one no longer among the reported blocks.
        let i = self.ooo.partition_point(|r| r.1 <= dup.0);
        let holder = self.ooo.get(i).filter(|r| r.0 <= dup.0).copied();
        let rest = self.recent[..self.nrecent].iter().filter(|&&b| Some(b) != holder);
        let blocks = holder.into_iter().chain(rest.copied());
        let mut n = 1;
        for b in blocks.take(MAX_SACK_BLOCKS - 1) {
            out[n] = b;
            n += 1;
        }
        n
    }

    /// Build an ACK: cumulative point and the SACK blocks, most recent first.
    fn make_ack(&mut self, now: Time) -> Packet {
        self.unacked = 0;
        self.held = 0;
        self.delack_deadline = None;
        self.last_ack_sent = self.rcv_nxt;
        self.acks_sent += 1;
        // The blocks are gathered apart and the packet built last, from values:
        // a packet written through a reference and then returned was copied
        // out at once, reading its small fields whole just after they were
        // stored one by one, a store forwarding stall (perf, issue 29).
        let mut sack = [(0, 0); MAX_SACK_BLOCKS];
        let n = match self.dsack.take() {
            Some(dup) => self.put_dsack(&mut sack, dup),
            None => {
                sack[..self.nrecent].copy_from_slice(&self.recent[..self.nrecent]);
                self.nrecent
            }
        };
        // SACK option: kind, length, 8 bytes a block, padded to 4 bytes with NOPs.
        let option_bytes = if n > 0 { 4 + 8 * n as u32 } else { 0 };
        let wire = self.cfg.ack_bytes + option_bytes;
        let mut p = Packet::ack(self.cfg.flow, self.cfg.dst, self.rcv_nxt, wire, now, self.ts_recent);
        (p.sack, p.nsack) = (sack, n as u8);
        if self.ecn.on() {
            (p.ece, p.ecn) = (self.ecn.ece(), self.ecn.ack_ecn());
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx(delayed: bool) -> Receiver {
        Receiver::new(ReceiverConfig {
            flow: 0,
            dst: 9,
            mss: 1000,
            total_bytes: Some(4500),
            delayed_ack: delayed,
            delack_timeout: 40,
            ack_bytes: 52,
        })
    }

    fn seg(seq: u64, ts: Time) -> Packet {
        Packet::data(0, 1, seq, 1000, 1052, ts)
    }

    #[test]
    fn delayed_acks_every_second_segment_after_quickack() {
        let mut r = rx(true);
        r.quickacks = 0;
        assert!(r.on_data(&seg(0, 1), 1).is_none());
        assert_eq!(r.delack_deadline, Some(41));
        let a = r.on_data(&seg(1, 2), 2).unwrap();
        assert_eq!((a.ack, a.ts_ecr), (2, 1)); // echoes the first segment's timestamp
        assert!(r.on_data(&seg(2, 3), 3).is_none());
        let a = r.on_delack_timer(43).unwrap();
        assert_eq!(a.ack, 3);
    }

    #[test]
    fn out_of_order_data_is_sacked_at_once_most_recent_first() {
        let mut r = rx(true);
        r.on_data(&seg(0, 1), 1);
        let a = r.on_data(&seg(2, 2), 2).unwrap();
        assert_eq!((a.ack, a.sack_blocks()), (1, &[(2, 3)][..]));
        let a = r.on_data(&seg(4, 3), 3).unwrap();
        assert_eq!(a.sack_blocks(), &[(4, 5), (2, 3)][..]);
        assert_eq!(a.ts_ecr, 1); // out-of-order data does not update TS.Recent
        let a = r.on_data(&seg(1, 4), 4).unwrap(); // fills the hole
        assert_eq!((a.ack, a.sack_blocks(), a.ts_ecr), (3, &[(4, 5)][..], 4));
    }

    /// A Linux 6.6 receiver (SACK compression, 1 ms at a 100 ms RTT) past
    /// its quick-ACK start, holding segment 0 in order and a hole at 1.
    fn compressing() -> Receiver {
        let mut r = Receiver::new(ReceiverConfig { total_bytes: None, ..rx(true).cfg })
            .with_sack_compression(Some(SackCompression::LINUX), 100 * MS);
        r.quickacks = 0;
        r.on_data(&seg(0, 0), 0);
        r
    }

    #[test]
    fn sack_compression_holds_acks_past_the_third_duplicate() {
        let mut r = compressing();
        let mut sent = vec![];
        for s in 2..10 {
            sent.push(r.on_data(&seg(s, s), s).is_some());
        }
        assert_eq!(sent, [true, true, true, false, false, false, false, false]);
        assert_eq!(r.delack_deadline, Some(5 + MS), "the timer runs from the first held ACK");
        let a = r.on_delack_timer(5 + MS).unwrap();
        assert_eq!((a.ack, a.sack_blocks()), (1, &[(2, 10)][..]));
        // The hole filled: at once, and the next hole's first three again.
        assert!(r.on_data(&seg(1, 2 * MS), 2 * MS).is_some());
        let sent: Vec<bool> = (11..16).map(|s| r.on_data(&seg(s, s), 3 * MS + s).is_some()).collect();
        assert_eq!(sent, [true, true, true, false, false]);
    }

    #[test]
    fn the_forty_fifth_held_ack_goes_at_once() {
        let mut r = compressing();
        let acks: Vec<u64> = (2..60).filter(|&s| r.on_data(&seg(s, s), s).is_some()).collect();
        // Three duplicates, 44 held, the next sent; then 44 held again.
        assert_eq!(acks, [2, 3, 4, 49]);
    }

    #[test]
    fn a_fifth_block_sends_the_held_ack_first() {
        let mut r = compressing();
        for s in [2, 3, 4, 5, 7, 9, 11] {
            r.on_data(&seg(s, s), s);
        }
        assert_eq!((r.held, r.ooo.len()), (4, 4));
        let a = r.on_data(&seg(13, 13), 13).expect("the held ACK");
        assert_eq!(a.sack_blocks(), &[(11, 12), (9, 10), (7, 8)][..], "the blocks before 13");
        assert_eq!(r.held, 1, "13 itself waits");
        // Extending a block sends nothing.
        assert!(r.on_data(&seg(14, 14), 14).is_none());
    }

    #[test]
    fn without_compression_every_out_of_order_segment_is_acked() {
        let mut r = rx(true);
        r.quickacks = 0;
        r.on_data(&seg(0, 0), 0);
        assert!((2..60).all(|s| r.on_data(&seg(s, s), s).is_some()));
    }

    #[test]
    fn delivered_bytes_count_the_short_last_segment_once() {
        let mut r = rx(false);
        for s in [0, 2, 1, 4, 3, 3] {
            r.on_data(&seg(s, 0), 0);
        }
        assert_eq!((r.rcv_nxt, r.delivered_bytes), (5, 4500));
    }

    #[test]
    fn ooo_ranges_merge() {
        let mut r = rx(false);
        for s in [5, 3, 4, 7] {
            r.on_data(&seg(s, 0), 0);
        }
        let spans: Vec<(u64, u64)> = r.ooo.iter().copied().collect();
        assert_eq!(spans, vec![(3, 6), (7, 8)]);
        let a = r.make_ack(0);
        assert_eq!(a.sack_blocks(), &[(7, 8), (3, 6)][..]);
    }

    /// RFC 2883 section 4 examples, by hand: 0..3 delivered, 5 and 7 held.
    /// A second 1 (below rcv_nxt 3): D-SACK (1, 2) first, then the usual
    /// blocks. A second 5: D-SACK (5, 6), then its block (5, 6) second though
    /// (7, 8) is more recent; the D-SACK goes out once.
    #[test]
    fn a_duplicate_is_reported_first_by_a_dsack_block() {
        let mut r = rx(false).with_dsack(true);
        for s in [0, 1, 2, 5, 7] {
            r.on_data(&seg(s, 0), 0);
        }
        let a = r.on_data(&seg(1, 0), 0).unwrap();
        assert_eq!((a.ack, a.sack_blocks()), (3, &[(1, 2), (7, 8), (5, 6)][..]));
        assert_eq!(a.wire_bytes, 52 + 4 + 8 * 3);
        let a = r.on_data(&seg(5, 0), 0).unwrap();
        assert_eq!(a.sack_blocks(), &[(5, 6), (5, 6), (7, 8)][..]);
        r.on_data(&seg(6, 0), 0);
        let a = r.on_data(&seg(6, 0), 0).unwrap();
        assert_eq!(a.sack_blocks(), &[(6, 7), (5, 8)][..], "merged block second");
        let a = r.make_ack(0);
        assert_eq!(a.sack_blocks(), &[(5, 8)][..], "reported once");
        let mut off = rx(false);
        off.on_data(&seg(0, 0), 0);
        assert_eq!(off.on_data(&seg(0, 0), 0).unwrap().sack_blocks(), &[][..], "D-SACK off");
    }

    proptest::proptest! {
        /// Whatever the arrival order and duplicates, the sender's RFC 2883
        /// test (Scoreboard::dsack_block) finds a D-SACK of exactly the
        /// segment in the ACK of a duplicate, and none in any other ACK.
        #[test]
        fn the_sender_recognises_exactly_the_dsacks_the_receiver_sends(arrivals in proptest::collection::vec(0u64..12, 1..40)) {
            let mut r = Receiver::new(ReceiverConfig {
                flow: 0,
                dst: 9,
                mss: 1000,
                total_bytes: None,
                delayed_ack: false,
                delack_timeout: 40,
                ack_bytes: 52,
            })
            .with_dsack(true);
            let mut seen = std::collections::HashSet::new();
            for s in arrivals {
                let a = r.on_data(&seg(s, 0), 0).unwrap();
                let dsack = crate::tcp::scoreboard::Scoreboard::dsack_block(a.ack, a.sack_blocks());
                let want = (!seen.insert(s)).then_some((s, s + 1));
                proptest::prop_assert_eq!(dsack, want, "ACK {} blocks {:?}", a.ack, a.sack_blocks());
            }
        }
    }
}
