//! The SACK scoreboard: one entry per segment from snd_una to snd_nxt, with which
//! are SACKed, lost and retransmitted, the counters Linux keeps for them
//! (`net/ipv4/tcp_input.c`: sacked_out, lost_out, retrans_out), and the loss
//! rules: RFC 6675 IsLost, NewReno's lost head (RFC 6582), lost retransmissions,
//! and the order of retransmission (RFC 6675 NextSeg rule 1: lost holes first).
//!
//! Without SACK the counters are emulated from duplicate ACKs, as Linux does.

use crate::net::SegRange;
use crate::time::Time;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// RFC 5681/6675 DupThresh (Linux `tcp_reordering` default).
pub const DUP_THRESH: u64 = 3;

pub(super) const SACKED: u8 = 1;
pub(super) const LOST: u8 = 2;
/// A retransmission of this segment is in flight. Only lost segments are
/// retransmitted, so RETRANS implies LOST and lost_out >= retrans_out.
pub(super) const RETRANS: u8 = 4;
/// The flight this segment was (last) sent in was application-limited.
pub(super) const APP_LIMITED: u8 = 8;
/// The segment was retransmitted at least once (Linux TCPCB_EVER_RETRANS): Karn's
/// rule keeps its ACK out of the RTT samples.
pub(super) const EVER_RETRANS: u8 = 16;

/// Scoreboard slots reserved when a flow is created: a bulk flow's window reaches
/// this within a few RTTs anyway, and a short transfer reserves only its own
/// size, so 10^5 web-like flows do not each hold a bulk flow's scoreboard.
pub(super) const INITIAL_SCOREBOARD: u64 = 1024;

#[derive(Clone, Copy, Debug, Default)]
pub struct Seg {
    pub(super) flags: u8,
    /// snd_nxt when the segment was last retransmitted.
    pub(super) retrans_hi: u64,
    /// Delivery-rate bookkeeping at the last transmission (Linux `tcp_skb_cb.tx`).
    pub(super) tx_time: Time,
    pub(super) first_tx: Time,
    pub(super) delivered_at_tx: u64,
    pub(super) delivered_time_at_tx: Time,
    /// CE-marked deliveries when it was sent (Linux `tx.delivered_ce`, fewer
    /// bits there too; differences wrap), for RateSample.delivered_ce.
    pub(super) delivered_ce_at_tx: u32,
    /// Packets in flight after this transmission and `lost` then (BBRv3's
    /// `tx.in_flight`, `tx.lost`: net/ipv4/tcp_rate.c `tcp_set_tx_in_flight`).
    pub(super) in_flight_at_tx: u32,
    pub(super) lost_at_tx: u64,
}

pub struct Scoreboard {
    sack: bool,
    pub(super) snd_una: u64,
    pub(super) snd_nxt: u64,
    pub(super) segs: VecDeque<Seg>,
    pub(super) sacked_out: u32,
    pub(super) lost_out: u32,
    retrans_out: u32,
    /// Packets ever marked lost (Linux `tp->lost`, counted in
    /// `tcp_mark_skb_lost`); BBRv3 reads loss rates from it.
    pub(super) lost: u64,
    /// Our SACK knowledge above snd_una: sorted, disjoint, non-adjacent ranges.
    pub(super) sacked: VecDeque<SegRange>,
    /// Segments below this have been checked by the IsLost rule.
    lost_scan: u64,
    /// The scan frontier of `next_lost`: every lost, not-yet-retransmitted
    /// segment below it is in `lost_behind`.
    retx_hint: u64,
    /// Segments marked lost behind the frontier (a min-heap; entries go stale
    /// when retransmitted or acknowledged and are dropped when met). Pulling
    /// the frontier back instead made each lost retransmission of the head a
    /// scan of the whole window (issue 29: the 10 Gbit/s linux-3.16 stall).
    lost_behind: BinaryHeap<Reverse<u64>>,
    /// Retransmissions in flight, in the order sent (so retrans_hi is sorted).
    pub(super) retrans_fifo: VecDeque<u64>,
    /// RACK finds lost retransmissions by time (tcp::rack): no order kept.
    rack: bool,
}

