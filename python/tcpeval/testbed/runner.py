"""Run one engine config on the namespace dumbbell: build it, start the delay
line and the endpoints, sample the bottleneck's counters, collect everything,
and tear it all down again whatever happens (error, Ctrl-C, SIGTERM).

Child processes get PR_SET_PDEATHSIG, so a SIGKILLed run does not leave them
running after their parent; `tcpeval testbed cleanup` removes the namespaces.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from . import topology
from .shell import TestbedError, in_ns, sh
from .topology import Plan

ENDPOINT = Path(__file__).with_name("endpoint.py")
# Every packet a veth passes on waits in a CPU's input backlog, whose limit
# (net.core.netdev_max_backlog, machine-wide) is 1000 packets by default: a
# window-sized burst overflows it (two FAST flows at 20 ms, 1 BDP: 26,000-39,000
# backlog drops a run and no valid run in six attempts on 2026-11-28; with
# 10,000, three valid runs in three). A run raises the limit to this; the
# machine's value is kept in BACKLOG_SAVED and put back when no run is left
# (by the last run's teardown, or by `testbed cleanup` after a killed run).
# The drop gate still refuses any backlog drop.
BACKLOG_MIN = 10_000
BACKLOG_SYSCTL = Path("/proc/sys/net/core/netdev_max_backlog")
BACKLOG_SAVED = Path("/run/tcpeval-netdev-max-backlog")
PR_SET_PDEATHSIG = 1  # include/uapi/linux/prctl.h


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived during a run (handled like Ctrl-C)."""


def new_prefix() -> str:
    """tcpe-<our pid>-<random>-: unique, and `testbed cleanup` can tell a live
    run's namespaces from leftovers."""
    from . import PREFIX

    return f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:4]}-"


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Child:
    """A child process whose stdout lines are collected by a thread."""

    def __init__(self, name: str, argv: list[str]):
        self.name = name
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     preexec_fn=_die_with_parent)
        self.lines: list[str] = []
        self.errors: list[str] = []
        self.first = threading.Event()
        self.threads = [threading.Thread(target=self._read, args=(self.proc.stdout, self.lines),
                                         daemon=True),
                        threading.Thread(target=self._read, args=(self.proc.stderr, self.errors),
                                         daemon=True)]
        for t in self.threads:
            t.start()

    def _read(self, stream, into: list[str]) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))
            if into is self.lines:
                self.first.set()
        self.first.set()

    def wait_first_line(self, want: str, timeout: float) -> None:
        if not self.first.wait(timeout) or not self.lines or want not in self.lines[0]:
            self.stop()
            raise TestbedError(f"{self.name} did not start: "
                               f"{' '.join(self.errors[-3:]) or 'no output'}")

    def stop(self, sig: int = signal.SIGTERM, grace: float = 2.0) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for t in self.threads:
            t.join(1.0)
        return self.proc.returncode

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.lines if line.startswith("{")]


def sink_args(p: topology.Plan, f: topology.FlowPlan) -> list[str]:
    """The endpoint's sink arguments of flow f: its fixed receive buffer and
    the scenario's max_window as a window clamp."""
    argv = ["sink", "--bind", f.dst, "--interval", repr(p.interval_s),
            "--rcvbuf", str(p.sink_buffer())]
    return argv + (["--window-clamp", str(f.window)] if f.window else [])


