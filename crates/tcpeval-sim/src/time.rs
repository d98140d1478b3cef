//! Simulated time: integer nanoseconds since the start of the run.
//!
//! Integer time makes event order exact and runs bit-for-bit reproducible; a u64
//! of nanoseconds covers 584 years.

/// A point in simulated time or a duration, in nanoseconds.
pub type Time = u64;

pub const NS: Time = 1;
pub const US: Time = 1_000;
pub const MS: Time = 1_000_000;
pub const SEC: Time = 1_000_000_000;

/// One jiffy of the Linux modules the algorithms follow, which count time in
/// jiffies: tcpeval runs them at HZ = 1000 (cc/htcp.rs, cc/westwood.rs).
pub const JIFFY: Time = MS;
/// Jiffies per second (Linux `HZ`).
pub const HZ: u64 = SEC / JIFFY;

/// One tick of the clock Linux puts in the TCP timestamp option (TSval): 1 ms
/// since 4.13 (`TCP_TS_HZ`, `tcp_time_stamp_ts`), a jiffy before, the same at
/// tcpeval's HZ. What a Linux module reads from TSval is whole ticks.
pub const TS_TICK: Time = MS;

/// `t` as the TSval clock shows it: whole ticks, in nanoseconds.
pub fn ts_clock(t: Time) -> Time {
    t - t % TS_TICK
}

/// Seconds as a float, for reporting only (never for event ordering).
pub fn as_secs_f64(t: Time) -> f64 {
    t as f64 / SEC as f64
}

/// Time to serialise `bytes` at `rate_bps`, in picoseconds (rounded to nearest);
/// a link adds any send overhead before rounding up to whole nanoseconds.
pub fn tx_time_ps(bytes: u32, rate_bps: f64) -> u64 {
    (bytes as f64 * 8.0 * 1e12 / rate_bps).round() as u64
}
