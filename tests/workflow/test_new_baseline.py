"""An untrained baseline added the way a contributor adds one, in a copy of the project: a toy all-but-the-top (Mu
and Viswanath, ICLR 2018: pooled vectors less their mean and their top principal directions, fitted per task) with
one setting, the directions it removes. The addition touches at most 2 files (its module, with its class and its
settings, and its record in ``baselines/__init__.py``, which names Table 2 as its table); the test counts them.
With nothing else edited, the command line evaluates it with its setting, the workflow's check refuses a mistyped
block of it in one line, its config block reaches its job's command, and Snakemake run on the finished test DAG's
working folder (a copy) evaluates it from the corpus cache and puts its row in Table 2, with its recipe-card row. A
baseline that needed a rule, a config key, a table's source or a card row written elsewhere fails here. The
Architecture page's "How to add" names these files.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.fixtures import write_senteval_tree
from tests.workflow.dag import job_counts
from tests.workflow.extension import added_in_a_copy, copy_snakemake, in_copy, on_finished_dag, replace_once

MODULE = '''"""All-but-the-top (Mu and Viswanath, ICLR 2018): pooled vectors less their mean and their projections on
the top principal directions of the fitted texts' vectors (a toy of the tests)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from consert.configs import AtLeastOne, Settings, key

if TYPE_CHECKING:
    from .base import BaselineOptions, CachedPooledVectors


class AbttSettings(Settings):
    """All-but-the-top's one setting."""

    components: AtLeastOne = key("top principal directions removed (1)", 1)


class AbttBaseline:
    """Pooled vectors less their mean and their top principal directions, fitted on the given texts."""

    def __init__(self, vectors: CachedPooledVectors, settings: AbttSettings):
        self.vectors, self.settings = vectors, settings
        self.name = f"abtt[{vectors.pooling}]"

    @classmethod
    def build(cls, vectors: CachedPooledVectors, options: BaselineOptions) -> AbttBaseline:
        return cls(vectors, options.settings)

    def fit(self, texts: Sequence[str]) -> AbttBaseline:
        matrix = self.vectors(list(texts)).astype(np.float64)
        self.mean = matrix.mean(axis=0)
        self.directions = np.linalg.svd(matrix - self.mean, full_matrices=False)[2][: self.settings.components]
        return self

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        centred = self.vectors(list(sentences)) - self.mean
        return centred - centred @ self.directions.T @ self.directions

    def describe(self) -> dict[str, object]:
        return {**self.vectors.describe(), "abtt_components": self.settings.components}
