"""The CUDA path end to end, wherever a GPU is: ``pytest -m cuda`` runs the offline DAG and the paper config's
rehearsal on it (besides the CUDA graph tests). CI has no GPU; these skip there, and run on any lent one."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from tests.conftest import ROOT
from tests.workflow.test_rehearsal import rehearse

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def without_augcse() -> tuple[str, ...]:
    """The config override that leaves AugCSE out where spaCy, which its augmentations import, is missing (the GPU
    machine's payload has no room for it): SimCSE stays the contrastive family's run."""
    return () if importlib.util.find_spec("spacy") else ("family={methods: [simcse]}",)


@pytest.mark.timeout(1800)
def test_the_offline_dag_runs_on_cuda_to_its_summary(tmp_path, real_data_dir):
    """The offline config's whole DAG on the GPU with every core (AugCSE left out where spaCy is missing, as in
    the GPU machine's payload): it ends, and the trained runs and their evaluations say they ran on CUDA."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    family = list(without_augcse())
    command = [
        sys.executable, "-m", "snakemake", "--configfile", "config/offline.yaml", "--directory", str(tmp_path),
        "--config", f"data_dir={real_data_dir}", *family, "--cores", str(os.cpu_count()), "--resources", "gpu=1",
    ]  # fmt: skip
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-4000:]
    assert (tmp_path / "results" / "summary.html").is_file()
    evaluations = [pd.read_csv(path) for path in (tmp_path / "results" / "evals" / "consert").glob("*.csv")]
    assert evaluations and all(frame.device.astype(str).str.startswith("cuda").all() for frame in evaluations)


@pytest.mark.timeout(3600)
def test_the_paper_rehearsal_runs_on_cuda(tmp_path, real_data_dir):
    """The paper config rehearsed on tiny random BERTs (``tests/workflow/test_rehearsal.py``), here on the GPU with
    every core (AugCSE left out where spaCy is missing)."""
    rehearse(tmp_path, real_data_dir, cores=os.cpu_count() or 2, config=without_augcse())
