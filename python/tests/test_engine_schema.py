"""The engine's JSON Schema is the contract between the front end and the
engine (issue 27.1): every example and every study cell resolves to a config
the schema accepts."""

import json
from pathlib import Path

import jsonschema
import pytest

from tcpeval import _sim
from tcpeval.scenario import engine_config, load_scenario, resolve
from tcpeval.studies import PROFILES, STUDIES
from tcpeval.studies.runner import plan_study

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
EXAMPLES = sorted(EXAMPLES_DIR.glob("*.toml"))


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(_sim.config_schema())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def _errors(validator, cfg: dict) -> list[str]:
    cfg = {**cfg, "flows": _extremes(cfg["flows"])}
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(cfg)]


def _extremes(flows: list[dict]) -> list[dict]:
    """Background expansion makes 10^4 flows of a few shapes; checking each one
    took most of a minute. The schema's numeric constraints are bounds, so per
    shape (algorithm, keys, direction, group) the flows holding each numeric
    field's smallest and largest value, and the first and last, stand for all."""
    shapes: dict[tuple, list[int]] = {}
    for i, f in enumerate(flows):
        shape = (f.get("cc"), tuple(sorted(f)), f.get("direction"), f.get("group"))
        shapes.setdefault(shape, []).append(i)
    keep = set()
    for members in shapes.values():
        keep |= {members[0], members[-1]}
        numeric = {k for k, v in flows[members[0]].items()
                   if isinstance(v, int | float) and not isinstance(v, bool)}
        for k in numeric:
            keep.add(min(members, key=lambda i: flows[i][k]))
            keep.add(max(members, key=lambda i: flows[i][k]))
    return [flows[i] for i in sorted(keep)]


def test_the_flows_checked_stand_for_all_of_them(validator):
    """A flow out of bounds among thousands of valid ones is still found."""
    good = {"cc": "reno", "rtt_ns": 10_000_000, "start_ns": 0, "bytes": 1000}
    flows = [{**good, "start_ns": i} for i in range(1000)]
    flows[517] = {**flows[517], "rtt_ns": -5}
    assert flows[517] in _extremes(flows)
    assert len(_extremes(flows)) < 10


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_resolves_to_a_config_the_schema_accepts(validator, example):
    cfg = engine_config(resolve(load_scenario(example)))
    assert _errors(validator, cfg) == []


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", sorted(STUDIES))
def test_every_study_cell_resolves_to_a_config_the_schema_accepts(validator, name, profile):
    plan, _ = plan_study(name, profile)
    for run in plan.runs:
        resolved = run.resolved
        if profile != "smoke" and resolved["meta"].get("background"):
            # Quick and full runs expand to up to 10^5 background flows each,
            # made by the same code as the smoke runs' (checked whole).
            resolved = {**resolved, "meta": {**resolved["meta"], "background": None}}
        assert _errors(validator, engine_config(resolved)) == [], run.params


def test_the_schema_refuses_what_the_engine_refuses(validator):
    cfg = engine_config(resolve(load_scenario(EXAMPLES_DIR / "reno_single.toml")))
    assert _errors(validator, cfg) == []
    bad = json.loads(json.dumps(cfg))
    bad["flows"][0]["cc"] = "nosuch"
    bad["flows"][0]["bogus"] = 1
    del bad["flows"][0]["rtt_ns"]
    bad["network"]["hops"][0]["queue"] = "fifo"
    errors = _errors(validator, bad)
    assert len(errors) == 4, errors
    assert {e.split(":")[0] for e in errors} == {"flows.0", "flows.0.cc", "network.hops.0.queue"}


