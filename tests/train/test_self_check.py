"""A fast path checks itself (consert.train.self_check): the packed step on the CPU against
the eager step, a correct one kept, a perturbed or broken one replaced by the eager step for the whole run, and
nothing of the check left in the training (its draws and gradients)."""

from __future__ import annotations

import json
import math

import pytest
import torch

import consert.train.execution as execution
from consert.train.config import TrainConfig
from consert.train.self_check import SELF_CHECK_TOLERANCE, SelfCheck
from consert.train.trainer import train


def _run(model_dir: str, tree, tmp_path, name: str, **values) -> tuple[dict, list[float]]:
    """Three steps of the unsupervised run of a tiny random BERT on the CPU: its record and its logged losses."""
    config = TrainConfig.from_dict(
        {"model": model_dir, "data": str(tree), "device": "cpu", "dtype": "fp32", "max_steps": 3, "batch_size": 8,
         "eval_every": 100, "output_dir": str(tmp_path / name), **values}
    )  # fmt: skip
    result = train(config, progress=False)
    record = json.loads((result.output_dir / "consert_training.json").read_text())
    return record, [entry["loss"] for entry in result.log if "loss" in entry]


def _perturbed_encoder(original):
    """The packed encoder with half of the last layer's features 1% larger: a subtle fault (a cosine loss does not
    see a uniform scale, so only a part is scaled)."""

    def encoder(model, embedded, packing, *args, **kwargs):
        hidden = original(model, embedded, packing, *args, **kwargs)
        half = hidden.shape[1] // 2
        return torch.cat([hidden[:, :half] * 1.01, hidden[:, half:]], dim=1)

    return encoder


def _failing_encoder(*_args, **_kwargs):
    raise RuntimeError("CUDA error: no kernel image is available for execution on the device\nmore detail")


@pytest.fixture(scope="module")
def eager_run(tiny_model_dir, tmp_path_factory):
    """The run eagerly (padded, no check): the reference every packed run is held to."""
    from tests.fixtures import write_senteval_tree

    tree = write_senteval_tree(tmp_path_factory.mktemp("senteval"))
    tmp_path = tmp_path_factory.mktemp("eager")
    return tree, _run(tiny_model_dir, tree, tmp_path, "eager", packed="off")


def test_a_correct_packed_path_is_kept_and_the_check_leaves_the_training_as_it_was(tiny_model_dir, eager_run, tmp_path):
    """The packed step agrees with the eager one and stays on; its run's losses are the eager run's to float
    rounding (the check's draws restored, its gradients cleared: a leftover gradient would double step 1's update,
    drawn views of the check would change step 1's batch), and the record keeps the check's numbers."""
    tree, (eager_record, eager_losses) = eager_run
    record, losses = _run(tiny_model_dir, tree, tmp_path, "packed", packed="on")
    assert eager_record["self_check"] is None and not eager_record["packed"]  # an eager run checks nothing
    assert record["packed"] and record["eager_because"] == []
    assert record["self_check"].startswith("self-check: the fast path (packed) agrees with an eager step")
    assert losses == pytest.approx(eager_losses, rel=1e-5)


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        (_perturbed_encoder, "disagrees with an eager step on the first batch: loss"),
        (lambda _original: _failing_encoder, "failed to build: RuntimeError: CUDA error: no kernel image"),
    ],
    ids=["perturbed", "failing"],
)
def test_a_wrong_or_broken_packed_path_is_replaced_by_the_eager_step(
    tiny_model_dir, eager_run, tmp_path, monkeypatch, capsys, fault, says
):
    """An injected fault in the packed encoder: the run goes on eagerly (its losses the eager run's, so the packed
    step ran no further), one line on stderr says so, and the record keeps why."""
    tree, (_, eager_losses) = eager_run
    monkeypatch.setattr(execution, "packed_encoder", fault(execution.packed_encoder))
    record, losses = _run(tiny_model_dir, tree, tmp_path, "faulty", packed="on")
    lines = [line for line in capsys.readouterr().err.splitlines() if "self-check" in line]
    assert len(lines) == 1 and says in lines[0] and lines[0].endswith("training eagerly from here on")
    assert not record["packed"] and says in record["self_check"]
    assert record["eager_because"] == [record["self_check"]]
    assert losses == pytest.approx(eager_losses, rel=1e-5)


def test_a_check_agrees_within_its_tolerance_only():
    """Relative tolerance on both numbers, by precision; a NaN on either side or a failed build disagrees."""
    fp32 = SELF_CHECK_TOLERANCE["fp32"]
    assert SelfCheck("packed", (1.0, 2.0), (1.00005, 2.0015), fp32).agrees  # 5e-5 and 7.5e-4: within
    assert not SelfCheck("packed", (1.0, 2.0), (1.0002, 2.0), fp32).agrees  # the loss 2e-4 away
    assert not SelfCheck("packed", (1.0, 2.0), (1.0, 2.003), fp32).agrees  # the gradient norm 1.5e-3 away
    assert not SelfCheck("packed", (math.nan, 2.0), (math.nan, 2.0), fp32).agrees
    assert SelfCheck("packed", (1.0, 2.0), (1.01, 2.05), SELF_CHECK_TOLERANCE["bf16"]).agrees
    failed = SelfCheck("CUDA graphs", None, (1.0, 2.0), fp32, "RuntimeError: capture failed")
    assert not failed.agrees and failed.describe().endswith("failed to build: RuntimeError: capture failed")
