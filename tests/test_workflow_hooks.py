"""consert.workflow_hooks: the device check stops a cuda run here before any job and only then; MPS and the job
server start and stop only where the config asks and the run is on this machine."""

from __future__ import annotations

import pytest

from consert import job_server, workflow_hooks
from consert.planner.load import read_workflow_config
from tests.conftest import ROOT

TEST_CONFIG = read_workflow_config(ROOT / "config" / "test.yaml")


def _config(**keys):
    return TEST_CONFIG.model_copy(update={"job_server": False, "share_gpu": False, **keys})


def test_a_cuda_run_with_gpu_jobs_stops_in_one_line_on_a_machine_without_one(monkeypatch):
    """This machine has no GPU (CI's neither): a cuda config with a GPU job to run exits before any job with the
    no-GPU line; without a GPU job to run, on a cluster, or on the CPU, it goes on and asks nothing it need not."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(SystemExit) as stopped:
        workflow_hooks.on_start(_config(device="cuda"), local=True, gpu_jobs=lambda: True)
    assert "--config device=cpu" in str(stopped.value) and "\n" not in str(stopped.value).strip()
    assert workflow_hooks.on_start(_config(device="cuda"), local=True, gpu_jobs=lambda: False) == []

    def not_asked() -> bool:
        raise AssertionError("the DAG was asked for a check that does not apply")

    assert workflow_hooks.on_start(_config(device="cuda"), local=False, gpu_jobs=not_asked) == []
    assert workflow_hooks.on_start(_config(device="cpu"), local=True, gpu_jobs=not_asked) == []


def test_mps_only_for_jobs_that_share_a_card_under_it():
    assert workflow_hooks.mps_folder(_config(share_gpu=True, gpu_mps=True)) == workflow_hooks.MPS_FOLDER
    assert workflow_hooks.mps_folder(_config(share_gpu=True, gpu_mps=False)) is None
    assert workflow_hooks.mps_folder(_config(share_gpu=False, gpu_mps=True)) is None


def test_the_job_server_starts_and_stops_only_on_this_machine_when_asked(monkeypatch):
    calls = []
    monkeypatch.setattr(job_server, "start", lambda: calls.append("start") or "")
    monkeypatch.setattr(job_server, "stop", lambda: calls.append("stop") or "job server: 3 jobs")
    assert workflow_hooks.on_start(_config(job_server=True), local=False, gpu_jobs=lambda: False) == []
    assert workflow_hooks.on_end(_config(job_server=True), local=False) == [] and calls == []
    assert workflow_hooks.on_start(_config(job_server=True), local=True, gpu_jobs=lambda: False) == []
    assert workflow_hooks.on_end(_config(job_server=True), local=True) == ["job server: 3 jobs"]
    assert calls == ["start", "stop"]
