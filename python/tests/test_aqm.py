"""Issue 33.1: the AQM queues' scenario fields (docs/traffic.md): what reaches
the engine, and bad values refused by the engine's rules under the scenario's
field names."""

from __future__ import annotations

import pytest

from tcpeval.engine_output import Link
from tcpeval.scenario import ScenarioError, load_scenario, resolve


def _hop(network: dict) -> dict:
    doc = {"network": {"bottleneck": "100Mbps", "rtt": "50ms", **network},
           "flows": [{"cc": "cubic"}], "run": {"duration": "10s"}}
    return resolve(load_scenario(doc))["network"]["hops"][0]


def test_aqm_parameters_reach_the_engine_in_its_units():
    hop = _hop({"queue": "pie", "pie": {"target": "20ms", "tupdate": "30ms", "alpha": 0.25,
                                         "max_burst": "100ms", "ecn": True}})
    assert hop["queue"] == "pie"
    assert hop["pie"] == {"target_ns": 20_000_000, "tupdate_ns": 30_000_000, "alpha": 0.25,
                          "max_burst_ns": 100_000_000, "ecn": True}
    fq = _hop({"queue": "fq_codel", "fq_codel": {"interval": "50ms", "quantum": "300B",
                                                  "memory_limit": "4MB", "flows": 64}})
    assert fq["fq_codel"] == {"interval_ns": 50_000_000, "quantum_bytes": 300,
                              "memory_limit_bytes": 4_000_000, "flows": 64}


def test_a_scenario_without_aqm_tables_resolves_as_before():
    hop = _hop({"queue": "codel"})
    assert not {"codel", "fq_codel", "pie", "step"} & set(hop)


@pytest.mark.parametrize("threshold, want", [
    ("20pkt", {"threshold_pkts": 20}),
    ("30000B", {"threshold_bytes": 30_000}),
    # 100 Mbit/s x 50 ms = 625,000 B = 416.7 packets of 1500 B; 10% rounds up.
    ("10%bdp", {"threshold_pkts": 42}),
])
def test_the_step_threshold_is_a_buffer_size(threshold, want):
    assert _hop({"queue": "step", "step": {"threshold": threshold}})["step"] == want


@pytest.mark.parametrize("network, needle", [
    ({"queue": "codel", "codel": {"target": "0s"}}, "network.codel.target: must be in [1, "),
    ({"queue": "fq_codel", "fq_codel": {"flows": 70000}},
     "network.fq_codel.flows: must be in [1, 65536], got 70000"),
    ({"queue": "fq_codel", "fq_codel": {"quantum": "100B"}},
     "network.fq_codel.quantum: must be in [256, "),
    ({"queue": "pie", "pie": {"beta": 2.5}}, "network.pie.beta: must be in [0, 2], got 2.5"),
    ({"queue": "step"}, "network.step.threshold: give exactly one of packets or bytes"),
    ({"queue": "sfq"}, "network.queue: unknown queue 'sfq'; allowed: droptail, red, codel, "
                       "fq_codel, pie, step"),
    ({"hops": [{"rate": "10Mbps", "queue": "pie", "pie": {"tupdate": "0ms"}}]},
     "network.hops[0].pie.tupdate: must be in [1, "),
])
def test_bad_aqm_values_name_the_scenario_field(network, needle):
    with pytest.raises(ScenarioError) as e:
        _hop(network)
    assert str(e.value).startswith(needle), str(e.value)


def test_marks_are_read_when_the_engine_reports_them():
    row = {"name": "bottleneck", "capacity_bps": 1e8, "tx_data_packets": 10, "arrivals": 12,
           "drops_overflow": 1, "drops_random": 0, "drops_early": 1, "max_queue_pkts": 5}
    assert Link.from_json(row).marks == 0
    assert Link.from_json({**row, "marks": 7}).marks == 7