impl Scoreboard {
    pub fn new(sack: bool, capacity: u64) -> Self {
        Scoreboard {
            sack,
            snd_una: 0,
            snd_nxt: 0,
            segs: VecDeque::with_capacity(capacity as usize),
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            lost: 0,
            sacked: VecDeque::new(),
            lost_scan: 0,
            retx_hint: 0,
            lost_behind: BinaryHeap::new(),
            retrans_fifo: VecDeque::new(),
            rack: false,
        }
    }

    /// Losses are detected by RACK (tcp::rack), not by `mark_lost_sack` and
    /// `mark_lost_retrans`.
    pub fn use_rack(&mut self) {
        self.rack = true;
    }

    pub fn packets_out(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    /// Linux `tcp_packets_in_flight`: packets_out - sacked_out - lost_out + retrans_out.
    pub fn in_flight(&self) -> u64 {
        (self.packets_out() + self.retrans_out as u64).saturating_sub(self.sacked_out as u64 + self.lost_out as u64)
    }

    /// When the oldest unacknowledged segment was last sent, if any is.
    pub fn head_sent(&self) -> Option<Time> {
        self.segs.front().filter(|_| self.packets_out() > 0).map(|h| h.tx_time)
    }

    pub(super) fn seg(&mut self, seq: u64) -> &mut Seg {
        &mut self.segs[(seq - self.snd_una) as usize]
    }

    /// A new segment leaves: returns its sequence number.
    pub fn push_new(&mut self) -> u64 {
        self.segs.push_back(Seg::default());
        self.snd_nxt += 1;
        self.snd_nxt - 1
    }

    /// Stamp segment `seq`, just sent, with the flight it joined (BBRv3's
    /// `tcp_set_tx_in_flight`: in flight including it, and `tp->lost`).
    pub fn stamp_flight(&mut self, seq: u64) {
        let (in_flight, lost) = (self.in_flight() as u32, self.lost);
        let seg = self.seg(seq);
        seg.in_flight_at_tx = in_flight;
        seg.lost_at_tx = lost;
    }

    /// Segment `seq` is retransmitted now.
    pub fn note_retransmit(&mut self, seq: u64) {
        let hi = self.snd_nxt;
        let seg = self.seg(seq);
        seg.flags |= RETRANS | EVER_RETRANS;
        seg.retrans_hi = hi;
        self.retrans_out += 1;
        if !self.rack {
            self.retrans_fifo.push_back(seq);
        }
    }

    /// A tail loss probe resends `seq` now without counting it as a
    /// retransmission in flight (Linux `tcp_send_loss_probe` calls
    /// `__tcp_retransmit_skb`, which leaves retrans_out alone): only Karn's
    /// rule applies to its ACK.
    pub fn note_probe(&mut self, seq: u64) {
        self.seg(seq).flags |= EVER_RETRANS;
    }

    /// Linux `tcp_mark_skb_lost`: a segment in flight is lost; a lost
    /// retransmission is lost again (no longer in flight). SACKed ones stay.
    pub fn mark_lost(&mut self, seq: u64) {
        let seg = self.seg(seq);
        if seg.flags & SACKED != 0 {
            return;
        }
        let was = seg.flags;
        seg.flags = (was | LOST) & !RETRANS;
        // tp->lost counts a segment again when a retransmission is lost
        // (Linux `tcp_sum_lost`).
        if was & LOST == 0 || was & RETRANS != 0 {
            self.lost += 1;
        }
        if was & LOST == 0 {
            self.lost_out += 1;
        }
        if was & RETRANS != 0 {
            self.retrans_out -= 1;
        }
        self.note_lost(seq);
    }

    /// Segment `seq` is now lost and not retransmitted: `next_lost` must see it.
    fn note_lost(&mut self, seq: u64) {
        if seq < self.retx_hint {
            self.lost_behind.push(Reverse(seq));
        }
    }

    /// Whether `seq` (in flight or SACKed, at or above snd_una) is SACKed.
    pub fn is_sacked(&self, seq: u64) -> bool {
        self.segs[(seq - self.snd_una) as usize].flags & SACKED != 0
    }

    /// The last send time of the first unacknowledged segment (Linux
    /// `tcp_rto_delta_us` counts the RTO from it).
    pub fn head_tx_time(&self) -> Option<Time> {
        self.segs.front().map(|s| s.tx_time)
    }

    /// When segment `seq` (outstanding) last left and whether it had left
    /// before; None outside snd_una..snd_nxt.
    pub fn sent_seg(&self, seq: u64) -> Option<(Time, bool)> {
        let seg = self.segs.get(usize::try_from(seq.checked_sub(self.snd_una)?).ok()?)?;
        Some((seg.tx_time, seg.flags & EVER_RETRANS != 0))
    }

    /// The highest SACKed sequence (Linux `tcp_highest_sack_seq`), or 0.
    pub fn highest_sacked(&self) -> u64 {
        self.sacked.back().map_or(0, |r| r.1)
    }

    /// Drop cumulatively acknowledged segments; `delivered(seg, sacked)` sees each
    /// one not SACKed before. Returns how many those were (newly delivered).
    pub fn ack_cumulative(&mut self, ack: u64, delivered: &mut impl FnMut(u64, &Seg, bool)) -> u32 {
        let mut newly = 0;
        while self.snd_una < ack {
            let seg = self.segs.pop_front().expect("scoreboard shorter than window");
            if seg.flags & SACKED != 0 {
                if self.sack {
                    self.sacked_out -= 1;
                }
            } else {
                newly += 1;
                delivered(self.snd_una, &seg, false);
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
        newly
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
    pub fn count_dupacks(&mut self, acked: u64, delivered: u32) -> u32 {
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

    /// The ACK's D-SACK block, if its first block is one (RFC 2883 section 4,
    /// Linux `tcp_check_dsack`): below the cumulative ACK, or inside the
    /// second block. It reports a duplicate, not newly received data.
    pub fn dsack_block(ack: u64, blocks: &[SegRange]) -> Option<SegRange> {
        let &first = blocks.first()?;
        let inside_second = blocks.get(1).is_some_and(|b| b.0 <= first.0 && first.1 <= b.1);
        (first.0 < ack || inside_second).then_some(first)
    }

    /// Merge the ACK's SACK blocks into the scoreboard; `delivered` sees each
    /// newly SACKed segment. Returns how many those were.
    pub fn apply_sack(&mut self, blocks: &[SegRange], delivered: &mut impl FnMut(u64, &Seg, bool)) -> u32 {
        let mut newly = 0;
        for &(start, end) in blocks {
            let (start, end) = (start.max(self.snd_una), end.min(self.snd_nxt));
            if start < end {
                newly += self.merge_sack_range(start, end, delivered);
            }
        }
        newly
    }

    fn merge_sack_range(&mut self, start: u64, end: u64, delivered: &mut impl FnMut(u64, &Seg, bool)) -> u32 {
        // Ranges touching [start, end) (overlapping or adjacent) are merged into one.
        let first = self.sacked.partition_point(|r| r.1 < start);
        let last = self.sacked.partition_point(|r| r.0 <= end);
        let mut newly = 0;
        let mut cur = start;
        for i in first..last {
            let (rs, re) = self.sacked[i];
            if rs > cur {
                newly += self.mark_sacked(cur, rs.min(end), delivered);
            }
            cur = cur.max(re);
        }
        if cur < end {
            newly += self.mark_sacked(cur, end, delivered);
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

    fn mark_sacked(&mut self, start: u64, end: u64, delivered: &mut impl FnMut(u64, &Seg, bool)) -> u32 {
        for seq in start..end {
            let seg = *self.seg(seq);
            delivered(seq, &seg, true);
            self.seg(seq).flags = SACKED;
            if seg.flags & LOST != 0 {
                self.lost_out -= 1;
            }
            if seg.flags & RETRANS != 0 {
                self.retrans_out -= 1;
            }
        }
        self.sacked_out += (end - start) as u32;
        (end - start) as u32
    }

    /// RFC 6675 IsLost: a segment with at least DupThresh SACKed segments above it
    /// is lost. Segments below the DupThresh-th highest SACKed one qualify.
    pub fn mark_lost_sack(&mut self) -> u32 {
        let Some(limit) = self.lost_limit() else { return 0 };
        self.mark_lost_below(limit)
    }

    /// FACK (LossDetection::Fack): every segment below the highest SACKed one
    /// minus `gap` is lost unless SACKed, marked or retransmitted, up to
    /// `bound` (Linux `tcp_update_scoreboard` with `tcp_is_fack`: the first
    /// fackets_out - reordering segments from snd_una; fackets_out counts to
    /// the highest SACKed segment).
    pub fn mark_lost_fack(&mut self, gap: u64, bound: u64) -> u32 {
        let Some(&(_, high)) = self.sacked.back() else { return 0 };
        self.mark_lost_below(high.saturating_sub(gap).min(bound))
    }

    /// Mark lost every segment below `limit` not yet scanned that is neither
    /// SACKed, marked nor retransmitted.
    fn mark_lost_below(&mut self, limit: u64) -> u32 {
        let mut newly = 0;
        for seq in self.lost_scan.max(self.snd_una)..limit {
            let seg = self.seg(seq);
            if seg.flags & (SACKED | LOST | RETRANS) == 0 {
                seg.flags |= LOST;
                newly += 1;
                self.note_lost(seq);
            }
        }
        self.lost_out += newly;
        self.lost += newly as u64;
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

    /// A retransmission is lost when `after` segments sent after it have been
    /// SACKed: DupThresh (the idea of Linux's pre-RACK `tcp_mark_lost_retrans`
    /// without FACK), or 1 with FACK (Linux 2.6.22 and 3.16 mark it lost once
    /// the highest SACK lies beyond the snd_nxt of its sending).
    pub fn mark_lost_retrans(&mut self, after: u64) -> u32 {
        let high_sacked = self.sacked.back().map_or(0, |r| r.1);
        let mut newly = 0;
        while let Some(&seq) = self.retrans_fifo.front() {
            if seq < self.snd_una || self.seg(seq).flags & RETRANS == 0 {
                self.retrans_fifo.pop_front();
                continue;
            }
            if high_sacked < self.seg(seq).retrans_hi + after {
                break;
            }
            self.retrans_fifo.pop_front();
            self.seg(seq).flags &= !RETRANS;
            self.retrans_out -= 1;
            self.note_lost(seq);
            newly += 1;
        }
        self.lost += newly as u64;
        newly
    }

    /// NewReno (RFC 6582): the first unacknowledged segment is presumed lost.
    /// Returns whether it was newly marked.
    pub fn mark_head_lost(&mut self) -> bool {
        if self.snd_una < self.snd_nxt && self.seg(self.snd_una).flags & (SACKED | LOST | RETRANS) == 0 {
            self.seg(self.snd_una).flags |= LOST;
            self.lost_out += 1;
            self.lost += 1;
            self.note_lost(self.snd_una);
            return true;
        }
        false
    }

    /// Whether the head was last sent more than `rto` before `now` (Linux
    /// `tcp_head_timedout`).
    pub fn head_timed_out(&self, now: Time, rto: Time) -> bool {
        self.segs.front().is_some_and(|head| head.tx_time + rto < now)
    }

    /// Linux 2.6.22's timed-out-head heuristic (`tcp_update_scoreboard` with
    /// `tcp_head_timedout`): from the head, every segment last sent more than
    /// `rto` before `now` is lost unless SACKed, lost or being retransmitted;
    /// the walk stops at the first sent more recently. Returns those marked.
    pub fn mark_timed_out(&mut self, now: Time, rto: Time) -> u32 {
        let mut marked = 0;
        for seq in self.snd_una..self.snd_nxt {
            let seg = self.seg(seq);
            if seg.tx_time + rto >= now {
                break;
            }
            if seg.flags & (SACKED | LOST | RETRANS) == 0 {
                self.mark_lost(seq);
                marked += 1;
            }
        }
        marked
    }

    /// A retransmission timeout: every segment not SACKed is lost and no
    /// retransmission is in flight any more (Linux `tcp_enter_loss`).
    pub fn mark_all_lost(&mut self) {
        if !self.sack {
            self.sacked_out = 0;
        }
        let mut lost = 0;
        for seg in self.segs.iter_mut() {
            if seg.flags & SACKED == 0 {
                // Counted again only if not lost or since retransmitted
                // (Linux `tcp_sum_lost`).
                if seg.flags & (LOST | RETRANS) != LOST {
                    self.lost += 1;
                }
                // Linux keeps TCPCB_EVER_RETRANS (Karn's rule, F-RTO's test
                // for original data).
                seg.flags = LOST | (seg.flags & EVER_RETRANS);
                lost += 1;
            }
        }
        self.lost_out = lost;
        self.retrans_out = 0;
        self.retrans_fifo.clear();
        self.retx_hint = self.snd_una;
        self.lost_behind.clear();
        self.lost_scan = self.snd_nxt;
    }

    /// Retransmissions in flight (Linux retrans_out).
    pub fn retrans_out(&self) -> u32 {
        self.retrans_out
    }

    /// Whether a segment still outstanding was retransmitted: ever (`ever`,
    /// Linux 2.6.22's TCPCB_RETRANS test in `tcp_enter_loss`) or with the
    /// retransmission still in flight (3.16's TCPCB_SACKED_RETRANS).
    pub fn any_retransmitted(&self, ever: bool) -> bool {
        let flag = if ever { EVER_RETRANS | RETRANS } else { RETRANS };
        self.segs.iter().any(|s| s.flags & flag != 0)
    }

    /// Whether `seq` (in flight or SACKed) was ever retransmitted.
    pub fn ever_retransmitted(&self, seq: u64) -> bool {
        self.segs[(seq - self.snd_una) as usize].flags & EVER_RETRANS != 0
    }

    /// An undo after a timeout (Linux `tcp_try_undo_loss`): nothing is lost
    /// any more. Linux keeps counting the retransmissions in flight on top of
    /// their originals; here a retransmitted segment is in flight once.
    pub fn unmark_lost(&mut self) {
        for seg in self.segs.iter_mut() {
            seg.flags &= !(LOST | RETRANS);
        }
        self.lost_out = 0;
        self.retrans_out = 0;
        self.retrans_fifo.clear();
        self.lost_behind.clear();
        self.retx_hint = self.snd_nxt;
    }

    /// RFC 6675 NextSeg rule 1: the lowest lost segment not yet retransmitted.
    /// Amortised O(1): the frontier only moves forward (until a timeout), and
    /// what is marked lost behind it comes from the heap.
    pub fn next_lost(&mut self) -> Option<u64> {
        if self.lost_out == self.retrans_out {
            self.lost_behind.clear();
            return None;
        }
        while let Some(&Reverse(seq)) = self.lost_behind.peek() {
            if seq >= self.snd_una && self.seg(seq).flags & (LOST | RETRANS) == LOST {
                return Some(seq);
            }
            self.lost_behind.pop();
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

    /// The transfer is over: give the memory back (a web-like run finishes 10^5 flows).
    pub fn release(&mut self) {
        self.segs = VecDeque::new();
        self.sacked = VecDeque::new();
        self.retrans_fifo = VecDeque::new();
        self.lost_behind = BinaryHeap::new();
    }

    /// Check the entries against the counters (used by tests).
    pub fn check_invariants(&self) -> Result<(), String> {
        let count = |f: u8| self.segs.iter().filter(|s| s.flags & f != 0).count() as u32;
        if self.segs.iter().any(|s| s.flags & SACKED != 0 && s.flags & (LOST | RETRANS) != 0) {
            return Err("a SACKed segment is still marked lost or retransmitted".into());
        }
        if self.segs.len() as u64 != self.packets_out() {
            return Err("scoreboard length != packets_out".into());
        }
        if self.sack && count(SACKED) != self.sacked_out {
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
    use crate::net::packet::MAX_SACK_BLOCKS;

    /// `n` segments sent with SACK.
    fn sent(n: u64) -> Scoreboard {
        let mut b = Scoreboard::new(true, n);
        for _ in 0..n {
            b.push_new();
        }
        b
    }

    fn sack(b: &mut Scoreboard, blocks: &[SegRange]) -> u32 {
        b.apply_sack(blocks, &mut |_, _, _| {})
    }

    #[test]
    fn is_lost_needs_dupthresh_sacked_segments_above() {
        let mut b = sent(10);
        // Two SACKed above the hole at 0: not yet lost (RFC 6675 IsLost, DupThresh 3).
        assert_eq!(sack(&mut b, &[(1, 3)]), 2);
        assert_eq!(b.mark_lost_sack(), 0);
        assert_eq!(b.in_flight(), 8);
        // A third, above a second hole at 3: 0 has 1, 2 and 4 above it, 3 only 4.
        sack(&mut b, &[(4, 5)]);
        assert_eq!(b.mark_lost_sack(), 1);
        assert_eq!((b.sacked_out, b.lost_out), (3, 1));
        assert_eq!(b.in_flight(), 10 - 3 - 1);
        // Two more above 3: now it is lost too.
        sack(&mut b, &[(4, 7)]);
        assert_eq!(b.mark_lost_sack(), 1);
        assert_eq!((b.sacked_out, b.lost_out), (5, 2));
        assert_eq!(b.next_lost(), Some(0));
        b.check_invariants().unwrap();
    }

    /// Sparse SACKs: 0, 2 and 4 lost, 1, 3 and 5 SACKed. RFC 6675 marks 0 only
    /// (three SACKed above it); FACK marks what lies more than 3 below the
    /// highest SACKed (6): 0 and 2 (Linux), 0 only with ns-2's gap of 4; a
    /// bound at 1 (2.6.22's recovery point) stops it there.
    #[test]
    fn fack_marks_by_distance_from_the_highest_sack() {
        let blocks = [(1, 2), (3, 4), (5, 6)];
        for (gap, bound, want) in [(3, 6, 2), (4, 6, 1), (3, 1, 1)] {
            let mut b = sent(6);
            sack(&mut b, &blocks);
            assert_eq!(b.mark_lost_fack(gap, bound), want, "gap {gap} bound {bound}");
            assert_eq!(lowest_lost(&b), Some(0));
            b.check_invariants().unwrap();
        }
        let mut b = sent(6);
        sack(&mut b, &blocks);
        assert_eq!(b.mark_lost_sack(), 1);
    }

    /// FACK's lost retransmission: one segment sent after it SACKed is enough.
    #[test]
    fn fack_finds_a_lost_retransmission_after_one_later_sack() {
        let mut b = sent(10);
        sack(&mut b, &[(1, 5)]);
        assert_eq!(b.mark_lost_fack(3, 10), 1);
        b.note_retransmit(0); // retrans_hi = snd_nxt = 10
        b.push_new();
        sack(&mut b, &[(10, 11)]);
        assert_eq!(b.mark_lost_retrans(DUP_THRESH), 0, "one segment sent after it SACKed");
        assert_eq!(b.mark_lost_retrans(1), 1);
        assert_eq!(b.next_lost(), Some(0), "to be retransmitted again");
        b.check_invariants().unwrap();
    }

    #[test]
    fn sack_blocks_merge_and_count_each_segment_once() {
        let mut b = sent(20);
        assert_eq!(sack(&mut b, &[(2, 4), (8, 10)]), 4);
        // Overlapping and bridging blocks: only 4..8 and 10..11 are new.
        assert_eq!(sack(&mut b, &[(3, 9), (9, 11)]), 5);
        assert_eq!(b.sacked, VecDeque::from([(2, 11)]));
        assert_eq!(b.sacked_out, 9);
        b.check_invariants().unwrap();
    }

    #[test]
    fn a_retransmission_is_lost_when_dupthresh_later_segments_are_sacked() {
        let mut b = sent(10);
        sack(&mut b, &[(1, 4)]);
        b.mark_lost_sack();
        b.note_retransmit(0); // retrans_hi = snd_nxt = 10
        for _ in 0..3 {
            b.push_new();
        }
        assert_eq!((b.in_flight(), b.next_lost()), (10 + 3 - 3 - 1 + 1, None));
        sack(&mut b, &[(10, 12)]);
        assert_eq!(b.mark_lost_retrans(DUP_THRESH), 0, "two segments sent after it SACKed");
        sack(&mut b, &[(10, 13)]);
        assert_eq!(b.mark_lost_retrans(DUP_THRESH), 1);
        assert_eq!(b.next_lost(), Some(0), "to be retransmitted again");
        b.check_invariants().unwrap();
    }

    #[test]
    fn without_sack_dupacks_count_as_sacked_and_a_cumulative_ack_takes_them_back() {
        let mut b = Scoreboard::new(false, 10);
        for _ in 0..10 {
            b.push_new();
        }
        for _ in 0..3 {
            assert_eq!(b.count_dupacks(0, 0), 1);
        }
        b.mark_head_lost();
        assert_eq!((b.sacked_out, b.lost_out, b.next_lost()), (3, 1, Some(0)));
        // An ACK for 5 segments: 4 of the 5 were already counted by the dupACKs
        // (the head was not), capped by sacked_out = 3.
        let newly = b.ack_cumulative(5, &mut |_, _, _| {});
        assert_eq!((newly, b.count_dupacks(5, newly)), (5, 2));
        assert_eq!((b.sacked_out, b.lost_out), (0, 0));
    }

    #[test]
    fn a_timeout_marks_everything_not_sacked_lost() {
        let mut b = sent(6);
        sack(&mut b, &[(2, 3)]);
        b.mark_all_lost();
        assert_eq!((b.lost_out, b.in_flight(), b.next_lost()), (5, 0, Some(0)));
        b.check_invariants().unwrap();
    }

    /// Issue 29: a lost retransmission of the head must not pull the scan
    /// frontier back to snd_una (each re-loss then rescanned the window).
    #[test]
    fn a_lost_retransmission_of_the_head_keeps_the_scan_frontier() {
        let n = 1000;
        let mut b = sent(n);
        // Every even segment is a hole below SACKed odd ones: all lost.
        let odd: Vec<SegRange> = (0..n / 2).map(|i| (2 * i + 1, 2 * i + 2)).collect();
        for chunk in odd.chunks(MAX_SACK_BLOCKS) {
            sack(&mut b, chunk);
        }
        assert_eq!(b.mark_lost_sack(), (n / 2 - 2) as u32, "the holes at n - 4 and n - 2 have 2 and 1 SACKed above");
        while let Some(seq) = b.next_lost() {
            b.note_retransmit(seq);
        }
        let frontier = b.retx_hint;
        assert_eq!(frontier, n - 6, "at the last hole retransmitted");
        for round in 0..3 {
            // Three segments sent after the head's retransmission are SACKed.
            let hi = b.snd_nxt;
            for _ in 0..3 {
                b.push_new();
            }
            sack(&mut b, &[(hi, hi + 3)]);
            assert!(b.mark_lost_retrans(DUP_THRESH) >= 1, "round {round}");
            assert_eq!(b.next_lost(), Some(0), "round {round}");
            assert_eq!(b.retx_hint, frontier, "round {round}: frontier pulled back");
            while let Some(seq) = b.next_lost() {
                b.note_retransmit(seq);
            }
            b.check_invariants().unwrap();
        }
    }

    /// The lowest lost, not-yet-retransmitted segment, by brute force.
    fn lowest_lost(b: &Scoreboard) -> Option<u64> {
        let pos = b.segs.iter().position(|s| s.flags & (LOST | RETRANS) == LOST)?;
        Some(b.snd_una + pos as u64)
    }

    proptest::proptest! {
        /// `next_lost` (frontier plus heap) agrees with a scan from snd_una
        /// after any sequence of sends, SACKs, loss marks, retransmissions,
        /// cumulative ACKs and timeouts.
        #[test]
        fn next_lost_is_the_lowest_lost_segment_not_retransmitted(
            ops in proptest::collection::vec((0u8..8, 0u64..40, 1u64..6), 1..120),
        ) {
            let mut b = sent(20);
            for (op, at, len) in ops {
                let span = b.packets_out();
                let seq = b.snd_una + at % span.max(1);
                match op {
                    0 => { b.push_new(); }
                    1 if span > 0 => { sack(&mut b, &[(seq, seq + len)]); }
                    2 => { b.mark_lost_sack(); }
                    3 => { b.mark_lost_retrans(DUP_THRESH); }
                    4 if span > 0 => b.mark_lost(seq),
                    5 => { b.mark_head_lost(); }
                    6 if span > 0 => { b.ack_cumulative(seq + 1, &mut |_, _, _| {}); }
                    7 if at == 0 => b.mark_all_lost(),
                    _ => {
                        if let Some(seq) = b.next_lost() {
                            b.note_retransmit(seq);
                        }
                    }
                }
                proptest::prop_assert_eq!(b.next_lost(), lowest_lost(&b));
                proptest::prop_assert_eq!(b.check_invariants(), Ok(()));
            }
        }
    }

    /// RFC 2883 section 4: a first block below the cumulative ACK (4) or
    /// inside the second block is a D-SACK; otherwise it is ordinary.
    #[test]
    fn a_dsack_is_a_first_block_below_the_ack_or_inside_the_second() {
        assert_eq!(Scoreboard::dsack_block(4, &[(2, 3), (6, 7)]), Some((2, 3)));
        assert_eq!(Scoreboard::dsack_block(4, &[(6, 7), (5, 8)]), Some((6, 7)));
        assert_eq!(Scoreboard::dsack_block(4, &[(5, 8), (5, 8)]), Some((5, 8)));
        assert_eq!(Scoreboard::dsack_block(4, &[(6, 7), (9, 10)]), None);
        assert_eq!(Scoreboard::dsack_block(4, &[(5, 9), (6, 7)]), None, "second inside the first");
        assert_eq!(Scoreboard::dsack_block(4, &[(4, 5)]), None);
        assert_eq!(Scoreboard::dsack_block(4, &[]), None);
    }
}
