//! TSO autosizing and deferral: how many segments today's Linux hands down
//! at once, and when it waits for more ACKs to send a bigger burst
//! (net/ipv4/tcp_output.c `tcp_tso_autosize`, `tcp_tso_segs`,
//! `tcp_tso_should_defer`, `tcp_write_xmit`).
//!
//! Since TCP builds GSO packets whatever the device ("tcp: switch to GSO
//! being always on", 0a6b2a1dc2a2, 4.17), a sender whose interface has TSO
//! and GSO off, as the testbed's veths, still hands down multi-segment skbs
//! that the device splits in software and sends back to back. Measured on the
//! testbed (docs/testbed.md, "Two flows' overshoot traced"; net:net_dev_queue
//! on the senders' eth0, two Reno flows, 50 ms, one BDP): 2-13 segments per
//! skb near the end of slow start (mean 11.7), 4-5 in congestion avoidance
//! (mean 4.1); one flow's are 9 (tests/tso.rs). At a full drop-tail queue
//! such a burst loses its tail: losses come in runs, not one segment in two,
//! which sets how the receiver's SACK blocks and compressed ACKs look and how
//! two flows share the overshoot's losses.
//!
//! The engine sends segment by segment; this module decides where Linux
//! would stop (defer) and how many segments one skb carries.

use crate::time::{Time, MS, US};

/// `sk_pacing_shift` (10): a burst is about a millisecond of the pacing rate.
const PACING_SHIFT: u32 = 10;
/// `sysctl_tcp_tso_rtt_log` (9, 5.18 on): the RTT allowance halves every
/// 512 us of min RTT.
const TSO_RTT_LOG: u32 = 9;
/// `sk_gso_max_size`: GSO_LEGACY_MAX_SIZE (65536) less MAX_TCP_HEADER + 1
/// (320 + 1 on x86-64; `sk_setup_caps`).
const GSO_MAX_BYTES: u64 = 65536 - 321;
/// `sysctl_tcp_min_tso_segs` (2).
const MIN_TSO_SEGS: u64 = 2;
/// `sysctl_tcp_tso_win_divisor` (3): a third of the window is worth sending.
const WIN_DIVISOR: u64 = 3;
/// `tcp_tso_should_defer` defers only when something was sent within the
/// last millisecond.
const RECENT_SEND: Time = MS;

/// When the next ACK is near enough to wait for (the last test of
/// `tcp_tso_should_defer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckWait {
    /// The head of the retransmission queue was sent at least srtt/2 ago
    /// (3.x to 6.17).
    HalfSrtt,
    /// The head's ACK is due within min(srtt/2, 1 ms): "tcp: fix
    /// tcp_tso_should_defer() vs large RTT" (upstream 295ce1eb36ae, 6.18,
    /// backported to the stable trees in October 2025; the testbed's kernel).
    HalfSrttOrOneMs,
}

/// What the deferral test reads of the sender at the moment it would send
/// new data; windows and lengths in segments.
#[derive(Clone, Copy, Debug)]
pub struct SendPoint {
    pub now: Time,
    pub cwnd: u64,
    pub in_flight: u64,
    /// The receiver's window left from snd_nxt (`tcp_wnd_end - seq`).
    pub rwnd_left: u64,
    /// The receiver's whole window (`snd_wnd`).
    pub rwnd: u64,
    /// Segments left in the write queue's skb at snd_nxt, and whether it is
    /// the last one queued.
    pub skb_len: u64,
    pub skb_is_tail: bool,
    /// Departure time of the last packet sent (`tcp_wstamp_ns`).
    pub last_departure: Time,
    /// Last transmission of the oldest unacknowledged segment, if any.
    pub head_sent: Option<Time>,
    pub srtt: Time,
    /// Segments one skb may carry (`tcp_tso_segs`).
    pub max_segs: u64,
}

impl SendPoint {
    /// Linux counts a deferral as cwnd-limited when the window, not the
    /// receiver's, is what stops the skb (`tcp_tso_should_defer`'s cases).
    pub fn cwnd_limited_when_deferred(&self) -> bool {
        let room = self.cwnd.saturating_sub(self.in_flight);
        room < self.rwnd_left && room <= self.skb_len
    }
}

/// A stack's TSO sizing and deferral (Linux 6.6 here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TsoDefer {
    pub ack_wait: AckWait,
}

impl TsoDefer {
    /// `tcp_tso_segs` with the default `min_tso_segs`: a millisecond of the
    /// pacing rate (bytes per second), plus a GSO allowance that halves every
    /// 512 us of min RTT (none past 16 ms), at most one GSO packet, at least
    /// two segments.
    pub fn max_segs(rate: f64, min_rtt: Time, mss: u32) -> u64 {
        let mut bytes = rate as u64 >> PACING_SHIFT;
        let r = (min_rtt / US) >> TSO_RTT_LOG;
        if r < 32 {
            bytes += GSO_MAX_BYTES >> r;
        }
        (bytes.min(GSO_MAX_BYTES) / u64::from(mss)).max(MIN_TSO_SEGS)
    }

    /// Segments in one skb of a bulk sender's write queue
    /// (`tcp_xmit_size_goal`: one GSO packet; the half-window bound binds
    /// only below 130 KB of receive window).
    pub fn size_goal(mss: u32) -> u64 {
        GSO_MAX_BYTES / u64::from(mss)
    }

