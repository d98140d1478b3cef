"""The testbed's traffic: a bulk sender that samples TCP_INFO, and a sink that
counts the bytes it delivers to the application. Each runs as a child process
inside its network namespace (`ip netns exec NS python endpoint.py ...`), with
the standard library only, so it starts fast and never imports numpy.

Times are seconds since the run's epoch `--t0`, an absolute CLOCK_MONOTONIC
value shared by every process of the run (namespaces do not change that clock).
Output: one JSON object per line on stdout; the last one has "kind": "end".

TCP_INFO layout: struct tcp_info in include/uapi/linux/tcp.h (Linux 6.x), read
as in shared/reference/linux-testbed.md section 3.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import threading
import time

TCP_INFO_FORMAT = "=8B24I4Q6I4Q2I2Q2I"
_FIELDS = (
    "state ca_state retransmits probes backoff options wscale flags "
    "rto ato snd_mss rcv_mss unacked sacked lost retrans fackets last_data_sent "
    "last_ack_sent last_data_recv last_ack_recv pmtu rcv_ssthresh rtt rttvar snd_ssthresh "
    "snd_cwnd advmss reordering rcv_rtt rcv_space total_retrans "
    "pacing_rate max_pacing_rate bytes_acked bytes_received "
    "segs_out segs_in notsent_bytes min_rtt data_segs_in data_segs_out "
    "delivery_rate busy_time rwnd_limited sndbuf_limited delivered delivered_ce "
    "bytes_sent bytes_retrans dsack_dups reord_seen")
TCP_INFO_FIELDS = tuple(_FIELDS.split())
KEEP = ("snd_cwnd", "snd_ssthresh", "rtt", "min_rtt", "unacked", "sacked", "lost", "retrans",
        "total_retrans", "bytes_acked", "bytes_sent", "bytes_retrans", "data_segs_out",
        "segs_in", "delivery_rate", "pacing_rate", "dsack_dups", "reord_seen")
CHUNK = 1 << 20
# setsockopt(SO_RCVBUFFORCE) (asm-generic/socket.h), which Python's socket
# module does not name: root may set a buffer past net.core.rmem_max.
SO_RCVBUFFORCE = 33
# The sink reads when this much waits (SO_RCVLOWAT, after the first read): few
# reads, so few ACKs sent by the reader; far below the pinned window, which
# unread data would otherwise take.
SINK_LOWAT = 64 << 10
LINGER_S = 0.5
SAMPLE_SPAN_S = 0.001  # a sample's clock readings around its read: at most this far apart
PROBE_PORT = 5002  # the sink listens there (never accepting) for RTT probes


def tcp_info(sock: socket.socket) -> dict:
    size = struct.calcsize(TCP_INFO_FORMAT)
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, size)
    raw = raw.ljust(size, b"\0")  # older kernels return fewer fields
    return dict(zip(TCP_INFO_FIELDS, struct.unpack(TCP_INFO_FORMAT, raw), strict=True))


def netstat() -> dict[str, int]:
    """This namespace's TcpExt counters (/proc/net/netstat is per network namespace)."""
    out = {}
    with open("/proc/net/netstat") as fh:
        lines = fh.read().splitlines()
    for names, values in zip(lines[::2], lines[1::2], strict=True):
        if names.startswith("TcpExt:"):
            out.update(zip(names.split()[1:], map(int, values.split()[1:]), strict=True))
    return out


