//! BBR's ACK-aggregation estimate, shared by BBR v1 (cc/bbr.rs; "tcp_bbr:
//! adapt cwnd based on ack aggregation estimation", 2019, in Linux 6.6) and BBRv3
//! (cc/bbr3.rs), which keep the same rules in net/ipv4/tcp_bbr.c: the packets
//! an ACK stream delivered since its epoch began beyond bw x the epoch's length
//! (`extra_acked`, at most cwnd) go into a max filter of two slots, the current
//! one restarted every few rounds, so the max covers the last one or two
//! windows; the cwnd target gets gain x that max, at most bw x 100 ms. An epoch
//! restarts when the ACKs fall behind bw (no aggregation then).

use super::{CcState, RateSample};
use crate::time::{Time, MS, SEC};

/// `bbr_extra_acked_gain = BBR_UNIT`: the whole estimate is added to cwnd.
pub const EXTRA_ACKED_GAIN: f64 = 1.0;
/// `bbr_extra_acked_win_rtts = 5`: each of the two filter slots covers 5
/// rounds (BBRv3: 1 before the pipe is full, `extra_acked_in_startup`).
pub const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// `bbr_extra_acked_max_us = 100 ms`: the allowance is at most bw x 100 ms.
const EXTRA_ACKED_MAX: Time = 100 * MS;
/// `bbr_ack_epoch_acked_reset_thresh = 1 << 20`: an epoch this long restarts
/// (Linux keeps `ack_epoch_acked` in 20 bits).
const ACK_EPOCH_ACKED_RESET: u32 = 1 << 20;
/// Linux caps the round counter of the current slot at 0x1F (5 bits).
const WIN_RTTS_MAX: u32 = 0x1f;

/// The epoch and the two-slot max filter (Linux `ack_epoch_mstamp`,
/// `ack_epoch_acked`, `extra_acked[2]`, `extra_acked_win_rtts`,
/// `extra_acked_win_idx`), with the algorithm's `extra_acked_gain`.
#[derive(Clone, Debug)]
pub struct AckAggregation {
    /// Share of the estimate added to cwnd; 0 turns the estimate off.
    gain: f64,
    epoch_stamp: Time,
    epoch_acked: u32,
    pub(crate) extra_acked: [u32; 2],
    pub(crate) win_rtts: u32,
    win_idx: usize,
}

/// One ACK's inputs to `AckAggregation::update`.
pub struct AckedSample {
    pub now: Time,
    /// Packets newly delivered by this ACK (`rs->acked_sacked`).
    pub acked_sacked: u32,
    /// The rate sample's interval (`rs->interval_us`); 0: no valid sample.
    pub interval: Time,
    pub cwnd: u32,
    /// The bandwidth estimate, packets per second.
    pub bw: f64,
    /// This ACK starts a round (BBR's packet-timed round trip).
    pub round_start: bool,
    /// Rounds per filter slot.
    pub window_rtts: u32,
}

impl AckAggregation {
    /// An empty estimate with the given gain, its first epoch at time 0.
    pub fn new(gain: f64) -> Self {
        AckAggregation { gain, epoch_stamp: 0, epoch_acked: 0, extra_acked: [0; 2], win_rtts: 0, win_idx: 0 }
    }

    /// Start over, the first epoch now (Linux `bbr_init`); the gain stays.
    pub fn restart(&mut self, now: Time) {
        *self = AckAggregation { epoch_stamp: now, ..AckAggregation::new(self.gain) };
    }

    /// Restart the epoch (`bbr_cwnd_event` on CA_EVENT_TX_START after idle,
    /// and when the ACKs fall behind bw).
    pub fn start_epoch(&mut self, now: Time) {
        self.epoch_stamp = now;
        self.epoch_acked = 0;
    }

    /// `update` with an ACK's rate sample: bw in packets per second, and
    /// the rounds per filter slot.
    pub fn on_ack(&mut self, s: &CcState, rs: &RateSample, bw: f64, round_start: bool, window_rtts: u32) {
        let (now, acked_sacked, interval, cwnd) = (s.now, rs.acked_sacked, rs.interval, s.cwnd);
        self.update(&AckedSample { now, acked_sacked, interval, cwnd, bw, round_start, window_rtts });
    }

    /// Linux `bbr_update_ack_aggregation`.
    pub fn update(&mut self, a: &AckedSample) {
        if self.gain == 0.0 || a.acked_sacked == 0 || a.interval == 0 {
            return;
        }
        if a.round_start {
            self.win_rtts = (self.win_rtts + 1).min(WIN_RTTS_MAX);
            if self.win_rtts >= a.window_rtts {
                self.win_rtts = 0;
                self.win_idx ^= 1;
                self.extra_acked[self.win_idx] = 0;
            }
        }
        let epoch = a.now.saturating_sub(self.epoch_stamp);
        let mut expected = (a.bw * epoch as f64 / SEC as f64) as u32;
        if self.epoch_acked <= expected || self.epoch_acked + a.acked_sacked >= ACK_EPOCH_ACKED_RESET {
            self.start_epoch(a.now);
            expected = 0;
        }
        self.epoch_acked = (self.epoch_acked + a.acked_sacked).min(ACK_EPOCH_ACKED_RESET - 1);
        let extra = (self.epoch_acked - expected).min(a.cwnd);
        let slot = &mut self.extra_acked[self.win_idx];
        *slot = (*slot).max(extra);
    }

    /// Linux `bbr_ack_aggregation_cwnd` without its full-pipe test (the
    /// caller's): gain x the filter's max, at most bw x 100 ms, both floored
    /// to packets as Linux's integer arithmetic.
    pub fn cwnd(&self, bw: f64) -> u32 {
        let gain = self.gain;
        let extra = self.extra_acked[0].max(self.extra_acked[1]);
        let cap = (bw * EXTRA_ACKED_MAX as f64 / SEC as f64) as u32;
        ((gain * extra as f64) as u32).min(cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(now: Time, acked: u32, round_start: bool) -> AckedSample {
        AckedSample { now, acked_sacked: acked, interval: MS, cwnd: 1000, bw: 10_000.0, round_start, window_rtts: 5 }
    }

    /// At 10,000 packets/s an ACK stream that keeps pace (2 packets per
    /// 200 us) restarts its epoch on every ACK: extra_acked is the ACK's 2.
    /// Then 2 packets 100 us and 20 more 200 us after an epoch began (2
    /// expected by then) leave 24 - 2 = 22 extra; the cap is bw x 100 ms.
    #[test]
    fn extra_acked_is_what_the_acks_deliver_beyond_bw() {
        let mut a = AckAggregation::new(1.0);
        for i in 1..=10 {
            a.update(&ack(i * 200_000, 2, false));
        }
        assert_eq!(a.cwnd(10_000.0), 2);
        let t = 10 * 200_000;
        a.update(&ack(t + 100_000, 2, false));
        a.update(&ack(t + 200_000, 20, false));
        assert_eq!(a.extra_acked, [22, 0]);
        assert_eq!((a.cwnd(10_000.0), a.cwnd(50.0)), (22, 5));
    }

    /// The filter forgets a burst after two windows of rounds.
    #[test]
    fn a_burst_is_forgotten_after_two_windows() {
        let mut a = AckAggregation::new(1.0);
        a.update(&ack(MS, 30, false));
        assert_eq!(a.cwnd(10_000.0), 30);
        let mut t = MS;
        let mut rounds = 0;
        while a.cwnd(10_000.0) == 30 {
            t += 10 * MS;
            a.update(&ack(t, 2, true));
            rounds += 1;
        }
        assert_eq!(rounds, 10);
    }
}
