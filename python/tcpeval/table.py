"""A run's tables without pandas (issue 29: a short run must not pay pandas'
import). A `Table` is named numpy columns of one length, typed as pandas would
type the same values, so `to_pandas()` gives the DataFrame the run tables
always were and `write_parquet` writes the file `DataFrame.to_parquet(index=
False)` wrote, byte for byte (pyarrow's schema and its pandas metadata; a test
compares both with pandas').

A column is one of five kinds, after what pandas makes of a list of JSON
values: float64 (None becomes NaN), int64, bool, str (object array of str,
None where missing) and "empty" (object array of None only).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np

# The pandas metadata pyarrow writes per column kind: (pandas_type, numpy_type).
_PANDAS_TYPES = {"float64": ("float64", "float64"), "int64": ("int64", "int64"),
                 "bool": ("bool", "bool"), "str": ("object", "str"),
                 "empty": ("empty", "object")}


def column(values: list, name: str = "column") -> np.ndarray:
    """A column from a list of JSON values, typed as `pandas.DataFrame` types it:
    ints -> int64; floats, or numbers with None -> float64 (NaN); bools -> bool;
    strs with or without None -> str; None only -> empty; [] -> float64."""
    arr = np.array(values)
    if arr.dtype.kind in "fb":
        return arr
    if arr.dtype.kind == "i":
        return arr.astype(np.int64, copy=False)
    present = [v for v in values if v is not None]
    if all(isinstance(v, str) for v in present):  # None only, or str and None
        return np.array(values, dtype=object)
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    raise TypeError(f"table column {name!r}: mixed values pandas would keep as objects")


def kind(col: np.ndarray) -> str:
    """The column's kind (module doc)."""
    if col.dtype != object:
        return col.dtype.name
    # Elementwise `== None` in numpy's loop: a Python scan of a long column of
    # None (a queue's RED average on a DropTail link) costs milliseconds.
    return "empty" if np.equal(col, None).all() else "str"


class Table:
    """Named columns of one length, in order (module doc)."""

    __slots__ = ("columns",)

    def __init__(self, columns: dict[str, np.ndarray]):
        self.columns = columns

    @classmethod
    def from_lists(cls, columns: dict[str, list]) -> Table:
        return cls({name: column(values, name) for name, values in columns.items()})

    @classmethod
    def empty(cls, names) -> Table:
        """No rows: what `pandas.DataFrame(columns=names)` is (object columns)."""
        return cls({name: np.array([], dtype=object) for name in names})

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __getitem__(self, key):
        """A column by name, or (as a DataFrame does) the rows a boolean mask
        selects, as a Table."""
        if isinstance(key, str):
            return self.columns[key]
        return Table({name: col[key] for name, col in self.columns.items()})

    def __contains__(self, name: str) -> bool:
        return name in self.columns

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame({name: pd.Series(col, dtype="str" if kind(col) == "str" else None)
                             for name, col in self.columns.items()})

    def to_arrow(self):
        """The pyarrow table `pa.Table.from_pandas(self.to_pandas(),
        preserve_index=False)` is, built from the buffers: pyarrow's `pa.array`
        imports pandas (to ask whether the values are pandas'), this does not."""
        import pyarrow as pa

        kinds = {name: kind(col) for name, col in self.columns.items()}
        arrays = [_arrow_array(col, kinds[name]) for name, col in self.columns.items()]
        schema = pa.schema([(name, a.type) for name, a in zip(self.columns, arrays,
                                                              strict=True)],
                           metadata={b"pandas": _pandas_metadata(kinds)})
        return pa.Table.from_arrays(arrays, schema=schema)


def _arrow_array(col: np.ndarray, col_kind: str):
    import pyarrow as pa

    n = len(col)
    if col_kind == "empty":
        return pa.nulls(n)
    if col_kind == "str":
        valid = np.array([v is not None for v in col], dtype=bool)
        data = [v.encode() if v is not None else b"" for v in col]
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum([len(b) for b in data], out=offsets[1:])
        return _from_buffers(pa.large_string(), valid,
                             [pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])
    if col_kind == "bool":
        values = pa.py_buffer(np.packbits(col, bitorder="little"))
        return pa.Array.from_buffers(pa.bool_(), n, [None, values])
    arr = np.ascontiguousarray(col)
    # pandas' NaN is Arrow's null (from_pandas semantics).
    valid = ~np.isnan(arr) if col_kind == "float64" else np.ones(n, dtype=bool)
    return _from_buffers(pa.from_numpy_dtype(arr.dtype), valid, [pa.py_buffer(arr)])


def _from_buffers(arrow_type, valid: np.ndarray, buffers: list):
    import pyarrow as pa

    nulls = len(valid) - int(valid.sum())
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(arrow_type, len(valid), [bitmap, *buffers], null_count=nulls)


def _pandas_metadata(kinds: dict[str, str]) -> bytes:
    """The b"pandas" schema metadata pyarrow's `from_pandas` writes for a frame
    with a default index (not stored): what `pd.read_parquet` restores from."""
    import pyarrow as pa

    columns = [{"name": name, "field_name": name, "pandas_type": _PANDAS_TYPES[k][0],
                "numpy_type": _PANDAS_TYPES[k][1], "metadata": None}
               for name, k in kinds.items()]
    meta = {"index_columns": [], "column_indexes": [], "columns": columns, "attributes": {},
            "creator": {"library": "pyarrow", "version": pa.__version__},
            "pandas_version": _pandas_version()}
    return json.dumps(meta).encode()


@functools.cache
def _pandas_version() -> str:
    """The installed pandas' version, without importing pandas (0.2-0.4 s): the
    name of the dist-info directory installed next to the package
    ("pandas-3.1.1.dist-info", PEP 427), else its metadata through
    importlib.metadata (which looks through every installed package, 5-20 ms)."""
    import importlib.util

    spec = importlib.util.find_spec("pandas")
    if spec is not None and spec.origin:
        site = Path(spec.origin).parent.parent
        found = [d.name for d in site.glob("pandas-*.dist-info")]
        if len(found) == 1:
            return found[0].removeprefix("pandas-").removesuffix(".dist-info")
    from importlib.metadata import version

    return version("pandas")


def write_parquet(table, path: Path) -> None:
    """Write a Table, or a DataFrame (a run read back from disk), as
    `DataFrame.to_parquet(index=False)` would."""
    import pyarrow.parquet as pq

    if isinstance(table, Table):
        pq.write_table(table.to_arrow(), path)
        return
    import pyarrow as pa

    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), path)
