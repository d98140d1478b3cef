"""ha2006 (seed 003): the statements of section 4 on the full profile's stored
results where TCPEVAL_FULL_STORES holds them, the quick profile otherwise
(`make validate-studies`, stores.py). Every row of the report's agreement table is checked; the
ones tcpeval does not reproduce are strict expected failures, each with the
reason docs/studies/ha2006.md gives, so a change that makes them hold shows up.

The quick profile is about 120 runs (10 minutes on two idle cores); set
HA2006_QUICK_STORE to a store of a finished (or interrupted) quick run to reuse
it: the run resumes and skips every finished cell."""

import pandas as pd
import pytest
from stores import profile_of, study_report

from tcpeval.studies import ha2006

# Claims (by their opening words) that the quick profile does not reproduce, and why.
DISAGREE = {
    "FAST's RTT fairness index is considerably lower":
        "FAST stays fair with this background (alpha = 200 packets per flow dominate the "
        "queue the 64 KB-window background adds); the paper ran FAST's 2.4 patch",
    "With background every protocol's RTT fairness improves":
        "quick's flow 1 at 82 ms makes the RTT ratios at 16 and 324 ms 5.1 and 4.0: "
        "not the paper's ladder; 3 of 7 protocols",
    "Every variant is less TCP-friendly at the longest RTT":
        "FAST and HSTCP are friendlier at 324 ms in one 165 s window (4 of 6 hold)",
    "Without background, H-TCP, STCP, FAST and Reno lose utilisation":
        "two STCP flows keep the 20%-BDP buffer busy (0.875 x 1.2 BDP > BDP): 1.000",
    "With a 2 Mbyte buffer and background, H-TCP's utilisation degrades to 75%":
        "ours 0.98: the background fills what H-TCP's adaptive backoff leaves",
    # On linux-2.6.13 (issue 30) FAST's CoV row, FAST's intra-protocol fairness
    # (-0.005 at 379f953, +0.002 at b452db4: a few thousandths either way) and H-TCP
    # and STCP's loss rates (worse rank 2 at 379f953, 3 at b452db4) hold.
}


# On the full profile re-run on linux-2.6.13 (issue 30, at 8c79aa2; docs/studies/ha2006.md,
# row "full") eleven hold: these seven do not.
DISAGREE_FULL = {k: "full profile on linux-2.6.13 (8c79aa2): see docs/studies/ha2006.md" for k in (
    "FAST's intra-protocol fairness is lower",
    "FAST's RTT fairness index is considerably lower",
    "With background every protocol's RTT fairness improves",
    "Every variant is less TCP-friendly at the longest RTT",
    "Without background, H-TCP, STCP, FAST and Reno lose utilisation",
    "With a 2 Mbyte buffer and background, H-TCP's utilisation degrades to 75%",
    "H-TCP's CoV is among the highest without background")}


@pytest.fixture(scope="module")
def claims(tmp_path_factory):
    report = study_report("ha2006", tmp_path_factory, "HA2006_QUICK_STORE")
    return pd.read_csv(report / "agreement.csv").set_index("quantity")


def _cases():
    known = DISAGREE if profile_of("ha2006") == "quick" else DISAGREE_FULL
    for claim in ha2006.claims():
        text = claim["claim"]
        why = next((r for k, r in known.items() if text.startswith(k)), None)
        marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
        yield pytest.param(text, id=f"fig{claim['figure']}-{text[:40]}", marks=marks)


@pytest.mark.parametrize("text", list(_cases()))
def test_section_4_statement_holds(claims, text):
    row = claims.loc[text]
    assert row["agrees"] == True, f"ours = {row['ours']:.4g}"  # noqa: E712 (True/False/NaN)
