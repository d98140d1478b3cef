"""Run a study into a result store and build its report."""

from __future__ import annotations

import base64
import fnmatch
import html
import json
import math
from pathlib import Path

import matplotlib.pyplot as plt

from .._lazy import LazyModule
from ..report import _png
from ..scenario import ScenarioError
from ..store import Store
from ..sweep import Plan, plan, run_plan
from . import get, protocol

pd = LazyModule("pandas")


def plan_study(name: str, profile: str,
               cells: list[str] | None = None) -> tuple[Plan, dict[str, str]]:
    """One plan with the study's runs (each cell through the sweep machinery,
    one run per seed of its design); returns it and run name -> run key for
    every run (the report needs them all). `cells`: shell-style patterns of the
    run names to run (all when None), to run a study in parts."""
    design = get(name).design(profile)
    specs, keys = [], {}
    for cell in design.cells:
        for spec in plan(design.sweep(cell), name=cell.name).runs:
            run = design.run_name(cell, spec.repetition)
            keys[run] = spec.key
            if cells is None or any(fnmatch.fnmatchcase(run, pat) for pat in cells):
                specs.append(spec)
    if not specs:
        raise ScenarioError(f"--cells: no cell of {name} ({profile}) matches "
                            f"{', '.join(cells or [])}; cell names start with "
                            f"{', '.join(sorted({c.split('-')[0] + '-' for c in keys}))}")
    unique = list({s.key: s for s in specs}.values())
    return Plan(name=f"{name}-{profile}", axes={}, repetitions=1, runs=unique), keys


def run_study(name: str, profile: str, store_dir: str | Path, *, workers=None, dask=None,
              memory_limit=None, progress=None, cells: list[str] | None = None) -> dict:
    p, keys = plan_study(name, profile, cells)
    store = Store(store_dir)
    (store.root / "study.json").write_text(json.dumps({"study": name, "profile": profile,
                                                       "cells": keys}, indent=2))
    return run_plan(p, store, workers=workers, dask=dask, memory_limit=memory_limit,
                    progress=progress)


def _summaries(store: Store, keys: dict[str, str]) -> dict[str, dict]:
    out = {}
    for cell, key in keys.items():
        path = store.root / "runs" / key / "summary.json"
        if path.exists():
            out[cell] = json.loads(path.read_text())
    return out


def run_note(study, profile: str) -> str:
    """What was run, for every figure and the page header: the repetitions and
    their seeds (from the study's design), then what the study adds
    (its run_note(profile), if any)."""
    seeds = study.design(profile).seeds
    reps = (f"one repetition per cell, seed {seeds[0]}" if len(seeds) == 1 else
            f"{len(seeds)} repetitions per cell, seeds {', '.join(map(str, seeds))}")
    details = getattr(study, "run_note", None)
    return f"{reps}; {details(profile)}" if details else reps


def completeness(finished: int, planned: int) -> str:
    """How much of the plan a report shows; it goes on every figure, so a
    figure copied out of a partly run store does not pass for the whole
    design."""
    if finished == planned:
        return f"all {planned} runs finished"
    return (f"only {finished} of {planned} runs finished: a point averages the "
            "repetitions that finished, cells without any are left out")


def stamp(fig, text: str) -> None:
    """Write what was run under the figure, so a PNG or SVG copied out of the
    report still says it."""
    fig.text(0.0, -0.01, text, fontsize=7, color="0.35", ha="left", va="top",
             wrap=True)


def open_study_store(name: str, store_dir: str | Path) -> tuple[Store, str, dict, dict]:
    """A study's store: the store, its profile, run name -> run key of every
    planned run, and the finished runs' summaries."""
    store = Store(store_dir)
    meta_path = store.root / "study.json"
    if not meta_path.exists():
        raise FileNotFoundError(f"{store_dir}: no study.json (run `tcpeval study run` first)")
    meta = json.loads(meta_path.read_text())
    if meta["study"] != name:
        raise ValueError(f"{store_dir} holds study {meta['study']!r}, not {name!r}")
    # The keys as this code computes them: opening the store moved runs made
    # under an older run key onto the current one (store.py).
    _, keys = plan_study(name, meta["profile"])
    return store, meta["profile"], keys, _summaries(store, keys)


