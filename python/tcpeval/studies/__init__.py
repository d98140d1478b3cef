"""Ready-made studies: each reproduces a classic evaluation as sweeps (data) plus
the analysis that turns its result store into the paper's tables and figures.

A study module provides NAME, TITLE, SOURCE, PROFILES (smoke, quick, full), and
    sweeps(profile) -> list of (part name, sweep document)
    report(store, profile) -> {"tables": {name: DataFrame}, "figures": {...},
                               "notes": [...]}
`run_study` runs every part into one result store (shared points run once);
`report_study` writes the HTML report with CSV tables and PNG figures.
"""

from __future__ import annotations

from . import bhatti2009, bullot2004, dalton2004, ha2006, tengig

STUDIES = {m.NAME: m for m in (bhatti2009, bullot2004, dalton2004, ha2006, tengig)}
PROFILES = ("smoke", "quick", "full")


def get(name: str):
    try:
        return STUDIES[name]
    except KeyError:
        raise KeyError(f"unknown study {name!r}; available: {', '.join(STUDIES)}") from None
