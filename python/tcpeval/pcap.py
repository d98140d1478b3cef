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
so tools learn the window scale, SACK-permitted, timestamps and (for a flow
configured with ECN or whose data is ECN-capable) ECN negotiation. They are
the only packets not from the simulation.
"""

from __future__ import annotations

import functools
import os
import struct
from pathlib import Path

import numpy as np

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
    cols = _columns(capture)
    names = []
    for k, point in enumerate(capture["points"]):
        name = file_name(point)
        _write_atomic(directory / name, _pcap(cols, cols["point"] == k, flows))
        names.append(name)
    return names


def _columns(capture: dict) -> dict:
    """The capture's columns as arrays, and where each row's SACK blocks start
    in the flat `sack` column."""
    cols = {c: np.asarray(capture[c], dtype=t) for c, t in (
        ("t_ns", np.uint64), ("point", np.uint8), ("flow", np.int64), ("data", bool),
        ("seq", np.uint64), ("payload", np.uint64), ("nsack", np.int64),
        ("ts_val_ns", np.uint64), ("ts_ecr_ns", np.uint64), ("ecn", np.uint8), ("ece", bool),
        ("cwr", bool))}
    cols["sack"] = np.asarray(capture["sack"], dtype=np.uint64)
    cols["sack_at"] = 2 * (np.cumsum(cols["nsack"]) - cols["nsack"])
    return cols


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


@functools.cache
def _layout(nsack: int) -> np.dtype:
    """One record (pcap record header, Ethernet, IPv4, TCP with the timestamps
    option and `nsack` SACK blocks) as a packed structured type, in wire order."""
    fields = [("sec", "<u4"), ("nsec", "<u4"), ("incl", "<u4"), ("orig", "<u4"),
              ("eth_dst", "u1", 6), ("eth_src", "u1", 6), ("eth_type", ">u2"),
              ("vhl", "u1"), ("tos", "u1"), ("ip_len", ">u2"), ("ip_id", ">u2"),
              ("frag", ">u2"), ("ttl", "u1"), ("proto", "u1"), ("ip_sum", ">u2"),
              ("ip_src", "u1", 4), ("ip_dst", "u1", 4),
              ("sport", ">u2"), ("dport", ">u2"), ("seq", ">u4"), ("ack", ">u4"),
              ("off", "u1"), ("flags", "u1"), ("win", ">u2"), ("tcp_sum", ">u2"),
              ("urp", ">u2"), ("ts_opt", "u1", 4), ("ts_val", ">u4"), ("ts_ecr", ">u4")]
    if nsack:
        fields += [("sack_opt", "u1", 4), ("sack", ">u4", 2 * nsack)]
    return np.dtype(fields)


IP_AT = 16 + 14  # where the IPv4 header starts in a record
HANDSHAKE_BYTES = 16 + 14 + 20 + 20 + 20  # a SYN's record: options MSS, SACK_OK, TS, WS


def _pcap(cols: dict, mask: np.ndarray, flows: list[dict]) -> bytes:
    """One point's file: its rows in order, each flow's first one preceded by
    the flow's SYN and SYN-ACK. Records are built as arrays, one structured
    array per SACK-block count, and put at their offsets."""
    rows = np.flatnonzero(mask)
    known, first, fi = np.unique(cols["flow"][rows], return_index=True, return_inverse=True)
    fls = [_Flow(int(g), flows[int(g)]) for g in known]
    # A flow whose data is ECN-capable negotiated ECN (an algorithm that needs
    # it, as DCTCP, uses it whatever the flow's `ecn` says).
    ect = np.zeros(len(known), dtype=bool)
    np.logical_or.at(ect, fi, (cols["ecn"][rows] != 0) & cols["data"][rows])
    for fl, e in zip(fls, ect, strict=True):
        fl.ecn |= bool(e)
    # Output position of each row: two handshake records before each flow's first.
    shift = np.zeros(len(rows), dtype=np.int64)
    shift[first] = 2
    out_pos = np.arange(len(rows)) + np.cumsum(shift)
    nsack = cols["nsack"][rows]
    sizes = np.full(len(rows) + 2 * len(known), HANDSHAKE_BYTES, dtype=np.int64)
    sizes[out_pos] = np.array([_layout(n).itemsize for n in range(4)])[nsack]
    offsets = 24 + np.cumsum(sizes) - sizes
    buf = np.zeros(24 + int(sizes.sum()), dtype=np.uint8)
    buf[:24] = np.frombuffer(struct.pack("<IHHiIII", PCAP_MAGIC_NS, 2, 4, 0, 0, SNAPLEN,
                                         LINKTYPE_ETHERNET), dtype=np.uint8)
    for fl, j in zip(fls, first, strict=True):
        syn = b"".join(_handshake(fl, int(cols["t_ns"][rows[j]])))
        at = offsets[out_pos[j] - 2]
        buf[at:at + len(syn)] = np.frombuffer(syn, dtype=np.uint8)
    tables = _flow_tables(fls)
    ip_ids = _ip_ids(fi, cols["data"][rows])
    for n in range(4):
        pick = np.flatnonzero(nsack == n)
        if len(pick):
            recs = _records(cols, rows[pick], tables, fi[pick], ip_ids[pick], n)
            _place(buf, recs, offsets[out_pos[pick]], out_pos[pick])
    return buf.tobytes()


def _place(buf: np.ndarray, recs: np.ndarray, at: np.ndarray, pos: np.ndarray) -> None:
    """Copy records of one size to their offsets, a run of adjacent ones at a
    time (records of one SACK count mostly follow each other)."""
    breaks = np.flatnonzero(np.diff(pos) != 1) + 1
    for a, b in zip(np.r_[0, breaks], np.r_[breaks, len(pos)], strict=True):
        buf[at[a]:at[a] + (b - a) * recs.shape[1]] = recs[a:b].ravel()


def _flow_tables(fls: list[_Flow]) -> dict:
    """Per captured flow (in `known` order): what its packets' headers take."""
    u8 = lambda xs: np.array([list(x) for x in xs], dtype=np.uint8).reshape(len(xs), -1)  # noqa: E731
    return {"mss": np.array([f.mss for f in fls], dtype=np.uint64),
            "size": np.array([-1 if f.size is None else f.size for f in fls], dtype=np.int64),
            "win": np.array([f.window for f in fls], dtype=np.uint16),
            "port": np.array([f.ports[0] for f in fls], dtype=np.uint16),
            "ip": [u8([f.ips[side] for f in fls]) for side in (0, 1)],
            "mac": [u8([f.macs[side] for f in fls]) for side in (0, 1)]}


