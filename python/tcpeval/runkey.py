"""The identity of a run: the hash of its canonical resolved scenario.

Canonical form: every field whose value is the engine's default for it is left
out, keys sorted. A field added later with a default therefore leaves the key of
every run that does not set it unchanged, and stores written before stay valid
(issue 27.3). Keys of stores written before the canonical form (version 1: the
hash of the whole resolved dict) are migrated when the store is opened
(`store.Store`).
"""

from __future__ import annotations

import hashlib
import json

# Version of the key rule, recorded in every stored run and in the store.
KEY_VERSION = 2

# The defaults of the resolved scenario, by place: those of the engine's serde
# structs (crates/tcpeval-sim/src/config.rs: `#[serde(default ...)]`; an absent
# field means the default there) and, under "meta", the front end's own.
# "[]" stands for every element of a list.
_HOP = {"delay_ns": 0, "buffer_pkts": None, "buffer_bytes": None,
        "reverse_buffer_pkts": None, "reverse_buffer_bytes": None,
        "queue": "droptail", "loss": 0.0,
        "red": {"min_th": None, "max_th": None, "w_q": None, "max_p": None, "gentle": None}}
DEFAULTS: dict = {
    "udp": [],
    "network": {
        "bottleneck_delay_ns": 0, "buffer_pkts": None, "buffer_bytes": None,
        "reverse_buffer_pkts": None, "reverse_buffer_bytes": None,
        "queue": "droptail", "loss": 0.0, "red": _HOP["red"], "hops": None,
        "hops[]": _HOP,
    },
    "flows[]": {
        "params": {}, "start_ns": 0, "bytes": None, "max_window_bytes": None,
        "mss": 1448, "mtu": 1500, "sack": True, "delayed_ack": True,
        "delack_timeout_ns": 40_000_000,  # Linux TCP_DELACK_MIN
        "initial_cwnd": 10,  # Linux TCP_INIT_CWND (RFC 6928)
        "direction": "forward", "path": None, "stop_ns": None, "trace": True,
        "nic_queue_pkts": None, "send_overhead_ns": 0, "group": None,
    },
    "udp[]": {
        "amplitude_bps": 0.0, "period_ns": 60_000_000_000, "phase": 0.0, "start_ns": 0,
        "stop_ns": None, "packet_bytes": 1500, "direction": "forward", "path": None,
    },
    "meta": {"background": None},
}


def run_key(resolved: dict) -> str:
    """Content hash of a resolved scenario's canonical form."""
    return _hash(canonical(resolved))


def legacy_run_key(resolved: dict) -> str:
    """The key of version 1 (before 2026-12): the hash of the whole dict."""
    return _hash(resolved)


def _hash(doc: dict) -> str:
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def canonical(resolved: dict) -> dict:
    """The resolved scenario without the fields equal to their defaults."""
    return _strip(resolved, DEFAULTS)


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
