"""Packet capture (issue 31 item 4): `[run] pcap` writes one libpcap file per
capture point. The writer is checked by parsing its bytes back; the files of a
real run by the real tools, tshark and tcptrace (Debian packages; `make test`
installs them where it can, else these skip and say why)."""

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcpeval import pcap
from tcpeval.cli import app
from tcpeval.errors import ScenarioError
from tcpeval.run import run
from tcpeval.store import write_run

SCENARIO = """
[network]
bottleneck = "10Mbps"
rtt = "40ms"
buffer = "0.3bdp"

[[flows]]
cc = "reno"

[[flows]]
cc = "cubic"
rtt = "60ms"

[run]
duration = "4s"
interval = "0.5s"
"""


def _records(data: bytes) -> list[tuple[int, bytes, int]]:
    """(time in ns, frame bytes, original length) per record."""
    magic, major, minor, _, _, snaplen, link = struct.unpack_from("<IHHiIII", data)
    assert (magic, major, minor, link) == (0xA1B23C4D, 2, 4, 1)
    out, at = [], 24
    while at < len(data):
        sec, nsec, incl, orig = struct.unpack_from("<IIII", data, at)
        assert incl <= snaplen
        out.append((sec * 10**9 + nsec, data[at + 16:at + 16 + incl], orig))
        at += 16 + incl
    assert at == len(data)
    return out


def _tcp(frame: bytes) -> dict:
    """The fields of a frame's IPv4 and TCP headers the writer sets."""
    assert frame[12:14] == b"\x08\x00"
    ip = frame[14:34]
    total = struct.unpack("!H", ip[2:4])[0]
    assert pcap._checksum(ip) == 0, "a valid IPv4 header sums to 0xffff"
    tcp = frame[34:]
    sport, dport, seq, ack, off, flags, win = struct.unpack("!HHIIBBH", tcp[:16])
    opts = tcp[20:(off >> 4) * 4]
    sack, ts, i = [], None, 0
    while i < len(opts):
        kind = opts[i]
        if kind == pcap.NOP:
            i += 1
            continue
        length = opts[i + 1]
        body = opts[i + 2:i + length]
        if kind == pcap.OPT_SACK:
            sack = [struct.unpack("!II", body[j:j + 8]) for j in range(0, len(body), 8)]
        elif kind == pcap.OPT_TS:
            ts = struct.unpack("!II", body)
        i += length
    return {"ecn": ip[1] & 3, "payload": total - 20 - (off >> 4) * 4, "sport": sport,
            "dport": dport, "seq": seq, "ack": ack, "flags": flags, "win": win,
            "sack": sack, "ts": ts}


def _capture(rows: list[dict], points=("bottleneck",)) -> dict:
    cols = ["t_ns", "point", "flow", "data", "seq", "payload", "nsack", "ts_val_ns",
            "ts_ecr_ns", "ecn", "ece", "cwr"]
    cap = {c: [r[c] for r in rows] for c in cols}
    cap["sack"] = [x for r in rows for blk in r["sack"] for x in blk]
    cap["points"], cap["seen"] = list(points), [len(rows)] * len(points)
    return cap


def _row(t, flow, data, seq, payload=0, sack=(), ecn=0, ece=False, cwr=False, point=0):
    return {"t_ns": t, "point": point, "flow": flow, "data": data, "seq": seq,
            "payload": payload, "nsack": len(sack), "sack": list(sack), "ts_val_ns": t,
            "ts_ecr_ns": max(0, t - 7_000_000), "ecn": ecn, "ece": ece, "cwr": cwr}


FLOWS = [{"mss": 1448, "bytes": None, "max_window_bytes": None},
         {"mss": 1000, "bytes": 2500, "max_window_bytes": 65535, "ecn": True}]


