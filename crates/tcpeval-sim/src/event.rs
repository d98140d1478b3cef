//! Discrete-event scheduler. It knows nothing about networking: it orders opaque
//! events of type `E` by time, breaking ties by insertion order so that two runs of
//! the same scenario process simultaneous events identically.

use crate::time::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    at: Time,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // BinaryHeap is a max-heap: reverse so the earliest (then first-inserted) pops first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// A min-priority queue of timed events with FIFO tie-breaking.
pub struct Scheduler<E> {
    heap: BinaryHeap<Entry<E>>,
    now: Time,
    next_seq: u64,
    processed: u64,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Scheduler<E> {
    pub fn new() -> Self {
        Scheduler { heap: BinaryHeap::with_capacity(1024), now: 0, next_seq: 0, processed: 0 }
    }

    /// Current simulated time (the time of the event being processed).
    pub fn now(&self) -> Time {
        self.now
    }

    /// Number of events popped so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }

    /// Schedule `event` at absolute time `at`; times in the past are clamped to now.
    pub fn at(&mut self, at: Time, event: E) {
        let at = at.max(self.now);
        self.heap.push(Entry { at, seq: self.next_seq, event });
        self.next_seq += 1;
    }

    /// Schedule `event` after `delay`.
    pub fn after(&mut self, delay: Time, event: E) {
        self.at(self.now.saturating_add(delay), event);
    }

    /// Pop the next event if it is due no later than `until`, advancing the clock.
    pub fn pop_until(&mut self, until: Time) -> Option<E> {
        if self.heap.peek()?.at > until {
            return None;
        }
        let entry = self.heap.pop()?;
        self.now = entry.at;
        self.processed += 1;
        Some(entry.event)
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn simultaneous_events_pop_in_insertion_order() {
        let mut s = Scheduler::new();
        s.at(5, 'a');
        s.at(3, 'b');
        s.at(5, 'c');
        s.at(3, 'd');
        let order: Vec<char> = std::iter::from_fn(|| s.pop_until(u64::MAX)).collect();
        assert_eq!(order, vec!['b', 'd', 'a', 'c']);
        assert_eq!(s.now(), 5);
    }

    #[test]
    fn pop_until_stops_at_horizon() {
        let mut s = Scheduler::new();
        s.at(10, 1);
        assert_eq!(s.pop_until(9), None);
        assert_eq!(s.pop_until(10), Some(1));
    }

    proptest! {
        #[test]
        fn pops_are_sorted_by_time_then_insertion(times in proptest::collection::vec(0u64..50, 1..200)) {
            let mut s = Scheduler::new();
            for (i, t) in times.iter().enumerate() { s.at(*t, i); }
            let mut last = (0u64, 0usize);
            let mut first = true;
            while let Some(i) = s.pop_until(u64::MAX) {
                let key = (times[i], i);
                prop_assert!(first || key > last);
                last = key;
                first = false;
            }
        }
    }
}
