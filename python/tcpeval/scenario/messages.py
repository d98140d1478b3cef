"""Error messages that name the scenario's field: pydantic's errors in the words
of the scenario reference, and the engine's config paths mapped back to the
fields they come from."""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import BaseModel

from .models import Flow, Scenario, engine_names


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _inner_model(annotation) -> type[BaseModel] | None:
    """The model a field holds (itself, in a list or optional), else None."""
    for arg in getattr(annotation, "__args__", ()) + (annotation,):
        inner = getattr(arg, "__args__", (arg,))
        found = next((a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)),
                     None)
        if found:
            return found
    return None


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """The model class a location's last key belongs to (for 'allowed' lists)."""
    model: Any = Scenario
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        model = _inner_model(field.annotation) if field else None
        if model is None:
            return None
    return model


# Pydantic's type errors in the words of the scenario reference.
_TYPE_WORDS = {
    "int_type": "must be a whole number", "float_type": "must be a number",
    "string_type": "must be a string", "bool_type": "must be true or false",
    "finite_number": "must be a finite number", "list_type": "must be a list",
    "dict_type": "must be a table", "model_type": "must be a table",
    "model_attributes_type": "must be a table", "missing": "is required",
}


_BOUND_WORDS = {"greater_than_equal": (">=", "ge"), "greater_than": (">", "gt"),
                "less_than_equal": ("<=", "le"), "less_than": ("<", "lt")}


def _message(err: dict) -> str:
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p))
    where = _loc(loc) or "scenario"
    kind = err["type"]
    if kind == "extra_forbidden":
        keys = list(_model_at(loc).model_fields) if _model_at(loc) else []
        allowed = ", ".join(keys) or "see docs/user-guide.md"
        return f"{where}: unknown key{_suggest(str(loc[-1]), keys)}; allowed: {allowed}"
    got = "" if kind == "missing" else f", got {_short(err.get('input'))}"
    if kind in _TYPE_WORDS:
        return f"{where}: {_TYPE_WORDS[kind]}{got}"
    if kind in _BOUND_WORDS:
        op, key = _BOUND_WORDS[kind]
        bound = err["ctx"][key]
        return f"{where}: must be {op} {f'{bound:g}' if isinstance(bound, float) else bound}{got}"
    msg = err["msg"].removeprefix("Value error, ")
    return f"{where}: {msg}"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _suggest(word: str, choices: list[str]) -> str:
    """' (did you mean 'x'?)' for a near miss of a known key, else ''."""
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# Engine field -> scenario key, by table (docs/engine-interface.md, docs/user-guide.md).
_RUN_KEYS = {"seed": "run.seed", "duration_ns": "run.duration", "interval_ns": "run.interval",
             "trace_interval_ns": "run.trace_interval", "config": "scenario",
             "flows": "flows", "network": "network"}


_FLOW_KEYS = {engine: name for name, engine in engine_names(Flow).items()}


_UDP_KEYS = {"rate_bps": "rate", "amplitude_bps": "amplitude", "period_ns": "period",
             "start_ns": "start", "stop_ns": "stop", "packet_bytes": "packet", "rtt_ns": "rtt"}


_HOP_KEYS = {"rate_bps": "rate", "delay_ns": "delay", "buffer_pkts": "buffer",
             "buffer_bytes": "buffer", "reverse_buffer_pkts": "reverse_buffer",
             "reverse_buffer_bytes": "reverse_buffer"}


# The AQM tables' engine keys (network.hops[j].pie.tupdate_ns) and the
# scenario's (network.pie.tupdate).
_AQM_KEYS = {"target_ns": "target", "interval_ns": "interval", "tupdate_ns": "tupdate",
             "max_burst_ns": "max_burst", "quantum_bytes": "quantum",
             "memory_limit_bytes": "memory_limit"}


# The dumbbell's hop is written in [network] itself.
_DUMBBELL_KEYS = {**_HOP_KEYS, "rate_bps": "bottleneck", "delay_ns": "bottleneck_delay"}


def user_field(sc: Scenario, resolved: dict, path: str) -> str:
    """The scenario field an engine config path comes from: `flows[3].params.beta`
    is `flows[1].params.beta` when engine flow 3 comes from the second [[flows]]
    entry (counts and streams expand entries), `network.hops[0].buffer_pkts` is
    `network.buffer` for a dumbbell, an inherited RTT is `network.rtt`."""
    head, _, rest = path.partition(".")
    name, _, index = head.partition("[")
    i = int(index.rstrip("]")) if index else None
    key, _, tail = rest.partition(".")
    key_base, bracket, key_index = key.partition("[")
    if name == "flows" and i is not None:
        entry = {s: f["entry"] for f in resolved["meta"]["logical_flows"] for s in f["streams"]}
        if i not in entry:
            return "background"
        k = entry[i]
        if key_base == "rtt_ns" and sc.flows[k].rtt is None:
            return "network.rtt"
        if key_base == "stack" and sc.flows[k].stack is None:
            return "run.stack"
        field = f"flows[{k}]"
        key_base = _FLOW_KEYS.get(key_base, key_base)
    elif name == "udp" and i is not None:
        if key_base == "rtt_ns" and sc.udp[i].rtt is None:
            return "network.rtt"
        field, key_base = f"udp[{i}]", _UDP_KEYS.get(key_base, key_base)
    elif name == "network" and key_base == "hops" and key_index:
        j = int(key_index.rstrip("]"))
        hop, _, tail = tail.partition(".")
        where, names = (f"network.hops[{j}]", _HOP_KEYS) if sc.network.hops else (
            "network", _DUMBBELL_KEYS)
        return ".".join(p for p in (where, names.get(hop, hop), _AQM_KEYS.get(tail, tail)) if p)
    elif name == "network":
        field, key_base = "network", {"access_rate_bps": "access_rate"}.get(key_base, key_base)
    elif name == "capture":
        one_point = key_base == "points" and isinstance(sc.run.pcap.where, str)
        key = {"points": "where"}.get(key_base, key_base)
        return f"run.pcap.{key}" + ("" if one_point or not bracket else bracket + key_index)
    else:
        return _RUN_KEYS.get(path, path)
    key = key_base + (bracket + key_index if bracket else "")
    return ".".join(p for p in (field, key, tail) if p)
