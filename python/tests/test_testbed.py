"""The real-kernel testbed: capability check, refusals, runs on the namespace
dumbbell (link filled, per-flow base RTT, random loss), cleanup after SIGTERM
and SIGKILL. The runs need root and network namespaces; elsewhere they skip."""

import importlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tcpeval
from tcpeval import testbed
from tcpeval.scenario import engine_config, load_scenario, resolve

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and tc need root")


@needs_root
def test_check_probes_the_kernel_and_cleans_up():
    caps = testbed.check()
    assert "reno" in caps["congestion_controls"]
    assert caps["qdiscs"]["pfifo"] and caps["qdiscs"]["tbf"]
    assert isinstance(caps["netem"], bool)
    # Only this process's probe namespace is looked for: other engineers'
    # namespaces come and go on a shared machine.
    assert not [ns for ns in testbed.namespaces() if ns.startswith(f"tcpe-{os.getpid()}-probe")]


def caps(**over):
    base = {"root": True, "congestion_controls": ["reno", "cubic", "bbr"],
            "qdiscs": {"red": False, "netem": False}, "netem": False, "nfqueue": True,
            "tun": True, "delay_line": "/bin/true",
            "envelope": {"max_rate_with_delay_bps": 200e6, "max_rate_without_delay_bps": 1e9}}
    return {**base, **over}


def engine(data):
    return engine_config(resolve(load_scenario({"flows": [{}], **data})))


@pytest.mark.parametrize("data,needle", [
    ({"flows": [{"cc": "highspeed"}]}, "flows[0].cc: the kernel offers bbr, cubic, reno"),
    ({"network": {"queue": "red"}}, "no red qdisc"),
    ({"network": {"bottleneck": "1Gbps"}}, "beyond this machine's delay line"),
    ({"network": {"bottleneck": "2Gbps", "rtt": "0ms"}, "run": {"backend": "testbed"}},
     "beyond what this machine forwards"),
    ({"flows": [{"direction": "reverse"}]}, "flows[0].direction: only forward"),
    ({"flows": [{"cc": "cubic", "params": {"beta": 0.5}}]}, "flows[0].params"),
    ({"flows": [{"count": 9}]}, "at most 8"),
    ({"flows": [{"cc": "cubic", "send_overhead": "5us"}]}, "flows[0].send_overhead"),
    ({"flows": [{"cc": "cubic", "send_jitter": "5us"}]}, "flows[0].send_jitter"),
    ({"flows": [{"cc": "cubic", "quickacks": 1}]}, "flows[0].quickacks"),
    ({"udp": [{"rate": "10Mbps"}]}, "udp:"),
    ({"background": {"web": [{"load": 0.3}]}, "run": {"duration": "20s"}}, "background:"),
])
def test_scenarios_the_kernel_cannot_run_are_refused(data, needle):
    assert needle in testbed.refuse_reason(engine(data), caps())


@pytest.mark.parametrize("queue,probe,option,needle", [
    ("codel", False, "not set",
     "network.queue: this kernel has no codel qdisc (CONFIG_NET_SCH_CODEL is not set)"),
    ("fq_codel", False, "m", "no fq_codel qdisc (CONFIG_NET_SCH_FQ_CODEL=m, but the module"),
    ("pie", False, None, "no pie qdisc (CONFIG_NET_SCH_PIE unknown: no /proc/config.gz)"),
    ("pie", True, "y", "network.queue: pie is not implemented on the testbed (only droptail)"),
    ("step", None, None, "network.queue: 'step' has no Linux qdisc of its own"),
])
def test_an_aqm_queue_is_refused_naming_what_the_kernel_lacks(queue, probe, option, needle):
    kind = {"step": "red"}.get(queue, queue)
    options = None if option is None else {testbed.AQM_QDISCS[kind]: option}
    net = {"queue": queue, **({"step": {"threshold": "12pkt"}} if queue == "step" else {})}
    reason = testbed.refuse_reason(engine({"network": net}),
                                   caps(qdiscs={kind: probe}, qdisc_options=options))
    assert needle in reason and reason.endswith("use droptail or --backend sim")


@needs_root
def test_the_qdisc_probe_agrees_with_the_kernel_options():
    caps = testbed.check()
    if caps["qdisc_options"] is None:
        pytest.skip("no /proc/config.gz")
    for kind, option in testbed.AQM_QDISCS.items():
        # A qdisc the kernel was built without cannot be set up (no modules
        # either way); a built-in one can.
        if caps["qdisc_options"][option] == "not set":
            assert caps["qdiscs"][kind] is False, kind
        if caps["qdisc_options"][option] == "y":
            assert caps["qdiscs"][kind] is True, kind


def test_emulated_delay_without_the_delay_line_binary_is_refused():
    reason = testbed.refuse_reason(engine({}), caps(delay_line=None))
    assert "tcpeval-delayline" in reason and "make setup" in reason
    # Without delay the binary is not needed.
    no_delay = {"network": {"rtt": "0ms"}, "run": {"backend": "testbed"}}
    assert testbed.refuse_reason(engine(no_delay), caps(delay_line=None)) is None


def test_the_delay_line_binary_is_found_through_the_environment(monkeypatch, tmp_path):
    exe = tmp_path / "dl"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv(testbed.DELAYLINE_ENV, str(exe))
    assert testbed.delay_line_path() == str(exe)
    monkeypatch.setenv(testbed.DELAYLINE_ENV, str(tmp_path / "missing"))
    assert testbed.delay_line_path() is None


def test_a_runnable_scenario_is_not_refused():
    assert testbed.refuse_reason(engine({"flows": [{"cc": "newreno"}]}), caps()) is None


