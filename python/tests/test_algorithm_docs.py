"""Each page of docs/algorithms/ lists exactly the parameters the engine's
config struct for that algorithm has, with its defaults (issue 27.1): the
tables are generated from `_sim.algorithm_schema(cc)` and checked here."""

import json
import re

import pytest

from tcpeval import _sim, algorithm_doc

PAGES = sorted(algorithm_doc.PAGES.glob("*.md"))


def _documented(text: str) -> dict[str, str]:
    """{parameter: default} as the page's table shows them."""
    return dict(re.findall(r"^\| `(\w+)` \| [^|]* \| ([^|]*) \|", text, re.M))


def test_every_algorithm_has_a_page():
    names = {algorithm_doc.algorithm(p) for p in PAGES}
    params = json.loads(_sim.algorithm_params())
    assert names <= set(params)
    # an alias shares its algorithm's schema (its title names the config struct)
    structs = {json.loads(_sim.algorithm_schema(n))["title"] for n in params}
    assert {json.loads(_sim.algorithm_schema(n))["title"] for n in names} == structs


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_the_page_lists_the_engines_parameters_and_defaults(page):
    params = json.loads(_sim.algorithm_params())[algorithm_doc.algorithm(page)]
    shown = _documented(page.read_text())
    assert shown == {k: f"`{json.dumps(v)}`" for k, v in params.items()}
    if not params:
        assert "Parameters (`params`): none." in page.read_text()


def test_the_pages_are_up_to_date_and_a_change_of_the_struct_shows():
    assert algorithm_doc.main(["--check"]) == 0
    page = algorithm_doc.PAGES / "cubic.md"
    schema = json.loads(_sim.algorithm_schema("cubic"))
    schema["properties"]["beta"]["default"] = 0.5
    assert "| `beta` | number | `0.5` |" in algorithm_doc.render(page.read_text(), schema)


def test_algorithm_params_reports_every_parameter_with_its_default():
    params = json.loads(_sim.algorithm_params())
    assert params["reno"] == {} and params["ctcp"] == params["compound"]
    assert params["cubic"]["beta"] == 717 / 1024 and params["cubic"]["hystart_detect"] == 3
    assert params["hstcp-lp"]["eci_decrease"] == "half"
    with pytest.raises(ValueError):
        _sim.algorithm_schema("nosuch")
