"""The evaluation and the training never touch the network when the data and the model are local."""

from __future__ import annotations

import socket

import pytest

from consert.cli import main


@pytest.fixture()
def no_network(monkeypatch):
    """Every attempt to open a socket fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # the guarantee must not depend on it


@pytest.mark.slow
def test_evaluation_and_training_run_with_the_network_blocked(no_network, tiny_tree, tmp_path):
    assert (
        main(
            [
                "evaluate",
                "sentence-transformers/all-MiniLM-L6-v2",
                "--data",
                str(tiny_tree),
                "--output",
                str(tmp_path / "eval.csv"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "train",
                "--set",
                f"data={tiny_tree}",
                "--set",
                "max_steps=2",
                "--set",
                "batch_size=4",
                "--set",
                "eval_every=2",
                "--set",
                f"output_dir={tmp_path / 'model'}",
            ]
        )
        == 0
    )
    assert (tmp_path / "model" / "modules.json").is_file()
