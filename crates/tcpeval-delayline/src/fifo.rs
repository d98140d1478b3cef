//! The delay scheduler: a fixed-capacity FIFO per queue (or route) that holds
//! each packet until its due time = arrival + delay, and the per-queue counters
//! reported at exit. Times are nanoseconds on whatever clock the mode uses
//! (see `main.rs`); the scheduler itself never reads a clock, so it is tested
//! with hand-picked times.
//!
//! Release is strictly FIFO: NFQUEUE verdicts are batched by packet id (a batch
//! verdict accepts every id up to the given one), so a packet can never
//! overtake an earlier one. A constant delay preserves arrival order anyway.

/// One held packet: due time and what the mode needs to release it
/// (an NFQUEUE packet id, or a TUN buffer slot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Held<T> {
    due_ns: u64,
    item: T,
}

/// Upper edges (microseconds) of the lateness histogram's buckets; one more,
/// open bucket counts the rest. They bracket the testbed's gates (mean below
/// 1% of the RTT, 200 us at 20 ms; largest at most a quarter RTT or 10 ms).
pub const LATE_EDGES_US: [u64; 7] = [50, 100, 200, 500, 1_000, 2_000, 5_000];
/// Packets released this late or later are logged with their release time,
/// so a run's lateness can be laid beside what the endpoints saw at that
/// moment (a delay-based algorithm reacts to a single late sample).
pub const LATE_LOG_OVER_NS: u64 = 250_000;
/// Log entries kept per queue (the first ones; later ones are only counted).
pub const LATE_LOG_CAPACITY: usize = 512;

/// Counters of one queue or route, as printed in the exit JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Packets released.
    pub pkts: u64,
    /// Largest number of packets held at once.
    pub maxdepth: usize,
    /// Sum and maximum of (release time - due time).
    pub late_sum_ns: u64,
    pub late_max_ns: u64,
    /// Packets per lateness bucket (edges LATE_EDGES_US).
    pub late_hist: [u64; LATE_EDGES_US.len() + 1],
    /// Packets released LATE_LOG_OVER_NS late or later (logged or not).
    pub late_over: u64,
    /// NFQUEUE packets without NFQA_TIMESTAMP (delayed from receive time instead).
    pub no_kernel_ts: u64,
    /// recv() reported ENOBUFS: the kernel could not deliver (and dropped) packets.
    pub enobufs: u64,
    /// TUN packets matching no route (forwarded with zero delay).
    pub unmatched: u64,
    /// Packets the delay line had to drop (ring full, oversize, write error).
    pub dropped: u64,
    /// NFQUEUE packets the kernel dropped for this queue: queue full plus
    /// failed deliveries to us (/proc/net/netfilter/nfnetlink_queue).
    pub kernel_dropped: u64,
}

impl Stats {
    pub fn late_mean_us(&self) -> f64 {
        if self.pkts == 0 {
            0.0
        } else {
            self.late_sum_ns as f64 / self.pkts as f64 / 1e3
        }
    }

    fn count_late(&mut self, late_ns: u64) {
        self.pkts += 1;
        self.late_sum_ns += late_ns;
        self.late_max_ns = self.late_max_ns.max(late_ns);
        let bucket = LATE_EDGES_US.partition_point(|&e| e * 1000 <= late_ns);
        self.late_hist[bucket] += 1;
    }
}

/// A packet released late: its release time (the mode's clock) and lateness.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LateEvent {
    pub release_ns: u64,
    pub late_ns: u64,
}

/// Fixed-capacity ring of held packets with the queue's delay and counters.
/// All memory is allocated in `new`; `push`/`pop_due` never allocate.
#[derive(Debug)]
pub struct DelayQueue<T> {
    ring: Vec<Held<T>>,
    head: usize,
    len: usize,
    delay_ns: u64,
    pub stats: Stats,
    /// The first LATE_LOG_CAPACITY releases at least LATE_LOG_OVER_NS late.
    pub late_log: Vec<LateEvent>,
}

impl<T: Copy + Default> DelayQueue<T> {
    pub fn new(capacity: usize, delay_us: u64) -> DelayQueue<T> {
        assert!(capacity > 0, "capacity must be positive");
        DelayQueue {
            ring: vec![
                Held {
                    due_ns: 0,
                    item: T::default()
                };
                capacity
            ],
            head: 0,
            len: 0,
            delay_ns: delay_us * 1000,
            stats: Stats::default(),
            late_log: Vec::with_capacity(LATE_LOG_CAPACITY),
        }
    }

    pub fn capacity(&self) -> usize {
        self.ring.len()
    }

