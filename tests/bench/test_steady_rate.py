"""Step rates from a training log: the time a device takes to finish its queued steps is counted."""

from __future__ import annotations

import time

import pytest
import torch

from consert.bench.cuda import steady_rate
from consert.train.loop import LoopSettings, run_loop

#: Seconds a window's losses take to come back to the host: the device finishing the steps queued ahead of it.
READ_BACK = 0.3
#: Seconds of one dev evaluation (longer than the 17 timed steps' own compute on a loaded machine).
EVALUATION = 1.0


class SlowReadBack(torch.Tensor):
    """A loss whose values take :data:`READ_BACK` seconds to reach the host, as a GPU's queued steps do."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.tolist:
            time.sleep(READ_BACK)
        return super().__torch_function__(func, types, args, kwargs or {})


@pytest.fixture(scope="module")
def slow_device_log() -> list[dict]:
    """20 steps of a tiny model whose losses are read back 5 at a time (every read waiting READ_BACK), with a dev
    evaluation (EVALUATION seconds) every 8 steps: its reads at steps 8 and 16 fall between two read-backs."""
    model = torch.nn.Linear(2, 1)
    settings = LoopSettings(
        lr=0.1, batch_size=1, epochs=1, max_steps=20, warmup_ratio=0.0, weight_decay=0.0, adam_eps=1e-6,
        max_grad_norm=1.0, eval_every=8, patience=None, eval_at_start=False, seed=1, dtype="fp32",
    )  # fmt: skip

    def loss_fn(batch: list[int]) -> torch.Tensor:
        return model(torch.ones(len(batch), 2)).pow(2).mean().as_subclass(SlowReadBack)

    def dev_fn() -> float:
        time.sleep(EVALUATION)
        return 0.5

    items = list(range(20))
    return run_loop(model, list(model.named_parameters()), items, loss_fn, dev_fn, settings, "cpu", progress=False,
                    read_every=5).log  # fmt: skip


def test_every_windows_wait_counts_as_training_time_and_none_as_evaluation_time(slow_device_log):
    """On CUDA the loop reads the losses back every 50 steps: the host stamps a step when it has queued it, and the
    device's backlog is paid at the read. Here the losses are read at steps 5, 8 (before the evaluation), 10, 15,
    16 and 20, each waiting READ_BACK. All six waits belong to the 17 timed steps (the first is the reference,
    and the steps after an evaluation time the evaluation), and none to the evaluations: stamping steps as queued
    put the waits read inside an evaluation in the evaluation's interval and left the last one out (half the
    waits here), and stamping only the reads between two evaluations misses two of the six."""
    rate = steady_rate(slow_device_log, skip=0)
    assert (rate.timed_steps, rate.evaluations) == (17, 2)
    seconds = rate.timed_steps / rate.steps_per_s
    assert 6 * READ_BACK <= seconds < 6 * READ_BACK + EVALUATION  # the waits, and no evaluation
    assert 0.9 * EVALUATION <= rate.evaluation_s < EVALUATION + READ_BACK  # the evaluation less a step, no wait


def test_the_skipped_steps_are_rounded_up_to_a_whole_window_of_read_backs(slow_device_log):
    """A step before a read is stamped when it was queued: timing from it would count the device's time for the
    skipped steps still queued. So 3 skipped steps of windows of 5 skip 5, the window's end."""
    assert steady_rate(slow_device_log, skip=3, window=5) == steady_rate(slow_device_log, skip=5)
    assert steady_rate(slow_device_log, skip=3) != steady_rate(slow_device_log, skip=5)
