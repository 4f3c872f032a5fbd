"""The comparison with published numbers: tolerance, non-comparable rows, exit code."""

from __future__ import annotations

import shutil

import pandas as pd

from consert.cli import main
from consert.compare import compare, failures

from .conftest import PUBLISHED

PAPER = {"setting": "paper setting (model as named)", "nli": "", "base_model": "bert-base-uncased"}


def _table2(rows: list[dict]) -> pd.DataFrame:
    columns = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R", "Avg"]
    return pd.DataFrame(
        [{**{c: r["score"] for c in columns}, **{k: v for k, v in r.items() if k != "score"}} for r in rows]
    )


def _results(tmp_path, table: pd.DataFrame):
    results = tmp_path / "results"
    results.mkdir()
    table.to_csv(results / "table2_unsup.csv", index=False)
    return results


def test_tolerance_and_comparability(tmp_path):
    table = _table2(
        [
            {"method": "ConSERT-base", "size": "base", "score": 72.74, **PAPER},  # Avg exact, others off
            {
                "method": "BERT-base (mean:-2,-1)",
                "size": "base",
                "score": 60.0,
                "setting": "offline stand-in (x)",
                "nli": "",
                "base_model": "sentence-transformers/all-MiniLM-L6-v2",
            },
            {
                "method": "BERT-large-flow",
                "size": "large",
                "score": 70.76,
                "setting": "paper setting (model as named)",
                "nli": "",
                "base_model": "roberta-large",
            },
        ]
    )
    table = pd.concat([table], ignore_index=True)
    comparison = compare(_results(tmp_path, table), PUBLISHED, {"table2": 0.5})
    consert = comparison[comparison.row == "ConSERT-base"].set_index("column")
    assert consert.loc["Avg", "within_tolerance"] and consert.loc["Avg", "delta"] == 0
    assert not consert.loc["STS12", "within_tolerance"]  # 72.74 vs 64.64
    assert consert.comparable.all()
    stand_in = comparison[comparison.row == "BERT-base"]
    assert not stand_in.comparable.any() and stand_in.reason.str.contains("offline stand-in").all()
    other = comparison[comparison.row == "BERT-large-flow"]
    assert not other.comparable.any() and other.reason.str.contains("roberta-large").all()
    failed = failures(comparison)
    assert set(failed.row) == {"ConSERT-base"} and "Avg" not in set(failed.column)


#: Everything but table2's ConSERT-base row, declared not run (the fixtures produce only that row).
ONLY_CONSERT_BASE = [
    "table2:Avg*",
    "table2:BERT-*",
    "table2:ConSERT-large",
    "whitening_table1:*",
    "sgopt_table1:*",
    "table3:*",
    "table4:*",
    "figure4_topk:*",
    "figure5_heatmap:*",
]


def _gate(results, tmp_path, not_run=()) -> int:
    argv = ["compare", "--results", str(results), "--published", str(PUBLISHED), "--output", str(tmp_path / "c.csv")]
    return main([*argv, *(f"--not-run={pattern}" for pattern in not_run), "--check"])


def test_check_exit_code(tmp_path, capsys):
    good = _table2([{"method": "ConSERT-base", "size": "base", "score": 72.74, **PAPER}])
    # only Avg equals the published value: every other cell is out of tolerance
    assert _gate(_results(tmp_path, good), tmp_path, ONLY_CONSERT_BASE) == 1
    assert "HIGHER: table2 ConSERT-base STS12" in capsys.readouterr().out
    # a stand-in row never fails the gate, however far off
    shutil.rmtree(tmp_path / "results")
    stand_in = {"setting": "offline stand-in (x)", "nli": "", "base_model": "x"}
    bad = _table2([{"method": "ConSERT-base", "size": "base", "score": 10.0, **stand_in}])
    assert _gate(_results(tmp_path, bad), tmp_path, ONLY_CONSERT_BASE) == 0
    assert "no cell is comparable" in capsys.readouterr().out


