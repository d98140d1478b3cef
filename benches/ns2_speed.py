"""tcpeval against ns-2.35 TCP-Linux, end to end, side by side (issue 29 goal 1).

Each scenario is run as `tcpeval run SCENARIO --out DIR` (start-up, engine and
output files) and as `ns SCRIPT` on the script tcpeval.ns2 translates it into
(the same dumbbell, flows and seed); wall times and CPU times (user + system of
the child process, which other load on the machine inflates less) are medians
of N alternated rounds. Prints both, the ratios ns-2 / tcpeval, and each
side's aggregate throughput as a check that both simulated the same thing.

    .venv/bin/python benches/ns2_speed.py [--rounds N]

Skips (exit 0, with the reason) when `ns` is not installed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tcpeval.ns2 import ns_binary, script_for
from tcpeval.ns2.runner import parse_output, run_script, summarize

TCPEVAL = Path(sys.executable).parent / "tcpeval"
# The two scenarios (issue 29, "Why" and goal 1).
SCENARIOS = {
    "2 CUBIC, 1 Gbit/s, 50 ms, 20% BDP, 30 s": {
        "network": {"bottleneck": "1Gbps", "rtt": "50ms", "buffer": "20%bdp"},
        "flows": [{"cc": "cubic", "count": 2}], "run": {"duration": "30s"}},
    "1 CUBIC, 10 Gbit/s, 12 ms, 1 BDP, p = 1e-6, 10 s": {
        "network": {"bottleneck": "10Gbps", "rtt": "12ms", "buffer": "1bdp", "loss": 1e-6},
        "flows": [{"cc": "cubic"}], "run": {"duration": "10s"}},
}


def _toml(data: dict) -> str:
    lines = []
    for table in ("network", "run"):
        lines.append(f"[{table}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in data[table].items()]
    for f in data["flows"]:
        lines.append("[[flows]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in f.items()]
    return "\n".join(lines) + "\n"


def _child_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def time_tcpeval(data: dict, tmp: Path) -> tuple[float, float, float]:
    """Wall and CPU time of `tcpeval run` and the aggregate throughput it reports."""
    path = tmp / "scenario.toml"
    path.write_text(_toml(data))
    out = Path(tempfile.mkdtemp(dir=tmp))
    t0, c0 = time.perf_counter(), _child_cpu()
    subprocess.run([str(TCPEVAL), "run", str(path), "--out", str(out), "--force"],
                   check=True, capture_output=True)
    wall, cpu = time.perf_counter() - t0, _child_cpu() - c0
    summary = json.loads((out / "summary.json").read_text())
    return wall, cpu, sum(f["throughput_mbps"] for f in summary["flows"])


def time_ns2(data: dict) -> tuple[float, float, float]:
    """Wall and CPU time of the `ns` process on the translated script and its
    aggregate throughput."""
    script, resolved = script_for(data)
    c0 = _child_cpu()
    text, wall = run_script(script)
    cpu = _child_cpu() - c0
    summary = summarize(parse_output(text, script), script,
                        resolved["meta"]["logical_flows"], resolved["seed"], wall)
    return wall, cpu, summary["aggregate_mbps"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if ns_binary() is None:
        print("ns2_speed: skipped: ns-2 is not installed (Debian package ns2; "
              "`make ns2-deps` as root)")
        return 0
    print(f"{'scenario':<48} {'wall s: tcpeval':>15} {'ns-2':>6} {'ratio':>6} "
          f"{'CPU s: tcpeval':>14} {'ns-2':>6} {'ratio':>6} {'Mbit/s: tcpeval':>15} "
          f"{'ns-2':>6}")
    with tempfile.TemporaryDirectory(prefix="ns2-speed-") as t:
        tmp = Path(t)
        for name, data in SCENARIOS.items():
            tc, ns = [], []
            for _ in range(max(1, args.rounds)):       # alternated: load hits both
                tc.append(time_tcpeval(data, tmp))
                ns.append(time_ns2(data))
            wa, wb = (statistics.median(r[0] for r in rs) for rs in (tc, ns))
            ca, cb = (statistics.median(r[1] for r in rs) for rs in (tc, ns))
            print(f"{name:<48} {wa:15.2f} {wb:6.2f} {wb / wa:5.1f}x {ca:14.2f} {cb:6.2f} "
                  f"{cb / ca:5.1f}x {tc[0][2]:15.1f} {ns[0][2]:6.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
