"""A module bound at import time but imported on first use."""

from __future__ import annotations

import importlib


class LazyModule:
    """Stands for the module `name` and imports it at the first attribute access.
    A study module names pandas, numpy and metrics at its top, yet `tcpeval study
    list` (which reads only NAME and TITLE) does not pay for importing them."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self._name), attr)
