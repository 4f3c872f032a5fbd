"""A sweep that needs new runs added the way a contributor adds one, in a copy of the project: a toy "Figure 8", the
unsupervised run at other rates of its feature-cutoff view (the training key ``feature_cutoff``; ConSERT's 0.2),
declared in ``consert/sweeps.py`` alone, with its default values. With nothing else edited the copy's config takes
its list (``sweeps.feature_cutoffs``, its default where a config gives none, a wrong value refused in one line), the
planner plans its runs with the rate set, and Snakemake run on the finished test DAG's working folder (a copy)
trains them, builds and draws its figure, and names its runs in the diagnostics table and the training curves. A
sweep that needed a planner loop, a config key, a catalogue record, a panel or a run name written elsewhere fails
here. The Architecture page's "How to add" names the file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.workflow.dag import job_counts
from tests.workflow.extension import ROOT, added_in_a_copy, in_copy, on_finished_dag, replace_once, touched

#: The toy's declaration and its axis, as a contributor writes them.
DECLARATION = """
#: A toy of the tests: the unsupervised run at other rates of its feature-cutoff view.
FIGURE8 = Artifact("figure8", "figure8_feature_cutoff", "figure", "Figure 8: cutoff rate", ("size", "feature_cutoff"))
"""
AXIS = """    SweepAxis(
        FIGURE8,
        "feature_cutoffs",
        "feature_cutoff",
        Ratio,
        (0.05, 0.3),
        "The feature-cutoff view's rates (a toy of the tests).",
        "fc{:g}",
        "cutoff={feature_cutoff:g}",
    ),
)
"""


def add_the_toy(copy: Path) -> None:
    """The toy's addition: its artifact and its axis, in the sweeps' file."""
    sweeps = copy / "consert" / "sweeps.py"
    replace_once(sweeps, "from consert.configs import AtLeastOne, Temperature\n",
                 "from consert.configs import AtLeastOne, Ratio, Temperature\n")  # fmt: skip
    replace_once(
        sweeps,
        "\n\n@dataclass(frozen=True)\nclass SweepAxis:",
        DECLARATION + "\n\n@dataclass(frozen=True)\nclass SweepAxis:",
    )
    replace_once(
        sweeps, '        "tau={temperature:g}",\n    ),\n)\n', '        "tau={temperature:g}",\n    ),\n' + AXIS
    )


@pytest.fixture(scope="module")
def toy_project(tmp_path_factory) -> tuple[Path, list[str]]:
    """A copy of the project with the toy sweep added, and the files the addition touched."""
    return added_in_a_copy(tmp_path_factory.mktemp("project"), add_the_toy)


def test_a_sweep_that_needs_new_runs_takes_one_file(toy_project):
    _, files = toy_project
    assert files == ["consert/sweeps.py"]


def test_its_config_key_enters_the_generated_schema_by_the_keys_script(tmp_path):
    """``scripts/config_keys.py`` is the one step after the edit: it rewrites the schema alone (config/README.md's
    table lists the blocks, not their keys), the toy's list there with its default; the schema's test then passes."""
    copy, _ = added_in_a_copy(tmp_path / "project", add_the_toy)
    done = in_copy(copy, sys.executable, "scripts/config_keys.py", cwd=copy)
    assert done.returncode == 0, done.stderr[-3000:]
    assert touched(ROOT, copy) == ["consert/sweeps.py", "workflow/schemas/config.schema.yaml"]
    schema = yaml.safe_load((copy / "workflow" / "schemas" / "config.schema.yaml").read_text())
    listed = schema["properties"]["sweeps"]["properties"]["feature_cutoffs"]
    assert listed["default"] == [0.05, 0.3] and listed["items"] == {
        "minimum": 0,
        "exclusiveMaximum": 1,
        "type": "number",
    }


#: Each config file named on the command line loaded as the workflow loads it at its start: the toy's planned runs
#: (labels, and the rate its training config gets), the figure's file among the targets, or the config's fault.
PLAN = """
import json
import sys

from consert.configs import ConfigError, read_yaml
from consert.paper import catalogue
from consert.planner.load import load_workflow_config
from consert.planner.plan import plan_runs, train_overrides
from consert.train.config import TrainConfig

