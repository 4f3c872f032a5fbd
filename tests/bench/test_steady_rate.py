"""Step rates from a training log: the time a device takes to finish its queued steps is counted."""

from __future__ import annotations

import time

import pytest
import torch

from consert.bench.cuda import steady_rate
from consert.train.loop import LoopSettings, run_loop

#: Seconds a window's losses take to come back to the host: the device finishing the steps queued ahead of it.
READ_BACK = 0.1


class SlowReadBack(torch.Tensor):
    """A loss whose values take :data:`READ_BACK` seconds to reach the host, as a GPU's queued steps do."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.tolist:
            time.sleep(READ_BACK)
        return super().__torch_function__(func, types, args, kwargs or {})


@pytest.mark.parametrize("eval_every", [10, 20])
def test_the_steady_rate_counts_the_wait_for_every_window_of_queued_steps(eval_every):
    """On CUDA the loop reads the losses back every 50 steps: the host stamps each step when it has queued it, and
    the device's backlog is paid at the read. Simulated on the CPU: 20 steps read back 5 at a time, each read
    waiting READ_BACK, evaluations every ``eval_every`` steps. All 4 windows' waits belong to the timed steps (18:
    the first is the reference, and the step after an evaluation times the evaluation), so those steps took at
    least 4 x READ_BACK. Stamping the steps as queued would miss the wait read inside an evaluation and the last
    window's, and report up to twice the rate."""
    model = torch.nn.Linear(2, 1)
    settings = LoopSettings(
        lr=0.1, batch_size=1, epochs=1, max_steps=20, warmup_ratio=0.0, weight_decay=0.0, adam_eps=1e-6,
        max_grad_norm=1.0, eval_every=eval_every, patience=None, eval_at_start=False, seed=1, dtype="fp32",
    )  # fmt: skip

    def loss_fn(batch: list[int]) -> torch.Tensor:
        return model(torch.ones(len(batch), 2)).pow(2).mean().as_subclass(SlowReadBack)

    items = list(range(20))
    result = run_loop(model, list(model.named_parameters()), items, loss_fn, lambda: 0.5, settings, "cpu",
                      progress=False, read_every=5)  # fmt: skip
    rate, _, evaluations = steady_rate(result.log, skip=0)
    timed = 19 - evaluations
    assert evaluations == (1 if eval_every == 10 else 0) and timed in (18, 19)
    assert rate <= timed / (4 * READ_BACK)
