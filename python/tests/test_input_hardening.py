"""Bad input never crashes and never writes: every error is one line naming the
field (or option) and what is allowed, with exit code 2 and no result directory.

The corpus tests build malformed scenarios and `--set` expressions
systematically: for each field, values of the wrong type or out of its bounds
(only values that are invalid for that field, so every case must be refused),
unknown keys at every level, tables replaced by scalars. The CLI runs in-process.
"""

from __future__ import annotations

import json
import math
import re
import time

import click.testing
import pytest
import typer.main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tcpeval import cli
from tcpeval import scenario as scenario_mod
from tcpeval.scenario import ScenarioError, engine_config, load_scenario, resolve
from tcpeval.sweep import plan

BASE = {
    "network": {"bottleneck": "10Mbps", "rtt": "20ms", "buffer": "1bdp"},
    "flows": [{"cc": "reno"}],
    "udp": [{"rate": "1Mbps"}],
    "background": {"long_lived": [{"count": 1}], "web": [{"load": 0.1}]},
    "run": {"duration": "2s", "interval": "1s"},
}

# ----- invalid values per kind of field (each invalid for every field of its kind)

NOT_NUMBERS = [True, False, [1], {"a": 1}, [], {}]
NON_FINITE = [math.nan, math.inf, -math.inf, "nan ms", "inf"]
UNIT_GARBAGE = ["", "fast", "1e", "--5", "5 parsecs", "1,5s", "1e400e", "5\n5"]
RATES = NOT_NUMBERS + NON_FINITE + UNIT_GARBAGE + [
    0, -1, -5e6, 1e15, 1e12 + 1e6, 999, "1e15bps", "0Mbps", "-1Mbps", "100", "100Mbs",
    "1e400Gbps", "1001Gbps", "0.5kbps", 1e308]
POSITIVE_TIMES = NOT_NUMBERS + NON_FINITE + UNIT_GARBAGE + [
    0, -1, 1e300, 1e7, "1e300s", "0s", "-1ms", "50", "1e7s", "20000min", "0.1ns", "5 fortnights"]
TIMES = NOT_NUMBERS + NON_FINITE + UNIT_GARBAGE + [
    -1, -1e-3, 1e300, 1e7, "1e300s", "-1ms", "50", "1e7s", "5 fortnights"]
SIZES = NOT_NUMBERS + NON_FINITE + UNIT_GARBAGE + [
    0, -1, 0.2, 1e16, "1e16B", "0MB", "-2MB", "1500", "2 bushels", "1e400KB"]
WINDOWS = SIZES + [2**30 + 1, "2GiB", "1.1GB"]
BUFFERS = NOT_NUMBERS + NON_FINITE + UNIT_GARBAGE + [
    0, -1, "0bdp", "-1bdp", "1e400bdp", "1e20pkt", "1.5pkt", "0pkt", "2000000pkt", "1e400pkt",
    "1e6bdp", "2GB", "1e20B", "lots", "500"]
LOSSES = NOT_NUMBERS + NON_FINITE + [-0.1, 1.0, 1, 5, "0.1", "1%"]


def ints(low: int, high: int) -> list:
    return NOT_NUMBERS + NON_FINITE + [low - 1, high + 1, 2.5, float(low), "3", 2**64]


