import copy
import json

import pytest
from helpers import small_scenario
from hypothesis import given, settings
from hypothesis import strategies as st

from tcpeval.scenario import (
    ScenarioError,
    apply_override,
    engine_config,
    load_scenario,
    resolve,
)
from tcpeval.sweep import run_key


def resolved(data, overrides=()):
    return resolve(load_scenario(data, overrides))


@pytest.mark.parametrize("data,field", [
    ({"run": {"duraton": "1s"}},
     "run.duraton: unknown key (did you mean 'duration'?); allowed: duration"),
    ({"network": {"bottlenek": "1Gbps"}}, "network.bottlenek: unknown key"),
    ({"flows": [{"cc": "foo"}]}, "flows[0].cc: unknown algorithm 'foo'; allowed: reno"),
    ({"network": {"bottleneck": "100Mbs"}}, "network.bottleneck: bad rate"),
    ({"network": {"bottleneck": "-1Mbps"}}, "network.bottleneck: rate '-1Mbps' must be positive"),
    ({"network": {"bottleneck": 0}}, "network.bottleneck: rate 0 must be positive"),
    ({"network": {"queue": "sfq"}},
     "network.queue: unknown queue 'sfq'; allowed: droptail, red, codel, fq_codel, pie, step"),
    ({"network": {"loss": 1.5}}, "network.loss"),
    ({"network": {"buffer": "lots"}}, "network.buffer: bad buffer 'lots'"),
    ({"flows": [{"count": 0}]}, "flows[0].count"),
    ({"flows": [{"count": 2, "start": ["0s"]}]}, "flows[0].start: 1 start times for count = 2"),
    ({"flows": [{"params": {"beta": 0.5}}]}, "flows[0].params.beta: unknown parameter"),
    ({"flows": [{"rtt": "10parsecs"}]}, "flows[0].rtt: bad time"),
    ({"flows": [{"max_window": "10B"}]}, "flows[0].max_window: must be at least one MSS"),
    ({"run": {"measure_from": "100s", "duration": "10s"}}, "run.measure_from"),
    ({"run": {"duration": "0s"}}, "run.duration: time '0s' must be positive"),
    ({"flows": [{"direction": "sideways"}]}, "flows[0].direction: unknown direction"),
    ({"flows": [{"start_jitter": "-1s"}]},
     "flows[0].start_jitter: time '-1s' must be non-negative"),
    ({"flows": [{"send_overhead": "-1us"}]},
     "flows[0].send_overhead: time '-1us' must be non-negative"),
    ({"flows": [{"send_overhead": "3 furlongs"}]}, "flows[0].send_overhead: bad time"),
])
def test_bad_input_names_the_field(data, field):
    with pytest.raises(ScenarioError) as e:
        resolved({"flows": [{}], **data})
    assert field in str(e.value)


def test_flow_ids_follow_expansion_order():
    r = resolved({"flows": [{"cc": "reno", "count": 2}, {"cc": "newreno", "rtt": "20ms"}]})
    logical = r["meta"]["logical_flows"]
    assert [f["id"] for f in logical] == [0, 1, 2]
    assert [f["cc"] for f in r["flows"]] == ["reno", "reno", "newreno"]
    assert r["flows"][2]["rtt_ns"] == 20_000_000
    assert r["flows"][0]["rtt_ns"] == 100_000_000


@settings(max_examples=40, deadline=None)
@given(start=st.floats(0, 100), jitter=st.floats(0.001, 10), count=st.integers(1, 6),
       seed=st.integers(0, 2**40))
def test_start_jitter_draws_each_start_within_its_window_from_the_seed(start, jitter, count, seed):
    doc = {"flows": [{"count": count, "start": start, "start_jitter": jitter, "streams": 2},
                     {"start": start}], "run": {"duration": "200s"}}
    r = resolve(load_scenario(doc), seed=seed)
    starts = [f["start_ns"] / 1e9 for f in r["flows"]]
    jittered, plain = starts[:2 * count], starts[2 * count:]
    assert all(start - 1e-9 <= t < start + jitter + 1e-9 for t in jittered)
    assert jittered[0::2] == jittered[1::2]  # a flow's streams start together
    assert plain == [pytest.approx(start, abs=1e-9)]  # no jitter: the start as given
    assert resolve(load_scenario(doc), seed=seed)["flows"] == r["flows"]
    other = resolve(load_scenario(doc), seed=seed + 1)["flows"]
    assert [f["start_ns"] for f in other] != [f["start_ns"] for f in r["flows"]]


