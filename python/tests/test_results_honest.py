"""Issue 26, part D: results say what they hold. Windowed metrics count only the
window, a parking lot's bottleneck is its narrowest hop, completions tell
unfinished transfers apart, and messages fit the backend."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from tcpeval import cli
from tcpeval.report import bottleneck_queue, run_report
from tcpeval.scenario import load_scenario, resolve
from tcpeval.store import write_run

run_mod = importlib.import_module("tcpeval.run")  # the package exports run() as `run`

LOSSY = {
    "network": {"bottleneck": "20Mbps", "rtt": "20ms", "buffer": "0.2bdp", "loss": 0.1},
    "flows": [{"cc": "reno", "count": 2, "start": ["0s", "1s"]}],
    "run": {"duration": "8s"},
}


def lossy(duration: str = "8s") -> dict:
    return {**LOSSY, "run": {"duration": duration}}


def cli_json(args: list[str]) -> tuple[dict, str]:
    r = CliRunner().invoke(cli.app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    # --json prints the summary alone on stdout; a note goes to stderr first.
    text = r.stdout
    return json.loads(text[text.index("{"):]), r.output


@pytest.fixture(scope="module")
def lossy_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("lossy") / "run"
    write_run(run_mod.run(lossy()), out)
    return out


# ----- windowed metrics --------------------------------------------------------------


@pytest.mark.parametrize("start,end", [(0, 3), (3, 6)])
def test_a_window_counts_the_retransmits_timeouts_and_drops_inside_it(lossy_run, start, end):
    """The run up to T is a prefix of the longer run (same seed), so the events of
    the window [a, b] are those of the run to b minus those of the run to a."""
    s, _ = cli_json(["metrics", str(lossy_run), "--from", f"{start}s", "--to", f"{end}s"])

    def totals(t: int) -> tuple[list[int], list[int], int]:
        if t == 0:
            return [0, 0], [0, 0], 0
        short = run_mod.run(lossy(f"{t}s")).summary
        return ([f["retransmits_total"] for f in short["flows"]],
                [f["timeouts_total"] for f in short["flows"]],
                short["bottleneck"]["drops_total"])

    (r0, t0, d0), (r1, t1, d1) = totals(start), totals(end)
    assert [f["retransmits"] for f in s["flows"]] == [b - a for a, b in zip(r0, r1, strict=True)]
    assert [f["timeouts"] for f in s["flows"]] == [b - a for a, b in zip(t0, t1, strict=True)]
    assert s["bottleneck"]["drops"] == d1 - d0
    whole = json.loads((lossy_run / "summary.json").read_text())
    assert [f["retransmits_total"] for f in s["flows"]] == [
        f["retransmits_total"] for f in whole["flows"]]
    assert sum(f["retransmits"] for f in s["flows"]) < sum(
        f["retransmits_total"] for f in s["flows"])
    assert sum(t1) > sum(t0) > 0 or start == 0  # timeouts inside and before the window


def test_the_window_loss_rate_is_the_windows(lossy_run):
    s, _ = cli_json(["metrics", str(lossy_run), "--from", "3s", "--to", "6s"])
    links = pd.read_parquet(lossy_run / "links.parquet")
    rows = links[(links["link"] == "bottleneck") & (links["t_s"] > 3) & (links["t_s"] <= 6)]
    assert s["bottleneck"]["loss_rate"] == rows["drops"].sum() / rows["arrivals"].sum()


def test_a_run_stored_without_interval_counts_says_they_are_unavailable(lossy_run, tmp_path):
    import shutil

    old = tmp_path / "old"
    shutil.copytree(lossy_run, old)
    flows = pd.read_parquet(old / "flows.parquet").drop(columns=["retransmits", "timeouts"])
    flows.to_parquet(old / "flows.parquet")
    s, output = cli_json(["metrics", str(old), "--from", "3s", "--to", "6s"])
    assert all(f["retransmits"] is None and f["timeouts"] is None for f in s["flows"])
    assert all(f["retransmits_total"] > 0 for f in s["flows"])
    assert "unavailable" in output and "retransmits_total" in output
    table = CliRunner().invoke(cli.app, ["metrics", str(old), "--from", "3s", "--to", "6s"])
    assert table.exit_code == 0
    row = next(line for line in table.stdout.splitlines() if "reno-0" in line)
    assert " - " in row and "None" not in row


# ----- parking lots --------------------------------------------------------------------


def parking(rates: list[str]) -> dict:
    return {
        "network": {"rtt": "40ms", "hops": [{"rate": r, "delay": "5ms"} for r in rates]},
        "flows": [{"cc": "reno", "label": "long"}, {"cc": "cubic", "path": [0, 1]}],
        "run": {"duration": "4s", "measure_from": "1s"},
    }


@pytest.mark.parametrize("rates,narrowest", [
    (["100Mbps", "40Mbps", "80Mbps"], "hop1"),
    (["50Mbps", "50Mbps"], "hop0"),  # a tie: the first
])
def test_a_parking_lots_summary_describes_its_narrowest_hop(rates, narrowest, tmp_path):
    result = run_mod.run(parking(rates))
    b = result.summary["bottleneck"]
    link = next(li for li in result.raw["links"] if li["name"] == narrowest)
    assert b["name"] == narrowest and b["capacity_mbps"] == link["capacity_bps"] / 1e6
    assert b["drops_total"] == link["drops_overflow"] + link["drops_random"] + link["drops_early"]
    assert result.summary["sim"]["packets"] == link["tx_data_packets"]
    assert [h["name"] for h in result.summary["hops"]] == [f"hop{j}" for j in range(len(rates))]
    assert set(bottleneck_queue(result)["link"]) == {narrowest}
    page = run_report(result, tmp_path / "report.html").read_text()
    assert f"Bottleneck ({narrowest}) {b['capacity_mbps']:g} Mbit/s" in page


def test_the_printed_header_names_the_narrowest_hop(tmp_path):
    scenario = tmp_path / "p.toml"
    scenario.write_text('[network]\nrtt = "40ms"\nhops = [{rate = "100Mbps"}, '
                        '{rate = "40Mbps"}, {rate = "80Mbps"}]\n[[flows]]\ncc = "reno"\n'
                        '[run]\nduration = "2s"\n')
    r = CliRunner().invoke(cli.app, ["run", str(scenario), "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    assert "bottleneck (hop1) 40 Mbit/s" in r.stdout


def test_a_dumbbell_summary_has_no_hop_list():
    s = run_mod.run(lossy("2s")).summary
    assert s["bottleneck"]["name"] == "bottleneck" and "hops" not in s


# ----- completions ------------------------------------------------------------------


def test_completions_carry_size_and_delivered_bytes_and_mark_unfinished(tmp_path):
    data = {"network": {"bottleneck": "10Mbps", "rtt": "20ms"},
            "flows": [{"cc": "reno"},
                      {"cc": "reno", "count": 4, "bytes": "300KB",
                       "start": ["0s", "0.2s", "0.4s", "0.9s"]}],
            "run": {"duration": "1s"}}
    write_run(run_mod.run(data), tmp_path / "o")
    c = pd.read_parquet(tmp_path / "o" / "completions.parquet")
    assert list(c["id"]) == [1, 2, 3, 4]  # the bulk flow is not a transfer
    assert (c["size_bytes"] == 300_000).all()
    done, open_ = c[c["completed"]], c[~c["completed"]]
    assert len(done) and len(open_)
    assert (done["delivered_bytes"] == 300_000).all() and (done["fct_s"] > 0).all()
    assert (done["fct_s"] == done["end_s"] - done["start_s"]).all()
    assert (open_["delivered_bytes"] < 300_000).all()
    assert open_["end_s"].isna().all() and open_["fct_s"].isna().all()


def test_background_web_transfers_carry_their_drawn_sizes():
    """The engine draws the web transfers: each is a completions row, ids after
    the scenario's flows, with the size the engine drew and what it delivered."""
    data = {"network": {"bottleneck": "50Mbps", "rtt": "20ms"}, "flows": [{"cc": "reno"}],
            "background": {"web": [{"load": 0.3}]}, "run": {"duration": "3s"}}
    resolved = resolve(load_scenario(data))
    raw, wall = run_mod.run_backend(resolved)
    c = run_mod.build_result(resolved, raw, wall).completions
    sizes = dict(zip(raw["web"]["id"], raw["web"]["size_bytes"], strict=True))
    assert len(sizes) > 10 and dict(zip(c["id"], c["size_bytes"], strict=True)) == sizes
    assert list(c["id"]) == list(range(1, len(c) + 1)) and (c["group"] == "web").all()
    assert c["completed"].any() and not c["completed"].all()
    assert (c["delivered_bytes"] <= c["size_bytes"]).all()
    assert (c["delivered_bytes"][c["completed"]] == c["size_bytes"][c["completed"]]).all()


