"""tcpeval: evaluate TCP congestion control on fast long-distance networks."""

from .run import Result, run
from .scenario import ScenarioError, load_scenario

__all__ = ["Result", "ScenarioError", "load_scenario", "run"]
__version__ = "0.1.0"
