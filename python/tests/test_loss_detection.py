"""Issue 33.3: a flow's `loss_detection` ("dupthresh", "dupthresh-tlp", "rack",
"fack" or "fack-tlp"; absent: its stack's) reaches the engine, and an unknown one is an
error naming the flow's field and what is allowed."""

import pytest

from tcpeval.scenario import ScenarioError, load_scenario, resolve


def resolved(data):
    return resolve(load_scenario(data))


def test_the_flow_s_rule_reaches_the_engine_and_absent_leaves_the_stack_s():
    flows = resolved({"flows": [{"loss_detection": "rack"}, {}]})["flows"]
    assert flows[0]["loss_detection"] == "rack"
    assert flows[1].get("loss_detection") is None


def test_an_unknown_rule_is_an_error_of_the_flow_s_field():
    with pytest.raises(ScenarioError) as e:
        resolved({"flows": [{}, {"loss_detection": "sack"}]})
    assert str(e.value).startswith(
        "flows[1].loss_detection: unknown loss detection 'sack'; "
        "allowed: dupthresh, dupthresh-tlp, rack, fack, fack-tlp"
    ), str(e.value)
