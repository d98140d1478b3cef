"""Shared scenario builders for the Python tests."""


def small_scenario(**run) -> dict:
    """A quick two-flow dumbbell scenario as a dict."""
    return {
        "network": {"bottleneck": "20Mbps", "rtt": "40ms", "buffer": "1bdp"},
        "flows": [{"cc": "reno", "count": 2, "start": ["0s", "1s"]}],
        "run": {"duration": "10s", "measure_from": "2s", **run},
    }
