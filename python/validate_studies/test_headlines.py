"""Headline qualitative results each paper states, checked on the full profile's
stored results where TCPEVAL_FULL_STORES holds them, the quick profiles otherwise
(`make validate-studies`, stores.py; not part of `make test`)."""

import pandas as pd
import pytest
from stores import study_report


@pytest.fixture(scope="module")
def dalton(tmp_path_factory):
    report = study_report("dalton2004", tmp_path_factory)
    return {t: pd.read_csv(report / f"{t}.csv") for t in ("table1", "table2", "table3")}


@pytest.fixture(scope="module")
def bhatti(tmp_path_factory):
    report = study_report("bhatti2009", tmp_path_factory)
    return pd.read_csv(report / "caption_stats.csv").set_index(["variant", "metric"])


def test_dalton_default_case_highspeed_beats_standard(dalton):
    t = dalton["table1"]
    one = t[t.flows == 1].set_index("protocol")["ours_bw_mbps"]
    assert one["HighSpeed TCP"] > one["Standard TCP"]


def test_dalton_low_bandwidth_all_reach_capacity(dalton):
    t = dalton["table2"]
    assert (t[t.rate_mbps == 1]["ours_bw_mbps"] >= 0.9).all()


def test_dalton_high_error_rate_cripples_all(dalton):
    t = dalton["table3"]
    assert (t[t.p == 0.01]["ours_bw_mbps"] < 10).all()


def test_bhatti_newreno_is_fair_to_itself(bhatti):
    from tcpeval.studies import bhatti2009

    assert bhatti2009.newreno_is_fair_to_itself(bhatti.reset_index())


@pytest.mark.parametrize("variant", ["bic", "cubic"])
def test_bhatti_bic_and_cubic_take_more_than_their_share_from_newreno(bhatti, variant):
    assert bhatti.loc[(variant, "flow2_nru_db"), "mean"] > 0
    assert bhatti.loc[(variant, "system_nru_db"), "mean"] < 0
