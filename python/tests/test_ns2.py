"""The ns-2.35 TCP-Linux peer: the Tcl translation (pure), its refusals, the
output parser, the cross-check's verdicts, and one tiny run when `ns` exists."""

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcpeval.errors import ScenarioError
from tcpeval.ns2 import crosscheck as cx
from tcpeval.ns2 import ns_binary, script_for
from tcpeval.ns2.__main__ import BEGIN, END, _write, main, markers
from tcpeval.ns2.runner import cwnd_trace, parse_output, summarize
from tcpeval.ns2.translate import bottleneck


def _scenario(**net) -> dict:
    network = {"bottleneck": "100Mbps", "rtt": "50ms", "buffer": "1bdp", **net}
    return {"network": network, "flows": [{"cc": "cubic"}],
            "run": {"duration": "10s", "measure_from": "2s"}}


def _tcl(data: dict, overrides=()) -> str:
    return script_for(data, overrides)[0].tcl


def _value(tcl: str, pattern: str) -> str:
    m = re.search(pattern, tcl, re.M)
    assert m, f"no line matches {pattern!r}"
    return m.group(1)


def test_dumbbell_lines():
    tcl = _tcl(_scenario(loss=1e-3))
    assert "$ns simplex-link $A $B 100000000 0.0 DropTail" in tcl
    # 1 BDP = 100 Mbit/s x 50 ms / 1500 B = 416.7 packets, rounded up.
    assert _value(tcl, r"^\$ns queue-limit \$A \$B (\d+)$") == "417"
    assert _value(tcl, r"^\$ns duplex-link \$s\(0\) \$A 1000000000 (\S+) DropTail$") == "0.025"
    assert '"$tcp(0) select_ca cubic"' in tcl
    assert "$tcp(0) set packetSize_ 1448" in tcl and "tcpip_base_hdr_size_ 40" in tcl
    assert "ts_option_size_ 12" in tcl and "$sink(0) set packetSize_ 52" in tcl
    assert "$tcp(0) set windowInit_ 10" in tcl
    assert "new Agent/TCPSink/Sack1/DelAck" in tcl and "$sink(0) set interval_ 0.04" in tcl
    assert "$em set rate_ 0.001" in tcl and "$ns lossmodel $em $A $B" in tcl
    assert '$ns at 2.0 "mark from"' in tcl and '$ns at 10.0 "mark end; close $out; exit 0"' in tcl


def test_no_loss_model_without_loss_and_plain_sink_without_sack():
    data = _scenario()
    data["flows"][0].update(sack=False, delayed_ack=False, initial_cwnd=2)
    tcl = _tcl(data)
    assert "ErrorModel" not in tcl
    assert "new Agent/TCPSink]" in tcl and "DelAck" not in tcl
    assert "$tcp(0) set windowInit_ 2" in tcl


def test_params_map_to_the_2_6_22_module():
    data = _scenario()
    data["flows"][0]["params"] = {"beta": 0.8, "hystart": False, "fast_convergence": False}
    tcl = _tcl(data)
    assert '"$tcp(0) set_ca_param cubic beta 819"' in tcl       # round(0.8 x 1024)
    assert '"$tcp(0) set_ca_param cubic fast_convergence 0"' in tcl
    assert "hystart" not in tcl


def test_native_agents():
    data = _scenario()
    data["flows"] = [{"cc": "highspeed"}, {"cc": "reno", "sack": False},
                     {"cc": "vegas", "params": {"alpha": 1, "beta": 3}}]
    tcl = script_for(data, agents="native")[0].tcl
    assert "set tcp(0) [new Agent/TCP/Sack1]" in tcl and "$tcp(0) set windowOption_ 8" in tcl
    assert "set tcp(1) [new Agent/TCP/Newreno]" in tcl
    assert "set tcp(2) [new Agent/TCP/Vegas]" in tcl and "$tcp(2) set v_alpha_ 1" in tcl
    assert "select_ca" not in tcl and "Agent/TCP/Linux" not in tcl
    with pytest.raises(ScenarioError, match=r"flows\[0\].cc: 'cubic' has no ns-2 native agent"):
        script_for(_scenario(), agents="native")


