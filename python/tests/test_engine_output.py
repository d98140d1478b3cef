"""The typed views of the engine's output (engine_output.py): built from the
engine's JSON and from a stored run's counters-only engine.json alike."""

import dataclasses

import pytest

from tcpeval.engine_output import EngineOutput, Flow, Link, Stream, logical_flows

RAW = {
    "flows": [
        {"id": 0, "cc": "reno", "group": "a", "start_ns": 0, "size_bytes": None,
         "bytes_delivered": 900, "segments_sent": 10, "retransmits": 2, "timeouts": 1,
         "completed_ns": None, "acks": 7},
        # A testbed stream: no group, no size, extra keys of its own.
        {"id": 1, "cc": "cubic", "start_ns": 5, "bytes_delivered": 10,
         "segments_sent": 1, "retransmits": 0, "timeouts": 0, "netstat": {}},
    ],
    "links": [
        {"name": "bottleneck", "capacity_bps": 1e7, "tx_data_packets": 9, "arrivals": 20,
         "drops_overflow": 3, "drops_random": 1, "drops_early": 2, "max_queue_pkts": 5},
        {"name": "reverse", "capacity_bps": 1e7, "tx_data_packets": 0, "arrivals": 9,
         "drops_overflow": 0, "drops_random": 0, "max_queue_pkts": 0},
        {"name": "hop2-rev", "capacity_bps": 1e7, "tx_data_packets": 0, "arrivals": 0,
         "drops_overflow": 0, "drops_random": 0, "max_queue_pkts": 0},
    ],
    "sim": {"events": 42, "packets": 9, "end_ns": 10},
}


def test_counters_become_fields_and_missing_optional_keys_defaults():
    out = EngineOutput.from_json(RAW)
    assert out.streams[0] == Stream(0, "reno", 0, 900, 10, 2, 1, None, None, "a")
    assert (out.streams[1].group, out.streams[1].size_bytes) == (None, None)
    assert out.links[1].drops_early == 0 and out.links[0].drops == 6
    assert (out.sim.events, out.sim.end_ns) == (42, 10)
    assert out.validity is None


def test_a_stored_engine_json_has_no_tables():
    out = EngineOutput.from_json({**RAW, "validity": {"valid": True}})
    assert out.intervals == {} and out.trace == {} and out.udp_intervals == {}
    assert out.validity == {"valid": True}


def test_forward_links_leave_out_the_reverse_directions():
    assert [link.name for link in EngineOutput.from_json(RAW).forward_links()] == ["bottleneck"]


def test_a_missing_required_counter_is_an_error_not_a_default():
    with pytest.raises(KeyError):
        Link.from_json({k: v for k, v in RAW["links"][0].items() if k != "arrivals"})


def test_views_are_immutable():
    with pytest.raises(dataclasses.FrozenInstanceError):
        EngineOutput.from_json(RAW).sim.events = 0


def test_logical_flows_name_their_streams():
    resolved = {"meta": {"logical_flows": [
        {"id": 0, "label": "x", "cc": "reno", "streams": [0, 1], "entry": 0}]}}
    assert logical_flows(resolved) == [Flow(0, "x", "reno", (0, 1))]