class Testbed:
    """One run's namespaces and processes. Use as a context manager."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.children: list[Child] = []
        self.delayline: Child | None = None
        self.created: list[str] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.teardown()

    # ----- build -------------------------------------------------------------------------

    def build(self) -> None:
        p = self.plan
        raise_backlog(BACKLOG_MIN)
        for ns, argv in topology.link_commands(p):
            sh(ns, argv)
            if argv[:3] == ["ip", "netns", "add"]:
                self.created.append(argv[3])
        for group in (topology.sysctl_commands(p), topology.offload_commands(p),
                      topology.rps_commands(p), topology.bottleneck_commands(p),
                      topology.loss_commands(p)):
            for ns, argv in group:
                sh(ns, argv)
        if p.delay == "netem":
            for ns, argv in topology.netem_commands(p):
                sh(ns, argv)
        elif p.delay in ("nfqueue", "tun"):
            self._start_delayline()

    def _start_delayline(self) -> None:
        p = self.plan
        args = topology.nfqueue_args(p) if p.delay == "nfqueue" else topology.tun_args(p)
        self.delayline = Child("the delay line", in_ns(p.rl, [p.delayline, *args]))
        self.delayline.wait_first_line("READY", timeout=10)
        rules = topology.nfqueue_rules(p) if p.delay == "nfqueue" else topology.tun_routing(p)
        for ns, argv in rules:
            sh(ns, argv)

    def stop_delayline(self) -> dict | None:
        """SIGTERM the delay line and return its statistics line."""
        if self.delayline is None:
            return None
        code = self.delayline.stop(signal.SIGTERM, grace=5.0)
        stats = [r for r in self.delayline.records() if "queues" in r]
        if code != 0 or not stats:
            raise TestbedError(f"the delay line exited with {code} and no statistics: "
                               f"{' '.join(self.delayline.errors[-3:])}")
        return stats[-1]

    # ----- endpoints -----------------------------------------------------------------------

    def start_endpoints(self, t0: float) -> tuple[list[Child], list[Child]]:
        p = self.plan
        py = [sys.executable, "-I", str(ENDPOINT)]
        common = ["--port", str(topology.SINK_PORT), "--t0", repr(t0),
                  "--duration", repr(p.duration_s), "--tag", p.prefix]
        sinks, senders = [], []
        for f in p.flows:
            argv = [*py, *sink_args(p, f), *common]
            sinks.append(self._spawn(f"sink {f.index}", in_ns(f.sink, argv)))
        for c in sinks:  # listening before the senders probe the path's RTT
            c.wait_first_line("listening", max(1.0, t0 - time.monotonic()))
        for f in p.flows:
            argv = [*py, "send", "--dst", f.dst, "--cc", f.cc, "--start", repr(f.start_s),
                    "--trace-interval", repr(p.trace_s), "--first-sample", repr(_first_sample(
                        f.start_s, p.trace_s)), "--mss", str(f.mss), *common]
            if f.stop_s is not None:
                argv += ["--stop", repr(f.stop_s)]
            if f.bytes:
                argv += ["--bytes", str(f.bytes)]
            senders.append(self._spawn(f"sender {f.index}", in_ns(f.sender, argv)))
        wait = max(1.0, t0 - time.monotonic())
        for c in senders:
            c.wait_first_line("ready", wait)
        if time.monotonic() > t0:
            raise TestbedError("the endpoints took longer to start than the setup margin; "
                               "the machine is too busy")
        return sinks, senders

    def _spawn(self, name: str, argv: list[str]) -> Child:
        child = Child(name, argv)
        self.children.append(child)
        return child

    # ----- teardown ----------------------------------------------------------------------

    def teardown(self) -> None:
        """Kill processes by saved PID first (they survive `ip netns del`), then
        delete the namespaces; veths, qdiscs, rules and NFQUEUE bindings go with
        them. Signals are ignored meanwhile so a second Ctrl-C cannot cut it short."""
        old = {s: signal.signal(s, signal.SIG_IGN) for s in _SIGNALS} if _main_thread() else {}
        try:
            for child in [*self.children, *([self.delayline] if self.delayline else [])]:
                child.stop(signal.SIGKILL, grace=2.0)
            for ns in reversed(self.created):
                subprocess.run(["ip", "netns", "del", ns], capture_output=True)
            self.created.clear()
            from . import runs_live

            if not runs_live():
                restore_backlog()
        finally:
            for s, h in old.items():
                signal.signal(s, h)


def raise_backlog(minimum: int, path: Path = BACKLOG_SYSCTL,
                  saved: Path = BACKLOG_SAVED) -> None:
    """Raise the CPU input backlog limit to `minimum` if it is lower, keeping
    the machine's value in `saved` (the first run to raise it writes it)."""
    before = int(path.read_text())
    if before < minimum:
        if not saved.exists():
            saved.write_text(f"{before}\n")
        path.write_text(f"{minimum}\n")


def restore_backlog(path: Path = BACKLOG_SYSCTL, saved: Path = BACKLOG_SAVED) -> bool:
    """Put the machine's backlog limit back, if a run raised it (call when no
    run is left); returns whether it did."""
    if not saved.exists():
        return False
    path.write_text(saved.read_text())
    saved.unlink()
    return True


def _first_sample(start: float, step: float) -> float:
    """The first trace instant (a multiple of the trace interval) after the flow's start."""
    k = int(start / step + 1e-9) + 1
    return k * step


_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _raise_interrupted(signum, frame):
    raise Interrupted(f"signal {signum}")


class Signals:
    """SIGTERM and SIGHUP raise Interrupted (like Ctrl-C) while a run is on, so
    every finally block, and so the teardown, runs."""

    def __enter__(self):
        self.old = ({s: signal.signal(s, _raise_interrupted) for s in _SIGNALS[1:]}
                    if _main_thread() else {})
        return self

    def __exit__(self, *exc):
        for s, h in self.old.items():
            signal.signal(s, h)


# ----- one run ---------------------------------------------------------------------------

SAMPLE_MIN_S = 0.05  # iptables-save forks for the loss rules: at most 20 a second
BUSY_STEP_S = 0.005


