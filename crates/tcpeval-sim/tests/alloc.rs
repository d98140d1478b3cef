//! The event loop allocates nothing per packet (issue 29): once a run is past
//! its start, the heap is touched only by the per-interval records (reports
//! and trace samples) and by buffers growing to a new peak.
//!
//! A counting global allocator sees every allocation of this test binary, which
//! holds this one test only, so nothing else runs beside it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use tcpeval_sim::scenarios::{dumbbell, with_cc};
use tcpeval_sim::time::SEC;
use tcpeval_sim::Simulation;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn the_hot_path_allocates_nothing_per_packet() {
    // Two CUBIC flows with random loss, so SACK recovery runs as well.
    let cfg = with_cc(dumbbell(100e6, 20, 1.0, 1e-3, 2, 6.0), "cubic");
    let mut sim = Simulation::new(cfg).expect("valid");
    sim.run_until(2 * SEC);
    let (allocs, events) = (ALLOCATIONS.load(Ordering::Relaxed), sim.events());
    sim.run_until(6 * SEC);
    let (allocs, events) = (ALLOCATIONS.load(Ordering::Relaxed) - allocs, sim.events() - events);
    let retransmits: u64 = (0..2).map(|f| sim.sender(f).counters.retransmits).sum();
    assert!(events > 100_000 && retransmits > 20, "too quiet to tell: {events} events, {retransmits} retransmits");
    // Four reports and forty samples of the flows and the monitored links
    // (each row names its link: a String) over the 4 s, and a few buffers
    // doubling: under 300 (123 when written). One allocation per ACK would
    // be over 10,000.
    assert!(allocs < 300, "{allocs} allocations in {events} events");
}
