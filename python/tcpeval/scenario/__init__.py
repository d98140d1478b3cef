"""Scenario files: TOML in, validated models, and the engine's config out.

A scenario names everything in researcher's units ("100Mbps", "20%bdp"). The
package, by job:

- `models` (with `fields`, the unit types): the schema; every value is parsed
  once, when the model is validated, into numbers;
- `load`: TOML in, overrides applied, validation (unknown keys, malformed
  units, bounds: errors that name the field and say what is allowed);
- `overrides`: `--set dotted.key=value`;
- `resolution`: the typed scenario to the JSON document the engine takes
  (docs/engine-interface.md), validated by the engine once;
- `background`: background traffic, a recipe expanded when the run starts;
- `messages`: error messages in the scenario's words, engine paths mapped back
  to the scenario's fields; `limits`: bounds of a run.

The public names are importable from `tcpeval.scenario`.
"""

from ..errors import ScenarioError
from ..units import parse_time
from .background import BACKGROUND_STREAM, expand_background
from .fields import (
    BufferSize,
    PositiveTime,
    Rate,
    RateOrShare,
    Share,
    Size,
    Time,
    Window,
)
from .limits import (
    DEFAULT_TRACE_INTERVAL_S,
    MAX_BDP_PKTS,
    MAX_FILE_BYTES,
    MAX_FLOWS,
    MAX_INITIAL_CWND,
    MAX_NESTING,
    MAX_SHARE_PERCENT,
    MAX_TRACE_ROWS,
    MAX_WEB_FLOWS,
    MAX_WINDOW_BYTES,
)
from .load import load_scenario, read_toml, validate
from .messages import user_field
from .models import (
    Background,
    Flow,
    Hop,
    LongLived,
    Network,
    Red,
    RttDist,
    Run,
    Scenario,
    Sizes,
    Udp,
    Web,
    _Model,
)
from .overrides import apply_override, check_key
from .resolution import START_JITTER_STREAM, describe_bdp, engine_config, resolve

__all__ = [
    "BACKGROUND_STREAM", "DEFAULT_TRACE_INTERVAL_S", "MAX_BDP_PKTS", "MAX_FILE_BYTES",
    "MAX_FLOWS", "MAX_INITIAL_CWND", "MAX_NESTING", "MAX_SHARE_PERCENT", "MAX_TRACE_ROWS",
    "MAX_WEB_FLOWS", "MAX_WINDOW_BYTES", "START_JITTER_STREAM", "Background", "BufferSize",
    "Flow", "Hop", "LongLived", "Network", "PositiveTime", "Rate", "RateOrShare", "Red",
    "Run", "RttDist", "Scenario", "ScenarioError", "Share", "Size", "Sizes", "Time", "Udp",
    "Web", "Window", "_Model", "apply_override", "check_key", "describe_bdp",
    "engine_config", "expand_background", "load_scenario", "parse_time", "read_toml",
    "resolve", "user_field", "validate",
]