CC = NOT_NUMBERS + [5, "", "foo", "Reno ", "reno\n"]
FIELDS = {
    "network.bottleneck": RATES, "network.access_rate": RATES,
    "network.rtt": POSITIVE_TIMES, "network.bottleneck_delay": TIMES,
    "network.buffer": BUFFERS, "network.reverse_buffer": BUFFERS,
    "network.loss": LOSSES, "network.queue": CC,
    "flows.0.cc": CC, "flows.0.count": ints(1, 100_000), "flows.0.streams": ints(1, 1024),
    "flows.0.initial_cwnd": ints(1, 100_000) + [10**7, 2147483648],
    "flows.0.mtu": ints(576, 65535), "flows.0.mss": ints(1, 65535),
    "flows.0.txqueuelen": ints(1, 1_000_000), "flows.0.rtt": POSITIVE_TIMES,
    "flows.0.start": [v for v in TIMES if v != [1]] + ["2s", "3s", 2, [], ["1s", "2s"]],
    "flows.0.start_jitter": TIMES,
    "flows.0.send_overhead": TIMES, "flows.0.send_jitter": TIMES,
    "flows.0.delack_timeout": TIMES,
    "flows.0.max_window": WINDOWS, "flows.0.bytes": SIZES, "flows.0.direction": CC,
    "flows.0.sack": [0, 1, "yes", "true", 2.0, [True]],
    "flows.0.path": [5, [0], [0, 0], [-1, 1], [0, 2], [True, 1]],
    "flows.0.params": [5, "beta", [1], {"nonsense": 1}],
    "udp.0.rate": [True, -1, "abc", "-5%", "1e400%", "100000%", 1e15, "5", math.nan],
    "udp.0.period": POSITIVE_TIMES, "udp.0.packet": ints(29, 65535),
    "udp.0.phase": NOT_NUMBERS + NON_FINITE + [1e7, "0.5"],
    "background.long_lived.0.count": ints(0, 100_000),
    "background.long_lived.0.window": WINDOWS,
    "background.long_lived.0.rtt.sigma": NOT_NUMBERS + NON_FINITE + [0, -1, 4, "0.8"],
    "background.web.0.load": LOSSES, "background.web.0.sizes.mu": NOT_NUMBERS + [1e3, -1e3],
    "background.web.0.start": TIMES + ["3s"],
    "run.duration": POSITIVE_TIMES, "run.interval": POSITIVE_TIMES,
    "run.trace_interval": POSITIVE_TIMES + ["1ns"], "run.measure_from": TIMES + ["2s"],
    "run.seed": ints(0, 2**63 - 1) + [-1], "run.backend": CC,
    "network.red.max_p": NOT_NUMBERS + NON_FINITE + [0, -0.5, 1.5, "0.1"],
}
TABLES = ["network", "flows.0", "udp.0", "background", "background.web.0", "run",
          "background.long_lived.0.rtt", "network.red"]
FIELD_RE = re.compile(r"^(--set [^\s:]+|(network|flows|udp|background|run)([.\[][\w.\[\]]*)?):")
# Every key of every table: an "unknown key" case must not hit one of them.
KNOWN_KEYS = {name for model in vars(scenario_mod).values() if isinstance(model, type)
              and issubclass(model, scenario_mod._Model) for name in model.model_fields}


def field_name(path: str) -> str:
    """flows.0.cc -> flows[0].cc (how messages name fields)."""
    return re.sub(r"\.(\d+)", r"[\1]", path)


def set_in(doc: dict, path: str, value) -> dict:
    node = doc
    *parents, last = path.split(".")
    for part in parents:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    if last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return doc


