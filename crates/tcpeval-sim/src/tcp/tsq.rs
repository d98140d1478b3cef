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
    /// The pacing term of the limit: a millisecond of `rate` (bytes per
    /// second), capped by `tcp_limit_output_bytes` unless the flow paces.
    pub fn rate_term(&self, rate: f64, paced: bool) -> u64 {
        let term = rate as u64 >> PACING_SHIFT;
        if paced {
            term
        } else {
            term.min(self.rule.limit_output_bytes)
        }
    }

    /// Whether the interface holds too much for TCP to hand down an skb of
    /// `skb_segs` segments: Linux holds it while sk_wmem_alloc > max(2
    /// truesize of the skb, the rate term), the limit doubled for a
    /// retransmission. `queued`: the flow's segments in the interface,
    /// counted as skbs of the same size (one skb head each). (A segment goes
    /// whatever the queue when nothing sent is unacknowledged: the caller's
    /// test.)
    pub fn holds(&self, queued: u32, skb_segs: u32, mss: u32, term: u64, retransmit: bool) -> bool {
        let (mss, overhead) = (u64::from(mss), self.rule.skb_overhead);
        let skbs = u64::from(queued).div_ceil(u64::from(skb_segs.max(1)));
        let queued_bytes = u64::from(queued) * mss + skbs * overhead;
        let limit = (2 * (u64::from(skb_segs) * mss + overhead)).max(term);
        queued_bytes > limit << u32::from(retransmit)
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
        let q = tsq();
        assert!(!q.holds(2, 1, 1448, 0, false) && q.holds(3, 1, 1448, 0, false));
        assert!(!q.holds(4, 1, 1448, 0, true) && q.holds(5, 1, 1448, 0, true));
    }

    #[test]
    fn an_skb_of_five_segments_counts_one_head() {
        // 2 x (5 x 1448 + 896) = 16,272 bytes: two queued skbs (16,272) let a
        // third down, three (24,408) do not.
        let q = tsq();
        assert!(!q.holds(10, 5, 1448, 0, false));
        assert!(q.holds(11, 5, 1448, 0, false));
    }

    #[test]
    fn a_millisecond_of_the_rate_when_that_is_more_capped_unless_paced() {
        let q = tsq();
        // 120 Mbit/s: 15 MB/s >> 10 = 14,648 bytes, 6 truesizes.
        assert_eq!(q.rate_term(15e6, false), 14_648);
        assert!(!q.holds(6, 1, 1448, 14_648, false) && q.holds(7, 1, 1448, 14_648, false));
        // 12 Gbit/s: the millisecond (1.46 MB) is capped at 1 MB for a flow
        // that does not pace, not for one that does.
        assert_eq!(q.rate_term(1.5e9, false), 1 << 20);
        assert_eq!(q.rate_term(1.5e9, true), 1_464_843);
    }
}
