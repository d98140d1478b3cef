"""The study-against-ns-2 table (tcpeval.ns2.study_peer): means over seeds,
ratios, refusals kept as text, and the count within 10% (no ns-2 needed)."""

from tcpeval.ns2.study_peer import cells, table


def test_the_table_averages_seeds_and_counts_cells_within_ten_percent():
    results = [
        {"cell": "a", "seed": 1, "tcpeval": 10.0, "ns2": 10.0},
        {"cell": "a", "seed": 2, "tcpeval": 11.0, "ns2": 10.0},
        {"cell": "b", "seed": 1, "tcpeval": 20.0, "ns2": 10.0},
        {"cell": "c", "seed": 1, "tcpeval": 5.0, "ns2": "flows[1].direction: only forward"},
    ]
    rows, count = table(results)
    assert "| a | 2 | 10.50 | 10.00 | 1.050 |" in rows
    assert "| b | 1 | 20.00 | 10.00 | 2.000 |" in rows
    assert any(r.startswith("| c | 1 | 5.00 | not run: flows[1].direction") for r in rows)
    assert count == "1 of 2 cells within 10% of ns-2"


def test_a_study_s_cells_carry_its_stack():
    got = cells("dalton2004", "smoke")
    assert got and all(stack == "ns2" for _, _, stack in got)
    assert all(f["stack"] == "ns2" for _, doc, _ in got for f in doc["flows"])
    red = [doc for name, doc, _ in got if "-red-" in name]
    assert red and all(doc["network"]["red"] == {"variant": "ns2"} for doc in red)
