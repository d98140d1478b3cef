//! Constants of the wire and of Linux TCP, one home each: the engine uses them
//! and the front end reads them through the binding (`_sim.constants()`).

/// Headers of a TCP segment: IPv4 (RFC 791, 20 B), TCP (RFC 9293, 20 B) and the
/// timestamp option padded to 12 B (RFC 7323 section 3; Linux
/// TCPOLEN_TSTAMP_ALIGNED, include/net/tcp.h), on every segment as in Linux.
pub const HEADER_BYTES: u32 = 52;

/// The IP MTU of Ethernet (RFC 894): the default packet size.
pub const MTU_BYTES: u32 = 1500;

/// The MSS of a full-size segment: 1500 - 52 = 1448, Linux's usual MSS.
pub const MSS_BYTES: u32 = MTU_BYTES - HEADER_BYTES;

/// Initial window in segments: RFC 6928; Linux TCP_INIT_CWND (include/net/tcp.h).
pub const INITIAL_CWND: u32 = 10;

/// Delayed-ACK timer: Linux TCP_DELACK_MIN = HZ/25 (include/net/tcp.h).
pub const DELACK_TIMEOUT_NS: u64 = 40_000_000;

/// Every constant above by name, as the binding exports them.
pub const ALL: &[(&str, u64)] = &[
    ("header_bytes", HEADER_BYTES as u64),
    ("mtu_bytes", MTU_BYTES as u64),
    ("mss_bytes", MSS_BYTES as u64),
    ("initial_cwnd", INITIAL_CWND as u64),
    ("delack_timeout_ns", DELACK_TIMEOUT_NS),
];
