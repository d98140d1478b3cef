//! NFQUEUE mode: packets stay in the kernel; each queued packet's metadata
//! (id, kernel receive timestamp) comes up over a NETLINK_NETFILTER socket,
//! and a batch verdict releases them FIFO at arrival + delay.
//!
//! Clock: NFQA_TIMESTAMP is skb_tstamp_cond(skb, false) (net/netfilter/
//! nfnetlink_queue.c nfqnl_build_packet_message, include/linux/skbuff.h): the
//! receive stamp, which __net_timestamp() takes with ktime_get_real(); or, when
//! skb->tstamp holds a sender's monotonic delivery time (TCP's EDT stamps
//! survive veth since Linux 5.18), ktime_get_real() at queueing. Both need
//! net timestamping on (see sys::enable_rx_timestamps) and both are
//! CLOCK_REALTIME, so this mode schedules on CLOCK_REALTIME. A wall-clock step during a run (NTP) would shift due
//! times; the testbed machines do not step the clock mid-run.

use crate::args::QueueSpec;
use crate::fifo::{earliest_due, DelayQueue, LateEvent};
use crate::netlink::{self, Event, NFQA_CFG_F_GSO};
use crate::report::{Entry, Label};
use crate::sys;
use crate::SetupError;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

const CLOCK: libc::clockid_t = libc::CLOCK_REALTIME;
/// Packets held per queue. The kernel queue length is set to the same
/// number, so the kernel drops (never bypasses) before our ring could fill.
pub const QUEUE_CAPACITY: usize = 65_536;
/// Socket receive buffer forced past net.core.rmem_max (socket(7)
/// SO_RCVBUFFORCE): room for a full queue of metadata messages.
const RCVBUF_BYTES: libc::c_int = 64 << 20;
/// Messages read per queue per loop turn, so releases are never starved.
const RECV_BATCH: usize = 64;
/// Receive buffer for one message (metadata only, far below this).
const RECV_BYTES: usize = 65_536;
/// How long to wait for the kernel's ack of a config request.
const ACK_TIMEOUT_NS: u64 = 2_000_000_000;

/// One bound queue: its netlink socket and its delay FIFO of packet ids.
struct Bound {
    sock: OwnedFd,
    spec: QueueSpec,
    fifo: DelayQueue<u32>,
    seq: u32,
    tx: Vec<u8>,
}

fn setup_err(what: &str, e: io::Error) -> SetupError {
    let hint = match e.raw_os_error() {
        Some(libc::EPERM) => " (needs root / CAP_NET_ADMIN)",
        Some(libc::EPROTONOSUPPORT) => {
            " (this kernel lacks NFQUEUE, CONFIG_NETFILTER_NETLINK_QUEUE)"
        }
        Some(libc::EBUSY) => " (another process is bound to this queue)",
        _ => "",
    };
    SetupError(format!("{what}: {e}{hint}"))
}

fn open_socket() -> io::Result<OwnedFd> {
    let flags = libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
    // SAFETY: plain socket syscall.
    let sock =
        sys::owned(unsafe { libc::socket(libc::AF_NETLINK, flags, libc::NETLINK_NETFILTER) })?;
    // SAFETY: a zeroed sockaddr_nl with nl_pid 0 lets the kernel pick the port id.
    let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    let len = std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t;
    // SAFETY: addr is a valid sockaddr_nl of `len` bytes.
    sys::check(unsafe {
        libc::bind(
            sock.as_raw_fd(),
            (&addr as *const libc::sockaddr_nl).cast(),
            len,
        )
    })?;
    let fd = sock.as_raw_fd();
    if sys::set_int_opt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, RCVBUF_BYTES).is_err() {
        eprintln!("tcpeval-delayline: SO_RCVBUFFORCE refused; using SO_RCVBUF (capped by net.core.rmem_max)");
        sys::set_int_opt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, RCVBUF_BYTES)?;
    }
    Ok(sock)
}

impl Bound {
    fn bind(spec: QueueSpec) -> Result<Bound, SetupError> {
        let what = format!("NFQUEUE {}", spec.queue);
        let sock = open_socket().map_err(|e| setup_err(&format!("{what}: netlink socket"), e))?;
        let fifo = DelayQueue::new(QUEUE_CAPACITY, spec.delay_us);
        let mut b = Bound {
            sock,
            spec,
            fifo,
            seq: 0,
            tx: Vec::with_capacity(64),
        };
        netlink::encode_bind(&mut b.tx, 1, spec.queue);
        b.request(1)
            .map_err(|e| setup_err(&format!("{what}: bind"), e))?;
        netlink::encode_params(
            &mut b.tx,
            2,
            spec.queue,
            QUEUE_CAPACITY as u32,
            NFQA_CFG_F_GSO,
        );
        b.request(2)
            .map_err(|e| setup_err(&format!("{what}: copy mode, maxlen, GSO flag"), e))?;
        b.seq = 2;
        Ok(b)
    }

