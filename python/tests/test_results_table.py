"""`tcpeval results STORE` (issue 31 item 3): every swept axis is a column, the
algorithm included, and rows are sorted by the axes as the sweep listed them."""

import csv
import io
import itertools
from types import SimpleNamespace

import pandas as pd
import pytest
from helpers import small_scenario
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import tcpeval
from tcpeval import cli
from tcpeval.store import Store, axis_columns, sort_by_axes

# Listed out of alphabetical and of string order: the sweep's order must win.
AXES = {"flows.0.cc": ["reno", "cubic", "bbr"], "network.rtt": ["20ms", "100ms"]}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store of the AXES grid x 2 repetitions; every run holds the same small
    result (the table's layout is under test, not the simulation)."""
    result = tcpeval.run(small_scenario(duration="2s", measure_from="1s"))
    s = Store(tmp_path_factory.mktemp("results") / "s")
    specs = []
    for n, (cc, rtt, rep) in enumerate(itertools.product(*AXES.values(), range(2))):
        # Keys whose hash order is not the grid's order.
        specs.append(SimpleNamespace(key=f"{(n * 7919) % 97:020x}", repetition=rep, seed=rep,
                                     params={"flows.0.cc": cc, "network.rtt": rtt}))
        s.write(specs[-1], result)
    s.record_sweep(SimpleNamespace(name="grid", axes=AXES, repetitions=2,
                                   runs=specs))
    return s


def invoke(*args):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


def grid_order() -> list[tuple]:
    return [(cc, rtt, str(rep)) for cc, rtt, rep in itertools.product(*AXES.values(), range(2))]


def test_csv_rows_follow_the_sweeps_axes_not_the_keys(store):
    r = invoke("results", store.root, "--format", "csv")
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [(x["flows.0.cc"], x["network.rtt"], x["repetition"]) for x in rows] == grid_order()
    assert [x["key"] for x in rows] != sorted(x["key"] for x in rows)


def test_the_terminal_table_keeps_the_algorithm_axis_readable(store):
    r = CliRunner().invoke(cli.app, ["results", str(store.root)], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    header = next(line for line in r.stdout.splitlines() if "key" in line)
    assert "flows.0.cc" in header and "network.rtt" in header
    body = [line for line in r.stdout.splitlines() if line.startswith("│")]
    cells = [[c.strip() for c in line.strip("│").split("│")] for line in body]
    cc_col = [c.strip() for c in header.strip("┃").split("┃")].index("flows.0.cc")
    assert [row[cc_col] for row in cells] == [cc for cc, _, _ in grid_order()]
    # flow0.cc repeats the axis (here it even disagrees: every run is the same result).
    assert "flow0.cc" not in header


def test_axis_columns_are_the_parameters_between_seed_and_status(store):
    assert axis_columns(store.index()) == list(AXES)


values = st.one_of(st.sampled_from(["1ms", "5ms", "20ms", "100ms", "1.5s", "reno", "bbr"]),
                   st.integers(-5, 500), st.floats(0, 10, allow_nan=False))


@given(rows=st.lists(st.tuples(values, st.integers(0, 3)), min_size=1, max_size=12),
       listed=st.lists(values, max_size=4, unique=True), seed=st.randoms())
@settings(max_examples=60, deadline=None)
def test_sorting_ignores_the_rows_first_order_and_puts_listed_values_first(rows, listed, seed):
    df = pd.DataFrame([{"key": f"k{i}", "repetition": rep, "seed": 0, "x": v, "status": "ok"}
                       for i, (v, rep) in enumerate(rows)])
    shuffled = df.sample(frac=1, random_state=seed.randint(0, 2**31))
    a = sort_by_axes(df, {"x": listed})
    b = sort_by_axes(shuffled, {"x": listed})
    key = list(zip(a.x, a.repetition, strict=True))
    assert key == list(zip(b.x, b.repetition, strict=True))
    # Listed values come first, in the listing's order; the rest after them.
    ranks = [listed.index(v) if v in listed else len(listed) for v in a.x]
    assert ranks == sorted(ranks)


def test_unlisted_values_sort_naturally_and_missing_ones_last():
    df = pd.DataFrame({"key": list("abcde"), "repetition": 0, "seed": 0,
                       "network.rtt": ["100ms", None, "20ms", "5ms", "1.5ms"], "status": "ok"})
    assert list(sort_by_axes(df)["network.rtt"])[:4] == ["1.5ms", "5ms", "20ms", "100ms"]
    assert pd.isna(sort_by_axes(df)["network.rtt"].iloc[4])
