"""Paths with a space and a quote (issue 77): at 03ef47f a checkout or a data folder with a space broke every job (the
rules' paths were not quoted). Every shell command of the test config's dry run, from a copy of the checkout at such a
path with such a data folder, splits (shlex) into the intended arguments; in the slow suite, one job of each rule
family runs from such paths."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.fixtures import write_senteval_tree

#: What the workflow reads of a checkout: the Snakefile and its rules, scripts and schemas, the configs, the profiles
#: and the published tables.
CHECKOUT_PARTS = ("Snakefile", "workflow", "config", "profiles", "results/published")


@pytest.fixture(scope="module")
def quoted_paths(tmp_path_factory):
    """A copy of the checkout at `.../check out's`, and a SentEval tree at `.../data dir's/senteval`."""
    root = tmp_path_factory.mktemp("quoted")
    checkout, data = root / "check out's", root / "data dir's" / "senteval"
    for part in CHECKOUT_PARTS:
        source = ROOT / part
        copy = shutil.copytree if source.is_dir() else shutil.copy2
        (checkout / part).parent.mkdir(parents=True, exist_ok=True)
        copy(source, checkout / part)
    write_senteval_tree(data, pairs_per_file=12)
    return checkout, data


def _snakemake(checkout: Path, data: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip
    command = [sys.executable, "-m", "snakemake", *args, "--configfile", "config/test.yaml", "--config",
               f"data_dir={data}", "--cores", "2", "--resources", "gpu=2"]  # fmt: skip
    return subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, timeout=timeout)


def test_every_shell_command_of_the_dry_run_splits_into_the_intended_paths(quoted_paths):
    checkout, data = quoted_paths
    result = _snakemake(checkout, data, "-n", "--printshellcmds")
    assert result.returncode == 0, result.stderr[-3000:]
    commands = [line.split("Shell command: ", 1)[1] for line in result.stdout.splitlines() if "Shell command: " in line]
    assert len(commands) > 50
    wanted = {str(data / "downstream"), str(checkout / "results" / "published")}
    seen = set()
    for command in commands:
        for word in shlex.split(command):
            if "dir's" in word or "out's" in word or word.startswith(("t/", "s/")):
                assert word in wanted, (word, command)  # a whole path, never a piece of one
                seen.add(word)
    assert seen == wanted  # the data folder (every evaluation) and the checkout (the comparison) both appear


@pytest.mark.slow
def test_a_job_of_each_rule_family_runs_from_a_checkout_and_a_data_folder_with_a_space_and_a_quote(quoted_paths):
    """The data (table1), configs (a run's config), baselines (GloVe; the corpus encoding and the poolings),
    consert (a training run) and paper (the recipe card) families, from the copied checkout, on the quoted data."""
    checkout, data = quoted_paths
    targets = ["results/table1_datasets.csv", "results/evals/baselines/glove.csv",
               "results/evals/baselines/base/poolings.csv", "results/evals/consert/base-unsup-seed1.csv",
               "results/recipe.csv"]  # fmt: skip
    result = _snakemake(checkout, data, *targets, timeout=900)
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    assert all((checkout / target).is_file() for target in targets)
