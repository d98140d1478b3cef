"""Ready-made studies: each reproduces a classic evaluation as cells (data) plus
the analysis that turns its result store into the paper's tables and figures.

Every study follows one protocol (protocol.py, docs/studies/README.md): NAME,
TITLE, SOURCE, PROFILES (smoke, quick, full), and
    design(profile) -> Design: cells (name, scenario, axes) and repetition seeds
    report(results, profile, flows_of) -> {"tables": {name: DataFrame},
                                           "figures": {...}, "notes": [...]}
with the paper's values in data/<study>/*.csv and an "agreement" table built by
protocol.compare. `run_study` runs every cell into one result store (shared
points run once); `report_study` writes the HTML report with CSV tables and
PNG and SVG figures.
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
