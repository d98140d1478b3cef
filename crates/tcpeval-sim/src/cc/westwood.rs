//! Westwood+ (Mascolo et al. 2001; Grieco & Mascolo 2004) as Linux ships it
//! (`net/ipv4/tcp_westwood.c`). Reno's increase; a bandwidth estimate from the
//! data acknowledged over windows of max(RTT, 50 ms), filtered twice with gain
//! 1/8; and after a loss (at the end of recovery) cwnd = ssthresh =
//! max(BWE x RTTmin / MSS, 2), so the window falls to what the path carried
//! rather than to half. At a timeout ssthresh is set the same way and cwnd = 1.

use super::params::AlgorithmConfig;
use super::reno::Reno;
use super::{AckSample, CaEvent, CcState, CongestionOps};
use crate::time::{Time, MS, SEC};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Linux `TCP_WESTWOOD_RTT_MIN` (HZ/20): the shortest sampling window, so that
/// short RTTs (LANs) do not give bandwidth samples over tiny intervals.
pub const RTT_WINDOW_MIN: Time = 50 * MS;
/// Linux `TCP_WESTWOOD_INIT_RTT` (20 s): the RTT assumed until a sample arrives.
pub const INIT_RTT: Time = 20 * SEC;
/// Linux `westwood_do_filter`: each stage keeps 7/8 of its value.
const FILTER_KEEP: f64 = 7.0;
const FILTER_DIV: f64 = 8.0;

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

#[derive(Clone, Debug)]
pub struct Westwood {
    window_min: Time,
    /// Bandwidth estimates in bytes per second (first and second filter stage).
    bw_ns_est: f64,
    bw_est: f64,
    window_start: Time,
    bytes_in_window: u64,
    rtt: Time,
    rtt_min: Time,
    reset_rtt_min: bool,
    reno: Reno,
    version: WestwoodVersion,
}

impl Westwood {
    pub fn new(cfg: &WestwoodConfig) -> Self {
        Westwood {
            window_min: (cfg.rtt_window_min_s * SEC as f64) as Time,
            bw_ns_est: 0.0,
            bw_est: 0.0,
            window_start: 0,
            bytes_in_window: 0,
            rtt: INIT_RTT,
            rtt_min: INIT_RTT,
            reset_rtt_min: true,
            reno: Reno,
            version: WestwoodVersion::Current,
        }
    }

    /// Run the code of another era (crate::stack).
    pub fn set_version(&mut self, version: WestwoodVersion) {
        self.version = version;
    }

    /// The bandwidth estimate, bytes per second.
    pub fn bandwidth(&self) -> f64 {
        self.bw_est
    }

    pub fn rtt_min(&self) -> Time {
        self.rtt_min
    }

    /// Linux `tcp_westwood_bw_rttmin`: the window the path carried, in packets.
    pub fn bw_rtt_min(&self, mss: u32) -> u32 {
        ((self.bw_est * self.rtt_min as f64 / 1e9 / mss as f64) as u32).max(2)
    }

    fn filter(&mut self, elapsed: Time) {
        let sample = self.bytes_in_window as f64 * 1e9 / elapsed as f64;
        if self.bw_ns_est == 0.0 && self.bw_est == 0.0 {
            self.bw_ns_est = sample;
            self.bw_est = sample;
        } else {
            self.bw_ns_est = (FILTER_KEEP * self.bw_ns_est + sample) / FILTER_DIV;
            self.bw_est = (FILTER_KEEP * self.bw_est + self.bw_ns_est) / FILTER_DIV;
        }
    }
}

impl CongestionOps for Westwood {
    fn init(&mut self, s: &mut CcState) {
        self.window_start = s.now;
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.reno.ssthresh(s)
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        self.reno.cong_avoid(s, acked);
    }

