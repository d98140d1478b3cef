//! The one JSON line printed at exit (the testbed's validity gates read it).
//!
//! `{"mode":"nfqueue","queues":[{"queue":1,"delay_us":20000,"pkts":..,"maxdepth":..,
//!   "late_mean_us":..,"late_max_us":..,"no_kernel_ts":..,"enobufs":..,"unmatched":..,
//!   "dropped":..,"kernel_dropped":..,"capacity":..}],"late_mean_us":..,"late_max_us":..}`
//!
//! TUN entries carry `"route":"10.2.1.0/24"` instead of `"queue"`. Lateness is
//! release time minus due time, in microseconds. Written by hand: the crate
//! depends on libc only.

use crate::fifo::Stats;
use crate::prefix::Prefix;
use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    Queue(u16),
    Route(Prefix),
}

/// Final counters of one queue or route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub label: Label,
    pub delay_us: u64,
    pub capacity: usize,
    pub stats: Stats,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

fn entry_json(e: &Entry) -> String {
    let s = &e.stats;
    let label = match e.label {
        Label::Queue(q) => format!("\"queue\":{q}"),
        Label::Route(p) => format!("\"route\":\"{p}\""),
    };
    format!(
        "{{{label},\"delay_us\":{},\"pkts\":{},\"maxdepth\":{},\"late_mean_us\":{:.3},\"late_max_us\":{:.3},\
         \"no_kernel_ts\":{},\"enobufs\":{},\"unmatched\":{},\"dropped\":{},\"kernel_dropped\":{},\"capacity\":{}}}",
        e.delay_us,
        s.pkts,
        s.maxdepth,
        s.late_mean_us(),
        us(s.late_max_ns),
        s.no_kernel_ts,
        s.enobufs,
        s.unmatched,
        s.dropped,
        s.kernel_dropped,
        e.capacity
    )
}

/// The exit line for `mode` ("nfqueue" or "tun"); overall lateness is
/// weighted by packets.
pub fn to_json(mode: &str, entries: &[Entry]) -> String {
    let pkts: u64 = entries.iter().map(|e| e.stats.pkts).sum();
    let late_sum: u64 = entries.iter().map(|e| e.stats.late_sum_ns).sum();
    let late_max = entries
        .iter()
        .map(|e| e.stats.late_max_ns)
        .max()
        .unwrap_or(0);
    let mean = if pkts == 0 {
        0.0
    } else {
        late_sum as f64 / pkts as f64 / 1e3
    };
    let mut out = format!("{{\"mode\":\"{mode}\",\"queues\":[");
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&entry_json(e));
    }
    write!(
        out,
        "],\"late_mean_us\":{mean:.3},\"late_max_us\":{:.3}}}",
        us(late_max)
    )
    .unwrap();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nfqueue_line() {
        let stats = Stats {
            pkts: 4,
            maxdepth: 3,
            late_sum_ns: 100_000,
            late_max_ns: 70_000,
            enobufs: 1,
            kernel_dropped: 2,
            ..Stats::default()
        };
        let a = Entry {
            label: Label::Queue(1),
            delay_us: 20000,
            capacity: 8,
            stats,
        };
        let b = Entry {
            label: Label::Queue(2),
            delay_us: 0,
            capacity: 8,
            stats: Stats {
                pkts: 1,
                late_sum_ns: 5_000,
                late_max_ns: 5_000,
                ..Stats::default()
            },
        };
        let want = concat!(
            r#"{"mode":"nfqueue","queues":["#,
            r#"{"queue":1,"delay_us":20000,"pkts":4,"maxdepth":3,"late_mean_us":25.000,"late_max_us":70.000,"no_kernel_ts":0,"enobufs":1,"unmatched":0,"dropped":0,"kernel_dropped":2,"capacity":8},"#,
            r#"{"queue":2,"delay_us":0,"pkts":1,"maxdepth":0,"late_mean_us":5.000,"late_max_us":5.000,"no_kernel_ts":0,"enobufs":0,"unmatched":0,"dropped":0,"kernel_dropped":0,"capacity":8}"#,
            r#"],"late_mean_us":21.000,"late_max_us":70.000}"#
        );
        assert_eq!(to_json("nfqueue", &[a, b]), want);
    }

    #[test]
    fn tun_line_and_empty_run() {
        let e = Entry {
            label: Label::Route(Prefix::parse("10.2.1.0/24").unwrap()),
            delay_us: 5,
            capacity: 2,
            stats: Stats {
                unmatched: 3,
                ..Stats::default()
            },
        };
        let line = to_json("tun", &[e]);
        assert!(
            line.starts_with(
                r#"{"mode":"tun","queues":[{"route":"10.2.1.0/24","delay_us":5,"pkts":0,"#
            ),
            "{line}"
        );
        assert!(line.contains(r#""unmatched":3"#));
        assert!(
            line.ends_with(r#"],"late_mean_us":0.000,"late_max_us":0.000}"#),
            "{line}"
        );
    }
}
