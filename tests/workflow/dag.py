"""The test config's DAG run by Snakemake in a working folder: the command, its environment, and one run of it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def snakemake_command(
    workdir: Path, *args: str, resources: tuple[str, ...] = ("--cores", "2", "--resources", "gpu=2")
) -> tuple[list[str], dict[str, str]]:
    """The CI config's DAG in ``workdir`` (2 cores, two one-thread jobs at a time; ``resources`` replaces that), and
    its environment."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        *args,  # before the options that take several values (--resources would swallow a target)
        "--configfile",
        str(ROOT / "config" / "test.yaml"),
        *resources,
    ]
    return command, env


def snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    command, env = snakemake_command(workdir, *args)
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    if check and result.returncode != 0:
        raise AssertionError(
            f"snakemake failed ({result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        )
    return result


def job_counts(output: str) -> dict[str, int]:
    """``{rule: jobs}`` of a Snakemake run's (or dry run's) first job table."""
    table = output.split("Job stats:", 1)[1].split("total", 1)[0]
    return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", table, re.M)}
