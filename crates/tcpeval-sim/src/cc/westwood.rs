//! Westwood+ (Mascolo et al. 2001; Grieco & Mascolo 2004) as Linux ships it
//! (`net/ipv4/tcp_westwood.c`, 2.6.22 to 6.x: the same integer arithmetic
//! throughout). Reno's increase; a bandwidth estimate from the bytes
//! acknowledged over windows of max(RTT, 50 ms), filtered twice with gain 1/8;
//! and after a loss (at the end of recovery) cwnd = ssthresh =
//! max(BWE x RTTmin / MSS, 2), so the window falls to what the path carried
//! rather than to half. At a timeout ssthresh is set the same way and cwnd = 1.
//!
//! Units and arithmetic are Linux's: times in jiffies (tcpeval's HZ = 1000, as
//! cc/htcp.rs), the estimate in bytes per jiffy, all `u32` with C's truncating
//! division and wrapping, so the BPF program of the testbed
//! (python/tcpeval/testbed/bpf/tcpeval_westwood.c) can agree step by step.

use super::params::AlgorithmConfig;
use super::reno::Reno;
use super::{AckSample, CaEvent, CcState, CongestionOps};
use crate::time::{Time, HZ, JIFFY, MS, SEC};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Linux `TCP_WESTWOOD_RTT_MIN` (HZ/20): the shortest sampling window, so that
/// short RTTs (LANs) do not give bandwidth samples over tiny intervals.
pub const RTT_WINDOW_MIN: Time = 50 * MS;
/// Linux `TCP_WESTWOOD_INIT_RTT` (20 s): the RTT assumed until a sample arrives.
pub const INIT_RTT: Time = 20 * SEC;

/// Westwood+'s parameters (`params`).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct WestwoodConfig {
    /// The shortest bandwidth-sampling window, seconds (Linux `TCP_WESTWOOD_RTT_MIN`
    /// = HZ/20, 50 ms, net/ipv4/tcp_westwood.c); the window is max(RTT, this).
    #[schemars(range(min = 0, max = 10))]
    pub rtt_window_min_s: f64,
}

impl Default for WestwoodConfig {
    fn default() -> Self {
        WestwoodConfig { rtt_window_min_s: RTT_WINDOW_MIN as f64 / SEC as f64 }
    }
}

impl AlgorithmConfig for WestwoodConfig {}

/// The Westwood+ code of a stack's era (crate::stack).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WestwoodVersion {
    /// Today's: RTT and RTTmin from each ACK's own RTT sample.
    #[default]
    Current,
    /// Linux 2.6.22 (net/ipv4/tcp_westwood.c at v2.6.22, as ns-2.35 copies it
    /// from 2.6.22.6 in tcp/linux/src/tcp_westwood.c): `tcp_westwood_pkts_acked`
    /// takes `w->rtt = tcp_sk(sk)->srtt >> 3`, the smoothed RTT, whenever
    /// packets are acked; so RTTmin, and BWE x RTTmin after a loss, include the
    /// queueing the smoothed RTT carries. Later kernels pass the ACK's sample.
    Linux2622,
}

/// Linux's `struct westwood`, the fields tcpeval uses, in Linux's units.
#[derive(Clone, Debug)]
pub struct Westwood {
    /// The shortest sampling window, jiffies.
    window_min: u32,
    /// Bandwidth estimates, bytes per jiffy (first and second filter stage).
    bw_ns_est: u32,
    bw_est: u32,
    /// Where the sampling window began, jiffies (`rtt_win_sx`).
    rtt_win_sx: u32,
    /// Bytes acknowledged in this window (`bk`).
    bk: u32,
    /// The last RTT and the minimum, jiffies.
    rtt: u32,
    rtt_min: u32,
    reset_rtt_min: bool,
    reno: Reno,
    version: WestwoodVersion,
}

/// `tcp_jiffies32`: the clock in jiffies, wrapping at 2^32 as Linux's does.
fn jiffies(t: Time) -> u32 {
    (t / JIFFY) as u32
}

/// include/linux/jiffies.h `usecs_to_jiffies` at HZ = 1000: rounds up.
fn usecs_to_jiffies(us: u64) -> u32 {
    us.div_ceil(JIFFY / 1000) as u32
}

/// Linux `westwood_do_filter`: keep 7/8, in u32 (wrapping as C's).
fn do_filter(a: u32, b: u32) -> u32 {
    7u32.wrapping_mul(a).wrapping_add(b) >> 3
}

