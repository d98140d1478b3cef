//! Thin safe wrappers over the libc calls both modes need: clocks, the
//! real-time scheduler, signals as a file descriptor, and waiting with a
//! nanosecond timeout.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Converts a libc return value (-1 = error in errno) into a Result.
pub fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Like `check` for the ssize_t returned by recv/read/write/send.
pub fn check_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// Takes ownership of a new descriptor returned by a libc call.
pub fn owned(ret: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: `check` guarantees a valid descriptor we alone own.
    check(ret).map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Current time of `clock` in nanoseconds.
pub fn now_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; REALTIME and MONOTONIC never fail.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Asks for SCHED_FIFO at `priority` and, for the case it is refused, the
/// smallest timer slack (prctl(2) PR_SET_TIMERSLACK; real-time tasks get no
/// slack anyway, fs/select.c select_estimate_accuracy).
pub fn set_realtime(priority: i32) -> io::Result<()> {
    // SAFETY: plain syscalls with valid arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: param is a valid sched_param.
    check(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) }).map(|_| ())
}

/// Blocks SIGTERM and SIGINT and returns a signalfd that becomes readable
/// when one arrives, so the event loop sees signals as ordinary input and a
/// signal during setup is not lost (signalfd(2)).
pub fn termination_signals() -> io::Result<OwnedFd> {
    // SAFETY: the set is initialised by sigemptyset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        check(libc::sigprocmask(
            libc::SIG_BLOCK,
            &set,
            std::ptr::null_mut(),
        ))?;
        owned(libc::signalfd(
            -1,
            &set,
            libc::SFD_CLOEXEC | libc::SFD_NONBLOCK,
        ))
    }
}

/// Turns on kernel receive timestamps for every packet (so that NFQUEUE can
/// report NFQA_TIMESTAMP) by holding a socket with SO_TIMESTAMP enabled:
/// net_enable_timestamp() is global while any such socket exists
/// (net/core/sock.c sock_enable_timestamp, net/core/dev.c netstamp_needed_key).
pub fn enable_rx_timestamps() -> io::Result<OwnedFd> {
    // SAFETY: plain socket syscalls; `on` outlives the call.
    let fd =
        owned(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    set_int_opt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMP, 1)?;
    Ok(fd)
}

pub fn set_int_opt(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: value is a valid c_int for the duration of the call.
    check(unsafe { libc::setsockopt(fd, level, name, (&value as *const libc::c_int).cast(), len) })
        .map(|_| ())
}

/// Waits until a descriptor in `fds` is readable or `timeout_ns` passes
/// (None: no timeout). ppoll takes a nanosecond timeout, unlike poll's
/// milliseconds. Sets `revents` in place; EINTR counts as a timeout.
pub fn wait_readable(fds: &mut [libc::pollfd], timeout_ns: Option<u64>) -> io::Result<()> {
    let ts = timeout_ns.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: fds is a valid pollfd slice; tsp is null or points to ts.
    let ret = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            tsp,
            std::ptr::null(),
        )
    };
    match check(ret) {
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
        other => other.map(|_| ()),
    }
}

pub fn pollfd(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

pub fn readable(p: &libc::pollfd) -> bool {
    p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0
}