def test_headers_carry_sequence_ack_sack_timestamps_window_and_ecn(tmp_path):
    rows = [_row(1_000, 0, True, 0, 1448, cwr=True),
            _row(2_500_000_123, 0, False, 3, sack=[(5, 7), (9, 10)], ece=True),
            _row(3_000_000_000, 1, True, 2, 500, ecn=3),
            _row(3_100_000_000, 1, False, 3, point=1)]
    names = pcap.write_captures(_capture(rows, ("sender", "receiver")), FLOWS, tmp_path)
    assert names == ["capture-sender.pcap", "capture-receiver.pcap"]
    recs = _records((tmp_path / names[0]).read_bytes())
    # Flow 0: SYN, SYN-ACK at its first packet's time, then its two packets;
    # flow 1: the same with its one packet at this point.
    assert [t for t, _, _ in recs] == [1_000] * 3 + [2_500_000_123] + [3_000_000_000] * 3
    syn, synack, data, ack = (_tcp(f) for _, f, _ in recs[:4])
    assert syn["flags"] == pcap.SYN and synack["flags"] == pcap.SYN | pcap.ACK
    assert (syn["seq"], data["seq"]) == (2**32 - 1, 0), "the SYN takes the byte before 0"
    assert data["flags"] == pcap.ACK | pcap.PSH | pcap.CWR and data["ecn"] == 0
    assert data["payload"] == 1448 and recs[2][2] == 14 + 20 + 32 + 1448
    assert ack["ack"] == 3 * 1448 and ack["flags"] == pcap.ACK | pcap.ECE
    assert ack["sack"] == [(5 * 1448, 7 * 1448), (9 * 1448, 10 * 1448)]
    assert ack["ts"] == (2500, 2493), "1 ms per timestamp tick"
    assert (data["sport"], data["dport"]) == (ack["dport"], ack["sport"])
    # No window limit: the largest window there is (RFC 7323: 65535 << 14).
    assert data["win"] == 65535
    syn1, synack1, last = (_tcp(f) for _, f, _ in recs[4:])
    assert syn1["flags"] == pcap.SYN | pcap.ECE | pcap.CWR, "an ECN flow negotiates it"
    assert syn["flags"] == pcap.SYN, "flow 0 has no ECN"
    assert synack1["flags"] == pcap.SYN | pcap.ACK | pcap.ECE
    assert (last["seq"], last["ecn"], last["win"]) == (2000, 3, 65535)
    rec = _records((tmp_path / names[1]).read_bytes())
    assert _tcp(rec[-1][1])["ack"] == 2500, "a sized transfer's last ACK is its length"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 10**7),
                          st.lists(st.tuples(st.integers(0, 10**7), st.integers(1, 50)),
                                   max_size=3),
                          st.sampled_from([0, 2, 3]), st.booleans(), st.booleans()),
                min_size=1, max_size=30))
def test_every_row_reads_back(tmp_path_factory, spec):
    rows = [_row(i * 1000, 0, data, seq, 1448 if data else 0,
                 sack=[(a, a + n) for a, n in sack], ecn=ecn, ece=ece, cwr=cwr)
            for i, (data, seq, sack, ecn, ece, cwr) in enumerate(spec)]
    d = tmp_path_factory.mktemp("p")
    pcap.write_captures(_capture(rows), FLOWS, d)
    recs = _records((d / "capture-bottleneck.pcap").read_bytes())
    ect = any(r["data"] and r["ecn"] for r in rows)
    assert _tcp(recs[0][1])["flags"] == pcap.SYN | (pcap.ECE | pcap.CWR if ect else 0), \
        "ECN-capable data: the handshake negotiated ECN"
    recs = recs[2:]
    assert len(recs) == len(rows)
    for r, (_, frame, orig) in zip(rows, recs, strict=True):
        h = _tcp(frame)
        b = (r["seq"] * 1448) % 2**32
        assert (h["seq"] if r["data"] else h["ack"]) == b
        assert h["sack"] == [((a * 1448) % 2**32, (e * 1448) % 2**32) for a, e in r["sack"]]
        assert h["ecn"] == r["ecn"] and h["payload"] == r["payload"]
        assert bool(h["flags"] & pcap.ECE) == r["ece"] and bool(h["flags"] & pcap.CWR) == r["cwr"]
        assert orig == len(frame) + r["payload"]