def measure(plan: Plan) -> dict:
    """Build the dumbbell, run the traffic, and return every raw measurement;
    the namespaces and processes are gone when this returns or raises."""
    from . import counters

    with Signals(), Testbed(plan) as tb:  # Signals nest: run_engine_config has them too
        tb.build()
        setup = verify_setup(plan)
        drops0, softnet0 = counters.device_drops(plan.namespaces), counters.softnet_drops()
        # Start-up margin: Python start-up per process, and three RTT probes.
        t0 = (time.monotonic() + 1.5 + 0.25 * len(plan.flows)
              + 3 * max(f.rtt_s for f in plan.flows))
        sinks, senders = tb.start_endpoints(t0)
        samples = _sample_bottleneck(plan, t0)
        for c in sinks + senders:
            _wait_exit(c, t0 + plan.duration_s + 10)
        delayline = tb.stop_delayline()
        drops1, softnet1 = counters.device_drops(plan.namespaces), counters.softnet_drops()
        return {
            "samples": samples,
            "sinks": [c.records() for c in sinks],
            "senders": [c.records() for c in senders],
            "delayline": delayline,
            "setup": setup,
            "device_drops": {k: v - drops0.get(k, 0) for k, v in drops1.items()
                             if v != drops0.get(k, 0)},
            "softnet_drops": softnet1 - softnet0,
            "delay_rules": counters.rule_packets(plan.rl) if plan.delay == "nfqueue" else [],
        }


def _wait_exit(child: Child, deadline: float) -> None:
    try:
        child.proc.wait(max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        child.stop()
        raise TestbedError(f"{child.name} did not finish in time") from None
    for t in child.threads:
        t.join(2.0)
    if child.proc.returncode != 0:
        raise TestbedError(f"{child.name} failed (exit {child.proc.returncode}): "
                           f"{' | '.join(child.errors[-4:])}")


def sample_step(plan: Plan) -> float:
    """The bottleneck sampler's step: the trace interval, but 5 ms when the
    busy-period gate judges the run (gates.busy_rate). That gate can only judge
    spans whose starting queue alone keeps the link busy to their end, which
    at a 1 s step needs a queue of a second's worth of the link; at 5 ms, 62.5
    kB at 100 Mbit/s. (With 1 s spans and any backlog at both ends counted as
    busy, a yielding flow's idle stretches were charged to the shaper, issue
    32: TCP-LP alone at 50 ms, 'carried 65.7 Mbit/s while backlogged'.) Such a
    run has no random loss, so no iptables forks; a qdisc read costs about
    50 us (counters.QdiscReader)."""
    from . import gates

    if gates.judged_busy(plan):
        return BUSY_STEP_S
    return max(plan.trace_s, SAMPLE_MIN_S)


def _sample_bottleneck(plan: Plan, t0: float) -> list[dict]:
    """Counters of both bottleneck qdiscs (and of the random-loss rules) at 0,
    step, 2 step, ... up to the run's end; each sample carries its actual time."""
    from . import counters

    step = sample_step(plan)
    n = int(plan.duration_s / step + 1e-9)
    out = []
    with counters.QdiscReader(plan.rl) as fwd, counters.QdiscReader(plan.rr) as rev:
        for k in range(n + 1):
            delay = t0 + k * step - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            before = time.monotonic()
            row = {"fwd": fwd.root("bnl")}
            # The forward read's time is its midpoint.
            row["t"] = (before + time.monotonic()) / 2 - t0
            row["rev"] = rev.root("bnr")
            if plan.loss > 0:
                row["loss_rules"] = counters.rule_packets(plan.rr)
            row["t_end"] = time.monotonic() - t0
            out.append(row)
    return out


def verify_setup(plan: Plan) -> dict:
    """Read back what the validity recipe set: TSO/GSO off on the senders, RPS
    on every veth rx queue, endpoint socket buffers above the BDP. Raises
    TestbedError before any traffic when the kernel did not take it."""
    mask = int(topology.rps_mask(), 16)
    problems, checked = [], {"gso_off": [], "rps": [], "tcp_mem_max": plan.tcp_mem_max()}
    for f in plan.flows:
        k = sh(f.sender, ["ethtool", "-k", "eth0"])
        if "tcp-segmentation-offload: on" in k or "generic-segmentation-offload: on" in k:
            problems.append(f"{f.sender}: TSO/GSO still on")
        checked["gso_off"].append(f.sender)
        wmem = int(sh(f.sender, ["sysctl", "-n", "net.ipv4.tcp_wmem"]).split()[-1])
        if wmem < plan.tcp_mem_max():
            problems.append(f"{f.sender}: tcp_wmem max {wmem} below {plan.tcp_mem_max()}")
    for ns in plan.namespaces:
        out = sh(ns, ["sh", "-c", "for f in /sys/class/net/*/queues/rx-*/rps_cpus; do "
                                  "case $f in */lo/*) ;; *) echo $f $(cat $f);; esac; done"])
        for line in out.splitlines():
            path, value = line.split()
            if int(value.replace(",", ""), 16) & mask != mask:
                problems.append(f"{ns}: RPS off on {path}")
            checked["rps"].append(f"{ns}:{path.split('/')[4]}")
    if problems:
        raise TestbedError("the validity recipe did not take: " + "; ".join(problems))
    return checked
