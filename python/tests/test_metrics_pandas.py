"""A run computes its tables and summary without pandas (issue 29, start-up):
these check that the numpy paths give what pandas gives, to the last bit, on
varied inputs: the column types (tcpeval.table), the Parquet bytes, groupby
sums, means and mapped lookups (tcpeval.metrics); and metrics.quantile what
np.quantile gives."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tcpeval import metrics
from tcpeval.table import Table, column, write_parquet

FLOATS = st.floats(-1e150, 1e150, allow_nan=False)
# Magnitudes far apart, so that the order and compensation of additions show.
WIDE = st.sampled_from([1e16, -1e16, 1.0, -1.0, 0.5, 3.0, 2.0**53, 0.1]) | FLOATS


@st.composite
def json_column(draw, n):
    """A column as the engine's JSON gives it: one type of value, maybe with None."""
    kind = draw(st.sampled_from(["int", "float", "str", "bool", "none"]))
    value = {"int": st.integers(-2**40, 2**40), "float": FLOATS, "str": st.text(max_size=4),
             "bool": st.booleans(), "none": st.none()}[kind]
    may_miss = kind in ("float", "str") and draw(st.booleans())
    return draw(st.lists(value | st.none() if may_miss else value, min_size=n, max_size=n))


@st.composite
def json_table(draw):
    n = draw(st.integers(0, 6))
    names = draw(st.lists(st.sampled_from("abcde"), min_size=1, max_size=4, unique=True))
    return {name: draw(json_column(n)) for name in names}


def _pandas_parquet(df: pd.DataFrame, path) -> bytes:
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)
    return path.read_bytes()


@settings(max_examples=30, deadline=None)
@given(json_table())
@example({"a": ["\x00"]})  # a numpy str array drops trailing NULs (found by hypothesis)
def test_table_is_the_dataframe_pandas_makes_and_writes_its_parquet(tmp_path_factory, cols):
    df = pd.DataFrame(cols)
    table = Table.from_lists(cols)
    pd.testing.assert_frame_equal(table.to_pandas(), df)
    d = tmp_path_factory.mktemp("pq")
    write_parquet(table, d / "new.parquet")
    assert (d / "new.parquet").read_bytes() == _pandas_parquet(df, d / "old.parquet")


@pytest.mark.parametrize("names", [["x"], ["t_s", "flow", "cc"]])
def test_an_empty_table_is_pandas_frame_of_named_columns(tmp_path, names):
    df = pd.DataFrame(columns=names)
    pd.testing.assert_frame_equal(Table.empty(names).to_pandas(), df)
    write_parquet(Table.empty(names), tmp_path / "new.parquet")
    assert (tmp_path / "new.parquet").read_bytes() == _pandas_parquet(df, tmp_path / "old.pq")


def test_mixed_values_are_refused_by_name():
    with pytest.raises(TypeError, match="'link'"):
        column(["a", 1.5], "link")


def test_boolean_mask_selects_rows_like_a_dataframe():
    table = Table.from_lists({"t_s": [1.0, 2.0, 3.0], "link": ["a", "b", "a"]})
    rows = table[np.asarray(table["link"]) == "a"]
    assert rows["t_s"].tolist() == [1.0, 3.0] and len(rows) == 2


def _bits(x: np.ndarray) -> list[int]:
    return np.asarray(x, dtype=np.float64).view(np.int64).tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), WIDE), max_size=30), st.booleans())
def test_group_sum_is_pandas_groupby_sum(rows, presorted):
    """Both of pandas' ways: rows already in key order (numpy's reduceat) and
    not (Kahan's compensated sum), bit for bit."""
    if presorted:
        rows = sorted(rows, key=lambda r: r[0])
    keys = np.array([k for k, _ in rows], dtype=np.int64)
    values = np.array([v for _, v in rows], dtype=np.float64)
    want = pd.DataFrame({"k": keys, "v": values}).groupby("k")["v"].sum()
    (got_keys,), got = metrics.group_sum([keys], values)
    assert got_keys.tolist() == want.index.tolist()
    assert _bits(got) == _bits(want.to_numpy())


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.1, 0.2, 0.3]), st.integers(0, 2),
                          st.integers(0, 10**6)), max_size=20))
def test_group_sum_by_two_keys_of_counts(rows):
    t = np.array([r[0] for r in rows], dtype=np.float64)
    flow = np.array([r[1] for r in rows], dtype=np.int64)
    n = np.array([r[2] for r in rows], dtype=np.int64)
    want = pd.DataFrame({"t": t, "f": flow, "n": n}).groupby(["t", "f"], as_index=False)["n"].sum()
    (got_t, got_f), got = metrics.group_sum([t, flow], n)
    assert got_t.tolist() == want["t"].tolist() and got_f.tolist() == want["f"].tolist()
    assert got.tolist() == want["n"].tolist() and got.dtype == np.int64


@given(st.lists(WIDE | st.just(math.nan), min_size=1, max_size=40))
def test_series_mean_is_pandas_mean(x):
    arr = np.array(x, dtype=np.float64)
    got, want = metrics.series_mean(arr), float(pd.Series(arr).mean())
    assert _bits([got]) == _bits([want]) or (math.isnan(got) and math.isnan(want))


@given(st.lists(st.integers(0, 5), max_size=20), st.dictionaries(st.integers(0, 5), FLOATS))
def test_lookup_is_series_map(keys, mapping):
    want = pd.Series(keys, dtype=np.int64).map(mapping).to_numpy(dtype=np.float64)
    got = metrics.lookup(mapping, np.array(keys, dtype=np.int64))
    if keys:
        np.testing.assert_array_equal(got.astype(np.float64), want)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from([1.0, 2.0, 3.0]), WIDE),
                min_size=1, max_size=20))
def test_table_functions_agree_on_tables_and_dataframes(rows):
    """The metrics functions the summary uses give one answer for a Table and
    for the DataFrame of the same rows."""
    cols = {"flow": [r[0] for r in rows], "t_s": [r[1] for r in rows],
            "throughput_mbps": [r[2] for r in rows], "retransmits": [r[0] * 2 for r in rows]}
    table, df = Table.from_lists(cols), pd.DataFrame(cols)
    for f in (lambda x: metrics.aggregate_cov(x, 0.5, 2.5),
              lambda x: metrics.window_counts(x, ["retransmits"], 0.5, 3.0),
              lambda x: {k: v.tolist() for k, v in metrics.per_flow(x, "throughput_mbps").items()},
              lambda x: len(metrics.whole_intervals(x, {0: 0.0, 1: 1.0}, 3.0, 1.0))):
        a, b = f(table), f(df)
        assert a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


@given(st.lists(FLOATS | st.sampled_from([math.inf, -math.inf, math.nan]), min_size=1,
                max_size=30),
       st.floats(0, 1) | st.sampled_from([0.25, 0.5, 0.75, 0.99]))
def test_quantile_is_numpys(x, q):
    arr = np.array(x, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # numpy's inf - inf
        want = float(np.quantile(arr, q))
    got = metrics.quantile(arr, q)
    assert _bits([got]) == _bits([want]) or (math.isnan(got) and math.isnan(want))