def toml_value(v) -> str:
    """A TOML literal (inline tables and arrays; enough for these documents)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return "nan" if math.isnan(v) else "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


def toml(doc: dict) -> str:
    return "".join(f"{k} = {toml_value(v)}\n" for k, v in doc.items())


def fresh() -> dict:
    return json.loads(json.dumps(BASE))


def check_refused(result, out_dir, field: str) -> None:
    """Exit 2, no traceback, nothing written, and the first line names the field."""
    text = result.output
    assert result.exit_code == 2, (field, text, result.exception)
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit), (field, result.exception)
    assert "Traceback" not in text
    assert not out_dir.exists(), f"{out_dir} written for a refused input"
    first = text.strip().splitlines()[0].removeprefix("error: ")
    assert FIELD_RE.match(first), (field, first)
    assert field in first, (field, first)


# The CLI built once: typer's runner rebuilds it on every call (half a case's time).
COMMAND = typer.main.get_command(cli.app)


def invoke(args: list[str]):
    return click.testing.CliRunner().invoke(COMMAND, args)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("corpus")


def test_the_base_scenario_is_valid():
    """The corpus only breaks one field at a time of a scenario that runs."""
    resolve(load_scenario(fresh()))


@settings(max_examples=700, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_malformed_scenarios_are_refused_with_the_field(workdir, data):
    kind = data.draw(st.sampled_from(["value", "value", "value", "unknown key", "not a table"]))
    doc = fresh()
    if kind == "value":
        path = data.draw(st.sampled_from(sorted(FIELDS)))
        value = data.draw(st.sampled_from(FIELDS[path]))
        field = field_name(path)
    elif kind == "unknown key":
        table = data.draw(st.sampled_from(TABLES))
        key = data.draw(st.from_regex(r"[a-z]{1,8}_?[a-z]{0,4}", fullmatch=True).filter(
            lambda k: k not in KNOWN_KEYS))
        path = f"{table}.{key}"
        value, field = 1, field_name(path)
    else:
        path = data.draw(st.sampled_from(["network", "flows", "flows.0", "udp", "background",
                                          "run", "background.web", "network.red"]))
        value = data.draw(st.sampled_from([5, "x", True, [1]] if not path.startswith(
            ("flows", "udp", "background.web")) else [5, "x", True, {"a": 1}, [5]]))
        field = field_name(path)
    set_in(doc, path, value)
    scenario = workdir / "s.toml"
    scenario.write_text(toml(doc))
    out_dir = workdir / "out"
    check_refused(invoke(["run", str(scenario), "--out", str(out_dir)]),
                  out_dir, field)


SET_VALUES = ["true", "-1", "1e400", "nan", "inf", '"50"', '"5 parsecs"', "[1, 2]",
              "{a = 1}", "1e15", "0"]
# The values of SET_VALUES that are valid for a field (by its last key).
VALID_SET = {"phase": ("-1", "0"), "mu": ("-1", "0"), "rate": ("0",), "bytes": ("1e15",),
             **{k: ("0",) for k in ("count", "bottleneck_delay", "start", "start_jitter",
                                    "send_overhead", "send_jitter", "measure_from",
                                    "delack_timeout", "seed", "load", "loss")}}


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_malformed_set_expressions_are_refused_with_the_key(workdir, data):
    scenario = workdir / "base.toml"
    if not scenario.exists():
        scenario.write_text(toml(fresh()))
    kind = data.draw(st.sampled_from(["value", "no =", "empty part", "unknown", "index",
                                      "table"]))
    if kind == "value":
        path = data.draw(st.sampled_from([p for p in sorted(FIELDS)
                                          if not p.endswith(("params", "path", "sack"))]))
        value = data.draw(st.sampled_from([v for v in SET_VALUES if v not in VALID_SET.get(
            path.rsplit(".", 1)[-1], ())]))
        expr, field = f"{path}={value}", path
    elif kind == "no =":
        path = data.draw(st.sampled_from(sorted(FIELDS)))
        expr, field = path, path
    elif kind == "empty part":
        expr = data.draw(st.sampled_from(["=x", ".=1", "network..rtt=1ms", "flows.=1",
                                          " =reno", "network.=5"]))
        field = "--set"
    elif kind == "unknown":
        path = data.draw(st.sampled_from(["network.rt", "repetition", "flows.0.ccc",
                                          "run.sed", "udp.0.rat", "background.webb"]))
        expr, field = f"{path}=1", path
    elif kind == "index":
        path = data.draw(st.sampled_from(["flows.99.cc", "udp.5.rate", "flows.x.cc"]))
        expr, field = f"{path}=reno", path
    else:
        path = data.draw(st.sampled_from(["network", "run", "flows.0", "udp.0"]))
        expr, field = f"{path}=5", path
    out_dir = workdir / "out-set"
    result = invoke(["run", str(scenario), "--out", str(out_dir), "--set", expr])
    text = result.output.strip()
    assert result.exit_code == 2, (expr, text, result.exception)
    assert not out_dir.exists() and "Traceback" not in text
    first = text.splitlines()[0].removeprefix("error: ")
    if field == "--set":
        assert first.startswith("--set "), (expr, first)
    else:
        assert FIELD_RE.match(first) and (field in first or field_name(field) in first), \
            (expr, first)


# ----- malformed files --------------------------------------------------------------


@pytest.mark.parametrize("content,needle", [
    (b"\xff\xfe[network]\n", "not UTF-8 text"),
    (b"", "flows: at least one [[flows]] entry"),
    (b'[network]\nrtt = "50ms"\n', "flows: at least one [[flows]] entry"),
    (b"[network\n", "not valid TOML"),
    (b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested deeper than 100"),
    (b"[[flows]]\n[[flows]]\ncc = 5\n", "flows[1].cc: must be a string"),
])
def test_malformed_files_are_one_line_errors(tmp_path, content, needle):
    scenario = tmp_path / "s.toml"
    scenario.write_bytes(content)
    t0 = time.perf_counter()
    r = invoke(["run", str(scenario), "--out", str(tmp_path / "o")])
    assert time.perf_counter() - t0 < 5  # 5,000 nested arrays took 18 s to fail
    assert r.exit_code == 2 and needle in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_a_directory_or_a_missing_file_as_the_scenario(tmp_path):
    for path, needle in ((tmp_path, "is a directory"), (tmp_path / "nope.toml", "no such")):
        r = invoke(["run", str(path), "--out", str(tmp_path / "o")])
        assert r.exit_code == 2 and needle in r.output and "Traceback" not in r.output


# ----- values the issue found accepted or crashing ------------------------------------


@pytest.mark.parametrize("over,needle", [
    ({"network": {"bottleneck": 1e15}}, "network.bottleneck: rate 1e+15 is out of range"),
    ({"network": {"bottleneck": True}}, "network.bottleneck: expected a rate, got True"),
    ({"network": {"buffer": True}}, "network.buffer: bad buffer True"),
    ({"network": {"buffer": "1e400bdp"}}, "network.buffer: buffer '1e400bdp' is too large"),
    ({"network": {"buffer": "1e20pkt"}}, "network.buffer: buffer '1e20pkt' is too large; "
                                         "at most 1000000 packets"),
    ({"network": {"rtt": 0}}, "network.rtt: must be positive"),
    ({"network": {"rtt": "50"}}, "network.rtt: time '50' has no unit"),
    ({"network": {"loss": True}}, "network.loss: must be a number, got True"),
    ({"run": {"duration": "1e300s"}}, "run.duration: time '1e300s' is too long; at most 1e+06 s"),
    ({"run": {"trace_interval": "1us", "duration": "600s"}},
     "run.trace_interval: 600 s / 1e-06 s x 3 series = 1.8e+09 table rows; at most 1e+07"),
    ({"flows": [{"initial_cwnd": 10**7}]}, "flows[0].initial_cwnd: must be <= 100000"),
    ({"flows": [{"initial_cwnd": 2147483648}]}, "flows[0].initial_cwnd: must be <= 100000"),
    ({"flows": [{"initial_cwnd": 0}]}, "flows[0].initial_cwnd: must be >= 1"),
    ({"flows": [{"count": True}]}, "flows[0].count: must be a whole number, got True"),
    ({"flows": [{"count": 3000, "streams": 1000}]}, "flows: 3000000 flows"),
    ({"flows": [{"start": "70s"}]}, "flows[0].start: 70 s is at or after the end of the run"),
    ({"flows": [{"start": "5s", "stop": "5s"}]}, "flows[0].stop: 5 s must be after the start"),
    ({"flows": [{"path": [-1, 1]}]}, "flows[0].path[0]: must be >= 0, got -1"),
    ({"flows": [{"path": [0, 3]}]}, "flows[0].path: give [enter, leave]"),
    ({"network": {"bottleneck_delay": "60ms"}},
     "network.rtt: 100 ms is less than twice the one-way delay of the path (60 ms)"),
    ({"network": {"bottleneck": "1000Gbps", "rtt": "1s", "buffer": "100pkt"}},
     "network.rtt: the path holds 8.33e+07 packets in flight"),
    ({"udp": [{"rate": "1Mbps", "start": "60s"}]}, "udp[0].start: 60 s is at or after the end"),
    ({"network": {"queue": "red", "red": {"min_th": 5, "max_th": 3}}},
     "network.red: min_th (5) must be below max_th (3)"),  # the engine's rule
    ({"network": {"red": {"w_q": 0}}}, "network.red.w_q: must be in (0, 1], got 0"),
    ({"background": {"web": [{"load": 0.9}]}, "network": {"bottleneck": "1000Gbps",
                                                          "rtt": "10ms"},
      "run": {"duration": "1000s"}}, "background.web[0].load: about"),
])
def test_values_out_of_bounds_are_refused_with_the_limit(over, needle):
    doc = {"flows": [{}], "run": {"duration": "60s"}}
    for key, value in over.items():
        doc[key] = {**doc.get(key, {}), **value} if isinstance(value, dict) else value
    with pytest.raises(ScenarioError) as e:
        resolve(load_scenario(doc))
    assert str(e.value).startswith(needle), str(e.value)


def test_the_testbed_may_run_without_emulated_delay():
    doc = {"flows": [{}], "network": {"rtt": "0ms"}, "run": {"backend": "testbed"}}
    assert resolve(load_scenario(doc))["flows"][0]["rtt_ns"] == 0


@pytest.mark.parametrize("args,needle", [
    (["--seed", "-1"], "--seed: -1 is out of range; allowed: 0 to"),
    (["--seed", str(2**63)], "--seed: 9223372036854775808 is out of range"),
])
def test_bad_seeds_are_refused_before_anything_runs(examples, tmp_path, args, needle):
    r = invoke(["run", str(examples / "reno_single.toml"),
                                "--out", str(tmp_path / "o"), *args])
    assert r.exit_code == 2 and needle in r.output and not (tmp_path / "o").exists()


@pytest.mark.parametrize("args,needle", [
    (["--workers", "-3"], "--workers: -3 is out of range; allowed: 1 to 1024"),
    (["--workers", "0"], "--workers: 0 is out of range"),
    (["--dask", "local:abc"], "--dask: 'local:abc': local:N needs a whole number"),
    (["--dask", "local:0"], "--dask: 'local:0': local:N needs a whole number"),
    (["--dask", "not an address"], "--dask: 'not an address' is neither local:N nor"),
])
def test_bad_sweep_options_are_refused_before_anything_runs(examples, tmp_path, args, needle):
    r = invoke(["sweep", str(examples / "reno_single.toml"),
                                "--out", str(tmp_path / "store"), *args])
    assert r.exit_code == 2 and needle in r.output, r.output
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("sweep,needle", [
    ({"repetition": 3}, "sweep.repetition: unknown key 'repetition' (did you mean "
                        "'repetitions'?)"),
    ({"network.rt": ["1ms"]}, "sweep.network.rt: unknown key 'rt' (did you mean 'rtt'?)"),
    ({"flows.0.ccc": ["reno"]}, "sweep.flows.0.ccc: unknown key 'ccc' (did you mean 'cc'?)"),
    ({"repetitions": True}, "sweep.repetitions: must be a whole number"),
    ({"network.rtt": {"range": ["a", 1, 1]}}, "sweep.network.rtt.range: give [start, stop, "
                                              "step], three finite numbers"),
    ({"network.rtt": {"range": [1, 1e12, 1]}}, "sweep.network.rtt.range: more than 100000"),
    ({"network.buffer": {"range": [1, 2, 1], "format": "{x}bdp"}},
     "sweep.network.buffer.format: '{x}bdp' is not a format"),
    ({"network.loss": [0.1, 2.0]}, "network.loss: must be in [0, 1), got 2 (at sweep point"),
])
def test_sweep_mistakes_name_the_key(sweep, needle):
    with pytest.raises(ScenarioError) as e:
        plan({"flows": [{}], "run": {"duration": "10s"}, "sweep": sweep})
    assert str(e.value).startswith(needle), str(e.value)


def test_errors_and_help_print_brackets_as_written(tmp_path):
    """Rich markup used to swallow "[[flows]]" and "[sweep]"."""
    scenario = tmp_path / "s.toml"
    scenario.write_text("[network]\n")
    r = invoke(["run", str(scenario), "--out", str(tmp_path / "o")])
    assert "at least one [[flows]] entry (or [[udp]] / [background])" in r.output
    r = invoke(["sweep", "--help"])
    assert "with a [sweep] table" in r.output


def test_engine_errors_name_the_field_not_a_column():
    """An engine config the front end did not check (e.g. the JSON interface)
    used to fail with 'engine config: invalid type: ... at line 1 column 238'."""
    from tcpeval.run import simulate

    cfg = engine_config(resolve(load_scenario({"flows": [{}, {}]})))
    cfg["flows"][1]["initial_cwnd"] = 1e20
    with pytest.raises(ScenarioError) as e:
        simulate(cfg)
    assert str(e.value).startswith("engine: flows[1].initial_cwnd: invalid type: floating point")
    assert "column" not in str(e.value)


@pytest.mark.parametrize("args,needle", [
    (["--from", "abc"], "--from: bad time 'abc'"),
    (["--to", "50"], "--to: time '50' has no unit"),
    (["--from", "1e300s"], "--from: time '1e300s' is too long"),
])
def test_metrics_window_options_are_named(tmp_path, args, needle):
    r = invoke(["metrics", str(tmp_path), *args])
    assert r.exit_code == 2 and r.output.startswith(f"error: {needle}"), r.output


@pytest.mark.parametrize("web", [
    {"load": 0.01},  # no transfer arrives in 2 s at 1 kbit/s: crashed the size sampler
    {"load": 0.5, "sizes": {"k": "1000000GB"}},  # a mean size far above what 2 s carry
])
def test_web_traffic_without_any_transfer_builds(web):
    doc = {"flows": [{}], "network": {"bottleneck": "1kbps", "rtt": "20ms", "buffer": "10pkt"},
           "background": {"web": [web]}, "run": {"duration": "2s"}}
    cfg = engine_config(resolve(load_scenario(doc)))
    assert len(cfg["flows"]) == 1  # the scenario's own flow, no web transfer


@pytest.mark.parametrize("sizes,needle", [
    ({"cap": 0.5}, "background.web[0].sizes.cap: size 0.5 must be at least 1 byte"),
    ({"k": 0.5}, "background.web[0].sizes.k: size 0.5 must be at least 1 byte"),
])
def test_sizes_that_round_to_zero_bytes_are_refused(sizes, needle):
    doc = {"flows": [{}], "background": {"web": [{"load": 0.1, "sizes": sizes}]}}
    with pytest.raises(ScenarioError) as e:
        resolve(load_scenario(doc))
    assert str(e.value).startswith(needle), str(e.value)


@pytest.mark.parametrize("args,needle", [
    (["run", "scenario.toml", "--seed", "abc"], "Invalid value for '--seed'"),
    (["run"], "Missing argument 'scenario'"),
    (["sweep", "scenario.toml", "--workers", "x"], "Invalid value for '--workers'"),
    (["run", "scenario.toml", "--nope"], "No such option: --nope"),
    (["bogus"], "No such command 'bogus'"),
])
def test_usage_errors_of_the_console_command_are_one_line(tmp_path, args, needle):
    """Click prints a usage block before such errors; the entry point makes them
    one line like every other bad input."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", "from tcpeval.cli import main; main()", *args],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], lines
    assert "Traceback" not in proc.stderr and not (tmp_path / "results").exists()
