"""The real-kernel testbed (issue 9): the same scenarios on Linux's own TCP in
network namespaces. This first part tells what the kernel offers and which
scenarios it cannot run; running scenarios is not implemented yet, and says so.

Facts about this machine kind come from shared/reference/linux-testbed.md (a
probe of 2026-11-22): no netem, fq or red qdiscs; tbf/htb with pfifo/bfifo;
reno, cubic and bbr; NFQUEUE and TUN delay lines keep their timing up to about
200 Mbit/s of aggregate traffic on 2 vCPUs, and without emulated delay about
1 Gbit/s (953 Mbit/s measured).
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import uuid
from pathlib import Path

PROBE_QDISCS = ("tbf", "htb", "pfifo", "bfifo", "netem", "fq", "fq_codel", "red", "codel")
# Measured envelope (reference/linux-testbed.md section 2a): aggregate rate the
# user-space delay line keeps on time on 2 vCPUs, and the rate without delay.
DELAY_LINE_MAX_BPS = 200e6
NO_DELAY_MAX_BPS = 1e9


class TestbedUnavailable(RuntimeError):
    """The testbed cannot run this scenario (the message says why)."""


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def kernel_config() -> dict[str, str]:
    """CONFIG_* options from /proc/config.gz, when the kernel exposes it."""
    try:
        text = gzip.decompress(Path("/proc/config.gz").read_bytes()).decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        if line.startswith("CONFIG_") and "=" in line:
            k, _, v = line.partition("=")
            out[k] = v
    return out


def _run(*cmd: str) -> bool:
    return subprocess.run(cmd, capture_output=True, timeout=20).returncode == 0


def probe_qdiscs() -> dict[str, bool] | None:
    """Try each qdisc on a veth in a scratch namespace (needs root and iproute2);
    None when probing is impossible here. Cleans up whatever it created."""
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tc"):
        return None
    ns = f"tcpe-probe-{uuid.uuid4().hex[:8]}"
    try:
        if not _run("ip", "netns", "add", ns):
            return None
        _run("ip", "-n", ns, "link", "add", "pa", "type", "veth", "peer", "name", "pb")
        found = {}
        for kind in PROBE_QDISCS:
            found[kind] = _run("ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", "pa",
                               "root", kind, *_qdisc_args(kind))
        return found
    finally:
        _run("ip", "netns", "del", ns)


def _qdisc_args(kind: str) -> tuple[str, ...]:
    return {
        "tbf": ("rate", "100mbit", "burst", "32kb", "latency", "50ms"),
        "htb": (),
        "pfifo": ("limit", "100"),
        "bfifo": ("limit", "150000"),
        "netem": ("delay", "10ms"),
        "red": ("limit", "400000", "min", "30000", "max", "90000", "avpkt", "1500",
                "burst", "30", "bandwidth", "100mbit"),
    }.get(kind, ())


def check() -> dict:
    """What this kernel offers for the testbed, and the envelope it supports."""
    cfg = kernel_config()
    ccs = _read("/proc/sys/net/ipv4/tcp_available_congestion_control").split()
    qdiscs = probe_qdiscs()
    nfqueue = cfg.get("CONFIG_NETFILTER_NETLINK_QUEUE") in ("y", "m") if cfg else None
    return {
        "kernel": os.uname().release,
        "root": os.geteuid() == 0,
        "cpus": os.cpu_count(),
        "congestion_controls": ccs,
        "qdiscs": qdiscs,
        "netem": None if qdiscs is None else qdiscs.get("netem", False),
        "nfqueue": nfqueue,
        "tun": Path("/dev/net/tun").exists(),
        "bpf_struct_ops": bool(cfg.get("CONFIG_BPF_JIT") == "y"
                               and Path("/sys/kernel/btf/vmlinux").exists()) if cfg else None,
        "envelope": {
            "max_rate_with_delay_bps": DELAY_LINE_MAX_BPS,
            "max_rate_without_delay_bps": NO_DELAY_MAX_BPS,
            "delay": "netem" if qdiscs and qdiscs.get("netem") else
                     "user-space delay line (NFQUEUE or TUN)",
        },
        "runs_scenarios": False,
    }


def refuse_reason(config: dict, caps: dict | None = None) -> str | None:
    """Why this kernel cannot run an engine config, or None. Checked before
    anything starts."""
    caps = caps or check()
    ccs = set(caps["congestion_controls"])
    for i, f in enumerate(config["flows"]):
        cc = "reno" if f["cc"] == "newreno" else f["cc"]
        if cc not in ccs:
            return (f"flows[{i}].cc: the kernel offers {', '.join(sorted(ccs)) or 'none'}, "
                    f"not {f['cc']!r}; run it with --backend sim")
    net = config["network"]
    qd = caps.get("qdiscs") or {}
    if net.get("queue", "droptail") == "red" and not qd.get("red"):
        return "network.queue: the kernel has no red qdisc; use droptail or --backend sim"
    if config.get("udp"):
        return "udp: UDP cross traffic is not available on the testbed yet"
    rate = net["bottleneck_rate_bps"]
    flows = len(config["flows"])
    if rate > caps["envelope"]["max_rate_with_delay_bps"] and not caps.get("netem"):
        return (f"network.bottleneck_rate_bps: {rate / 1e6:g} Mbit/s with emulated delay is "
                f"beyond this machine's delay line ({DELAY_LINE_MAX_BPS / 1e6:g} Mbit/s "
                f"aggregate for {flows} flow(s)); use a lower rate or --backend sim")
    if not caps["root"]:
        return "the testbed needs root (network namespaces and tc)"
    return None


PREFIX = "tcpe-"


def namespaces() -> list[str]:
    """Network namespace names on this machine."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def cleanup(prefix: str = PREFIX) -> list[str]:
    """Remove leftovers of tcpeval runs (after a SIGKILL): every network namespace
    whose name starts with the testbed's prefix, and nothing else. Returns the
    names removed."""
    if not prefix.startswith(PREFIX):
        raise ValueError(f"refusing to clean namespaces outside the {PREFIX!r} prefix")
    removed = []
    for ns in namespaces():
        if ns.startswith(prefix) and _run("ip", "netns", "del", ns):
            removed.append(ns)
    return removed


def run_engine_config(config: dict) -> dict:
    """Run an engine config on the kernel. Not implemented yet: refuses with the
    reason, or says that running is not available."""
    reason = refuse_reason(config)
    if reason:
        raise TestbedUnavailable(reason)
    raise TestbedUnavailable("running scenarios on the testbed is not implemented yet "
                             "(`tcpeval testbed check` works); use --backend sim")
