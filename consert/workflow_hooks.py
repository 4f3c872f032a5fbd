"""What the workflow starts and stops around its jobs on the machine Snakemake runs on: the device check before any
job, NVIDIA's MPS daemon for jobs that share a card, and the job server. The Snakefile's ``onstart``, ``onsuccess``
and ``onerror`` call :func:`on_start` and :func:`on_end` and print their lines; ``workflow/rules/common.smk`` holds
the rules' input functions and the values they read, no process of its own.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig

#: Where the MPS daemon of the jobs that share a card keeps its pipes and logs (consert.gpu_mps).
MPS_FOLDER = ".snakemake/mps"


def mps_folder(config: WorkflowConfig) -> str | None:
    """The MPS daemon's folder when the config's jobs share a card under MPS (``share_gpu`` and ``gpu_mps``); None:
    no MPS."""
    return MPS_FOLDER if config.share_gpu and config.gpu_mps else None


def serves_jobs(config: WorkflowConfig, local: bool) -> bool:
    """Whether this run starts the job server (:mod:`consert.job_server`): the config asks for it (``job_server``) and
    the jobs run on this machine (a cluster's jobs start their own processes)."""
    return config.job_server and local


def job_command(config: WorkflowConfig, local: bool) -> str:
    """The command a rule runs the harness with: ``consert-job`` (which asks the job server) where this run serves
    its jobs, else ``consert`` itself."""
    return "consert-job" if serves_jobs(config, local) else "consert"


def check_device(config: WorkflowConfig, local: bool, gpu_jobs: Callable[[], bool]) -> None:
    """``device: cuda`` (the paper's config): a run on this machine whose jobs take a GPU (``gpu_jobs()``: whether
    any job to run declares the ``gpu`` resource) stops before any job, in one line, where torch sees none (a target
    that needs no GPU, a table rebuilt from results, runs); on a cluster (``local`` false) each job checks on its
    node."""
    if config.device != "cuda" or not local or not gpu_jobs():
        return
    from consert.encode.models import NoGpuError, default_device, no_gpu_message

    try:
        default_device("cuda")
    except NoGpuError:
        sys.exit(no_gpu_message(cpu="--config device=cpu"))


def on_start(config: WorkflowConfig, local: bool, gpu_jobs: Callable[[], bool]) -> list[str]:
    """Before the first job: the device check (:func:`check_device`), then, where the config asks, the MPS daemon
    for jobs that share a card (one line says whether it runs) and, on this machine (``local``), the job server
    whose forks start the jobs' commands (:func:`serves_jobs`; a cluster's jobs start their own). The lines to
    print."""
    check_device(config, local, gpu_jobs)
    lines = []
    if folder := mps_folder(config):
        from consert import gpu_mps

        lines.append(gpu_mps.start(folder))
    if serves_jobs(config, local):
        from consert import job_server

        job_server.start()
    return [line for line in lines if line]


def on_end(config: WorkflowConfig, local: bool) -> list[str]:
    """When the run ends, well or not: stop the MPS daemon and the job server this run started (none else). The
    lines to print (how many jobs the server started)."""
    lines = []
    if folder := mps_folder(config):
        from consert import gpu_mps

        lines.append(gpu_mps.stop(folder))
    if serves_jobs(config, local):
        from consert import job_server

        lines.append(job_server.stop())
    return [line for line in lines if line]