def _ip_ids(fi: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Each packet's IPv4 identification: per flow and side, counting on from
    the handshake's 1."""
    key = fi * 2 + (~data).astype(np.int64)
    order = np.argsort(key, kind="stable")
    k = key[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    count = np.arange(len(k)) - np.repeat(starts, np.diff(np.r_[starts, len(k)]))
    ids = np.empty(len(k), dtype=np.int64)
    ids[order] = count + 2
    return ids & 0xFFFF


def _bytes_of(seg: np.ndarray, fi: np.ndarray, tables: dict) -> np.ndarray:
    """Sequence numbers (mod 2^32) of segment numbers: n x MSS, capped at a
    sized transfer's length."""
    b = seg * tables["mss"][fi]
    size = tables["size"][fi]
    b = np.where(size >= 0, np.minimum(b, size.clip(0).astype(np.uint64)), b)
    return b & np.uint64(ISN)


def _records(cols: dict, rows: np.ndarray, tables: dict, fi: np.ndarray, ip_ids: np.ndarray,
             nsack: int) -> np.ndarray:
    """The records of `rows` (each with `nsack` SACK blocks), one row of bytes each."""
    data = cols["data"][rows]
    side = (~data).astype(np.int64)  # 0: the sender's packet, 1: the receiver's
    t = cols["t_ns"][rows]
    payload = np.where(data, cols["payload"][rows], 0)
    rec = np.zeros(len(rows), dtype=_layout(nsack))
    opt_len = 12 + (4 + 8 * nsack if nsack else 0)
    rec["sec"], rec["nsec"] = t // 10**9, t % 10**9
    rec["incl"] = rec.itemsize - 16
    rec["orig"] = rec.itemsize - 16 + payload
    for name, table in (("eth_src", "mac"), ("ip_src", "ip")):
        own = np.where(side[:, None] == 0, tables[table][0][fi], tables[table][1][fi])
        other = np.where(side[:, None] == 0, tables[table][1][fi], tables[table][0][fi])
        rec[name] = own
        rec[name.replace("src", "dst")] = other
    rec["eth_type"] = 0x0800
    rec["vhl"], rec["tos"], rec["frag"], rec["ttl"], rec["proto"] = 0x45, 0, 0x4000, 64, 6
    rec["tos"] = cols["ecn"][rows]
    rec["ip_len"] = 20 + 20 + opt_len + payload
    rec["ip_id"] = ip_ids
    port = tables["port"][fi]
    rec["sport"] = np.where(data, port, RECEIVER_PORT)
    rec["dport"] = np.where(data, RECEIVER_PORT, port)
    seq = _bytes_of(cols["seq"][rows], fi, tables)
    rec["seq"] = np.where(data, seq, 0)
    rec["ack"] = np.where(data, 0, seq)
    rec["off"] = (20 + opt_len) // 4 << 4
    rec["flags"] = (ACK | np.where(data, PSH, 0) | np.where(cols["ece"][rows], ECE, 0)
                    | np.where(cols["cwr"][rows], CWR, 0))
    rec["win"] = tables["win"][fi]
    rec["ts_opt"] = [NOP, NOP, OPT_TS, 10]
    rec["ts_val"] = (cols["ts_val_ns"][rows] // 1_000_000) & np.uint64(ISN)
    rec["ts_ecr"] = (cols["ts_ecr_ns"][rows] // 1_000_000) & np.uint64(ISN)
    if nsack:
        rec["sack_opt"] = [NOP, NOP, OPT_SACK, 2 + 8 * nsack]
        at = cols["sack_at"][rows][:, None] + np.arange(2 * nsack)
        rec["sack"] = _bytes_of(cols["sack"][at], fi[:, None], tables)
    out = rec.view(np.uint8).reshape(len(rows), rec.itemsize)
    ip = out[:, IP_AT:IP_AT + 20].copy().view(">u2").astype(np.uint32).sum(axis=1)
    ip = (ip & 0xFFFF) + (ip >> 16)
    ip = (ip & 0xFFFF) + (ip >> 16)
    rec["ip_sum"] = ~ip & 0xFFFF
    return out


def _handshake(fl: _Flow, t: int) -> list[bytes]:
    """SYN and SYN-ACK with the options of the connection (RFC 7323 section
    2.2: window scale only on SYNs; RFC 3168 section 6.1.1: ECE|CWR on the SYN,
    ECE on the SYN-ACK)."""
    opts = (struct.pack("!BBH", OPT_MSS, 4, fl.mss) + bytes([OPT_SACK_OK, 2])
            + struct.pack("!BBII", OPT_TS, 10, 0, 0) + bytes([NOP, OPT_WSCALE, 3, fl.wscale]))
    syn = SYN | (ECE | CWR if fl.ecn else 0)
    synack = SYN | ACK | (ECE if fl.ecn else 0)
    return [_syn_packet(fl, t, 0, syn, opts), _syn_packet(fl, t, 1, synack, opts)]


def _syn_packet(fl: _Flow, t: int, side: int, flags: int, opts: bytes) -> bytes:
    """A handshake record: side 0 is the sender's packet, 1 the receiver's; each
    side's first IPv4 identification, 1."""
    src, dst = fl.ips[side], fl.ips[1 - side]
    # The SYN-ACK acknowledges ISN + 1 = 0.
    tcp = _TCP.pack(fl.ports[side], fl.ports[1 - side], ISN, 0,
                    (5 + len(opts) // 4) << 4, flags, 0xFFFF, 0, 0) + opts
    ip = _IP.pack(0x45, 0, _IP.size + len(tcp), 1, 0x4000, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    frame = _ETH.pack(fl.macs[1 - side], fl.macs[side], 0x0800) + ip + tcp
    return _REC.pack(t // 1_000_000_000, t % 1_000_000_000, len(frame), len(frame)) + frame


def _checksum(header: bytes) -> int:
    """The IPv4 header checksum (RFC 791; ones' complement sum, RFC 1071)."""
    s = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _write_atomic(path: Path, data: bytes) -> None:
    """Write under a temporary name, then rename into place."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
