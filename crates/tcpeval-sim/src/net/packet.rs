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
        }
    }

    pub fn sack_blocks(&self) -> &[SegRange] {
        &self.sack[..self.nsack as usize]
    }
}
