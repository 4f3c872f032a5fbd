"""A method added the way a contributor adds one, in a copy of the project: a toy of the contrastive family with its
own objective (InfoNCE with an additive margin on the positives, another loss than any of the harness's) and its own
settings class (the margin), written into 3 code files (its recipe and settings, its record, its objective's
module; the training config takes its settings from the record) and 1 data file (its published row). With nothing
else edited the copy plans it, trains it, cards it, tables it, judges it by its margin and its record's seed noise (a
fabricated result inside the margin is ``reproduced``, one outside ``not reproduced``), and its DAG's dry run lists
its jobs. The test
counts the files the addition touched: a method that needed a hand-written list updated elsewhere fails here, as
does a noise kind the verdict did not take from the record. The Architecture page's "How to add" names these files.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from tests.fixtures import write_senteval_tree
from tests.workflow.extension import added_in_a_copy, in_copy, replace_once

#: The toy's published row (invented numbers: a test fixture, not a paper's), Avg the mean of the 7 sets.
TOY_ROW = "ToyCSE-BERT-base,a toy of the tests,70.00,80.00,75.00,80.00,78.00,77.00,70.00,75.71\n"

#: The toy's edits, file by file: (path, text it is appended after or inserted before, the text added).
SETTINGS_AND_RECIPE = '''

class ToySettings(Settings):
    """The toy's own settings: the additive margin on the positives' cosine."""

    margin: float = key("subtracted from each positive pair's cosine before the softmax", 0.0)

    @property
    def in_use(self) -> str:
        return "the toy's margin" if self.margin > 0 else ""

    @property
    def differences(self) -> list[str]:
        return []


TOY_RECIPE: dict[str, Any] = {
    **SIMCSE_RECIPE,
    "source": "a toy of the tests: SimCSE's recipe, an additive margin of 0.2 on the positives",
    "objective": "toy_margin",
    "toycse": {"margin": 0.2},
}
'''
RECORD = """
TOYCSE = TrainableMode(
    "toycse",
    "ToyCSE",
    methods.TOY_RECIPE,
    ("fp32", "fp32 (the toy's)"),
    training_data="unlabeled texts (the toy's)",
    notes="a toy method: InfoNCE with an additive margin",
    settings=methods.ToySettings,
    noise="consert",
    published_in=FAMILY.key,
    published={"base": "ToyCSE-BERT-base"},
    workflow_block=METHOD_KEYS_BLOCK,
    authors_texts="wiki1m",
)
"""
OBJECTIVE = '''
"""The toy's objective: InfoNCE over the two views with an additive margin on the positives' cosine."""

import torch
import torch.nn.functional as F
from torch import nn

from consert.train.objectives.contrastive import Contrastive


class MarginInfoNCE(nn.Module):
    """InfoNCE of the two views with ``margin`` subtracted from each positive pair's cosine, at ``temperature``."""

    def __init__(self, temperature: float, margin: float):
        super().__init__()
        self.temperature, self.margin = temperature, margin

    def forward(self, view1: torch.Tensor, view2: torch.Tensor) -> torch.Tensor:
        cosines = F.normalize(view1, dim=-1) @ F.normalize(view2, dim=-1).T
        cosines = cosines - self.margin * torch.eye(len(cosines), device=cosines.device)
        return F.cross_entropy(cosines / self.temperature, torch.arange(len(cosines), device=cosines.device))


class ToyMargin(Contrastive):
    """SimCSE's views, its loss with the toy's margin (``config.toycse.margin``) on the positives."""

    name = "toy_margin"

    @classmethod
    def loss_module(cls, config) -> nn.Module:
        return MarginInfoNCE(config.temperature, config.toycse.margin)
