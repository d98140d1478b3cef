//! Output queues: a limit in packets or bytes and a discipline: DropTail or RED
//! (admission policies on a FIFO), CoDel (net/codel.rs, drops at the head), PIE
//! (net/pie.rs), step marking (net/step.rs) or FQ-CoDel (net/fq_codel.rs, its
//! own flow queues). Occupancy is integrated exactly over time, so mean queue
//! length costs O(1) per packet.

use super::codel::{CodelParams, CodelSource, CodelVars};
use super::fq_codel::FqCodel;
use super::packet::{Kind, Packet};
use super::pie::{Pie, Verdict};
use super::step::Step;
use crate::rng::Rng;
use crate::time::Time;
use std::collections::VecDeque;

/// A buffer limit: in packets (like Linux pfifo / ns-2 queue limits) or bytes (bfifo).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    Packets(u64),
    Bytes(u64),
}

#[derive(Debug, Default, Clone, Copy)]
pub struct QueueStats {
    pub arrivals: u64,
    /// Drops of every cause at this queue (overflow and early).
    pub drops: u64,
    /// Of which the AQM's own: RED's early (probabilistic or forced) drops,
    /// CoDel's and FQ-CoDel's head drops, PIE's early drops.
    pub early_drops: u64,
    /// Packets marked CE instead of dropped (RFC 3168 section 5), or by step
    /// marking.
    pub marks: u64,
    /// Of the drops, TCP data packets and their payload bytes (for the
    /// simulation's conservation check).
    pub data_drops: u64,
    pub data_drop_bytes: u64,
    pub max_pkts: u64,
    /// Integral of queue length over time, in packet-ns and byte-ns.
    pub area_pkts: f64,
    pub area_bytes: f64,
}

impl QueueStats {
    /// Count a dropped packet (`early`: by the AQM, not for lack of room).
    pub(crate) fn count_drop(&mut self, p: &Packet, early: bool) {
        self.drops += 1;
        self.early_drops += early as u64;
        if p.kind == Kind::Data {
            self.data_drops += 1;
            self.data_drop_bytes += p.payload as u64;
        }
    }
}

/// Random Early Detection (Floyd & Jacobson, ToN 1993) with the "gentle"
/// variant (Floyd 2000): thresholds and average in packets.
#[derive(Clone, Debug)]
pub struct Red {
    pub min_th: f64,
    pub max_th: f64,
    /// EWMA weight of the average queue (the paper's w_q).
    pub w_q: f64,
    pub max_p: f64,
    pub gentle: bool,
    /// Transmission time of a typical packet, to age the average over idle time.
    pub pkt_time: Time,
    avg: f64,
    /// Packets since the last drop (the paper's `count`; -1 below min_th).
    count: i64,
    idle_since: Option<Time>,
    /// Linux sch_red's `ecn` flag: mark ECN-capable packets CE instead of an
    /// early drop; with `harddrop` too, drop them all the same where the
    /// average is past the ramp (RED_HARD_MARK).
    pub ecn: bool,
    pub harddrop: bool,
    /// The last early verdict came from past the ramp (p_b = 1).
    hard: bool,
    /// ns-2's arrival rules (`RedVariant::Ns2`, queue/red.cc `REDQueue::enque`).
    pub ns2: bool,
}

impl Red {
    pub fn new(min_th: f64, max_th: f64, w_q: f64, max_p: f64, gentle: bool, pkt_time: Time) -> Self {
        let (ecn, harddrop, hard) = (false, false, false);
        Red { min_th, max_th, w_q, max_p, gentle, pkt_time: pkt_time.max(1), avg: 0.0, count: -1, idle_since: Some(0), ecn, harddrop, hard, ns2: false }
    }

    pub fn avg(&self) -> f64 {
        self.avg
    }

