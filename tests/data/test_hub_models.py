"""Models are inputs: a hub model the hub's cache lacks is fetched by the workflow's job hub_model where snakemake
runs, before the jobs that read it, which then read the cache offline (compute nodes often have no network). Served
from a hub on 127.0.0.1 in the hub's URL layout (tests/hub_server.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from consert.encode.models import STAND_IN_MODEL, model_input
from tests.conftest import ROOT
from tests.fixtures import write_senteval_tree
from tests.hub_server import COMMIT, serve_models

REPO = "org/tiny-bert"


@pytest.mark.slow  # two snakemake runs and a job server, 22 s on 2 cores; CI runs it (never skipped)
def test_a_hub_model_the_cache_lacks_is_fetched_by_its_job_and_read_offline_after(tiny_model_dir, tmp_path):
    """`snakemake` of the corpus encoding of a config whose encoder is a hub id: the start list says the job
    hub_model fetches it; that job downloads it from the hub at $HF_ENDPOINT into the cache ($HF_HOME); the encoding
    then reads it with CONSERT_MODELS_ON_DISK=1 (no download), from the job server; a second dry run finds it in the
    cache and plans no download."""
    data = write_senteval_tree(tmp_path / "senteval")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "PATH": path}
    env.pop("HF_HUB_OFFLINE", None)  # the submit host has network: the loopback hub

    def snakemake(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory",
                   str(tmp_path / "work"), *args, "--configfile", str(ROOT / "config" / "test.yaml"),
                   "--config", f"data_dir={data}", f"models={{base: {REPO}}}", "--cores", "1"]  # fmt: skip
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)

    with serve_models({REPO: Path(tiny_model_dir)}) as (endpoint, requested):
        env["HF_ENDPOINT"] = endpoint
        ran = snakemake("-p", "results/cache/base.npz")
        assert ran.returncode == 0, (ran.stdout + ran.stderr)[-3000:]
        assert f"models.base ({REPO}): missing: job hub_model downloads it from {endpoint}/{REPO}" in ran.stderr
        assert any(path.endswith("/model.safetensors") for path in requested)
        fetched = json.loads((tmp_path / "work" / "data" / "hub" / "org--tiny-bert.json").read_text())
        assert Path(fetched[REPO]).parts[-2:] == ("snapshots", COMMIT) and str(tmp_path / "hf") in fetched[REPO]
        printed = ran.stdout + ran.stderr  # the encoding's command, and the job server's count
        assert "CONSERT_MODELS_ON_DISK=1" in printed and " 0 declined" in printed, printed[-4000:]
        assert (tmp_path / "work" / "results" / "cache" / "base.npz").is_file()
        again = snakemake("-n", "results/cache/base.npz", "--forceall")
    assert f"models.base ({REPO}): present; in the hub's cache" in again.stderr
    assert not re.search(r"^hub_model\s+\d", again.stdout, re.M) and re.search(
        r"^encode_corpus\s+1", again.stdout, re.M
    )


def test_each_kind_of_model_input_says_its_state(tiny_model_dir, tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    hub = model_input("models.base", "bert-base-uncased")
    assert (
        not hub.present
        and hub.job == "hub_model"
        and hub.command == "run `hf download bert-base-uncased` where there is network"
    )
    folder = model_input("models.large", tiny_model_dir)
    assert folder.present and not folder.job and folder.note.startswith("a local folder; its rows will not be compared")
    missing = model_input("models.large", str(tmp_path / "nowhere"))
    assert not missing.present and not missing.job and missing.is_path  # a missing folder stops the run before any job
    assert model_input("models.base", STAND_IN_MODEL).present