    /// Encode one verdict for packet `id` under the next sequence number and
    /// send it; a failure is reported, not fatal (the kernel keeps the packet).
    fn verdict(&mut self, encode: fn(&mut Vec<u8>, u32, u16, u32), id: u32, what: &str) {
        self.seq = self.seq.wrapping_add(1);
        encode(&mut self.tx, self.seq, self.spec.queue, id);
        if let Err(e) = self.send() {
            eprintln!(
                "tcpeval-delayline: queue {}: {what} failed: {e}",
                self.spec.queue
            );
        }
    }

    fn send(&self) -> io::Result<()> {
        // SAFETY: tx is a valid buffer; the socket is connected to nothing, and
        // send() on an unconnected netlink socket goes to the kernel (pid 0).
        let n = unsafe {
            libc::send(
                self.sock.as_raw_fd(),
                self.tx.as_ptr().cast(),
                self.tx.len(),
                0,
            )
        };
        sys::check_size(n).map(|_| ())
    }

    /// Sends the message in `tx` and waits for the kernel's ack of `seq`.
    fn request(&mut self, seq: u32) -> io::Result<()> {
        self.send()?;
        let mut rx = vec![0u8; RECV_BYTES];
        let deadline = sys::now_ns(libc::CLOCK_MONOTONIC) + ACK_TIMEOUT_NS;
        loop {
            let left = deadline.saturating_sub(sys::now_ns(libc::CLOCK_MONOTONIC));
            if left == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no ack from the kernel",
                ));
            }
            sys::wait_readable(&mut [sys::pollfd(self.sock.as_raw_fd())], Some(left))?;
            let Some(n) = recv(&self.sock, &mut rx)? else {
                continue;
            };
            for ev in netlink::parse_messages(&rx[..n]) {
                match ev {
                    Event::Ack { seq: s, errno: 0 } if s == seq => return Ok(()),
                    Event::Ack { seq: s, errno } if s == seq => {
                        return Err(io::Error::from_raw_os_error(errno))
                    }
                    _ => {}
                }
            }
        }
    }

    /// Releases every due packet with one batch verdict (accept ids <= last).
    fn release_due(&mut self) {
        let now = sys::now_ns(CLOCK);
        let mut last = None;
        while let Some(id) = self.fifo.pop_due(now) {
            last = Some(id);
        }
        if let Some(id) = last {
            self.verdict(netlink::encode_accept_upto, id, "verdict");
        }
    }

    /// Reads up to RECV_BATCH messages and holds each packet.
    fn receive(&mut self, rx: &mut [u8]) {
        for _ in 0..RECV_BATCH {
            match recv(&self.sock, rx) {
                Ok(Some(n)) => self.handle(&rx[..n]),
                Ok(None) => return,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => self.fifo.stats.enobufs += 1,
                Err(e) => {
                    eprintln!("tcpeval-delayline: queue {}: recv: {e}", self.spec.queue);
                    return;
                }
            }
        }
    }

    fn handle(&mut self, msg: &[u8]) {
        for ev in netlink::parse_messages(msg) {
            match ev {
                Event::Packet {
                    id, kernel_ts_ns, ..
                } => self.hold(id, kernel_ts_ns),
                Event::Ack { errno, .. } if errno != 0 => eprintln!(
                    "tcpeval-delayline: queue {}: kernel rejected a verdict: {}",
                    self.spec.queue,
                    io::Error::from_raw_os_error(errno)
                ),
                _ => {}
            }
        }
    }

    fn hold(&mut self, id: u32, kernel_ts_ns: Option<u64>) {
        let arrival = kernel_ts_ns.unwrap_or_else(|| {
            self.fifo.stats.no_kernel_ts += 1;
            sys::now_ns(CLOCK)
        });
        // The kernel queue length equals our capacity, so the ring cannot
        // fill unless the kernel over-delivers. Then drop the packet: left
        // in the kernel it would go out early with the next batch verdict.
        if self.fifo.push(arrival, id).is_err() {
            self.fifo.stats.dropped += 1;
            self.verdict(netlink::encode_drop, id, "drop verdict");
        }
    }
}

