"""Typed views of what crosses the Python/engine seam: the engine's (or the
testbed's) JSON output and the logical flows of a resolved scenario, built once
per run so the summary reads fields, not string keys.

Words, as everywhere in the front end: an engine flow is a *stream*; a logical
*flow* has one or more streams (`streams = 4` in a [[flows]] table); an *entry*
is one [[flows]] table, which makes `count` flows. The on-disk names stay as
they were (the engine's JSON calls a stream a "flow"; the Parquet tables' `flow`
column is a logical flow id).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Stream:
    """One engine flow's whole-run counters."""

    id: int
    cc: str
    start_ns: int
    bytes_delivered: int
    segments_sent: int
    retransmits: int
    timeouts: int
    completed_ns: int | None
    size_bytes: int | None  # a fixed-size transfer's configured size; None: unlimited
    group: str | None

    @classmethod
    def from_json(cls, d: dict) -> Stream:
        # Older stored runs and the testbed lack the optional keys.
        return cls(d["id"], d["cc"], d["start_ns"], d["bytes_delivered"], d["segments_sent"],
                   d["retransmits"], d["timeouts"], d.get("completed_ns"), d.get("size_bytes"),
                   d.get("group"))


@dataclass(frozen=True, slots=True)
class Link:
    """One monitored link's whole-run counters."""

    name: str
    capacity_bps: float
    tx_data_packets: int
    arrivals: int
    drops_overflow: int
    drops_random: int
    drops_early: int
    max_queue_pkts: int
    # CE marks (ECN) instead of drops, or step marking (issue 33).
    marks: int = 0

    @classmethod
    def from_json(cls, d: dict) -> Link:
        # Runs stored before AQM existed have no early drops; the engine leaves
        # `marks` out when there are none.
        return cls(d["name"], d["capacity_bps"], d["tx_data_packets"], d["arrivals"],
                   d["drops_overflow"], d["drops_random"], d.get("drops_early", 0),
                   d["max_queue_pkts"], d.get("marks", 0))

    @property
    def drops(self) -> int:
        return self.drops_overflow + self.drops_random + self.drops_early

    @property
    def forward(self) -> bool:
        """Data crosses it (a dumbbell's bottleneck, a parking lot's hops), unlike
        the reverse directions."""
        return self.name != "reverse" and not self.name.endswith("-rev")


@dataclass(frozen=True, slots=True)
class SimStats:
    events: int
    end_ns: int


# "web": the transfers of the engine's web sources, a column per field.
TABLES = ("intervals", "trace", "queue", "link_intervals", "udp_intervals", "web")


@dataclass(frozen=True, slots=True)
class EngineOutput:
    """A run's raw output: counters per stream and link, the simulator's
    statistics, and the interval tables as the engine's columns (name -> list)."""

    streams: tuple[Stream, ...]
    links: tuple[Link, ...]
    sim: SimStats
    intervals: dict
    trace: dict
    queue: dict
    link_intervals: dict
    udp_intervals: dict
    web: dict
    validity: dict | None

    @classmethod
    def from_json(cls, raw: dict) -> EngineOutput:
        # A stored run's engine.json has the counters only (its tables are the
        # Parquet files), and runs stored before UDP have no udp_intervals.
        tables = {k: raw.get(k, {}) for k in TABLES}
        return cls(
            streams=tuple(Stream.from_json(s) for s in raw["flows"]),
            links=tuple(Link.from_json(link) for link in raw["links"]),
            sim=SimStats(raw["sim"]["events"], raw["sim"]["end_ns"]),
            validity=raw.get("validity") or None, **tables)

    def forward_links(self) -> list[Link]:
        return [link for link in self.links if link.forward]


@dataclass(frozen=True, slots=True)
class Flow:
    """A logical flow of the resolved scenario and the streams it is made of."""

    id: int
    label: str
    cc: str
    streams: tuple[int, ...]

    @classmethod
    def from_json(cls, d: dict) -> Flow:
        return cls(d["id"], d["label"], d["cc"], tuple(d["streams"]))


def logical_flows(resolved: dict) -> list[Flow]:
    return [Flow.from_json(f) for f in resolved["meta"]["logical_flows"]]
