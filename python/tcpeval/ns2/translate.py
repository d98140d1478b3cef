"""Translate a resolved tcpeval scenario into an ns-2.35 Tcl script that runs the
same dumbbell with `Agent/TCP/Linux` senders (D. X. Wei's TCP-Linux, which runs
the congestion-control modules of Linux 2.6.22.6 inside ns-2).

Only what ns-2 can express the same way is translated; everything else is
refused with one line naming the field and what is allowed (ScenarioError, exit
code 2 on the command line)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..constants import MTU_BYTES
from ..errors import ScenarioError

# `Agent/TCP/Linux select_ca` offers these 15 modules in ns-2.35 (its own error
# message lists them; tcp/linux/src/*.c in the ns-2.35 tree, each headed
# "Modified Linux module source code from /home/weixl/linux-2.6.22.6").
NS2_MODULES = ("reno", "naive_reno", "highspeed", "bic", "htcp", "scalable", "cubic",
               "westwood", "vegas", "hybla", "illinois", "yeah", "veno", "compound", "lp")
KERNEL_VERSION = "2.6.22.6"

# tcpeval name -> ns-2 TCP-Linux module, for the algorithms both have.
CC_MODULE = {"reno": "reno", "newreno": "reno", "highspeed": "highspeed", "bic": "bic",
             "htcp": "htcp", "scalable": "scalable", "cubic": "cubic",
             "westwood": "westwood", "westwoodplus": "westwood", "vegas": "vegas",
             "illinois": "illinois", "yeah": "yeah", "compound": "compound",
             "ctcp": "compound", "lp": "lp", "tcplp": "lp"}

# ns-2's TCP-LP module never leaves its early-congestion state: it reads the
# peer's timestamp clock (rx_opt.rcv_tsval), which TCP-Linux's ns-2 glue does
# not fill in, so its one-way-delay estimate is never valid (see docs/crosscheck.md).
BROKEN_IN_NS2 = {"lp": "ns-2's TCP-LP module is known broken (docs/crosscheck.md)"}

_SCALE = 1024  # the 2.6.22 modules keep beta and bic_scale in 1/1024 (tcp_bic.c, tcp_cubic.c)


def _frac(v) -> int:
    return int(round(float(v) * _SCALE))


def _flag(v) -> int:
    return int(bool(v))


# Per algorithm: tcpeval parameter -> (module parameter of the 2.6.22.6 module,
# conversion). Names from the module_param() lines of tcp_cubic.c, tcp_bic.c,
# tcp_vegas.c and tcp_htcp.c at 2.6.22.6.
PARAM_MAP = {
    "cubic": {"beta": ("beta", _frac), "c": ("bic_scale", _frac),
              "fast_convergence": ("fast_convergence", _flag),
              "tcp_friendliness": ("tcp_friendliness", _flag)},
    "bic": {"beta": ("beta", _frac), "fast_convergence": ("fast_convergence", _flag),
            "low_window": ("low_window", int), "max_increment": ("max_increment", int),
            "smooth_part": ("smooth_part", int)},
    "vegas": {"alpha": ("alpha", int), "beta": ("beta", int), "gamma": ("gamma", int)},
    "htcp": {"use_bandwidth_switch": ("use_bandwidth_switch", _flag),
             "use_rtt_scaling": ("use_rtt_scaling", _flag)},
}
# Parameters ns-2's modules lack but whose value there is known: accepted when
# they ask for what the 2.6.22.6 module does (CUBIC had no HyStart before 2.6.29).
FIXED_IN_NS2 = {("cubic", "hystart"): False}

# ns-2's own agents (`agents="native"`, the `ns2` stack of issue 28): per
# algorithm the agent with SACK and without, and its settings. HighSpeed is
# windowOption_ 8 on any agent (tcp/tcp.cc, Floyd's RFC 3649 implementation, as
# seed 004 used); Vegas is Agent/TCP/Vegas (tcp/tcp-vegas.cc), Reno-based;
# Tahoe is ns-2's default agent, Agent/TCP (tcp/tcp.cc).
NATIVE_AGENTS = {
    "reno": ("Agent/TCP/Sack1", "Agent/TCP/Newreno", {}),
    "tahoe": ("Agent/TCP", "Agent/TCP", {}),
    "newreno": ("Agent/TCP/Sack1", "Agent/TCP/Newreno", {}),
    "highspeed": ("Agent/TCP/Sack1", "Agent/TCP/Newreno", {"windowOption_": 8}),
    "vegas": ("Agent/TCP/Vegas", "Agent/TCP/Vegas", {}),
}
NATIVE_PARAMS = {"vegas": {"alpha": "v_alpha_", "beta": "v_beta_", "gamma": "v_gamma_"}}
AGENTS = ("linux", "native")

# A queue limit for links that must never drop (access links): ns-2 needs one.
NO_DROP_PKTS = 10_000_000


@dataclass(frozen=True)
class Ns2Script:
    """A Tcl script and what is needed to read its output."""

    tcl: str
    flows: list[dict]          # per engine flow: label, cc, module, mss, start_s
    duration_s: float
    measure_from_s: float
    trace_interval_s: float
    capacity_bps: float


def _refuse(field: str, why: str) -> None:
    raise ScenarioError(f"{field}: {why} (ns-2 peer)")


def _check_run(resolved: dict) -> None:
    meta = resolved["meta"]
    if meta.get("backend", "sim") != "sim":
        _refuse("run.backend", "only the simulator's scenarios translate to ns-2; got "
                f"{meta['backend']!r}")
    if resolved.get("udp"):
        _refuse("udp", "UDP streams are not translated; allowed: TCP [[flows]] only")
    if meta.get("background"):
        _refuse("background", "background traffic is not translated; allowed: [[flows]] only")
    if len(resolved["network"].get("hops") or []) > 1:
        _refuse("network.hops", "a parking lot is not translated; allowed: one bottleneck")
    queue = bottleneck(resolved["network"]).get("queue", "droptail")
    if queue not in ("droptail", "red"):
        _refuse("network.queue", f"{queue!r} is not translated (ns-2.35's CoDel and PIE "
                "are not Linux's); allowed: droptail, red")


_OLD_KEYS = {"rate_bps": "bottleneck_rate_bps", "delay_ns": "bottleneck_delay_ns"}


def bottleneck(network: dict) -> dict:
    """The dumbbell's one hop: `network.hops[0]` (engine interface since issue
    27), or the flat `bottleneck_*` keys the engine took before."""
    hops = network.get("hops")
    if hops:
        return hops[0]
    keys = ("buffer_pkts", "buffer_bytes", "reverse_buffer_pkts", "reverse_buffer_bytes",
            "queue", "loss", "red")
    return {**{k: network[old] for k, old in _OLD_KEYS.items()},
            **{k: network[k] for k in keys}}


def _check_flow(k: int, f: dict) -> None:
    where = f"flows[{k}]"
    checks = [
        (f["direction"] != "forward", "direction", "only forward flows"),
        (f["bytes"] is not None, "bytes", "fixed-size transfers are not translated; "
         "allowed: bulk flows"),
        (f["path"] is not None, "path", "paths exist only in a parking lot"),
        (f["nic_queue_pkts"] is not None, "txqueuelen", "ns-2 has no interface queue "
         "limit; allowed: unset"),
        (f["send_overhead_ns"] > 0, "send_overhead", "ns-2 has no per-packet host delay "
         "(its agents' overhead_ delays a whole send: send_jitter); allowed: 0"),
    ]
    for bad, key, why in checks:
        if bad:
            _refuse(f"{where}.{key}", why)


def _sender(k: int, f: dict, agents: str) -> tuple[str, list[str], list[str]]:
    """What the flow's sender is called in the summary, the Tcl that makes it,
    and the Tcl that sets its congestion control (run at time 0)."""
    where, tcp = f"flows[{k}]", f"$tcp({k})"
    if agents == "native":
        if f["cc"] not in NATIVE_AGENTS:
            have = ", ".join(sorted(NATIVE_AGENTS))
            _refuse(f"{where}.cc", f"{f['cc']!r} has no ns-2 native agent; allowed: {have}")
        with_sack, without, settings = NATIVE_AGENTS[f["cc"]]
        agent = with_sack if f["sack"] else without
        known = NATIVE_PARAMS.get(f["cc"], {})
        for name in sorted(f["params"] or {}):
            if name not in known:
                _refuse(f"{where}.params.{name}", f"ns-2's {agent} has no such parameter; "
                        f"allowed: {', '.join(sorted(known)) or 'none'}")
        sets = {**settings, **{known[n]: v for n, v in (f["params"] or {}).items()}}
        name = agent.removeprefix("Agent/TCP/") + "".join(f" {k}={v}" for k, v in sets.items())
        return name, [f"set tcp({k}) [new {agent}]",
                      *(f"{tcp} set {n} {v}" for n, v in sets.items())], []
    module = CC_MODULE.get(f["cc"])
    if module is None:
        have = ", ".join(sorted(set(CC_MODULE)))
        _refuse(f"{where}.cc", f"{f['cc']!r} has no ns-2 TCP-Linux module; allowed: {have}")
    params = _module_params(where, f["cc"], f["params"] or {})
    return module, [f"set tcp({k}) [new Agent/TCP/Linux]"], [
        f"$ns at 0 \"{tcp} select_ca {module}\"",
        *(f"$ns at 0 \"{tcp} set_ca_param {module} {n} {v}\"" for n, v in params)]


def _module_params(where: str, cc: str, params: dict) -> list[tuple[str, int]]:
    known = PARAM_MAP.get(CC_MODULE[cc], {})
    out = []
    for name, value in sorted(params.items()):
        fixed = FIXED_IN_NS2.get((CC_MODULE[cc], name))
        if fixed is not None:
            if value != fixed:
                _refuse(f"{where}.params.{name}", f"ns-2's {cc} module has no {name}; "
                        f"allowed: {str(fixed).lower()}")
            continue
        if name not in known:
            allowed = ", ".join(sorted(known)) or "none"
            _refuse(f"{where}.params.{name}", f"ns-2's {cc} module has no such parameter; "
                    f"allowed: {allowed}")
        ns_name, conv = known[name]
        out.append((ns_name, conv(value)))
    return out


def _queue_tcl(net: dict, src: str, dst: str, prefix: str, rate_bps: float) -> list[str]:
    """Limit (and RED settings) of the queue on link src->dst."""
    pkts, nbytes = net[f"{prefix}_pkts"], net[f"{prefix}_bytes"]
    q = f"[[$ns link ${src} ${dst}] queue]"
    if net["queue"] == "red":
        if pkts is None:
            _refuse(f"network.{prefix}", "RED in ns-2 needs a buffer in packets or BDP, "
                    "not bytes")
        return [f"$ns queue-limit ${src} ${dst} {pkts}", *_red_tcl(q, net["red"], pkts, rate_bps)]
    if pkts is not None:
        return [f"$ns queue-limit ${src} ${dst} {pkts}"]
    # A byte limit: ns-2's DropTail counts bytes when queue-in-bytes_ is set,
    # limit_ x mean_pktsize_ bytes (queue/drop-tail.cc); mean_pktsize_ 1 makes
    # limit_ the byte count itself.
    return [f"{q} set queue-in-bytes_ true", f"{q} set mean_pktsize_ 1",
            f"$ns queue-limit ${src} ${dst} {int(nbytes)}"]


def _red_tcl(q: str, red: dict, pkts: int, rate_bps: float) -> list[str]:
    # The same defaults tcpeval derives (docs/traffic.md, "RED"): max_th = B/2,
    # min_th = max_th/3, w_q = 1 - exp(-1/C) with C the link's packets per second,
    # max_p 0.1, gentle. ns-2 spells max_p as linterm_ = 1/max_p (queue/red.cc) and
    # spaces drops with wait_ unless told not to; tcpeval does not wait.
    max_th = red.get("max_th", pkts / 2)
    min_th = red.get("min_th", max_th / 3)
    w_q = red.get("w_q", 1 - math.exp(-1 / (rate_bps / (MTU_BYTES * 8))))
    max_p = red.get("max_p", 0.1)
    gentle = red.get("gentle", True)
    return [f"{q} set thresh_ {min_th!r}", f"{q} set maxthresh_ {max_th!r}",
            f"{q} set q_weight_ {w_q!r}", f"{q} set linterm_ {1 / max_p!r}",
            f"{q} set gentle_ {str(bool(gentle)).lower()}", f"{q} set wait_ false",
            f"{q} set mean_pktsize_ {MTU_BYTES}"]


# The TCP timestamps option on the wire: 10 bytes and two NOPs (RFC 7323
# section 3, Linux's layout), part of tcpeval's 52-byte header.
TS_OPTION_BYTES = 12


def _window_pkts(f: dict, resolved: dict) -> int:
    """ns-2's window_ (the receive-window cap, packets): the flow's max_window, or
    far above anything the path holds (ns-2's default of 20 would cap every flow)."""
    if f["max_window_bytes"] is not None:
        return max(1, f["max_window_bytes"] // f["mss"])
    net = bottleneck(resolved["network"])
    path_pkts = net["rate_bps"] * f["rtt_ns"] / 1e9 / 8 / f["mtu"]
    buf = net["buffer_pkts"] or (net["buffer_bytes"] or 0) // f["mtu"]
    return int(4 * (path_pkts + buf) + 1000)


def _flow_tcl(i: int, f: dict, sender: tuple, resolved: dict) -> list[str]:
    _, make, select = sender
    access = resolved["network"]["access_rate_bps"]
    one_way = f["rtt_ns"] / 2e9 - bottleneck(resolved["network"])["delay_ns"] / 1e9
    sink = "Agent/TCPSink/Sack1" if f["sack"] else "Agent/TCPSink"
    if f["delayed_ack"]:
        sink += "/DelAck"
    lines = [
        f"set s({i}) [$ns node]", f"set d({i}) [$ns node]",
        f"$ns duplex-link $s({i}) $A {access:.0f} {one_way!r} DropTail",
        f"$ns duplex-link $B $d({i}) {access:.0f} 0 DropTail",
        f"$ns queue-limit $s({i}) $A {NO_DROP_PKTS}", f"$ns queue-limit $A $s({i}) {NO_DROP_PKTS}",
        f"$ns queue-limit $B $d({i}) {NO_DROP_PKTS}", f"$ns queue-limit $d({i}) $B {NO_DROP_PKTS}",
        *make,
        # Wire packets of mtu bytes: payload packetSize_ plus a header of mtu - mss
        # (tcpeval's 52 B: IP, TCP and the timestamp option). With timestamps_ on,
        # ns-2 adds ts_option_size_ (10 by default, tcl/lib/ns-default.tcl) to
        # tcpip_base_hdr_size_ (TcpAgent::headersize, tcp/tcp.cc): the option's 12
        # bytes with its padding go there.
        f"$tcp({i}) set packetSize_ {f['mss']}",
        f"$tcp({i}) set tcpip_base_hdr_size_ {f['mtu'] - f['mss'] - TS_OPTION_BYTES}",
        f"$tcp({i}) set ts_option_size_ {TS_OPTION_BYTES}",
        f"$tcp({i}) set timestamps_ true",
        f"$tcp({i}) set window_ {_window_pkts(f, resolved)}",
        f"$tcp({i}) set windowInit_ {f['initial_cwnd']}",
        f"$tcp({i}) set overhead_ {f['send_jitter_ns'] / 1e9!r}",
        f"set sink({i}) [new {sink}]",
        f"$sink({i}) set ts_echo_rfc1323_ true",
        # ACKs of tcpeval's size (its header, mtu - mss; TCPSink sends size_).
        f"$sink({i}) set packetSize_ {f['mtu'] - f['mss']}",
    ]
    if f["delayed_ack"]:
        lines.append(f"$sink({i}) set interval_ {f['delack_timeout_ns'] / 1e9!r}")
    lines += [
        f"$ns attach-agent $s({i}) $tcp({i})", f"$ns attach-agent $d({i}) $sink({i})",
        f"$ns connect $tcp({i}) $sink({i})",
        *select,
        f"set ftp({i}) [new Application/FTP]", f"$ftp({i}) attach-agent $tcp({i})",
        f"$ns at {f['start_ns'] / 1e9!r} \"$ftp({i}) start\"",
    ]
    if f["stop_ns"] is not None:
        lines.append(f"$ns at {f['stop_ns'] / 1e9!r} \"$ftp({i}) stop\"")
    return lines


def ns2_seed(seed: int, stream: int) -> int:
    """The ns-2 RNG seed for the run's `seed` and a stream of the script (0: the
    default RNG, `ns-random`; 1: the loss model's).

    ns-2.35's `RNG::set_seed` (tools/rng.cc) puts the seed in all six words of
    MRG32k3a's state, so the streams of seeds n and m are, word by word, m/n
    times each other: small consecutive seeds draw nearly the same Bernoulli
    losses (seeded 2, 3, 4 and 5, the first 300,000 uniforms fall below 1e-4 at
    packet 35,695 and 98,430 in all four). A SplitMix64 mix of (seed, stream)
    into [1, 2^31 - 2] makes the multipliers large and unrelated."""
    z = (seed * 0x9E3779B97F4A7C15 + stream * 0xD1B54A32D192ED03 + 0x9E3779B97F4A7C15) % 2**64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % 2**64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % 2**64
    return (z ^ (z >> 31)) % 2147483646 + 1


def _loss_tcl(loss: float, seed: int) -> list[str]:
    if loss <= 0:
        return []
    # Bernoulli drops of data on the forward bottleneck (ErrorModel, unit pkt),
    # from an RNG of their own seeded by the run's seed.
    return ["set lrng [new RNG]", f"$lrng seed {ns2_seed(seed, 1)}",
            "set lrv [new RandomVariable/Uniform]", "$lrv use-rng $lrng",
            "set em [new ErrorModel]", "$em unit pkt", f"$em set rate_ {loss!r}",
            "$em ranvar $lrv", "$em drop-target [new Agent/Null]",
            "$ns lossmodel $em $A $B"]


# Output: one line per sample into RESULTS_FILE, read by runner.parse_output.
# A file of its own: modules print debug lines to stdout through C's stdio,
# which interleaves with Tcl's buffered puts mid-line (TCP-LP does).
RESULTS_FILE = "tcpeval-ns2.out"
_REPORT = f"""
set out [open {RESULTS_FILE} w]
proc mark {{tag}} {{
    global ns tcp nflows qm out
    for {{set i 0}} {{$i < $nflows}} {{incr i}} {{
        puts $out "$tag $i [$tcp($i) set ack_] [$tcp($i) set nrexmitpack_] [$tcp($i) set nrexmit_]"
    }}
    puts $out "$tag-q [$qm set parrivals_] [$qm set pdrops_] [$qm set bdepartures_]"
}}
proc sample {{k step stop}} {{
    global ns tcp nflows out
    set line "cwnd [$ns now]"
    for {{set i 0}} {{$i < $nflows}} {{incr i}} {{ append line " [$tcp($i) set cwnd_]" }}
    puts $out $line
    # k x step, not a running sum, so sample times do not drift; the last one
    # before the end (at the end itself the run stops first).
    set next [expr ($k + 1) * $step]
    if {{$next < $stop - 1e-9}} {{ $ns at $next "sample [expr $k + 1] $step $stop" }}
}}
"""


def translate(resolved: dict, agents: str = "linux", abc: int | None = None) -> Ns2Script:
    """The ns-2 script for a resolved scenario (tcpeval.scenario.resolve's
    output), with TCP-Linux senders or (agents="native") ns-2's own agents.
    `abc` sets TCP-Linux's sysctl_tcp_abc (RFC 3465 byte counting), which
    ns-2.35 turns on (tcp/linux/ns-linux-param.c) and kernels of the time
    left off; None keeps ns-2's setting."""
    if agents not in AGENTS:
        raise ValueError(f"agents: {agents!r}; allowed: {', '.join(AGENTS)}")
    if abc is not None and (agents != "linux" or abc not in (0, 1, 2)):
        raise ValueError(f"abc: 0, 1 or 2, with TCP-Linux agents only; got {abc!r}")
    _check_run(resolved)
    net = bottleneck(resolved["network"])
    rate = net["rate_bps"]
    delay = net["delay_ns"] / 1e9
    duration = resolved["duration_ns"] / 1e9
    measure_from = resolved["meta"]["measure_from_s"]
    step = resolved["trace_interval_ns"] / 1e9
    seed = resolved["seed"]
    lines = ["set ns [new Simulator]", f"ns-random {ns2_seed(seed, 0)}",
             "set A [$ns node]", "set B [$ns node]",
             f"$ns simplex-link $A $B {rate:.0f} {delay!r} {_qtype(net)}",
             f"$ns simplex-link $B $A {rate:.0f} {delay!r} {_qtype(net)}",
             *_queue_tcl(net, "A", "B", "buffer", rate),
             *_queue_tcl(net, "B", "A", "reverse_buffer", rate),
             *_loss_tcl(net["loss"], seed),
             "set qm [$ns monitor-queue $A $B [open /dev/null w]]"]
    flows = []
    for i, f in enumerate(resolved["flows"]):
        _check_flow(i, f)
        sender = _sender(i, f, agents)
        lines += _flow_tcl(i, f, sender, resolved)
        if abc is not None:
            # A module default (set_ca_default_param), the same for every flow.
            lines.append(f"$ns at 0 \"$tcp({i}) set_ca_default_param linux sysctl_tcp_abc {abc}\"")
        flows.append({"label": f["group"], "cc": f["cc"], "module": sender[0], "mss": f["mss"],
                      "start_s": f["start_ns"] / 1e9})
    lines += [f"set nflows {len(flows)}", _REPORT,
              f"$ns at {measure_from!r} \"mark from\"",
              f"$ns at {step!r} \"sample 1 {step!r} {duration!r}\"",
              f"$ns at {duration!r} \"mark end; close $out; exit 0\"",
              "$ns run"]
    return Ns2Script("\n".join(lines) + "\n", flows, duration, measure_from, step, rate)


def _qtype(net: dict) -> str:
    return "RED" if net["queue"] == "red" else "DropTail"
