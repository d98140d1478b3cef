//! TUN mode (fallback for kernels without NFQUEUE): an L3 TUN device receives
//! the packets the caller's policy routing sends into it; each is copied into
//! a preallocated slot, held for its route's delay and written back into the
//! same device, where the kernel routes it on (caller: `ip rule add iif DEV
//! lookup main`).
//!
//! Clock: a TUN read carries no kernel timestamp, so arrival is the read time
//! on CLOCK_MONOTONIC (immune to wall-clock steps). `no_kernel_ts` is 0 here
//! by definition: read-time stamping is this mode's design, not a fallback.

use crate::args::RouteSpec;
use crate::fifo::{earliest_due, DelayQueue};
use crate::prefix::{ipv4_destination, longest_match, Prefix};
use crate::report::{Entry, Label};
use crate::sys;
use crate::SetupError;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;
/// Packet buffers shared by all routes (32 MiB): about 1 s of 200 Mbit/s in
/// MTU-sized packets, far more than any delay the testbed supports holds.
pub const POOL_SLOTS: usize = 16_384;
/// Bytes per slot: the largest packet held. Above the 1500-byte veth MTU the
/// testbed uses; larger packets are dropped and counted.
pub const SLOT_BYTES: usize = 2048;
/// Packets read per loop turn, so releases are never starved.
const READ_BATCH: usize = 64;
/// Scratch read buffer: the largest IPv4 packet.
const SCRATCH_BYTES: usize = 65_536;
/// linux/if_tun.h
const TUN_DEVICE: &std::ffi::CStr = c"/dev/net/tun";

/// A held packet: its slot in the pool and length.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    index: u32,
    len: u16,
}

/// Fixed pool of packet buffers with a free list (no allocation after start).
struct Pool {
    bytes: Vec<u8>,
    free: Vec<u32>,
}

impl Pool {
    fn new() -> Pool {
        Pool {
            bytes: vec![0u8; POOL_SLOTS * SLOT_BYTES],
            free: (0..POOL_SLOTS as u32).rev().collect(),
        }
    }

    /// Copies `packet` into a free slot; None if it is too big or none is free.
    fn store(&mut self, packet: &[u8]) -> Option<Slot> {
        if packet.len() > SLOT_BYTES {
            return None;
        }
        let index = self.free.pop()?;
        let at = index as usize * SLOT_BYTES;
        self.bytes[at..at + packet.len()].copy_from_slice(packet);
        Some(Slot {
            index,
            len: packet.len() as u16,
        })
    }

    fn get(&self, s: Slot) -> &[u8] {
        let at = s.index as usize * SLOT_BYTES;
        &self.bytes[at..at + s.len as usize]
    }

    fn release(&mut self, s: Slot) {
        self.free.push(s.index);
    }
}

/// Creates, or attaches to, the L3 TUN device `name` (IFF_TUN|IFF_NO_PI:
/// bare IP packets, no packet-info header; Documentation/networking/tuntap.rst).
fn open_tun(name: &str) -> io::Result<OwnedFd> {
    let flags = libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC;
    // SAFETY: TUN_DEVICE is a NUL-terminated path.
    let fd = sys::owned(unsafe { libc::open(TUN_DEVICE.as_ptr(), flags) })?;
    // SAFETY: an all-zero ifreq is valid; the name fits (checked by args: <= 15 bytes).
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: req is a valid ifreq for TUNSETIFF.
    sys::check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) })?;
    Ok(fd)
}

struct Relay {
    dev: OwnedFd,
    prefixes: Vec<Prefix>,
    routes: Vec<DelayQueue<Slot>>,
    pool: Pool,
    unmatched: u64,
}

