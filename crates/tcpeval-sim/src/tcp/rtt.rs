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

    /// The send time of the newest segment cumulatively acknowledged, unless
    /// retransmitted data was (AckSample::newest_acked_tx).
    pub fn newest_acked(&self) -> Option<Time> {
        self.ackt.filter(|_| !self.retrans_acked).map(|a| a.1)
    }

    /// The ACK's RTT samples by the stack's rule: (estimator sample,
    /// congestion-control sample), each None when the rule gives none.
    pub fn samples(&self, now: Time, advanced: bool, ts_ecr: Option<Time>, rule: RttSampling) -> (Option<Time>, Option<Time>) {
        match rule {
            RttSampling::Current => self.samples_current(now, advanced, ts_ecr),
            RttSampling::Linux26 => self.samples_linux26(now, advanced, ts_ecr),
            RttSampling::Ns2Linux => {
                let (est, _) = self.samples_current(now, advanced, ts_ecr);
                (est, self.ackt.filter(|_| advanced && !self.retrans_acked).map(|a| now - a.1))
            }
        }
    }

    /// Linux 3.16 on, `tcp_ack_update_rtt`: the estimator takes the oldest
    /// newly cumulatively ACKed segment's RTT (none if retransmitted data was
    /// ACKed), else the oldest newly SACKed one's, else, when the ACK advanced
    /// snd_una, the echoed timestamp `ts_ecr` (RFC 7323 RTTM). Congestion
    /// control and the minimum see the newest delivered segment's RTT
    /// (`ca_rtt_us`), so SACKs during recovery give true path RTTs rather than
    /// the age of the last in-order segment that the timestamp echo carries.
    fn samples_current(&self, now: Time, advanced: bool, ts_ecr: Option<Time>) -> (Option<Time>, Option<Time>) {
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
        (seq_rtt, ca_rtt)
    }

    /// Linux 2.4-2.6.22 (`tcp_clean_rtx_queue` and `tcp_ack_update_rtt` in
    /// net/ipv4/tcp_input.c at 2.6.22; 2.4.22 the same): samples only from an
    /// ACK that advanced snd_una (FLAG_ACKED), none from SACKs. The estimator
    /// takes the echoed timestamp (`tcp_ack_saw_tstamp`), else the oldest
    /// newly ACKed segment's RTT unless retransmitted data was ACKed (Karn,
    /// `tcp_ack_no_tstamp`); `pkts_acked` gets that segment's send time
    /// (`last_ackt`), or none when retransmitted data was ACKed.
    fn samples_linux26(&self, now: Time, advanced: bool, ts_ecr: Option<Time>) -> (Option<Time>, Option<Time>) {
        if !advanced {
            return (None, None);
        }
        let oldest = self.ackt.filter(|_| !self.retrans_acked).map(|a| now - a.0);
        let echo = ts_ecr.filter(|&e| e <= now).map(|e| now - e);
        (echo.or(oldest), oldest)
    }
}

/// Which segments an ACK's RTT samples come from, by era (`Profile::rtt_sampling`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RttSampling {
    /// Linux 3.16 and today: SACKed segments too ("tcp: use RTT from SACK for
    /// RTO", after 2.6.22); congestion control sees the newest delivered segment.
    #[default]
    Current,
    /// Linux 2.4-2.6.22: cumulative ACKs only; congestion control sees the
    /// oldest newly ACKed segment.
    Linux26,
    /// ns-2.35 TCP-Linux's `pkts_acked` (tcp/tcp-linux.cc `recv`): only on
    /// ACKs that advance snd_una, the send time of the newest cumulatively
    /// ACKed segment (`tss[seqno]`; the engine's nearest: the newest never
    /// retransmitted one). Its RTO estimator samples every ACK's echo, which
    /// the engine does not model: the estimator keeps today's rule.
    Ns2Linux,
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
        let now = RttSampling::Current;
        assert_eq!(t.samples(100 * MS, true, None, now), (Some(90 * MS), Some(70 * MS)));
        t.note(&seg(0, EVER_RETRANS), false);
        assert_eq!(t.samples(100 * MS, true, None, now), (None, None));
        assert_eq!(t.samples(100 * MS, true, Some(40 * MS), now), (Some(60 * MS), Some(60 * MS)));
        // The echo is used only when the ACK advanced snd_una.
        assert_eq!(t.samples(100 * MS, false, Some(40 * MS), now), (None, None));
    }

    /// A SACK-only ACK (segments sent at 20 and 30 ms, SACKed at 100 ms):
    /// today's rule samples the oldest for the estimator and the newest for
    /// congestion control; 2.6.22's none. A cumulative ACK of segments sent at
    /// 10 and 30 ms echoing 10 ms: 2.6.22's estimator takes the echo and its
    /// `pkts_acked` the oldest segment; with retransmitted data ACKed, the
    /// echo only.
    #[test]
    fn linux_2622_samples_only_cumulative_acks() {
        let mut sack_only = RttTrack::default();
        sack_only.note(&seg(20 * MS, 0), true);
        sack_only.note(&seg(30 * MS, 0), true);
        assert_eq!(sack_only.samples(100 * MS, false, Some(5 * MS), RttSampling::Current), (Some(80 * MS), Some(70 * MS)));
        assert_eq!(sack_only.samples(100 * MS, false, Some(5 * MS), RttSampling::Linux26), (None, None));
        let mut cum = RttTrack::default();
        cum.note(&seg(10 * MS, 0), false);
        cum.note(&seg(30 * MS, 0), false);
        assert_eq!(cum.samples(100 * MS, true, Some(10 * MS), RttSampling::Linux26), (Some(90 * MS), Some(90 * MS)));
        assert_eq!(cum.samples(100 * MS, true, None, RttSampling::Linux26), (Some(90 * MS), Some(90 * MS)));
        assert_eq!(cum.samples(100 * MS, true, None, RttSampling::Current), (Some(90 * MS), Some(70 * MS)));
        assert_eq!(cum.samples(100 * MS, true, None, RttSampling::Ns2Linux), (Some(90 * MS), Some(70 * MS)));
        assert_eq!(sack_only.samples(100 * MS, false, None, RttSampling::Ns2Linux), (Some(80 * MS), None));
        cum.note(&seg(0, EVER_RETRANS), false);
        assert_eq!(cum.samples(100 * MS, true, Some(10 * MS), RttSampling::Linux26), (Some(90 * MS), None));
        assert_eq!(cum.samples(100 * MS, true, None, RttSampling::Linux26), (None, None));
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
