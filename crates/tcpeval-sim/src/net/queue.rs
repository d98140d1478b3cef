//! Output queues. DropTail with a limit in packets or bytes; it keeps exact
//! time-weighted occupancy integrals so mean queue length costs O(1) per packet.

use super::packet::Packet;
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
    pub drops: u64,
    pub max_pkts: u64,
    /// Integral of queue length over time, in packet-ns and byte-ns.
    pub area_pkts: f64,
    pub area_bytes: f64,
}

pub struct DropTail {
    limit: Limit,
    pkts: VecDeque<Packet>,
    bytes: u64,
    last_change: Time,
    pub stats: QueueStats,
}

impl DropTail {
    pub fn new(limit: Limit) -> Self {
        DropTail { limit, pkts: VecDeque::with_capacity(256), bytes: 0, last_change: 0, stats: QueueStats::default() }
    }

    pub fn len(&self) -> usize {
        self.pkts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pkts.is_empty()
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Bring the occupancy integrals up to `now`.
    pub fn advance(&mut self, now: Time) {
        let dt = now.saturating_sub(self.last_change) as f64;
        self.stats.area_pkts += dt * self.pkts.len() as f64;
        self.stats.area_bytes += dt * self.bytes as f64;
        self.last_change = now;
    }

    fn fits(&self, p: &Packet) -> bool {
        match self.limit {
            Limit::Packets(n) => (self.pkts.len() as u64) < n,
            Limit::Bytes(b) => self.bytes + p.wire_bytes as u64 <= b,
        }
    }

    /// Enqueue at the tail; returns false (and counts a drop) when the buffer is full.
    pub fn enqueue(&mut self, p: Packet, now: Time) -> bool {
        self.stats.arrivals += 1;
        if !self.fits(&p) {
            self.stats.drops += 1;
            return false;
        }
        self.advance(now);
        self.bytes += p.wire_bytes as u64;
        self.pkts.push_back(p);
        self.stats.max_pkts = self.stats.max_pkts.max(self.pkts.len() as u64);
        true
    }

    pub fn iter(&self) -> impl Iterator<Item = &Packet> {
        self.pkts.iter()
    }

    pub fn dequeue(&mut self, now: Time) -> Option<Packet> {
        self.advance(now);
        let p = self.pkts.pop_front()?;
        self.bytes -= p.wire_bytes as u64;
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::Packet;

    fn pkt(bytes: u32) -> Packet {
        Packet::data(0, 0, 0, bytes.saturating_sub(52), bytes, 0)
    }

    #[test]
    fn packet_limit_drops_the_overflow() {
        let mut q = DropTail::new(Limit::Packets(2));
        assert!(q.enqueue(pkt(1500), 0));
        assert!(q.enqueue(pkt(1500), 0));
        assert!(!q.enqueue(pkt(1500), 0));
        assert_eq!((q.len(), q.stats.arrivals, q.stats.drops), (2, 3, 1));
    }

    #[test]
    fn byte_limit_counts_wire_bytes() {
        let mut q = DropTail::new(Limit::Bytes(3000));
        assert!(q.enqueue(pkt(1500), 0));
        assert!(q.enqueue(pkt(1500), 0));
        assert!(!q.enqueue(pkt(100), 0));
        q.dequeue(0);
        assert!(q.enqueue(pkt(100), 0));
        assert_eq!(q.bytes(), 1600);
    }

    #[test]
    fn occupancy_integral_is_time_weighted() {
        let mut q = DropTail::new(Limit::Packets(10));
        q.enqueue(pkt(1500), 0);
        q.enqueue(pkt(1500), 10); // 1 pkt for 10 ns
        q.dequeue(30); // 2 pkts for 20 ns
        q.advance(40); // 1 pkt for 10 ns
        assert_eq!(q.stats.area_pkts, 10.0 + 40.0 + 10.0);
    }
}