for path in sys.argv[1:]:
    try:
        config = load_workflow_config(read_yaml(path))
    except ConfigError as err:
        print(json.dumps({"fault": str(err)}))
        continue
    runs = {}
    for planned in plan_runs(config):
        if planned.artifact == "figure8":
            resolved = TrainConfig.from_dict(train_overrides(planned.spec, config))
            runs[planned.spec.run_id] = {**planned.labels, "rate": resolved.feature_cutoff, "views": resolved.views}
    print(json.dumps({"runs": runs, "targets": catalogue.stems("figure", config)}))
"""


def test_its_runs_are_planned_from_its_declaration_and_a_wrong_rate_is_refused(toy_project, tmp_path):
    copy, _ = toy_project
    base = yaml.safe_load((copy / "config" / "test.yaml").read_text())
    configs = []
    for rates in (None, [0.1, 0.2], [1.5]):
        config = {**base, "sweeps": {**base["sweeps"], **({"feature_cutoffs": rates} if rates else {})}}
        configs.append(tmp_path / f"config-{len(configs)}.yaml")
        configs[-1].write_text(yaml.safe_dump(config))
    done = in_copy(copy, sys.executable, "-c", PLAN, *map(str, configs), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    default, listed, wrong = (json.loads(line) for line in done.stdout.splitlines())
    unsup = ["feature_cutoff", "shuffle"]  # the unsupervised run's views (the authors' unsup script)
    assert default["runs"] == {  # the declaration's default, each rate its own run of the test config's one size
        "base-unsup-fc0.05-seed1": {"size": "base", "feature_cutoff": 0.05, "rate": 0.05, "views": unsup},
        "base-unsup-fc0.3-seed1": {"size": "base", "feature_cutoff": 0.3, "rate": 0.3, "views": unsup},
    }
    assert default["targets"]["figure8_feature_cutoff"] == "figure8"
    # 0.2 is the unsupervised run's own rate: that point is Table 2's run, trained once under its id
    assert set(listed["runs"]) == {"base-unsup-fc0.1-seed1", "base-unsup-seed1"}
    assert wrong["fault"] == "config key `sweeps.feature_cutoffs.0`: 1.5 is greater than or equal to the maximum of 1"


@pytest.mark.slow
def test_the_added_sweep_trains_its_runs_on_the_finished_dag_and_draws_its_figure(toy_project, dag_run, tmp_path):
    copy, _ = toy_project
    finished, result = on_finished_dag(copy, dag_run, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert job_counts(result.stdout + result.stderr) == {  # its two runs, its figure, and what lists every run
        "run_config": 2, "consert_train": 2, "paper_figure": 1, "diagnostic_figure": 2, "recipe": 1, "claims": 1,
        "cost": 1, "summary": 1, "all": 1,
    }  # fmt: skip
    table2 = yaml.safe_load((finished / "runs" / "base-unsup-seed1" / "train.yaml").read_text())
    for rate in ("0.05", "0.3"):  # each run is Table 2's with its rate alone changed
        run = yaml.safe_load((finished / "runs" / f"base-unsup-fc{rate}-seed1" / "train.yaml").read_text())
        assert run["feature_cutoff"] == float(rate) and table2["feature_cutoff"] == 0.2
        assert {key for key in run if run[key] != table2.get(key)} == {"feature_cutoff", "output_dir"}
    table = pd.read_csv(finished / "results" / "figure8_feature_cutoff.csv")
    assert sorted(table.feature_cutoff) == [0.05, 0.3] and set(table["size"]) == {"base"}
    for row in table.itertuples():  # each point is its run's evaluation: Avg the mean of the 7 sets' "all"
        evaluation = pd.read_csv(
            finished / "results" / "evals" / "consert" / f"base-unsup-fc{row.feature_cutoff:g}-seed1.csv"
        )
        assert np.isclose(row.Avg, evaluation[evaluation.subset == "all"].spearman.mean(), atol=1e-3)
    assert (finished / "figures" / "figure8_feature_cutoff.png").stat().st_size > 0
    diagnostics = pd.read_csv(finished / "results" / "diagnostics.csv")
    assert {"ConSERT-base cutoff=0.05", "ConSERT-base cutoff=0.3"} <= set(diagnostics.method)
    curves = pd.read_csv(finished / "results" / "training_curves.csv")
    assert set(curves[curves.group == "Figure 8"].run) == {"base-unsup-fc0.05-seed1", "base-unsup-fc0.3-seed1"}
