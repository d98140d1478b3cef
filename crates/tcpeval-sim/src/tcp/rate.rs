//! Delivery-rate sampling as Linux `net/ipv4/tcp_rate.c` (the algorithm of
//! draft-cheng-iccrg-delivery-rate-estimation): each segment remembers the
//! flight state it left in; an ACK's sample is the packets delivered since the
//! newest delivered segment was sent, over the longer of its flight's send
//! interval and the ACK interval.

use super::rtt::RttTrack;
use super::scoreboard::{Seg, APP_LIMITED};
use crate::cc::RateSample;
use crate::time::Time;

/// The newest delivered segment's send-time state, from which an ACK's rate
/// sample is built (Linux `tcp_rate_skb_delivered`), and the RTT bookkeeping of
/// the same ACK.
#[derive(Clone, Copy, Default)]
pub struct RateTrack {
    have: bool,
    tx_time: Time,
    prior_delivered: u64,
    prior_time: Time,
    send_interval: Time,
    app_limited: bool,
    prior_delivered_ce: u32,
    in_flight_at_tx: u32,
    lost_at_tx: u64,
    pub rtt: RttTrack,
}

impl RateTrack {
    /// CE-marked packets delivered since the sampled segment was sent, given
    /// the count now (Linux `tcp_rate_gen`: `rs->delivered_ce`); 0 without a
    /// sample.
    pub fn delivered_ce_since(&self, delivered_ce_now: u64) -> u64 {
        if self.have {
            (delivered_ce_now as u32).wrapping_sub(self.prior_delivered_ce) as u64
        } else {
            0
        }
    }

    /// Remember the most recently sent of the segments this ACK delivers.
    pub fn note(&mut self, seg: &Seg, sacked: bool) {
        self.rtt.note(seg, sacked);
        if self.have && seg.tx_time < self.tx_time {
            return;
        }
        *self = RateTrack {
            rtt: self.rtt,
            have: true,
            tx_time: seg.tx_time,
            prior_delivered: seg.delivered_at_tx,
            prior_time: seg.delivered_time_at_tx,
            send_interval: seg.tx_time.saturating_sub(seg.first_tx),
            app_limited: seg.flags & APP_LIMITED != 0,
            prior_delivered_ce: seg.delivered_ce_at_tx,
            in_flight_at_tx: seg.in_flight_at_tx,
            lost_at_tx: seg.lost_at_tx,
        };
    }

    /// The delivered count when the sampled segment was sent (Linux
    /// `rs->prior_delivered`); 0 without a sample.
    pub fn prior_delivered(&self) -> u64 {
        self.prior_delivered
    }

    /// Packets marked lost since the sampled segment was sent, given the
    /// count now (`tp->lost - rs->prior_lost`); 0 without a sample.
    pub fn lost_since_tx(&self, lost_now: u64) -> u64 {
        if self.have {
            lost_now.saturating_sub(self.lost_at_tx)
        } else {
            0
        }
    }
}

/// The connection's flight state (Linux `first_tx_mstamp`, `delivered_mstamp`,
/// `app_limited`).
#[derive(Default)]
pub struct RateState {
    /// Start of the current flight.
    first_tx_time: Time,
    /// Time of the last delivery.
    delivered_time: Time,
    /// Non-zero while the flow is application-limited: the delivered count at
    /// which that ends.
    app_limited_until: u64,
}

impl RateState {
    /// Linux `tcp_rate_skb_sent`: record the flight state the segment leaves in;
    /// sending into an empty network starts a new flight.
    pub fn stamp(&mut self, seg: &mut Seg, now: Time, network_empty: bool, delivered: u64) {
        if network_empty {
            self.first_tx_time = now;
            self.delivered_time = now;
        }
        seg.tx_time = now;
        seg.first_tx = self.first_tx_time;
        seg.delivered_at_tx = delivered;
        seg.delivered_time_at_tx = self.delivered_time;
        if self.app_limited_until != 0 {
            seg.flags |= APP_LIMITED;
        } else {
            seg.flags &= !APP_LIMITED;
        }
    }

    /// After an ACK's scoreboard update: the newest segment it took off the
    /// scoreboard opens the next flight (as `tcp_rate_skb_delivered` moves
    /// `first_tx_mstamp`); `delivered` packets left the network now.
    pub fn on_ack(&mut self, track: &RateTrack, now: Time, delivered: u32) {
        if track.have {
            self.first_tx_time = track.tx_time;
        }
        if delivered > 0 {
            self.delivered_time = now;
        }
    }

    /// When the last delivery was (Linux `tp->delivered_mstamp`).
    pub fn delivered_time(&self) -> Time {
        self.delivered_time
    }

    /// Nothing to send with window to spare (Linux `tcp_rate_check_app_limited`).
    pub fn mark_app_limited(&mut self, delivered: u64, in_flight: u64) {
        self.app_limited_until = (delivered + in_flight).max(1);
    }

    /// Linux `tcp_rate_gen`: delivered over max(send interval, ACK interval); an
    /// interval shorter than the minimum RTT is not a valid sample.
    pub fn sample(&mut self, track: &RateTrack, now: Time, delivered: u64, min_rtt: Time) -> RateSample {
        if self.app_limited_until != 0 && delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        if !track.have {
            return RateSample::default();
        }
        let interval = track.send_interval.max(now.saturating_sub(track.prior_time));
        let valid = interval > 0 && interval >= min_rtt;
        RateSample {
            delivered: delivered - track.prior_delivered,
            interval: if valid { interval } else { 0 },
            is_app_limited: track.app_limited,
            prior_delivered: track.prior_delivered,
            tx_in_flight: track.in_flight_at_tx,
            ..RateSample::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    fn sent(rate: &mut RateState, now: Time, empty: bool, delivered: u64) -> Seg {
        let mut seg = Seg::default();
        rate.stamp(&mut seg, now, empty, delivered);
        seg
    }

    #[test]
    fn the_longer_of_send_and_ack_intervals_is_the_sample_interval() {
        let mut rate = RateState::default();
        // A flight of 10 sent over 30 ms from t = 0, nothing delivered before.
        let first = sent(&mut rate, 0, true, 0);
        let last = sent(&mut rate, 30 * MS, false, 0);
        let mut track = RateTrack::default();
        track.note(&first, false);
        track.note(&last, false);
        // All 10 delivered at 100 ms: ACK interval 100 ms > send interval 30 ms.
        let rs = rate.sample(&track, 100 * MS, 10, 50 * MS);
        assert_eq!((rs.delivered, rs.interval, rs.prior_delivered), (10, 100 * MS, 0));
        // A minimum RTT above the interval makes the sample invalid.
        assert_eq!(rate.sample(&track, 100 * MS, 10, 150 * MS).interval, 0);
    }

    #[test]
    fn segments_sent_while_app_limited_are_marked_until_that_data_is_delivered() {
        let mut rate = RateState::default();
        rate.mark_app_limited(20, 5);
        let seg = sent(&mut rate, 0, true, 20);
        let mut track = RateTrack::default();
        track.note(&seg, true);
        assert!(rate.sample(&track, 10 * MS, 25, 0).is_app_limited);
        // Delivered passed 25: no longer app-limited for new segments.
        rate.sample(&track, 10 * MS, 26, 0);
        assert_eq!(sent(&mut rate, 20 * MS, false, 26).flags & APP_LIMITED, 0);
    }
}
