//! FQ-CoDel (RFC 8290) as Linux runs it, net/sched/sch_fq_codel.c (Linux v6.6;
//! read at torvalds/linux 010e85f9): packets hashed into `flows` queues (1024 by
//! default), each under its own CoDel (net/codel.rs), served by deficit round
//! robin with `quantum` bytes per turn (one MTU), new flows before old ones;
//! over the limit, up to `drop_batch` packets (64) are dropped from the head of
//! the queue with the largest backlog, until half of it is gone.
//!
//! All memory is set up once: 1024 flow records, the two lists with room for
//! every flow, and one slab of packet slots linked per flow, which grows only
//! when more packets are queued than ever before (no allocation per packet).

use super::codel::{CodelParams, CodelSource, CodelVars};
use super::packet::{Kind, Packet};
use super::queue::{Limit, QueueStats};
use crate::time::Time;
use std::collections::VecDeque;

/// fq_codel_init: 1024 flows, drop_batch_size 64, memory_limit 32 MB, limit
/// 10240 packets (the hop's buffer in tcpeval), ECN on.
pub const FLOWS: u32 = 1024;
pub const DROP_BATCH: u32 = 64;
pub const MEMORY_LIMIT_BYTES: u64 = 32 << 20;
pub const DEFAULT_LIMIT_PKTS: u64 = 10 * 1024;

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FqCodelParams {
    pub codel: CodelParams,
    pub flows: u32,
    /// Bytes a flow may send per round (Linux: psched_mtu, one MTU).
    pub quantum: u32,
    /// Queued bytes beyond which the fat flow is cut (Linux counts skb
    /// truesize; tcpeval wire bytes).
    pub memory_limit: u64,
    pub drop_batch: u32,
    /// Key of the flow hash (Linux: a boot-time random key; here from the seed).
    pub hash_key: u64,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    enqueued: Time,
    pkt: Packet,
    next: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    Off,
    New,
    Old,
}

#[derive(Clone, Copy, Debug)]
struct FlowQueue {
    head: u32,
    tail: u32,
    backlog: u64,
    deficit: i64,
    list: List,
}

/// Packet slots, linked per flow queue, with a free list.
#[derive(Debug, Default)]
struct Slab {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

impl Slab {
    fn put(&mut self, enqueued: Time, pkt: Packet) -> u32 {
        let slot = Slot { enqueued, pkt, next: NIL };
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        }
    }
}

/// The totals CoDel sees through one flow queue: the qdisc's whole backlog.
struct FlowSource<'a> {
    slab: &'a mut Slab,
    flow: &'a mut FlowQueue,
    len: &'a mut usize,
    bytes: &'a mut u64,
    stats: &'a mut QueueStats,
}

impl FlowSource<'_> {
    fn pop_head(&mut self) -> Option<(Time, Packet)> {
        if self.flow.head == NIL {
            return None;
        }
        let i = self.flow.head;
        let s = self.slab.slots[i as usize];
        self.flow.head = s.next;
        if s.next == NIL {
            self.flow.tail = NIL;
        }
        self.slab.free.push(i);
        let b = s.pkt.wire_bytes as u64;
        self.flow.backlog -= b;
        *self.bytes -= b;
        *self.len -= 1;
        Some((s.enqueued, s.pkt))
    }
}

