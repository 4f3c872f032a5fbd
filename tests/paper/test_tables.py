"""Table builders on small fixtures: seed averaging, std, label columns, heatmap layout."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from consert.paper.tables import heatmap_matrix, score_table

DATASETS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R", "Avg"]


def _evaluation(score: float, **extra) -> pd.DataFrame:
    rows = [
        {"dataset": d, "subset": "all", "spearman": score, "setting": "offline stand-in (x)", "model": "m", **extra}
        for d in DATASETS
    ]
    rows.append({"dataset": "STS12", "subset": "MSRpar", "spearman": -99.0, "setting": "s", "model": "m", **extra})
    return pd.DataFrame(rows)


def test_seeds_are_averaged_with_sample_std():
    entries = [
        ({"method": "A", "seed": 1}, _evaluation(70.0, best_step=100)),
        ({"method": "A", "seed": 2}, _evaluation(72.0, best_step=300)),
        ({"method": "B", "seed": 1}, _evaluation(50.0, best_step=10)),
    ]
    table = score_table(entries, ["method"], extra=["best_step"]).set_index("method")
    assert table.loc["A", "Avg"] == 71.0 and table.loc["A", "Avg_std"] == pytest.approx(np.sqrt(2))
    assert table.loc["A", "best_step"] == 200 and table.loc["A", "n_seeds"] == 2
    assert np.isnan(table.loc["B", "Avg_std"]) and table.loc["B", "n_seeds"] == 1
    assert table.loc["A", "STS12"] == 71.0  # subset rows are not mixed into the per-set value
    assert table.loc["A", "setting"] == "offline stand-in (x)"
    assert list(table.columns[:8]) == DATASETS


def test_heatmap_matrix_orders_rows_and_columns():
    figure5 = pd.DataFrame({"view1": ["a", "a", "b", "b"], "view2": ["a", "b", "a", "b"], "Avg": [1.0, 2.0, 3.0, 4.0]})
    matrix = heatmap_matrix(figure5, ["b", "a"])
    assert matrix.values.tolist() == [[4.0, 3.0], [2.0, 1.0]]


def test_a_row_whose_evaluation_records_another_run_is_refused_naming_the_file():
    """The labels a row is built under (its seed, a sweep's value) must be what its evaluation file records of its
    run: a file of another run joined to the row is a one-line fault, not a silently mislabelled row."""
    from consert.paper.artifacts import check_recorded
    from consert.registry import FIGURE6, FIGURE7, TABLE2

    files = {
        "tau0.5.csv": _evaluation(60.0, seed=1, temperature=0.5),
        "tau0.1.csv": _evaluation(60.0, seed=1, temperature=0.1),
        "all.csv": _evaluation(60.0, seed=1, n_texts="all"),
        "unrecorded.csv": _evaluation(60.0),  # an older file without the columns: nothing to compare
        "every_text.csv": _evaluation(60.0, seed=1, n_texts=89192),  # a file that records the mode's own count
    }
    read = files.__getitem__
    check_recorded(FIGURE7, [({"size": "base", "temperature": 0.5, "seed": 1}, "tau0.5.csv", None)], read)
    check_recorded(FIGURE6, [({"size": "base", "mode": "unsup", "n_texts": "all", "seed": 1}, "all.csv", None)], read)
    check_recorded(FIGURE7, [({"size": "base", "temperature": 0.5, "seed": 1}, "unrecorded.csv", None)], read)
    check_recorded(FIGURE7, [({"method": "BERT-base-ABTT", "size": "base"}, "tau0.1.csv", None)], read)  # no value
    # a null value (labelled by the axis's ``unset``) is the mode's own, whatever the file records of it
    check_recorded(
        FIGURE6, [({"size": "base", "mode": "unsup", "n_texts": "all", "seed": 1}, "tau0.1.csv", None)], read
    )
    with pytest.raises(
        ValueError, match=r"^tau0\.1\.csv: temperature 0\.1, but its row of figure7 is temperature 0\.5"
    ):
        check_recorded(FIGURE7, [({"size": "base", "temperature": 0.5, "seed": 1}, "tau0.1.csv", None)], read)
    with pytest.raises(ValueError, match=r"^tau0\.5\.csv: seed 1, but its row of table2 is seed 2: the file is"):
        check_recorded(TABLE2, [({"method": "ConSERT-base", "size": "base", "seed": 2}, "tau0.5.csv", None)], read)
