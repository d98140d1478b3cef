"""pcap files of a run's packet capture (issue 31 item 4, `[run] pcap`).

The engine records the packets of the captured flows at each capture point
(crates/tcpeval-sim/src/capture.rs); this module writes them as classic libpcap
files, one per point, with nanosecond timestamps (magic 0xa1b23c4d, which
libpcap >= 1.5, tshark and tcptrace read) and synthetic Ethernet, IPv4 and TCP
headers. Only headers are stored: each record's captured length is its
headers', its original length the packet's (as `tcpdump -s 0` of a header
snapshot), so tools see the real segment sizes.

What the headers carry:
* sequence numbers in bytes: segment n starts at n x MSS (each side's initial
  sequence number is 2^32 - 1, so its first byte is 0), ACKs and SACK blocks
  (RFC 2018) likewise, capped at a sized transfer's length;
* the TCP timestamps option (RFC 7323 section 3) on every segment, at 1 ms per
  tick (Linux's TCP timestamp clock since 4.13, tcp_time_stamp_ms);
* the advertised window: the flow's receive window (`max_window`, else the
  largest TCP can advertise, 65535 << 14),
  scaled by the smallest shift that fits 16 bits (RFC 7323 section 2.3);
* the IP header's ECN field and the TCP ECE and CWR flags (RFC 3168 sections 5
  and 6.1) as the engine set them.
The engine opens connections without a handshake: each flow's packets at a
point are preceded by a synthetic SYN and SYN-ACK at its first packet's time,
so tools learn the window scale, SACK-permitted, timestamps and (for an ECN
flow) ECN negotiation. They are the only packets not from the simulation.
"""

from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path

PCAP_MAGIC_NS = 0xA1B23C4D  # libpcap's nanosecond-resolution file magic
LINKTYPE_ETHERNET = 1
SNAPLEN = 128  # Ethernet 14 + IPv4 20 + TCP at most 60
ISN = 0xFFFFFFFF  # so that the first payload byte has sequence number 0
# The largest window TCP can advertise (RFC 7323 section 2.3: shift at most 14);
# a flow without a receive window limit advertises it.
MAX_WINDOW_BYTES = 0xFFFF << 14
RECEIVER_PORT = 5001  # iperf's
SENDER_PORT_BASE = 32768  # Linux's ip_local_port_range starts here

# TCP flags (RFC 9293 section 3.1; RFC 3168 section 6.1)
FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = (1 << i for i in range(8))
# TCP option kinds (RFC 9293, RFC 7323, RFC 2018)
NOP, OPT_MSS, OPT_WSCALE, OPT_SACK_OK, OPT_SACK, OPT_TS = 1, 2, 3, 4, 5, 8

_ETH = struct.Struct("!6s6sH")
_IP = struct.Struct("!BBHHHBBH4s4s")
_TCP = struct.Struct("!HHIIBBHHH")
_REC = struct.Struct("<IIII")


def file_name(point: str) -> str:
    return f"capture-{point}.pcap"


def write_captures(capture: dict, flows: list[dict], directory: Path) -> list[str]:
    """Write one pcap file per capture point into `directory`; returns the file
    names. `flows` are the engine's flow configs (MSS, size, window)."""
    rows = _rows(capture)
    names = []
    for k, point in enumerate(capture["points"]):
        name = file_name(point)
        _write_atomic(directory / name, _pcap(k, rows, flows))
        names.append(name)
    return names


def _rows(capture: dict) -> list[tuple]:
    """The capture's rows with each one's SACK blocks as a tuple of pairs."""
    c = capture
    out, at = [], 0
    for i in range(len(c["t_ns"])):
        n = c["nsack"][i]
        flat = c["sack"][at:at + 2 * n]
        at += 2 * n
        sack = tuple(zip(flat[0::2], flat[1::2], strict=True))
        out.append((c["point"][i], c["t_ns"][i], c["flow"][i], c["data"][i], c["seq"][i],
                    c["payload"][i], sack, c["ts_val_ns"][i], c["ts_ecr_ns"][i], c["ecn"][i],
                    c["ece"][i], c["cwr"][i]))
    return out


