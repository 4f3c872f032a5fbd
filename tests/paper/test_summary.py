"""The summary page cannot be misread and reads like the paper: each compared table as the paper prints it (our
number and seed SD beside the published one, the verdict marked on the row's primary cell), the setting said once
above each table and never in a row, rows of another setting, rows not run and rows of yours apart, the reasons
grouped; a number run in another setting than the paper's (the stand-in, a rehearsal) is never under a column
called ``reproduced`` nor marked so."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd

from consert.encode.models import REHEARSAL_LABEL, STAND_IN_LABEL
from consert.paper.catalogue import COMPARED
from consert.paper.summary import cells_table, shown_table, write_summary
from consert.verdict.decision import PRIMARY, ComparisonRow
from consert.verdict.layout import paper_layout
from tests.conftest import PUBLISHED
from tests.summary_page import SummaryPage

PAPER = "paper setting (model as named)"


def _cell(row: str, setting: str, reproduced: float, verdict: str, comparable: bool, status: str = "compared"):
    return {
        **asdict(ComparisonRow("table2", row, "Avg", role=PRIMARY, published=53.86, reproduced=reproduced)),
        "delta": reproduced - 53.86,
        "diff_low": reproduced - 54.5,
        "diff_high": reproduced - 53.2,
        "verdict": verdict,
        "comparable": comparable,
        "reason": "" if comparable else f"offline stand-in: {setting}",
        "setting": setting,
        "status": status,
    }


def _comparison() -> pd.DataFrame:
    """Table 2's primary cells: two of the stand-in, one of the paper's setting, one declared not run (the
    comparison's gap row: column ``*``, no number)."""
    return pd.DataFrame(
        [
            _cell("BERT-base", STAND_IN_LABEL, 77.09, "not comparable", False),
            _cell("ConSERT-base", STAND_IN_LABEL, 80.11, "not comparable", False),
            {**_cell("BERT-large", PAPER, 53.90, "reproduced", True), "seed_std": 0.4},
            {**_cell("ConSERT-large", "", float("nan"), "not run", False, "not run"), "column": "*", "reason": "x"},
        ]
    )


def test_the_listed_cells_call_our_number_ours_and_say_the_interval_in_words():
    frame = cells_table(_comparison())
    assert "reproduced" not in frame.columns and "comparable" not in frame.columns and "setting" not in frame.columns
    rows = frame.set_index("row")
    assert rows.loc["BERT-base", "ours"] == 77.09 and rows.loc["BERT-base", "verdict"] == "not comparable"
    assert rows.loc["BERT-base", "95% interval of the difference"] == "22.59 to 23.89"  # 77.09 - 54.5, 77.09 - 53.2
    assert rows.loc["BERT-large", "verdict"] == "reproduced" and rows.loc["BERT-large", "seed SD"] == 0.4
    assert rows.loc["ConSERT-large", "verdict"] == "not run"
    assert rows.loc["ConSERT-large", "95% interval of the difference"] == ""


def test_a_table_of_another_setting_says_so_once_in_its_caption_not_in_its_rows():
    table = pd.DataFrame(
        {
            "method": ["BERT-base (mean)", "ConSERT-base", "SBERT-base"],
            "Avg": [56.0, 72.0, 74.0],
            "setting": [STAND_IN_LABEL, REHEARSAL_LABEL, PAPER],
            "nli": ["", "", "SICK-E stand-in for SNLI+MNLI"],
        }
    )
    shown, caption = shown_table(table)
    assert list(shown.columns) == ["method", "Avg"]
    assert caption.startswith("3 of 3 rows were run in another setting than the paper's")
    assert STAND_IN_LABEL in caption and REHEARSAL_LABEL in caption and "SICK-E stand-in" in caption
    _, caption = shown_table(table.iloc[[2]].assign(nli=""))
    assert caption is None


def _page(tmp_path, table2: pd.DataFrame | None = None) -> SummaryPage:
    results, figures = tmp_path / "results", tmp_path / "figures"
    results.mkdir()
    diagnostic = {**_cell("BERT-large", PAPER, 35.0, "not reproduced", True), "column": "STS12", "role": "diagnostic"}
    comparison = pd.concat([_comparison(), pd.DataFrame([diagnostic])], ignore_index=True)
    comparison.to_csv(results / "comparison.csv", index=False)
    paper_layout(comparison, COMPARED, PUBLISHED).to_csv(results / "paper_tables.csv", index=False)
    if table2 is not None:
        table2.to_csv(results / "table2_unsup.csv", index=False)
    return SummaryPage(write_summary(results, figures, tmp_path / "summary.html", "abc123", "a box").read_text())


def test_table_2_reads_as_the_paper_prints_it_with_the_verdict_marked_on_its_primary_cell(tmp_path):
    """Each row: ours ± SD beside the paper's number (ConSERT-large's 76.45 is the paper's Table 2, beside no number
    of ours: not run); the primary cell (Avg) carries the verdict's colour and word; the row of the paper's setting
    first, the stand-in's apart beneath it, then the row not run, then a row of yours; the setting said once above
    the table and in none of its rows; the reasons grouped."""
    yours = pd.DataFrame({"method": ["mine (yours)"], "size": ["yours"], "STS12": [61.0], "Avg": [70.5],
                          "setting": [STAND_IN_LABEL]})  # fmt: skip
    page = _page(tmp_path, yours)
    table = page.tables["table2_unsup"]
    sets = [cell.text for cell in table.head[0][1:]]
    assert sets == ["STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R", "Avg"]  # ConSERT-large's numbers
    assert [cell.text for cell in table.head[1]] == ["ours ± SD", "paper"] * 8
    rows = {cells[0].text: (group, cells) for group, cells in table.body if cells[0].classes == "row"}
    assert [group for group, _ in table.body if _[0].classes == "row"] == ["paper", "other", "other", "not-run",
                                                                           "yours"]  # fmt: skip
    rows = {name: (group, cells[-2:]) for name, (group, cells) in rows.items()}  # each row's Avg: ours, paper
    group, cells = rows["BERT-large"]
    assert cells[0].text == "53.90 ±0.40 reproduced" and "v-reproduced" in cells[0].classes
    assert cells[1].text == "53.86" and cells[1].classes == "published"
    _, first = next(row for row in table.body if row[1][0].text == "BERT-large")  # a diagnostic set: no mark
    assert first[1].text == "35.00" and first[1].classes == "ours"
    group, cells = rows["BERT-base"]
    assert cells[0].text == "77.09 not comparable" and "v-not-comparable" in cells[0].classes
    _, first = next(row for row in table.body if row[1][0].text == "BERT-base")  # a set, not the primary: no mark
    assert first[1].text == "" and first[1].classes == "ours" and first[2].text == "35.20"  # the paper's STS12
    group, cells = rows["ConSERT-large"]
    assert (cells[0].text, cells[1].text) == ("", "76.45")
    group, cells = rows["mine (yours)"]
    assert (cells[0].text, cells[1].text) == ("70.50", "") and cells[0].classes == "ours"
    assert page.settings["paper-table2_unsup"] == [
        f"Run in: {STAND_IN_LABEL} (2 rows); {PAPER} (1 row). 1 of 3 compared rows are comparable with the paper."
    ]
    every_cell = [cell.text for _, cells in table.body for cell in cells]
    assert not any(STAND_IN_LABEL in text or "stand-in" in text for text in every_cell)  # no per-row setting
    text = (tmp_path / "summary.html").read_text()  # the grouped reasons: each once, with its rows
    assert text.count("not comparable: run in another setting (named above): BERT-base, ConSERT-base") == 1
    assert text.count("not run: the config declares it (its not_run patterns): ConSERT-large") == 1


def test_the_first_screen_leads_with_the_counts_then_table_2(tmp_path):
    """The counts are one row of numbers under their labels, said once (no sentence repeating them), and Table 2
    comes before every other table and figure."""
    page = _page(tmp_path)
    counts = page.tables["counts"]
    assert counts.header == ["reproduced", "not reproduced", "inconclusive", "not comparable", "not run", "missing"]
    assert counts.rows == [["1", "0", "0", "2", "1", "0"]]
    text = (tmp_path / "summary.html").read_text()
    assert "Published rows of the paper: 1 reproduced" not in text  # the counts' sentence: printed once, as a table
    assert list(page.tables).index("table2_unsup") == list(page.tables).index("counts") + 1


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