    /// Holds `item`, which arrived at `arrival_ns`, until arrival + delay.
    /// Gives the item back when the ring is full (the caller drops it).
    pub fn push(&mut self, arrival_ns: u64, item: T) -> Result<(), T> {
        if self.len == self.ring.len() {
            return Err(item);
        }
        let tail = (self.head + self.len) % self.ring.len();
        self.ring[tail] = Held {
            due_ns: arrival_ns.saturating_add(self.delay_ns),
            item,
        };
        self.len += 1;
        self.stats.maxdepth = self.stats.maxdepth.max(self.len);
        Ok(())
    }

    /// Due time of the oldest held packet.
    pub fn next_due(&self) -> Option<u64> {
        (self.len > 0).then(|| self.ring[self.head].due_ns)
    }

    /// Removes the oldest packet if it is due at `now_ns`, counting its
    /// lateness (`now_ns` is taken as its release time).
    pub fn pop_due(&mut self, now_ns: u64) -> Option<T> {
        let held = self.ring[self.head];
        if self.len == 0 || held.due_ns > now_ns {
            return None;
        }
        self.head = (self.head + 1) % self.ring.len();
        self.len -= 1;
        let late = now_ns - held.due_ns;
        self.stats.count_late(late);
        if late >= LATE_LOG_OVER_NS {
            self.stats.late_over += 1;
            if self.late_log.len() < LATE_LOG_CAPACITY {
                self.late_log.push(LateEvent {
                    release_ns: now_ns,
                    late_ns: late,
                });
            }
        }
        Some(held.item)
    }
}