@pytest.mark.parametrize("field,value,ns", [("send_overhead", "10us", 10_000),
                                            ("send_jitter", "240us", 240_000)])
def test_host_timing_reaches_every_stream_and_zero_keeps_the_run_key(field, value, ns):
    r = resolved({"flows": [{field: value, "streams": 2}, {"cc": "cubic"}]})
    assert [f[f"{field}_ns"] for f in r["flows"]] == [ns, ns, 0]
    # Zero is the engine's default: the canonical run key leaves it out.
    plain = resolved({"flows": [{}]})
    assert run_key(resolved({"flows": [{field: "0s"}]})) == run_key(plain)
    assert run_key(resolved({"flows": [{field: "1us"}]})) != run_key(plain)


def test_send_jitter_makes_seeds_differ_and_repeats_exactly():
    """A loss-free DropTail pair is the same run whatever the seed; ns-2's
    delayed send draws from the seed, so seeds then differ, and one seed
    gives the same run twice."""
    from tcpeval.run import run

    def share(seed: int, jitter: str) -> float:
        flows = [{"cc": "reno", "send_jitter": jitter}, {"cc": "cubic", "send_jitter": jitter}]
        sc = {"network": {"bottleneck": "100Mbps", "rtt": "20ms", "buffer": "0.5bdp"},
              "flows": flows, "run": {"duration": "6s", "measure_from": "1s"}}
        t = [f["throughput_mbps"] for f in run(sc, seed=seed).summary["flows"]]
        return t[0] / sum(t)

    assert share(1, "0s") == share(2, "0s")
    assert share(1, "240us") == share(1, "240us")
    assert len({share(s, "240us") for s in (1, 2, 3)}) == 3


def test_parallel_streams_expand_and_split_the_transfer():
    r = resolved({"flows": [{"cc": "reno", "streams": 4, "bytes": "10MB", "max_window": "1MB"}]})
    assert len(r["flows"]) == 4
    assert sum(f["bytes"] for f in r["flows"]) == 10_000_000
    assert all(f["max_window_bytes"] == 1_000_000 for f in r["flows"])
    assert r["meta"]["logical_flows"][0]["streams"] == [0, 1, 2, 3]


def test_buffer_resolution_uses_the_network_bdp():
    r = resolved({"network": {"bottleneck": "100Mbps", "rtt": "100ms", "buffer": "20%bdp",
                              "reverse_buffer": "2MB"}, "flows": [{}]})
    [n] = r["network"]["hops"]
    assert (n["buffer_pkts"], n["buffer_bytes"]) == (167, None)
    assert (n["reverse_buffer_pkts"], n["reverse_buffer_bytes"]) == (None, 2_000_000)
    assert r["network"]["access_rate_bps"] == 1e9


def test_overrides_reach_nested_keys_and_list_items():
    data = small_scenario()
    apply_override(data, "flows.0.cc=newreno")
    apply_override(data, "network.loss=1e-4")
    apply_override(data, "run.duration='5s'")
    r = resolve(load_scenario(data))
    assert r["flows"][0]["cc"] == "newreno"
    assert r["network"]["hops"][0]["loss"] == 1e-4
    assert r["duration_ns"] == 5 * 10**9


def test_bad_override_index_is_reported():
    with pytest.raises(ScenarioError, match="out of range"):
        load_scenario(small_scenario(), ["flows.5.cc=reno"])


def test_seed_argument_overrides_the_file():
    r = resolve(load_scenario(small_scenario()), seed=99)
    assert r["seed"] == 99


def test_udp_shares_of_the_bottleneck():
    r = resolved({"network": {"bottleneck": "622Mbps"},
                  "udp": [{"rate": "20%", "amplitude": "10%", "period": "30s"}]})
    u = r["udp"][0]
    assert u["rate_bps"] == pytest.approx(124.4e6)
    assert u["amplitude_bps"] == pytest.approx(62.2e6)
    assert u["period_ns"] == 30 * 10**9


def test_background_traffic_is_expanded_reproducibly():
    data = {"flows": [{"cc": "reno"}], "run": {"duration": "30s"},
            "background": {"long_lived": [{"count": 3}], "web": [{"load": 0.2}]}}
    a, b = engine_config(resolved(data)), engine_config(resolved(data))
    assert a == b
    groups = [f.get("group") for f in a["flows"]]
    assert groups[1:] == ["background"] * 3
    assert all(f["max_window_bytes"] == 64_000 for f in a["flows"][1:])
    (web,) = a["web"]  # the engine draws the transfers
    assert (web["load"], web["max_window_bytes"], web["stop_ns"]) == (0.2, 64_000, 30 * 10**9)