impl CodelSource for FlowSource<'_> {
    fn pop(&mut self) -> Option<(Time, Packet)> {
        self.pop_head()
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

pub struct FqCodel {
    pub params: FqCodelParams,
    slab: Slab,
    flows: Vec<FlowQueue>,
    vars: Vec<CodelVars>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    len: usize,
    bytes: u64,
    /// Flows that (re)entered the new list (Linux new_flow_count).
    pub new_flow_count: u64,
}

impl FqCodel {
    pub fn new(params: FqCodelParams) -> Self {
        let n = params.flows as usize;
        let idle = FlowQueue { head: NIL, tail: NIL, backlog: 0, deficit: 0, list: List::Off };
        FqCodel {
            params,
            slab: Slab::default(),
            flows: vec![idle; n],
            vars: vec![CodelVars::default(); n],
            new_flows: VecDeque::with_capacity(n),
            old_flows: VecDeque::with_capacity(n),
            len: 0,
            bytes: 0,
            new_flow_count: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn reserved_packets(&self) -> usize {
        self.slab.slots.capacity()
    }

    /// The flow queue of a packet: Linux reciprocal_scale(skb_get_hash(skb),
    /// flows) with the engine's flow id (and whether it is UDP) as the flow's
    /// 5-tuple, mixed by a keyed SplitMix64 (Steele et al., OOPSLA 2014) so
    /// that distinct flows collide at the rate of a random hash.
    pub fn bucket(&self, p: &Packet) -> usize {
        let key = p.flow as u64 | ((p.kind == Kind::Udp) as u64) << 32;
        let mut z = key.wrapping_add(self.params.hash_key).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let h32 = (z ^ (z >> 31)) >> 32;
        ((h32 * self.params.flows as u64) >> 32) as usize
    }

    fn over(&self, limit: Limit) -> bool {
        let full = match limit {
            Limit::Packets(n) => self.len as u64 > n,
            Limit::Bytes(b) => self.bytes > b,
        };
        full || self.bytes > self.params.memory_limit
    }

    /// fq_codel_enqueue: add to the flow's queue (a flow off the lists joins
    /// the new list with a quantum of credit); over the limit, cut the fat flow.
    pub fn enqueue(&mut self, p: Packet, now: Time, limit: Limit, stats: &mut QueueStats) {
        let idx = self.bucket(&p);
        let slot = self.slab.put(now, p);
        let f = &mut self.flows[idx];
        if f.head == NIL {
            f.head = slot;
        } else {
            self.slab.slots[f.tail as usize].next = slot;
        }
        f.tail = slot;
        f.backlog += p.wire_bytes as u64;
        self.len += 1;
        self.bytes += p.wire_bytes as u64;
        if f.list == List::Off {
            f.list = List::New;
            f.deficit = self.params.quantum as i64;
            self.new_flows.push_back(idx as u32);
            self.new_flow_count += 1;
        }
        if self.over(limit) {
            self.drop_from_fat_flow(stats);
        }
    }

    /// fq_codel_drop: from the head of the queue with the largest backlog, drop
    /// packets until half its backlog is gone or drop_batch are; its CoDel
    /// count rises by as many ("increase its signal strength").
    fn drop_from_fat_flow(&mut self, stats: &mut QueueStats) {
        let (mut idx, mut max) = (0, 0);
        for (i, f) in self.flows.iter().enumerate() {
            if f.backlog > max {
                (idx, max) = (i, f.backlog);
            }
        }
        let threshold = max / 2;
        let mut src = FlowSource { slab: &mut self.slab, flow: &mut self.flows[idx], len: &mut self.len, bytes: &mut self.bytes, stats };
        let (mut n, mut dropped) = (0u32, 0u64);
        while let Some((_, p)) = src.pop_head() {
            src.stats.count_drop(&p, false);
            dropped += p.wire_bytes as u64;
            n += 1;
            if n >= self.params.drop_batch || dropped >= threshold {
                break;
            }
        }
        self.vars[idx].count = self.vars[idx].count.wrapping_add(n);
    }

    /// fq_codel_dequeue: the first flow of the new list, else of the old list;
    /// a flow out of credit gets a quantum more and goes to the back of the old
    /// list; an empty one leaves (a new flow passes through the old list first,
    /// if that is not empty, so new flows cannot starve old ones).
    pub fn dequeue(&mut self, now: Time, stats: &mut QueueStats) -> Option<Packet> {
        loop {
            let (idx, from_new) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (i as usize, true),
                (None, Some(&i)) => (i as usize, false),
                (None, None) => return None,
            };
            if self.flows[idx].deficit <= 0 {
                self.flows[idx].deficit += self.params.quantum as i64;
                self.move_to_old(idx, from_new);
                continue;
            }
            let mut src = FlowSource { slab: &mut self.slab, flow: &mut self.flows[idx], len: &mut self.len, bytes: &mut self.bytes, stats };
            match self.vars[idx].dequeue(&self.params.codel, &mut src, now) {
                Some(p) => {
                    self.flows[idx].deficit -= p.wire_bytes as i64;
                    return Some(p);
                }
                None if from_new && !self.old_flows.is_empty() => self.move_to_old(idx, true),
                None => {
                    self.pop_front(from_new);
                    self.flows[idx].list = List::Off;
                }
            }
        }
    }

    fn pop_front(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }

    fn move_to_old(&mut self, idx: usize, from_new: bool) {
        self.pop_front(from_new);
        self.old_flows.push_back(idx as u32);
        self.flows[idx].list = List::Old;
    }

    /// Data packets and payload bytes queued.
    pub fn data_queued(&self) -> (u64, u64) {
        let mut acc = (0, 0);
        for f in &self.flows {
            let mut i = f.head;
            while i != NIL {
                let s = &self.slab.slots[i as usize];
                if s.pkt.kind == Kind::Data {
                    acc = (acc.0 + 1, acc.1 + s.pkt.payload as u64);
                }
                i = s.next;
            }
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::codel;

    fn params(flows: u32, quantum: u32) -> FqCodelParams {
        let codel = CodelParams { target: codel::TARGET_NS, interval: codel::INTERVAL_NS, mtu: 1500, ecn: true };
        FqCodelParams { codel, flows, quantum, memory_limit: MEMORY_LIMIT_BYTES, drop_batch: DROP_BATCH, hash_key: 7 }
    }

    fn pkt(flow: u32, seq: u64, wire: u32) -> Packet {
        Packet::data(flow, 1, seq, wire - 52, wire, 0)
    }

    /// Two flows with a different queue each, one of 1500-byte packets, one of
    /// 500-byte packets, quantum 1500: DRR gives each 1500 bytes a round, so the
    /// order is one large, three small, one large, three small ... (RFC 8290
    /// section 4.2; hand-computed with the deficits: A 1500 -> 0, B 1500 ->
    /// 1000 -> 500 -> 0, then each gets a quantum back on the old list).
    #[test]
    fn drr_serves_unequal_packet_sizes_by_bytes() {
        let mut fq = FqCodel::new(params(1024, 1500));
        let (a, b) = (0u32, (1..100).find(|&f| fq.bucket(&pkt(f, 0, 100)) != fq.bucket(&pkt(0, 0, 100))).unwrap());
        let mut st = QueueStats::default();
        for s in 0..4 {
            fq.enqueue(pkt(a, s, 1500), 0, Limit::Packets(1000), &mut st);
        }
        for s in 0..12 {
            fq.enqueue(pkt(b, s, 500), 0, Limit::Packets(1000), &mut st);
        }
        let order: String = (0..16).map(|_| if fq.dequeue(0, &mut st).unwrap().flow == a { 'A' } else { 'B' }).collect();
        assert_eq!(order, "ABBBABBBABBBABBB");
        assert!(fq.dequeue(0, &mut st).is_none() && fq.is_empty());
    }

    /// A flow that arrives while a bulk flow is backlogged goes on the new list
    /// and is served next, ahead of the bulk flow's queue.
    #[test]
    fn a_sparse_flow_is_served_before_the_backlog() {
        let mut fq = FqCodel::new(params(1024, 1500));
        let mut st = QueueStats::default();
        let sparse = (1..100).find(|&f| fq.bucket(&pkt(f, 0, 100)) != fq.bucket(&pkt(0, 0, 100))).unwrap();
        for s in 0..50 {
            fq.enqueue(pkt(0, s, 1500), 0, Limit::Packets(1000), &mut st);
        }
        fq.dequeue(0, &mut st);
        fq.dequeue(0, &mut st);
        fq.enqueue(pkt(sparse, 0, 100), 0, Limit::Packets(1000), &mut st);
        assert_eq!(fq.dequeue(0, &mut st).unwrap().flow, sparse);
        assert_eq!(fq.new_flow_count, 2);
    }

    /// Over the limit, the fat flow loses half its backlog from the head (at
    /// most drop_batch packets), not the arriving packet's flow.
    #[test]
    fn overflow_cuts_the_fat_flow_by_half_from_the_head() {
        let mut fq = FqCodel::new(params(1024, 1500));
        let mut st = QueueStats::default();
        let other = (1..100).find(|&f| fq.bucket(&pkt(f, 0, 100)) != fq.bucket(&pkt(0, 0, 100))).unwrap();
        for s in 0..40 {
            fq.enqueue(pkt(0, s, 1500), 0, Limit::Packets(50), &mut st);
        }
        for s in 0..10 {
            fq.enqueue(pkt(other, s, 1500), 0, Limit::Packets(50), &mut st);
        }
        assert_eq!(st.drops, 0);
        fq.enqueue(pkt(other, 10, 1500), 0, Limit::Packets(50), &mut st);
        // 40 packets of 1500 B: drop until 30,000 B (20 packets) are gone.
        assert_eq!((st.drops, fq.len(), st.data_drops), (20, 31, 20));
        assert_eq!(fq.data_queued(), (31, 31 * 1448));
        let first = fq.dequeue(0, &mut st).unwrap();
        assert_eq!((first.flow, first.seq), (0, 20), "head drops");
    }

    /// With 1024 buckets, n flows land in about 1024 (1 - (1 - 1/1024)^n)
    /// distinct queues, as with a random hash (the birthday problem).
    #[test]
    fn flows_collide_at_the_rate_of_a_random_hash() {
        for key in [1u64, 2, 3] {
            let fq = FqCodel::new(FqCodelParams { hash_key: key, ..params(1024, 1500) });
            let mut used = vec![false; 1024];
            for f in 0..500u32 {
                used[fq.bucket(&pkt(f, 0, 100))] = true;
            }
            let distinct = used.iter().filter(|&&u| u).count() as f64;
            let want = 1024.0 * (1.0 - (1.0f64 - 1.0 / 1024.0).powi(500));
            assert!((distinct - want).abs() < 30.0, "key {key}: {distinct} vs {want:.0}");
        }
    }
}
