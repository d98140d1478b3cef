"""ECN per flow (issue 33.2): the scenario field reaches the engine, the
testbed refuses it, and a run with it marks instead of dropping."""

from tcpeval import testbed
from tcpeval.scenario import engine_config, load_scenario, resolve


def engine(data):
    return engine_config(resolve(load_scenario(data)))


def test_the_ecn_switch_reaches_each_engine_flow_and_defaults_off():
    cfg = engine({"flows": [{"cc": "reno", "ecn": True}, {"cc": "cubic"}]})
    assert [f["ecn"] for f in cfg["flows"]] == [True, False]


def test_the_testbed_refuses_ecn_naming_the_field():
    cfg = engine({"flows": [{"ecn": True}]})
    caps = {"root": True, "congestion_controls": ["reno"], "qdiscs": {}, "netem": False,
            "nfqueue": True, "tun": True, "delay_line": "/bin/true",
            "envelope": {"max_rate_with_delay_bps": 200e6, "max_rate_without_delay_bps": 1e9}}
    assert "flows[0].ecn:" in testbed.refuse_reason(cfg, caps)


def test_red_s_ecn_and_harddrop_switches_reach_the_engine_hop():
    red = {"queue": "red", "red": {"ecn": True, "harddrop": True}}
    cfg = engine({"network": red, "flows": [{}]})
    assert cfg["network"]["hops"][0]["red"] == {"ecn": True, "harddrop": True}
    plain = engine({"network": {"queue": "red"}, "flows": [{}]})
    assert "ecn" not in plain["network"]["hops"][0]["red"], "off unless asked: tc red's default"
