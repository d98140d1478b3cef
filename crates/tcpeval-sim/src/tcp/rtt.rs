//! RTT estimation and the retransmission timeout: RFC 6298 section 2 smoothing
//! (alpha 1/8, beta 1/4, K = 4) with Linux's bounds (include/net/tcp.h): the
//! variance term is at least TCP_RTO_MIN = 200 ms, so RTO >= SRTT + 200 ms rather
//! than the RFC's 1 s floor; initial RTO 1 s; backoff doubles up to 120 s.

use super::scoreboard::{Seg, EVER_RETRANS};
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
    /// The timeout before the first sample when the stack sets it (else RTO_INIT).
    pub initial_rto: Option<Time>,
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
        let base = if self.sampled { self.srtt + (4 * self.rttvar).max(RTO_MIN) } else { self.initial_rto.unwrap_or(RTO_INIT) };
        base.checked_shl(self.backoff).unwrap_or(RTO_MAX).min(RTO_MAX)
    }
}

/// Send times of the never-retransmitted segments an ACK newly delivers, split
/// by how (Linux `tcp_clean_rtx_queue` first_ackt/last_ackt and `tcp_sacktag_one`
/// first_sackt/last_sackt), from which the ACK's RTT samples come.
#[derive(Clone, Copy, Default)]
pub struct RttTrack {
    ackt: Option<(Time, Time)>,
    sackt: Option<(Time, Time)>,
    /// A retransmitted segment was cumulatively acknowledged (FLAG_RETRANS_DATA_ACKED).
    retrans_acked: bool,
}

impl RttTrack {
    pub fn note(&mut self, seg: &Seg, sacked: bool) {
        if seg.flags & EVER_RETRANS != 0 {
            self.retrans_acked |= !sacked;
            return;
        }
        let range = if sacked { &mut self.sackt } else { &mut self.ackt };
        let (lo, hi) = range.unwrap_or((seg.tx_time, seg.tx_time));
        *range = Some((lo.min(seg.tx_time), hi.max(seg.tx_time)));
    }

    /// Linux `tcp_ack_update_rtt`: the estimator takes the oldest newly
    /// cumulatively ACKed segment's RTT (none if retransmitted data was ACKed),
    /// else the oldest newly SACKed one's, else, when the ACK advanced snd_una,
    /// the echoed timestamp `ts_ecr` (RFC 7323 RTTM). Congestion control and the
    /// minimum see the newest delivered segment's RTT (`ca_rtt_us`), so SACKs
    /// during recovery give true path RTTs rather than the age of the last
    /// in-order segment that the timestamp echo carries. Returns (estimator
    /// sample, congestion-control sample).
    pub fn samples(&self, now: Time, advanced: bool, ts_ecr: Option<Time>) -> Option<(Time, Time)> {
        let ack = self.ackt.filter(|_| !self.retrans_acked);
        let (mut seq_rtt, mut ca_rtt) = (ack.map(|a| now - a.0), ack.map(|a| now - a.1));
        if let Some((first, last)) = self.sackt {
            seq_rtt = seq_rtt.or(Some(now - first));
            ca_rtt = Some(now - last);
        }
        if let Some(ecr) = ts_ecr.filter(|&e| seq_rtt.is_none() && advanced && e <= now) {
            seq_rtt = Some(now - ecr);
            ca_rtt = seq_rtt;
        }
        Some((seq_rtt?, ca_rtt?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(tx_time: Time, flags: u8) -> Seg {
        Seg { flags, tx_time, ..Seg::default() }
    }

    #[test]
    fn karn_keeps_retransmitted_data_out_and_falls_back_to_the_timestamp() {
        let mut t = RttTrack::default();
        t.note(&seg(10 * MS, 0), false);
        t.note(&seg(30 * MS, 0), false);
        // Oldest to the estimator, newest to congestion control.
        assert_eq!(t.samples(100 * MS, true, None), Some((90 * MS, 70 * MS)));
        t.note(&seg(0, EVER_RETRANS), false);
        assert_eq!(t.samples(100 * MS, true, None), None);
        assert_eq!(t.samples(100 * MS, true, Some(40 * MS)), Some((60 * MS, 60 * MS)));
        // The echo is used only when the ACK advanced snd_una.
        assert_eq!(t.samples(100 * MS, false, Some(40 * MS)), None);
    }

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
