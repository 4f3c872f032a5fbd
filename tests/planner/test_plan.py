"""The run planner: every artifact's runs, deduplicated, with two-stage runs after their NLI run."""

from __future__ import annotations

import re

import pytest

from consert.planner.keys import WorkflowConfig
from consert.planner.load import read_workflow_config
from consert.planner.plan import RunSpec, plan_runs, train_overrides, unique_runs
from consert.train.config import TrainConfig
from tests.conftest import ROOT


def _config(name: str) -> WorkflowConfig:
    """A workflow config as the workflow sees it: checked, typed, its defaults filled in."""
    return read_workflow_config(ROOT / "config" / name)


def test_paper_config_plans_every_run_once():
    config = _config("config.yaml")
    runs = unique_runs(plan_runs(config))
    # seeds 1, 2, 3 for the primary rows, per seed and size: table2 (1) + table3 sup, joint, sup-unsup,
    # joint-unsup (4) + BERT-flow's BERT-NLI (1); the contrastive family: SimCSE and AugCSE on base (its
    # ConSERT row is the Table 2 run); seed 1 only for the base sweeps: heatmap 25 - 1 default,
    # temperature 10 - 1, batch 5 - 1, few-shot 6 x 2 - 2 (all = tables; N = 1 upsampled as main.py)
    assert config.seeds == [1, 2, 3] and config.sweeps.seeds == [1]
    assert len(runs) == 3 * (2 * 6 + 2) + 24 + 9 + 4 + 10
    assert runs["base-unsup-n1-seed1"].overrides == runs["base-joint-unsup-n1-seed1"].overrides == (("n_texts", 1),)
    assert "base-unsup-seed1" in runs and "large-joint-unsup-seed1" in runs
    assert runs["base-unsup-none+dropout-seed1"].overrides == (("views", ("none", "dropout")),)
    assert runs["base-unsup-tau0.05-seed1"].overrides == (("temperature", 0.05),)
    assert runs["base-unsup-bs16-seed1"].overrides == (("batch_size", 16),)


def test_shared_experiments_have_one_id():
    config = _config("config.yaml")
    planned = plan_runs(config)
    default = RunSpec("base").run_id
    users = {p.artifact for p in planned if p.spec.run_id == default}
    assert users == {"table2", "table4", "figure5", "figure6", "figure7", "family"}


def test_two_stage_runs_start_from_the_nli_run():
    config = _config("config.yaml")
    spec = RunSpec("base", "joint-unsup", (("n_texts", 100),))
    assert spec.stage1 == RunSpec("base", "joint")
    values = train_overrides(spec, config)
    assert values["stage1_model"] == "runs/base-joint-seed1/model" and values["mode"] == "joint-unsup"
    assert values["n_texts"] == 100 and values["model"] == "bert-base-uncased"
    resolved = TrainConfig.from_dict(values)  # the stage's recipe: the authors' joint-unsup script
    assert resolved.epochs == 25 and resolved.views == ("none", "shuffle") and "epochs" not in values
    first = train_overrides(spec.stage1, config)
    assert first["model"] == "bert-base-uncased" and first["mode"] == "joint"
    assert first["nli_source"] == "snli+mnli"


def test_seeds_multiply_runs():
    config = _config("test.yaml")  # seeds [1, 2]; without sweeps.seeds the sweeps run both too
    config = config.model_copy(update={"sweeps": config.sweeps.model_copy(update={"seeds": None})})
    runs = unique_runs(plan_runs(config))
    by_seed = {seed: {spec.run_id.removesuffix(f"-seed{seed}") for spec in runs.values() if spec.seed == seed}
               for seed in (1, 2)}  # fmt: skip
    assert set(by_seed) == {spec.seed for spec in runs.values()} and by_seed[1] == by_seed[2] and by_seed[1]


def test_the_sweeps_run_their_own_seeds():
    config = _config("config.yaml")
    runs = unique_runs(plan_runs(config)).values()
    sweeps = {spec.seed for spec in runs if spec.overrides}
    primary = {spec.seed for spec in runs if spec.mode in ("sup", "joint", "simcse")}
    assert sweeps == {1} and primary == {1, 2, 3}


