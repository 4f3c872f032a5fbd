"""How close a training step comes to the card's limit: the work a step must do, the rate it reaches, the card's peak.

The work is counted, not modelled: one eager step of the kind's objective, packed on its real tokens, runs under
torch's ``FlopCounterMode``, which counts the matrix products (the layers' weights, the loss's similarities),
forward and backward, 2 operations per multiply-add; elementwise work is not counted. Attention's two products
are counted apart, over each text's real tokens (:func:`attention_flops`: what a variable-length kernel must
compute, whichever kernel ran), averaged over the first batches the loop draws. Times the measured steps per
second, that is the achieved rate; over the card's dense peak in the step's precision (:data:`PEAK_TFLOPS`, the
vendor's datasheet figures), the fraction of the card's limit. On CUDA the step's kernels are counted too (the
profiler's kernel launches of one eager step's forward and backward in the kind's precision: what a CUDA graph
replays; the optimizer's are not counted), once as autocast runs the step (each weight cast at each use, the
layers uncompiled) and once with the linear layers cast once (:mod:`consert.train.cast_once`) and the per-token
chain compiled into fused kernels (:mod:`consert.train.fused`): what the graphs of ``compile: on`` replay.
"""

from __future__ import annotations

import functools
import itertools
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch.utils.flop_counter import FlopCounterMode

from consert.data.senteval import SentEvalData
from consert.encode.precision import TORCH_DTYPES, autocast
from consert.train.config import TrainConfig

if TYPE_CHECKING:
    from consert.bench.dag_cost import KindRate

#: Dense peak TFLOP/s by card and precision (fp32 steps run as TF32 on these cards), from NVIDIA's datasheets
#: (H100 SXM5 and H200 SXM: 989.4 bf16, 494.7 TF32; H100 PCIe: 756.5, 378; A100: 312, 156), without sparsity.
#: Matched against ``torch.cuda.get_device_name`` in order: the first name the device's contains.
PEAK_TFLOPS: dict[str, dict[str, float]] = {
    "H100 PCIe": {"bf16": 756.5, "fp16": 756.5, "fp32": 378.0},
    "H100": {"bf16": 989.4, "fp16": 989.4, "fp32": 494.7},
    "H200": {"bf16": 989.4, "fp16": 989.4, "fp32": 494.7},
    "A100": {"bf16": 312.0, "fp16": 312.0, "fp32": 156.0},
}


def peak_tflops(device_name: str, dtype: str) -> float:
    """The card's dense peak in ``dtype`` (TFLOP/s), NaN for a card (or a CPU) :data:`PEAK_TFLOPS` does not list."""
    for card, peaks in PEAK_TFLOPS.items():
        if card in device_name:
            return peaks.get(dtype, float("nan"))
    return float("nan")


@dataclass(frozen=True)
class StepWork:
    """One training step's work: operations (matrix products and attention, forward and backward) and, on CUDA,
    kernel launches as autocast runs the step and with the linear layers cast once and the per-token chain fused
    (None elsewhere), each the mean over the batches counted."""

    flops: float
    kernels: float | None
    fused_kernels: float | None = None


def attention_flops(lengths: torch.Tensor, hidden_size: int, layers: int) -> int:
    """Attention's products over texts of ``lengths`` real tokens, forward and backward: per layer and text of l
    tokens, Q K^T and the weighted sum of V are 2 l^2 d operations each forward, and the backward's four
    products (the gradients of Q, K, V and of the weights) twice that."""
    return 3 * 4 * hidden_size * layers * int((lengths.long() ** 2).sum())


