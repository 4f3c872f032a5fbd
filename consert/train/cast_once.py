"""A model's linear layers cast to the step's precision once a step, in one multi-tensor copy, not at each use.

Under bf16 autocast every linear layer casts its fp32 weight and bias to bf16 as it runs (one kernel each), its
backward casts their gradients back to fp32 (one more each) and accumulates them into ``.grad`` (one more each):
some 400 small kernels a step for BERT-base's 72 linear layers (its Q/K/V weights are cast concatenated), each
a launch of its own inside a CUDA graph too.
:class:`CastOnce` keeps bf16 working copies of those parameters as leaves of the step's graph. At the start of a
step one ``_foreach_copy_`` casts the fp32 masters into them, the step runs with them in place of the masters
(``torch.func.functional_call``), their gradients arrive in bf16 without a cast or an accumulation, and one more
``_foreach_copy_`` writes them into the masters' fp32 gradient buffers. The values are autocast's: it casts these
tensors to the same bf16 at each use, its matrix products read them the same, and the gradient it casts back is
the same bf16 product (a test, to the bit), for a step that runs each layer once: a second use would sum the
two gradients in bf16 where autocast sums them in fp32, so :meth:`CastOnce.run` refuses it. LayerNorm and the
embeddings, which autocast runs in fp32, keep their fp32 parameters.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.func import functional_call


class _Call(nn.Module):
    """``fn(*args)`` with ``model`` as a submodule, so that ``functional_call`` can stand tensors in for its
    parameters while ``fn`` runs."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, fn: Callable[..., torch.Tensor], *args) -> torch.Tensor:
        return fn(*args)


class CastOnce:
    """Working copies in ``dtype`` of the trainable weights and biases of ``model``'s linear layers among
    ``parameters``: :meth:`run` a step's loss with them, then :meth:`write_gradients` after its backward. The loss
    must reach those weights only through the layers: one that reads them itself (``model.parameters()``) would
    read the copies (SG-OPT's regulariser does, so its step is not cast once)."""

    def __init__(self, model: nn.Module, parameters: list[nn.Parameter], dtype: torch.dtype):
        trainable = {id(p) for p in parameters if p.requires_grad}
        self.names, self.masters = [], []
        for name, parameter in model.named_parameters():
            module = model.get_submodule(name.rpartition(".")[0])
            if isinstance(module, nn.Linear) and id(parameter) in trainable:
                self.names.append(f"model.{name}")
                self.masters.append(parameter)
        self.copies = [torch.empty_like(p, dtype=dtype).requires_grad_() for p in self.masters]
        self.call = _Call(model)
        self.reached: set[int] | None = None  # the masters the first step reached

    def written(self) -> set[int]:
        """The masters' ids: the parameters whose gradients :meth:`write_gradients` writes whole."""
        return {id(p) for p in self.masters}

    def run(self, loss_of: Callable[..., torch.Tensor], *args) -> torch.Tensor:
        """``loss_of(*args)`` with the working copies, cast from the masters now, in the masters' places. A step that
        runs a linear layer twice is refused: its gradients would be summed in bf16, where autocast sums in fp32."""
        with torch.no_grad():
            torch._foreach_copy_(self.copies, [p.detach() for p in self.masters])
        calls: dict[str, int] = {}
        handles = [
            module.register_forward_pre_hook(lambda *_, name=name: calls.__setitem__(name, calls.get(name, 0) + 1))
            for name, module in self.call.model.named_modules()
            if isinstance(module, nn.Linear)
        ]
        try:
            loss = functional_call(self.call, dict(zip(self.names, self.copies, strict=True)), (loss_of, *args))
        finally:
            for handle in handles:
                handle.remove()
        twice = sorted(name for name, count in calls.items() if count > 1)
        if twice:
            raise ValueError(f"cast_once: the step runs {twice[0]} {calls[twice[0]]} times; cast once a pass only")
        return loss

    def write_gradients(self) -> None:
        """After the backward: each reached copy's gradient into its master's ``.grad`` (the buffer kept where one
        exists, else a new one), then the copies' gradients dropped, so the next backward hands over fresh ones
        rather than accumulating into them. The first step's unreached layers (BERT's pooler under mean pooling)
        are cast no more; a later step that reaches other layers is refused (a master left out of the step's
        zeroing would keep a stale gradient)."""
        reached = [(m, c.grad) for m, c in zip(self.masters, self.copies, strict=True) if c.grad is not None]
        ids = {id(m) for m, _ in reached}
        if self.reached is None:
            self.reached = ids
            kept = [i for i, m in enumerate(self.masters) if id(m) in ids]
            self.names = [self.names[i] for i in kept]
            self.masters = [self.masters[i] for i in kept]
            self.copies = [self.copies[i] for i in kept]
        elif ids != self.reached:
            raise RuntimeError("cast_once: this step reaches other linear layers than the first step did")
        for master, _ in reached:
            if master.grad is None:
                master.grad = torch.empty_like(master)
        if reached:
            torch._foreach_copy_([m.grad for m, _ in reached], [g for _, g in reached])
        for copy in self.copies:
            copy.grad = None