def test_background_is_planned_as_a_recipe_and_expanded_for_the_engine():
    """A resolved scenario carries background traffic as a small recipe (a sweep
    of long web-loaded runs plans in kilobytes), and so does the engine's config:
    the engine draws the ~10^4 web transfers as the run goes. The recipe fixes
    the flows, and any input of it changes the run key."""
    data = {"flows": [{"cc": "reno"}], "run": {"duration": "600s"},
            "background": {"web": [{"load": 0.2}], "long_lived": [{"count": 2}]}}
    r = resolved(data)
    assert len(r["flows"]) == 1 and len(json.dumps(r)) < 4000
    assert len(engine_config(r)["flows"]) == 3 and len(json.dumps(engine_config(r))) < 4000
    key = run_key(r)
    for change in ("background.web.0.load=0.3", "background.long_lived.0.count=3",
                   "run.seed=2", "background.web.0.rtt.median='90ms'"):
        assert run_key(resolved(data, [change])) != key, change
    assert run_key(resolved(data)) == key


def test_web_runs_of_the_front_ends_generator_have_other_keys():
    """A stored web run of before the engine drew the transfers (its recipe has
    no `generator`) is not taken for today's run of the same scenario."""
    data = {"flows": [{"cc": "reno"}], "run": {"duration": "30s"},
            "background": {"web": [{"load": 0.2}]}}
    r = resolved(data)
    old = copy.deepcopy(r)
    del old["meta"]["background"]["web"][0]["generator"]
    assert r["meta"]["background"]["web"][0]["generator"] == "engine-1"
    assert run_key(old) != run_key(r)


def test_an_empirical_rtt_table_is_read_into_the_recipe(tmp_path):
    table = tmp_path / "rtts.csv"
    table.write_text("rtt_ms,weight\n20,1\n200,3\n")
    data = {"flows": [{"cc": "reno"}], "run": {"duration": "30s"},
            "background": {"long_lived": [{"count": 400, "rtt": {"kind": "empirical",
                                                               "file": str(table)}}]}}
    r = resolved(data)
    table.unlink()  # the recipe no longer needs the file
    rtts = [f["rtt_ns"] / 1e6 for f in engine_config(r)["flows"][1:]]
    assert set(rtts) == {20.0, 200.0} and 0.65 < rtts.count(200.0) / len(rtts) < 0.85


def test_every_example_is_valid(examples):
    for path in sorted(examples.glob("*.toml")):
        resolve(load_scenario(path))


# ----- the engine's errors, named by the scenario's fields (issue 27.2) ---------------


@settings(max_examples=25, deadline=None)
@given(counts=st.lists(st.tuples(st.integers(1, 3), st.integers(1, 3)), min_size=1,
                       max_size=4), data=st.data())
def test_an_engine_error_names_the_entry_its_flow_came_from(counts, data):
    bad = data.draw(st.integers(0, len(counts) - 1))
    flows = [{"cc": "cubic", "count": c, "streams": s} for c, s in counts]
    flows[bad]["params"] = {"beta": 2.0}
    with pytest.raises(ScenarioError) as e:
        resolved({"flows": flows})
    assert str(e.value).startswith(f"flows[{bad}].params.beta: "), str(e.value)


@pytest.mark.parametrize("network,field", [
    ({"queue": "fifo"}, "network.queue: unknown queue 'fifo'; allowed: droptail, red"),
    ({"hops": [{"rate": "10Mbps"}, {"rate": "10Mbps", "queue": "fifo"}]},
     "network.hops[1].queue: unknown queue"),
    ({"hops": [{"rate": "10Mbps", "delay": "30ms"}, {"rate": "10Mbps", "delay": "30ms"}]},
     "network.rtt: 100 ms is less than twice the one-way delay of the path (60 ms)"),
])
def test_network_errors_name_the_table_they_were_written_in(network, field):
    with pytest.raises(ScenarioError) as e:
        resolved({"network": network, "flows": [{}]})
    assert str(e.value).startswith(field), str(e.value)


@pytest.mark.parametrize("flow,field", [
    ({"mss": 1500}, "flows[1].mss: must be positive and below the MTU (1500)"),
    ({"max_window": "1KB"}, "flows[1].max_window: must be at least one MSS (1448 B)"),
    ({"rtt": "10ms", "path": [0, 1]}, "flows[1].rtt: 10 ms is less than twice"),
    ({"path": [0, 2]}, "flows[1].path: give [enter, leave], two different routers in 0..1, "
                       "got [0, 2]"),
    ({"direction": "up"}, "flows[1].direction: unknown direction 'up'; allowed: forward"),
])
def test_flow_rules_are_the_engines_named_by_the_entry(flow, field):
    doc = {"network": {"bottleneck_delay": "10ms"}, "flows": [{"count": 3}, flow]}
    with pytest.raises(ScenarioError) as e:
        resolved(doc)
    assert str(e.value).startswith(field), str(e.value)


