"""NVIDIA's Multi-Process Service for the workflow's jobs that share a card (``share_gpu: true``).

Without it, processes on one card time-slice: one process's kernels at a time, so a small job that leaves the card
idle between its kernels gains another nothing (the sharing bench measured 1.07-1.17x for two graphed jobs on an
H200, docs/performance.md). Under MPS their kernels run side by side on the card's streaming multiprocessors;
each process computes exactly what it computes alone (the same kernels on the same inputs). The workflow starts
the control daemon when it begins (``onstart``), with its pipes and logs under ``.snakemake/mps`` so that it is
this workflow's own, and the jobs it starts inherit ``CUDA_MPS_PIPE_DIRECTORY``; it stops it when it ends. Where
the daemon is not installed, there is no NVIDIA GPU, or it does not start, one line says so and the jobs share by
time-slicing as before. A daemon the workflow did not start is never stopped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import MutableMapping
from pathlib import Path

from consert.gpu_pool import NVIDIA_GPUS, visible_ids

#: The MPS control program (NVIDIA's driver package installs it).
CONTROL = "nvidia-cuda-mps-control"
#: The environment that points a CUDA process (and the control program) at one daemon's pipes and logs.
PIPE_ENV, LOG_ENV = "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY"
#: Written beside the pipes when this harness started the daemon: only then does :func:`stop` stop it.
STARTED_MARK = "started-by-consert"


def start(
    folder: str | os.PathLike, environ: MutableMapping[str, str] | None = None, driver: Path = NVIDIA_GPUS
) -> str | None:
    """Start an MPS control daemon with its pipes and logs under ``folder`` and point ``environ`` (default: this
    process's, which the workflow's jobs inherit) at it; one line saying what happened, None on a machine with no
    NVIDIA GPU (``driver``: where the driver lists its GPUs)."""
    environ = os.environ if environ is None else environ
    if not visible_ids(dict(environ), driver):
        return None
    control = shutil.which(CONTROL, path=environ.get("PATH"))
    if control is None:
        return f"MPS: {CONTROL} is not installed; jobs sharing a card time-slice"
    folder = Path(folder).resolve()
    pipes, logs = folder / "pipe", folder / "log"
    pipes.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    env = {**environ, PIPE_ENV: str(pipes), LOG_ENV: str(logs)}
    started = subprocess.run([control, "-d"], env=env, capture_output=True, text=True, timeout=30)
    if started.returncode != 0:
        reason = (started.stderr or started.stdout).strip().splitlines()[:1] or [f"exit {started.returncode}"]
        return f"MPS: {CONTROL} -d failed ({reason[0]}); jobs sharing a card time-slice"
    (folder / STARTED_MARK).write_text(str(pipes), encoding="utf-8")
    environ[PIPE_ENV], environ[LOG_ENV] = str(pipes), str(logs)
    return f"MPS: started for the jobs sharing a card (pipes and logs under {folder})"


def stop(folder: str | os.PathLike, environ: MutableMapping[str, str] | None = None) -> str | None:
    """Stop the daemon :func:`start` started under ``folder`` (``quit`` on its control pipe) and take its pipes out
    of ``environ``; None when it started none, else one line."""
    environ = os.environ if environ is None else environ
    mark = Path(folder).resolve() / STARTED_MARK
    if not mark.is_file():
        return None
    pipes = mark.read_text(encoding="utf-8")
    env = {**environ, PIPE_ENV: pipes, LOG_ENV: str(Path(pipes).parent / "log")}
    control = shutil.which(CONTROL, path=environ.get("PATH")) or CONTROL
    stopped = subprocess.run([control], input="quit\n", env=env, capture_output=True, text=True, timeout=60)
    mark.unlink()
    if environ.get(PIPE_ENV) == pipes:  # later processes started here no longer look for it
        environ.pop(PIPE_ENV)
        environ.pop(LOG_ENV, None)
    return "MPS: stopped" if stopped.returncode == 0 else f"MPS: quit failed (exit {stopped.returncode})"