# ----- messages fit the backend -------------------------------------------------------


@pytest.mark.parametrize("backend,target,torn_down", [
    ("sim", "simulate", False),
    ("testbed", "_testbed", True),
])
def test_the_interrupt_message_fits_the_backend(monkeypatch, tmp_path, backend, target,
                                                torn_down):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_mod, target, interrupted)
    scenario = tmp_path / "s.toml"
    scenario.write_text('[network]\nbottleneck = "10Mbps"\nrtt = "20ms"\n[[flows]]\ncc = "reno"\n'
                        '[run]\nduration = "2s"\n')
    r = CliRunner().invoke(cli.app, ["run", str(scenario), "--backend", backend,
                                     "--out", str(tmp_path / "o")])
    assert r.exit_code == 130
    assert "interrupted; nothing written" in r.output
    assert ("testbed run was torn down" in r.output) == torn_down
    assert not (tmp_path / "o").exists()


# ----- the per-flow summary over many flows -------------------------------------------


def test_many_flows_are_each_summarised_from_their_own_rows():
    """The grouped summary gives each flow the statistics of its own rows, as a
    plain filter of the tables per flow does."""
    data = {"network": {"bottleneck": "200Mbps", "rtt": "20ms", "buffer": "0.3bdp"},
            "flows": [{"cc": "reno"},
                      {"cc": "cubic", "count": 300, "bytes": "400KB", "start_jitter": "3s"},
                      {"cc": "reno", "streams": 3, "start": "0.5s"}],
            "run": {"duration": "4s", "measure_from": "1s"}}
    result = run_mod.run(data)
    s, flows, trace = result.summary, result.flows, result.trace
    interval = result.scenario["interval_ns"] / 1e9
    assert [f["id"] for f in s["flows"]] == list(range(302))
    for f in s["flows"][::13] + s["flows"][-1:]:
        first = max(1.0, f["start_s"])
        rows = flows[(flows["flow"] == f["id"]) & (flows["t_s"] - interval >= first - 1e-9)]
        tput = rows["throughput_mbps"]
        assert f["throughput_mbps"] == (tput.mean() if len(tput) else 0.0)
        assert f["throughput_q50_mbps"] == (tput.quantile(0.5) if len(tput) else None)
        window = flows[(flows["flow"] == f["id"]) & (flows["t_s"] > 1.0)]
        assert f["retransmits"] == window["retransmits"].sum()
        tr = trace[(trace["flow"] == f["id"]) & (trace["t_s"] >= first)]
        cwnd = tr.groupby("t_s")["cwnd_pkts"].sum().mean()
        assert f["mean_cwnd_pkts"] == (None if np.isnan(cwnd) else cwnd)
    last = s["flows"][-1]
    assert last["streams"] == 3 and last["retransmits_total"] == sum(
        st["retransmits_total"] for st in s["streams"] if st["flow"] == last["id"])
