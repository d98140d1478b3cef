"""Issue 28: a flow runs a TCP stack (docs/stacks.md), its own `stack` or the
run's `[run] stack`; an unknown stack, or an algorithm the stack did not have,
is an error naming the flow and what is allowed."""

import pytest

from tcpeval.run import run
from tcpeval.scenario import ScenarioError, load_scenario, resolve


def resolved(data):
    return resolve(load_scenario(data))


def test_each_flow_takes_its_own_stack_or_the_run_s():
    doc = {"flows": [{"cc": "reno"}, {"cc": "cubic", "stack": "linux-2.6.22"}],
           "run": {"stack": "linux-3.16"}}
    assert [f["stack"] for f in resolved(doc)["flows"]] == ["linux-3.16", "linux-2.6.22"]
    assert [f["stack"] for f in resolved({"flows": [{}]})["flows"]] == ["linux-6.6"]


@pytest.mark.parametrize("data,message", [
    ({"flows": [{}, {"stack": "linux-2.7"}]},
     "flows[1].stack: unknown stack 'linux-2.7'; allowed: linux-2.4, linux-2.6.13, "),
    ({"flows": [{}, {"cc": "cubic", "stack": "linux-2.4"}]},
     "flows[1].cc: stack linux-2.4 offers reno, scalable, highspeed, "),
    ({"flows": [{}], "run": {"stack": "linux-9"}}, "run.stack: unknown stack 'linux-9'"),
    ({"flows": [{"cc": "bbr"}], "run": {"stack": "linux-3.16"}},
     "flows[0].cc: stack linux-3.16 offers reno, "),
])
def test_a_wrong_stack_is_an_error_naming_the_flow(data, message):
    with pytest.raises(ScenarioError) as e:
        resolved(data)
    assert str(e.value).startswith(message), str(e.value)


@pytest.mark.parametrize("stack,mss,rtt,iw,delack_ms", [
    ("linux-6.6", 1448, "50ms", 10, 40),
    ("linux-2.6.22", 1448, "50ms", 2, 40),      # 2 on a fresh route, not RFC 3390's 3
    ("linux-2.6.22", 1000, "50ms", 2, 40),      # whatever the MSS
    ("linux-3.16", 1448, "50ms", 10, 40),
    ("linux-2.4", 1448, "50ms", 2, 40),         # 2.4.22: 2 on a fresh route
    ("linux-2.4", 1448, "10ms", 2, 40),         # at any RTT
    ("ns2", 1448, "50ms", 2, 100),              # windowInit_ 2, DelAck interval_ 100 ms
])
def test_a_flow_without_its_own_takes_its_stack_s_initial_window_and_ack_timer(
        stack, mss, rtt, iw, delack_ms):
    doc = {"network": {"rtt": rtt}, "flows": [{"stack": stack, "mss": mss}]}
    f = resolved(doc)["flows"][0]
    assert (f["initial_cwnd"], f["delack_timeout_ns"]) == (iw, delack_ms * 1_000_000)


def test_a_flow_s_own_initial_window_and_ack_timer_win_over_its_stack_s():
    doc = {"flows": [{"stack": "ns2", "initial_cwnd": 7, "delack_timeout": "20ms"}]}
    f = resolved(doc)["flows"][0]
    assert (f["initial_cwnd"], f["delack_timeout_ns"]) == (7, 20_000_000)


def test_a_flow_s_quickacks_set_its_receiver_s_start():
    """linux-2.6.22's receiver ACKs its first 16 segments at once, so slow start
    runs ahead of one that, like ns-2's sink, ACKs only segment 0 at once
    (`quickacks = 1`): more delivered in the first 0.4 s at 50 ms."""
    def delivered(quickacks):
        flow = {"cc": "reno", "stack": "linux-2.6.22",
                **({} if quickacks is None else {"quickacks": quickacks})}
        doc = {"network": {"bottleneck": "100Mbps", "rtt": "50ms"}, "flows": [flow],
               "run": {"duration": "0.4s", "measure_from": "0s", "interval": "0.1s"}}
        return run(doc).summary["flows"][0]["bytes_delivered"]
    assert delivered(None) == delivered(16)
    assert delivered(None) > 1.5 * delivered(1)


def test_a_negative_quickacks_is_an_error_naming_the_field():
    with pytest.raises(ScenarioError) as e:
        resolved({"flows": [{"quickacks": -1}]})
    assert "flows[0].quickacks" in str(e.value)