def interval_tables(store: Store, keys: dict[str, str]):
    """flows_of(run, table="flows"): a finished run's interval table (flows by
    default, or links, queue, trace)."""
    def flows_of(cell: str, table: str = "flows"):
        return pd.read_parquet(store.root / "runs" / keys[cell] / f"{table}.parquet")
    return flows_of


def store_records(name: str, store_dir: str | Path) -> tuple[str, pd.DataFrame]:
    """The profile and the records (protocol.records, with each run's key) of a
    study store's finished runs, for a study whose report is made from them."""
    store, profile, keys, results = open_study_store(name, store_dir)
    study = get(name)
    recs = protocol.records(study.design(profile), results, interval_tables(store, keys),
                            lambda cell, summary, flows:
                            study.run_record(cell, summary, flows, profile))
    if len(recs):
        recs.insert(1, "key", [keys[r] for r in recs["run"]])
    return profile, recs


def report_study(name: str, store_dir: str | Path, out_dir: str | Path | None = None) -> Path:
    """Write report/index.html (self-contained), CSV tables, and every figure as
    PNG and SVG (each stamped with the profile, repetitions and seeds)."""
    store, profile, keys, results = open_study_store(name, store_dir)
    rep = get(name).report(results, profile, interval_tables(store, keys))
    # Cells that share a scenario share one run.
    finished = {keys[c] for c in results}
    return write_report(name, profile, rep, len(finished), len(set(keys.values())),
                        Path(out_dir) if out_dir else store.root / "report")


def write_report(name: str, profile: str, rep: dict, finished: int, planned: int,
                 out: Path) -> Path:
    """A study report's page, CSV tables and figures in `out`."""
    study = get(name)
    out.mkdir(parents=True, exist_ok=True)
    what = f"{run_note(study, profile)}; {completeness(finished, planned)}"
    parts = [f"<h1>{html.escape(study.TITLE)}</h1>",
             f"<p>Source: {study.SOURCE}. Profile <b>{profile}</b>; "
             f"{html.escape(what)}.</p>"]
    parts += [f"<p>{html.escape(n)}</p>" for n in rep.get("notes", [])]
    captions = report_captions(name)
    for tname, df in rep["tables"].items():
        df.to_csv(out / f"{tname}.csv", index=False)
        parts.append(f"<h2>{tname}</h2>" + html_table(df, caption_of(captions, tname)))
    for fname, fig in rep.get("figures", {}).items():
        stamp(fig, f"tcpeval study {name}, profile {profile}: {what}")
        with plt.rc_context({"svg.fonttype": "none"}):  # text stays text (searchable)
            fig.savefig(out / f"{fname}.svg", bbox_inches="tight")
        data = _png(fig)
        (out / f"{fname}.png").write_bytes(base64.b64decode(data))
        parts.append(f'<figure><img alt="{fname}" src="data:image/png;base64,{data}">'
                     f"<figcaption>{html.escape(caption_of(captions, fname))} (profile "
                     f"{profile}; {html.escape(what)})</figcaption></figure>")
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>"
            f"{html.escape(study.TITLE)}</title><style>body{{font-family:sans-serif;"
            "max-width:1000px;margin:2em auto}}table{{border-collapse:collapse}}"
            "td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}}"
            "caption{{caption-side:top;text-align:left;font-style:italic;padding:4px 0}}"
            "td.off{{background:#f4c7c3}}td.ci-off{{background:#fce8b2}}"
            "img{{max-width:100%}}</style></head><body>" + "\n".join(parts) + "</body></html>\n")
    index = out / "index.html"
    index.write_text(page)
    return index


# ----- the report's tables, as a reader sees them -------------------------------------------

# Unit suffixes of column names (rtt_ms, flow2_nru_db_rep_std) and how a header
# writes them.
UNITS = {"mbps": "Mbit/s", "gbps": "Gbit/s", "ms": "ms", "s": "s", "db": "dB",
         "pkts": "packets"}