class _Flow:
    """One flow's addressing and byte mapping."""

    def __init__(self, f: int, cfg: dict):
        self.mss = cfg["mss"]
        self.size = cfg.get("bytes")
        window = min(cfg.get("max_window_bytes") or MAX_WINDOW_BYTES, MAX_WINDOW_BYTES)
        self.wscale = next(s for s in range(15) if window >> s <= 0xFFFF)
        self.window = window >> self.wscale
        self.ecn = bool(cfg.get("ecn"))
        self.ips = (bytes([10, 1 + (f >> 16), (f >> 8) & 255, f & 255]),
                    bytes([10, 128 + (f >> 16), (f >> 8) & 255, f & 255]))
        self.ports = (SENDER_PORT_BASE + f % 28232, RECEIVER_PORT)
        self.macs = (bytes([2, 0, 0, 1, (f >> 8) & 255, f & 255]),
                     bytes([2, 0, 0, 2, (f >> 8) & 255, f & 255]))
        self.ip_id = [0, 0]

    def byte(self, seg: int) -> int:
        """Sequence number of segment `seg`'s first byte (the end for a sized
        transfer's last segment)."""
        b = seg * self.mss
        return min(b, self.size) if self.size is not None else b


def _pcap(k: int, rows: list[tuple], flows: list[dict]) -> bytes:
    parts = [struct.pack("<IHHiIII", PCAP_MAGIC_NS, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET)]
    known: dict[int, _Flow] = {}
    for row in rows:
        point, t, f = row[0], row[1], row[2]
        if point != k:
            continue
        if f not in known:
            known[f] = _Flow(f, flows[f])
            parts += _handshake(known[f], t)
        parts.append(_segment(known[f], row))
    return b"".join(parts)


def _handshake(fl: _Flow, t: int) -> list[bytes]:
    """SYN and SYN-ACK with the options of the connection (RFC 7323 section
    2.2: window scale only on SYNs; RFC 3168 section 6.1.1: ECE|CWR on the SYN,
    ECE on the SYN-ACK)."""
    opts = (struct.pack("!BBH", OPT_MSS, 4, fl.mss) + bytes([OPT_SACK_OK, 2])
            + struct.pack("!BBII", OPT_TS, 10, 0, 0) + bytes([NOP, OPT_WSCALE, 3, fl.wscale]))
    syn = SYN | (ECE | CWR if fl.ecn else 0)
    synack = SYN | ACK | (ECE if fl.ecn else 0)
    return [_packet(fl, t, 0, ISN, 0, syn, 0xFFFF, opts, 0, 0),
            _packet(fl, t, 1, ISN, 0, synack, 0xFFFF, opts, 0, 0)]


def _segment(fl: _Flow, row: tuple) -> bytes:
    _, t, _, data, seq, payload, sack, ts_val, ts_ecr, ecn, ece, cwr = row
    flags = ACK | (ECE if ece else 0) | (CWR if cwr else 0)
    opts = bytes([NOP, NOP]) + struct.pack("!BBII", OPT_TS, 10, _ts(ts_val), _ts(ts_ecr))
    if sack:
        blocks = b"".join(struct.pack("!II", fl.byte(a) & ISN, fl.byte(b) & ISN) for a, b in sack)
        opts += bytes([NOP, NOP, OPT_SACK, 2 + len(blocks)]) + blocks
    if data:
        return _packet(fl, t, 0, fl.byte(seq) & ISN, 0, flags | PSH, fl.window, opts, payload,
                       ecn)
    return _packet(fl, t, 1, 0, fl.byte(seq) & ISN, flags, fl.window, opts, 0, ecn)


def _ts(t_ns: int) -> int:
    return (t_ns // 1_000_000) & 0xFFFFFFFF


def _packet(fl: _Flow, t: int, side: int, seq: int, ack: int, flags: int, window: int,
            opts: bytes, payload: int, ecn: int) -> bytes:
    """One record: side 0 is the sender's packet, 1 the receiver's."""
    src, dst = fl.ips[side], fl.ips[1 - side]
    tcp = _TCP.pack(fl.ports[side], fl.ports[1 - side], seq, ack, (5 + len(opts) // 4) << 4,
                    flags, window, 0, 0) + opts
    total = _IP.size + len(tcp) + payload
    fl.ip_id[side] = (fl.ip_id[side] + 1) & 0xFFFF
    ip = _IP.pack(0x45, ecn, total, fl.ip_id[side], 0x4000, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    frame = _ETH.pack(fl.macs[1 - side], fl.macs[side], 0x0800) + ip + tcp
    return _REC.pack(t // 1_000_000_000, t % 1_000_000_000, len(frame),
                     len(frame) + payload) + frame


def _checksum(header: bytes) -> int:
    """The IPv4 header checksum (RFC 791; ones' complement sum, RFC 1071)."""
    s = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tcpeval-pcap-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