def _delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The counters that moved between two netstat() readings."""
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def sleep_until(t0: float, t: float) -> None:
    delay = t0 + t - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def now(t0: float) -> float:
    return time.monotonic() - t0


def sample_loop(t0: float, first: float, step: float, end: float, stop: threading.Event,
                take) -> None:
    """Call take() at first, first + step, ... until end or until stop is set."""
    k = 0
    while not stop.is_set():
        t = first + k * step
        if t > end + 1e-9:
            return
        sleep_until(t0, t)
        take()
        k += 1


def timed(t0: float, read, tries: int = 3) -> tuple[float, float, object]:
    """read() with the time it happened: (midpoint, span, value) of the tightest
    of up to `tries` reads bracketed by clock readings, stopping at one within
    SAMPLE_SPAN_S. A busy machine may deschedule this process between a clock
    reading and the read; a counter read late but stamped early counts bytes
    into the wrong interval."""
    best = None
    for _ in range(tries):
        before = now(t0)
        value = read()
        after = now(t0)
        if best is None or after - before < best[1]:
            best = ((before + after) / 2, after - before, value)
        if after - before <= SAMPLE_SPAN_S:
            break
    return best


# ----- sink ------------------------------------------------------------------------------


def sink(a: argparse.Namespace) -> None:
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if a.window_clamp:
        # Caps the advertised receive window: the scenario's max_window.
        lsock.setsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP, a.window_clamp)
    # A fixed buffer (the accepted socket inherits it; autotuning off): with
    # the route's initrwnd its window is open from the first ACK.
    lsock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, a.rcvbuf // 2)  # the kernel doubles it
    lsock.bind((a.bind, a.port))
    lsock.listen(1)
    lsock.settimeout(0.2)
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    probe.bind((a.bind, PROBE_PORT))
    probe.listen(16)  # the kernel completes probe handshakes without accept()
    emit({"kind": "listening"})
    before = netstat()
    state = {"bytes": 0, "completed": None}
    stop = threading.Event()
    def take() -> None:
        # In-order bytes the kernel has received (tcpi_bytes_received): unlike
        # the application's reads, not delayed when the busy machine is slow
        # to schedule this process.
        conn = state.get("conn")
        try:
            t, span, info = timed(a.t0, lambda: conn and tcp_info(conn))
        except OSError:
            return  # a closed socket: no sample rather than a stale count stamped now
        if info:
            state["sampled"] = info["bytes_received"]
            if state.get("window"):
                state["window"]["rcv_ssthresh_last"] = info["rcv_ssthresh"]
        emit({"kind": "sample", "t": t, "span": span, "bytes": state.get("sampled", 0),
              "app_bytes": state["bytes"]})

    sampler = threading.Thread(target=sample_loop, daemon=True, args=(
        a.t0, 0.0, a.interval, a.duration, stop, take))
    sampler.start()
    # Reading goes on a little past the end, so the sender is the one to reset
    # the connection (after its last TCP_INFO sample).
    conn = _accept(lsock, a.t0, a.duration)
    if conn is not None:
        state["conn"] = conn
        _receive(conn, a.t0, a.duration + LINGER_S, state)
    sleep_until(a.t0, a.duration)
    stop.set()
    sampler.join()
    done = state["completed"]
    emit({"kind": "end", "t": now(a.t0), "bytes": state.get("sampled", 0),
          "first_byte": state.get("first_byte"), "window": state.get("window"),
          "completed": done if done is not None and done <= a.duration else None,
          "netstat": _delta(before, netstat())})


def _accept(lsock: socket.socket, t0: float, duration: float) -> socket.socket | None:
    while now(t0) < duration:
        try:
            conn, _ = lsock.accept()
            conn.settimeout(0.2)
            return conn
        except TimeoutError:
            continue
    return None


def _receive(conn: socket.socket, t0: float, duration: float, state: dict) -> None:
    buf = bytearray(CHUNK)
    while now(t0) < duration:
        try:
            n = conn.recv_into(buf)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return
        if n == 0:
            state["completed"] = now(t0)
            return
        if not state["bytes"]:
            state["first_byte"] = now(t0)
            state["window"] = _pin_window(conn)
        state["bytes"] += n
    _abort(conn)


def _pin_window(conn: socket.socket) -> dict:
    """Keep the receive window where it is, so the kernel ACKs every second
    segment as it arrives, as the simulator's receiver does. Linux sends that
    ACK at once only if the window it would advertise does not shrink
    (`__tcp_ack_snd_check`), and while the window grows (`tcp_grow_window`
    raises rcv_ssthresh by two segments per segment, up to the clamp that the
    first segment's len/truesize ratio sets) it ACKs every segment: with this
    buffer that lasted 7 s of HSTCP-LP at 100 ms, and with autotuning the
    window grows in steps behind the reads, whose wake-ups then set the ACK
    pattern (2.4-2.7 segments per ACK). A clamp at the current rcv_ssthresh
    (TCP_WINDOW_CLAMP, set after the first segment so that its ratio does not
    reset it) leaves no room to grow; the fixed buffer keeps the free space
    above half of it, so the window never shrinks. A reader woken by every
    segment still sent some ACKs itself (`tcp_cleanup_rbuf`; 1.85 segments per
    ACK): it now wakes per SINK_LOWAT bytes. Returns the pinned window."""
    pinned = tcp_info(conn)["rcv_ssthresh"]
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP, pinned)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, SINK_LOWAT)
    return {"pinned": pinned, "rcvbuf": conn.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)}


def _abort(sock: socket.socket) -> None:
    """Close with a RST so nothing lingers after the run's end."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


# ----- sender ----------------------------------------------------------------------------


def send(a: argparse.Namespace) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # Before connect, so the handshake already runs the scenario's algorithm.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, a.cc.encode())
    if a.mss:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, a.mss)
    emit({"kind": "ready", "probe_rtt": probe_rtt(a.dst)})
    before = netstat()
    sleep_until(a.t0, a.start)
    sock.settimeout(5.0)
    connect_s = now(a.t0)
    sock.connect((a.dst, a.port))
    established_s = now(a.t0)
    cc = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
    stop = threading.Event()
    sampler = threading.Thread(target=sample_loop, daemon=True, args=(
        a.t0, a.first_sample, a.trace_interval, a.duration, stop,
        lambda: _sample(a.t0, sock)))
    sampler.start()
    finished = _transmit(sock, a)
    sleep_until(a.t0, a.duration)
    stop.set()
    sampler.join()
    final = _kept(tcp_info(sock))
    emit({"kind": "end", "t": now(a.t0), "cc": cc, "finished_sending": finished, **final,
          "connect_s": connect_s, "established_s": established_s,
          "netstat": _delta(before, netstat())})
    _abort(sock)


