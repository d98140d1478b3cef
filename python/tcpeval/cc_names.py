"""The congestion-control algorithms the engine offers, asked of the engine itself
so the Python side never keeps its own copy of the list."""

from functools import cache


@cache
def available_algorithms() -> tuple[str, ...]:
    from tcpeval import _sim

    return tuple(_sim.algorithms())
