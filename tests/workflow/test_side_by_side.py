"""Jobs side by side on a box with several cards: the documented command (`--cores C --resources gpu=N`, `threads:
auto`) runs N training jobs at once, each on a card of its own, here with a pool of 4 device ids on the CPU (the GPU
pool hands out ``$CUDA_VISIBLE_DEVICES``'s ids whether or not CUDA is there; each job sees its one id)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from consert.planner import paths
from tests.conftest import ROOT
from tests.fixtures import write_senteval_tree

#: Four training runs of the test config, none waiting for another.
RUNS = ("base-unsup-seed1", "base-unsup-seed2", "base-simcse-seed1", "base-unsup-tau0.5-seed1")


def _held_cards(pool: Path) -> set[str]:
    """The cards whose lock file a process holds exclusively now, read from ``/proc/locks`` (taking no lock)."""
    inodes = {}
    for lock in pool.glob("*.lock") if pool.is_dir() else ():
        inodes[lock.stat().st_ino] = lock.stem
    held = set()
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if len(fields) > 5 and fields[1] == "FLOCK" and fields[3] == "WRITE":
            inode = int(fields[5].rsplit(":", 1)[1])
            if inode in inodes:
                held.add(inodes[inode])
    return held


@pytest.mark.slow
def test_four_cards_train_four_jobs_at_once_each_on_its_own(tmp_path):
    data = write_senteval_tree(tmp_path / "senteval", pairs_per_file=12)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "CUDA_VISIBLE_DEVICES": "0,1,2,3",  # the pool's four ids; torch finds no CUDA and trains on the CPU
    }
    targets = [paths.consert_eval(run) for run in RUNS]
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory", str(tmp_path),
               *targets, "--configfile", str(ROOT / "config" / "test.yaml"),
               "--config", f"data_dir={data}", "share_gpu=False", "threads=auto",
               "--cores", "4", "--resources", "gpu=4"]  # fmt: skip
    log = tmp_path / "snakemake.log"
    pool = tmp_path / ".snakemake" / "gpu-pool"
    most: set[str] = set()
    with log.open("w") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            while process.poll() is None:
                held = _held_cards(pool)
                most = held if len(held) > len(most) else most
                time.sleep(0.05)
        finally:
            if process.poll() is None:
                process.kill()
    text = log.read_text()
    assert process.returncode == 0, text[-4000:]
    assert most == {"0", "1", "2", "3"}, f"cards held at once at most: {sorted(most)}"
    # each job claimed its own card, and computed on cores / cards = 1 thread
    cards = {}
    for run in RUNS:
        claimed = re.findall(
            r"on GPU (\d) \(CUDA_VISIBLE_DEVICES\)", (tmp_path / "logs" / "consert" / f"{run}.log").read_text()
        )
        cards[run] = claimed
    assert sorted(card for claimed in cards.values() for card in claimed) == ["0", "1", "2", "3"], cards
    shells = [line for line in text.splitlines() if re.search(r"consert(-job)? train --config", line)]
    assert len(shells) == 4 and all(
        "OMP_NUM_THREADS=1 " in line and "CONSERT_GPU_SHARE=whole" in line for line in shells
    )