def test_a_bad_capture_names_the_scenario_field(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    for override, want in [("run.pcap.flows=[5]", "run.pcap.flows[0]: no flow 5"),
                           ('run.pcap.where="core"', "run.pcap.where: unknown capture point"),
                           ('run.pcap.where=["sender", "hop3"]', "run.pcap.where[1]: unknown"),
                           ("run.pcap.max_packets=0", "run.pcap.max_packets: must be >= 1"),
                           ("run.backend=testbed", "run.pcap: the testbed backend does not")]:
        with pytest.raises(ScenarioError, match=re.escape(want)):
            run(path, overrides=['run.pcap.where="sender"', override])


def test_without_pcap_nothing_is_captured_or_written(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    res = run(path, overrides=['run.duration="1s"'])
    assert res.capture is None and "capture" not in res.scenario
    out = write_run(res, tmp_path / "out")
    assert not list(out.glob("*.pcap"))


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """A 4 s run of two flows through a small buffer, captured at the sender and
    the bottleneck through the CLI."""
    from typer.testing import CliRunner

    d = tmp_path_factory.mktemp("pcap")
    (d / "s.toml").write_text(SCENARIO)
    res = CliRunner().invoke(app, ["run", str(d / "s.toml"), "--out", str(d / "out"),
                                   "--pcap", "sender,bottleneck", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    return d / "out", summary


def test_the_cli_writes_one_file_per_point_beside_the_run(captured):
    out, summary = captured
    assert sorted(p.name for p in out.glob("*.pcap")) == ["capture-bottleneck.pcap",
                                                          "capture-sender.pcap"]
    owned = json.loads(next(out.glob(".tcpeval*")).read_text())["files"]
    assert "capture-sender.pcap" in owned
    assert "capture" not in json.loads((out / "engine.json").read_text())


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (Debian package {name}; `make test` installs "
                    "it where root and apt allow)")
    return path


def _tshark(path: Path, *args: str) -> str:
    res = subprocess.run([_tool("tshark"), "-r", str(path), *args], capture_output=True,
                         text=True, timeout=120)
    # Run as root, tshark warns that it is (not about the file).
    errors = [ln for ln in res.stderr.splitlines() if ln.strip()
              and not ln.startswith('Running as user "root"')]
    assert res.returncode == 0 and not errors, res.stderr
    return res.stdout


PI_ERROR = 0x00800000  # tshark's expert severity of malformed packets (epan/proto.h)


@pytest.mark.parametrize("point", ["sender", "bottleneck"])
def test_tshark_reads_the_flows_and_counts_the_retransmissions(captured, point):
    out, summary = captured
    text = _tshark(out / f"capture-{point}.pcap", "-T", "fields", "-e", "tcp.stream",
                   "-e", "_ws.expert.severity", "-e", "_ws.expert.message")
    rows = [line.split("\t") for line in text.splitlines()]
    severities = [int(v) for r in rows for v in r[1].split(",") if v]
    assert severities and max(severities) < PI_ERROR, "tshark found malformed packets"
    assert sorted({r[0] for r in rows}) == ["0", "1"], "two flows, two TCP conversations"
    # tshark names a segment below the highest sequence number seen a
    # (fast, spurious) retransmission, or out-of-order when it follows that one
    # within 3 ms (its threshold without a handshake RTT; packet-tcp.c).
    # Nothing reorders on the way to these points (FIFO links): both are
    # retransmissions here.
    retx = [int(r[0]) for r in rows if re.search(r"retransmission|out-of-order", r[2])]
    for flow in summary["flows"]:
        assert flow["retransmits_total"] > 0, "the buffer drops: the test checks something"
        assert retx.count(flow["id"]) == flow["retransmits_total"], (point, flow["id"])


def _tcptrace(path: Path) -> list[dict]:
    res = subprocess.run([_tool("tcptrace"), "-l", "-r", "-n", str(path)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    conns = re.split(r"^TCP connection \d+:$", res.stdout, flags=re.M)[1:]
    out = []
    for text in conns:
        def both(label: str, text=text) -> list[float]:
            m = re.search(rf"^\s*{label}:\s+([\d.]+)[^\n]*?{label}:\s+([\d.]+)", text, re.M)
            assert m, f"no '{label}' in tcptrace's output"
            return [float(m.group(1)), float(m.group(2))]
        out.append({"rtt_samples": both("RTT samples")[0], "rtt_avg_ms": both("RTT avg")[0],
                    "rexmt_pkts": both("rexmt data pkts")[0],
                    "unique_bytes": both("unique bytes sent")[0],
                    "throughput_Bps": both("throughput")[0]})
    return out


def test_tcptrace_reports_the_rtts_and_throughput_of_the_run(captured):
    out, summary = captured
    conns = _tcptrace(out / "capture-sender.pcap")
    assert len(conns) == 2
    for conn, flow in zip(conns, summary["flows"], strict=True):
        assert conn["rtt_samples"] > 100
        assert conn["rexmt_pkts"] == flow["retransmits_total"]
        # tcptrace's mean of RTT samples (one per ACK of a segment sent once)
        # against the mean of the sender's smoothed RTT over the run, sampled
        # in time: the same RTTs, averaged differently (4.5% and 3.6% apart).
        assert conn["rtt_avg_ms"] == pytest.approx(flow["mean_srtt_ms"], rel=0.06), flow["id"]
        delivered = flow["bytes_delivered"]
        assert delivered <= conn["unique_bytes"] <= delivered + 64 * 1448
        tput_mbps = conn["throughput_Bps"] * 8 / 1e6
        assert tput_mbps == pytest.approx(flow["throughput_mbps"], rel=0.05), flow["id"]