def test_the_stack_reaches_the_engine():
    """One Reno flow under 1e-3 random loss: 2.6.22 counts ACKs, so with delayed
    ACKs it grows more slowly than today's stack, which counts packets. Mathis's
    b = 2 would give a factor of sqrt(2); the run measures 1.28 in bytes, because
    ACKs around a loss are not delayed."""
    def delivered(stack):
        doc = {"network": {"bottleneck": "100Mbps", "rtt": "40ms", "loss": 1e-3},
               "flows": [{"cc": "reno", "stack": stack}],
               "run": {"duration": "40s", "measure_from": "5s"}}
        return run(doc).summary["flows"][0]["bytes_delivered"]
    ratio = delivered("linux-6.6") / delivered("linux-2.6.22")
    assert 1.15 < ratio < 1.6, ratio


def test_the_testbed_refuses_an_older_stack():
    from tcpeval.testbed import _flow_problem

    assert _flow_problem({"stack": "linux-2.6.22"}).startswith(
        "stack: the testbed runs this machine's kernel, not linux-2.6.22")
    assert _flow_problem({"stack": "linux-6.6"}) is None


def test_the_summary_and_the_flow_table_say_which_stack_each_flow_ran():
    from tcpeval.cli import flow_table

    doc = {"network": {"bottleneck": "10Mbps", "rtt": "20ms"},
           "flows": [{"cc": "reno"}, {"cc": "cubic", "stack": "linux-2.6.22"}],
           "run": {"duration": "1s", "stack": "linux-3.16"}}
    summary = run(load_scenario(doc)).summary
    assert [f["stack"] for f in summary["flows"]] == ["linux-3.16", "linux-2.6.22"]
    table = flow_table(summary)
    stacks = next(c for c in table.columns if c.header == "stack")
    assert list(stacks._cells) == ["linux-3.16", "linux-2.6.22"]


BACKGROUND = {"long_lived": [{"count": 2, "cc": "reno"}], "web": [{"load": 0.2}]}


def test_background_flows_run_the_run_s_stack():
    """Issue 28: a study on linux-2.6.22 has its background on linux-2.6.22 (long-lived
    flows with that stack's initial window, web sources naming it for the engine);
    on today's stack the engine config is what it was (no stack fields)."""
    from tcpeval.scenario import engine_config

    doc = {"network": {"rtt": "50ms"}, "flows": [{}], "background": BACKGROUND,
           "run": {"stack": "ns2"}}
    cfg = engine_config(resolved(doc))
    long_lived = [f for f in cfg["flows"] if f.get("group") == "background"]
    assert len(long_lived) == 2
    for f in long_lived:
        assert (f["stack"], f["initial_cwnd"], f["delack_timeout_ns"]) == ("ns2", 2, 100_000_000)
    assert [w["stack"] for w in cfg["web"]] == ["ns2"]
    today = engine_config(resolved({**doc, "run": {}}))
    assert not any("stack" in f for f in today["flows"][1:] + today["web"])


def test_the_background_recipe_names_a_stack_other_than_today_s():
    """The recipe is part of the run key: a background on another stack is
    another run, and runs on today's stack keep their keys (no new field)."""
    doc = {"flows": [{}], "background": BACKGROUND}
    assert resolved({**doc, "run": {"stack": "linux-2.6.22"}})["meta"]["background"]["stack"] \
        == "linux-2.6.22"
    assert "stack" not in resolved(doc)["meta"]["background"]


@pytest.mark.parametrize("background,message", [
    ({"long_lived": [{"count": 1, "cc": "cubic"}]},
     "background.long_lived[0].cc: stack linux-2.4 offers reno, "),
    ({"web": [{"load": 0.1, "cc": "reno"}, {"load": 0.1, "cc": "cubic"}]},
     "background.web[1].cc: stack linux-2.4 offers reno, "),
])
def test_a_background_algorithm_the_run_s_stack_lacks_is_an_error(background, message):
    with pytest.raises(ScenarioError) as e:
        resolved({"flows": [{}], "background": background, "run": {"stack": "linux-2.4"}})
    assert str(e.value).startswith(message), str(e.value)


def test_background_traffic_runs_the_stack_in_the_engine():
    """Two seconds of web transfers alone on 100 ms: on ns2 each starts with 2
    segments and 3 s of initial RTO, on today's with 10, so today's stack finishes
    more transfers of the same draws in the same time."""
    def completed(stack):
        doc = {"network": {"bottleneck": "100Mbps", "rtt": "100ms"},
               "background": {"web": [{"load": 0.3, "start": "0s"}]},
               "run": {"duration": "2s", "stack": stack}}
        web = run(load_scenario(doc)).completions
        return int(web["completed"].sum())
    assert completed("linux-6.6") > completed("ns2")
