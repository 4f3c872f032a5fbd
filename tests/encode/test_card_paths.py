"""Every card from V100 up takes a path that runs: precision and attention chosen by the card's compute capability
(the decision table, its properties as inputs), and a GPU asked for where none is visible stops in one line that
names torch's build."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from consert.encode.models import NoGpuError, default_device
from consert.hardware import card_paths
from tests.conftest import ROOT

#: Cards the paper's users train on, by compute capability: whether each computes bf16 (tensor cores; torch's
#: ``is_bf16_supported()`` also says yes where it is emulated) and runs FlashAttention (Ampere and later), from
#: NVIDIA's CUDA GPU list and FlashAttention's README.
CARDS = {
    "P100": ((6, 0), False),
    "V100": ((7, 0), False),
    "T4": ((7, 5), False),
    "A100": ((8, 0), True),
    "A10/RTX 3090": ((8, 6), True),
    "L4/RTX 4090": ((8, 9), True),
    "H100/H200": ((9, 0), True),
    "B200": ((10, 0), True),
}


@pytest.mark.parametrize("card", CARDS)
def test_the_decision_table_gives_each_card_what_it_computes_natively(card):
    capability, ampere = CARDS[card]
    paths = card_paths(capability)
    assert paths.dtypes == (("bf16", "fp16", "fp32") if ampere else ("fp16", "fp32"))  # no emulated bf16 measured
    assert paths.attention == ("varlen" if ampere else "padded")
    assert card_paths(capability, flash_attention_built=False).attention == "padded"  # a torch built without it
    assert ("bf16 only emulated" in paths.why) != ampere


def test_a_gpu_asked_for_where_none_is_visible_is_one_line_naming_torchs_build(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", None)
    with pytest.raises(NoGpuError) as raised:
        default_device("cuda")
    message = str(raised.value)
    assert "\n" not in message and f"torch {torch.__version__}, a build without CUDA" in message
    assert "install a CUDA build of torch" in message
    monkeypatch.setattr(torch.version, "cuda", "12.6")
    with pytest.raises(NoGpuError, match=r"built for CUDA 12\.6: check the driver \(`nvidia-smi`\)"):
        default_device("cuda")
    monkeypatch.setenv("CONSERT_DEVICE", "cuda")
    with pytest.raises(NoGpuError):
        default_device()
    assert default_device("cpu") == "cpu"
    monkeypatch.setenv("CONSERT_DEVICE", "auto")
    assert default_device() == "cpu"  # auto: the CPU where no GPU is visible


@pytest.mark.slow  # two snakemake runs, 17 s on 2 cores; the device message itself is tested above
def test_the_paper_config_stops_before_any_job_that_takes_a_gpu_where_none_is_visible(tmp_path):
    """A target whose jobs take a GPU (the box check's training run) stops before any job, in one line; one that needs
    none (Table 1, counted from the data files) runs."""
    env = {
        **os.environ,
        "CUDA_VISIBLE_DEVICES": "",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }

    def snakemake(target: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory",
                   str(tmp_path), target, "--cores", "1"]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)

    stopped = snakemake("check_box")
    last = (stopped.stdout + stopped.stderr).strip().splitlines()[-1]
    assert stopped.returncode == 1 and last.startswith("no CUDA GPU is visible to torch "), last
    assert "--config device=cpu" in last and not (tmp_path / "runs").exists() and not (tmp_path / "results").exists()
    ran = snakemake("results/table1_datasets.csv")
    assert ran.returncode == 0 and (tmp_path / "results" / "table1_datasets.csv").is_file(), ran.stderr[-2000:]