def step_work(config: TrainConfig, data: SentEvalData, batches: int = 2, dtype: str = "fp32") -> StepWork:
    """The mean work of one step of ``config``'s objective over the first ``batches`` batches the loop draws (its
    order, its seed): eager, packed on the real tokens, in fp32 (the count does not depend on the precision);
    kernels on CUDA only, in ``dtype`` (autocast's): as autocast runs the step, casting each weight at each use,
    and with the linear layers cast once and the per-token chain fused."""
    from consert.train.cast_once import CastOnce
    from consert.train.execution import StepExecution
    from consert.train.fused import fused_encoder
    from consert.train.loop import batches as loop_batches
    from consert.train.loop import loop_settings
    from consert.train.objectives import objective_for
    from consert.train.packed import packed_encoder
    from consert.train.trained_encoder import TrainedEncoder, set_seed

    counted = config.replace(packed="on", cuda_graphs="off", compile="off", dtype="fp32")
    set_seed(counted.seed)
    encoder = TrainedEncoder(counted, data)
    execution = StepExecution(encoder)
    objective = objective_for(counted)(counted, encoder, execution)
    items = objective.training_items(data, progress=False)
    parameters = [*encoder.model.parameters(), *(p for head in objective.heads() for p in head.parameters())]
    execution.settle(batches, parameters, objective)
    passes: list[torch.Tensor] = []  # the real tokens of each text of each packed pass

    def recording(model, embedded, packing, kernel=None):
        passes.append(packing.lengths.cpu())
        return packed_encoder(model, embedded, packing, kernel)

    execution.packed_encoder = recording
    shape = encoder.model.config
    flops, kernels, fused_kernels = [], [], []
    for batch in itertools.islice(loop_batches(items, loop_settings(counted, "fp32")), batches):
        passes.clear()
        with FlopCounterMode(display=False) as counter:
            objective.loss(batch).backward()
        products = sum(n for op, n in counter.get_flop_counts()["Global"].items() if "attention" not in str(op))
        attention = sum(attention_flops(lengths, shape.hidden_size, shape.num_hidden_layers) for lengths in passes)
        flops.append(products + attention)
        if torch.device(encoder.device).type == "cuda":
            eager_step = functools.partial(_backward, objective.loss, batch, encoder.device, dtype)
            eager_step()  # anything lazily initialised in this precision, before the count
            kernels.append(_kernels(eager_step))
            execution.packed_encoder = fused_encoder()
            model = execution.cast_once_model(objective)  # the graphed step's rule: one encoder pass only
            cast = CastOnce(model, parameters, TORCH_DTYPES[dtype]) if model is not None and dtype != "fp32" else None
            fused_step = functools.partial(_backward, objective.loss, batch, encoder.device, dtype, cast)
            fused_step()  # compiles the chain (or loads it) before its kernels are counted
            fused_kernels.append(_kernels(fused_step))
            execution.packed_encoder = recording
        for parameter in parameters:
            parameter.grad = None
    return StepWork(sum(flops) / len(flops), _mean(kernels), _mean(fused_kernels))


def _backward(loss_of, batch, device: str, dtype: str, cast=None) -> None:
    """One step's forward and backward under ``dtype``'s autocast (as a graph records it: no cast cache), through
    ``cast`` (a :class:`~consert.train.cast_once.CastOnce`) where given."""
    with autocast(device, dtype, cache=False):
        loss = cast.run(loss_of, batch) if cast is not None else loss_of(batch)
    loss.backward()
    if cast is not None:
        cast.write_gradients()


def _mean(counts: list[int]) -> float | None:
    """The mean of ``counts``; None for none (no count on a CPU)."""
    return sum(counts) / len(counts) if counts else None


def _kernels(step) -> int:
    """The CUDA kernels ``step()`` launches (the profiler's kernel events)."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as profiled:
        step()
        torch.cuda.synchronize()
    return sum(1 for event in profiled.events() if event.device_type == torch.autograd.DeviceType.CUDA)


#: The speed-of-light columns of the cost table (``python -m harness_bench limits``).
SPEED_OF_LIGHT_COLUMNS = (
    "gflop_per_step",
    "achieved_tflops",
    "peak_fraction",
    "kernels_per_step",
    "fused_kernels_per_step",
)


def speed_of_light(config, model: str, data: SentEvalData, device: str, rate: KindRate) -> dict[str, float]:
    """A timed kind against the card's limit (:func:`step_work`, :func:`peak_tflops`): its step's work in GFLOP, the
    TFLOP/s its measured rate achieves, their fraction of the card's dense peak in the precision it ran in, and
    (on CUDA) its kernels per step, as the model's layers run and with their per-token chain fused; NaN for
    SG-OPT's kinds (its own trainer) and where the card's peak is unknown."""
    from baselines.sgopt import SgOptConfig
    from consert.bench.dag_cost import timed_config

    if isinstance(config, SgOptConfig):
        return dict.fromkeys(SPEED_OF_LIGHT_COLUMNS, float("nan"))
    with tempfile.TemporaryDirectory(prefix="consert-sol-") as scratch:
        timed, _ = timed_config(config, model, 2, device, Path(scratch), data)
        work = step_work(timed, data, dtype=rate.dtype or "fp32")
    name = torch.cuda.get_device_name(torch.device(device)) if torch.device(device).type == "cuda" else "cpu"
    achieved = work.flops * rate.steps_per_s / 1e12
    return {
        "gflop_per_step": work.flops / 1e9,
        "achieved_tflops": achieved,
        "peak_fraction": achieved / peak_tflops(name, rate.dtype),
        "kernels_per_step": float("nan") if work.kernels is None else work.kernels,
        "fused_kernels_per_step": float("nan") if work.fused_kernels is None else work.fused_kernels,
    }