def report_captions(study: str) -> dict[str, str]:
    """item (table or figure name) -> its caption with its source in the paper,
    from data/<study>/report_captions.csv."""
    return {r["item"]: r["caption"] if r["source"] == "tcpeval" else
            f"{r['caption']} [paper: {r['source']}]"
            for r in protocol.published(study, "report_captions")}


def caption_of(captions: dict[str, str], item: str) -> str:
    if item not in captions:
        raise KeyError(f"{item}: no caption in the study's data/report_captions.csv")
    return captions[item]


def header(column: str) -> str:
    """A column's header with its unit: rtt_ms -> "rtt (ms)", buffer_pct_bdp ->
    "buffer (% BDP)", ours_cwnd -> "ours cwnd (packets)"."""
    words, unit = [], None
    tokens = column.split("_")
    for i, tok in enumerate(tokens):
        if tok == "pct" and tokens[i + 1:i + 2] == ["bdp"]:
            unit = "% BDP"
        elif tok == "bdp" and unit == "% BDP":
            continue
        elif i > 0 and tok in UNITS and unit is None:
            unit = UNITS[tok]
        else:
            words.append(tok)
    if unit is None and "cwnd" in words:
        unit = "packets"
    name = " ".join(words)
    return f"{name} ({unit})" if unit else name


def column_format(values) -> callable:
    """How one column's numbers print: integers as integers; a column with
    numbers below 1e-3 (probabilities) in the paper's 1e-4 form below 0.1; one
    spanning three decades or more with 4 significant digits each; otherwise 4
    significant digits of its typical value (at most 3 decimals), the same
    decimals down the column."""
    x = [float(v) for v in values if _is_number(v) and math.isfinite(float(v))]
    if not x:
        return str
    if all(v == round(v) for v in x) and max(abs(v) for v in x) < 1e15:
        return lambda v: f"{v:.0f}"
    nonzero = sorted(abs(v) for v in x if v != 0)
    if nonzero[0] < 1e-3:
        return lambda v: protocol.short(v) if 0 < abs(v) < 0.1 else f"{v:.4g}"
    if nonzero[-1] / nonzero[0] >= 1e3:
        return lambda v: f"{v:.4g}"
    typical = nonzero[len(nonzero) // 2]
    decimals = min(3, max(0, 3 - math.floor(math.log10(typical))))
    return lambda v: f"{v:.{decimals}f}"


def _is_number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _missing(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _cell(v, fmt) -> str:
    if _missing(v):
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return fmt(v) if _is_number(v) else str(v)


def _outside(row: dict) -> str | None:
    """How the difference cell of an agreement row is marked: "off" when ours
    (the mean) breaks the rule, "ci-off" when it keeps the rule but its
    confidence interval lies wholly outside the paper's value."""
    if not _missing(row["agrees"]) and not row["agrees"]:
        return "off"
    low, high = row.get("ci_low"), row.get("ci_high")
    if _missing(low) or _missing(high):
        return None
    paper = protocol.Published.parse(row["paper"])
    return "ci-off" if high < paper.low or low > paper.high else None


def html_table(df, caption: str) -> str:
    """The table with its caption, headers with units and numbers formatted per
    column; in an agreement table the difference is coloured when ours lies
    outside the paper's value (its tolerance) or its interval does."""
    fmts = {c: column_format(df[c].tolist()) for c in df.columns}
    agreement = "difference" in df.columns and "agrees" in df.columns
    head = "".join(f"<th>{html.escape(header(str(c)))}</th>" for c in df.columns)
    rows = []
    for rec in df.astype(object).to_dict("records"):
        mark = _outside(rec) if agreement else None
        cells = []
        for c in df.columns:
            cls = f' class="{mark}"' if mark and c == "difference" else ""
            cells.append(f"<td{cls}>{html.escape(_cell(rec[c], fmts[c]))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<table><caption>{html.escape(caption)}</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")
