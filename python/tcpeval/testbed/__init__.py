"""The real-kernel testbed (issue 9): the same scenarios on Linux's own TCP in
network namespaces.

- check(): what the kernel offers and the envelope it supports;
- refuse_reason(): why a scenario cannot run here (before anything starts);
- run_engine_config(): build the namespace dumbbell (topology.py), run the
  project's sender and sink (endpoint.py), measure (runner.py, counters.py),
  return the engine's result shape (results.py) with a validity verdict
  (gates.py); everything is torn down afterwards;
- cleanup(): leftovers of a SIGKILLed run (namespaces, BPF algorithms);
- kernel_cc: the kernel's own congestion controls and the project's BPF ones,
  loaded for a run and unloaded after it.

Facts about this machine kind come from shared/reference/linux-testbed.md (a
probe of 2026-11-22): no netem, fq or red qdiscs; tbf/htb with pfifo/bfifo;
reno, cubic and bbr; NFQUEUE and TUN delay lines keep their timing up to about
200 Mbit/s of aggregate traffic on 2 vCPUs, and without emulated delay about
1 Gbit/s (953 Mbit/s measured).
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import shutil
import signal
import subprocess
import uuid
from pathlib import Path

from .shell import TestbedError

__all__ = ["TestbedError", "TestbedUnavailable", "check", "cleanup", "refuse_reason",
           "run_engine_config"]

PROBE_QDISCS = ("tbf", "htb", "pfifo", "bfifo", "netem", "fq", "fq_codel", "red", "codel", "pie")
# The AQM queues with a Linux qdisc of the same name, and the kernel option
# that builds it (net/sched/Kconfig); a refusal names what this kernel lacks.
AQM_QDISCS = {"red": "CONFIG_NET_SCH_RED", "codel": "CONFIG_NET_SCH_CODEL",
              "fq_codel": "CONFIG_NET_SCH_FQ_CODEL", "pie": "CONFIG_NET_SCH_PIE"}
# Measured envelope (reference/linux-testbed.md section 2a): aggregate rate the
# user-space delay line keeps on time on 2 vCPUs, and the rate without delay.
DELAY_LINE_MAX_BPS = 200e6
NO_DELAY_MAX_BPS = 1e9
# One sender and one receiver namespace, and two Python processes, per flow;
# beyond this many flows the 2-vCPU machine is the bottleneck, not the link.
MAX_FLOWS = 8
DELAYLINE_ENV = "TCPEVAL_DELAYLINE"
DELAY_MODE_ENV = "TCPEVAL_DELAY_MODE"
PREFIX = "tcpe-"  # every namespace the testbed makes starts with it


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
    ns = f"{PREFIX}{os.getpid()}-probe-{uuid.uuid4().hex[:8]}"  # cleanup sees it is live
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
        "algorithms": _algorithm_offers(),
        "qdiscs": qdiscs,
        # "y", "m" or "not set" per AQM qdisc option; None without /proc/config.gz.
        "qdisc_options": {opt: cfg.get(opt, "not set") for opt in AQM_QDISCS.values()}
                         if cfg else None,
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
        "delay_line": delay_line_path(),
        "tools": {t: bool(shutil.which(t)) for t in TOOLS},
        "runs_scenarios": True,
    }


TOOLS = ("ip", "tc", "ethtool", "iptables", "iptables-save")


def _algorithm_offers() -> dict[str, dict]:
    """Each simulator algorithm: built into the kernel, loadable as BPF, or
    unavailable and why (kernel_cc.offers)."""
    from ..cc_names import available_algorithms
    from .kernel_cc import offers

    return offers(list(available_algorithms()))


def delay_line_path() -> str | None:
    """The delay-line binary: $TCPEVAL_DELAYLINE, else the repository's release
    build (`make setup`), else PATH."""
    env = os.environ.get(DELAYLINE_ENV)
    if env:
        return env if os.access(env, os.X_OK) else None
    built = Path(__file__).resolve().parents[3] / "target" / "release" / "tcpeval-delayline"
    if os.access(built, os.X_OK):
        return str(built)
    return shutil.which("tcpeval-delayline")


def needs_delay(config: dict) -> bool:
    return any(f["rtt_ns"] > 0 for f in config["flows"])


def delay_mode(config: dict, caps: dict) -> str:
    """How propagation delay is emulated: none, netem, nfqueue or tun
    ($TCPEVAL_DELAY_MODE picks nfqueue or tun, e.g. to test the fallback)."""
    if not needs_delay(config):
        return "none"
    forced = os.environ.get(DELAY_MODE_ENV)
    if forced in ("nfqueue", "tun") and caps.get(forced):
        return forced
    if caps.get("netem"):
        return "netem"
    return "nfqueue" if caps.get("nfqueue") else "tun"


def refuse_reason(config: dict, caps: dict | None = None) -> str | None:
    """Why this kernel cannot run an engine config, or None. Checked before
    anything starts; each reason names the field and what would work."""
    caps = caps or check()
    for check_one in (_refuse_flows, _refuse_network, _refuse_envelope, _refuse_machine):
        reason = check_one(config, caps)
        if reason:
            return reason
    return None


def _refuse_flows(config: dict, caps: dict) -> str | None:
    from .kernel_cc import kernel_name

    ccs = set(caps["congestion_controls"])
    offers = caps.get("algorithms", {})
    flows = config["flows"]
    if config.get("web"):  # web transfers are drawn by the engine (config.web)
        return ("background: web and long-lived background traffic is not available on "
                "the testbed; remove [background] or use --backend sim")
    for i, f in enumerate(flows):
        if kernel_name(f["cc"]) not in ccs and offers.get(f["cc"], {}).get("how") != "bpf":
            bpf = sorted(k for k, v in offers.items() if v["how"] == "bpf")
            why = offers.get(f["cc"], {}).get("why", "no BPF program is written for it")
            return (f"flows[{i}].cc: the kernel offers {', '.join(sorted(ccs)) or 'none'}"
                    f" and as BPF {', '.join(bpf) or 'none'}, not {f['cc']!r} ({why}); "
                    "run it with --backend sim")
        if f.get("group") in ("web", "background"):
            return ("background: web and long-lived background traffic is not available on "
                    "the testbed; remove [background] or use --backend sim")
        problem = _flow_problem(f)
        if problem:
            return f"flows[{i}].{problem}"
    if len(flows) > MAX_FLOWS:
        return (f"flows: {len(flows)} flows (counting streams); the testbed runs at most "
                f"{MAX_FLOWS} on this machine; use fewer flows or --backend sim")
    return None


def _flow_problem(f: dict) -> str | None:
    if f.get("direction", "forward") != "forward":
        return "direction: only forward flows run on the testbed; use --backend sim"
    if f.get("path"):
        return "path: the testbed is a dumbbell; use --backend sim for a parking lot"
    if f.get("params"):
        return ("params: the kernel's algorithm parameters are machine-wide module "
                "parameters; remove params or use --backend sim")
    if not f.get("delayed_ack", True):
        return "delayed_ack: Linux always delays ACKs; use delayed_ack = true or --backend sim"
    if f.get("delack_timeout_ns", 40_000_000) != 40_000_000:
        return ("delack_timeout: Linux's delayed-ACK timer is its own (40 ms minimum); "
                "use the default or --backend sim")
    for key in ("send_overhead", "send_jitter"):
        if f.get(f"{key}_ns"):
            return (f"{key}: the kernel's own timing is the testbed's noise; "
                    f"remove {key} or use --backend sim")
    if f.get("nic_queue_pkts"):
        return "txqueuelen: not emulated on the testbed; remove it or use --backend sim"
    if f.get("quickacks") is not None:
        return ("quickacks: Linux's receiver keeps its own quick-ACK mode; remove quickacks "
                "or use --backend sim")
    if f.get("ecn"):
        return "ecn: the testbed does not set up ECN negotiation; remove ecn or use --backend sim"
    if f.get("stack", "linux-6.6") != "linux-6.6":
        return (f"stack: the testbed runs this machine's kernel, not {f['stack']}; "
                "remove stack or use --backend sim")
    if f.get("mtu", 1500) > 9000:
        return "mtu: the testbed's veths carry at most 9000 bytes; use a smaller mtu"
    return None


def _refuse_network(config: dict, caps: dict) -> str | None:
    hops = config["network"]["hops"]
    if len(hops) > 1:
        return "network.hops: the testbed is a dumbbell; use --backend sim for a parking lot"
    queue = hops[0].get("queue", "droptail")
    if queue != "droptail":
        return _refuse_queue(queue, caps)
    if config.get("udp"):
        return "udp: UDP cross traffic is not available on the testbed yet"
    return None


def _refuse_queue(queue: str, caps: dict) -> str:
    """Only droptail (tbf's FIFO) runs on the testbed; for an AQM queue, say
    whether this kernel has its qdisc and, if not, which option it lacks."""
    if queue not in AQM_QDISCS:
        return (f"network.queue: {queue!r} has no Linux qdisc of its own; "
                "use droptail or --backend sim")
    option = AQM_QDISCS[queue]
    if (caps.get("qdiscs") or {}).get(queue) is False:
        return (f"network.queue: this kernel has no {queue} qdisc "
                f"({_option_state(option, caps.get('qdisc_options'))}); "
                "use droptail or --backend sim")
    return (f"network.queue: {queue} is not implemented on the testbed (only droptail); "
            "use droptail or --backend sim")


def _option_state(option: str, options: dict | None) -> str:
    value = (options or {}).get(option)
    if value is None:
        return f"{option} unknown: no /proc/config.gz"
    if value == "m":
        return f"{option}=m, but the module does not load"
    if value == "y":
        return f"{option}=y, yet tc refuses it"
    return f"{option} is not set"


def _refuse_envelope(config: dict, caps: dict) -> str | None:
    rate = config["network"]["hops"][0]["rate_bps"]
    flows = len(config["flows"])
    delay = needs_delay(config)
    if delay and not caps.get("netem") and rate > caps["envelope"]["max_rate_with_delay_bps"]:
        return (f"network.bottleneck_rate_bps: {rate / 1e6:g} Mbit/s with emulated delay is "
                f"beyond this machine's delay line ({DELAY_LINE_MAX_BPS / 1e6:g} Mbit/s "
                f"aggregate for {flows} flow(s)); use a lower rate or --backend sim")
    limit = caps["envelope"].get("max_rate_without_delay_bps", NO_DELAY_MAX_BPS)
    if rate > limit:
        return (f"network.bottleneck_rate_bps: {rate / 1e6:g} Mbit/s is beyond what this "
                f"machine forwards ({limit / 1e6:g} Mbit/s); use a lower rate or --backend sim")
    if delay and not caps.get("netem"):
        if not (caps.get("nfqueue") or caps.get("tun")):
            return ("flows.rtt: the kernel has neither netem, NFQUEUE nor TUN to emulate "
                    "delay; use --backend sim")
        if not caps.get("delay_line"):
            return ("flows.rtt: emulated delay needs the tcpeval-delayline binary (no netem "
                    f"here); build it with `make setup`, or set {DELAYLINE_ENV}")
    return None


def _refuse_machine(config: dict, caps: dict) -> str | None:
    if not caps["root"]:
        return "the testbed needs root (network namespaces and tc)"
    tools = caps.get("tools", {})
    need = ["ip", "tc", "ethtool"]
    if config["network"]["hops"][0].get("loss", 0) > 0 or delay_mode(config, caps) == "nfqueue":
        need += ["iptables", "iptables-save"]
    missing = [t for t in need if not tools.get(t, True)]
    if missing:
        return (f"missing tools: {', '.join(missing)}; install them "
                "(`make testbed-deps`, or apt-get install ethtool iptables)")
    return None


def install_tools() -> None:
    """ethtool and iptables with apt when root and missing (reference section 5)."""
    missing = [pkg for pkg, tool in (("ethtool", "ethtool"), ("iptables", "iptables"))
               if not shutil.which(tool)]
    if missing and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for cmd in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]):
            subprocess.run(cmd, capture_output=True, env=env, timeout=300,
                           stdin=subprocess.DEVNULL)




def namespaces() -> list[str]:
    """Network namespace names on this machine."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def runs_live() -> bool:
    """Whether any tcpeval run's namespaces exist on this machine."""
    return any(ns.startswith(PREFIX) for ns in namespaces())


def owner_alive(ns: str) -> bool:
    """Whether the process that created a run's namespace (its PID is in the
    name: tcpe-<pid>-<random>-...) is still running."""
    m = re.match(rf"{PREFIX}(\d+)-", ns)
    if not m or int(m.group(1)) == os.getpid():
        return False
    return Path(f"/proc/{m.group(1)}").exists()


def cleanup(prefix: str = PREFIX) -> tuple[list[str], list[str]]:
    """Remove leftovers of tcpeval runs (after a SIGKILL): every network namespace
    whose name starts with the prefix (tcpe- or longer), and, when no run is
    left, the BPF congestion controls runs registered (struct_ops maps tcpe_*).
    Namespaces of a run whose process is still alive are kept. Processes still
    inside a leftover namespace are killed first (they would survive its
    deletion). With no run left, it also puts back the machine's
    netdev_max_backlog a killed run left raised. Returns (removed, kept)."""
    if not prefix.startswith(PREFIX):
        raise ValueError(f"refusing to clean namespaces outside the {PREFIX!r} prefix")
    removed, kept = [], []
    for ns in namespaces():
        if not ns.startswith(prefix):
            continue
        if owner_alive(ns):
            kept.append(ns)
            continue
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        for pid in pids.stdout.split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        if _run("ip", "netns", "del", ns):
            removed.append(ns)
    if not runs_live():
        # No run is live: BPF algorithms still registered were left by a killed
        # one, and so was a raised backlog limit.
        from .kernel_cc import MAP_PREFIX, unregister_all
        from .runner import restore_backlog

        removed += [f"{MAP_PREFIX}{name} (BPF struct_ops)" for name in unregister_all()]
        restore_backlog()
    return removed, kept


def run_engine_config(config: dict) -> dict:
    """Run an engine config on the kernel and return the engine's result shape,
    with "backend": "testbed" and a "validity" verdict. Refuses (TestbedUnavailable)
    before anything starts when the kernel cannot run it."""
    from . import gates, kernel_cc, results
    from .runner import Signals, measure, new_prefix
    from .topology import make_plan

    with Signals():
        install_tools()
        caps = check()
        reason = refuse_reason(config, caps)
        if reason:
            raise TestbedUnavailable(reason)
        plan = make_plan(config, new_prefix(), delay_mode(config, caps), caps.get("delay_line"))
        with kernel_cc.loaded([f["cc"] for f in config["flows"]]):
            m = measure(plan)
    raw = results.engine_result(plan, config, m)
    raw["validity"] = gates.evaluate(plan, raw, m)
    return raw
