//! Step marking, the queue DCTCP expects (RFC 8257 section 3.1; Alizadeh et al.,
//! "Data Center TCP", SIGCOMM 2010, section 3.1): an arriving packet is marked
//! CE when the instantaneous queue it finds holds more than K, packets or
//! bytes. Nothing is dropped below the buffer limit; a Not-ECT packet above K
//! passes unmarked (the switch's ECN marking applies to ECN-capable packets).

use super::packet::Packet;
use super::queue::Limit;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// K: mark above this occupancy.
    pub threshold: Limit,
}

impl Step {
    /// Mark `p` if the queue it finds (`pkts`, `bytes`, before it joins) is
    /// above the threshold; true if it was marked.
    pub fn on_arrival(&self, p: &mut Packet, pkts: usize, bytes: u64) -> bool {
        let above = match self.threshold {
            Limit::Packets(k) => pkts as u64 > k,
            Limit::Bytes(k) => bytes > k,
        };
        above && p.mark_ce()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::Ecn;

    #[test]
    fn marks_ect_arrivals_strictly_above_the_threshold() {
        let step = Step { threshold: Limit::Packets(20) };
        let mut p = Packet::data(0, 1, 0, 1448, 1500, 0);
        p.ecn = Ecn::Ect0;
        assert!(!step.on_arrival(&mut p, 20, 30_000));
        assert_eq!(p.ecn, Ecn::Ect0);
        assert!(step.on_arrival(&mut p, 21, 31_500));
        assert_eq!(p.ecn, Ecn::Ce);
        let mut plain = Packet::data(0, 1, 0, 1448, 1500, 0);
        assert!(!step.on_arrival(&mut plain, 100, 150_000), "Not-ECT passes unmarked");
        let bytes = Step { threshold: Limit::Bytes(30_000) };
        let mut q = Packet::data(0, 1, 0, 1448, 1500, 0);
        q.ecn = Ecn::Ect0;
        assert!(!bytes.on_arrival(&mut q, 20, 30_000) && bytes.on_arrival(&mut q, 20, 30_001));
    }
}
