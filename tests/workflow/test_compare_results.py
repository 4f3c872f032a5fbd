"""scripts/compare_results.py: the same results ignore only the columns that record the run itself."""

from __future__ import annotations

import importlib.util

import pandas as pd

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("compare_results", ROOT / "scripts" / "compare_results.py")
compare_results = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare_results)


def _tree(root, spearman: float, commit: str, extra: bool = False):
    (root / "results" / "evals").mkdir(parents=True)
    (root / "results" / "published").mkdir()
    frame = pd.DataFrame({"dataset": ["STS12"], "spearman": [spearman], "harness_commit": [commit]})
    frame.to_csv(root / "results" / "evals" / "run.csv", index=False)
    pd.DataFrame({"x": [commit]}).to_csv(root / "results" / "published" / "ignored.csv", index=False)
    if extra:
        frame.to_csv(root / "results" / "extra.csv", index=False)
    return root


def test_another_commit_is_the_same_result_and_another_score_is_not(tmp_path, capsys):
    before = _tree(tmp_path / "before", 70.1234, "aaaaaaa")
    assert compare_results.main([str(before), str(_tree(tmp_path / "commit", 70.1234, "bbbbbbb"))]) == 0
    assert "1 of 1 result CSVs the same" in capsys.readouterr().out
    assert compare_results.main([str(before), str(_tree(tmp_path / "score", 70.1235, "aaaaaaa"))]) == 1
    assert "differs: evals/run.csv: spearman" in capsys.readouterr().out
    assert compare_results.main([str(before), str(_tree(tmp_path / "more", 70.1234, "aaaaaaa", extra=True))]) == 1
    assert "only after: extra.csv" in capsys.readouterr().out
    assert compare_results.main([str(before), str(tmp_path / "commit"), "--strict"]) == 1
