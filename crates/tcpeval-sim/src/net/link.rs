//! A unidirectional link: an output queue, a serialiser at a fixed rate, and a
//! propagation pipe. Packets on the pipe keep their order (fixed delay), so the link
//! needs at most one pending event for departures and one for arrivals, whatever
//! the number of packets in flight: the scheduler stays as small as the topology.

use super::packet::{Kind, Packet};
use super::queue::{Bypass, Queue};
use crate::rng::Rng;
use crate::time::{tx_time_ps, Time};
use std::collections::VecDeque;

#[derive(Debug, Default, Clone, Copy)]
pub struct LinkCounters {
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_data_packets: u64,
    pub drops_random: u64,
    /// Data packets dropped at random (`loss`; the queue counts its own drops,
    /// `data_drop_bytes` sums both), for the conservation check.
    pub data_drops: u64,
    pub data_drop_bytes: u64,
}

/// What the simulation must schedule after a link operation.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LinkWake {
    /// Schedule the link's next departure (serialiser free) at this time.
    pub tx_done_at: Option<Time>,
    /// Schedule the link's next arrival at the far end at this time.
    pub arrive_at: Option<Time>,
}

pub struct Link {
    pub name: String,
    pub rate_bps: f64,
    pub delay: Time,
    /// Node at the far end.
    pub to: u32,
    pub queue: Queue,
    /// Random drop probability for data packets entering this link.
    pub loss: f64,
    /// Upper end of a random extra time, uniform in [0, send_overhead), that the
    /// serialiser spends on each packet: a sending host's processing jitter, as
    /// ns-2's TCP `overhead_` (tcp.cc, the delayed-send timer "to avoid phase
    /// effects"; Floyd and Jacobson, "On Traffic Phase Effects in Packet-Switched
    /// Gateways", 1992). It keeps packets in order. Zero draws nothing.
    pub send_overhead: Time,
    rng: Rng,
    /// The serialiser is busy until this time. A packet holds it for its exact
    /// serialisation time rounded up to a whole nanosecond, since the next one
    /// starts at the completion event (docs/model.md, "Links").
    busy_until: Time,
    /// The last packet size and rate serialised and its time in picoseconds and
    /// in whole nanoseconds (rounded up): nearly every packet repeats them, which
    /// saves a float division, a rounding and an integer division per packet.
    last_tx: (u32, f64, u64, Time),
    tx_done_pending: bool,
    pipe: VecDeque<(Time, Packet)>,
    pub counters: LinkCounters,
}

impl Link {
    pub fn new(name: &str, rate_bps: f64, delay: Time, to: u32, queue: Queue, rng: Rng) -> Self {
        Link {
            name: name.to_string(),
            rate_bps,
            delay,
            to,
            queue,
            loss: 0.0,
            send_overhead: 0,
            rng,
            busy_until: 0,
            last_tx: (0, 0.0, 0, 0),
            tx_done_pending: false,
            pipe: VecDeque::new(),
            counters: LinkCounters::default(),
        }
    }

    /// Serialisation time of `bytes`: picoseconds and whole nanoseconds.
    fn tx_time(&mut self, bytes: u32) -> (u64, Time) {
        if (self.last_tx.0, self.last_tx.1) != (bytes, self.rate_bps) {
            let ps = tx_time_ps(bytes, self.rate_bps);
            self.last_tx = (bytes, self.rate_bps, ps, ps.div_ceil(1000));
        }
        (self.last_tx.2, self.last_tx.3)
    }

    /// Start serialising `p` now (the serialiser must be free) and put it on the
    /// pipe; returns the arrival to schedule if the pipe was empty. (Returned,
    /// not written through a `&mut LinkWake`: the caller's wake then stays in
    /// registers instead of being stored in halves and reloaded whole, a store
    /// forwarding stall perf showed in `offer`.)
    ///
    /// Always inlined into its two callers: 18 of its 78 instructions a call
    /// were its prologue and epilogue (callgrind, scenario e, issue 29).
    #[inline(always)]
    fn transmit(&mut self, p: &Packet, now: Time) -> Option<Time> {
        let (ps, ns) = self.tx_time(p.wire_bytes);
        let hold = if self.send_overhead == 0 { ns } else { (ps + self.overhead_ps()).div_ceil(1000) };
        self.busy_until = self.busy_until.max(now) + hold;
        self.counters.tx_bytes += p.wire_bytes as u64;
        self.counters.tx_packets += 1;
        if p.kind != Kind::Ack {
            self.counters.tx_data_packets += 1;
        }
        let arrive = self.busy_until + self.delay;
        let first = self.pipe.is_empty();
        self.pipe.push_back((arrive, *p));
        first.then_some(arrive)
    }

