//! Westwood+ (Mascolo et al. 2001; Grieco & Mascolo 2004) as Linux ships it
//! (`net/ipv4/tcp_westwood.c`). Reno's increase; a bandwidth estimate from the
//! data acknowledged over windows of max(RTT, 50 ms), filtered twice with gain
//! 1/8; and after a loss (at the end of recovery) cwnd = ssthresh =
//! max(BWE x RTTmin / MSS, 2), so the window falls to what the path carried
//! rather than to half. At a timeout ssthresh is set the same way and cwnd = 1.

use super::params::Params;
use super::reno::Reno;
use super::{AckSample, CaEvent, CcState, CongestionOps};
use crate::time::{Time, MS, SEC};
use serde_json::{Map, Value};

/// Linux TCP_WESTWOOD_RTT_MIN: the shortest sampling window.
const RTT_WINDOW_MIN: Time = 50 * MS;
/// Linux TCP_WESTWOOD_INIT_RTT (20 s) until a sample arrives.
const INIT_RTT: Time = 20 * SEC;

#[derive(Clone, Debug)]
pub struct Westwood {
    /// Bandwidth estimates in bytes per second (first and second filter stage).
    bw_ns_est: f64,
    bw_est: f64,
    window_start: Time,
    bytes_in_window: u64,
    rtt: Time,
    rtt_min: Time,
    reset_rtt_min: bool,
    reno: Reno,
}

impl Westwood {
    pub fn from_params(map: &Map<String, Value>) -> Result<Self, String> {
        Params::new("westwood", map, &[])?;
        Ok(Westwood {
            bw_ns_est: 0.0,
            bw_est: 0.0,
            window_start: 0,
            bytes_in_window: 0,
            rtt: INIT_RTT,
            rtt_min: INIT_RTT,
            reset_rtt_min: true,
            reno: Reno,
        })
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
            self.bw_ns_est = (7.0 * self.bw_ns_est + sample) / 8.0;
            self.bw_est = (7.0 * self.bw_est + self.bw_ns_est) / 8.0;
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
        if let Some(rtt) = sample.rtt {
            self.rtt = rtt;
        }
        let elapsed = s.now.saturating_sub(self.window_start);
        if elapsed > self.rtt.max(RTT_WINDOW_MIN) {
            self.filter(elapsed);
            self.bytes_in_window = 0;
            self.window_start = s.now;
        }
        // Delivered (acked or SACKed) data: Linux counts duplicate ACKs as one
        // MSS each and corrects later; counting delivered packets is the same.
        self.bytes_in_window += sample.acked as u64 * s.mss as u64;
        self.rtt_min = if self.reset_rtt_min { self.rtt } else { self.rtt_min.min(self.rtt) };
        self.reset_rtt_min = false;
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
            CaEvent::TxStart => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::harness::Harness;

    #[test]
    fn estimate_is_the_delivery_rate_and_sets_the_window_after_loss() {
        // 100 packets per 100 ms RTT of 1448 B: 1.448 MB/s.
        let mut h = Harness::new(Westwood::from_params(&Map::new()).unwrap(), 100);
        h.cc.init(&mut h.s);
        h.s.ssthresh = 10;
        h.s.cwnd_clamp = 100; // hold the rate constant
        for _ in 0..60 {
            h.ack_round();
        }
        let bw = h.cc.bandwidth();
        assert!((bw / 1.448e6 - 1.0).abs() < 0.02, "estimate {bw}");
        // After recovery: cwnd = ssthresh = BWE x RTTmin / MSS = 100 packets, not 50.
        h.lose();
        assert_eq!((h.s.ssthresh, h.s.cwnd), (h.cc.bw_rtt_min(1448), h.cc.bw_rtt_min(1448)));
        assert!((98..=100).contains(&h.s.cwnd), "cwnd {}", h.s.cwnd);
    }
}
