//! RTT estimation and the retransmission timeout: RFC 6298 section 2 smoothing
//! (alpha 1/8, beta 1/4, K = 4) with Linux's bounds (include/net/tcp.h): the
//! variance term is at least TCP_RTO_MIN = 200 ms, so RTO >= SRTT + 200 ms rather
//! than the RFC's 1 s floor; initial RTO 1 s; backoff doubles up to 120 s.

use crate::time::{Time, MS, SEC};

/// Linux TCP_RTO_MIN (HZ/5).
pub const RTO_MIN: Time = 200 * MS;
/// Linux TCP_RTO_MAX.
pub const RTO_MAX: Time = 120 * SEC;
/// RFC 6298 (2.1) and Linux TCP_TIMEOUT_INIT.
pub const RTO_INIT: Time = SEC;

#[derive(Clone, Debug, Default)]
pub struct RttEstimator {
    pub srtt: Time,
    pub rttvar: Time,
    pub min_rtt: Time,
    /// Exponential backoff: the timer is RTO << backoff.
    pub backoff: u32,
    sampled: bool,
}

impl RttEstimator {
    /// Fold in one RTT measurement. A valid sample clears the backoff (RFC 6298 5.7
    /// keeps it until one arrives; with timestamps every ACK carries one).
    pub fn sample(&mut self, r: Time) {
        let r = r.max(1);
        if !self.sampled {
            self.srtt = r;
            self.rttvar = r / 2;
            self.min_rtt = r;
            self.sampled = true;
        } else {
            let delta = self.srtt.abs_diff(r);
            self.rttvar = (3 * self.rttvar + delta) / 4;
            self.srtt = (7 * self.srtt + r) / 8;
            self.min_rtt = self.min_rtt.min(r);
        }
        self.backoff = 0;
    }

    /// A sample that only feeds the minimum (Linux `tcp_update_rtt_min` takes
    /// the newest delivered segment's RTT, the estimator the oldest one's).
    pub fn note_min(&mut self, r: Time) {
        self.min_rtt = self.min_rtt.min(r.max(1));
    }

    /// The current timeout, including backoff.
    pub fn rto(&self) -> Time {
        let base = if self.sampled { self.srtt + (4 * self.rttvar).max(RTO_MIN) } else { RTO_INIT };
        base.checked_shl(self.backoff).unwrap_or(RTO_MAX).min(RTO_MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_sets_srtt_and_half_variance() {
        let mut e = RttEstimator::default();
        assert_eq!(e.rto(), RTO_INIT);
        e.sample(100 * MS);
        assert_eq!((e.srtt, e.rttvar), (100 * MS, 50 * MS));
        assert_eq!(e.rto(), 300 * MS); // 100 + max(200, 200)
    }

    #[test]
    fn steady_samples_decay_variance_to_the_floor() {
        let mut e = RttEstimator::default();
        for _ in 0..100 {
            e.sample(50 * MS);
        }
        assert_eq!(e.rto(), 250 * MS); // srtt + RTO_MIN
    }

    #[test]
    fn smoothing_follows_rfc6298_gains() {
        let mut e = RttEstimator::default();
        e.sample(80 * MS);
        e.sample(160 * MS);
        // rttvar = 3/4*40 + 1/4*80 = 50; srtt = 7/8*80 + 1/8*160 = 90
        assert_eq!((e.srtt, e.rttvar), (90 * MS, 50 * MS));
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let mut e = RttEstimator::default();
        e.sample(100 * MS);
        e.backoff = 2;
        assert_eq!(e.rto(), 1200 * MS);
        e.backoff = 20;
        assert_eq!(e.rto(), RTO_MAX);
        e.sample(100 * MS);
        assert_eq!(e.backoff, 0);
    }
}