    /// Update the average with the queue length seen by an arrival and decide
    /// whether to drop it (section 11 of the paper, with the gentle ramp from
    /// max_p at max_th to 1 at 2 max_th).
    ///
    /// With `ns2`, ns-2.35's rules (queue/red.cc `REDQueue::enque` and
    /// `estimator`): the idle decay counts one more packet (m + 1), no early
    /// drop while at most one packet waits (`qlen > 1`), and the first arrival
    /// after the average crosses min_th (or after such an empty spell) only
    /// starts the count at 1 (`edv_.old`); forced drops past the ramp still go.
    fn drop_arrival(&mut self, qlen: usize, now: Time, rng: &mut Rng) -> bool {
        match self.idle_since.take() {
            Some(t) if qlen == 0 => {
                let m = (now.saturating_sub(t) / self.pkt_time) as f64 + self.ns2 as u8 as f64;
                self.avg *= (1.0 - self.w_q).powf(m);
            }
            _ => self.avg += self.w_q * (qlen as f64 - self.avg),
        }
        if self.ns2 && self.ns2_holds(qlen) {
            return false;
        }
        let p_b = if self.avg < self.min_th {
            self.count = -1;
            return false;
        } else if self.avg < self.max_th {
            self.max_p * (self.avg - self.min_th) / (self.max_th - self.min_th)
        } else if self.gentle && self.avg < 2.0 * self.max_th {
            self.max_p + (1.0 - self.max_p) * (self.avg - self.max_th) / self.max_th
        } else {
            1.0
        };
        self.count += 1;
        let denom = 1.0 - self.count as f64 * p_b;
        let p_a = if denom <= 0.0 { 1.0 } else { (p_b / denom).min(1.0) };
        self.hard = p_b >= 1.0;
        if p_b >= 1.0 || rng.uniform() < p_a {
            self.count = 0;
            return true;
        }
        false
    }

    /// ns-2's conditions for no drop at all: the average below min_th or at
    /// most one packet waiting (the count stops), or the first arrival of a
    /// spell above min_th (the count starts at 1), unless the drop is forced.
    fn ns2_holds(&mut self, qlen: usize) -> bool {
        if self.avg < self.min_th || qlen <= 1 {
            self.count = -1;
            return true;
        }
        let forced = if self.gentle { self.avg >= 2.0 * self.max_th } else { self.avg >= self.max_th };
        if self.count < 0 && !forced {
            self.count = 1;
            return true;
        }
        false
    }

    /// Linux `red_enqueue` (net/sched/sch_red.c, 6.6) on an early verdict
    /// with the `ecn` flag: RED_PROB_MARK, and RED_HARD_MARK unless
    /// `harddrop`, set CE on an ECN-capable packet and keep it; true if so.
    fn mark_instead(&self, p: &mut Packet) -> bool {
        self.ecn && !(self.harddrop && self.hard) && p.mark_ce()
    }
}

/// CoDel over the queue's FIFO.
#[derive(Clone, Debug)]
pub struct Codel {
    pub params: CodelParams,
    pub vars: CodelVars,
}

/// What a queue does with a packet that finds it empty and the line free.
pub enum Bypass {
    /// Send the packet as offered.
    Send,
    /// Send this one instead (marked CE, or what the discipline gave out).
    SendThis(Packet),
    /// The discipline dropped it.
    Drop,
}

pub enum Discipline {
    DropTail,
    Red(Red),
    Codel(Codel),
    Pie(Box<Pie>),
    Step(Step),
    FqCodel(Box<FqCodel>),
}

pub struct Queue {
    limit: Limit,
    pub discipline: Discipline,
    /// The FIFO of every discipline but FQ-CoDel, with enqueue times.
    pkts: VecDeque<(Time, Packet)>,
    bytes: u64,
    last_change: Time,
    pub stats: QueueStats,
}

/// The FIFO as CoDel sees it.
struct FifoSource<'a> {
    pkts: &'a mut VecDeque<(Time, Packet)>,
    bytes: &'a mut u64,
    stats: &'a mut QueueStats,
}

impl CodelSource for FifoSource<'_> {
    fn pop(&mut self) -> Option<(Time, Packet)> {
        let head = self.pkts.pop_front()?;
        *self.bytes -= head.1.wire_bytes as u64;
        Some(head)
    }
    fn backlog(&self) -> u64 {
        *self.bytes
    }
    fn dropped(&mut self, p: &Packet) {
        self.stats.count_drop(p, true);
    }
    fn marked(&mut self) {
        self.stats.marks += 1;
    }
}

impl Queue {
    pub fn new(limit: Limit, discipline: Discipline) -> Self {
        Queue { limit, discipline, pkts: VecDeque::new(), bytes: 0, last_change: 0, stats: QueueStats::default() }
    }