def test_abc_is_set_only_when_asked():
    assert "sysctl_tcp_abc" not in _tcl(_scenario())
    tcl = script_for(_scenario(), abc=0)[0].tcl
    assert '"$tcp(0) set_ca_default_param linux sysctl_tcp_abc 0"' in tcl
    with pytest.raises(ValueError, match="abc"):
        script_for(_scenario(), agents="native", abc=0)


def test_red_defaults_follow_tcpeval():
    tcl = _tcl(_scenario(queue="red", buffer="300pkt"))
    assert float(_value(tcl, r"set maxthresh_ (\S+)$")) == 150
    assert float(_value(tcl, r"set thresh_ (\S+)$")) == 50
    assert float(_value(tcl, r"set linterm_ (\S+)$")) == pytest.approx(10)
    assert float(_value(tcl, r"set q_weight_ (\S+)$")) == pytest.approx(
        1 - math.exp(-1 / (1e8 / 12000)))


def test_byte_buffer_counts_bytes():
    tcl = _tcl(_scenario(buffer="2MB"))
    assert "queue-in-bytes_ true" in tcl
    assert _value(tcl, r"^\$ns queue-limit \$A \$B (\d+)$") == "2000000"


@settings(max_examples=30, deadline=None)
@given(rate_mbps=st.integers(1, 10_000), rtt_ms=st.integers(2, 400),
       share=st.sampled_from([0.2, 0.5, 1.0, 2.0]), delay_ms=st.integers(0, 1))
def test_buffer_and_delays_follow_the_scenario(rate_mbps, rtt_ms, share, delay_ms):
    data = _scenario(bottleneck=f"{rate_mbps}Mbps", rtt=f"{rtt_ms}ms",
                     buffer=f"{share}bdp", bottleneck_delay=f"{delay_ms}ms")
    script, resolved = script_for(data)
    tcl = script.tcl
    bdp_pkts = rate_mbps * 1e6 * rtt_ms / 1e3 / 8 / 1500
    limit = int(_value(tcl, r"^\$ns queue-limit \$A \$B (\d+)$"))
    # tcpeval's own packets (rounded up), whatever float rounding it met.
    assert limit == bottleneck(resolved["network"])["buffer_pkts"]
    assert share * bdp_pkts - 1e-6 <= limit < share * bdp_pkts + 1 + 1e-6
    access = float(_value(tcl, r"^\$ns duplex-link \$s\(0\) \$A \d+ (\S+) DropTail$"))
    hop_delay = float(_value(tcl, r"^\$ns simplex-link \$A \$B \d+ (\S+) DropTail$"))
    assert 2 * (access + hop_delay) == pytest.approx(rtt_ms / 1e3, abs=1e-9)


@pytest.mark.parametrize("override, field", [
    ("flows.0.cc=fast", "flows[0].cc"),
    ("flows.0.direction=reverse", "flows[0].direction"),
    ("flows.0.bytes=1MB", "flows[0].bytes"),
    ("flows.0.txqueuelen=100", "flows[0].txqueuelen"),
    ("flows.0.params={hystart=true}", "flows[0].params.hystart"),
    ("flows.0.params={c=0.4,hystart_detect=2}", "flows[0].params.hystart_detect"),
    ("network.queue=red", "network.buffer"),
    ("network.queue=codel", "network.queue"),
    ("network.queue=fq_codel", "network.queue"),
    ("run.backend=testbed", "run.backend"),
])
def test_refusals_name_the_field(override, field):
    data = _scenario(buffer="2MB")
    with pytest.raises(ScenarioError, match=re.escape(field) + ".*ns-2 peer"):
        _tcl(data, [override])


def test_refuses_background_udp_and_parking_lot():
    for extra, field in [({"udp": [{"rate": "10%"}]}, "udp"),
                         ({"background": {"web": [{"load": 0.1}]}}, "background")]:
        with pytest.raises(ScenarioError, match=f"^{field}:"):
            _tcl({**_scenario(), **extra})
    lot = _scenario()
    lot["network"] = {"hops": [{"rate": "100Mbps"}, {"rate": "50Mbps"}], "rtt": "50ms"}
    with pytest.raises(ScenarioError, match="^network.hops:"):
        _tcl(lot)