    /// This packet's share of the host's send overhead (nonzero), in picoseconds.
    fn overhead_ps(&mut self) -> u64 {
        (self.rng.uniform() * self.send_overhead as f64 * 1000.0) as u64
    }

    /// A packet offered to the link by the node at its near end.
    pub fn offer(&mut self, p: &Packet, now: Time) -> LinkWake {
        let mut wake = LinkWake::default();
        if self.loss > 0.0 && p.kind == Kind::Data && self.rng.bernoulli(self.loss) {
            self.queue.stats.arrivals += 1;
            self.counters.drops_random += 1;
            self.counters.data_drops += 1;
            self.counters.data_drop_bytes += p.payload as u64;
            return wake;
        }
        if !self.tx_done_pending && self.busy_until <= now && self.queue.is_empty() {
            wake.arrive_at = match self.queue.bypass(p, now, &mut self.rng) {
                Bypass::Send => self.transmit(p, now),
                Bypass::SendThis(q) => self.transmit(&q, now),
                Bypass::Drop => None,
            };
        } else if self.queue.enqueue(p, now, &mut self.rng) && !self.tx_done_pending {
            self.tx_done_pending = true;
            wake.tx_done_at = Some(self.busy_until);
        }
        wake
    }

    /// The serialiser finished a packet: start the next queued one, if any.
    pub fn on_tx_done(&mut self, now: Time) -> LinkWake {
        let mut wake = LinkWake::default();
        self.tx_done_pending = false;
        if let Some(p) = self.queue.dequeue(now) {
            wake.arrive_at = self.transmit(&p, now);
            if !self.queue.is_empty() {
                self.tx_done_pending = true;
                wake.tx_done_at = Some(self.busy_until);
            }
        }
        wake
    }

    /// The packet at the head of the pipe, which reaches the far end now.
    ///
    /// Read through a reference, then popped by `on_arrive`: `pop_front`
    /// returns an Option whose niche byte makes the compiler copy the packet's
    /// tail in pieces, and reading it back whole then stalls on store
    /// forwarding (perf annotate of Simulation::handle, issue 29).
    pub fn arriving(&self) -> &Packet {
        &self.pipe.front().expect("arrival event with an empty pipe").1
    }

    /// The head of the pipe reached the far end: drop it and report when the
    /// next one arrives.
    pub fn on_arrive(&mut self) -> Option<Time> {
        self.pipe.pop_front();
        self.pipe.front().map(|(t, _)| *t)
    }

    /// Give the queue's and the pipe's memory back where they are empty (the
    /// access links of a finished transfer; they regrow if used again).
    pub fn release_if_idle(&mut self) {
        self.queue.release_if_empty();
        if self.pipe.is_empty() {
            self.pipe = VecDeque::new();
        }
    }

    /// Nothing queued, being serialised or on the wire.
    pub fn is_idle(&self) -> bool {
        !self.tx_done_pending && self.queue.is_empty() && self.pipe.is_empty()
    }

    /// Packets' worth of buffer memory held by the queue and the pipe.
    pub fn reserved_packets(&self) -> usize {
        self.queue.reserved_packets() + self.pipe.capacity()
    }

    /// How many more packets the link accepts now without dropping: free queue
    /// slots, plus one if the serialiser is idle (a host's interface queue applies
    /// back-pressure to its sender).
    pub fn room(&self, now: Time) -> u64 {
        let idle = !self.tx_done_pending && self.busy_until <= now && self.queue.is_empty();
        self.queue.free_packets() + idle as u64
    }

    /// Packets queued or being serialised: what a host's interface holds of
    /// its sender's (tcp::tsq counts them until they leave it).
    pub fn occupancy(&self, now: Time) -> u32 {
        self.queue.len() as u32 + u32::from(self.busy_until > now)
    }

    /// Packets on the wire or being serialised (not yet at the far end).
    pub fn in_pipe(&self) -> usize {
        self.pipe.len()
    }

    /// Data packets and payload bytes queued or on the wire (for conservation checks).
    pub fn data_in_transit(&self) -> (u64, u64) {
        let data = self.pipe.iter().map(|(_, p)| p).filter(|p| p.kind == Kind::Data);
        data.fold(self.queue.data_queued(), |(n, b), p| (n + 1, b + p.payload as u64))
    }

    /// Payload bytes of data packets dropped here, at random or by the queue.
    pub fn data_drop_bytes(&self) -> u64 {
        self.counters.data_drop_bytes + self.queue.stats.data_drop_bytes
    }