def test_cli_refuses_what_the_kernel_cannot_run_with_exit_2(tmp_path, examples):
    from tcpeval.cc_names import available_algorithms
    from tcpeval.testbed.kernel_cc import offers

    # An algorithm neither built in nor loadable as BPF here (and offered by the
    # default stack: `tahoe` is the ns2 stack's only, refused before the backend).
    cc = next(cc for cc, o in offers(list(available_algorithms())).items()
              if o["how"] == "unavailable" and cc != "tahoe")
    out = tmp_path / "r"
    p = subprocess.Popen([sys.executable, "-m", "tcpeval.cli", "run",
                          str(examples / "reno_single.toml"), "--backend", "testbed",
                          "--set", f'flows.0.cc="{cc}"', "--out", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, stderr = p.communicate(timeout=60)
    assert p.returncode == 2, stderr
    assert "backend testbed" in stderr and cc in stderr and "--backend sim" in stderr
    assert not out.exists()
    assert not [ns for ns in testbed.namespaces() if ns.startswith(f"tcpe-{p.pid}-")]


@needs_root
def test_cli_check_json():
    p = subprocess.run([sys.executable, "-m", "tcpeval.cli", "testbed", "check", "--json"],
                       capture_output=True, text=True)
    assert p.returncode == 0
    assert "congestion_controls" in json.loads(p.stdout)


@needs_root
def test_cleanup_removes_only_its_own_namespaces():
    import uuid

    # Scoped to this test's prefix: other engineers' tcpe-* namespaces on a
    # shared machine must not be touched by the test.
    tag = f"tcpe-test{uuid.uuid4().hex[:6]}"
    mine, other, alive = f"{tag}-a", f"other-{tag}", f"tcpe-{os.getpid()}-{tag}"
    for ns in (mine, other, alive):
        subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        removed, kept = testbed.cleanup(tag)
        assert removed == [mine] and kept == []
        p = subprocess.run([sys.executable, "-m", "tcpeval.cli", "testbed", "cleanup",
                            "--prefix", f"tcpe-{os.getpid()}-{tag}"],
                           capture_output=True, text=True)
        # The namespace of a live run (this process) is kept.
        assert p.returncode == 0 and "kept 1" in p.stdout and alive in p.stdout
        left = testbed.namespaces()
        assert mine not in left and other in left and alive in left
    finally:
        for ns in (mine, other, alive):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_cleanup_refuses_a_foreign_prefix():
    with pytest.raises(ValueError, match="refusing"):
        testbed.cleanup("x")
    p = subprocess.run([sys.executable, "-m", "tcpeval.cli", "testbed", "cleanup",
                        "--prefix", "x"], capture_output=True, text=True)
    assert p.returncode == 2 and "--prefix" in p.stderr


# ----- runs on the kernel ------------------------------------------------------------------


def _namespaces_work() -> str | None:
    """Why testbed runs cannot happen here, or None."""
    if os.geteuid() != 0:
        return "testbed runs need root (network namespaces, tc, iptables)"
    probe = f"tcpe-{os.getpid()}-probe"
    if subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode != 0:
        return "network namespaces are not available (ip netns add failed)"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    reason = testbed.refuse_reason(engine({"flows": [{"cc": "cubic"}],
                                           "network": {"rtt": "50ms", "loss": 0.01}}))
    return f"the testbed refuses a plain scenario here: {reason}" if reason else None


_why_not = _namespaces_work() if os.geteuid() == 0 else "testbed runs need root"
needs_testbed = pytest.mark.skipif(_why_not is not None, reason=str(_why_not))

@needs_testbed
def test_the_qdisc_reader_reads_what_tc_prints():
    """The sampler's persistent `tc -batch` gives the counters a `tc -s -j`
    fork gives, read after read; a device it cannot find is an error."""
    from tcpeval.testbed import counters
    from tcpeval.testbed.shell import TestbedError

    here, there = f"tcpe-{os.getpid()}-qa", f"tcpe-{os.getpid()}-qb"

    def sh(ns: str, *argv: str) -> None:
        subprocess.run(["ip", "netns", "exec", ns, *argv], check=True, capture_output=True)

    try:
        for ns in (here, there):
            subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
            sh(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
        sh(here, "ip", "link", "add", "a0", "type", "veth", "peer", "name", "a1", "netns", there)
        for ns, dev, addr in ((here, "a0", "10.9.0.1/24"), (there, "a1", "10.9.0.2/24")):
            sh(ns, "ip", "addr", "add", addr, "dev", dev)
            sh(ns, "ip", "link", "set", dev, "up")
        sh(here, "tc", "qdisc", "add", "dev", "a0", "root", "tbf", "rate", "10mbit",
           "burst", "20k", "latency", "100ms")
        sh(here, "ping", "-q", "-c", "5", "-i", "0.01", "10.9.0.2")
        with counters.QdiscReader(here) as reader:
            first, again = reader.root("a0"), reader.root("a0")
            with pytest.raises(TestbedError, match="no counters for nope0"):
                reader.root("nope0")
        forked = json.loads(subprocess.run(["tc", "-n", here, "-s", "-j", "qdisc", "show",
                                            "dev", "a0"], capture_output=True, text=True).stdout)
    finally:
        for ns in (here, there):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    root = next(q for q in forked if q.get("root"))
    assert first == again == {k: int(root.get(k, 0)) for k in counters.QDISC_KEYS}
    assert first["packets"] >= 5, first  # the echo requests (and ARP) left through a0


GOODPUT_CEILING_MBPS = 100 * 1448 / 1514  # tbf charges the 14-byte Ethernet header


def skip_if_the_machine_is_too_noisy(reasons: list[str]) -> None:
    """Skip, saying why, when every failed gate is the delay line running late
    (with the shortfall in rate that follows from it): the gate did its job and
    this machine's timer wake-ups are too slow to measure anything now (seen on
    an idle but throttled VM: 400 us mean lateness where 30 us is usual). Any
    other failed gate (drops, base RTT, reordering) still fails the test; the
    delay line's own accuracy is asserted by its namespace tests (cargo)."""
    timing = [r for r in reasons if r.startswith("delay line")]
    if timing and all(r.startswith(("delay line", "achieved rate")) for r in reasons):
        pytest.skip(f"delay line late on this machine now: {timing[0]}")


def run_valid(data: dict, attempts: int = 2):
    """A testbed run that passed its validity gates. The machine is shared, so a
    run spoiled by a neighbour (an invalid run) is repeated once."""
    from tcpeval.run import run

    for _ in range(attempts):
        result = run(data, backend="testbed")
        if result.summary["validity"]["valid"]:
            return result
    reasons = result.summary["validity"]["reasons"]
    skip_if_the_machine_is_too_noisy(reasons)
    pytest.fail(f"no valid testbed run in {attempts} attempts: {reasons}")


@needs_testbed
def test_two_flows_fill_the_link_at_100mbps_50ms():
    from tcpeval.testbed.runner import BACKLOG_SAVED, BACKLOG_SYSCTL

    # Alone on the machine, the run raises Linux's default backlog limit and,
    # the last one out, puts it back.
    alone = not BACKLOG_SAVED.exists() and not testbed.runs_live()
    machine = BACKLOG_SYSCTL.read_text()
    try:
        if alone:
            BACKLOG_SYSCTL.write_text("1000\n")
        result = run_valid({
            "network": {"bottleneck": "100Mbps", "rtt": "50ms", "buffer": "1bdp"},
            "flows": [{"cc": "cubic", "count": 2}],
            "run": {"duration": "8s", "interval": "0.5s", "measure_from": "2s"},
        })
        if alone:
            assert BACKLOG_SYSCTL.read_text() == "1000\n" and not BACKLOG_SAVED.exists()
    finally:
        if alone:
            BACKLOG_SYSCTL.write_text(machine)
    s = result.summary
    assert s["backend"] == "testbed"
    total = sum(f["throughput_mbps"] for f in s["flows"])
    assert total >= 0.9 * GOODPUT_CEILING_MBPS, total
    # The shaper really is the bottleneck. In-order goodput from 2 s on may
    # exceed its payload rate by what the receivers held out of order at 2 s
    # (a hole from slow start's losses filled after it: CI of 590b0e5 measured
    # 96.93 Mbit/s), at most the path's BDP and buffer; from the start it may
    # not exceed it at all (the gate 'goodput within the shaper's').
    owed_mbps = 2 * (100e6 * 0.050 / 8) * 8 / 6 / 1e6
    assert total <= GOODPUT_CEILING_MBPS + owed_mbps, [f["throughput_mbps"] for f in s["flows"]]
    gate = {g["gate"]: g for g in s["validity"]["gates"]}["goodput within the shaper's"]
    assert gate["ok"] and gate["delivered_bytes"] <= 1.005 * gate["shaper_payload_bytes"] + 250e3
    # The queue overflowed at least once in the run (slow start's overshoot; the
    # window from 2 s on may well have none: CUBIC's next loss is ~8 s away).
    assert s["bottleneck"]["drops_total"] > 0 and s["jain_index"] is not None
    # Queueing on top of the 50 ms base RTT, bounded by one BDP of buffer.
    assert all(50 < f["mean_srtt_ms"] < 105 for f in s["flows"])
    # The receiving namespace's counters: it took the data on its fast path.
    assert all(f["sink_netstat"].get("TCPHPHits", 0) > 0 for f in result.raw["flows"])
    # The receiver ACKs every second segment as they arrive, as the simulator's
    # does, not when the sink process reads (3.25 segments per ACK with an
    # autotuned buffer on this VM) nor every segment while its window grows:
    # the sink's window stays where it pinned it. Segments sent count the
    # retransmissions of slow start's overshoot: 2.04-2.10 measured here.
    for f in result.raw["flows"]:
        assert 1.8 < f["segments_sent"] / f["acks"] < 2.2, (f["segments_sent"], f["acks"])
        w = f["sink_window"]
        bdp = 100e6 * 0.050 / 8
        assert w["rcv_ssthresh_last"] == w["pinned"] >= 10 * bdp, w


@needs_testbed
def test_each_flow_sees_its_own_base_rtt():
    result = run_valid({
        "network": {"bottleneck": "50Mbps", "rtt": "30ms", "buffer": "1bdp"},
        "flows": [{"cc": "reno", "rtt": "30ms"}, {"cc": "cubic", "rtt": "70ms"},
                  {"cc": "bbr", "rtt": "12ms"}],
        "run": {"duration": "5s", "interval": "0.5s"},
    })
    flows = result.raw["flows"]
    for f, want_ms in zip(flows, (30, 70, 12), strict=True):
        # min_rtt comes from the first round trips, while the queue is empty.
        assert abs(f["min_rtt_ns"] / 1e6 - want_ms) <= 2.0, (f["min_rtt_ns"], want_ms)
        assert abs(f["probe_rtt_ns"] / 1e6 - want_ms) <= 2.0, (f["probe_rtt_ns"], want_ms)
    assert [f["kernel_cc"] for f in flows] == ["reno", "cubic", "bbr"]


@needs_testbed
def test_the_tun_fallback_delays_each_flow(monkeypatch):
    if not testbed.check()["tun"]:
        pytest.skip("no /dev/net/tun")
    monkeypatch.setenv(testbed.DELAY_MODE_ENV, "tun")
    result = run_valid({
        "network": {"bottleneck": "50Mbps", "rtt": "40ms", "buffer": "1bdp"},
        "flows": [{"cc": "cubic", "rtt": "40ms"}, {"cc": "reno", "rtt": "16ms"}],
        "run": {"duration": "5s", "interval": "0.5s"},
    })
    assert result.summary["validity"]["delay"] == "tun"
    for f, want_ms in zip(result.raw["flows"], (40, 16), strict=True):
        assert abs(f["probe_rtt_ns"] / 1e6 - want_ms) <= 2.0, (f["probe_rtt_ns"], want_ms)
    assert sum(f["throughput_mbps"] for f in result.summary["flows"]) > 0.8 * 50 * 1448 / 1514


# The rate check below needs this many expected drops: then its 20% tolerance
# is at least 3.5 binomial standard deviations (sqrt(300) = 17.3 drops; 20% of
# 300 is 60), so a correct loss module fails it about once in 2,000 runs.
MIN_EXPECTED_DROPS = 300


def run_with_enough_packets(data: dict, p: float, attempts: int = 2):
    """A valid run that sent enough packets to judge a loss rate p. An idle but
    throttled VM has sent 18,000 packets in 5 s where 40,000 is usual; such a
    run is repeated once, then skipped, saying why: too few samples is not a
    loss-module fault, and widening the tolerance would hide real ones."""
    for _ in range(attempts):
        result = run_valid(data)
        tx = result.raw["links"][0]["tx_packets"]
        if tx * p >= MIN_EXPECTED_DROPS:
            return result
    pytest.skip(f"the host sent only {tx} packets ({tx * p:.0f} expected drops at p = {p}); "
                f"at least {MIN_EXPECTED_DROPS} expected drops are needed to judge a 20% bound")


@needs_testbed
def test_random_loss_matches_the_configured_rate():
    # 2% loss on an undelayed path stays link-limited: about 40,000 packets in
    # 5 s, so about 800 expected drops with a standard deviation near 3.5%.
    p = 0.02
    result = run_with_enough_packets({
        "network": {"bottleneck": "100Mbps", "rtt": "0ms", "buffer": "200pkt", "loss": p},
        "flows": [{"cc": "cubic"}, {"cc": "reno", "start": "1s"}],
        "run": {"duration": "5s", "interval": "0.5s"},
    }, p)
    # The late starter has no goodput before its start, and some after it.
    iv = result.flows[result.flows["flow"] == 1]
    assert iv[iv["t_s"] <= 1.0]["delivered_bytes"].sum() == 0
    assert iv[iv["t_s"] > 2.0]["delivered_bytes"].sum() > 0
    link = result.raw["links"][0]
    measured = link["drops_random"] / link["tx_packets"]
    assert abs(measured - p) <= 0.2 * p, measured
    # The senders see it too: retransmissions per data segment near p.
    sent = sum(f["segments_sent"] for f in result.raw["flows"])
    retx = sum(f["retransmits"] for f in result.raw["flows"])
    assert abs(retx / sent - p) <= 0.3 * p, retx / sent


def _start_cli_run(tmp_path) -> tuple[subprocess.Popen, str]:
    """A 10 s testbed run in a child process; returns it once its traffic flows,
    with its namespace prefix (the run's PID is part of it)."""
    import time

    scenario = tmp_path / "s.toml"
    scenario.write_text('[network]\nbottleneck = "50Mbps"\nrtt = "20ms"\nloss = 0.001\n'
                        '[[flows]]\ncc = "cubic"\ncount = 2\n'
                        '[run]\nduration = "10s"\nbackend = "testbed"\n')
    # SIGINT back to its default in the child: a shell that starts the tests in
    # the background (`make test &`) leaves it ignored, and Python keeps an
    # ignored SIGINT ignored, so Ctrl-C could not be simulated.
    proc = subprocess.Popen([sys.executable, "-m", "tcpeval.cli", "run", str(scenario),
                             "--out", str(tmp_path / "out")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    prefix = f"tcpe-{proc.pid}-"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        mine = [ns for ns in testbed.namespaces() if ns.startswith(prefix)]
        senders = [ns for ns in mine if ns.endswith("s1")]
        if senders and _pids(senders[0]) and _pids(senders[0].replace("s1", "d1")):
            time.sleep(1.0)
            return proc, senders[0][:-2]
        time.sleep(0.2)
    proc.kill()
    pytest.fail(f"the run never started its traffic: {proc.stderr.read()}")


def _pids(ns: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def _run_state(prefix: str) -> tuple[list[str], list[int]]:
    spaces = [ns for ns in testbed.namespaces() if ns.startswith(prefix)]
    return spaces, [pid for ns in spaces for pid in _pids(ns)]


def _alive(pids: list[int]) -> list[int]:
    return [p for p in pids if os.path.exists(f"/proc/{p}")
            and "zombie" not in open(f"/proc/{p}/status").read().lower()]


def _host_rules() -> list[str]:
    out = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    return sorted(line for line in out.splitlines() if line.startswith("-A"))


@needs_testbed
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_run_leaves_nothing_behind(tmp_path, sig):
    rules = _host_rules()
    proc, prefix = _start_cli_run(tmp_path)
    spaces, pids = _run_state(prefix)
    assert len(spaces) == 6 and len(pids) >= 5  # 2 senders, 2 sinks, the delay line
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "interrupted" in stderr
    assert _run_state(prefix) == ([], [])
    assert _alive(pids) == []
    assert _host_rules() == rules
    assert not (tmp_path / "out").exists()


@needs_testbed
def test_after_sigkill_testbed_cleanup_leaves_nothing_behind(tmp_path):
    from tcpeval.testbed.runner import BACKLOG_SAVED, BACKLOG_SYSCTL

    machine_backlog = int(BACKLOG_SAVED.read_text() if BACKLOG_SAVED.exists()
                          else BACKLOG_SYSCTL.read_text())
    proc, prefix = _start_cli_run(tmp_path)
    spaces, pids = _run_state(prefix)
    proc.kill()
    proc.wait(10)
    assert [ns for ns in testbed.namespaces() if ns.startswith(prefix)] == spaces
    p = subprocess.run([sys.executable, "-m", "tcpeval.cli", "testbed", "cleanup",
                        "--prefix", prefix], capture_output=True, text=True)
    assert p.returncode == 0 and f"removed {len(spaces)} namespace(s)" in p.stdout
    assert _run_state(prefix) == ([], [])
    assert _alive(pids) == []
    if not testbed.runs_live():
        assert not BACKLOG_SAVED.exists()         # the killed run's raise was put back
        assert int(BACKLOG_SYSCTL.read_text()) == machine_backlog


# ----- validity gates on synthetic measurements (no root needed) -------------------------


def _plan(**over):
    from tcpeval.testbed.topology import make_plan

    cfg = engine({"network": {"bottleneck": "100Mbps", "rtt": "50ms", "buffer": "1bdp"},
                  "flows": [{"cc": "cubic", "count": 2}], "run": {"duration": "10s"}})
    cfg["network"]["hops"][0].update(over)
    return make_plan(cfg, "tcpe-x-", "nfqueue", "/bin/true")


def test_each_sink_gets_a_fixed_buffer_and_a_window_open_from_the_first_ack():
    """The sink's route asks for an initial window of SINK_INITRWND segments
    and its endpoint a buffer of at least 64 MiB and four BDPs (the window
    the simulator's receiver never limits; docs/testbed.md)."""
    from tcpeval.testbed import runner, topology

    plan = _plan()
    routes = [argv for ns, argv in topology.link_commands(plan)
              if ns in {f.sink for f in plan.flows} and argv[:3] == ["ip", "route", "add"]]
    assert len(routes) == 2
    assert all(r[r.index("initrwnd") + 1] == str(topology.SINK_INITRWND) for r in routes)
    assert plan.sink_buffer() == 64 << 20
    long_fat = _plan(rate_bps=1e9)
    long_fat.flows[0].rtt_s = 0.2  # BDP 25 MB: four of them
    assert long_fat.sink_buffer() == 100_000_000
    args = runner.sink_args(plan, plan.flows[0])
    assert args[args.index("--rcvbuf") + 1] == str(64 << 20)
    assert "--window-clamp" not in args


def _queue(**over):
    return {"queue": 1, "pkts": 10_000, "late_mean_us": 40.0, "late_max_us": 3000.0,
            "enobufs": 0, "dropped": 0, "maxdepth": 300, "capacity": 65536,
            "no_kernel_ts": 0, **over}


@pytest.mark.parametrize("over,ok", [
    ({}, True),
    ({"late_mean_us": 600.0}, False),      # 1.2% of a 50 ms RTT
    ({"late_max_us": 20_000.0}, False),
    ({"enobufs": 3}, False),
    ({"maxdepth": 65536}, False),
    ({"no_kernel_ts": 500}, False),
])
def test_delay_line_gate(over, ok):
    from tcpeval.testbed import gates

    [g] = gates.delay_line(_plan(), {"queues": [_queue(**over)]})
    assert g["ok"] is ok


def test_delay_line_gate_counts_late_releases_from_the_histogram():
    from tcpeval.testbed import gates

    edges = [50, 100, 200, 500, 1000, 2000, 5000]
    q = _queue(late_hist=[9000, 500, 300, 150, 40, 7, 2, 1])
    [g] = gates.delay_line(_plan(), {"queues": [q], "late_edges_us": edges})
    assert g["late_500us_pkts"] == 40 + 7 + 2 + 1
    assert "50 released 500 us late or more" in g["detail"]
    assert gates.late_at_least({"late_edges_us": edges}, q, 50) == 1000
    assert gates.late_at_least({"late_edges_us": edges}, q, 300) is None
    [old] = gates.delay_line(_plan(), {"queues": [_queue()]})  # a delay line without one
    assert "late or more" not in old["detail"] and "late_500us_pkts" not in old


def test_a_stall_spoils_only_a_run_of_an_algorithm_reacting_to_one_delay_sample():
    from tcpeval.testbed import gates

    edges = [50, 100, 200, 500, 1000, 2000, 5000]
    stalled = {"queues": [_queue(late_hist=[9990, 5, 2, 2, 0, 1, 0, 0])], "late_edges_us": edges}
    calm = {"queues": [_queue(late_hist=[9990, 5, 2, 2, 1, 0, 0, 0])], "late_edges_us": edges}
    lp = _plan()
    for f in lp.flows:
        f.cc = "hstcp-lp"
    assert gates.delay_line(_plan(), stalled)[0]["ok"]        # CUBIC: within the limits
    [g] = gates.delay_line(lp, stalled)
    assert not g["ok"] and "1 released 1000 us late or more (limit 0" in g["detail"]
    assert gates.delay_line(lp, calm)[0]["ok"]                # 0.5-1 ms late: allowed


def _raw(retx, drops, reorder=0, dsack=0):
    flow = {"retransmits": retx, "segments_sent": 100_000, "reordering_events": reorder,
            "netstat": {"TCPDSACKRecv": dsack}}
    return {"flows": [flow, {**flow, "retransmits": 0, "reordering_events": 0,
                             "netstat": {}}],
            "links": [{"drops_overflow": drops, "drops_random": 0}]}


@pytest.mark.parametrize("retx,drops,dsack,ok", [
    (100, 100, 0, True), (500, 100, 0, False), (500, 100, 400, True), (40, 0, 0, False)])
def test_retransmissions_must_be_explained_by_bottleneck_drops(retx, drops, dsack, ok):
    from tcpeval.testbed import gates

    m = {"device_drops": {}, "softnet_drops": 0}
    verdicts = gates.drops(_plan(), _raw(retx, drops, dsack=dsack), m)
    assert verdicts[0]["ok"] and verdicts[1]["ok"] is ok
    m = {"device_drops": {"tcpe-x-rl/ls0": 2}, "softnet_drops": 0}
    assert not gates.drops(_plan(), _raw(retx, drops, dsack=dsack), m)[0]["ok"]


def test_reordering_gate():
    from tcpeval.testbed import gates

    assert gates.reordering(_plan(), _raw(0, 0, reorder=2))[0]["ok"]
    assert not gates.reordering(_plan(), _raw(0, 0, reorder=50))[0]["ok"]


def test_a_sink_window_that_grew_fails_its_gate():
    from tcpeval.testbed import gates

    pinned = {"pinned": 33_579_120, "rcvbuf": 64 << 20, "rcv_ssthresh_last": 33_579_120}
    grew = {**pinned, "rcv_ssthresh_last": 41_000_000}
    assert gates.sink_window({"flows": [{"sink_window": pinned}, {"sink_window": None}]})[0]["ok"]
    [g] = gates.sink_window({"flows": [{"sink_window": pinned}, {"sink_window": grew}]})
    assert not g["ok"] and "flow 1: pinned 33579120 B, grew to 41000000 B" in g["detail"]


def test_a_sample_is_stamped_with_the_tightest_clock_bracket_around_its_read(monkeypatch):
    from tcpeval.testbed import endpoint

    # Descheduled for 80 ms between the first read's clock readings, then 0.4 ms.
    clock = iter([2.0, 2.08, 2.09, 2.0904])
    monkeypatch.setattr(endpoint, "now", lambda t0: next(clock))
    reads = iter([111, 222, 333])
    t, span, value = endpoint.timed(0.0, lambda: next(reads))
    assert value == 222 and abs(t - 2.0902) < 1e-9 and abs(span - 0.0004) < 1e-9
    # Never within the bracket: the tightest of the tries, span reported.
    clock = iter([0.0, 0.05, 1.0, 1.02, 2.0, 2.03])
    reads = iter([1, 2, 3])
    assert endpoint.timed(0.0, lambda: next(reads)) == (1.01, 0.020000000000000018, 2)


def test_a_sample_read_far_from_its_stamp_fails_its_gate():
    from tcpeval.testbed import gates

    [g] = gates.sample_timing({"flows": [{"sample_span_max_s": 0.0004},
                                         {"sample_span_max_s": 0.0003}]})
    assert g["ok"]
    [g] = gates.sample_timing({"flows": [{"sample_span_max_s": 0.0004},
                                         {"sample_span_max_s": 0.08}]})
    assert not g["ok"] and "80.00 ms (limit 5 ms)" in g["detail"]


def test_a_small_buffer_or_random_loss_is_not_a_saturating_run():
    from tcpeval.testbed import gates

    assert gates.saturating(_plan())
    assert not gates.saturating(_plan(buffer_pkts=50))
    assert not gates.saturating(_plan(loss=0.01))


def _rate_run(plan, mbps_delivered: float, busy_mbps: float, backlog: int):
    """A 10 s run reported and sampled every 0.1 s (the plan's interval):
    goodput `mbps_delivered`, and the shaper carrying `busy_mbps` with
    `backlog` bytes queued."""
    step, n = plan.interval_s, 100
    assert step == 0.1
    t_ns = [int(round((k + 1) * step * 1e9)) for k in range(n)]
    raw = {"intervals": {"t_ns": t_ns, "delivered_bytes": [mbps_delivered * 1e6 / 8 * step] * n},
           "links": [{"tx_bytes": busy_mbps * 1e6 / 8 * 10}]}
    samples = [{"t": k * step, "fwd": {"bytes": busy_mbps * 1e6 / 8 * step * k,
                                       "backlog": backlog}}
               for k in range(n + 1)]
    return raw, samples


def test_an_algorithm_that_does_not_promise_to_fill_is_judged_by_the_busy_shaper():
    from tcpeval.testbed import gates
    from tcpeval.testbed.topology import make_plan

    def plan(cc):
        cfg = engine({"network": {"bottleneck": "100Mbps", "rtt": "50ms", "buffer": "1bdp"},
                      "flows": [{"cc": cc, "count": 2}],
                      "run": {"duration": "10s", "interval": "0.1s"}})
        return make_plan(cfg, "tcpe-x-", "nfqueue", "/bin/true")

    def verdict(cc, delivered, busy, backlog):
        raw, samples = _rate_run(plan(cc), delivered, busy, backlog)
        return {g["gate"]: g["ok"] for g in gates.rate(plan(cc), raw, samples)}

    # 0.1 s of the link is 1.25 MB: a queue that size keeps it busy for a step.
    deep, shallow = 1_300_000, 1_200_000
    # Two LP flows leaving a fifth of the link idle: valid while the shaper works.
    assert verdict("lp", 60.8, 99.0, deep) == {
        "bottleneck rate": True, "goodput within the shaper's": True, "rate while busy": True}
    assert verdict("lp", 60.8, 60.8, deep)["rate while busy"] is False, "a slow shaper"
    # A queue the link could drain within a step may have left it idle: not judged.
    assert verdict("lp", 60.8, 60.8, shallow)["rate while busy"] is True
    assert verdict("westwood", 80.0, 99.0, deep)["rate while busy"] is True
    # CUBIC promises to fill the link: its goodput is judged.
    assert verdict("cubic", 60.8, 99.0, deep) == {
        "bottleneck rate": True, "goodput within the shaper's": True, "achieved rate": False}
    # More goodput than the shaper carried payload is a measurement fault (CI
    # of 590b0e5: 96.93 Mbit/s through a 100 Mbit/s shaper, 95.64 of payload).
    assert verdict("cubic", 95.5, 99.94, deep)["goodput within the shaper's"] is True
    assert verdict("cubic", 96.93, 99.94, deep)["goodput within the shaper's"] is False


def test_in_order_goodput_is_judged_by_the_shaper_from_the_start_only():
    """Bytes received out of order before 2 s and delivered when the hole is
    filled just after it: more than the link's rate from 2 s on, a valid run.
    The same bytes counted before the shaper carried them (a sample read
    after its stamp) or 1.35% too much over the run: invalid."""
    from tcpeval.testbed import gates
    from tcpeval.testbed.topology import make_plan

    cfg = engine({"network": {"bottleneck": "100Mbps", "rtt": "50ms", "buffer": "1bdp"},
                  "flows": [{"cc": "cubic"}], "run": {"duration": "10s", "interval": "0.1s"}})
    plan = make_plan(cfg, "tcpe-x-", "nfqueue", "/bin/true")
    wire = 100e6 / 8 * 0.1  # bytes per 0.1 s
    samples = [{"t": k * 0.1, "fwd": {"bytes": wire * k}} for k in range(101)]
    t = np.round(np.arange(1, 101) * 0.1, 9)
    d = np.full(len(t), wire * 1448 / 1514)
    assert gates.within_shaper(plan, t, d, samples)["ok"]
    hole = d.copy()
    hole[t == 2.0] -= 800_000
    hole[t == 2.1] += 800_000
    assert gates.within_shaper(plan, t, hole, samples)["ok"]
    early = d.copy()
    early[t == 2.0] += 800_000
    early[t == 2.1] -= 800_000
    g = gates.within_shaper(plan, t, early, samples)
    assert not g["ok"] and "closest at 2.0 s" in g["detail"], g["detail"]
    assert not gates.within_shaper(plan, t, d * 1.0135, samples)["ok"]


def _lp_or(cc: str, interval: str = "1s"):
    from tcpeval.testbed.topology import make_plan

    cfg = engine({"network": {"bottleneck": "100Mbps", "rtt": "50ms", "buffer": "1bdp"},
                  "flows": [{"cc": cc}], "run": {"duration": "10s",
                                                 "trace_interval": interval}})
    return make_plan(cfg, "tcpe-x-", "nfqueue", "/bin/true")


def test_the_busy_gate_gets_5_ms_bottleneck_samples():
    from tcpeval.testbed import runner

    assert runner.sample_step(_lp_or("lp")) == runner.BUSY_STEP_S == 0.005
    assert runner.sample_step(_lp_or("reno")) == 1.0, "the trace interval otherwise"
    assert runner.sample_step(_lp_or("reno", "10ms")) == runner.SAMPLE_MIN_S


def test_a_queue_trace_keeps_one_sample_per_trace_interval():
    """Sampled every 0.05 s (late by up to 4 ms), traced every 1 s: each trace
    time takes the sample nearest it, once."""
    from tcpeval.testbed import results

    plan = _lp_or("lp")
    samples = [{"t": k * 0.05 + 0.004 * (k % 2),
                "fwd": {"qlen": k, "backlog": 1500 * k}, "rev": {"qlen": 0, "backlog": 0}}
               for k in range(201)]
    q = results.queue(plan, {"samples": samples})
    fwd = [(t, n) for t, link, n in zip(q["t_ns"], q["link"], q["queue_pkts"], strict=True)
           if link == results.LINKS[0][0]]
    assert fwd == [(k * 1_000_000_000, 20 * k) for k in range(11)]


def test_a_grid_cell_is_found_by_its_name():
    from tcpeval.testbed import grid

    for cell in grid.cells(["reno", "hstcp-lp"]):
        assert grid.Cell.parse(cell.name) == cell


def test_a_stored_comparison_is_rescored_by_the_simulator_alone(examples):
    """--rescore keeps the kernel's side as measured and runs the simulator's
    again: a comparison whose 'kernel' side was the simulator itself rescores
    to zero differences, and one whose kernel carried 10% more keeps +10%."""
    from tcpeval.run import run_resolved
    from tcpeval.scenario import load_scenario, resolve
    from tcpeval.testbed import grid
    from tcpeval.testbed.compare import at_kernel_starts, rescore, side_by_side

    path = examples / "testbed_dumbbell.toml"
    cell = grid.Cell("reno", 2, 20, 1.0)
    overrides = [*cell.overrides(), 'run.duration="4s"', 'run.measure_from="1s"']
    resolved = resolve(load_scenario(path, [*overrides, 'run.backend="testbed"']), seed=1,
                       base_dir=path.parent)
    sim = run_resolved(at_kernel_starts(resolved, [])).summary
    stored = {**side_by_side(sim, sim), "cell": cell.name,
              "testbed_runs": {"needed": 2, "invalid_reasons": [["a gate"]]}}
    again = rescore(path, stored, overrides=overrides, seed=1)
    assert again["aggregate_mbps"]["rel_diff"] == 0
    assert all(f["throughput_mbps"]["rel_diff"] == 0 for f in again["flows"])
    assert again["testbed_runs"] == stored["testbed_runs"]
    for f in stored["flows"]:
        f["throughput_mbps"]["testbed"] *= 1.1
    faster = rescore(path, stored, overrides=overrides, seed=1)
    assert all(abs(f["throughput_mbps"]["rel_diff"] - 0.1) < 1e-9 for f in faster["flows"])
    assert faster["flows"][0]["throughput_mbps"]["sim"] == sim["flows"][0]["throughput_mbps"]
    # The grid's own loop: the cell from the line's name, seeds 1, 2, ... in order.
    seen = []

    def short(scenario, row, *, overrides, seed):
        seen.append((overrides, seed))
        return rescore(scenario, row, overrides=[*overrides, *overrides_run], seed=seed)

    overrides_run = overrides[len(cell.overrides()):]
    (result,) = grid.rescore_cells(path, [stored], short)
    assert seen == [(cell.overrides(), 1)]
    assert result["cell"] == cell and result["runs"] == 2
    assert abs(result["stats"]["aggregate"][0] - 0.1) < 1e-9


def test_the_simulator_side_starts_each_flow_when_the_kernel_connected():
    from tcpeval.testbed.compare import at_kernel_starts

    resolved = resolve(load_scenario({"run": {"backend": "testbed"},
                                      "flows": [{"cc": "cubic", "count": 3}]}))
    kernel = [{"id": 0, "connect_ns": 1_200_000}, {"id": 1, "connect_ns": 4_500_000},
              {"id": 2}]  # a run that recorded no connect time keeps its start
    sim = at_kernel_starts(resolved, kernel)
    assert sim["meta"]["backend"] == "sim"
    assert [f["start_ns"] for f in sim["flows"]] == [1_200_000, 4_500_000, 0]
    assert [f["start_ns"] for f in resolved["flows"]] == [0, 0, 0], "the kernel's copy is kept"


def test_two_cubic_flows_a_fraction_of_a_millisecond_apart_split_unevenly():
    """Why compare-backends starts the simulator's flows at the kernel's connect
    times: at 100 ms and 2 BDP the later flow's HyStart meets the earlier one's
    queue and leaves slow start at half its window; the kernel's senders always
    start milliseconds apart, and the kernel gave the larger flow 0.74 of the link."""
    def shares(second_start: str) -> list[float]:
        sc = {"network": {"bottleneck": "100Mbps", "rtt": "100ms", "buffer": "2bdp"},
              "flows": [{"cc": "cubic"}, {"cc": "cubic", "start": second_start}],
              "run": {"duration": "20s", "measure_from": "5s"}}
        t = [f["throughput_mbps"] for f in tcpeval.run(sc).summary["flows"]]
        return [x / sum(t) for x in t]

    assert max(shares("0s")) < 0.52
    assert max(shares("0.3ms")) > 0.7


def test_relative_difference():
    from tcpeval.testbed.compare import rel

    assert rel(50.0, 45.0) == pytest.approx(-0.1)
    assert rel(0.0, 1.0) is None and rel(None, 1.0) is None


@needs_testbed
def test_compare_backends_puts_simulator_and_kernel_side_by_side(tmp_path):
    scenario = tmp_path / "c.toml"
    scenario.write_text('[network]\nbottleneck = "50Mbps"\nrtt = "10ms"\nbuffer = "1bdp"\n'
                        '[[flows]]\ncc = "reno"\n'
                        '[run]\nduration = "4s"\ninterval = "0.5s"\nmeasure_from = "1s"\n')
    p = subprocess.run([sys.executable, "-m", "tcpeval.cli", "compare-backends", str(scenario),
                        "--json"], capture_output=True, text=True)
    if p.returncode == 1 and "no valid testbed run" in p.stderr:
        skip_if_the_machine_is_too_noisy(
            [line.strip()[2:] for line in p.stderr.splitlines() if line.strip().startswith("- ")])
    assert p.returncode == 0, p.stderr
    cmp = json.loads(p.stdout)
    [flow] = cmp["flows"]
    t = flow["throughput_mbps"]
    assert t["rel_diff"] == pytest.approx((t["testbed"] - t["sim"]) / t["sim"])
    # One Reno flow with a BDP of buffer fills the link on both backends; they
    # differ by the Ethernet header the kernel's shaper charges (about 1%).
    assert abs(cmp["aggregate_mbps"]["rel_diff"]) < 0.05
    # Each backend's own Jain index of one flow: 1 up to rounding (the testbed's
    # has come out 1.0000000000000002, so the two are not compared exactly).
    assert cmp["jain_index"]["sim"] == pytest.approx(1.0)
    assert cmp["jain_index"]["testbed"] == pytest.approx(1.0)
    assert "achieved rate" in cmp["testbed_gates"]


def test_an_invalid_testbed_run_is_a_failed_sweep_point(monkeypatch):
    from tcpeval import sweep

    run_mod = importlib.import_module("tcpeval.run")  # the package exports run() as `run`
    resolved = resolve(load_scenario({"run": {"backend": "testbed"}, "flows": [{}]}))
    invalid = {"validity": {"valid": False, "reasons": ["reordering near zero: 99 events"]}}
    monkeypatch.setattr(run_mod, "run_backend", lambda r: (invalid, 1.0))
    key, result, error = sweep.execute(sweep.RunSpec({}, 0, 1, resolved))
    assert result is None and "invalid run" in error and "reordering" in error


def test_the_cli_exits_1_on_an_invalid_run_and_says_why(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from tcpeval import cli

    run_mod = importlib.import_module("tcpeval.run")
    sim = run_mod.simulate

    def fake(resolved):  # a simulator result carrying a failed verdict
        raw = sim(engine_config(resolved))
        raw["validity"] = {"valid": False, "reasons": ["bottleneck rate: carried 130 Mbit/s"]}
        return raw, 0.1

    monkeypatch.setattr(run_mod, "run_backend", fake)
    scenario = tmp_path / "s.toml"
    scenario.write_text('[network]\nbottleneck = "10Mbps"\nrtt = "20ms"\n[[flows]]\n'
                        '[run]\nduration = "2s"\n')
    r = CliRunner().invoke(cli.app, ["run", str(scenario), "--out", str(tmp_path / "o")])
    assert r.exit_code == 1 and "invalid run" in r.output and "carried 130" in r.output
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["validity"]["valid"] is False


def _raw_line(cell: str = "reno x2 20 ms 1 BDP") -> dict:
    side = {"sim": 1.0, "testbed": 1.0, "rel_diff": 0.0}
    flow = {"throughput_mbps": side, "srtt_ms": side, "retransmits": side, "start_ms": 0.0}
    return {"cell": cell, "flows": [flow, flow], "jain_index": side, "utilization": side,
            "drops": side, "aggregate_mbps": side, "testbed_runs": {"needed": 1}}


def test_a_raw_file_is_checked_line_by_line_before_rescoring():
    from tcpeval.testbed import grid

    good = json.dumps(_raw_line())
    assert len(grid.read_raw(f"{good}\n\n{good}\n")) == 2
    broken = [_raw_line("reno x2 20 ms"), {k: v for k, v in _raw_line().items() if k != "drops"},
              {**_raw_line(), "flows": [{"start_ms": 0}]}, {**_raw_line(), "cell": 7}]
    for row in broken:
        with pytest.raises(ValueError, match="line 2: not a grid comparison"):
            grid.read_raw(f"{good}\n{json.dumps(row)}\n")
    with pytest.raises(ValueError, match="line 1"):
        grid.read_raw("{not json\n")
    with pytest.raises(ValueError, match="no comparisons"):
        grid.read_raw("\n")


def test_rescore_refuses_a_bad_file_with_exit_2_but_lets_a_simulator_fault_through(
        tmp_path, monkeypatch, capsys):
    from tcpeval.testbed import __main__ as cli
    from tcpeval.testbed import grid

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"cell": "reno x2 20 ms 1 BDP"}\n')
    assert cli.main(["grid", "--rescore", str(bad)]) == 2
    assert "bad.jsonl: line 1: not a grid comparison" in capsys.readouterr().err

    def fault(*_args):
        raise KeyError("inside the engine")

    monkeypatch.setattr(grid, "rescore_cells", fault)
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(_raw_line()) + "\n")
    with pytest.raises(KeyError, match="inside the engine"):
        cli.main(["grid", "--rescore", str(good)])


DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_grid_page_is_made_from_its_stored_comparisons():
    """docs/testbed-grid.md is what `make testbed-grid-page` makes of
    docs/testbed-grid/: no number on it is typed by hand."""
    from tcpeval.testbed import grid

    assert grid.page(DOCS / "testbed-grid") == (DOCS / "testbed-grid.md").read_text(), \
        "docs/testbed-grid.md is stale: run `make testbed-grid-page`"


def test_the_grid_page_counts_cells_from_the_data(tmp_path):
    from tcpeval.testbed import grid

    fair = _raw_line("reno x1 20 ms 1 BDP")
    skewed = _raw_line("reno x2 50 ms 1 BDP")
    skewed["flows"] = [{**f, "throughput_mbps": {"sim": 50.0, "testbed": t, "rel_diff": 0.0}}
                       for f, t in zip(skewed["flows"], (20.0, 80.0), strict=True)]
    (tmp_path / "reno.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in (fair, fair, skewed, skewed)))
    (tmp_path / "runs.toml").write_text('[reno]\nkernel = "then"\nsimulator = "abc"\n')
    with pytest.raises(ValueError, match="runs.toml: no sink for reno"):
        grid.page(tmp_path)
    (tmp_path / "runs.toml").write_text(
        '[reno]\nkernel = "then"\nsink = "pinned"\nsimulator = "abc"\n')
    text = grid.page(tmp_path)
    # The kernel split 20/80 both times, the simulator 50/50: a shown miss.
    assert "| reno | 1 of 2 | 1 | 4 | 4 | then | pinned | abc |" in text
    assert "| **all** | 1 of 2 | 1 | 4 | 4 |" in text
    assert "misses: x2 50 ms 1 BDP (share); shown by the whole interval: x2 50 ms 1 BDP" in text
    assert "| -0.300 ± 0.000 |" in text
    assert "Not yet run: cubic, bbr," in text
    (tmp_path / "runs.toml").write_text('[cubic]\nkernel = "then"\nsimulator = "abc"\n')
    with pytest.raises(ValueError, match="runs.toml: no entry for reno"):
        grid.page(tmp_path)
    (tmp_path / "renoo.jsonl").write_text(json.dumps(fair) + "\n")
    with pytest.raises(ValueError, match="renoo: not a grid algorithm"):
        grid.page(tmp_path)


def test_the_default_grid_skips_what_this_machine_does_not_offer(capsys):
    from tcpeval.testbed import __main__ as cli
    from tcpeval.testbed import grid

    offers = {cc: {"how": "kernel"} for cc in grid.KERNEL}
    assert cli._default_ccs(offers) == list(grid.KERNEL)
    assert "skipped: bic, compound" in capsys.readouterr().err
    every = {cc: {"how": "bpf"} for cc in grid.algorithms()}
    assert cli._default_ccs(every) == grid.algorithms()
    assert capsys.readouterr().err == ""


def test_runs_raise_the_cpu_backlog_limit_and_the_last_one_out_puts_it_back(tmp_path):
    from tcpeval.testbed import runner

    limit, saved = tmp_path / "netdev_max_backlog", tmp_path / "saved"
    limit.write_text("1000\n")
    runner.raise_backlog(10_000, limit, saved)
    assert limit.read_text() == "10000\n" and saved.read_text() == "1000\n"
    runner.raise_backlog(10_000, limit, saved)        # a second run: the saved value stays
    assert saved.read_text() == "1000\n"
    assert runner.restore_backlog(limit, saved) and limit.read_text() == "1000\n"
    assert not saved.exists() and not runner.restore_backlog(limit, saved)
    limit.write_text("50000\n")                      # already high enough: untouched
    runner.raise_backlog(10_000, limit, saved)
    assert limit.read_text() == "50000\n" and not saved.exists()


def test_the_bottleneck_spaces_bursts_at_its_peak_rate_both_ways():
    """tbf's bucket would pass a burst after an idle spell at the veth's speed;
    a one-frame peak bucket at 1.5 R spaces it, as the simulator's link does."""
    from tcpeval.testbed import topology

    plan = _plan()
    tbfs = [argv for _, argv in topology.bottleneck_commands(plan) if "tbf" in argv]
    assert [a[a.index("dev") + 1] for a in tbfs] == ["bnl", "bnr"]
    for argv in tbfs:
        assert argv[argv.index("rate") + 1] == "100000000bit"
        assert argv[argv.index("peakrate") + 1] == "150000000bit"
        assert argv[argv.index("mtu") + 1] == "1514"
        assert int(argv[argv.index("burst") + 1]) == 12_500      # R x 1 ms
