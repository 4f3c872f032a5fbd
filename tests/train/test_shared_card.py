"""Runs that share a card (or a machine) compute what each computes alone: each is its own process, with its
own seed and generators, reading nothing another run writes (consert.gpu_mps: the workflow's jobs sharing a card
run side by side under MPS, as processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
import yaml
from safetensors.torch import load_file

from consert.train.export import TRAINING_LOG


def _start(tiny_model_dir: str, tiny_tree, folder, name: str) -> tuple[subprocess.Popen, object]:
    """``consert train`` of a 4-step unsupervised run of the tiny BERT as its own process (one thread each)."""
    output = folder / name
    config = folder / f"{name}.yaml"
    config.write_text(yaml.safe_dump({
        "model": tiny_model_dir, "data": str(tiny_tree), "output_dir": str(output), "mode": "unsup", "device": "cpu",
        "dtype": "fp32", "batch_size": 4, "max_steps": 4, "eval_every": 2, "dev_max_pairs": 20, "seed": 3,
        "views": ["shuffle", "feature_cutoff"], "eval_at_start": False,
    }))  # fmt: skip
    command = [sys.executable, "-m", "consert", "train", "--config", str(config), "--threads", "1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), output


def _weights_and_losses(output) -> tuple[dict[str, torch.Tensor], list[float]]:
    weights = load_file(next(output.rglob("model.safetensors")))
    log = json.loads((output / TRAINING_LOG).read_text())
    return weights, [entry["loss"] for entry in log if "loss" in entry]


@pytest.mark.slow
def test_runs_trained_at_once_compute_exactly_what_each_computes_alone(tiny_model_dir, tiny_tree, tmp_path):
    alone, alone_output = _start(tiny_model_dir, tiny_tree, tmp_path, "alone")
    assert alone.wait(timeout=300) == 0, alone.stdout.read()
    together = [_start(tiny_model_dir, tiny_tree, tmp_path, name) for name in ("first", "second")]
    for process, _ in together:
        assert process.wait(timeout=300) == 0, process.stdout.read()
    weights, losses = _weights_and_losses(alone_output)
    assert len(losses) == 4 and len(weights) > 10
    for _, output in together:
        their_weights, their_losses = _weights_and_losses(output)
        assert their_losses == losses
        assert their_weights.keys() == weights.keys()
        assert all(torch.equal(their_weights[name], tensor) for name, tensor in weights.items())
