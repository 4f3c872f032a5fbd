"""The run planner: every artifact's runs, deduplicated, with two-stage runs after their NLI run."""

from __future__ import annotations

import yaml

from consert.experiments import RunSpec, plan_runs, train_overrides, unique_runs

from .conftest import ROOT


def _config(name: str) -> dict:
    return yaml.safe_load((ROOT / "config" / name).read_text())


def test_paper_config_plans_every_run_once():
    config = _config("config.yaml")
    runs = unique_runs(plan_runs(config))
    # per size: table2 (1) + table3 sup, joint, sup-unsup, joint-unsup (4); base sweeps:
    # heatmap 25 - 1 default, temperature 10 - 1, batch 5 - 1, few-shot 6 x 2 - 2 (all = tables)
    assert len(runs) == 2 * 5 + 24 + 9 + 4 + 10
    assert "base-unsup-seed1" in runs and "large-joint-unsup-seed1" in runs
    assert runs["base-unsup-none+dropout-seed1"].views == ("none", "dropout")


def test_shared_experiments_have_one_id():
    config = _config("config.yaml")
    planned = plan_runs(config)
    default = RunSpec("base").run_id
    users = {p.artifact for p in planned if p.spec.run_id == default}
    assert users == {"table2", "table4", "figure5", "figure6", "figure7"}


def test_two_stage_runs_start_from_the_nli_run():
    config = _config("config.yaml")
    spec = RunSpec("base", "joint-unsup", n_texts=100)
    assert spec.stage1 == RunSpec("base", "joint")
    values = train_overrides(spec, config)
    assert values["model"] == "runs/base-joint-seed1/model" and values["mode"] == "unsup" and values["n_texts"] == 100
    first = train_overrides(spec.stage1, config)
    assert first["model"] == "bert-base-uncased" and first["mode"] == "joint"
    assert first["nli_source"] == "snli+mnli"


def test_seeds_multiply_runs():
    config = _config("test.yaml")
    runs = unique_runs(plan_runs(config))
    assert {spec.seed for spec in runs.values()} == {1, 2}
    assert len(runs) % 2 == 0