def test_unordered_heatmap_trains_each_pair_once_and_fills_both_cells():
    from consert.sweeps import heatmap_cells

    augmentations = ["none", "shuffle", "feature_cutoff"]
    cells = heatmap_cells(augmentations, "unordered")
    assert [(a, b) for a, b, _ in cells] == [(a, b) for a in augmentations for b in augmentations]
    assert len({views for _, _, views in cells}) == 3 * 4 // 2  # n(n+1)/2 unordered pairs
    trained = {(a, b): views for a, b, views in cells}
    assert trained["feature_cutoff", "shuffle"] == trained["shuffle", "feature_cutoff"] == ("shuffle", "feature_cutoff")
    assert all(len(set(views)) == 1 for (a, b), views in trained.items() if a == b)
    ordered = heatmap_cells(augmentations, "ordered")
    assert len({views for _, _, views in ordered}) == 9


def test_offline_config_plans_15_runs_and_its_heatmap_rows_say_which_run_they_show():
    config = _config("offline.yaml")
    runs = unique_runs(plan_runs(config))
    # table2 1 + table3 4 + batch sizes 3 - 1 + heatmap 3 - 1 + few-shot (1 size x 2 settings) + temperatures 3 - 1
    # + SimCSE and AugCSE + BERT-flow's BERT-NLI (Table 3's flow row fits on it)
    assert len(runs) == 1 + 4 + 2 + 2 + 2 + 2 + 2 + 1
    cells = {(p.labels["view1"], p.labels["view2"]): p for p in plan_runs(config) if p.artifact == "figure5"}
    assert len(cells) == 4
    mirrored = cells["shuffle", "feature_cutoff"]
    assert mirrored.labels["trained_as"] == "feature_cutoff+shuffle"
    assert mirrored.spec == cells["feature_cutoff", "shuffle"].spec
    assert cells["feature_cutoff", "shuffle"].spec.run_id == "base-unsup-seed1"  # the Table 2 run


def test_more_seeds_for_one_row_plan_only_that_rows_new_runs():
    """Paper config, row_seeds {ConSERT-base: [1..5]}: seeds 4 and 5 of Table 2's base run only (2 runs; the family's
    ConSERT row is that run); {ConSERT-base sup-unsup: [1..4]}: its seed 4 and the NLI run it starts from (2 runs),
    while Table 3's sup row keeps its 3 seeds. A row the config does not train, or seeds without the config's, stop
    at the start in one line."""
    from consert.configs import ConfigError
    from consert.planner.load import load_workflow_config

    config = _config("config.yaml")
    before = unique_runs(plan_runs(config))

    def planned(row_seeds):
        return load_workflow_config({**config.model_dump(mode="json"), "row_seeds": row_seeds})

    more = planned({"ConSERT-base": [1, 2, 3, 4, 5]})
    added = set(unique_runs(plan_runs(more))) - set(before)
    assert added == {"base-unsup-seed4", "base-unsup-seed5"}
    rows = [p for p in plan_runs(more) if p.labels.get("method") == "ConSERT-base"]
    assert sorted((p.artifact, p.spec.seed) for p in rows) == sorted(
        (artifact, seed) for artifact in ("table2", "family") for seed in (1, 2, 3, 4, 5)
    )
    two_stage = planned({"ConSERT-base sup-unsup": [1, 2, 3, 4]})
    assert set(unique_runs(plan_runs(two_stage))) - set(before) == {"base-sup-unsup-seed4", "base-sup-seed4"}
    sup = [p.spec.seed for p in plan_runs(two_stage) if p.labels.get("method") == "ConSERT-base sup"]
    assert sup == [1, 2, 3]
    for row_seeds, says in (
        ({"ConSERT-huge": [1, 2, 3, 4]}, "config row_seeds: 'ConSERT-huge' is not a trained row this config plans"),
        ({"ConSERT-base": [1, 2, 4]}, "config row_seeds.ConSERT-base: [1, 2, 4] lacks seed 3 of `seeds` [1, 2, 3]"),
        ({"ConSERT-base": [1, 2, 3, 3]}, "seed 3 is given twice"),
    ):
        with pytest.raises(ConfigError, match=re.escape(says)):
            planned(row_seeds)
