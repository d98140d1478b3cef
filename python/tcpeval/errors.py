"""The error of a bad scenario, in a module of its own so that the command line
can catch it without importing the scenario model (pydantic, numpy)."""


class ScenarioError(ValueError):
    """A scenario that cannot run; the message names the field(s) at fault."""
