//! The packet: a fixed-size value (no heap), copied through queues and links.

use crate::time::Time;

/// Up to this many SACK blocks per ACK: with TCP timestamps on, the 40-byte option
/// space leaves room for three (RFC 2018 section 3; Linux TCP_NUM_SACKS is 4 without
/// timestamps).
pub const MAX_SACK_BLOCKS: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// TCP data segment.
    Data,
    /// TCP pure ACK.
    Ack,
    /// UDP datagram (cross traffic).
    Udp,
}

/// The ECN field of the IP header (RFC 3168 section 5): whether the sender
/// negotiated ECN for the packet, and whether a queue marked it. ECT(1), the L4S
/// codepoint (RFC 9331), is not modelled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ecn {
    /// Not-ECT: a queue drops this packet where it would mark it.
    #[default]
    NotEct,
    /// ECT(0): ECN-capable transport.
    Ect0,
    /// CE: congestion experienced, set by a queue instead of a drop.
    Ce,
}

/// A half-open range of segment numbers [start, end).
pub type SegRange = (u64, u64);

#[derive(Clone, Copy, Debug)]
pub struct Packet {
    pub kind: Kind,
    /// Flow the packet belongs to (index into the simulation's flows).
    pub flow: u32,
    /// Destination node.
    pub dst: u32,
    /// Bytes on the wire, headers included (what links serialise and queues count).
    pub wire_bytes: u32,
    /// Payload bytes (0 for a pure ACK).
    pub payload: u32,
    /// Data: segment number. Sequence space is counted in segments, as Linux counts
    /// its windows in packets.
    pub seq: u64,
    /// ACK: next segment expected (cumulative acknowledgement).
    pub ack: u64,
    pub sack: [SegRange; MAX_SACK_BLOCKS],
    pub nsack: u8,
    /// TCP timestamps (RFC 7323): sender's clock and the echoed value.
    pub ts_val: Time,
    pub ts_ecr: Time,
    /// IP ECN field (data packets of ECN flows carry ECT(0)).
    pub ecn: Ecn,
    /// TCP ECE flag (RFC 3168 section 6.1.3): on an ACK, the receiver echoes a
    /// CE mark it saw (until CWR, or DCTCP's exact echo).
    pub ece: bool,
    /// TCP CWR flag (RFC 3168 section 6.1.2): on a data segment, the sender
    /// has reduced its window after an ECE.
    pub cwr: bool,
}

impl Packet {
    pub fn data(flow: u32, dst: u32, seq: u64, payload: u32, wire_bytes: u32, now: Time) -> Self {
        Packet {
            kind: Kind::Data,
            flow,
            dst,
            wire_bytes,
            payload,
            seq,
            ack: 0,
            sack: [(0, 0); MAX_SACK_BLOCKS],
            nsack: 0,
            ts_val: now,
            ts_ecr: 0,
            ecn: Ecn::NotEct,
            ece: false,
            cwr: false,
        }
    }

    pub fn ack(flow: u32, dst: u32, ack: u64, wire_bytes: u32, now: Time, ts_ecr: Time) -> Self {
        Packet {
            kind: Kind::Ack,
            flow,
            dst,
            wire_bytes,
            payload: 0,
            seq: 0,
            ack,
            sack: [(0, 0); MAX_SACK_BLOCKS],
            nsack: 0,
            ts_val: now,
            ts_ecr,
            ecn: Ecn::NotEct,
            ece: false,
            cwr: false,
        }
    }

    /// What an AQM does instead of dropping (RFC 3168 section 5): an ECN-capable
    /// packet is marked CE (or stays CE) and kept, true; a Not-ECT packet must
    /// be dropped, false.
    pub fn mark_ce(&mut self) -> bool {
        match self.ecn {
            Ecn::NotEct => false,
            Ecn::Ect0 | Ecn::Ce => {
                self.ecn = Ecn::Ce;
                true
            }
        }
    }

    pub fn sack_blocks(&self) -> &[SegRange] {
        &self.sack[..self.nsack as usize]
    }
}

#[cfg(test)]
mod ecn_tests {
    use super::*;

    #[test]
    fn only_ecn_capable_packets_are_marked_instead_of_dropped() {
        let mut p = Packet::data(0, 1, 0, 1448, 1500, 0);
        assert!(!p.mark_ce(), "Not-ECT must be dropped");
        assert_eq!(p.ecn, Ecn::NotEct);
        p.ecn = Ecn::Ect0;
        assert!(p.mark_ce());
        assert_eq!(p.ecn, Ecn::Ce);
        assert!(p.mark_ce(), "a CE packet stays CE and is kept");
        assert_eq!(p.ecn, Ecn::Ce);
    }
}
