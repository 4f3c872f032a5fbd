"""The box check takes the path the paper's runs take, and a run's encoders are named comparable or not before any
job: the paper config's dry run, a faked CUDA device for the step's execution."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from consert.encode.models import comparability_fault
from consert.encode.pooling import Pooling
from tests.conftest import ROOT

#: The authors' unsupervised run of Table 2 (their scripts: batch 96, 10 epochs of the 89,192 STS texts): its steps.
PAPER_RUN_STEPS = math.ceil(89_192 / 96) * 10


@pytest.fixture(scope="module")
def paper_dry_run(tmp_path_factory, tiny_model_dir) -> str:
    """`snakemake -n -p check_box` of the paper's config with BERT-large replaced by a local folder of other weights."""
    workdir = tmp_path_factory.mktemp("box-check")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    command = [sys.executable, "-m", "snakemake", "-n", "-p", "check_box", "--directory", str(workdir),
               "--configfile", str(ROOT / "config" / "config.yaml"),
               "--config", f"models={{base: bert-base-uncased, large: {tiny_model_dir}}}"]  # fmt: skip
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    return result.stdout + result.stderr


def test_a_model_whose_rows_will_not_be_compared_is_named_at_the_start(paper_dry_run, tiny_model_dir):
    """The start-of-run list names the folder of other weights and why its rows will not be compared, and nothing of
    the kind for the paper's hub id (a dry run prints it: before any job)."""
    lines = [line.strip() for line in paper_dry_run.splitlines() if line.strip().startswith("models.")]
    fault = comparability_fault("large", tiny_model_dir)
    assert f"models.large ({tiny_model_dir}): present; a local folder; {fault}" in lines
    assert fault.startswith("its rows will not be compared with the paper's bert-large-uncased (weights sha256 ")
    assert not any("will not be compared" in line for line in lines if line.startswith("models.base"))


def test_comparability_is_read_from_the_weights():
    assert comparability_fault("base", "bert-base-uncased") == "" == comparability_fault("large", "bert-large-uncased")
    assert comparability_fault("base", "roberta-base") == (
        "its rows will not be compared with the paper's bert-base-uncased (roberta-base is not a hub id of it)"
    )
    assert comparability_fault("tiny", "anything") == ""  # not a size of the paper's


def _execution(steps: int, monkeypatch) -> tuple[str | None, bool]:
    """How the paper run's step executes on a faked CUDA card when planned as ``steps`` steps: why it is not graphed
    (None: it is) and whether, not graphed, it would compile."""
    from transformers import BertConfig

    import consert.train.execution as execution
    from consert.train.config import TrainConfig

    monkeypatch.setattr(execution, "graphs_unavailable", lambda setting, device: None)  # a card that runs graphs
    config = TrainConfig.from_dict({"views": ["feature_cutoff", "shuffle"], "device": "cuda"})
    encoder = SimpleNamespace(
        config=config, device="cuda", model=SimpleNamespace(config=BertConfig()), train_pooling=Pooling.parse("mean")
    )
    step = execution.StepExecution(encoder)
    blocker = step.graphs_blocker(SimpleNamespace(graphs_blocker=None), steps)
    return blocker, steps >= execution.COMPILE_MIN_STEPS


def test_the_box_check_chooses_its_steps_execution_as_the_paper_run_does(paper_dry_run, monkeypatch):
    """The check trains 300 steps, its step executed as for the paper run's 9,300: graphed (and, where not, compiled)
    as that run is, which a 300-step plan would not be (auto graphs and compiles from 500 steps)."""
    command = next(line for line in paper_dry_run.splitlines() if "--execution-steps" in line)
    planned = int(re.search(r"--execution-steps (\d+)", command).group(1))
    assert "--set max_steps=300" in command and planned == PAPER_RUN_STEPS
    assert _execution(planned, monkeypatch) == _execution(PAPER_RUN_STEPS, monkeypatch) == (None, True)
    assert _execution(300, monkeypatch) == ("auto: 300 planned steps < 500", False)


def test_the_dry_run_names_what_no_job_fetches_and_lists_every_job(paper_dry_run):
    """spaCy's pipeline is missing here and no job installs it: the dry run's start list names it with what gets it,
    and the target's jobs are listed all the same (exit 0: the fixture checks); the box check needs no spaCy, so
    nothing stops it (a target that does stops before any job: test_workflow's missing-inputs test)."""
    spacy = "spaCy pipeline en_core_web_sm (en_core_web_sm): missing: run `consert download-data --spacy"
    assert spacy in paper_dry_run and "A run would stop before any job" not in paper_dry_run
    assert re.search(r"^check_box\s+1$", paper_dry_run, re.M)
