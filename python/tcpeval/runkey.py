"""The identity of a run: the hash of its canonical resolved scenario.

Canonical form: every field whose value is the engine's default for it (the
defaults of the engine's JSON Schema, `_sim.config_schema()`) is left out, keys
sorted. A field added later with a default therefore leaves the key of
every run that does not set it unchanged, and stores written before stay valid
(issue 27.3). Keys of stores written by an older rule are migrated when the
store is opened (`store.Store`): version 1 hashed the whole resolved dict;
version 2 hashed the canonical form of a network with a single bottleneck's
fields beside an optional hop list, which version 3 reads as a list of hops
only (`current_form`).
"""

from __future__ import annotations

import functools
import hashlib
import json

# Version of the key rule, recorded in every stored run and in the store.
KEY_VERSION = 3

# The front end's own defaults (the resolved scenario's "meta").
META_DEFAULTS = {"background": None}


@functools.cache
def defaults() -> dict:
    """The defaults of the resolved scenario, by place: those of the engine's
    schema (an absent field means its default there) and, under "meta", the
    front end's. "NAME[]" holds the defaults of every element of list NAME."""
    from . import _sim

    schema = json.loads(_sim.config_schema())
    return {**_schema_defaults(schema, schema), "meta": META_DEFAULTS}


def _schema_defaults(node: dict, schema: dict) -> dict:
    out = {}
    for name, prop in node.get("properties", {}).items():
        ref = _ref(prop)
        if "default" in prop:
            out[name] = prop["default"]
        elif ref:
            out[name] = _schema_defaults(_definition(schema, ref), schema)
        items = _ref(prop.get("items", {}))
        if items:
            out[f"{name}[]"] = _schema_defaults(_definition(schema, items), schema)
    return out


def _ref(prop: dict) -> str | None:
    """The definition a property refers to (directly or through allOf)."""
    for p in (prop, *prop.get("allOf", ())):
        if "$ref" in p:
            return p["$ref"]
    return None


def _definition(schema: dict, ref: str) -> dict:
    return schema["definitions"][ref.rsplit("/", 1)[1]]


def run_key(resolved: dict) -> str:
    """Content hash of a resolved scenario's canonical form (a scenario of an
    older store is first brought to the current form)."""
    return _hash(canonical(current_form(resolved)))


# The single bottleneck's fields of the network of key versions 1 and 2, which
# are also a hop's (under the same name).
_OLD_HOP_FIELDS = ("buffer_pkts", "buffer_bytes", "reverse_buffer_pkts", "reverse_buffer_bytes",
                   "queue", "loss", "red")


def current_form(resolved: dict) -> dict:
    """A resolved scenario with its network as the engine takes it today:
    access rate and hops. Before (key versions 1 and 2) a dumbbell was written
    as top-level bottleneck fields and `hops` was null; a parking lot's hops
    came beside those fields, which the engine then ignored."""
    net = resolved.get("network")
    if not isinstance(net, dict) or "bottleneck_rate_bps" not in net:
        return resolved
    hops = net.get("hops") or [{
        "rate_bps": net["bottleneck_rate_bps"], "delay_ns": net.get("bottleneck_delay_ns", 0),
        **{k: net[k] for k in _OLD_HOP_FIELDS if k in net}}]
    return {**resolved, "network": {"access_rate_bps": net["access_rate_bps"], "hops": hops}}


def legacy_run_key(resolved: dict) -> str:
    """The key of version 1 (stores written before 2026-11-26): the hash of the whole dict."""
    return _hash(resolved)


def _hash(doc: dict) -> str:
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def canonical(resolved: dict) -> dict:
    """The resolved scenario without the fields equal to their defaults."""
    return _strip(resolved, defaults())


def _strip(value, defaults: dict):
    if isinstance(value, list):
        item = defaults.get("[]")
        return [_strip(v, item) if item is not None else v for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, v in value.items():
        if key in defaults and _same(v, defaults[key]):
            continue
        inner = defaults.get(key)
        if isinstance(v, list):
            inner = {"[]": defaults[f"{key}[]"]} if f"{key}[]" in defaults else {}
        out[key] = _strip(v, inner) if isinstance(inner, dict) else v
    return out


def _same(value, default) -> bool:
    """Equal and of the same kind: a default of True is not the number 1, and a
    table equals its default when every field it has does (absent = default)."""
    if isinstance(default, dict) and isinstance(value, dict):
        return set(value) <= set(default) and all(_same(v, default[k]) for k, v in value.items())
    if isinstance(default, bool) or isinstance(value, bool):
        return value is default
    if isinstance(default, int | float) and isinstance(value, int | float):
        return value == default
    return type(value) is type(default) and value == default