def test_bad_input_exits_2(capsys, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[[flows]]\ncc = "bbr"\n')
    assert main(["tcl", str(path)]) == 2
    assert "flows[0].cc" in capsys.readouterr().err
    assert main(["crosscheck", "--seeds", "x"]) == 2
    assert "--seeds" in capsys.readouterr().err
    assert main(["crosscheck", "--match", "no such cell"]) == 2


def test_summary_from_output():
    script, resolved = script_for(_scenario(), ["flows.0.count=2"])
    out = "\n".join(["cwnd 1.0 10 20", "from 0 1000 5 0", "from 1 500 0 0", "cwnd 2.0 30 40",
                     "from-q 100 3 150000", "cwnd 3.0 50 60", "end 0 3000 7 1",
                     "end 1 500 2 0", "end-q 900 4 1150000"])
    s = summarize(parse_output(out, script), script, resolved["meta"]["logical_flows"], 1, 0.1)
    first, second = s["flows"]
    assert first["throughput_mbps"] == pytest.approx(2000 * 1448 * 8 / 8 / 1e6)
    assert (first["retransmits"], first["retransmits_total"], first["timeouts"]) == (2, 7, 1)
    assert second["throughput_mbps"] == 0 and second["retransmits"] == 2
    assert first["mean_cwnd_pkts"] == pytest.approx(40)        # samples at t >= 2 s
    assert s["bottleneck"]["drops"] == 1
    assert s["bottleneck"]["utilization"] == pytest.approx(1e6 * 8 / (1e8 * 8))
    assert s["jain_index"] == pytest.approx(0.5)
    trace = cwnd_trace(parse_output(out, script), script)
    assert trace == {"t_s": [1.0, 2.0, 3.0],
                     "cwnd_pkts": {"cubic-0": [10, 30, 50], "cubic-1": [20, 40, 60]}}


def test_verdicts():
    single = cx.Cell("single", "bic", "1Gbps", 100, 1.0, loss=1e-4)
    assert cx.verdict(single, [105.0, 107.0], [100.0, 100.0]) == (pytest.approx(1.06), "ok")
    assert cx.verdict(single, [120.0], [100.0])[1] == "unresolved"   # one seed: no interval
    assert cx.verdict(single, [120.0, 121.0], [100.0, 101.0])[1] == "miss"
    pair = cx.Cell("pair", "vegas", "100Mbps", 50, 1.0, other="reno", other_rtt_ms=50)
    assert cx.verdict(pair, [0.05, 0.06], [0.21, 0.20]) == (pytest.approx(-0.15), "miss")
    assert cx.verdict(pair, [0.20], [0.21])[1] == "ok"
    lp = cx.Cell("single", "lp", "1Gbps", 100, 1.0, loss=1e-4)
    assert cx.verdict(lp, [1.0], [2.0])[1] == "ns-2 module broken"


def test_a_cell_that_cannot_run_is_an_error_row():
    from dataclasses import replace

    cell = replace(cx.issue_cells()[0], stack="no-such-stack")
    name, _, _, value, _ = cx.run_one((cell, 1, "tcpeval"))
    assert name == cell.name and "no-such-stack" in name
    assert isinstance(value, str) and "run.stack" in value
    rows, counts = cx.table([cell], {name: {"tcpeval": {1: value}, "ns2": {1: 10.0}}})
    assert counts == {"error": 1} and "| error: ScenarioError: run.stack" in rows[-1]


def test_every_grid_cell_translates():
    grid = cx.default_grid()
    assert len(grid) == len({c.name for c in grid}) > 100
    for cell in grid:
        script, _ = script_for(cx.scenario(cell))
        assert f"select_ca {cx.CC_MODULE[cell.cc]}" in script.tcl


def test_crosscheck_page_keeps_hand_written_text(tmp_path):
    page = tmp_path / "c.md"
    page.write_text(f"# Title\n\nintro\n\n{BEGIN}\nold\n{END}\n\noutro\n")
    _write(page, f"{BEGIN}\nnew\n{END}")
    assert page.read_text() == f"# Title\n\nintro\n\n{BEGIN}\nnew\n{END}\n\noutro\n"
    begin, end = markers("native")           # a block of its own, appended once
    _write(page, f"{begin}\nnative\n{end}", begin, end)
    _write(page, f"{begin}\nnative 2\n{end}", begin, end)
    text = page.read_text()
    assert f"{BEGIN}\nnew\n{END}" in text and text.count(begin) == 1 and "native 2" in text


def test_native_grid_keeps_cells_with_native_agents():
    cells = cx.with_agents(cx.default_grid(), "native")
    assert cells and all(c.agents == "native" and not c.params for c in cells)
    assert {c.cc for c in cells} == {"reno", "highspeed", "vegas"}
    assert all(c.other in (None, "reno", "highspeed", "vegas") for c in cells)


@pytest.mark.skipif(ns_binary() is None, reason="ns-2 not installed (Debian package ns2)")
def test_tiny_run_on_ns2():
    from tcpeval.ns2 import run

    # A 64 KB window (45 segments of 1448 B) on a 10 Mbit/s, 100 ms path, ACKs
    # undelayed: one window per RTT, below the link's 83 packets. Serialisation
    # adds a packet's time at the bottleneck and at the access link. The window
    # can fill to 44 or 45 segments (both simulators measure 44: 5.02 Mbit/s).
    data = _scenario(bottleneck="10Mbps", rtt="100ms")
    data["flows"] = [{"cc": "reno", "max_window": "64KB", "delayed_ack": False}]
    data["run"] = {"duration": "12s", "measure_from": "2s"}
    s = run(data, trace=True)
    t = s["trace"]["t_s"]            # every 100 ms (the default trace interval) before 12 s
    assert len(t) == len(s["trace"]["cwnd_pkts"]["reno-0"]) == 119
    assert t[0] == pytest.approx(0.1) and t[-1] == pytest.approx(11.9)
    rtt = 0.1 + 1500 * 8 / 10e6 + 1500 * 8 / 100e6
    per_rtt = s["flows"][0]["throughput_mbps"] * 1e6 * rtt / (1448 * 8)
    assert 44 * 0.99 < per_rtt < 45 * 1.01
    assert s["flows"][0]["retransmits_total"] == 0
    # The smallest cross-check cell: tcpeval on the same scenario agrees.
    from tcpeval.run import run as tcpeval_run

    ours = tcpeval_run(data).summary["flows"][0]["throughput_mbps"]
    assert ours == pytest.approx(s["flows"][0]["throughput_mbps"], rel=0.01)
    data["flows"].append({"cc": "cubic"})
    s = run(data)
    assert s["bottleneck"]["utilization"] > 0.95


def test_ns2_side_is_cached_by_script(tmp_path, monkeypatch):
    """A cell's ns-2 run is reused when its script is the same, and redone when
    the script differs (another seed draws other starts and loss)."""
    import tcpeval.ns2 as ns2

    calls = []

    def fake_run(script, resolved, *args, **kw):
        seed = resolved["seed"]
        calls.append(seed)
        return {"flows": [{"throughput_mbps": float(seed)}], "sim": {"wall_s": 0.0}}

    monkeypatch.setattr(cx, "NS2_CACHE", tmp_path / "cache")
    monkeypatch.setattr(ns2, "run_translated", fake_run)
    cell = cx.Cell("single", "reno", "100Mbps", 50, 1.0, loss=1e-4, duration_s=5,
                   measure_from_s=1)
    first = cx.run_one((cell, 1, "ns2"))
    again = cx.run_one((cell, 1, "ns2"))
    other = cx.run_one((cell, 2, "ns2"))
    assert calls == [1, 2]
    assert first[3] == again[3] == 1.0 and other[3] == 2.0
    assert len(list((tmp_path / "cache").glob("*.json"))) == 2


def test_a_gap_within_the_seeds_noise_is_unresolved_not_a_miss():
    single = cx.Cell("single", "bic", "1Gbps", 100, 1.0, loss=1e-4)
    noisy = cx.verdict(single, [80.0, 100.0, 60.0], [100.0, 120.0, 80.0])
    assert noisy == (pytest.approx(0.8), "unresolved")
    tight = cx.verdict(single, [80.0, 81.0, 79.0], [100.0, 101.0, 99.0])
    assert tight == (pytest.approx(0.8), "miss")
    lo, hi = cx.interval(single, [80.0, 81.0, 79.0], [100.0, 101.0, 99.0])
    assert lo < 0.8 < hi and hi < 0.9
    pair = cx.Cell("pair", "reno", "100Mbps", 50, 1.0, other="reno", other_rtt_ms=100)
    assert cx.verdict(pair, [0.76, 0.70, 0.82], [0.62, 0.55, 0.69])[1] == "unresolved"
    assert cx.verdict(pair, [0.76, 0.77, 0.75], [0.62, 0.61, 0.63])[1] == "miss"


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(10, 100), min_size=2, max_size=8),
       st.lists(st.floats(10, 100), min_size=2, max_size=8))
