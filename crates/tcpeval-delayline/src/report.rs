//! The one JSON line printed at exit (the testbed's validity gates read it).
//!
//! `{"mode":"nfqueue","queues":[{"queue":1,"delay_us":20000,"pkts":..,"maxdepth":..,
//!   "late_mean_us":..,"late_max_us":..,"no_kernel_ts":..,"enobufs":..,"unmatched":..,
//!   "dropped":..,"kernel_dropped":..,"capacity":..,"late_hist":[..],"late_over":..,
//!   "late_log":[[release_s,late_us],..]}],"late_mean_us":..,"late_max_us":..,
//!   "late_edges_us":[50,..],"late_log_over_us":250}`
//!
//! TUN entries carry `"route":"10.2.1.0/24"` instead of `"queue"`. Lateness is
//! release time minus due time, in microseconds. `late_hist` counts packets per
//! bucket of `late_edges_us` (one more, open bucket at the end); `late_log`
//! lists the first releases at least `late_log_over_us` late with their release
//! time in CLOCK_MONOTONIC seconds (the clock of bpf_ktime_get_ns and of the
//! tracing buffer with trace_clock "mono"), `late_over` counts all of them.
//! Written by hand: the crate depends on libc only.

use crate::fifo::{LateEvent, Stats, LATE_EDGES_US, LATE_LOG_OVER_NS};
use crate::prefix::Prefix;
use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    Queue(u16),
    Route(Prefix),
}

/// Final counters of one queue or route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub label: Label,
    pub delay_us: u64,
    pub capacity: usize,
    pub stats: Stats,
    /// Late releases, times already on CLOCK_MONOTONIC.
    pub late_log: Vec<LateEvent>,
}

fn list<T>(items: impl Iterator<Item = T>, item: impl Fn(T) -> String) -> String {
    let parts: Vec<String> = items.map(item).collect();
    format!("[{}]", parts.join(","))
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
         \"no_kernel_ts\":{},\"enobufs\":{},\"unmatched\":{},\"dropped\":{},\"kernel_dropped\":{},\"capacity\":{},\
         \"late_hist\":{},\"late_over\":{},\"late_log\":{}}}",
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
        e.capacity,
        list(s.late_hist.iter(), |n| n.to_string()),
        s.late_over,
        list(e.late_log.iter(), |l| format!(
            "[{:.6},{:.3}]",
            l.release_ns as f64 / 1e9,
            us(l.late_ns)
        )),
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
        "],\"late_mean_us\":{mean:.3},\"late_max_us\":{:.3},\"late_edges_us\":{},\"late_log_over_us\":{}}}",
        us(late_max),
        list(LATE_EDGES_US.iter(), |e| e.to_string()),
        LATE_LOG_OVER_NS / 1000
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
            stats: Stats {
                late_hist: [3, 1, 0, 0, 0, 0, 0, 0],
                late_over: 2,
                ..stats
            },
            late_log: vec![
                LateEvent {
                    release_ns: 12_345_678_901_234,
                    late_ns: 300_500,
                },
                LateEvent {
                    release_ns: 12_346_000_000_000,
                    late_ns: 1_000_000,
                },
            ],
        };
        let b = Entry {
            label: Label::Queue(2),
            delay_us: 0,
            capacity: 8,
            stats: Stats {
                pkts: 1,
                late_sum_ns: 5_000,
                late_max_ns: 5_000,
                late_hist: [1, 0, 0, 0, 0, 0, 0, 0],
                ..Stats::default()
            },
            late_log: vec![],
        };
        let want = concat!(
            r#"{"mode":"nfqueue","queues":["#,
            r#"{"queue":1,"delay_us":20000,"pkts":4,"maxdepth":3,"late_mean_us":25.000,"late_max_us":70.000,"no_kernel_ts":0,"enobufs":1,"unmatched":0,"dropped":0,"kernel_dropped":2,"capacity":8,"#,
            r#""late_hist":[3,1,0,0,0,0,0,0],"late_over":2,"late_log":[[12345.678901,300.500],[12346.000000,1000.000]]},"#,
            r#"{"queue":2,"delay_us":0,"pkts":1,"maxdepth":0,"late_mean_us":5.000,"late_max_us":5.000,"no_kernel_ts":0,"enobufs":0,"unmatched":0,"dropped":0,"kernel_dropped":0,"capacity":8,"#,
            r#""late_hist":[1,0,0,0,0,0,0,0],"late_over":0,"late_log":[]}"#,
            r#"],"late_mean_us":21.000,"late_max_us":70.000,"late_edges_us":[50,100,200,500,1000,2000,5000],"late_log_over_us":250}"#
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
            late_log: vec![],
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
            line.ends_with(concat!(
                r#""late_log":[]}],"late_mean_us":0.000,"late_max_us":0.000,"#,
                r#""late_edges_us":[50,100,200,500,1000,2000,5000],"late_log_over_us":250}"#
            )),
            "{line}"
        );
    }
}