impl Westwood {
    pub fn new(cfg: &WestwoodConfig) -> Self {
        Westwood {
            window_min: jiffies((cfg.rtt_window_min_s * SEC as f64) as Time),
            bw_ns_est: 0,
            bw_est: 0,
            rtt_win_sx: 0,
            bk: 0,
            rtt: jiffies(INIT_RTT),
            rtt_min: jiffies(INIT_RTT),
            reset_rtt_min: true,
            reno: Reno,
            version: WestwoodVersion::Current,
        }
    }

    /// Run the code of another era (crate::stack).
    pub fn set_version(&mut self, version: WestwoodVersion) {
        self.version = version;
    }

    /// The bandwidth estimate, bytes per second (Linux keeps bytes per jiffy).
    pub fn bandwidth(&self) -> f64 {
        self.bw_est as f64 * HZ as f64
    }

    pub fn rtt_min(&self) -> Time {
        self.rtt_min as Time * JIFFY
    }

    /// Linux `tcp_westwood_bw_rttmin`: the window the path carried, in packets
    /// (bytes per jiffy x jiffies, a u32 product as in C).
    pub fn bw_rtt_min(&self, mss: u32) -> u32 {
        (self.bw_est.wrapping_mul(self.rtt_min) / mss).max(2)
    }

    /// Linux `westwood_filter`: the first sample fills both stages.
    fn filter(&mut self, delta: u32) {
        let sample = self.bk / delta;
        if self.bw_ns_est == 0 && self.bw_est == 0 {
            self.bw_ns_est = sample;
            self.bw_est = sample;
        } else {
            self.bw_ns_est = do_filter(self.bw_ns_est, sample);
            self.bw_est = do_filter(self.bw_est, self.bw_ns_est);
        }
    }

    /// Linux `westwood_update_window`: close the window once max(RTT, 50 ms)
    /// has passed (`delta` is an s32 compared as u32, as in C).
    fn update_window(&mut self, now: u32) {
        let delta = now.wrapping_sub(self.rtt_win_sx);
        if self.rtt != 0 && delta > self.rtt.max(self.window_min) {
            self.filter(delta);
            self.bk = 0;
            self.rtt_win_sx = now;
        }
    }
}

impl CongestionOps for Westwood {
    fn init(&mut self, s: &mut CcState) {
        self.rtt_win_sx = jiffies(s.now);
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.reno.ssthresh(s)
    }

    /// 2.6.22's ops carry `.min_cwnd = tcp_westwood_bw_rttmin` (tcp_westwood.c
    /// at 2.6.22, ns-2.35's tcp/linux/src/tcp_westwood.c): the floor of
    /// rate-halving (`tcp_cwnd_min`) and ns-2 TCP-Linux's cwnd on entering a
    /// recovery. Today's kernels have no `min_cwnd`; PRR never asks.
    fn min_cwnd(&mut self, s: &CcState) -> u32 {
        match self.version {
            WestwoodVersion::Linux2622 => self.bw_rtt_min(s.mss),
            WestwoodVersion::Current => s.ssthresh,
        }
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        self.reno.cong_avoid(s, acked);
    }

    fn pkts_acked(&mut self, s: &mut CcState, sample: &AckSample) {
        // Linux `tcp_westwood_ack` (the in_ack_event hook, which in 6.6 as
        // released runs before pkts_acked): close the sampling window, count the
        // data, update RTTmin, all with the previous ACK's RTT. (Commit "tcp:
        // reorganize tcp_in_ack_event() and tcp_count_delivered()", net-next for
        // 6.14, moved in_ack_event after tcp_clean_rtx_queue; not modelled.)
        self.update_window(jiffies(s.now));
        // Delivered (acked or SACKed) data: Linux counts duplicate ACKs as one
        // MSS each and corrects later; counting delivered packets is the same.
        self.bk = self.bk.wrapping_add(sample.acked.wrapping_mul(s.mss));
        self.rtt_min = if self.reset_rtt_min { self.rtt } else { self.rtt_min.min(self.rtt) };
        self.reset_rtt_min = false;
        // Linux `tcp_westwood_pkts_acked`: remember this ACK's RTT sample
        // (2.6.22: the smoothed RTT, `srtt >> 3` in jiffies, if packets were acked).
        match self.version {
            WestwoodVersion::Current => {
                let rtt_us = sample.rtt.map_or(0, |rtt| rtt / 1000);
                if rtt_us > 0 {
                    self.rtt = usecs_to_jiffies(rtt_us);
                }
            }
            WestwoodVersion::Linux2622 => {
                if sample.acked > 0 && s.srtt > 0 {
                    // 2.6.22's tcp_rtt_estimator counts a 0-jiffy sample as 1,
                    // so its srtt >> 3 is at least one jiffy.
                    self.rtt = jiffies(s.srtt).max(1);
                }
            }
        }
    }