    /// `tcp_tso_should_defer` outside recovery (the caller's test): wait for
    /// more ACKs unless a full skb or a third of the window can go, nothing
    /// went out in the last millisecond, or the next ACK is not near.
    pub fn should_defer(&self, p: &SendPoint) -> bool {
        if p.now > p.last_departure + RECENT_SEND || p.skb_len <= 1 {
            return false;
        }
        let limit = p.rwnd_left.min(p.cwnd.saturating_sub(p.in_flight));
        if limit >= p.max_segs || (!p.skb_is_tail && limit >= p.skb_len) {
            return false;
        }
        if limit >= p.rwnd.min(p.cwnd) / WIN_DIVISOR {
            return false;
        }
        p.head_sent.is_some_and(|sent| self.ack_is_near(sent, p.srtt, p.now))
    }

    fn ack_is_near(&self, head_sent: Time, srtt: Time, now: Time) -> bool {
        match self.ack_wait {
            AckWait::HalfSrtt => now.saturating_sub(head_sent) >= srtt / 2,
            AckWait::HalfSrttOrOneMs => {
                let due = head_sent + srtt;
                due <= now || due - now <= (srtt / 2).min(MS)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEW: TsoDefer = TsoDefer { ack_wait: AckWait::HalfSrttOrOneMs };

    /// Two Reno flows' congestion avoidance at 50 ms: 400 segments of window,
    /// 88 ms srtt, three segments of room, the head about to be acknowledged.
    fn ca_point() -> SendPoint {
        SendPoint {
            now: 1000 * MS,
            cwnd: 400,
            in_flight: 397,
            rwnd_left: 10_000,
            rwnd: 10_000,
            skb_len: 40,
            skb_is_tail: false,
            last_departure: 1000 * MS - 300 * US,
            head_sent: Some(1000 * MS - 88 * MS + 200 * US),
            srtt: 88 * MS,
            max_segs: 5,
        }
    }

    #[test]
    fn a_millisecond_of_the_pacing_rate_past_16_ms_of_rtt() {
        // 1.2 x 400 x 1448 B / 88 ms = 7.9 MB/s: 7,710 B per 1.024 ms, 5 segments.
        let rate = 1.2 * 400.0 * 1448.0 / 0.088;
        assert_eq!(TsoDefer::max_segs(rate, 50 * MS, 1448), 5);
        // A slow flow still gets two; a near peer gets a GSO allowance.
        assert_eq!(TsoDefer::max_segs(100_000.0, 50 * MS, 1448), 2);
        assert_eq!(TsoDefer::max_segs(100_000.0, 200 * US, 1448), 45);
        // 1 ms of min RTT: r = 1, half the GSO packet (32,607 B) on top of 97 B.
        assert_eq!(TsoDefer::max_segs(100_000.0, MS, 1448), 22);
        assert_eq!(TsoDefer::size_goal(1448), 45);
    }

    #[test]
    fn defers_in_congestion_avoidance_until_a_full_skb_can_go() {
        let p = ca_point();
        assert!(NEW.should_defer(&p));
        assert!(!NEW.should_defer(&SendPoint { in_flight: 395, ..p }), "five segments of room: one full skb");
        assert!(!NEW.should_defer(&SendPoint { skb_len: 3, ..p }), "the rest of a queued skb fits");
        assert!(NEW.should_defer(&SendPoint { skb_len: 3, skb_is_tail: true, ..p }), "the tail may still grow");
    }

    #[test]
    fn sends_after_a_quiet_millisecond_or_with_a_third_of_the_window() {
        let p = ca_point();
        assert!(!NEW.should_defer(&SendPoint { last_departure: p.now - MS - 1, ..p }));
        assert!(NEW.should_defer(&SendPoint { last_departure: p.now - MS, ..p }));
        assert!(!NEW.should_defer(&SendPoint { cwnd: 9, in_flight: 6, ..p }), "3 of 9 is a third");
        assert!(!NEW.should_defer(&SendPoint { rwnd: 9, ..p }), "a third of the receiver's window");
        assert!(!NEW.should_defer(&SendPoint { head_sent: None, ..p }), "nothing in flight: no ACK to wait for");
    }

    #[test]
    fn a_deferral_for_want_of_window_counts_as_cwnd_limited() {
        let p = ca_point();
        assert!(p.cwnd_limited_when_deferred());
        assert!(!SendPoint { rwnd_left: 3, ..p }.cwnd_limited_when_deferred(), "the receiver's window stops it");
        assert!(!SendPoint { skb_len: 2, skb_is_tail: true, ..p }.cwnd_limited_when_deferred(), "a short tail: the application");
    }

    #[test]
    fn waits_only_for_an_ack_due_soon() {
        let p = ca_point();
        // Head sent 60 ms ago: its ACK is due in 28 ms, later than 1 ms.
        let early = SendPoint { head_sent: Some(p.now - 60 * MS), ..p };
        assert!(!NEW.should_defer(&early));
        // Before 6.18 only half an srtt since the head counted (60 ms > 44 ms).
        assert!(TsoDefer { ack_wait: AckWait::HalfSrtt }.should_defer(&early));
        assert!(!TsoDefer { ack_wait: AckWait::HalfSrtt }.should_defer(&SendPoint { head_sent: Some(p.now - 40 * MS), ..p }));
        // Overdue ACKs count as near.
        assert!(NEW.should_defer(&SendPoint { head_sent: Some(p.now - 200 * MS), ..p }));
    }
}