/// One non-blocking recv(); None when nothing is waiting.
fn recv(sock: &OwnedFd, rx: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: rx is a valid writable buffer of rx.len() bytes.
    let n = unsafe {
        libc::recv(
            sock.as_raw_fd(),
            rx.as_mut_ptr().cast(),
            rx.len(),
            libc::MSG_DONTWAIT,
        )
    };
    match sys::check_size(n) {
        Ok(n) => Ok(Some(n)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(e),
    }
}

/// Binds every queue, then calls `ready` and runs until `signals` fires.
pub fn run(
    specs: &[QueueSpec],
    signals: &OwnedFd,
    ready: impl FnOnce(),
) -> Result<Vec<Entry>, SetupError> {
    let _timestamps =
        sys::enable_rx_timestamps().map_err(|e| setup_err("SO_TIMESTAMP socket", e))?;
    let mut queues = specs
        .iter()
        .map(|s| Bound::bind(*s))
        .collect::<Result<Vec<_>, _>>()?;
    let mut fds: Vec<libc::pollfd> = std::iter::once(signals.as_raw_fd())
        .chain(queues.iter().map(|q| q.sock.as_raw_fd()))
        .map(sys::pollfd)
        .collect();
    let mut rx = vec![0u8; RECV_BYTES];
    ready();
    loop {
        queues.iter_mut().for_each(Bound::release_due);
        let due = earliest_due(queues.iter().map(|q| &q.fifo));
        let timeout = due.map(|d| d.saturating_sub(sys::now_ns(CLOCK)));
        fds.iter_mut().for_each(|p| p.revents = 0);
        sys::wait_readable(&mut fds, timeout).map_err(|e| setup_err("ppoll", e))?;
        if sys::readable(&fds[0]) {
            break;
        }
        for (q, p) in queues.iter_mut().zip(&fds[1..]) {
            if sys::readable(p) {
                q.receive(&mut rx);
            }
        }
    }
    Ok(queues.iter().map(entry).collect())
}

fn entry(q: &Bound) -> Entry {
    let proc_text = std::fs::read_to_string(PROC_QUEUES).unwrap_or_default();
    let kernel_dropped = kernel_drops(&proc_text, q.spec.queue).unwrap_or_else(|| {
        eprintln!(
            "tcpeval-delayline: queue {}: no line in {PROC_QUEUES}; kernel_dropped unknown",
            q.spec.queue
        );
        0
    });
    Entry {
        label: Label::Queue(q.spec.queue),
        delay_us: q.spec.delay_us,
        capacity: q.fifo.capacity(),
        stats: crate::fifo::Stats {
            kernel_dropped,
            ..q.fifo.stats
        },
        late_log: on_monotonic(&q.fifo.late_log),
    }
}

/// The log's release times moved from CLOCK_REALTIME (this mode's clock) to
/// CLOCK_MONOTONIC by the two clocks' present difference.
fn on_monotonic(log: &[LateEvent]) -> Vec<LateEvent> {
    let (mono, real) = (sys::now_ns(libc::CLOCK_MONOTONIC), sys::now_ns(CLOCK));
    log.iter()
        .map(|e| LateEvent {
            release_ns: (e.release_ns + mono).saturating_sub(real),
            ..*e
        })
        .collect()
}

/// Per-namespace queue table (net/netfilter/nfnetlink_queue.c seq_show):
/// queue_number portid queue_total copy_mode copy_range queue_dropped
/// user_dropped id_sequence 1.
const PROC_QUEUES: &str = "/proc/net/netfilter/nfnetlink_queue";

/// queue_dropped + user_dropped of `queue` in the text of PROC_QUEUES.
fn kernel_drops(proc_text: &str, queue: u16) -> Option<u64> {
    proc_text.lines().find_map(|line| {
        let f: Vec<u64> = line
            .split_whitespace()
            .map_while(|x| x.parse().ok())
            .collect();
        (f.len() >= 7 && f[0] == u64::from(queue)).then(|| f[5] + f[6])
    })
}

#[cfg(test)]
mod tests {
    use super::kernel_drops;

    #[test]
    fn kernel_drops_from_proc_table() {
        let text = "    3    761     0 1     0     4     5        9  1\n  700 2363980084  12 1     0     0     1       99  1\n";
        assert_eq!(kernel_drops(text, 3), Some(9));
        assert_eq!(kernel_drops(text, 700), Some(1));
        assert_eq!(kernel_drops(text, 4), None);
        assert_eq!(kernel_drops("", 3), None);
    }
}