    fn cwnd_event(&mut self, s: &mut CcState, event: CaEvent) {
        match event {
            CaEvent::CompleteCwr => {
                s.ssthresh = self.bw_rtt_min(s.mss);
                s.cwnd = s.ssthresh;
            }
            CaEvent::Loss => {
                s.ssthresh = self.bw_rtt_min(s.mss);
                self.reset_rtt_min = true;
            }
            CaEvent::TxStart | CaEvent::EcnIsCe | CaEvent::EcnNoCe => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;
    use crate::cc::harness::Harness;
    use crate::cc::Cc;

    fn westwood() -> Westwood {
        crate::cc::params::parse_map(&Map::new()).map(|c| Westwood::new(&c)).unwrap()
    }

    fn ack(w: &mut Westwood, s: &mut CcState, at: Time, pkts: u32, rtt: Time) {
        s.now = at;
        w.pkts_acked(s, &AckSample { acked: pkts, rtt: Some(rtt), ..Default::default() });
    }

    /// 2.6.22's `min_cwnd` is BWE x RTTmin (1000 B per jiffy x 100 jiffies /
    /// 1000 B = 100 packets, at least 2); today's version has none (ssthresh).
    #[test]
    fn linux_2_6_22_min_cwnd_is_bw_rttmin() {
        let mut s = CcState::new(300, 1000);
        s.ssthresh = 150;
        let mut w = westwood();
        (w.bw_est, w.rtt_min) = (1000, 100);
        assert_eq!(w.min_cwnd(&s), 150);
        w.set_version(WestwoodVersion::Linux2622);
        assert_eq!(w.min_cwnd(&s), 100);
        w.bw_est = 0;
        assert_eq!(w.min_cwnd(&s), 2);
    }

    #[test]
    fn two_stage_filter_first_sample_fills_both_and_truncates() {
        let mut w = westwood();
        w.bk = 8000;
        w.filter(8); // 1000 B per jiffy: both stages take it
        assert_eq!((w.bw_ns_est, w.bw_est), (1000, 1000));
        w.bk = 16_000;
        w.filter(8);
        // bw_ns = (7 x 1000 + 2000) >> 3 = 1125; bw = (7 x 1000 + 1125) >> 3 =
        // 8125 >> 3 = 1015 (1015.625 truncated, as Linux's u32).
        assert_eq!((w.bw_ns_est, w.bw_est), (1125, 1015));
        // A sample is whole bytes per jiffy: 999 B over 2 jiffies is 499.
        w.bk = 999;
        w.filter(2);
        assert_eq!(w.bw_ns_est, (7 * 1125 + 499) >> 3);
    }

    #[test]
    fn samples_span_at_least_fifty_ms_or_one_rtt() {
        let (mut w, mut s) = (westwood(), CcState::new(10, 1448));
        w.init(&mut s);
        // RTT 20 ms: ACKs of 10 packets at 10 and 40 ms stay in the first window
        // (the first is judged against the initial 20 s RTT, the second against
        // max(20, 50) ms); the ACK at 60 ms closes it: 2 x 14480 B / 60 jiffies
        // = 482 B per jiffy (482.67 truncated).
        ack(&mut w, &mut s, 10 * MS, 10, 20 * MS);
        ack(&mut w, &mut s, 40 * MS, 10, 20 * MS);
        assert_eq!(w.bandwidth(), 0.0);
        ack(&mut w, &mut s, 60 * MS, 10, 20 * MS);
        assert_eq!(w.bw_est, 482);
        assert_eq!(w.bandwidth(), 482_000.0);
        // Its own 10 packets open the next window; with RTT 100 ms that one
        // closes only after more than 100 jiffies: not at 150 ms, at 161 ms.
        ack(&mut w, &mut s, 100 * MS, 10, 100 * MS);
        ack(&mut w, &mut s, 150 * MS, 10, 100 * MS);
        assert_eq!(w.bw_est, 482);
        ack(&mut w, &mut s, 161 * MS, 10, 100 * MS);
        // 3 x 14480 B over 101 jiffies = 430; bw_ns = (7 x 482 + 430) >> 3.
        assert_eq!(w.bw_ns_est, (7 * 482 + 430) >> 3);
    }

    #[test]
    fn rtt_samples_round_up_to_whole_jiffies() {
        // usecs_to_jiffies rounds up: a 20.001 ms sample is 21 jiffies, and a
        // sample under 1 us (0 us) is ignored as Linux's `rtt_us > 0` test does.
        let (mut w, mut s) = (westwood(), CcState::new(10, 1448));
        w.init(&mut s);
        ack(&mut w, &mut s, MS, 1, 20_001_000);
        assert_eq!(w.rtt, 21);
        ack(&mut w, &mut s, 2 * MS, 1, 999);
        assert_eq!(w.rtt, 21);
        // RTTmin takes it from the next ACK on (the RTT of the ACK before).
        ack(&mut w, &mut s, 3 * MS, 1, 30 * MS);
        assert_eq!(w.rtt_min(), 21 * MS);
    }

    #[test]
    fn estimate_is_the_delivery_rate_and_sets_the_window_after_loss() {
        // 100 packets per 100 ms RTT of 1448 B: 1.448 MB/s.
        let mut h = Harness::new(westwood(), 100);
        h.s.ssthresh = 10;
        h.s.cwnd_clamp = 100; // hold the rate constant
        for _ in 0..60 {
            h.ack_round();
        }
        let bw = h.cc.bandwidth();
        assert!((bw / 1.448e6 - 1.0).abs() < 0.02, "estimate {bw}");
        // Entering recovery: Reno's half (100 / 2); when it ends, cwnd = ssthresh
        // = BWE x RTTmin / MSS = 1.448e6 x 0.1 / 1448 = 100 packets, not 50.
        assert_eq!(h.cc.ssthresh(&h.s), 50);
        h.lose();
        let want = h.cc.bw_rtt_min(1448);
        assert_eq!((h.s.ssthresh, h.s.cwnd), (want, want));
        assert!((98..=100).contains(&want), "BWE x RTTmin {want}");
    }

    #[test]
    fn a_timeout_sets_ssthresh_from_the_estimate_and_restarts_rtt_min() {
        let mut h = Harness::new(westwood(), 100);
        h.s.ssthresh = 10;
        h.s.cwnd_clamp = 100;
        h.rtt = 50 * MS;
        for _ in 0..40 {
            h.ack_round();
        }
        h.rtt = 150 * MS;
        h.ack_round();
        assert_eq!(h.cc.rtt_min(), 50 * MS);
        h.timeout();
        let want = h.cc.bw_rtt_min(1448);
        assert_eq!((h.s.ssthresh, h.s.cwnd), (want, 1));
        // The next ACK takes the latest RTT (150 ms) as RTTmin afresh.
        h.ack(1);
        assert_eq!(h.cc.rtt_min(), 150 * MS);
    }

    #[test]
    fn linux_2_6_22_takes_rtt_min_from_the_smoothed_rtt() {
        // The path's RTT is 100 ms but the smoothed RTT still carries 180 ms of
        // a queue that has drained: today's RTTmin is the sample, 2.6.22's the
        // srtt, so after a loss 2.6.22 keeps a window 1.8 times as large.
        let mut got = Vec::new();
        for stack in [crate::stack::Stack::Linux2622, crate::stack::Stack::Linux66] {
            let mut h = Harness::for_stack(stack, "westwood", 100);
            h.s.ssthresh = 10;
            h.s.cwnd_clamp = 100;
            for _ in 0..60 {
                h.s.srtt = 180 * MS;
                h.ack_round();
            }
            let Cc::Westwood(w) = &h.cc else { unreachable!() };
            got.push((w.rtt_min(), w.bw_rtt_min(1448)));
        }
        assert_eq!((got[0].0, got[1].0), (180 * MS, 100 * MS));
        assert!((176..=180).contains(&got[0].1) && (98..=100).contains(&got[1].1), "{got:?}");
    }

    #[test]
    fn the_window_has_a_floor_of_two() {
        let mut w = westwood();
        w.bw_est = 1; // a byte per jiffy
        w.rtt_min = 100;
        assert_eq!(w.bw_rtt_min(1448), 2);
    }

    #[test]
    fn bw_rtt_min_is_bytes_per_jiffy_times_jiffies_over_mss() {
        // 100 Mbit/s is 12500 B per jiffy; x 50 jiffies / 1448 B = 431.6 -> 431.
        let mut w = westwood();
        (w.bw_est, w.rtt_min) = (12_500, 50);
        assert_eq!(w.bw_rtt_min(1448), 431);
        // The product is a u32 in Linux: 2^31 x 2 wraps to 0, then the floor of 2.
        (w.bw_est, w.rtt_min) = (1 << 31, 2);
        assert_eq!(w.bw_rtt_min(1448), 2);
    }

    #[test]
    fn names_and_parameters() {
        assert!(matches!(crate::cc::Cc::from_config("westwoodplus", &Map::new()), Ok(crate::cc::Cc::Westwood(_))));
        let mut p = Map::new();
        p.insert("rtt_window_min_s".into(), 0.1.into());
        assert_eq!(crate::cc::params::parse_map(&p).map(|c| Westwood::new(&c)).unwrap().window_min, 100);
        p.insert("beta".into(), 0.5.into());
        assert!(crate::cc::params::parse_map(&p).map(|c| Westwood::new(&c)).unwrap_err().contains("params.beta"));
    }
}
