"""scripts/compare_results.py: the same results ignore only the columns that record the run itself."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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
    assert "1 of 1 result CSVs and plan files the same" in capsys.readouterr().out
    assert compare_results.main([str(before), str(_tree(tmp_path / "score", 70.1235, "aaaaaaa"))]) == 1
    assert "differs: evals/run.csv: spearman" in capsys.readouterr().out
    assert compare_results.main([str(before), str(_tree(tmp_path / "more", 70.1234, "aaaaaaa", extra=True))]) == 1
    assert "only after: extra.csv" in capsys.readouterr().out
    assert compare_results.main([str(before), str(tmp_path / "commit"), "--strict"]) == 1


def test_a_plan_file_is_compared_byte_for_byte(tmp_path, capsys):
    """A snapshot's run config that changed one value differs; the same text is the same."""
    trees = [_tree(tmp_path / name, 70.0, "aaaaaaa") for name in ("before", "after")]
    for root, temperature in zip(trees, ("0.1", "0.1"), strict=True):
        (root / "runs" / "base-unsup-seed1").mkdir(parents=True)
        (root / "runs" / "base-unsup-seed1" / "train.yaml").write_text(f"temperature: {temperature}\n")
        (root / "plan.txt").write_text("rule x:\noutput: results/x.csv\n")
    assert compare_results.main([str(trees[0]), str(trees[1])]) == 0
    assert "3 of 3 result CSVs and plan files the same" in capsys.readouterr().out
    (trees[1] / "runs" / "base-unsup-seed1" / "train.yaml").write_text("temperature: 0.05\n")
    assert compare_results.main([str(trees[0]), str(trees[1])]) == 1
    assert "differs: runs/base-unsup-seed1/train.yaml: 2 lines not in both" in capsys.readouterr().out


snapshot_spec = importlib.util.spec_from_file_location("snapshot_plans", ROOT / "scripts" / "snapshot_plans.py")
snapshot_plans = importlib.util.module_from_spec(snapshot_spec)
snapshot_spec.loader.exec_module(snapshot_plans)


def test_a_plan_keeps_what_each_job_does_and_drops_when_and_why(tmp_path):
    """Two jobs of a dry run in the other order, with other job ids, reasons and times, and the working folder in a
    command: the same plan, the folder written WORKDIR; another shell command is another plan."""
    job = (
        "rule consert_train:\n    input: runs/a/train.yaml\n    output: results/evals/consert/a.csv\n"
        "    jobid: {jobid}\n    reason: {reason}\n    resources: tmpdir=/tmp, gpu=0\n"
        "Shell command: consert train --config {folder}/runs/a/train.yaml\n\n[Wed Dec  2 08:05:12 2026]\n"
    )
    other = "localrule recipe:\n    output: results/recipe.csv\n    jobid: 1\n\n"
    first = job.format(jobid=3, reason="Missing output files", folder=tmp_path) + other
    second = other.replace("jobid: 1", "jobid: 7") + job.format(jobid=9, reason="Updated input", folder=tmp_path)
    plan = snapshot_plans.plan_text(first, tmp_path)
    assert plan == snapshot_plans.plan_text(second, tmp_path)
    assert "jobid" not in plan and "reason" not in plan and "2026" not in plan and str(tmp_path) not in plan
    assert "Shell command: consert train --config WORKDIR/runs/a/train.yaml" in plan
    assert plan != snapshot_plans.plan_text(first.replace("consert train", "consert sgopt"), tmp_path)


def test_every_shipped_config_is_snapshotted_with_the_configs_it_is_layered_over():
    """Each config of config/ names its files; a layered one (its first line says so) its base first."""
    for config in sorted((ROOT / "config").glob("*.yaml")):
        files = snapshot_plans.config_files(config)
        assert files[-1] == str(config) and all(Path(file).is_file() for file in files)
        layered = "layered over" in config.read_text().splitlines()[0]
        assert (len(files) == 2) == layered, config.name
