"""The namespace dumbbell of a testbed run: its plan (names, addresses, delays,
buffers) from an engine config, and the commands that build it.

One sender namespace s<i> and one receiver namespace d<i> per engine flow, two
routers rl and rr joined by the bottleneck veth bnl--bnr, as in
shared/reference/linux-testbed.md section 6:

    s<i>:eth0 -- rl:ls<i>    rl:bnl == rr:bnr    rr:rd<i> -- d<i>:eth0
    10.1.i.2     10.1.i.1    10.0.0.1  10.0.0.2  10.2.i.1    10.2.i.2

The bottleneck is tbf (rate R) with a pfifo/bfifo child on rl:bnl (data) and on
rr:bnr (ACKs). Propagation delay: netem on rr:rd<i> (data) and rl:ls<i> (ACKs)
when the kernel has it, otherwise the delay line in rl. Random loss: an iptables
statistic rule in rr on packets arriving from the bottleneck (SYNs spared).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .kernel_cc import kernel_name

ETH_HEADER = 14  # tbf charges skb->len, which includes the Ethernet header
SINK_PORT = 5001
# Endpoint socket buffer ceiling (reference section 5: 64 MB), raised further for
# paths whose BDP needs it.
TCP_MEM_MAX = 64 << 20
# The sinks' route `initrwnd` (segments): the first window is then what the
# buffer allows (at most 65535 MSS; tcp_select_initial_window multiplies it by
# the MSS in 32 bits), not Linux's default of ten segments.
SINK_INITRWND = 65535


@dataclass
class FlowPlan:
    index: int
    cc: str
    rtt_s: float
    start_s: float
    stop_s: float | None
    bytes: int | None
    mss: int
    mtu: int
    window: int | None
    initial_cwnd: int
    sender: str
    sink: str

    @property
    def src(self) -> str:
        return f"10.1.{self.index}.2"

    @property
    def dst(self) -> str:
        return f"10.2.{self.index}.2"

    @property
    def data_delay_us(self) -> int:
        return int(round(self.rtt_s * 1e6 / 2))

    @property
    def ack_delay_us(self) -> int:
        return int(round(self.rtt_s * 1e6)) - self.data_delay_us

    @property
    def data_queue(self) -> int:
        return 2 * self.index + 1

    @property
    def ack_queue(self) -> int:
        return 2 * self.index + 2


@dataclass
class Plan:
    prefix: str
    flows: list[FlowPlan]
    rate_bps: float
    buffer: dict            # {"pkts": n} or {"bytes": n}
    reverse_buffer: dict
    loss: float
    delay: str              # "none", "netem", "nfqueue" or "tun"
    duration_s: float
    interval_s: float
    trace_s: float
    sack: bool
    delayline: str | None = None
    namespaces: list[str] = field(default_factory=list)

    @property
    def rl(self) -> str:
        return f"{self.prefix}rl"

    @property
    def rr(self) -> str:
        return f"{self.prefix}rr"

    @property
    def mtu(self) -> int:
        return max(f.mtu for f in self.flows)

    def tcp_mem_max(self) -> int:
        bdp = max(self.rate_bps * f.rtt_s / 8 for f in self.flows)
        return max(TCP_MEM_MAX, int(4 * bdp))

    def sink_buffer(self) -> int:
        """Each sink's fixed receive buffer (SO_RCVBUFFORCE): its window,
        about half of it, is open from the first ACK and never limits the
        sender, like the simulator's unlimited receive window (docs/testbed.md,
        "The receiver's ACK pattern")."""
        return self.tcp_mem_max()


def make_plan(config: dict, prefix: str, delay: str, delayline: str | None) -> Plan:
    net = config["network"]["hops"][0]  # a dumbbell (refused otherwise)
    flows = []
    for i, f in enumerate(config["flows"]):
        flows.append(FlowPlan(
            index=i, cc=kernel_name(f["cc"]),  # the kernel's name: reno for newreno, ...
            rtt_s=f["rtt_ns"] / 1e9, start_s=f["start_ns"] / 1e9,
            stop_s=None if f.get("stop_ns") is None else f["stop_ns"] / 1e9,
            bytes=f.get("bytes"), mss=f["mss"], mtu=f["mtu"],
            window=f.get("max_window_bytes"), initial_cwnd=f["initial_cwnd"],
            sender=f"{prefix}s{i}", sink=f"{prefix}d{i}"))
    plan = Plan(
        prefix=prefix, flows=flows, rate_bps=net["rate_bps"],
        buffer=_limit(net, "buffer"), reverse_buffer=_limit(net, "reverse_buffer"),
        loss=net.get("loss", 0.0), delay=delay, duration_s=config["duration_ns"] / 1e9,
        interval_s=config["interval_ns"] / 1e9, trace_s=config["trace_interval_ns"] / 1e9,
        sack=all(f["sack"] for f in config["flows"]), delayline=delayline)
    plan.namespaces = [plan.rl, plan.rr] + [f.sender for f in flows] + [f.sink for f in flows]
    return plan


def _limit(net: dict, prefix: str) -> dict:
    if net.get(f"{prefix}_pkts") is not None:
        return {"pkts": int(net[f"{prefix}_pkts"])}
    return {"bytes": int(net[f"{prefix}_bytes"])}


def rps_mask() -> str:
    """All CPUs (reference section 1: RPS on every veth rx queue stops reordering)."""
    return format((1 << (os.cpu_count() or 1)) - 1, "x")


# ----- commands (each a list of argv; "ip netns exec NS" added by the caller) ---------


def link_commands(p: Plan) -> list[tuple[str | None, list[str]]]:
    """(namespace or None for the root namespace, argv) in order."""
    cmds: list[tuple[str | None, list[str]]] = [(None, ["ip", "netns", "add", ns])
                                                 for ns in p.namespaces]
    cmds.append((None, ["ip", "link", "add", "bnl", "netns", p.rl, "type", "veth", "peer",
                        "name", "bnr", "netns", p.rr]))
    for f in p.flows:
        cmds.append((None, ["ip", "link", "add", f"ls{f.index}", "netns", p.rl, "type", "veth",
                            "peer", "name", "eth0", "netns", f.sender]))
        cmds.append((None, ["ip", "link", "add", f"rd{f.index}", "netns", p.rr, "type", "veth",
                            "peer", "name", "eth0", "netns", f.sink]))
    cmds += [(p.rl, _addr("bnl", "10.0.0.1/30", p.mtu)), (p.rr, _addr("bnr", "10.0.0.2/30", p.mtu))]
    for f in p.flows:
        i = f.index
        cmds += [
            (p.rl, _addr(f"ls{i}", f"10.1.{i}.1/24", f.mtu)),
            (f.sender, _addr("eth0", f"{f.src}/24", f.mtu)),
            (p.rr, _addr(f"rd{i}", f"10.2.{i}.1/24", f.mtu)),
            (f.sink, _addr("eth0", f"{f.dst}/24", f.mtu)),
            (f.sender, ["ip", "route", "add", "default", "via", f"10.1.{i}.1",
                        "initcwnd", str(f.initial_cwnd)]),
            (f.sink, ["ip", "route", "add", "default", "via", f"10.2.{i}.1",
                      "initrwnd", str(SINK_INITRWND)]),
        ]
    cmds += [(p.rl, ["ip", "route", "add", "10.2.0.0/16", "via", "10.0.0.2"]),
             (p.rr, ["ip", "route", "add", "10.1.0.0/16", "via", "10.0.0.1"])]
    for ns in p.namespaces:
        cmds.append((ns, ["ip", "link", "set", "dev", "lo", "up"]))
    return cmds


def _addr(dev: str, cidr: str, mtu: int) -> list[str]:
    # One shell line: address, MTU, up (fewer forks than three ip calls).
    return ["sh", "-c", f"ip addr add {cidr} dev {dev} && ip link set dev {dev} mtu {mtu} up"]


def sysctl_commands(p: Plan) -> list[tuple[str, list[str]]]:
    mem = p.tcp_mem_max()
    router = ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0",
              "net.ipv4.conf.default.rp_filter=0"]
    # tcp_timestamps=2: timestamps without the random per-connection offset
    # (Documentation/networking/ip-sysctl.rst), so a TSval is the receiver's
    # clock, the one every namespace shares, as the simulator's timestamps are:
    # TCP-LP's one-way delay (bpf/tcpeval_lp.c) needs it.
    host = ["sysctl", "-q", "-w", f"net.ipv4.tcp_rmem=4096 131072 {mem}",
            f"net.ipv4.tcp_wmem=4096 16384 {mem}", "net.ipv4.tcp_no_metrics_save=1",
            f"net.ipv4.tcp_sack={int(p.sack)}", "net.ipv4.tcp_timestamps=2"]
    return [(p.rl, router), (p.rr, router)] + [(ns, host) for f in p.flows
                                                for ns in (f.sender, f.sink)]


def offload_commands(p: Plan) -> list[tuple[str, list[str]]]:
    """Senders: TSO/GSO off so the bottleneck sees MTU-sized packets. Receivers:
    GRO off, so ACKs are clocked per segment as in the simulator."""
    out = []
    for f in p.flows:
        out.append((f.sender, ["ethtool", "-K", "eth0", "tso", "off", "gso", "off"]))
        out.append((f.sink, ["ethtool", "-K", "eth0", "gro", "off"]))
    return out


def rps_commands(p: Plan) -> list[tuple[str, list[str]]]:
    mask = rps_mask()
    script = (f"for f in /sys/class/net/*/queues/rx-*/rps_cpus; do "
              f"case $f in */lo/*) ;; *) echo {mask} > $f;; esac; done")
    return [(ns, ["sh", "-c", script]) for ns in p.namespaces]


def _fifo(limit: dict, mtu: int) -> list[str]:
    if "pkts" in limit:
        return ["pfifo", "limit", str(limit["pkts"])]
    # bfifo counts the Ethernet header too; the scenario's bytes are IP bytes.
    return ["bfifo", "limit", str(int(limit["bytes"] * (mtu + ETH_HEADER) / mtu))]


# The bottleneck's peak rate, as a multiple of its rate. tbf's bucket (burst,
# below) lets a burst after an idle spell through at the veth's speed, where
# the simulator's link serializes every packet: two segments sent back to back
# then come back with the same RTT, and an algorithm that reads a round's
# smallest RTT sees no queue (Vegas, 100 ms, 2 BDP, traced 2026-11-28: its
# round minimum 0.01 ms above base on the kernel at cwnd 2,560 against 0.36 in
# the simulator, so it left slow start a round later and held a 197 ms queue).
# A peak bucket of one packet spaces such bursts; at 1.5 R the run matched
# the simulator round for round and carried the full rate (95.6 Mbit/s); at
# 1.05 R tbf lost 6% of the rate to late timer wake-ups, and at 1.0 R (burst
# of one packet) 10%.
PEAK_FACTOR = 1.5


def bottleneck_commands(p: Plan) -> list[tuple[str, list[str]]]:
    """tbf rate R, burst max(2 MTU, R * 1 ms) (reference section 6) and peak
    rate PEAK_FACTOR x R over one frame, with the scenario's FIFO as its child;
    the same on the ACK direction."""
    rate = int(p.rate_bps)
    frame = p.mtu + ETH_HEADER
    burst = max(2 * frame, int(p.rate_bps * 1e-3 / 8))
    out = []
    for ns, dev, limit in ((p.rl, "bnl", p.buffer), (p.rr, "bnr", p.reverse_buffer)):
        out.append((ns, ["tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "tbf",
                         "rate", f"{rate}bit", "burst", str(burst), "latency", "1s",
                         "peakrate", f"{int(rate * PEAK_FACTOR)}bit", "mtu", str(frame)]))
        out.append((ns, ["tc", "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:",
                         *_fifo(limit, p.mtu)]))
    return out


def loss_commands(p: Plan) -> list[tuple[str, list[str]]]:
    """Random loss after the bottleneck, where packets are MTU-sized; SYNs are
    spared (a lost SYN costs a 1 s RTO). The first rule only counts arrivals."""
    if p.loss <= 0:
        return []
    match = ["-i", "bnr", "-p", "tcp", "!", "--syn"]
    return [(p.rr, ["iptables", "-A", "FORWARD", *match]),
            (p.rr, ["iptables", "-A", "FORWARD", *match, "-m", "statistic", "--mode", "random",
                    "--probability", f"{p.loss:.9f}", "-j", "DROP"])]


def netem_commands(p: Plan) -> list[tuple[str, list[str]]]:
    """Delay on devices other than the shaping one: data on rr:rd<i>, ACKs on
    rl:ls<i>; a large limit (netem's default 1000 packets drops at large BDPs)."""
    out = []
    for f in p.flows:
        for ns, dev, us in ((p.rr, f"rd{f.index}", f.data_delay_us),
                            (p.rl, f"ls{f.index}", f.ack_delay_us)):
            out.append((ns, ["tc", "qdisc", "add", "dev", dev, "root", "netem", "delay",
                             f"{us}us", "limit", "1000000"]))
    return out


def nfqueue_args(p: Plan) -> list[str]:
    args = ["nfqueue"]
    for f in p.flows:
        args += ["--queue", f"{f.data_queue}:{f.data_delay_us}",
                 "--queue", f"{f.ack_queue}:{f.ack_delay_us}"]
    return args + ["--fifo-priority", "50"]


def nfqueue_rules(p: Plan) -> list[tuple[str, list[str]]]:
    """Per flow and direction, in rl's FORWARD chain (reference section 2a)."""
    out = []
    for f in p.flows:
        out.append((p.rl, ["iptables", "-A", "FORWARD", "-i", f"ls{f.index}", "-j", "NFQUEUE",
                           "--queue-num", str(f.data_queue)]))
        out.append((p.rl, ["iptables", "-A", "FORWARD", "-i", "bnl", "-d", f"10.1.{f.index}.0/24",
                           "-j", "NFQUEUE", "--queue-num", str(f.ack_queue)]))
    return out


TUN_DEV = "tdl"


def tun_routes(f: FlowPlan) -> tuple[str, str]:
    """The TUN relay's routes of a flow: its data (to the sink), its ACKs."""
    return f"10.2.{f.index}.0/24", f"10.1.{f.index}.0/24"


def tun_args(p: Plan) -> list[str]:
    args = ["tun", "--dev", TUN_DEV]
    for f in p.flows:
        data, acks = tun_routes(f)
        args += ["--route", f"{data}:{f.data_delay_us}", "--route", f"{acks}:{f.ack_delay_us}"]
    return args + ["--fifo-priority", "50"]


def tun_routing(p: Plan) -> list[tuple[str, list[str]]]:
    """Everything forwarded by rl goes through the TUN relay first (table 100),
    and comes back out of it to the main table (reference section 2a)."""
    rps = f"/sys/class/net/{TUN_DEV}/queues/rx-0/rps_cpus"
    # IPv6 off on the device: its packets would match no route (docs/testbed.md).
    out = [(p.rl, ["sh", "-c", f"sysctl -q -w net.ipv6.conf.{TUN_DEV}.disable_ipv6=1 && "
                                f"ip link set dev {TUN_DEV} txqueuelen 10000 up && "
                                f"sysctl -q -w net.ipv4.conf.{TUN_DEV}.rp_filter=0 && "
                                f"echo {rps_mask()} > {rps}"]),
           (p.rl, ["ip", "rule", "add", "iif", TUN_DEV, "lookup", "main"]),
           (p.rl, ["ip", "rule", "add", "iif", "bnl", "lookup", "100"]),
           (p.rl, ["ip", "route", "add", "default", "dev", TUN_DEV, "table", "100"])]
    for f in p.flows:
        out.append((p.rl, ["ip", "rule", "add", "iif", f"ls{f.index}", "lookup", "100"]))
    return out
