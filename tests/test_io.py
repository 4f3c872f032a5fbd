"""Reading result CSVs back: text columns that pandas reads as numbers when they hold no text."""

from __future__ import annotations

import warnings

import pandas as pd

from consert.io import text_column, write_csv


def test_a_text_column_with_no_value_reads_back_as_empty_strings_without_a_warning(tmp_path):
    path = write_csv(
        pd.DataFrame({"method": ["a", "b"], "setting": [None, None], "size": ["large", None]}), tmp_path / "r.csv"
    )
    frame = pd.read_csv(path)
    assert frame.setting.dtype == "float64"  # what pandas makes of a column with no value at all
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert text_column(frame, "setting").tolist() == ["", ""]
        assert text_column(frame, "size").tolist() == ["large", ""]
        assert text_column(frame, "nli").tolist() == ["", ""]  # absent: empty, one per row