@pytest.mark.parametrize("cc, params, where", [
    ("cubic", {"beta": 2.0}, "flows.0.params.beta"),
    ("ctcp", {"gamma": "30"}, "flows.0.params.gamma"),
    ("hstcp-lp", {"eci_decrease": "third"}, "flows.0.params.eci_decrease"),
    ("reno", {"beta": 0.5}, "flows.0.params"),
    ("bbr", {"seed": -1}, "flows.0.params.seed"),
])
def test_the_schema_checks_params_by_the_flows_algorithm(validator, cc, params, where):
    cfg = engine_config(resolve(load_scenario(EXAMPLES_DIR / "reno_single.toml")))
    cfg["flows"][0]["cc"] = cc
    assert _errors(validator, cfg) == []
    cfg["flows"][0]["params"] = params
    assert [e.split(":")[0] for e in _errors(validator, cfg)] == [where]
    with pytest.raises(ValueError) as engine:
        _sim.validate(json.dumps(cfg))
    path, _ = engine.value.args
    assert path.replace("flows[0]", "flows.0").startswith(where)


def test_the_interface_document_shows_the_schema_of_todays_engine():
    from tcpeval import schema_doc

    schema = json.loads(_sim.config_schema())
    assert schema_doc.render(schema_doc.DOC.read_text(), schema) == schema_doc.DOC.read_text()
    # and a change of the schema shows in the document
    schema["definitions"]["FlowConfig"]["properties"]["mss"]["default"] = 1
    assert "| `mss` | integer | `1` |" in schema_doc.render(schema_doc.DOC.read_text(), schema)


def test_algorithm_names_and_parameters_come_from_the_engines_registry():
    from tcpeval.cc_names import available_algorithms

    params = json.loads(_sim.algorithm_params())
    assert set(params) == set(available_algorithms())
    assert list(params["cubic"])[:2] == ["beta", "c"] and params["reno"] == {}
    assert params["ctcp"] == params["compound"]  # an alias has its algorithm's


def test_the_front_ends_defaults_are_the_engines_constants():
    """One home per constant (issue 27.2): the engine's consts.rs. Its schema's
    defaults and the scenario model's come from there."""
    from tcpeval import constants
    from tcpeval.scenario import Flow, Udp

    c = _sim.constants()
    assert c["mss_bytes"] == c["mtu_bytes"] - c["header_bytes"]
    flow = json.loads(_sim.config_schema())["definitions"]["FlowConfig"]["properties"]
    defaults = {k: flow[k]["default"] for k in ("mss", "mtu", "initial_cwnd", "delack_timeout_ns")}
    assert defaults == {"mss": c["mss_bytes"], "mtu": c["mtu_bytes"],
                        "initial_cwnd": c["initial_cwnd"],
                        "delack_timeout_ns": c["delack_timeout_ns"]}
    assert (Flow().mtu, Udp(rate=1e6).packet) == (c["mtu_bytes"], c["mtu_bytes"])
    assert c["header_bytes"] == constants.HEADER_BYTES
    # The initial window and delayed-ACK timer are the stack's; today's stack
    # gives the engine's constants.
    r = resolve(load_scenario({"flows": [{}]}))["flows"][0]
    assert (r["mss"], r["initial_cwnd"], r["delack_timeout_ns"]) == (
        c["mss_bytes"], c["initial_cwnd"], c["delack_timeout_ns"])


def test_every_flow_field_reaches_the_engine_by_one_naming_rule():
    """A flow field passes to the engine's FlowConfig under its name plus its
    unit's suffix (or its rename): adding a model field the engine lacks, or an
    engine field no model field feeds, fails here (issue 27: a new flow parameter
    is the engine's struct, the model and the docs)."""
    from tcpeval.scenario.models import Flow, engine_names

    schema = json.loads(_sim.config_schema())
    engine = set(schema["definitions"]["FlowConfig"]["properties"])
    names = engine_names(Flow)
    passed = {names[n] for n in Flow.model_fields if n not in Flow.EXPANDED}
    assert passed <= engine, passed - engine
    fed = set(names.values())
    # `trace` is set for background flows only (their traces are not kept).
    assert engine - fed == {"trace"}
    assert names["rtt"] == "rtt_ns" and names["max_window"] == "max_window_bytes"
