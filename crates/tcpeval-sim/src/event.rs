//! Discrete-event scheduler. It knows nothing about networking: it orders opaque
//! events of type `E` by time, breaking ties by insertion order so that two runs of
//! the same scenario process simultaneous events identically.

use crate::time::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// How many of the earliest pending events the scheduler keeps in its sorted
/// front tier. A dumbbell run has about ten pending events at any time (one
/// departure and one arrival per busy link, a few timers), so they all fit.
const NEAR: usize = 32;

#[derive(Clone, Copy)]
struct Entry<E> {
    at: Time,
    seq: u64,
    event: E,
}

impl<E> Entry<E> {
    /// The order of events: time, then insertion (unique, since `seq` is).
    fn key(&self) -> u128 {
        (u128::from(self.at) << 64) | u128::from(self.seq)
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
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
        other.key().cmp(&self.key())
    }
}

/// A min-priority queue of timed events with FIFO tie-breaking.
///
/// Two tiers: `near` holds the earliest pending events in a vector sorted latest
/// first, so the next event is popped from its end without any sifting; `far`,
/// a binary heap, holds the rest, all later than every event in `near`. With the
/// handful of events a dumbbell keeps pending, `far` stays empty and a pop is a
/// `Vec::pop`; a binary heap alone spent a third of a 10 Gbit/s run in its
/// data-dependent sift branches (docs/performance.md). Runs with thousands of
/// pending timers (web-like traffic) spill into `far` and pay the heap's cost.
pub struct Scheduler<E> {
    near: Vec<Entry<E>>,
    far: BinaryHeap<Entry<E>>,
    now: Time,
    next_seq: u64,
    processed: u64,
}

impl<E: Copy> Default for Scheduler<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> Scheduler<E> {
    pub fn new() -> Self {
        Scheduler {
            near: Vec::with_capacity(NEAR + 1),
            far: BinaryHeap::new(),
            now: 0,
            next_seq: 0,
            processed: 0,
        }
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
        let entry = Entry { at: at.max(self.now), seq: self.next_seq, event };
        self.next_seq += 1;
        let key = entry.key();
        if self.far.peek().is_some_and(|first_far| key > first_far.key()) {
            self.far.push(entry);
            return;
        }
        // Insertion-sort step from the earliest end: new events are mostly due
        // soon, so few entries move, and no call to memmove is made. Each later
        // entry moves up into the hole once (a swap moved it twice).
        self.near.push(entry);
        let near = &mut self.near[..];
        let mut pos = near.len() - 1;
        while pos > 0 && near[pos - 1].key() < key {
            near[pos] = near[pos - 1];
            pos -= 1;
        }
        near[pos] = entry;
        if self.near.len() > NEAR {
            // The latest of `near` is still earlier than all of `far`.
            let latest = self.near.remove(0);
            self.far.push(latest);
        }
    }

    /// Schedule `event` after `delay`.
    pub fn after(&mut self, delay: Time, event: E) {
        self.at(self.now.saturating_add(delay), event);
    }

    /// Pop the next event if it is due no later than `until`, advancing the clock.
    pub fn pop_until(&mut self, until: Time) -> Option<E> {
        if self.near.is_empty() {
            self.refill();
        }
        if self.near.last()?.at > until {
            return None;
        }
        let entry = self.near.pop()?;
        self.now = entry.at;
        self.processed += 1;
        Some(entry.event)
    }

    /// Move the earliest half tier of `far` into the empty `near`, latest first.
    fn refill(&mut self) {
        while self.near.len() < NEAR / 2 {
            match self.far.pop() {
                Some(entry) => self.near.push(entry),
                None => break,
            }
        }
        self.near.reverse();
    }

    pub fn is_empty(&self) -> bool {
        self.near.is_empty() && self.far.is_empty()
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

        /// Any interleaving of schedules and pops pops exactly what a sorted
        /// reference list of (time, insertion) pops, and clamps past times to
        /// now. One pop per schedule on average lets the pending count wander
        /// past the front tier's 32, so spills and refills are exercised (a
        /// refill that skips its reversal fails here).
        #[test]
        fn interleaved_schedules_and_pops_match_a_sorted_reference(
            ops in proptest::collection::vec((0u64..1_000, 0usize..3), 1..1_500)
        ) {
            let mut s = Scheduler::new();
            let mut reference: Vec<(u64, usize)> = Vec::new();
            for (i, &(delay, pops)) in ops.iter().enumerate() {
                // Mostly soon, sometimes far ahead, sometimes in the past.
                let at = match delay % 3 { 0 => s.now() + delay, 1 => s.now() + 50 * delay, _ => s.now().saturating_sub(delay) };
                s.at(at, i);
                reference.push((at.max(s.now()), i));
                reference.sort_unstable_by(|a, b| b.cmp(a));
                for _ in 0..pops {
                    let expected = reference.pop();
                    prop_assert_eq!(s.pop_until(u64::MAX), expected.map(|(_, i)| i));
                    if let Some((t, _)) = expected { prop_assert_eq!(s.now(), t); }
                }
            }
            while let Some((_, i)) = reference.pop() {
                prop_assert_eq!(s.pop_until(u64::MAX), Some(i));
            }
            prop_assert!(s.is_empty());
            prop_assert_eq!(s.pop_until(u64::MAX), None);
        }
    }
}
