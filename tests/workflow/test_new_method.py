"""A method added the way a contributor adds one: one :class:`~consert.train.methods.Method` record (here a toy,
SimCSE at temperature 0.1, which needs no objective or settings of its own) and its published row (one data file,
``toy_method_published.csv``). With nothing else edited, the test config lists it and passes the workflow's check,
and the harness plans it, trains it, cards it, tables it and judges it. The Architecture page's "How to add a
method" counts these files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from consert.cli import main as cli_main
from consert.configs import read_yaml
from consert.paper.artifacts import consert_eval, run_config, run_model, write_artifact
from consert.paper.card import recipe_card
from consert.paper.design import expected_seeds, paper_design
from consert.paper.plan import plan_runs, unique_runs
from consert.paper.run_configs import consert_run_config, run_config_text
from consert.paper.workflow_config import load_workflow_config
from consert.registry import FAMILY
from consert.train.card import CARD
from consert.train.methods import METHODS, Method
from consert.verdict.compare import compare
from consert.verdict.decision import load_decision
from consert.workflow_keys import WorkflowConfig
from tests.conftest import ROOT
from tests.fixtures import write_senteval_tree

TOY_ROW = Path(__file__).with_name("toy_method_published.csv")
TOY = Method(
    "toycse",
    "ToyCSE",
    {**METHODS["simcse"].recipe, "source": "a toy of the tests: SimCSE at temperature 0.1", "temperature": 0.1},
    ("fp32", "fp32 (the toy's)"),
    notes="a toy method: SimCSE's recipe at temperature 0.1",
    published={"base": "ToyCSE-BERT-base"},
)


@pytest.fixture
def toy_config(tmp_path, monkeypatch) -> WorkflowConfig:
    """The test config training the toy method alone beside ConSERT (one seed, the last-two-layer pooling only: no
    untrained reference rows), in a working directory of its own; the toy's published row beside the paper's."""
    monkeypatch.setitem(METHODS, TOY.name, TOY)
    config = read_yaml(ROOT / "config" / "test.yaml")
    data = write_senteval_tree(tmp_path / "senteval", pairs_per_file=12)
    config.update(data_dir=str(data), seeds=[1])
    config["family"]["methods"] = [TOY.name]
    config["baselines"]["poolings"] = ["mean:-2,-1"]
    typed = load_workflow_config(config)  # as the workflow checks it at its start: the schema names no method
    published = shutil.copytree(ROOT / "results" / "published", tmp_path / "published")
    family = pd.read_csv(published / "contrastive_family.csv")
    pd.concat([family, pd.read_csv(TOY_ROW)]).to_csv(published / "contrastive_family.csv", index=False)
    monkeypatch.chdir(tmp_path)
    return typed


def test_a_method_declared_in_one_record_is_planned_trained_carded_tabled_and_judged(toy_config):
    config = toy_config
    planned = [item for item in plan_runs(config) if item.artifact == FAMILY.key]
    assert sorted(item.labels["method"] for item in planned) == ["ConSERT-base", "ToyCSE-base"]
    (toy_run,) = [run_id for run_id, spec in unique_runs(planned).items() if spec.mode == TOY.name]

    card = recipe_card(config).set_index("run")
    assert card.loc[toy_run, "temperature"] == "0.1" and card.loc[toy_run, "loss"] == "infonce"
    assert card.loc[toy_run, "notes"] == TOY.notes and card.loc[toy_run, "authors_source"] == TOY.recipe["source"]
    assert "UNEXPLAINED" not in card.loc[toy_run, "differs_from_authors"]

    for run_id, spec in unique_runs(planned).items():  # as the workflow's rules: the resolved config, then train
        Path(run_config(run_id)).parent.mkdir(parents=True, exist_ok=True)
        Path(run_config(run_id)).write_text(run_config_text(consert_run_config(run_id, spec, config)))
        assert cli_main(["train", "--config", run_config(run_id), "--evaluate", consert_eval(run_id)]) == 0
    trained = yaml.safe_load(Path(run_config(toy_run)).read_text())
    assert trained["mode"] == TOY.name and trained["temperature"] == 0.1 and trained["loss"] == "infonce"
    assert "- Training data: unlabeled texts" in (Path(run_model(toy_run)) / CARD).read_text()

    write_artifact(FAMILY.key, config, f"results/{FAMILY.csv}")
    table = pd.read_csv(f"results/{FAMILY.csv}")
    assert "ToyCSE-base" in set(table.method) and table.set_index("method").loc["ToyCSE-base", "n_seeds"] == 1

    decision = load_decision(Path("published"))
    assert "family ToyCSE-base" in [row.label for row in paper_design(config, decision)]
    comparison = compare(Path("results"), Path("published"), seeds=expected_seeds(config, decision))
    judged = comparison[(comparison.artifact == FAMILY.key) & (comparison.row == "ToyCSE-BERT-base")]
    assert not judged.empty and set(judged.status) == {"compared"}
    assert set(judged.verdict) == {"not comparable"}  # judged, in the stand-in's setting: not the paper's encoder
    assert judged.published.notna().all()