def test_interval_contains_the_value_and_only_an_excluding_interval_misses(tc, ns):
    cell = cx.Cell("single", "reno", "100Mbps", 50, 1.0, loss=1e-4)
    value, word = cx.verdict(cell, tc, ns)
    lo, hi = cx.interval(cell, tc, ns)
    assert lo <= value <= hi
    if word == "miss":
        assert lo > 1 + cx.RATIO_TOLERANCE or hi < 1 - cx.RATIO_TOLERANCE


def test_unresolved_cells_get_more_seeds_until_decided(monkeypatch):
    """run_adaptive adds seeds three at a time only to the unresolved cells."""
    noisy = cx.Cell("single", "reno", "100Mbps", 50, 1.0, loss=1e-4)
    clear = cx.Cell("single", "cubic", "100Mbps", 50, 1.0, loss=1e-4)
    calls = []

    def fake_grid(cells, seeds, workers, progress=None):
        calls.append(([c.cc for c in cells], list(seeds)))
        out = {}
        for c in cells:
            # The noisy cell's tcpeval side settles on ns-2's value after seed 3.
            tc = {s: (80.0 if s % 2 else 120.0) * 0.8 if s <= 3 else 100.0 for s in seeds}
            if c.cc == "cubic":
                tc = {s: 100.0 for s in seeds}
            out[c.name] = {"tcpeval": tc, "ns2": {s: 100.0 + s % 2 for s in seeds}, "wall": 0.0}
        return out

    monkeypatch.setattr(cx, "run_grid", fake_grid)
    results = cx.run_adaptive([noisy, clear], [1, 2, 3], 9, 1)
    assert calls[0] == (["reno", "cubic"], [1, 2, 3])
    assert all(cc == ["reno"] for cc, _ in calls[1:]) and calls[1][1] == [4, 5, 6]
    assert len(results[clear.name]["tcpeval"]) == 3
    assert len(results[noisy.name]["tcpeval"]) > 3


