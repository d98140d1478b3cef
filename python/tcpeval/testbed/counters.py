"""Kernel counters a testbed run reads: the bottleneck qdiscs (tc -s), the
iptables rule counters, drops on every device, and the softnet backlog drops."""

from __future__ import annotations

import json
from pathlib import Path

from .shell import sh

QDISC_KEYS = ("bytes", "packets", "drops", "backlog", "qlen")


def qdisc(ns: str, dev: str) -> dict:
    """The root qdisc's counters on dev (tbf: its drops include its child's)."""
    for q in json.loads(sh(None, ["tc", "-n", ns, "-s", "-j", "qdisc", "show", "dev", dev])):
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
