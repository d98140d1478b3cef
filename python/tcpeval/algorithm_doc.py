"""The parameter table of each page of docs/algorithms/, generated from the
algorithm's config struct in the engine (`_sim.algorithm_schema(cc)`: names,
types, defaults, ranges and the doc comment giving each default's source), so
the pages cannot drift from the engine. `python -m tcpeval.algorithm_doc`
rewrites them; `--check` fails when one is out of date
(python/tests/test_algorithm_docs.py runs it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .schema_doc import _json, _type

PAGES = Path(__file__).resolve().parents[2] / "docs" / "algorithms"
BEGIN = "<!-- generated from the engine's config struct: python -m tcpeval.algorithm_doc -->"
END = "<!-- end of generated parameters -->"


def algorithm(page: Path) -> str:
    """The page's algorithm: its file is named after one of the algorithm's names."""
    return page.stem


def table(schema: dict) -> str:
    """The `params` table of one algorithm, or a sentence when it takes none."""
    props = schema.get("properties", {})
    if not props:
        return "Parameters (`params`): none."
    rows = ["Parameters (`params`):", "",
            "| parameter | type | default | allowed | meaning and source of the default |",
            "|---|---|---|---|---|"]
    for name, prop in sorted(props.items()):
        rows.append(f"| `{name}` | {_kind(prop)} | {_json(prop.get('default'))} | "
                    f"{_allowed(prop)} | {prop.get('description', '').replace('|', '/')} |")
    return "\n".join(rows)


def _kind(prop: dict) -> str:
    values = [v for branch in prop.get("oneOf", ()) for v in branch.get("enum", ())]
    return " / ".join(f"`{v}`" for v in values) if values else _type(prop)


def _allowed(prop: dict) -> str:
    """The range of a number (whole numbers: any, the engine checks the rest)."""
    if prop.get("type") != "number" or "minimum" not in prop:
        return ""
    return f"{prop['minimum']:g} to {prop['maximum']:g}"


def render(doc: str, schema: dict) -> str:
    """`doc` with the text between the markers replaced by the table."""
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n\n{table(schema)}\n\n{END}{tail}"


def main(argv: list[str]) -> int:
    from . import _sim

    stale = []
    for page in sorted(PAGES.glob("*.md")):
        text = page.read_text()
        new = render(text, json.loads(_sim.algorithm_schema(algorithm(page))))
        if new != text:
            stale.append(page)
            if "--check" not in argv:
                page.write_text(new)
    if stale and "--check" in argv:
        names = ", ".join(p.name for p in stale)
        print(f"out of date: {names}: run python -m tcpeval.algorithm_doc", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