    pub fn drop_tail(limit: Limit) -> Self {
        Queue::new(limit, Discipline::DropTail)
    }

    pub fn len(&self) -> usize {
        match &self.discipline {
            Discipline::FqCodel(fq) => fq.len(),
            _ => self.pkts.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn bytes(&self) -> u64 {
        match &self.discipline {
            Discipline::FqCodel(fq) => fq.bytes(),
            _ => self.bytes,
        }
    }

    /// Packets the buffer has room for before it must grow.
    pub fn reserved_packets(&self) -> usize {
        match &self.discipline {
            Discipline::FqCodel(fq) => fq.reserved_packets(),
            _ => self.pkts.capacity(),
        }
    }

    /// Give the packet buffer's memory back if the queue is empty (FQ-CoDel
    /// keeps its slab).
    pub fn release_if_empty(&mut self) {
        if self.pkts.is_empty() {
            self.pkts = VecDeque::new();
        }
    }

    /// Room for `n` more full packets of `bytes` each?
    pub fn has_room(&self, bytes: u32) -> bool {
        match self.limit {
            Limit::Packets(n) => (self.len() as u64) < n,
            Limit::Bytes(b) => self.bytes() + bytes as u64 <= b,
        }
    }

    /// Free slots for full-size packets.
    pub fn free_packets(&self) -> u64 {
        match self.limit {
            Limit::Packets(n) => n.saturating_sub(self.len() as u64),
            Limit::Bytes(b) => b.saturating_sub(self.bytes()) / crate::consts::MTU_BYTES as u64,
        }
    }

    /// Bring the occupancy integrals up to `now`.
    pub fn advance(&mut self, now: Time) {
        self.advance_by(now, self.len(), self.bytes());
    }

    /// `advance` with the occupancy known (the FIFO's, on DropTail's fast path).
    fn advance_by(&mut self, now: Time, len: usize, bytes: u64) {
        let dt = now.saturating_sub(self.last_change) as f64;
        self.stats.area_pkts += dt * len as f64;
        self.stats.area_bytes += dt * bytes as f64;
        self.last_change = now;
    }

    /// Put an admitted packet at the FIFO's tail.
    fn push_fifo(&mut self, p: &Packet, now: Time) {
        self.advance_by(now, self.pkts.len(), self.bytes);
        self.bytes += p.wire_bytes as u64;
        self.pkts.push_back((now, *p));
        self.stats.max_pkts = self.stats.max_pkts.max(self.pkts.len() as u64);
    }

    /// The admission policy of DropTail and RED on an arrival (RED sees every
    /// arrival, even one that finds the queue empty and goes straight to the wire).
    fn admit(&mut self, p: &mut Packet, now: Time, rng: &mut Rng) -> bool {
        self.stats.arrivals += 1;
        if let Discipline::Red(red) = &mut self.discipline {
            if red.drop_arrival(self.pkts.len(), now, rng) {
                if red.mark_instead(p) {
                    self.stats.marks += 1;
                    return true;
                }
                self.stats.count_drop(p, true);
                return false;
            }
        }
        true
    }

    /// A packet that finds the queue empty and the line free: the packet to
    /// send now, if the discipline lets it through. DropTail and RED only
    /// judge it; the others take it in and give it out at once, so their
    /// state sees it (a zero sojourn time, a new FQ-CoDel flow's credit).
    ///
    /// DropTail sends `p` as it is, so nothing is copied here: a copy the
    /// compiler splits into fields is written in pieces that the link's copy
    /// into its pipe then reads whole, a store forwarding stall (issue 29).
    pub fn bypass(&mut self, p: &Packet, now: Time, rng: &mut Rng) -> Bypass {
        if matches!(self.discipline, Discipline::DropTail) {
            self.stats.arrivals += 1;
            return Bypass::Send;
        }
        self.bypass_aqm(p, now, rng)
    }

    /// `bypass` for the other disciplines: the packet they give out, if any
    /// (RED's CE mark, or whatever the discipline dequeues).
    #[inline(never)]
    fn bypass_aqm(&mut self, p: &Packet, now: Time, rng: &mut Rng) -> Bypass {
        let mut p = *p;
        let send = match self.discipline {
            Discipline::Red(_) => self.admit(&mut p, now, rng),
            _ => {
                self.enqueue(&p, now, rng);
                self.dequeue(now).map(|q| p = q).is_some()
            }
        };
        if send {
            Bypass::SendThis(p)
        } else {
            Bypass::Drop
        }
    }

    /// Enqueue at the tail; returns false (and counts a drop) when the policy or
    /// the buffer limit refuses the packet.
    pub fn enqueue(&mut self, p: &Packet, now: Time, rng: &mut Rng) -> bool {
        // DropTail, the common case, skips the disciplines' matches (issue 29).
        if !matches!(self.discipline, Discipline::DropTail) {
            return self.enqueue_aqm(*p, now, rng);
        }
        self.stats.arrivals += 1;
        if !self.has_room(p.wire_bytes) {
            self.stats.count_drop(p, false);
            return false;
        }
        self.push_fifo(p, now);
        true
    }

    /// `enqueue` for the disciplines other than DropTail.
    #[inline(never)]
    fn enqueue_aqm(&mut self, mut p: Packet, now: Time, rng: &mut Rng) -> bool {
        match self.discipline {
            Discipline::DropTail | Discipline::Red(_) => {
                if !self.admit(&mut p, now, rng) {
                    return false;
                }
            }
            Discipline::FqCodel(_) => return self.enqueue_fq(p, now),
            _ => self.stats.arrivals += 1,
        }
        let room = self.has_room(p.wire_bytes);
        match &mut self.discipline {
            Discipline::DropTail | Discipline::Red(_) | Discipline::Codel(_) => {}
            Discipline::Step(step) => {
                if room && step.on_arrival(&mut p, self.pkts.len(), self.bytes) {
                    self.stats.marks += 1;
                }
            }
            Discipline::Pie(pie) => {
                pie.catch_up(now, self.bytes);
                match pie.on_arrival(&mut p, self.bytes, !room, rng) {
                    Verdict::Drop => {
                        self.stats.count_drop(&p, room);
                        return false;
                    }
                    Verdict::Marked => self.stats.marks += 1,
                    Verdict::Enqueue => {}
                }
            }
            Discipline::FqCodel(_) => unreachable!("FQ-CoDel enqueues in enqueue_fq"),
        }
        if !room {
            self.stats.count_drop(&p, false);
            return false;
        }
        self.push_fifo(&p, now);
        true
    }

    /// FQ-CoDel takes every arrival; over the limit it drops from its fattest
    /// flow instead (net/fq_codel.rs).
    fn enqueue_fq(&mut self, p: Packet, now: Time) -> bool {
        self.stats.arrivals += 1;
        self.advance(now);
        if let Discipline::FqCodel(fq) = &mut self.discipline {
            fq.enqueue(p, now, self.limit, &mut self.stats);
            self.stats.max_pkts = self.stats.max_pkts.max(fq.len() as u64);
        }
        true
    }

    /// Data packets and payload bytes queued (for conservation checks).
    pub fn data_queued(&self) -> (u64, u64) {
        if let Discipline::FqCodel(fq) = &self.discipline {
            return fq.data_queued();
        }
        let data = self.pkts.iter().filter(|(_, p)| p.kind == Kind::Data);
        data.fold((0, 0), |(n, b), (_, p)| (n + 1, b + p.payload as u64))
    }

    /// The next packet to send (CoDel may drop some before it).
    pub fn dequeue(&mut self, now: Time) -> Option<Packet> {
        if !matches!(self.discipline, Discipline::DropTail) {
            return self.dequeue_aqm(now);
        }
        self.advance_by(now, self.pkts.len(), self.bytes);
        // Copied through a reference, then popped: popping the Option makes
        // the compiler copy the packet's tail in pieces, which the caller then
        // reads whole, a store forwarding stall (perf annotate, issue 29).
        let p = self.pkts.front()?.1;
        self.pkts.pop_front();
        self.bytes -= p.wire_bytes as u64;
        Some(p)
    }

    /// `dequeue` for the other disciplines.
    #[inline(never)]
    fn dequeue_aqm(&mut self, now: Time) -> Option<Packet> {
        self.advance(now);
        match &mut self.discipline {
            Discipline::Codel(c) => {
                let mut src = FifoSource { pkts: &mut self.pkts, bytes: &mut self.bytes, stats: &mut self.stats };
                return c.vars.dequeue(&c.params, &mut src, now);
            }
            Discipline::FqCodel(fq) => return fq.dequeue(now, &mut self.stats),
            Discipline::Pie(pie) => pie.catch_up(now, self.bytes),
            _ => {}
        }
        let (enqueued, p) = self.pkts.pop_front()?;
        self.bytes -= p.wire_bytes as u64;
        match &mut self.discipline {
            Discipline::Red(red) if self.pkts.is_empty() => red.idle_since = Some(now),
            Discipline::Pie(pie) => pie.on_departure(enqueued, self.bytes, now),
            _ => {}
        }
        Some(p)
    }

    /// RED's average queue, if this is a RED queue.
    pub fn red_avg(&self) -> Option<f64> {
        match &self.discipline {
            Discipline::Red(r) => Some(r.avg()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::Packet;

    fn pkt(bytes: u32) -> Packet {
        Packet::data(0, 0, 0, bytes.saturating_sub(52), bytes, 0)
    }

    fn rng() -> Rng {
        Rng::new(1, 1)
    }

    #[test]
    fn packet_limit_drops_the_overflow() {
        let mut q = Queue::drop_tail(Limit::Packets(2));
        let r = &mut rng();
        assert!(q.enqueue(&pkt(1500), 0, r));
        assert!(q.enqueue(&pkt(1500), 0, r));
        assert!(!q.enqueue(&pkt(1500), 0, r));
        assert_eq!((q.len(), q.stats.arrivals, q.stats.drops), (2, 3, 1));
    }

    #[test]
    fn byte_limit_counts_wire_bytes() {
        let mut q = Queue::drop_tail(Limit::Bytes(3000));
        let r = &mut rng();
        assert!(q.enqueue(&pkt(1500), 0, r));
        assert!(q.enqueue(&pkt(1500), 0, r));
        assert!(!q.enqueue(&pkt(100), 0, r));
        q.dequeue(0);
        assert!(q.enqueue(&pkt(100), 0, r));
        assert_eq!(q.bytes(), 1600);
    }

    #[test]
    fn occupancy_integral_is_time_weighted() {
        let mut q = Queue::drop_tail(Limit::Packets(10));
        let r = &mut rng();
        q.enqueue(&pkt(1500), 0, r);
        q.enqueue(&pkt(1500), 10, r); // 1 pkt for 10 ns
        q.dequeue(30); // 2 pkts for 20 ns
        q.advance(40); // 1 pkt for 10 ns
        assert_eq!(q.stats.area_pkts, 10.0 + 40.0 + 10.0);
    }

    #[test]
    fn red_average_is_an_ewma_of_arrival_queue_lengths() {
        let mut red = Red::new(5.0, 15.0, 0.5, 0.1, true, 1000);
        let r = &mut rng();
        red.idle_since = None;
        assert!(!red.drop_arrival(4, 0, r)); // avg = 0.5 * 4 = 2
        assert!(!red.drop_arrival(4, 0, r)); // avg = 2 + 0.5 * 2 = 3
        assert_eq!(red.avg(), 3.0);
    }

    #[test]
    fn red_drops_nothing_below_min_and_everything_above_twice_max_when_gentle() {
        let r = &mut rng();
        let mut red = Red::new(5.0, 15.0, 1.0, 0.1, true, 1000);
        red.idle_since = None;
        assert!((0..100).all(|_| !red.drop_arrival(4, 0, r)));
        assert!((0..100).all(|_| red.drop_arrival(30, 0, r)));
        let mut hard = Red::new(5.0, 15.0, 1.0, 0.1, false, 1000);
        hard.idle_since = None;
        assert!(hard.drop_arrival(16, 0, r), "non-gentle RED drops all above max_th");
    }

    /// ns-2's rules: a high average with one packet waiting drops nothing;
    /// the first arrival of the spell only starts the count; the next is
    /// dropped with p_b / (1 - 2 p_b) (count 2), here p_b = max_p = 1 at
    /// max_th, so surely. Floyd's RED drops the first already.
    #[test]
    fn red_ns2_spares_a_near_empty_queue_and_the_spell_s_first_arrival() {
        let r = &mut Rng::new(1, 0);
        let fresh = |ns2| {
            let mut red = Red::new(5.0, 15.0, 1.0, 1.0, false, 1000);
            (red.idle_since, red.ns2) = (None, ns2);
            red
        };
        let mut ns2 = fresh(true);
        assert!(!ns2.drop_arrival(1, 0, r), "one packet waiting");
        assert!(!ns2.drop_arrival(14, 0, r), "the spell's first arrival");
        assert!(ns2.drop_arrival(14, 0, r));
        assert!(ns2.drop_arrival(20, 0, r), "forced past max_th");
        let mut floyd = fresh(false);
        assert!(floyd.drop_arrival(14, 0, r));
        let mut idle = fresh(true);
        idle.avg = 8.0;
        idle.idle_since = Some(0);
        idle.w_q = 0.5;
        assert!(!idle.drop_arrival(0, 2500, r));
        assert_eq!(idle.avg(), 8.0 / 8.0, "two packet times idle decay three steps");
    }

    #[test]
    fn red_drop_rate_between_thresholds_follows_max_p() {
        // avg pinned at the midpoint: p_b = 0.05; with the count correction the
        // gap between drops is uniform on 1..1/p_b, so the drop rate is about
        // 2 p_b / (1 + p_b) = 0.095 (Floyd & Jacobson section 7).
        let r = &mut rng();
        let mut red = Red::new(5.0, 15.0, 1.0, 0.1, true, 1000);
        red.idle_since = None;
        let n = 100_000;
        let drops = (0..n).filter(|_| red.drop_arrival(10, 0, r)).count() as f64 / n as f64;
        assert!((drops - 0.0952).abs() < 0.005, "drop rate {drops}");
    }

    /// Linux sch_red with `ecn`: on the ramp an ECT packet is marked CE and
    /// kept, so ECT traffic sees no drop below the limit; past max_th (the
    /// hard region) it is marked too unless `harddrop`; Not-ECT is dropped.
    #[test]
    fn red_with_ecn_marks_ect_packets_instead_of_dropping() {
        let r = &mut rng();
        let ect = || {
            let mut p = pkt(1500);
            p.ecn = crate::net::packet::Ecn::Ect0;
            p
        };
        let red = |max_p, harddrop| {
            let mut red = Red::new(5.0, 15.0, 1.0, max_p, false, 1000);
            (red.ecn, red.harddrop, red.idle_since) = (true, harddrop, None);
            Queue::new(Limit::Packets(100), Discipline::Red(red))
        };
        let mut ramp = red(1.0, false);
        for _ in 0..100 {
            assert!(ramp.enqueue(&ect(), 0, r));
        }
        assert_eq!((ramp.len(), ramp.stats.drops), (100, 0));
        assert!(ramp.stats.marks > 50, "{} marks", ramp.stats.marks);
        // max_p ~ 0: the ramp lets everything in, past max_th all is dropped.
        let mut q = red(1e-9, false);
        for _ in 0..100 {
            q.enqueue(&pkt(1500), 0, r);
        }
        assert_eq!((q.len(), q.stats.early_drops, q.stats.marks), (15, 85, 0));
        assert!(q.enqueue(&ect(), 0, r), "past max_th an ECT packet is marked and kept");
        assert_eq!((q.len(), q.stats.marks), (16, 1));
        assert_eq!(q.pkts.back().unwrap().1.ecn, crate::net::packet::Ecn::Ce);
        let mut hard = red(1e-9, true);
        for _ in 0..100 {
            hard.enqueue(&ect(), 0, r);
        }
        assert_eq!((hard.len(), hard.stats.early_drops, hard.stats.marks), (15, 85, 0), "harddrop");
    }

    #[test]
    fn red_average_decays_over_idle_time() {
        let r = &mut rng();
        let mut red = Red::new(5.0, 15.0, 0.5, 0.1, true, 100);
        red.idle_since = None;
        red.drop_arrival(8, 0, r); // avg 4
        red.idle_since = Some(0);
        red.drop_arrival(0, 200, r); // two packet times idle: 4 * 0.25
        assert_eq!(red.avg(), 1.0);
    }
}
