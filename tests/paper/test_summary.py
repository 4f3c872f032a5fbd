"""The summary page cannot be misread: a number run in another setting than the paper's (the stand-in, a
rehearsal) is never under a column called ``reproduced``, says where it was run in its row, and its table's
caption says so; a row run as the paper ran it reads as the paper's."""

from __future__ import annotations

from dataclasses import asdict
from html.parser import HTMLParser

import pandas as pd

from consert.encode.models import REHEARSAL_LABEL, STAND_IN_LABEL
from consert.paper.summary import cells_table, shown_table, write_summary
from consert.verdict.decision import PRIMARY, ComparisonRow

PAPER = "paper setting (model as named)"


class _Tables(HTMLParser):
    """Every ``<table id=...>`` of a page: its caption, its header cells and its rows' cells, as text."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, dict] = {}
        self._table, self._in = None, None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._table = self.tables.setdefault(dict(attrs).get("id"), {"caption": "", "header": [], "rows": []})
        elif self._table is not None and tag == "caption":
            self._in = "caption"
        elif self._table is not None and tag == "tr":
            self._table["rows"].append([])
        elif self._table is not None and tag in ("th", "td"):
            self._in = tag
            cells = self._table["header"] if tag == "th" and len(self._table["rows"]) == 1 else self._table["rows"][-1]
            cells.append("")  # an empty cell is a cell

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None
        elif tag in ("caption", "th", "td"):
            self._in = None

    def handle_data(self, data):
        if self._table is None or self._in is None:
            return
        if self._in == "caption":
            self._table["caption"] += data
        elif self._in == "th" and len(self._table["rows"]) == 1:  # the header row
            self._table["header"][-1] += data.strip()
        else:
            self._table["rows"][-1][-1] += data.strip()


def _cell(row: str, setting: str, reproduced: float, verdict: str, comparable: bool, status: str = "compared"):
    return {
        **asdict(ComparisonRow("table2", row, "Avg", role=PRIMARY, published=53.86, reproduced=reproduced)),
        "delta": reproduced - 53.86,
        "verdict": verdict,
        "comparable": comparable,
        "reason": "" if comparable else f"offline stand-in: {setting}",
        "setting": setting,
        "status": status,
    }


def _comparison() -> pd.DataFrame:
    return pd.DataFrame(
        [
            _cell("BERT-base", STAND_IN_LABEL, 77.09, "not comparable", False),
            _cell("ConSERT-base", STAND_IN_LABEL, 80.11, "not comparable", False),
            _cell("BERT-large", PAPER, 53.90, "reproduced", True),
            {**_cell("ConSERT-large", "", float("nan"), "not run", False, "not run"), "reason": "declared"},
        ]
    )


def test_the_primary_cells_call_our_number_ours_and_say_where_each_was_run():
    frame, caption = cells_table(_comparison())
    assert "reproduced" not in frame.columns and "comparable" not in frame.columns
    rows = frame.set_index("row")
    assert rows.loc["BERT-base", "ours"] == 77.09 and rows.loc["BERT-base", "ours run in"] == "offline stand-in"
    assert rows.loc["BERT-base", "status"] == "compared in another setting"
    assert rows.loc["BERT-large", "ours run in"] == "paper setting" and rows.loc["BERT-large", "status"] == "compared"
    assert rows.loc["ConSERT-large", "ours run in"] == "" and rows.loc["ConSERT-large", "status"] == "not run"
    assert caption.startswith("2 of 3 compared rows were run in another setting than the paper's setting")
    assert STAND_IN_LABEL in caption and "never 'reproduced'" in caption
    # every row of the paper's setting: the caption says so, and says nothing of another one
    _, caption = cells_table(_comparison().iloc[[2]])
    assert "another setting" not in caption and "run in the paper's setting" in caption


def test_a_table_of_another_setting_says_so_in_its_rows_and_its_caption():
    table = pd.DataFrame(
        {
            "method": ["BERT-base (mean)", "ConSERT-base", "SBERT-base"],
            "Avg": [56.0, 72.0, 74.0],
            "setting": [STAND_IN_LABEL, REHEARSAL_LABEL, PAPER],
            "nli": ["", "", "SICK-E stand-in for SNLI+MNLI"],
        }
    )
    shown, caption = shown_table(table)
    assert list(shown["run in"]) == ["offline stand-in", "rehearsal", "SICK-E stand-in for SNLI+MNLI"]
    assert caption.startswith("3 of 3 rows were run in another setting than the paper's")
    assert STAND_IN_LABEL in caption and REHEARSAL_LABEL in caption
    shown, caption = shown_table(table.iloc[[2]].assign(nli=""))
    assert "run in" not in shown and caption is None


def test_the_summary_page_shows_no_stand_in_number_as_reproduced(tmp_path):
    results, figures = tmp_path / "results", tmp_path / "figures"
    results.mkdir()
    _comparison().to_csv(results / "comparison.csv", index=False)
    pd.DataFrame(
        {"method": ["BERT-base (mean)"], "size": ["base"], "Avg": [77.09], "setting": [STAND_IN_LABEL]}
    ).to_csv(results / "table2_unsup.csv", index=False)
    page = write_summary(results, figures, tmp_path / "summary.html", "abc123", "a test machine").read_text()
    parser = _Tables()
    parser.feed(page)
    primary = parser.tables["primary-cells"]
    assert "reproduced" not in primary["header"] and "ours" in primary["header"]
    assert primary["caption"].startswith("2 of 3 compared rows were run in another setting")
    by_row = {cells[1]: dict(zip(primary["header"], cells, strict=True)) for cells in primary["rows"][1:]}
    assert by_row["BERT-base"]["ours run in"] == "offline stand-in" and by_row["BERT-base"]["ours"] == "77.09"
    assert by_row["BERT-base"]["verdict"] == "not comparable"
    table2 = parser.tables["table2_unsup"]
    assert table2["header"] == ["method", "size", "Avg", "run in"] and table2["rows"][1][-1] == "offline stand-in"
    assert (
        table2["caption"].startswith("1 of 1 rows were run in another setting") and STAND_IN_LABEL in table2["caption"]
    )


def test_figure5s_colour_scale_says_the_spread_it_spans(tmp_path):
    """The heatmap stretches its colours over its own cells: a 0.3-point spread looks like a 30-point one unless
    the colour bar says which spread it spans."""
    from consert.paper import figures
    from tests.paper.text_extents import overlapping_texts

    views = ["none", "shuffle", "feature_cutoff"]
    rows = [{"size": "base", "view1": a, "view2": b, "trained_as": f"{a}+{b}", "Avg": 70.0 + 0.03 * i,
             "setting": STAND_IN_LABEL} for i, (a, b) in enumerate((a, b) for a in views for b in views)]  # fmt: skip
    figure = figures.figure5(pd.DataFrame(rows), [tmp_path / "f5.png"])
    colour_bar = figure.axes[-1]
    assert colour_bar is not figure.axes[0]
    assert (
        " ".join(colour_bar.get_ylabel().split())
        == "avg Spearman x 100: colours span 70.00 to 70.24 (a spread of 0.24 points)"
    )
    assert overlapping_texts(figure) == []


def test_the_first_screen_says_one_seed_cannot_catch_a_sweeps_shift(tmp_path):
    """Sweep rows at one seed: a 1-point error in all of them is caught 0.525 of the time and 8 seeds a row reach 0.80
    (consert gate-rates --sweep-seeds 1-10, 4,000 runs each; test_gate_rates checks them against a fresh simulation).
    The line is on the printed first screen and in the summary page's verdict counts; at 8 seeds it is gone."""
    from consert.paper.summary import headline

    sweep = {**_cell("batch 16", PAPER, 72.5, "inconclusive", True), "artifact": "table4", "n_seeds": 1}
    for seeds, shown in ((1, True), (8, False)):
        results = tmp_path / str(seeds)
        results.mkdir()
        pd.DataFrame([_cell("BERT-large", PAPER, 53.90, "reproduced", True), {**sweep, "n_seeds": seeds}]).to_csv(
            results / "comparison.csv", index=False
        )
        line = next((line for line in headline(results) if line.startswith("The sweeps")), None)
        assert (line is not None) == shown, line
    stand_in = tmp_path / "stand-in"  # a sweep run in another setting is judged by no one: no line
    stand_in.mkdir()
    elsewhere = {**_cell("batch 16", "offline stand-in", 72.5, "not comparable", False), "artifact": "table4"}
    pd.DataFrame([{**elsewhere, "n_seeds": 1}]).to_csv(stand_in / "comparison.csv", index=False)
    assert not any(line.startswith("The sweeps") for line in headline(stand_in))
    assert "ran 1 seed a row" in line_of(tmp_path / "1") and "caught 0.53 of the time, under 80%" in line_of(
        tmp_path / "1"
    )
    assert "8 seeds a sweep row reach it (0.80" in line_of(tmp_path / "1")
    page = write_summary(tmp_path / "1", tmp_path / "figures", tmp_path / "summary.html", "abc", "a test machine")
    verdicts = page.read_text().split('<section id="verdicts">')[1].split("</section>")[0]
    assert "a 1-point error in all of them is caught 0.53" in verdicts


def line_of(results) -> str:
    from consert.paper.summary import headline

    return next(line for line in headline(results) if line.startswith("The sweeps"))