/// Earliest due time over several queues.
pub fn earliest_due<'a, T: Copy + Default + 'a>(
    queues: impl Iterator<Item = &'a DelayQueue<T>>,
) -> Option<u64> {
    queues.filter_map(|q| q.next_due()).min()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn holds_until_due_then_releases_in_order() {
        let mut q: DelayQueue<u32> = DelayQueue::new(4, 20_000);
        q.push(0, 1).unwrap();
        q.push(MS, 2).unwrap();
        q.push(2 * MS, 3).unwrap();
        assert_eq!(q.next_due(), Some(20 * MS));
        assert_eq!(q.pop_due(20 * MS - 1), None);
        assert_eq!(q.pop_due(21 * MS), Some(1));
        assert_eq!(q.pop_due(21 * MS), Some(2));
        assert_eq!(q.pop_due(21 * MS), None);
        assert_eq!(q.pop_due(25 * MS), Some(3));
        assert_eq!(q.next_due(), None);
        assert_eq!(q.pop_due(u64::MAX), None);
    }

    #[test]
    fn lateness_accounting() {
        let mut q: DelayQueue<u32> = DelayQueue::new(8, 1000);
        for (i, t) in [0u64, 10_000, 20_000].iter().enumerate() {
            q.push(*t, i as u32).unwrap();
        }
        // Dues 1 ms, 1.01 ms, 1.02 ms; released at 1.0 ms+0, 1.05 ms, 1.05 ms.
        q.pop_due(MS).unwrap();
        q.pop_due(MS + 50_000).unwrap();
        q.pop_due(MS + 50_000).unwrap();
        assert_eq!(q.stats.pkts, 3);
        assert_eq!(q.stats.late_sum_ns, 40_000 + 30_000);
        assert_eq!(q.stats.late_max_ns, 40_000);
        assert!((q.stats.late_mean_us() - 70.0 / 3.0).abs() < 1e-9);
        // 0 and 30 us fall below the first edge (50 us), 40 us too.
        assert_eq!(q.stats.late_hist, [3, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!((q.stats.late_over, q.late_log.len()), (0, 0));
    }

    #[test]
    fn histogram_edges_and_late_log() {
        let mut q: DelayQueue<u32> = DelayQueue::new(16, 0);
        // Lateness exactly on each edge lands in the bucket above it.
        let lates_us = [0, 49, 50, 100, 249, 250, 1_000, 4_999, 5_000, 70_000];
        for (i, late) in lates_us.iter().enumerate() {
            q.push(i as u64 * MS, i as u32).unwrap();
            q.pop_due(i as u64 * MS + late * 1000).unwrap();
        }
        assert_eq!(q.stats.late_hist, [2, 1, 1, 2, 0, 1, 1, 2]);
        assert_eq!(q.stats.late_over, 5);
        let logged: Vec<(u64, u64)> = q.late_log.iter().map(|e| (e.release_ns, e.late_ns)).collect();
        assert_eq!(
            logged,
            vec![
                (5 * MS + 250_000, 250_000),
                (6 * MS + MS, MS),
                (7 * MS + 4_999_000, 4_999_000),
                (8 * MS + 5 * MS, 5 * MS),
                (9 * MS + 70 * MS, 70 * MS),
            ]
        );
    }

    #[test]
    fn late_log_keeps_the_first_entries_and_counts_the_rest() {
        let mut q: DelayQueue<u32> = DelayQueue::new(4, 0);
        let n = LATE_LOG_CAPACITY as u64 + 10;
        for i in 0..n {
            q.push(i * MS, 0).unwrap();
            q.pop_due(i * MS + LATE_LOG_OVER_NS + i).unwrap();
        }
        assert_eq!(q.stats.late_over, n);
        assert_eq!(q.late_log.len(), LATE_LOG_CAPACITY);
        assert_eq!(q.late_log.last().unwrap().late_ns, LATE_LOG_OVER_NS + n - 11);
    }

    #[test]
    fn fifo_even_when_a_later_arrival_is_due_earlier() {
        // Kernel timestamps from two CPUs can be slightly out of order; the
        // later packet must still wait behind the earlier one.
        let mut q: DelayQueue<u32> = DelayQueue::new(4, 0);
        q.push(5 * MS, 1).unwrap();
        q.push(3 * MS, 2).unwrap();
        assert_eq!(q.pop_due(4 * MS), None);
        assert_eq!(q.pop_due(5 * MS), Some(1));
        assert_eq!(q.pop_due(5 * MS), Some(2));
        assert_eq!(q.stats.late_max_ns, 2 * MS);
    }

    #[test]
    fn full_ring_refuses_and_wraps_around() {
        let mut q: DelayQueue<u32> = DelayQueue::new(2, 0);
        q.push(0, 1).unwrap();
        q.push(0, 2).unwrap();
        assert_eq!(q.push(0, 3), Err(3));
        assert_eq!(q.stats.maxdepth, 2);
        assert_eq!(q.pop_due(0), Some(1));
        q.push(0, 4).unwrap();
        assert_eq!(q.push(0, 5), Err(5));
        assert_eq!(
            (q.pop_due(0), q.pop_due(0), q.pop_due(0)),
            (Some(2), Some(4), None)
        );
        assert_eq!(q.capacity(), 2);
    }

    #[test]
    fn earliest_over_queues() {
        let mut a: DelayQueue<u32> = DelayQueue::new(2, 10);
        let mut b: DelayQueue<u32> = DelayQueue::new(2, 5);
        assert_eq!(earliest_due([&a, &b].into_iter()), None);
        a.push(0, 1).unwrap();
        b.push(0, 1).unwrap();
        assert_eq!(earliest_due([&a, &b].into_iter()), Some(5_000));
    }

    /// xorshift64 (Marsaglia 2003): varied inputs without a dependency.
    fn rng(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut x = seed;
        move |bound| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % bound
        }
    }

    #[test]
    fn random_traffic_keeps_order_never_early_and_counts_exactly() {
        for seed in 1..=50u64 {
            let mut r = rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let delay_us = r(50_000);
            let mut q: DelayQueue<u64> = DelayQueue::new(1 + r(64) as usize, delay_us);
            let (mut now, mut next_in, mut next_out) = (0u64, 0u64, 0u64);
            let (mut dues, mut late_sum, mut late_max, mut depth_max) =
                (Vec::new(), 0u64, 0u64, 0usize);
            for _ in 0..2000 {
                now += r(2 * MS);
                if r(2) == 0 {
                    // Arrival stamps may lag the clock and be slightly out of order.
                    let arrival = now.saturating_sub(r(MS));
                    if q.push(arrival, next_in).is_ok() {
                        dues.push(arrival + delay_us * 1000);
                        next_in += 1;
                        depth_max = depth_max.max((next_in - next_out) as usize);
                    }
                    continue;
                }
                while let Some(item) = q.pop_due(now) {
                    assert_eq!(item, next_out, "seed {seed}: out of order");
                    let due = dues[item as usize];
                    assert!(due <= now, "seed {seed}: released {item} early");
                    late_sum += now - due;
                    late_max = late_max.max(now - due);
                    next_out += 1;
                }
                // Nothing left behind: the head, if any, is not yet due.
                assert!(q.next_due().is_none_or(|d| d > now), "seed {seed}");
            }
            let s = q.stats;
            assert_eq!(
                (s.pkts, s.late_sum_ns, s.late_max_ns),
                (next_out, late_sum, late_max)
            );
            assert_eq!(s.maxdepth, depth_max, "seed {seed}");
            assert_eq!(s.late_hist.iter().sum::<u64>(), s.pkts, "seed {seed}");
            assert!(q.late_log.iter().all(|e| e.late_ns >= LATE_LOG_OVER_NS));
        }
    }

    #[test]
    fn mean_of_empty_is_zero() {
        assert_eq!(Stats::default().late_mean_us(), 0.0);
    }
}