def test_pairs_get_two_packet_times_of_send_jitter_and_singles_none():
    for cell in cx.default_grid("linux-2.6.22"):
        flows = cx.scenario(cell)["flows"]
        assert all("send_overhead" not in f for f in flows)
        if cell.kind == "single":
            assert all("send_jitter" not in f for f in flows)
            continue
        packet_us = 1500 * 8 / {"100Mbps": 100e6, "1Gbps": 1e9}[cell.rate] * 1e6
        assert [f["send_jitter"] for f in flows] == [f"{packet_us * 2:g}us"] * 2


@pytest.mark.skipif(ns_binary() is None, reason="ns-2 is not installed")
def test_ns2_wire_sizes_are_tcpevals(tmp_path):
    """A translated data packet is mtu bytes on ns-2's wire and an ACK the
    header's 52 (ns-2 adds ts_option_size_ to the header when timestamps are on)."""
    import subprocess

    sc = {"network": {"bottleneck": "100Mbps", "rtt": "20ms", "buffer": "1bdp"},
          "flows": [{"cc": "reno"}], "run": {"duration": "1s", "measure_from": "0.5s"}}
    trace = "set qt [open q.tr w]\n$ns trace-queue $A $B $qt\n$ns trace-queue $B $A $qt\n"
    tcl = script_for(sc, seed=1)[0].tcl.replace("$ns run", trace + "$ns run")
    (tmp_path / "r.tcl").write_text(tcl)
    subprocess.run([ns_binary(), "r.tcl"], cwd=tmp_path, capture_output=True, check=True)
    rows = [p for p in (line.split() for line in (tmp_path / "q.tr").open()) if p[0] == "+"]
    data = [int(p[5]) for p in rows if p[4] == "tcp"]
    acks = [int(p[5]) for p in rows if p[4] == "ack"]
    # (ns-2 sizes SACK blocks into an ACK, 76 with one; tcpeval does not)
    assert max(data) == 1500 and data.count(1500) > 0.99 * len(data)
    assert min(acks) == 52