    fn pkts_acked(&mut self, s: &mut CcState, sample: &AckSample) {
        // Linux `tcp_westwood_ack` (the in_ack_event hook, which runs before
        // pkts_acked): close the sampling window if max(RTT, 50 ms) has passed,
        // count the data, update RTTmin, all with the previous ACK's RTT.
        let elapsed = s.now.saturating_sub(self.window_start);
        if elapsed > self.rtt.max(self.window_min) {
            self.filter(elapsed);
            self.bytes_in_window = 0;
            self.window_start = s.now;
        }
        // Delivered (acked or SACKed) data: Linux counts duplicate ACKs as one
        // MSS each and corrects later; counting delivered packets is the same.
        self.bytes_in_window += sample.acked as u64 * s.mss as u64;
        self.rtt_min = if self.reset_rtt_min { self.rtt } else { self.rtt_min.min(self.rtt) };
        self.reset_rtt_min = false;
        // Linux `tcp_westwood_pkts_acked`: remember this ACK's RTT sample
        // (2.6.22: the smoothed RTT, once there is one, if packets were acked).
        match self.version {
            WestwoodVersion::Current => {
                if let Some(rtt) = sample.rtt {
                    self.rtt = rtt;
                }
            }
            WestwoodVersion::Linux2622 => {
                if sample.acked > 0 && s.srtt > 0 {
                    self.rtt = s.srtt;
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

    #[test]
    fn two_stage_filter_first_sample_fills_both() {
        let mut w = westwood();
        w.bytes_in_window = 1000;
        w.filter(SEC); // 1000 B/s: both stages take it
        assert_eq!((w.bw_ns_est, w.bw_est), (1000.0, 1000.0));
        w.bytes_in_window = 2000;
        w.filter(SEC);
        // bw_ns = (7 * 1000 + 2000) / 8 = 1125; bw = (7 * 1000 + 1125) / 8 = 1015.625.
        assert_eq!((w.bw_ns_est, w.bw_est), (1125.0, 1015.625));
    }

    #[test]
    fn samples_span_at_least_fifty_ms_or_one_rtt() {
        let (mut w, mut s) = (westwood(), CcState::new(10, 1448));
        w.init(&mut s);
        // RTT 20 ms: ACKs of 10 packets at 10 and 40 ms stay in the first window
        // (the first is judged against the initial 20 s RTT, the second against
        // max(20, 50) ms); the ACK at 60 ms closes it: 2 x 14480 B / 60 ms.
        ack(&mut w, &mut s, 10 * MS, 10, 20 * MS);
        ack(&mut w, &mut s, 40 * MS, 10, 20 * MS);
        assert_eq!(w.bandwidth(), 0.0);
        ack(&mut w, &mut s, 60 * MS, 10, 20 * MS);
        assert!((w.bandwidth() - 28_960.0 / 0.060).abs() < 1e-6, "{}", w.bandwidth());
        // Its own 10 packets open the next window; with RTT 100 ms that one
        // closes only after 100 ms: not at 150 ms, at 161 ms.
        ack(&mut w, &mut s, 100 * MS, 10, 100 * MS);
        ack(&mut w, &mut s, 150 * MS, 10, 100 * MS);
        let first = w.bandwidth();
        assert_eq!(first, 28_960.0 / 0.060);
        ack(&mut w, &mut s, 161 * MS, 10, 100 * MS);
        assert!(w.bandwidth() != first);
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
        w.bw_est = 1.0; // a byte per second
        assert_eq!(w.bw_rtt_min(1448), 2);
    }

    #[test]
    fn names_and_parameters() {
        assert!(matches!(crate::cc::Cc::from_config("westwoodplus", &Map::new()), Ok(crate::cc::Cc::Westwood(_))));
        let mut p = Map::new();
        p.insert("rtt_window_min_s".into(), 0.1.into());
        assert_eq!(crate::cc::params::parse_map(&p).map(|c| Westwood::new(&c)).unwrap().window_min, 100 * MS);
        p.insert("beta".into(), 0.5.into());
        assert!(crate::cc::params::parse_map(&p).map(|c| Westwood::new(&c)).unwrap_err().contains("params.beta"));
    }
}