'''
RECORD = """        BaselineSpec(
            "abtt",
            "baselines.abtt:AbttBaseline",
            fit_on=("task",),
            settings="baselines.abtt:AbttSettings",
            table="table2",
            label="ABTT",
        ),
"""


def add_the_toy(copy: Path) -> None:
    """The toy's addition, as a contributor writes it: its module and its record."""
    (copy / "baselines" / "abtt.py").write_text(MODULE, encoding="utf-8")
    last = "        ),\n    )\n}\n"  # the end of the last record and of the records
    replace_once(copy / "baselines" / "__init__.py", last, "        ),\n" + RECORD + "    )\n}\n")


@pytest.fixture(scope="module")
def toy_project(tmp_path_factory) -> tuple[Path, list[str]]:
    """A copy of the project with the toy baseline added, and the files the addition touched."""
    return added_in_a_copy(tmp_path_factory.mktemp("project"), add_the_toy)


def test_an_untrained_baseline_with_one_setting_takes_two_files(toy_project):
    _, files = toy_project
    assert files == ["baselines/__init__.py", "baselines/abtt.py"]


def test_the_added_baseline_is_evaluated_with_its_setting_and_refused_a_wrong_one(toy_project, tiny_tree, tmp_path):
    """The command line takes it by name (on the stand-in encoder), with its setting by ``--set`` (in its CSV's
    columns), fitted per task as its record says; a wrong value stops in one line, and ``--list-keys`` lists it."""
    copy, _ = toy_project
    out = tmp_path / "abtt.csv"
    argv = [sys.executable, "-m", "consert", "baseline", "abtt", "--data", str(tiny_tree)]
    done = in_copy(copy, *argv, "--set", "components=2", "--output", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    frame = pd.read_csv(out)
    assert set(frame.abtt_components) == {2} and frame.spearman.notna().all()
    assert set(frame.fit_on) == {"task"} and (frame[frame.subset == "all"].fit_texts > 0).all()
    refused = in_copy(copy, *argv, "--set", "components=0", cwd=tmp_path)
    assert refused.returncode == 2
    assert "--set: components: expected a positive integer, got 0" in refused.stderr
    listed = in_copy(copy, sys.executable, "-m", "consert", "baseline", "abtt", "--list-keys", cwd=tmp_path)
    assert "components" in listed.stdout and "top principal directions removed" in listed.stdout


#: Each config file named on the command line loaded as the workflow loads it at its start; its fault printed.
LOAD = """
import sys

from consert.configs import ConfigError, read_yaml
from consert.planner.load import load_workflow_config

for path in sys.argv[1:]:
    try:
        load_workflow_config(read_yaml(path))
    except ConfigError as err:
        print(err)
"""


def _config_with(copy: Path, tmp_path: Path, block: dict) -> Path:
    """The copy's test config with ``block`` laid over its ``baselines``, as a file outside the copy."""
    config = yaml.safe_load((copy / "config" / "test.yaml").read_text())
    config["baselines"].update(block)
    path = tmp_path / f"test-{len(list(tmp_path.glob('test-*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_its_config_block_reaches_its_job_and_a_mistyped_one_stops_the_workflow(toy_project, tmp_path):
    copy, _ = toy_project
    data = write_senteval_tree(tmp_path / "senteval", pairs_per_file=12)

    def dry_run(config: Path):
        (tmp_path / "dag").mkdir(exist_ok=True)
        command, env = copy_snakemake(copy, tmp_path / "dag", "-n", "-p", "--config", f"data_dir={data}", config=config)
        return in_copy(copy, *command, cwd=tmp_path, env={**env, "CONSERT_ALLOW_UNVERIFIED_DATA": "1"})

    planned = dry_run(_config_with(copy, tmp_path, {"abtt": {"components": 2}}))
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert job_counts(planned.stdout)["eval_baseline"] == 1  # the test config's one size
    assert "baseline abtt --model" in planned.stdout and "--set=components=2" in planned.stdout
    # a mistyped block, read by the check the workflow runs at its start (common.smk: load_workflow_config)
    faults = {
        "abt": ("components", "config baselines: unknown key `abt` (did you mean `abtt`?)"),
        "abtt": ("component", "config baselines.abtt: unknown key `component` (did you mean `components`?)"),
    }
    configs = [str(_config_with(copy, tmp_path, {name: {key: 2}})) for name, (key, _) in faults.items()]
    refused = in_copy(copy, sys.executable, "-c", LOAD, *configs, cwd=tmp_path)
    lines = refused.stdout.splitlines()
    assert len(lines) == len(faults), refused.stderr[-2000:]
    assert all(line.startswith(fault) for line, (_, fault) in zip(lines, faults.values(), strict=True)), lines


@pytest.mark.slow
def test_the_added_baseline_runs_on_the_finished_dag_and_joins_its_table(toy_project, dag_run, tmp_path):
    copy, _ = toy_project
    # in a checkout, the default triggers rerun Table 2 (its inputs changed: its new row's evaluation) and the card
    # (its params name the toy)
    finished, result = on_finished_dag(copy, dag_run, tmp_path, removed=("table2_unsup.csv", "recipe.csv"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert job_counts(result.stdout + result.stderr) == {  # from the corpus cache: nothing encodes or trains
        "eval_baseline": 1, "paper_table": 1, "recipe": 1, "claims": 1, "comparison": 1, "cost": 1,
        "comparison_forest": 1, "summary": 1, "all": 1,
    }  # fmt: skip
    evaluation = pd.read_csv(finished / "results" / "evals" / "baselines" / "base" / "abtt.csv")
    assert set(evaluation.abtt_components) == {1}  # its setting's default
    table = pd.read_csv(finished / "results" / "table2_unsup.csv").set_index("method")
    row = table.loc["BERT-base-ABTT"]
    assert row["size"] == "base" and np.isfinite(row.Avg)
    wmean = evaluation[evaluation.subset == "all"].set_index("dataset").spearman
    assert abs(row.STSb - wmean["STSb"]) < 0.01  # the row is its evaluation's, STS-B a single split
    card = pd.read_csv(finished / "results" / "recipe.csv")
    (entry,) = card[card.run == "baseline-abtt-base"].itertuples()
    assert entry.mode == "ABTT" and entry.method_settings == "components = 1"
