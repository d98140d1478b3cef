"""`--set dotted.key=value` overrides of a scenario (and a sweep's axes)."""

from __future__ import annotations

import tomllib
from typing import Any

from ..errors import ScenarioError
from .limits import MAX_NESTING
from .messages import _inner_model, _short, _suggest
from .models import Scenario


def check_key(key: str, extra: tuple[str, ...] = ()) -> None:
    """A dotted key (`network.rtt`, `flows.0.cc`) must name a scenario field;
    else a ScenarioError names the first unknown part with a near match.
    `extra`: further keys allowed at the top level (a sweep's `repetitions`)."""
    model: Any = Scenario
    for i, part in enumerate(key.split(".")):
        if part.isdigit() or model is None:  # a list index, or inside a free table
            continue
        known = list(model.model_fields) + (list(extra) if i == 0 else [])
        if part not in known:
            raise ScenarioError(f"{key}: unknown key {_short(part)}{_suggest(part, known)}; "
                                f"allowed here: {', '.join(known)}")
        model = _inner_model(model.model_fields[part].annotation) if part in \
            model.model_fields else None


def _nesting(text: str) -> int:
    """An upper bound on the bracket nesting of a TOML text (brackets inside
    strings count too: a bound, checked before tomllib recurses into it)."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


def _parse_value(text: str, key: str) -> Any:
    """A TOML value, or the text itself when it is not one (bare strings)."""
    if _nesting(text) > MAX_NESTING:
        raise ScenarioError(f"--set {key}: value nested deeper than {MAX_NESTING} levels")
    try:
        parsed = tomllib.loads(f"v = {text}")
    except (tomllib.TOMLDecodeError, RecursionError):
        return text
    return parsed["v"] if list(parsed) == ["v"] else text


def apply_override(data: dict, item: str) -> None:
    """Set one `dotted.key=value` in a scenario dict (creating tables as needed)."""
    if "=" not in item:
        raise ScenarioError(f"--set {_short(item)}: expected dotted.key=value")
    key, _, text = item.partition("=")
    parts = [p.strip() for p in key.strip().split(".")]
    if not all(parts):
        raise ScenarioError(f"--set {_short(item)}: expected dotted.key=value (a key part "
                            "is empty)")
    key = ".".join(parts)
    try:
        check_key(key)
    except ScenarioError as e:
        raise ScenarioError(f"--set {e}") from None
    node: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ScenarioError(f"--set {key}: index {_short(part)} out of range "
                                    f"(the list has {len(node)} entries)")
            idx = int(part)
            if last:
                node[idx] = _parse_value(text, key)
            else:
                node = node[idx]
            continue
        if not isinstance(node, dict):
            raise ScenarioError(f"--set {key}: {'.'.join(parts[:i])} is not a table")
        if last:
            node[part] = _parse_value(text, key)
        else:
            if part not in node:
                node[part] = [{}] if part in ("flows", "udp") and parts[i + 1].isdigit() else {}
            node = node[part]
