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


def _gate(results, tmp_path) -> int:
    argv = ["compare", "--results", str(results), "--published", str(PUBLISHED), "--output", str(tmp_path / "c.csv")]
    return main([*argv, "--check"])


def test_check_exit_code(tmp_path, capsys):
    good = _table2([{"method": "ConSERT-base", "size": "base", "score": 72.74, **PAPER}])
    # only Avg equals the published value: every other cell is out of tolerance
    assert _gate(_results(tmp_path, good), tmp_path) == 1
    assert "out of tolerance" in capsys.readouterr().out
    # a stand-in row never fails the gate, however far off
    shutil.rmtree(tmp_path / "results")
    stand_in = {"setting": "offline stand-in (x)", "nli": "", "base_model": "x"}
    bad = _table2([{"method": "ConSERT-base", "size": "base", "score": 10.0, **stand_in}])
    assert _gate(_results(tmp_path, bad), tmp_path) == 0
    assert "no cell is comparable" in capsys.readouterr().out


def test_the_gate_cannot_pass_on_nothing(tmp_path, capsys):
    assert _gate(tmp_path / "missing", tmp_path) == 1
    assert "does not exist" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _gate(empty, tmp_path) == 1
    assert "no reproduced cell" in capsys.readouterr().err
