"""Step rates from a training log: the time a device takes to finish its queued steps is counted."""

from __future__ import annotations

import contextlib
import time

import pytest
import torch

from consert.bench.steady_rate import steady_rate
from consert.train.loop import LoopSettings, capture_ahead, run_loop

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


#: Seconds of device time each emulated step queues, and one CUDA graph capture's own seconds.
DEVICE_STEP, CAPTURE = 0.02, 0.5
#: The steps that see a new batch shape and capture its graph: one in the warm-up, then one inside the window of
#: steps 11-20 and one ending the window of steps 21-30 (windows counted one way for the captures and another for
#: the steps would leave out 31-40 instead).
CAPTURING_STEPS = (4, 17, 30)


class EmulatedDevice:
    """A device that runs queued steps one after the other while the host goes on: the host waits for it at a
    read-back of the losses and before a graph capture (``torch.cuda.graph`` synchronises first)."""

    def __init__(self) -> None:
        self.busy_until, self.captures = time.perf_counter(), 0

    def queue(self, seconds: float) -> None:
        self.busy_until = max(time.perf_counter(), self.busy_until) + seconds

    def wait(self) -> None:
        time.sleep(max(0.0, self.busy_until - time.perf_counter()))

    def loss_class(self) -> type[torch.Tensor]:
        device = self

        class QueuedLoss(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                if func is torch.Tensor.tolist:
                    device.wait()
                return super().__torch_function__(func, types, args, kwargs or {})

        return QueuedLoss


@pytest.fixture(scope="module")
def capturing_log() -> list[dict]:
    """50 steps of DEVICE_STEP device seconds each, read back every 10, three of them capturing a graph."""
    model, device = torch.nn.Linear(2, 1), EmulatedDevice()
    settings = LoopSettings(
        lr=0.1, batch_size=1, epochs=1, max_steps=50, warmup_ratio=0.0, weight_decay=0.0, adam_eps=1e-6,
        max_grad_norm=1.0, eval_every=100, patience=None, eval_at_start=False, seed=1, dtype="fp32",
    )  # fmt: skip
    queued, steps = device.loss_class(), iter(range(1, 51))

    def loss_fn(batch: list[int]) -> torch.Tensor:
        if next(steps) in CAPTURING_STEPS:
            device.wait()
            time.sleep(CAPTURE)
            device.captures += 1
        device.queue(DEVICE_STEP)
        return model(torch.ones(len(batch), 2)).pow(2).mean().as_subclass(queued)

    return run_loop(model, list(model.named_parameters()), list(range(50)), loss_fn, lambda: 0.5, settings, "cpu",
                    progress=False, read_every=10, capture_count=lambda: device.captures).log  # fmt: skip


def test_the_loop_logs_which_steps_captured_a_graph(capturing_log):
    assert [entry["step"] for entry in capturing_log if entry.get("captures")] == list(CAPTURING_STEPS)


def test_a_window_that_captured_a_graph_is_left_out_whole_and_its_capture_counted_once(capturing_log):
    """The rate is the device's, 1 / DEVICE_STEP: the windows of steps 11-20 and 21-30 captured and are left out.
    Leaving out the capturing steps alone would drop the time of the steps queued before them (a rate above
    1 / DEVICE_STEP); keeping them, or leaving out 11-20 and 31-40, counts captures as steps (below 0.5 /
    DEVICE_STEP). The captures' seconds come back as the run's one-time cost."""
    rate = steady_rate(capturing_log, skip=10, window=10)
    assert (rate.timed_steps, rate.capture_windows, rate.counts_captures) == (20, 2, False)
    assert 0.6 / DEVICE_STEP < rate.steps_per_s <= 1.02 / DEVICE_STEP
    assert 0.8 * len(CAPTURING_STEPS) * CAPTURE < rate.one_time_s < len(CAPTURING_STEPS) * CAPTURE + 0.7


def test_when_every_timed_window_captured_the_rate_counts_the_captures_and_says_so(capturing_log):
    first_30 = [entry for entry in capturing_log if entry["step"] <= 30]
    rate = steady_rate(first_30, skip=10, window=10)
    assert rate.counts_captures and rate.capture_windows == 0 and rate.timed_steps == 20
    assert rate.steps_per_s < 0.6 / DEVICE_STEP  # two captures inside 20 steps' 0.4 device seconds


#: Seconds one emulated graph capture of a new batch shape takes in the capture-ahead tests.
SHAPE_CAPTURE = 0.1


class EmulatedGraphs:
    """A step replayed as CUDA graphs on the emulated device: a batch whose shape is new (its shape: the sum of
    its items // 40; seed 1's batches meet rare sums first at steps 44 and 56 of 60) waits for the device and
    captures for SHAPE_CAPTURE seconds; every step queues DEVICE_STEP. Inside ``capturing_only()`` a new shape
    is captured and nothing is queued, as :meth:`consert.train.graphs.GraphedStep.capturing_only` does."""

    def __init__(self, device: EmulatedDevice):
        self.device, self.shapes, self.replays = device, set(), True
        self.model, self.queued = torch.nn.Linear(2, 1), device.loss_class()

    def capture_count(self) -> int:
        return len(self.shapes)

    @contextlib.contextmanager
    def capturing_only(self):
        self.replays = False
        yield
        self.replays = True

    def __call__(self, batch: list[int]) -> torch.Tensor:
        shape = sum(batch) // 40
        if shape not in self.shapes:
            self.device.wait()
            time.sleep(SHAPE_CAPTURE)
            self.shapes.add(shape)
        if self.replays:
            self.device.queue(DEVICE_STEP)
        return self.model(torch.ones(len(batch), 2)).pow(2).mean().as_subclass(self.queued)


def _graphed_rate(ahead: bool, seed: int = 1):
    """60 steps of batches of 4 of 200 items (into a second epoch) on the emulated graphs (read back every 10,
    the first 20 skipped), the shapes of the 60 batches captured ahead or not: the steady rate, the log, the
    seconds captured ahead and the shapes captured in all."""
    step = EmulatedGraphs(EmulatedDevice())
    settings = LoopSettings(
        lr=0.1, batch_size=4, epochs=2, max_steps=60, warmup_ratio=0.0, weight_decay=0.0, adam_eps=1e-6,
        max_grad_norm=1.0, eval_every=100, patience=None, eval_at_start=False, seed=seed, dtype="fp32",
    )  # fmt: skip
    items = list(range(200))
    ahead_s = capture_ahead(items, step, settings, "cpu", 60, step.capturing_only) if ahead else 0.0
    log = run_loop(step.model, list(step.model.named_parameters()), items, step, lambda: 0.5, settings, "cpu",
                   progress=False, read_every=10, capture_count=step.capture_count).log  # fmt: skip
    return steady_rate(log, skip=20, window=10), log, ahead_s, step.capture_count()


def test_shapes_captured_ahead_leave_no_capture_in_a_timed_window_and_two_runs_agree():
    """The cost table's timing: every shape of the timed steps is captured before them (the loop's own batches,
    in its order), so no window captures and the rate is the device's, 1 / DEVICE_STEP, in two runs alike;
    the captures' seconds are measured apart. Without it, shapes first seen after the warm-up capture inside
    timed windows (the rate then leaves them out, or counts them); capturing another order's batches (another
    seed) leaves some of the loop's shapes to capture."""
    rates = []
    for _ in range(2):
        rate, log, ahead_s, shapes = _graphed_rate(ahead=True)
        assert not any(entry.get("captures") for entry in log)  # every shape the run met was captured ahead
        assert rate.capture_windows == 0 and not rate.counts_captures and rate.timed_steps == 40
        assert shapes >= 5 and shapes * SHAPE_CAPTURE <= ahead_s < shapes * SHAPE_CAPTURE + 0.5  # each once
        assert 0.9 / DEVICE_STEP < rate.steps_per_s <= 1.02 / DEVICE_STEP
        rates.append(rate.steps_per_s)
    assert abs(rates[0] - rates[1]) <= 0.05 * min(rates)
    rate, log, _, _ = _graphed_rate(ahead=False)
    late = [entry["step"] for entry in log if entry.get("captures") and entry["step"] > 20]
    assert late and (rate.capture_windows or rate.counts_captures)  # the shapes this seed's batches meet late