def test_ns2_seeds_are_mixed_not_consecutive():
    """ns-2 copies a seed into all six words of MRG32k3a's state, so seeds 2, 3,
    4... draw related streams: the script must seed with a mix of the run's seed."""
    from tcpeval.ns2.translate import ns2_seed

    seeds = [ns2_seed(s, k) for s in range(1, 200) for k in (0, 1)]
    assert len(set(seeds)) == len(seeds)
    assert all(1 <= x < 2**31 - 1 for x in seeds)
    sc = {"network": {"bottleneck": "100Mbps", "rtt": "50ms", "buffer": "1bdp", "loss": 1e-4},
          "flows": [{"cc": "reno"}], "run": {"duration": "10s"}}
    tcl = script_for(sc, seed=3)[0].tcl
    assert f"ns-random {ns2_seed(3, 0)}\n" in tcl and f"$lrng seed {ns2_seed(3, 1)}\n" in tcl


def test_send_jitter_is_ns2s_overhead_and_a_per_packet_overhead_is_refused():
    sc = {"network": {"bottleneck": "100Mbps", "rtt": "50ms", "buffer": "1bdp"},
          "flows": [{"cc": "reno", "send_jitter": "240us"}], "run": {"duration": "10s"}}
    assert "$tcp(0) set overhead_ 0.00024\n" in script_for(sc, seed=1)[0].tcl
    sc["flows"][0] = {"cc": "reno", "send_overhead": "5us"}
    with pytest.raises(ScenarioError, match=r"flows\[0\]\.send_overhead: ns-2 has no per-packet"):
        script_for(sc, seed=1)


def test_the_ns2_script_does_not_depend_on_the_ns2_linux_stack():
    """The `ns2-linux` stack changes only tcpeval's side: a cell's ns-2 script
    (and so its cache key) is the one the linux-2.6.22 run translates to, for a
    single flow and for a pair with its send jitter."""
    from dataclasses import replace

    for cell in (cx.issue_cells()[0], next(c for c in cx.default_grid() if c.kind == "pair")):
        cell = replace(cell, abc=0)
        old, new = (script_for(cx.scenario(replace(cell, stack=s)), seed=1, abc=0)[0].tcl
                    for s in ("linux-2.6.22", "ns2-linux"))
        assert old == new
        assert script_for(cx.scenario(replace(cell, stack="ns2")), seed=1, abc=0)[0].tcl != old


def test_quickacks_changes_tcpeval_s_side_only():
    """`crosscheck --quickacks N` gives tcpeval's receivers ns-2's sink's first-ACK
    rule: every flow of the cell's scenario carries it, the cell's name says so,
    and the ns-2 script (so its cache key) is the cell's without it."""
    from dataclasses import replace

    cell = replace(next(c for c in cx.default_grid() if c.kind == "pair"), abc=0,
                   stack="linux-2.6.22")
    quick = replace(cell, quickacks=1)
    assert [f.get("quickacks") for f in cx.scenario(quick)["flows"]] == [1, 1]
    assert "quickacks" not in cx.scenario(cell)["flows"][0]
    assert "[quickacks=1]" in quick.name and quick.name != cell.name
    tcl = (script_for(cx.scenario(c), seed=1, abc=0)[0].tcl for c in (cell, quick))
    assert next(tcl) == next(tcl)