def probe_rtt(dst: str, tries: int = 3) -> float | None:
    """The path's base RTT in seconds, measured before the run while it is idle:
    the kernel's RTT sample of a handshake with the sink's probe port (kernel
    timestamps, so a busy machine's scheduling delays do not enter)."""
    best = None
    for _ in range(tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(2.0)
            try:
                s.connect((dst, PROBE_PORT))
            except OSError:
                continue
            rtt = tcp_info(s)["rtt"] / 1e6
            best = rtt if best is None else min(best, rtt)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return best


def _sample(t0: float, sock: socket.socket) -> None:
    t, span, info = timed(t0, lambda: tcp_info(sock))
    emit({"kind": "sample", "t": t, "span": span, **_kept(info)})


def _kept(info: dict) -> dict:
    return {k: info[k] for k in KEEP}


def _transmit(sock: socket.socket, a: argparse.Namespace) -> bool:
    """Send until the byte budget, the flow's stop time or the run's end; True
    when the application finished its data (then the socket is half-closed)."""
    data = memoryview(b"\0" * CHUNK)
    left = a.bytes if a.bytes else None
    end = min(a.stop, a.duration) if a.stop is not None else a.duration
    sock.settimeout(0.1)
    while now(a.t0) < end and (left is None or left > 0):
        chunk = data if left is None or left >= CHUNK else data[:left]
        try:
            n = sock.send(chunk)
        except TimeoutError:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return False
        if left is not None:
            left -= n
    if left == 0 or (a.stop is not None and a.stop < a.duration):
        sock.shutdown(socket.SHUT_WR)
        return True
    return False


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="endpoint.py")
    sub = p.add_subparsers(dest="role", required=True)
    s = sub.add_parser("sink")
    s.add_argument("--bind", required=True)
    s.add_argument("--window-clamp", type=int, default=0)
    s.add_argument("--rcvbuf", type=int, required=True)
    r = sub.add_parser("send")
    r.add_argument("--dst", required=True)
    r.add_argument("--cc", required=True)
    r.add_argument("--start", type=float, default=0.0)
    r.add_argument("--stop", type=float, default=None)
    r.add_argument("--bytes", type=int, default=0)
    r.add_argument("--mss", type=int, default=0)
    r.add_argument("--trace-interval", type=float, required=True)
    r.add_argument("--first-sample", type=float, required=True)
    for q in (s, r):
        q.add_argument("--port", type=int, required=True)
        q.add_argument("--t0", type=float, required=True)
        q.add_argument("--duration", type=float, required=True)
        q.add_argument("--tag", default="", help="the run's prefix, to find strays")
    s.add_argument("--interval", type=float, required=True)
    a = p.parse_args(argv)
    (sink if a.role == "sink" else send)(a)


if __name__ == "__main__":
    main(sys.argv[1:])
