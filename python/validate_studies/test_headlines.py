"""Headline qualitative results each paper states, checked on the quick profiles
(`make validate-studies`, a few minutes; not part of `make test`)."""

import pandas as pd
import pytest

from tcpeval.studies.runner import report_study, run_study


@pytest.fixture(scope="module")
def dalton(tmp_path_factory):
    store = tmp_path_factory.mktemp("dalton")
    run_study("dalton2004", "quick", store)
    report_study("dalton2004", store)
    return {t: pd.read_csv(store / "report" / f"{t}.csv") for t in ("table1", "table2", "table3")}


@pytest.fixture(scope="module")
def bhatti(tmp_path_factory):
    store = tmp_path_factory.mktemp("bhatti")
    run_study("bhatti2009", "quick", store)
    report_study("bhatti2009", store)
    return pd.read_csv(store / "report" / "caption_stats.csv").set_index(["variant", "metric"])


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