'''


def add_the_toy(copy: Path) -> None:
    """The toy's addition, as a contributor writes it: 3 code files (one new) and 1 data file."""
    train = copy / "consert" / "train"
    with (train / "methods.py").open("a", encoding="utf-8") as methods:  # its settings and its authors' recipe
        methods.write(SETTINGS_AND_RECIPE)
    modes = train / "modes.py"  # its record, among the modes
    replace_once(
        modes,
        "from consert.train.methods import",
        "from consert.train import methods\nfrom consert.train.methods import",
    )
    replace_once(modes, "\nSGOPT = TrainableMode(", RECORD + "\nSGOPT = TrainableMode(")
    replace_once(modes, "AUGCSE, SGOPT)", "AUGCSE, TOYCSE, SGOPT)")
    (train / "objectives" / "toy.py").write_text(OBJECTIVE.lstrip(), encoding="utf-8")  # its loss
    with (copy / "results" / "published" / "contrastive_family.csv").open("a", encoding="utf-8") as published:
        published.write(TOY_ROW)  # its published row


#: What runs in the copy, in a working folder of its own: the toy planned, carded, trained, tabled and judged.
SCRIPT = """
import json, shutil, sys
from pathlib import Path

import pandas as pd
import yaml

from consert.cli import main as cli_main
from consert.configs import read_yaml
from consert.paper.catalogue import write_artifact
from consert.planner.paths import consert_eval, run_model, train_yaml
from consert.paper.recipe_card import recipe_card
from consert.planner.design import paper_design
from consert.planner.plan import plan_runs, unique_runs
from consert.planner.run_configs import consert_train_config, run_config_text
from consert.planner.load import load_workflow_config
from consert.registry import FAMILY
from consert.train.model_card import CARD
from consert.verdict.decision import load_decision
from tests.workflow.extension import fabricated_verdicts

copy, data = Path(sys.argv[1]), sys.argv[2]
config = read_yaml(copy / "config" / "test.yaml")
config.update(data_dir=data, seeds=[1])
config["family"] = {"methods": ["toycse"], "sizes": ["base"], "train_texts": "sts",
                    "toycse": {"max_steps": 2, "batch_size": 8, "dev_max_pairs": 16}}
config["baselines"]["poolings"] = ["mean:-2,-1"]
Path("toy.yaml").write_text(yaml.safe_dump(config))
typed = load_workflow_config(config)
out = {}
planned = [item for item in plan_runs(typed) if item.artifact == FAMILY.key]
out["planned"] = sorted(item.labels["method"] for item in planned)
(toy_run,) = [run for run, spec in unique_runs(planned).items() if spec.mode == "toycse"]
card = recipe_card(typed).set_index("run").loc[toy_run]
out["card"] = {key: str(card[key]) for key in ("loss", "notes", "authors_source", "differs_from_authors")}
for run_id, spec in unique_runs(planned).items():
    Path(train_yaml(run_id)).parent.mkdir(parents=True, exist_ok=True)
    Path(train_yaml(run_id)).write_text(run_config_text(consert_train_config(run_id, spec, typed).to_dict()))
    assert cli_main(["train", "--config", train_yaml(run_id), "--evaluate", consert_eval(run_id)]) == 0
trained = yaml.safe_load(Path(train_yaml(toy_run)).read_text())
out["trained"] = {"mode": trained["mode"], "objective": trained["objective"], "toycse": trained["toycse"]}
out["model_card"] = (Path(run_model(toy_run)) / CARD).read_text()
write_artifact(FAMILY.key, typed, f"results/{FAMILY.csv}")
table = pd.read_csv(f"results/{FAMILY.csv}")
out["tabled"] = sorted(table.method)
published = copy / "results" / "published"
decision = load_decision(published)
out["design"] = [(row.label, row.kind) for row in paper_design(typed, decision) if "Toy" in row.label]
toy = pd.read_csv(published / "contrastive_family.csv").set_index("method").loc["ToyCSE-BERT-base"]
rows = table[table.method == "ToyCSE-base"]  # the row on the paper's encoder, as a GPU box writes it
out |= fabricated_verdicts(rows, toy, FAMILY.csv, FAMILY.key, "ToyCSE-BERT-base", published)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def toy_project(tmp_path_factory) -> tuple[Path, list[str]]:
    """A copy of the project with the toy added, and the files the addition touched."""
    return added_in_a_copy(tmp_path_factory.mktemp("project"), add_the_toy)


def test_a_method_with_its_own_loss_and_settings_takes_three_code_files_and_one_data_file(toy_project):
    copy, files = toy_project
    code = [name for name in files if name.endswith(".py")]
    assert files == sorted([*code, "results/published/contrastive_family.csv"]), files
    assert code == ["consert/train/methods.py", "consert/train/modes.py", "consert/train/objectives/toy.py"], code


@pytest.mark.slow
def test_the_added_method_is_planned_trained_carded_tabled_and_judged_by_its_record(toy_project, tmp_path):
    copy, _ = toy_project
    data = write_senteval_tree(tmp_path / "senteval", pairs_per_file=12)
    script = tmp_path / "toy_run.py"
    script.write_text(textwrap.dedent(SCRIPT))
    result = in_copy(copy, sys.executable, str(script), str(copy), str(data), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["planned"] == ["ConSERT-base", "ToyCSE-base"]
    assert out["card"]["notes"] == "a toy method: InfoNCE with an additive margin"
    assert out["card"]["authors_source"].startswith("a toy of the tests")
    assert "UNEXPLAINED" not in out["card"]["differs_from_authors"]
    assert out["trained"] == {"mode": "toycse", "objective": "toy_margin", "toycse": {"margin": 0.2}}
    assert "- Training data: unlabeled texts (the toy's)" in out["model_card"]
    assert "ToyCSE-base" in out["tabled"]
    assert out["design"] == [["family ToyCSE-base", "consert"]]  # a primary cell, with the record's noise kind
    # one seed, the record's declared SD (consert: 0.3): 1.645 x 0.3 x sqrt(2) = 0.70 inside the margin of 1
    assert out["inside"]["verdict"] == "reproduced" and "declared (consert" in out["inside"]["sigma_source"]
    assert out["outside"]["verdict"] == "not reproduced" and out["outside"]["margin"] == 1.0


def test_the_added_methods_jobs_are_in_the_dags_dry_run(toy_project, tmp_path):
    copy, _ = toy_project
    data = write_senteval_tree(tmp_path / "senteval", pairs_per_file=12)
    result = in_copy(
        copy,
        sys.executable,
        "-m",
        "snakemake",
        "-n",
        "--snakefile",
        str(copy / "Snakefile"),
        "--directory",
        str(tmp_path / "work"),
        "--configfile",
        str(copy / "config" / "test.yaml"),
        "--config",
        f"data_dir={data}",
        "family={methods: [toycse], sizes: [base], train_texts: sts}",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "runs/base-toycse-seed1/train.yaml" in result.stdout + result.stderr
    assert "results/evals/consert/base-toycse-seed1.csv" in result.stdout + result.stderr
