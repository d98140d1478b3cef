"""Kernel counters a testbed run reads: the bottleneck qdiscs (tc -s), the
iptables rule counters, drops on every device, and the softnet backlog drops."""

from __future__ import annotations

import contextlib
import json
import select
import subprocess
from pathlib import Path

from .shell import TestbedError, sh

QDISC_KEYS = ("bytes", "packets", "drops", "backlog", "qlen")
READ_TIMEOUT_S = 2.0


class QdiscReader:
    """Reads qdisc counters through one `tc -batch` process per namespace: a
    read costs about 50 us instead of a 4 ms fork (measured on the 2-core VM),
    so the bottleneck can be sampled every few milliseconds."""

    def __init__(self, ns: str):
        self.ns = ns
        self.proc = subprocess.Popen(["tc", "-n", ns, "-s", "-j", "-batch", "-"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def root(self, dev: str) -> dict:
        """The root qdisc's counters on dev (tbf: its drops include its child's)."""
        self.proc.stdin.write(f"qdisc show dev {dev}\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], READ_TIMEOUT_S)
        line = self.proc.stdout.readline() if ready else ""
        if not line.startswith("["):
            raise TestbedError(f"tc -batch in {self.ns} gave no counters for {dev}: {line!r}")
        return _root_counters(json.loads(line))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(2.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> QdiscReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _root_counters(qdiscs: list[dict]) -> dict:
    for q in qdiscs:
        if q.get("root"):
            return {k: int(q.get(k, 0)) for k in QDISC_KEYS}
    return dict.fromkeys(QDISC_KEYS, 0)


def rule_packets(ns: str, chain: str = "FORWARD") -> list[int]:
    """Packet counters of the chain's rules in order (iptables-save -c lines
    look like `[packets:bytes] -A CHAIN ...`)."""
    out = []
    for line in sh(ns, ["iptables-save", "-c", "-t", "filter"]).splitlines():
        if line.startswith("[") and f"-A {chain} " in line:
            out.append(int(line[1:line.index(":")]))
    return out


def device_drops(namespaces: list[str]) -> dict[str, int]:
    """rx + tx drops per device (ns/dev) on every non-loopback device."""
    out = {}
    for ns in namespaces:
        for link in json.loads(sh(None, ["ip", "-n", ns, "-s", "-j", "link", "show"])):
            if link["ifname"] == "lo":
                continue
            st = link.get("stats64", {})
            out[f"{ns}/{link['ifname']}"] = (st.get("rx", {}).get("dropped", 0)
                                             + st.get("tx", {}).get("dropped", 0))
    return out


def softnet_drops() -> int:
    """Packets dropped because a CPU's input backlog was full (machine-wide:
    /proc/net/softnet_stat, second column, hex, one line per CPU)."""
    try:
        lines = Path("/proc/net/softnet_stat").read_text().splitlines()
    except OSError:
        return 0
    return sum(int(line.split()[1], 16) for line in lines if line.strip())
