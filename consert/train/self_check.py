"""A fast path checks itself: before the first optimizer step, a step that runs packed, as CUDA graphs or compiled
(:mod:`consert.train.execution`) is compared with an eager step on the loop's first batch, from the same random
state (the views' masks and permutations the same draws), the dropout of the model and its heads off in both (a
packed and a padded pass cannot draw the same dropout masks). Their loss and gradient norm agree within
:data:`SELF_CHECK_TOLERANCE`, or the run trains eagerly from there, says so in one line and keeps why in its record.
The cost: one eager step, and for CUDA graphs one capture of graphs of the check's own (the training graphs keep the
dropout on). Nothing of the check stays in the training: the random state is restored, the gradients cleared.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from consert.encode.precision import autocast

if TYPE_CHECKING:
    from consert.train.execution import GraphableStep, StepExecution

#: How far a fast path's first step may be from the eager step's, relative, by the training precision: (loss,
#: gradient norm). In fp32 the packed and padded passes sum the same products in another order: on the CPU, tiny
#: random BERT, they agree to 1e-7 (tests/train/test_self_check.py), where a 1% change of half of the last layer's
#: features moves the loss by 1.6e-3 and is caught. Under bf16 or fp16 autocast each matmul's output is rounded to 8
#: or 11 bits, in another order on each path: the bounds are those the GPU tests hold a graphed or fused bf16 step
#: to against its eager step (tests/train/test_graphs.py, on an H100 and H200), so only grosser faults (a mask or a
#: token out of place) are caught there.
SELF_CHECK_TOLERANCE = {"fp32": (1e-4, 1e-3), "fp16": (1e-2, 3e-2), "bf16": (2e-2, 5e-2)}


@dataclass(frozen=True)
class SelfCheck:
    """A fast path's first step against the eager step, each as (loss, gradient norm); ``fast`` None where the fast
    path failed to build, ``failure`` saying how."""

    path: str
    fast: tuple[float, float] | None
    eager: tuple[float, float]
    tolerance: tuple[float, float]
    failure: str | None = None

    @property
    def agrees(self) -> bool:
        """Both the loss and the gradient norm within their relative tolerance (a NaN on either side disagrees)."""
        if self.fast is None:
            return False
        pairs = zip(self.fast, self.eager, self.tolerance, strict=True)
        return all(math.isclose(fast, eager, rel_tol=tolerance) for fast, eager, tolerance in pairs)

    def describe(self) -> str:
        """One line: the path, both steps' numbers and the verdict."""
        if self.fast is None:
            return f"self-check: the fast path ({self.path}) failed to build: {self.failure}"
        (loss, norm), (eager_loss, eager_norm) = self.fast, self.eager
        verdict = "agrees" if self.agrees else "disagrees"
        return (
            f"self-check: the fast path ({self.path}) {verdict} with an eager step on the first batch: loss "
            f"{loss:.6g} against {eager_loss:.6g}, gradient norm {norm:.6g} against {eager_norm:.6g} (relative "
            f"tolerance {self.tolerance[0]:g} and {self.tolerance[1]:g})"
        )


def fast_path(execution: StepExecution) -> str | None:
    """The fast paths ``execution``'s step takes (``packed, CUDA graphs, compiled``), or None for an eager step."""
    taken = [("packed", execution.packed), ("CUDA graphs", execution.graphed is not None)]
    return ", ".join(name for name, on in [*taken, ("compiled", execution.compiled)] if on) or None


@contextmanager
def eagerly(execution: StepExecution) -> Iterator[None]:
    """Within the block ``execution``'s step runs eagerly; after it, as before."""
    held = execution.packed, execution.packed_encoder, execution.forward_model, execution.graphed
    execution.use_eager()
    try:
        yield
    finally:
        execution.packed, execution.packed_encoder, execution.forward_model, execution.graphed = held


def self_check(execution: StepExecution, objective: GraphableStep, batch: list[Any]) -> SelfCheck | None:
    """Where ``execution``'s step takes a fast path, check it on ``batch`` (the loop's first); where it disagrees
    or fails to build, ``execution`` runs eagerly from here on and one line on stderr says so. None for an eager
    step."""
    path = fast_path(execution)
    if path is None:
        return None
    encoder = execution.encoder
    modules = [encoder.model, *objective.heads()]
    parameters = [p for module in modules for p in module.parameters() if p.requires_grad]
    modes = [module.training for module in modules]
    cuda = [torch.device(encoder.device)] if torch.device(encoder.device).type == "cuda" else []
    fast, failure = None, None
    try:
        for module in modules:
            module.eval()
        with torch.random.fork_rng(devices=cuda):
            step = _CheckedStep(execution, objective, batch, parameters, _random_state(cuda))
            try:
                fast = step.fast()
            except Exception as error:  # a compiler's, a kernel's or a capture's: the run goes on eagerly
                failure = f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0]}"
            with eagerly(execution):
                eager = step.measured()
    finally:
        for module, mode in zip(modules, modes, strict=True):
            module.train(mode)
        for parameter in parameters:
            parameter.grad = None
    check = SelfCheck(path, fast, eager, SELF_CHECK_TOLERANCE[encoder.dtype], failure)
    if not check.agrees:
        execution.use_eager(check.describe())
        print(f"consert train: {check.describe()}; training eagerly from here on", file=sys.stderr)
    return check


@dataclass
class _CheckedStep:
    """The check's step: one batch of an objective, from one random state, through the path ``execution`` holds."""

    execution: StepExecution
    objective: GraphableStep
    batch: list[Any]
    parameters: list[nn.Parameter]
    state: list[torch.Tensor]

    def fast(self) -> tuple[float, float]:
        """(loss, gradient norm) by the fast path; CUDA graphs through graphs of the check's own, captured with the
        dropout off (the training graphs keep it on), then replayed from the state."""
        execution = self.execution
        if execution.graphed is None:
            return self.measured()
        training_graphs, compiled = execution.graphed, execution.compiled
        execution.graphed = execution.graphed_step(self.objective, self.parameters)
        try:
            with autocast(execution.encoder.device, execution.encoder.dtype):
                self.objective.loss(self.batch)  # captured on first sight, and replayed once
            return self.measured()
        finally:
            execution.graphed, execution.compiled = training_graphs, compiled

    def measured(self) -> tuple[float, float]:
        """(loss, gradient norm) from the state, by the path the execution holds now; the gradients cleared after."""
        encoder = self.execution.encoder
        _set_random_state(self.state, torch.device(encoder.device))
        with autocast(encoder.device, encoder.dtype):
            loss = self.objective.loss(self.batch)
        if self.execution.graphed is None:  # a graph's replay has written the gradients
            loss.float().backward()
        norms = [torch.linalg.vector_norm(p.grad.float()) for p in self.parameters if p.grad is not None]
        result = float(loss.detach()), float(torch.linalg.vector_norm(torch.stack(norms))) if norms else 0.0
        for parameter in self.parameters:
            parameter.grad = None
        return result


def _random_state(cuda: Sequence[torch.device]) -> list[torch.Tensor]:
    """The CPU generator's state, then the CUDA device's."""
    return [torch.get_rng_state(), *(torch.cuda.get_rng_state(device) for device in cuda)]


def _set_random_state(state: list[torch.Tensor], device: torch.device) -> None:
    torch.set_rng_state(state[0])
    if len(state) > 1:
        torch.cuda.set_rng_state(state[1], device)
