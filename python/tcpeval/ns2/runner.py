"""Run an ns-2 script and read its output into tcpeval's summary names."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from .. import metrics
from .translate import KERNEL_VERSION, RESULTS_FILE, Ns2Script


class Ns2Unavailable(RuntimeError):
    """ns-2 is not installed, or it failed."""


def ns_binary() -> str | None:
    """The `ns` executable (Debian package ns2), or None."""
    return shutil.which("ns")


def run_script(script: Ns2Script, timeout_s: float | None = None) -> tuple[str, float]:
    """Run the script with `ns`; its results file and the wall time."""
    exe = ns_binary()
    if exe is None:
        raise Ns2Unavailable("ns-2 is not installed (Debian package ns2: `make ns2-deps`)")
    with tempfile.TemporaryDirectory(prefix="tcpeval-ns2-") as tmp:
        path = Path(tmp) / "run.tcl"
        path.write_text(script.tcl)
        t0 = time.perf_counter()
        done = subprocess.run([exe, str(path)], capture_output=True, text=True, cwd=tmp,
                              timeout=timeout_s)
        wall = time.perf_counter() - t0
        results = Path(tmp) / RESULTS_FILE
        text = results.read_text() if results.exists() else ""
    if done.returncode != 0 or "\nend-q " not in "\n" + text:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise Ns2Unavailable(f"ns exited with code {done.returncode}: " + " | ".join(tail))
    return text, wall


def parse_output(text: str, script: Ns2Script) -> dict:
    """Per engine flow counters at the window's start and end, the bottleneck
    queue monitor at both, and the cwnd samples."""
    marks: dict[str, dict[int, list[int]]] = {"from": {}, "end": {}}
    queue: dict[str, list[float]] = {}
    cwnd: list[list[float]] = []
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        tag = parts[0]
        if tag in marks and len(parts) == 5:
            marks[tag][int(parts[1])] = [int(float(x)) for x in parts[2:]]
        elif tag in ("from-q", "end-q"):
            queue[tag[:-2]] = [float(x) for x in parts[1:]]
        elif tag == "cwnd":
            cwnd.append([float(x) for x in parts[1:]])
    n = len(script.flows)
    if script.measure_from_s == 0:
        marks["from"] = {i: [0, 0, 0] for i in range(n)}
        queue.setdefault("from", [0.0, 0.0, 0.0])
    return {"marks": marks, "queue": queue, "cwnd": cwnd}


def cwnd_trace(raw: dict, script: Ns2Script) -> dict:
    """The cwnd samples by stream: {"t_s": [...], "cwnd_pkts": {label: [...]}}
    (a stream's label gets "/k" when its flow has several)."""
    labels = [f["label"] for f in script.flows]
    names = [lab if labels.count(lab) == 1 else f"{lab}/{labels[:i].count(lab)}"
             for i, lab in enumerate(labels)]
    return {"t_s": [row[0] for row in raw["cwnd"]],
            "cwnd_pkts": {n: [row[1 + i] for row in raw["cwnd"]] for i, n in enumerate(names)}}


def _stream_stats(i: int, f: dict, raw: dict, window: float) -> dict:
    start, end = raw["marks"]["from"][i], raw["marks"]["end"][i]
    # ack_ is the highest cumulative ACK in packets of packetSize_ (mss) bytes.
    delivered = max(0, end[0] - max(start[0], 0)) * f["mss"]
    in_window = [row[1 + i] for row in raw["cwnd"] if row[0] >= raw["from_s"] - 1e-9]
    return {"bytes": delivered, "throughput_mbps": delivered * 8 / window / 1e6,
            "retransmits": end[1] - start[1], "retransmits_total": end[1],
            "timeouts": end[2] - start[2], "timeouts_total": end[2],
            "mean_cwnd_pkts": sum(in_window) / len(in_window) if in_window else None}


def summarize(raw: dict, script: Ns2Script, logical: list[dict], seed: int,
              wall_s: float) -> dict:
    """A summary with the names tcpeval's summary.json uses for what both have."""
    window = script.duration_s - script.measure_from_s
    raw = {**raw, "from_s": script.measure_from_s}
    streams = [_stream_stats(i, f, raw, window) for i, f in enumerate(script.flows)]
    flows = []
    for lf in logical:
        parts = [streams[s] for s in lf["streams"]]
        cw = [p["mean_cwnd_pkts"] for p in parts if p["mean_cwnd_pkts"] is not None]
        flows.append({
            "id": lf["id"], "label": lf["label"], "cc": lf["cc"],
            "module": script.flows[lf["streams"][0]]["module"], "streams": len(parts),
            "throughput_mbps": sum(p["throughput_mbps"] for p in parts),
            "bytes_delivered": sum(p["bytes"] for p in parts),
            **{k: sum(p[k] for p in parts) for k in
               ("retransmits", "retransmits_total", "timeouts", "timeouts_total")},
            "mean_cwnd_pkts": sum(cw) if cw else None,
        })
    q0, q1 = raw["queue"]["from"], raw["queue"]["end"]
    return {
        "backend": "ns2", "kernel": KERNEL_VERSION, "seed": seed,
        "window_s": [script.measure_from_s, script.duration_s],
        "flows": flows,
        "aggregate_mbps": sum(f["throughput_mbps"] for f in flows),
        "bottleneck": {
            "capacity_mbps": script.capacity_bps / 1e6,
            "utilization": (q1[2] - q0[2]) * 8 / (script.capacity_bps * window),
            "drops": int(q1[1] - q0[1]), "drops_total": int(q1[1]),
        },
        "jain_index": (metrics.jain_index([f["throughput_mbps"] for f in flows])
                       if flows else None),
        "sim": {"wall_s": wall_s, "simulator": f"ns-2.35 TCP-Linux ({KERNEL_VERSION})"},
    }