def test_a_paper_setting_row_inside_tolerance_passes_the_gate(tmp_path):
    published = pd.read_csv(PUBLISHED / "consert_table2_unsup.csv").set_index("method").loc["ConSERT-base"]
    row = {c: published[c] + 0.3 for c in ("STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R", "Avg")}
    table = pd.DataFrame([{"method": "ConSERT-base", "size": "base", **row, **PAPER}])
    assert _gate(_results(tmp_path, table), tmp_path, ONLY_CONSERT_BASE) == 0
    comparison = pd.read_csv(tmp_path / "c.csv")
    cells = comparison[comparison.status == "compared"]
    assert len(cells) == 8 and cells.comparable.all() and cells.within_tolerance.all()
    assert cells.delta.round(6).eq(0.3).all()


def test_the_gate_cannot_pass_on_nothing(tmp_path, capsys):
    assert _gate(tmp_path / "missing", tmp_path) == 1
    assert "does not exist" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _gate(empty, tmp_path) == 1
    assert "no reproduced cell" in capsys.readouterr().err


def test_a_renamed_or_absent_row_is_missing_not_skipped(tmp_path, capsys):
    renamed = _table2(
        [
            {"method": "ConSERT-base (renamed)", "size": "base", "score": 72.74, **PAPER},
            {"method": "ConSERT-large", "size": "large", "score": 76.45, **PAPER},  # something is compared
        ]
    )
    results = _results(tmp_path, renamed)
    comparison = compare(results, PUBLISHED)
    missing = comparison[comparison.status == "missing"]
    assert "ConSERT-base" in set(missing.row) and (missing.column == "*").all()
    assert {"table3", "table4", "figure4_topk", "figure5_heatmap"} <= set(missing[missing.row == "*"].artifact)
    # declared rows are "not run", listed and never silently dropped; an undeclared one fails the gate
    declared = compare(results, PUBLISHED, not_run=["table3:*"])
    assert (declared[declared.artifact == "table3"].status == "not run").all()
    assert _gate(results, tmp_path, ONLY_CONSERT_BASE) == 1
    out = capsys.readouterr()
    assert "MISSING: table2 ConSERT-base" in out.out and "nothing reproduced" in out.err


def test_the_forest_plot_puts_each_compared_cell_in_its_sets_panel(tmp_path):
    from consert.figures import comparison_forest

    def cell(artifact, row, column, delta, verdict="reproduced", status="compared"):
        return {
            "artifact": artifact, "row": row, "column": column, "published": 70.0, "reproduced": 70.0 + delta,
            "delta": delta, "ci_low": 69.0 + delta, "ci_high": 71.0 + delta, "verdict": verdict,
            "comparable": verdict != "not comparable", "status": status, "setting": "paper",
        }  # fmt: skip

    frame = pd.DataFrame(
        [
            cell("table2", "ConSERT-base", "STS12", 1.5),
            cell("table2", "ConSERT-base", "Avg", -2.0, "lower"),
            cell("table4", "16", "avg_spearman", 0.5),  # Table 4's average joins the Avg panel
            cell("table4", "16", "steps", 300.0),  # a count, not a Spearman: not plotted
            cell("table3", "X", "STS12", 9.0, status="not run"),
        ]
    )
    figure = comparison_forest(frame, [tmp_path / "forest.png"])
    titles = [axis.get_title() for axis in figure.axes]
    assert titles == ["STS12", "Avg"]
    points = {
        axis.get_title(): sorted(
            (float(line.get_xdata()[0]), float(line.get_ydata()[0])) for line in axis.lines if line.get_marker() == "o"
        )
        for axis in figure.axes
    }
    assert points == {"STS12": [(1.5, 0.0)], "Avg": [(-2.0, 0.0), (0.5, 1.0)]}
    rows = [label.get_text() for label in figure.axes[0].get_yticklabels()]
    assert rows == ["table2: ConSERT-base", "table4: 16"]
