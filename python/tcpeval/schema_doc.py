"""The field tables of docs/engine-interface.md, generated from the engine's
JSON Schema (`_sim.config_schema()`), so the document cannot drift from the
engine. `python -m tcpeval.schema_doc` rewrites them; `--check` fails when they
are out of date (python/tests/test_engine_schema.py runs it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "engine-interface.md"
BEGIN = "<!-- generated from the engine's schema: python -m tcpeval.schema_doc -->"
END = "<!-- end of generated tables -->"
# The tables in reading order: the document, then what it holds.
OBJECTS = ("Config", "NetworkConfig", "HopConfig", "RedConfig", "FlowConfig", "UdpConfig",
           "WebConfig", "SizeConfig", "RttConfig", "CaptureConfig")


def tables(schema: dict) -> str:
    """One Markdown table per object of the schema."""
    parts = []
    for name in OBJECTS:
        node = schema if name == "Config" else schema["definitions"][name]
        required = set(node.get("required", ()))
        rows = ["| field | type | default | meaning |", "|---|---|---|---|"]
        for field, prop in sorted(node["properties"].items()):
            default = "required" if field in required else _json(prop.get("default"))
            rows.append(f"| `{field}` | {_type(prop)} | {default} | "
                        f"{prop.get('description', '').replace('|', '/')} |")
        parts.append(f"### {name}\n\n" + "\n".join(rows))
    return "\n\n".join(parts)


def _type(prop: dict) -> str:
    if "enum" in prop:
        return " / ".join(f"`{v}`" for v in prop["enum"])
    ref = prop.get("$ref") or next((p["$ref"] for p in prop.get("allOf", ()) if "$ref" in p),
                                   None)
    if ref:
        return ref.rsplit("/", 1)[1]
    if "anyOf" in prop:  # an optional table: {"anyOf": [{"$ref": ...}, {"type": "null"}]}
        return " or ".join(_type(p) for p in prop["anyOf"])
    kind = prop.get("type", "any")
    kinds = kind if isinstance(kind, list) else [kind]
    if "array" in kinds and "items" in prop:
        item = _type(prop["items"])
        kinds = [f"array of {item}" if k == "array" else k for k in kinds]
    return " or ".join(k for k in kinds)


def _json(value) -> str:
    return "(absent)" if value is None else f"`{json.dumps(value)}`"


def render(doc: str, schema: dict) -> str:
    """`doc` with the text between the markers replaced by the tables."""
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n\n{tables(schema)}\n\n{END}{tail}"


def main(argv: list[str]) -> int:
    from . import _sim

    schema = json.loads(_sim.config_schema())
    text = DOC.read_text()
    new = render(text, schema)
    if "--check" in argv:
        if new != text:
            print(f"{DOC} is out of date: run python -m tcpeval.schema_doc", file=sys.stderr)
            return 1
        return 0
    if new != text:
        DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
