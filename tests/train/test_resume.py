"""A killed training run resumes from its last checkpoint and ends as the unbroken run does, bit for bit
(consert.train.resume): `consert train` killed with SIGKILL mid-way, then run again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from safetensors.torch import load_file

from consert.train.resume import MARKER, Checkpointing, check_every, checkpoint_path
from tests.fixtures import write_senteval_tree

#: The evaluation's column that says when it was written: the one that differs between two runs.
WRITTEN_AT = "timestamp"


def _command(tmp_path: Path, model_dir: str, data: Path) -> list[str]:
    config = tmp_path / "train.yaml"
    config.write_text(
        f"model: {model_dir}\ndata: {data}\ndevice: cpu\ndtype: fp32\nmax_steps: 120\nbatch_size: 8\n"
        f"eval_every: 40\ncheckpoint_every: '10'\noutput_dir: {tmp_path / 'model'}\n"
    )
    return [sys.executable, "-m", "consert", "train", "--config", str(config), "--threads", "1", "--overwrite",
            "--evaluate", str(tmp_path / "run.csv")]  # fmt: skip


def _finished(tmp_path: Path) -> tuple[dict, pd.DataFrame]:
    weights = load_file(tmp_path / "model" / "model.safetensors")
    return weights, pd.read_csv(tmp_path / "run.csv").drop(columns=[WRITTEN_AT])


@pytest.mark.slow
def test_a_run_killed_mid_way_resumes_and_ends_bit_identical_to_an_unbroken_run(tiny_model_dir, tmp_path):
    data = write_senteval_tree(tmp_path / "senteval", pairs_per_file=12)
    # the evaluation's precision given (fp32 through PyTorch), not measured: a second measurement reads "(cached)"
    env = {**os.environ, "CONSERT_ALLOW_UNVERIFIED_DATA": "1", "CONSERT_DTYPE": "fp32", "CONSERT_ENGINE": "torch"}
    command = _command(tmp_path, tiny_model_dir, data)
    unbroken = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert unbroken.returncode == 0, unbroken.stderr[-3000:]
    reference_weights, reference_rows = _finished(tmp_path)
    checkpoint = checkpoint_path(tmp_path / "model")
    assert not checkpoint.exists()  # the export removed it

    killed = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not checkpoint.exists() and killed.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    assert killed.returncode == -signal.SIGKILL and checkpoint.is_file()  # killed before it finished

    resumed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming from step " in resumed.stderr and not checkpoint.exists()
    weights, rows = _finished(tmp_path)
    assert weights.keys() == reference_weights.keys()
    assert all(weights[name].equal(reference_weights[name]) for name in weights)  # bit for bit
    pd.testing.assert_frame_equal(rows, reference_rows, check_exact=True)


def test_a_checkpoint_of_another_run_or_not_the_harnesss_is_not_read(tmp_path, capsys):
    """Another config's checkpoint, a foreign file and a truncated one are each named and replaced, never loaded."""
    import torch

    module = torch.nn.Linear(2, 2)
    ours = Checkpointing.of_stage(tmp_path / "model", "5", {"model": module}, {"lr": 1e-5})
    ours.save(5, {"optimisation": {}, "selection": {}, "log": [], "elapsed": 1.0})
    assert torch.load(checkpoint_path(tmp_path / "model"), weights_only=True)["marker"] == MARKER
    other = Checkpointing.of_stage(tmp_path / "model", "5", {"model": module}, {"lr": 2e-5})
    assert other.load() is None and "another run's checkpoint" in capsys.readouterr().err
    assert ours.load()["step"] == 5
    checkpoint_path(tmp_path / "model").write_bytes(b"not a checkpoint")
    assert ours.load() is None and "not a readable checkpoint" in capsys.readouterr().err
    assert [ours.due(step) for step in (4, 5, 10)] == [False, True, True]
    assert check_every("15min") == "15min" and check_every("off") == "off"
    for wrong in ("0", "15 min", "-3", "0min"):
        with pytest.raises(ValueError):
            check_every(wrong)