def test_a_run_of_background_flows_alone_meets_the_engines_rule():
    doc = {"background": {"long_lived": [{"count": 2}]}, "run": {"duration": "10s"}}
    assert resolved(doc)["flows"] == []


# ----- numbers, parsed once; buffers in the flows' packets (issue 27.2) ---------------


def test_the_model_holds_numbers_parsed_once():
    from tcpeval.scenario import resolution
    from tcpeval.units import Buffer

    sc = load_scenario({"network": {"bottleneck": "10Mbps", "rtt": "20ms", "buffer": "2MB"},
                        "flows": [{"count": 2, "max_window": "64KB", "start": ["1s", 2]}],
                        "udp": [{"rate": "20%", "period": "1s"}]})
    assert (sc.network.bottleneck, sc.network.rtt, sc.flows[0].max_window) == (1e7, 0.02, 64_000)
    assert sc.network.buffer == Buffer(2_000_000, "bytes", "2MB")
    assert sc.flows[0].start == [1.0, 2.0] and sc.run.duration == 60.0
    # Resolution maps numbers: it has no unit parser to call.
    parsers = ("parse_rate", "parse_time", "parse_size", "parse_buffer", "parse_buffer_spec")
    assert not [name for name in parsers if hasattr(resolution, name)]
    r = resolve(sc)
    assert r["udp"][0]["rate_bps"] == pytest.approx(2e6)
    assert resolve(load_scenario(sc)) == r  # the model dumps back to what it reads


@pytest.mark.parametrize("mtu,buffer,pkts", [
    (9000, "1bdp", 139),      # 100 Mbit/s x 100 ms = 1.25 MB / 9000 B, rounded up
    (1500, "1bdp", 834),
    (9000, "50%bdp", 70),
    (9000, "300pkt", 300),    # packets are packets
])
def test_a_bdp_buffer_holds_the_bdp_in_the_flows_packets(mtu, buffer, pkts):
    r = resolved({"network": {"buffer": buffer}, "flows": [{"mtu": mtu}]})
    [hop] = r["network"]["hops"]
    assert (hop["buffer_pkts"], hop["reverse_buffer_pkts"]) == (pkts, pkts)


def test_a_byte_buffer_stays_a_byte_limit_whatever_the_mtu():
    [hop] = resolved({"network": {"buffer": "2MB"}, "flows": [{"mtu": 9000}]})["network"]["hops"]
    assert (hop["buffer_pkts"], hop["buffer_bytes"]) == (None, 2_000_000)


def test_each_hop_takes_the_packets_of_the_flows_crossing_it():
    doc = {"network": {"rtt": "100ms", "hops": [{"rate": "100Mbps"}, {"rate": "100Mbps"}]},
           "flows": [{"mtu": 9000, "path": [0, 1]}, {"path": [1, 2]}]}
    hops = resolved(doc)["network"]["hops"]
    assert [h["buffer_pkts"] for h in hops] == [139, 834]


@pytest.mark.parametrize("path,field", [
    ("trace_interval_ns", "run.trace_interval"),
    ("config", "scenario"),
    ("network.access_rate_bps", "network.access_rate"),
    ("network.hops[1].red.w_q", "network.hops[1].red.w_q"),
    ("network.hops[0].reverse_buffer_bytes", "network.hops[0].reverse_buffer"),
    ("udp[0].rate_bps", "udp[0].rate"),
    ("udp[0].rtt_ns", "network.rtt"),                 # inherited
    ("flows[0].rtt_ns", "flows[0].rtt"),              # its own
    ("flows[2].nic_queue_pkts", "flows[1].txqueuelen"),
    ("flows[2].path[1]", "flows[1].path[1]"),
    ("flows[2]", "flows[1]"),
])
def test_engine_paths_name_the_scenarios_fields(path, field):
    from tcpeval.scenario import user_field

    sc = load_scenario({
        "network": {"rtt": "50ms", "hops": [{"rate": "10Mbps"}, {"rate": "10Mbps"}]},
        "flows": [{"count": 2, "rtt": "40ms"}, {}], "udp": [{"rate": "1Mbps"}]})
    assert user_field(sc, resolve(sc), path) == field
