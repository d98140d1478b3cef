//! TCP Small Queues (Linux 3.6 on; `tcp_small_queue_check` in
//! net/ipv4/tcp_output.c, the 3.12 dynamic limit "tcp: TSQ can use a dynamic
//! limit"): a sender keeps at most about two segments, or a millisecond of
//! its pacing rate, in the host's interface queue; the rest waits in TCP
//! until one of its segments leaves the interface (TX completion, `tcp_wfree`,
//! then the TSQ handler sends again).
//!
//! What it changes in a simulation is *when a segment counts as sent*: Linux
//! stamps a segment when TCP hands it down (`tcp_transmit_skb`), so a burst
//! of ten goes out as three stamped at once and then one stamp per
//! serialisation time of the host's link. RTT samples then leave out the
//! time a burst waits in the interface, and TCP-LP's one-way delay (TSval
//! minus the send stamp of the newest segment acknowledged) can fall
//! between the ACKs of one flight. Without it the whole initial window
//! carries one stamp and the one-way delay of a flight only grows (issue 32:
//! HSTCP-LP's first early congestion indication, docs/algorithms/lp.md).

/// `sk_pacing_shift` (10): the pacing term is about a millisecond of the rate.
const PACING_SHIFT: u32 = 10;

/// A stack's TSQ: `tcp_limit_output_bytes`, the cap of a flow that does not
/// pace (131072 from 3.6, 262144 from 4.2, 1 MB from 5.0), and the skb memory
/// a segment holds below TCP beyond its payload (`skb->truesize`, which
/// `sk_wmem_alloc` counts, is the payload in page fragments plus the head
/// `tcp_stream_alloc_skb` allocates for MAX_TCP_HEADER (320 bytes): its slab
/// object with the skb_shared_info, and the struct sk_buff; `SKB_TRUESIZE`,
/// include/linux/skbuff.h). The slab was kmalloc's 1 KB (1024 + 256 = 1280)
/// until 6.3's cache of small heads (640 + 256 = 896, "net: add dedicated
/// kmem_cache for typical/small skb->head").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tsq {
    pub limit_output_bytes: u64,
    pub skb_overhead: u64,
}

/// A sender's view of its interface: the rule (the pacing term before any
/// data RTT comes from the handshake's RTT, `CcState::srtt_or_handshake`).
#[derive(Clone, Copy, Debug)]
pub struct SmallQueues {
    pub rule: Tsq,
}

impl SmallQueues {
    /// The most of the flow's segments the interface may hold for TCP to
    /// hand down one more, for new data and for a retransmission: Linux holds
    /// a segment while sk_wmem_alloc > limit, limit = max(2 truesize, pacing
    /// rate >> 10), the rate term capped by `tcp_limit_output_bytes` unless
    /// the flow paces, doubled for a retransmission. `rate`: bytes per
    /// second. (A segment goes whatever the queue when nothing sent is
    /// unacknowledged: the caller's test.)
    pub fn most_queued(&self, mss: u32, rate: f64, paced: bool) -> (u32, u32) {
        let truesize = u64::from(mss) + self.rule.skb_overhead;
        let mut term = rate as u64 >> PACING_SHIFT;
        if !paced {
            term = term.min(self.rule.limit_output_bytes);
        }
        let limit = (2 * truesize).max(term);
        ((limit / truesize) as u32, (2 * limit / truesize) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tsq() -> SmallQueues {
        SmallQueues { rule: Tsq { limit_output_bytes: 1 << 20, skb_overhead: 896 } }
    }

    #[test]
    fn two_truesizes_let_a_third_segment_down_not_a_fourth() {
        // Two queued (2 truesizes, not above the limit): one more goes, so three
        // wait; a retransmission's limit is doubled.
        assert_eq!(tsq().most_queued(1448, 0.0, false), (2, 4));
    }

    #[test]
    fn a_millisecond_of_the_rate_when_that_is_more_capped_unless_paced() {
        let q = tsq();
        let truesize = 1448 + 896;
        // 120 Mbit/s: 15 MB/s >> 10 = 14,648 bytes, 6 truesizes.
        let most = (15_000_000u64 >> 10) / truesize;
        assert_eq!(q.most_queued(1448, 15e6, false), (most as u32, (2 * (15_000_000u64 >> 10) / truesize) as u32));
        // 12 Gbit/s: the millisecond (1.46 MB) is capped at 1 MB for a flow
        // that does not pace, not for one that does.
        let capped = ((1u64 << 20) / truesize) as u32;
        assert_eq!(q.most_queued(1448, 1.5e9, false).0, capped);
        assert!(q.most_queued(1448, 1.5e9, true).0 > capped);
    }
}
