//! Traffic generators that are not TCP: UDP streams at a constant or sinusoidal
//! rate. The sinusoidal "stiff" source follows Hacker's cross traffic used by
//! Bullot et al. (seed 000, section 3): rate(t) = mean + A sin(2 pi t / T + phi),
//! clipped at zero; each packet's gap is recomputed from the rate at its
//! departure, so the offered rate tracks the curve packet by packet.

use crate::config::UdpConfig;
use crate::net::{Kind, Packet};
use crate::time::{Time, SEC};

/// IP (20) + UDP (8) header bytes.
pub const UDP_HEADER: u32 = 28;

pub struct UdpSource {
    pub stream: u32,
    pub dst: u32,
    cfg: UdpConfig,
    seq: u64,
    pub sent_bytes: u64,
    pub delivered_bytes: u64,
    pub sent_packets: u64,
    pub delivered_packets: u64,
}

impl UdpSource {
    pub fn new(stream: u32, dst: u32, cfg: UdpConfig) -> Self {
        UdpSource { stream, dst, cfg, seq: 0, sent_bytes: 0, delivered_bytes: 0, sent_packets: 0, delivered_packets: 0 }
    }

    pub fn start(&self) -> Time {
        self.cfg.start_ns
    }

    /// Offered rate at `now`, bits per second (never negative).
    pub fn rate_at(&self, now: Time) -> f64 {
        let t = now.saturating_sub(self.cfg.start_ns) as f64 / SEC as f64;
        let period = self.cfg.period_ns as f64 / SEC as f64;
        let angle = 2.0 * std::f64::consts::PI * (t / period + self.cfg.phase);
        (self.cfg.rate_bps + self.cfg.amplitude_bps * angle.sin()).max(0.0)
    }

    fn active(&self, now: Time) -> bool {
        now >= self.cfg.start_ns && self.cfg.stop_ns.is_none_or(|s| now < s)
    }

    /// Emit one packet if active; returns it and when to call again.
    pub fn emit(&mut self, now: Time) -> (Option<Packet>, Option<Time>) {
        if !self.active(now) {
            return (None, None);
        }
        let rate = self.rate_at(now);
        let bytes = self.cfg.packet_bytes;
        if rate <= 0.0 {
            // Clipped at zero: look again a thousandth of a period later.
            return (None, Some(now + (self.cfg.period_ns / 1000).max(1)));
        }
        let mut p = Packet::data(self.stream, self.dst, self.seq, bytes - UDP_HEADER, bytes, now);
        p.kind = Kind::Udp;
        self.seq += 1;
        self.sent_bytes += bytes as u64;
        self.sent_packets += 1;
        let gap = (bytes as f64 * 8.0 / rate * SEC as f64).round() as Time;
        (Some(p), Some(now + gap.max(1)))
    }

    /// A packet of this stream reached the sink.
    pub fn on_delivered(&mut self, p: &Packet) {
        self.delivered_bytes += p.wire_bytes as u64;
        self.delivered_packets += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(rate: f64, amp: f64) -> UdpConfig {
        UdpConfig {
            rate_bps: rate,
            amplitude_bps: amp,
            period_ns: 4 * SEC,
            phase: 0.0,
            start_ns: 0,
            stop_ns: Some(8 * SEC),
            packet_bytes: 1500,
            direction: "forward".into(),
            path: None,
            rtt_ns: 0,
        }
    }

    #[test]
    fn constant_rate_gap_is_packet_time() {
        let mut s = UdpSource::new(0, 1, cfg(12e6, 0.0));
        let (p, next) = s.emit(0);
        assert_eq!(p.unwrap().wire_bytes, 1500);
        assert_eq!(next, Some(1_000_000)); // 12000 bits at 12 Mbit/s = 1 ms
    }

    #[test]
    fn sinusoid_peaks_a_quarter_period_in_and_clips_at_zero() {
        let s = UdpSource::new(0, 1, cfg(10e6, 5e6));
        assert!((s.rate_at(SEC) - 15e6).abs() < 1.0);
        assert!((s.rate_at(3 * SEC) - 5e6).abs() < 1.0);
        let deep = UdpSource::new(0, 1, cfg(1e6, 5e6));
        assert_eq!(deep.rate_at(3 * SEC), 0.0);
    }

    #[test]
    fn mean_offered_rate_over_a_period_is_the_mean() {
        let mut s = UdpSource::new(0, 1, cfg(10e6, 5e6));
        let mut t = 0;
        while let (_, Some(next)) = s.emit(t) {
            t = next;
        }
        let mean = s.sent_bytes as f64 * 8.0 / 8.0;
        assert!((mean / 10e6 - 1.0).abs() < 0.01, "mean {mean}");
    }
}
