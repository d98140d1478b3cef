//! Where the delay line's lateness comes from (issue 32 goal 2): how late a
//! thread wakes for a deadline `gap` ahead, under each way of waiting, and what
//! the waiting costs in CPU. Prints one JSON line per method.
//!
//!   cargo run --release -p tcpeval-delayline --example timer_lateness [gap_us] [n]
//!
//! Methods: `ppoll` with a relative timeout (what the delay line does), at
//! normal priority and under SCHED_FIFO; `clock_nanosleep` to an absolute
//! CLOCK_MONOTONIC deadline (TIMER_ABSTIME, so the time spent between reading
//! the clock and sleeping is not added); the same but waking `spin_us` early and
//! spinning to the deadline; and the last pinned to one CPU. Timer slack is set
//! to 1 ns (prctl PR_SET_TIMERSLACK) throughout, as the delay line does.

use std::time::Instant;

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[derive(Clone, Copy)]
enum Wait {
    Ppoll,
    AbsSleep,
    AbsSleepSpin(u64),
}

/// Wait until `deadline` (CLOCK_MONOTONIC ns) the given way.
fn wait_until(how: Wait, deadline: u64) {
    match how {
        Wait::Ppoll => {
            let ts = timespec(deadline.saturating_sub(now_ns()));
            // SAFETY: no descriptors; ts is valid for the call.
            unsafe { libc::ppoll(std::ptr::null_mut(), 0, &ts, std::ptr::null()) };
        }
        Wait::AbsSleep => abs_sleep(deadline),
        Wait::AbsSleepSpin(spin_ns) => {
            abs_sleep(deadline.saturating_sub(spin_ns));
            while now_ns() < deadline {
                std::hint::spin_loop();
            }
        }
    }
}

fn abs_sleep(deadline: u64) {
    let ts = timespec(deadline);
    // SAFETY: ts is valid; EINTR only ends the wait early.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

fn set_fifo(on: bool) {
    let param = libc::sched_param {
        sched_priority: if on { 50 } else { 0 },
    };
    let policy = if on {
        libc::SCHED_FIFO
    } else {
        libc::SCHED_OTHER
    };
    // SAFETY: param is valid.
    unsafe { libc::sched_setscheduler(0, policy, &param) };
}

fn pin(cpu: Option<usize>) {
    // SAFETY: the set is zeroed and filled with valid CPU numbers.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let n = libc::sysconf(libc::_SC_NPROCESSORS_ONLN) as usize;
        for c in 0..n {
            if cpu.is_none_or(|p| p == c) {
                libc::CPU_SET(c, &mut set);
            }
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn measure(name: &str, how: Wait, fifo: bool, cpu: Option<usize>, gap: u64, n: usize) {
    set_fifo(fifo);
    pin(cpu);
    let mut late = Vec::with_capacity(n);
    let (cpu0, wall0) = (cpu_ns(), Instant::now());
    for _ in 0..n {
        let deadline = now_ns() + gap;
        wait_until(how, deadline);
        late.push(now_ns().saturating_sub(deadline));
    }
    let cpu_share = (cpu_ns() - cpu0) as f64 / wall0.elapsed().as_nanos() as f64;
    set_fifo(false);
    pin(None);
    late.sort_unstable();
    let q = |p: f64| late[((late.len() - 1) as f64 * p) as usize] as f64 / 1e3;
    let mean = late.iter().sum::<u64>() as f64 / late.len() as f64 / 1e3;
    println!(
        "{{\"method\": \"{name}\", \"gap_us\": {}, \"n\": {n}, \"late_mean_us\": {mean:.1}, \"late_p50_us\": {:.1}, \
         \"late_p99_us\": {:.1}, \"late_max_us\": {:.1}, \"cpu_share\": {cpu_share:.3}}}",
        gap / 1000,
        q(0.5),
        q(0.99),
        q(1.0)
    );
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let gap = args.first().copied().unwrap_or(200) * 1000;
    let n = args.get(1).copied().unwrap_or(5000) as usize;
    // SAFETY: plain prctl.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    measure("ppoll relative", Wait::Ppoll, false, None, gap, n);
    measure(
        "ppoll relative, SCHED_FIFO",
        Wait::Ppoll,
        true,
        None,
        gap,
        n,
    );
    measure(
        "clock_nanosleep absolute, SCHED_FIFO",
        Wait::AbsSleep,
        true,
        None,
        gap,
        n,
    );
    for spin_us in [50, 100] {
        let name = format!("absolute, wake {spin_us} us early and spin, SCHED_FIFO");
        measure(
            &name,
            Wait::AbsSleepSpin(spin_us * 1000),
            true,
            None,
            gap,
            n,
        );
    }
    measure(
        "absolute + spin 100 us, SCHED_FIFO, pinned to CPU 1",
        Wait::AbsSleepSpin(100_000),
        true,
        Some(1),
        gap,
        n,
    );
}