impl Relay {
    fn write(&self, packet: &[u8]) -> io::Result<()> {
        // SAFETY: packet is a valid readable buffer.
        let n = unsafe { libc::write(self.dev.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
        sys::check_size(n).map(|_| ())
    }

    /// Writes every due packet back into the device, oldest first per route.
    /// The clock is read per packet: a write can run the kernel's forwarding
    /// inline, and the next packet's lateness must include that time.
    fn release_due(&mut self) {
        for r in 0..self.routes.len() {
            while let Some(slot) = self.routes[r].pop_due(sys::now_ns(CLOCK)) {
                if self.write(self.pool.get(slot)).is_err() {
                    self.routes[r].stats.dropped += 1;
                }
                self.pool.release(slot);
            }
        }
    }

    /// Reads up to READ_BATCH packets and holds each on its route.
    fn receive(&mut self, scratch: &mut [u8]) {
        for _ in 0..READ_BATCH {
            // SAFETY: scratch is a valid writable buffer.
            let n = unsafe {
                libc::read(
                    self.dev.as_raw_fd(),
                    scratch.as_mut_ptr().cast(),
                    scratch.len(),
                )
            };
            match sys::check_size(n) {
                Ok(n) => self.hold(&scratch[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    eprintln!(
                        "tcpeval-delayline: read {}: {e}",
                        TUN_DEVICE.to_string_lossy()
                    );
                    return;
                }
            }
        }
    }

    fn hold(&mut self, packet: &[u8]) {
        let now = sys::now_ns(CLOCK);
        let route = ipv4_destination(packet).and_then(|dst| longest_match(&self.prefixes, dst));
        let Some(r) = route else {
            self.unmatched += 1;
            // Best effort: an unmatched packet is forwarded at once.
            let _ = self.write(packet);
            return;
        };
        let stored = self.pool.store(packet);
        match stored.map(|slot| self.routes[r].push(now, slot)) {
            Some(Ok(())) => {}
            Some(Err(slot)) => {
                self.pool.release(slot);
                self.routes[r].stats.dropped += 1;
            }
            None => self.routes[r].stats.dropped += 1,
        }
    }

    fn entries(&self, specs: &[RouteSpec]) -> Vec<Entry> {
        let to_entry = |(spec, q): (&RouteSpec, &DelayQueue<Slot>)| {
            let stats = crate::fifo::Stats {
                unmatched: self.unmatched,
                ..q.stats
            };
            Entry {
                label: Label::Route(spec.prefix),
                delay_us: spec.delay_us,
                capacity: q.capacity(),
                stats,
                late_log: q.late_log.clone(),
            }
        };
        specs.iter().zip(&self.routes).map(to_entry).collect()
    }
}

/// Opens the device, then calls `ready` and relays until `signals` fires.
/// Every route entry reports the device-wide `unmatched` count.
pub fn run(
    dev: &str,
    specs: &[RouteSpec],
    signals: &OwnedFd,
    ready: impl FnOnce(),
) -> Result<Vec<Entry>, SetupError> {
    let fd = open_tun(dev).map_err(|e| {
        let hint = if e.raw_os_error() == Some(libc::EPERM) {
            " (needs root / CAP_NET_ADMIN)"
        } else {
            ""
        };
        SetupError(format!("TUN device {dev}: {e}{hint}"))
    })?;
    let mut relay = Relay {
        dev: fd,
        prefixes: specs.iter().map(|s| s.prefix).collect(),
        routes: specs
            .iter()
            .map(|s| DelayQueue::new(POOL_SLOTS, s.delay_us))
            .collect(),
        pool: Pool::new(),
        unmatched: 0,
    };
    let mut fds = [
        sys::pollfd(signals.as_raw_fd()),
        sys::pollfd(relay.dev.as_raw_fd()),
    ];
    let mut scratch = vec![0u8; SCRATCH_BYTES];
    ready();
    loop {
        relay.release_due();
        let timeout =
            earliest_due(relay.routes.iter()).map(|d| d.saturating_sub(sys::now_ns(CLOCK)));
        fds.iter_mut().for_each(|p| p.revents = 0);
        sys::wait_readable(&mut fds, timeout).map_err(|e| SetupError(format!("ppoll: {e}")))?;
        if sys::readable(&fds[0]) {
            break;
        }
        if sys::readable(&fds[1]) {
            relay.receive(&mut scratch);
        }
    }
    Ok(relay.entries(specs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_stores_and_recycles() {
        let mut pool = Pool::new();
        let a = pool.store(&[1, 2, 3]).unwrap();
        let b = pool.store(&[9; SLOT_BYTES]).unwrap();
        assert_eq!(pool.get(a), &[1, 2, 3]);
        assert_eq!(pool.get(b).len(), SLOT_BYTES);
        assert!(pool.store(&[0; SLOT_BYTES + 1]).is_none());
        pool.release(a);
        let c = pool.store(&[7]).unwrap();
        assert_eq!(c.index, a.index);
        assert_eq!(pool.get(c), &[7]);
    }

    #[test]
    fn pool_exhaustion() {
        let mut pool = Pool::new();
        for _ in 0..POOL_SLOTS {
            pool.store(&[0]).unwrap();
        }
        assert!(pool.store(&[0]).is_none());
    }
}
