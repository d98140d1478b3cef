"""tcpeval: evaluate TCP congestion control on fast long-distance networks."""

import importlib
import sys
import types

__all__ = ["Result", "ScenarioError", "compare", "load_scenario", "plot", "run"]

# The exports are imported on first use: the command line imports this package,
# and `tcpeval --help` must not pay for pandas, numpy and pydantic.
_EXPORTS = {"Result": ".run", "run": ".run", "load_scenario": ".scenario",
            "ScenarioError": ".errors", "plot": ".plot", "compare": ".compare"}
# Functions named like the submodule that defines them.
_SHADOWED = ("run", "plot", "compare")


def __getattr__(name: str):
    if name == "__version__":  # from pyproject.toml through the package metadata
        from .version import version

        return version()
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value) -> None:
        # Importing the submodule tcpeval.run binds it on the package; tcpeval.run
        # stays the function, as when the package imported it up front (and so
        # for tcpeval.plot and tcpeval.compare).
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