    /// Drops of any cause.
    pub fn drops(&self) -> u64 {
        self.queue.stats.drops + self.counters.drops_random
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::Limit;
    use proptest::prelude::{any, prop_assert, prop_assert_eq, proptest};

    const RATE: f64 = 1e9; // 1500 bytes take 12 us
    const TX_NS: Time = 12_000;

    fn link(overhead: Time, seed: u64) -> Link {
        let mut l = Link::new("access-up", RATE, 1_000, 1, Queue::drop_tail(Limit::Packets(1 << 20)), Rng::new(seed, 7));
        l.send_overhead = overhead;
        l
    }

    /// Offer `n` back-to-back packets at time 0 and drain the link; the arrival
    /// times at the far end, in the order packets arrive.
    fn arrivals(l: &mut Link, n: u64) -> Vec<(Time, u64)> {
        arrivals_of_sizes(l, &vec![1500; n as usize])
    }

    /// As `arrivals`, for packets of the given wire sizes.
    fn arrivals_of_sizes(l: &mut Link, sizes: &[u32]) -> Vec<(Time, u64)> {
        let mut done = None;
        for (seq, &wire) in sizes.iter().enumerate() {
            let wake = l.offer(&Packet::data(0, 1, seq as u64, wire - 52, wire, 0), 0);
            done = done.or(wake.tx_done_at);
        }
        while let Some(t) = done {
            done = l.on_tx_done(t).tx_done_at;
        }
        l.pipe.iter().map(|(t, p)| (*t, p.seq)).collect()
    }

    #[test]
    fn no_overhead_sends_at_the_line_rate() {
        let got = arrivals(&mut link(0, 1), 5);
        let want: Vec<(Time, u64)> = (0..5).map(|k| ((k + 1) * TX_NS + 1_000, k)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn overhead_adds_half_its_range_per_packet_on_average() {
        let overhead = 10_000;
        let n = 20_000;
        let got = arrivals(&mut link(overhead, 3), n);
        let gaps: Vec<f64> = got.windows(2).map(|w| (w[1].0 - w[0].0) as f64).collect();
        let mean_extra = gaps.iter().sum::<f64>() / gaps.len() as f64 - TX_NS as f64;
        // Uniform on [0, 10 us): mean 5 us, standard error 2.9 us / sqrt(20,000) = 20 ns.
        assert!((mean_extra - 5_000.0).abs() < 100.0, "{mean_extra}");
        let (lo, hi) = gaps.iter().fold((f64::MAX, 0.0_f64), |(a, b), &g| (a.min(g), b.max(g)));
        assert!(lo >= TX_NS as f64 && hi <= (TX_NS + overhead) as f64 + 1.0, "{lo} {hi}");
        assert!(hi - lo > 0.9 * overhead as f64, "the draws should span the range: {lo} {hi}");
    }

    #[test]
    fn overhead_is_reproducible_from_the_seed() {
        let a = arrivals(&mut link(5_000, 11), 100);
        assert_eq!(a, arrivals(&mut link(5_000, 11), 100));
        assert_ne!(a, arrivals(&mut link(5_000, 12), 100));
    }

    proptest! {
        /// At any rate, also one that does not divide a packet into whole
        /// nanoseconds, and with mixed sizes, back-to-back packets leave one
        /// serialisation time apart, each rounded up to a whole nanosecond.
        #[test]
        fn back_to_back_packets_take_their_time_rounded_up(rate in 1e6f64..1e11, sizes in proptest::collection::vec(60u32..9000, 1..300)) {
            let mut l = Link::new("x", rate, 1_000, 1, Queue::drop_tail(Limit::Packets(1 << 20)), Rng::new(1, 7));
            let got = arrivals_of_sizes(&mut l, &sizes);
            let mut total_ns = 0;
            for (k, &wire) in sizes.iter().enumerate() {
                total_ns += tx_time_ps(wire, rate).div_ceil(1000);
                prop_assert_eq!(got[k], (total_ns + 1_000, k as u64));
            }
        }

        /// Whatever the overhead, packets leave in order, never earlier than the
        /// line rate allows and never later than the rate plus the overhead.
        #[test]
        fn overhead_keeps_order_and_bounds(overhead in 0u64..100_000, seed in any::<u64>(), n in 1u64..200) {
            let got = arrivals(&mut link(overhead, seed), n);
            prop_assert_eq!(got.len() as u64, n);
            for (k, w) in got.windows(2).enumerate() {
                prop_assert_eq!(w[0].1 + 1, w[1].1, "reordered at {}", k);
                let gap = w[1].0 - w[0].0;
                prop_assert!(gap + 1 >= TX_NS && gap <= TX_NS + overhead + 1, "gap {}", gap);
            }
        }
    }
}
