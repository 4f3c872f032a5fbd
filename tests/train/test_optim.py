"""The authors' AdamW (no bias correction) against arithmetic on their settings and torch's AdamW."""

from __future__ import annotations

import math

import pytest
import torch

from consert.train.optim import AdamW, fused_adamw


def _optimizer(kind: str, params, lr: float, correct_bias: bool, weight_decay: float = 0.0):
    if kind == "fused":  # torch's fused kernel (CUDA's optimizer; it also runs on a CPU)
        return fused_adamw([{"params": params, "weight_decay": weight_decay}], lr, (0.9, 0.999), 1e-12, correct_bias)
    return AdamW(params, lr=lr, eps=1e-12, weight_decay=weight_decay, correct_bias=correct_bias)


def _first_update(correct_bias: bool, gradient: float = 0.5, lr: float = 1e-3, kind: str = "foreach") -> torch.Tensor:
    param = torch.nn.Parameter(torch.zeros(4))
    optimizer = _optimizer(kind, [param], lr, correct_bias)
    param.grad = torch.full((4,), gradient)
    optimizer.step()
    return -param.detach()


@pytest.mark.parametrize("kind", ["foreach", "fused"])
def test_first_update_without_bias_correction_is_3_16_lr(kind):
    """Constant gradient g: m = 0.1 g, v = 0.001 g^2, so the update is lr * 0.1 / sqrt(0.001) = 3.162 lr."""
    update = _first_update(correct_bias=False, kind=kind)
    assert torch.allclose(update, torch.full((4,), 1e-3 * 0.1 / math.sqrt(0.001)), rtol=1e-5)
    assert update[0].item() / 1e-3 == pytest.approx(3.1623, abs=1e-4)


@pytest.mark.parametrize("kind", ["foreach", "fused"])
def test_first_update_with_bias_correction_is_lr(kind):
    assert torch.allclose(_first_update(correct_bias=True, kind=kind), torch.full((4,), 1e-3), rtol=1e-5)


def test_the_fused_kernel_follows_the_authors_update_at_their_settings():
    """torch's fused AdamW decays before the update, the authors' AdamW after it: at their lr (5e-7) and
    weight decay (0.01) that moves a weight by lr^2 * 0.01 * |update| = 2.5e-15 a step. In float64 (no
    float32 rounding to hide behind) 300 steps agree to 1e-11; a bias-corrected fused step would differ
    by 6e-5 (the first updates are 3.16x apart)."""
    generator = torch.Generator().manual_seed(0)
    start = torch.randn(64, generator=generator, dtype=torch.float64)
    gradients = [torch.randn(64, generator=generator, dtype=torch.float64) for _ in range(300)]
    finals = {}
    for kind in ("foreach", "fused"):
        param = torch.nn.Parameter(start.clone())
        optimizer = _optimizer(kind, [param], 5e-7, False, weight_decay=0.01)
        for gradient in gradients:
            param.grad = gradient.clone()
            optimizer.step()
        finals[kind] = param.detach()
    assert (finals["foreach"] - start).abs().max() > 1e-5  # the steps moved the weights
    torch.testing.assert_close(finals["fused"], finals["foreach"], rtol=0, atol=1e-11)


def test_without_correction_the_ratio_to_corrected_updates_follows_the_bias_terms():
    """Under a constant gradient, step t's update ratio is (1 - b1^t) / sqrt(1 - b2^t): 3.16 at t=1, ~1 late."""
    params = {flag: torch.nn.Parameter(torch.zeros(1)) for flag in (False, True)}
    optimizers = {flag: AdamW([p], lr=1.0, eps=1e-12, correct_bias=flag) for flag, p in params.items()}
    previous = {flag: 0.0 for flag in params}
    for step in range(1, 2001):
        updates = {}
        for flag, param in params.items():
            param.grad = torch.ones(1)
            optimizers[flag].step()
            updates[flag] = previous[flag] - param.item()
            previous[flag] = param.item()
        if step in (1, 10, 100, 1500):
            expected = (1 - 0.9**step) / math.sqrt(1 - 0.999**step)
            assert updates[False] / updates[True] == pytest.approx(expected, rel=1e-4), step


def test_with_bias_correction_it_matches_torch_adamw_including_decoupled_weight_decay():
    torch.manual_seed(0)
    start = torch.randn(32)
    ours, reference = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    mine = AdamW([ours], lr=1e-2, eps=1e-8, weight_decay=0.01, correct_bias=True)
    torchs = torch.optim.AdamW([reference], lr=1e-2, eps=1e-8, weight_decay=0.01)
    for _ in range(50):
        gradient = torch.randn(32)
        ours.grad, reference.grad = gradient.clone(), gradient.clone()
        mine.step()
        torchs.step()
    # torch decays before the update and adds eps to the bias-corrected denominator: agreement, not identity
    assert torch.allclose(ours, reference, atol=1e-4)


def test_weight_decay_is_decoupled_and_applied_after_the_update():
    param = torch.nn.Parameter(torch.full((1,), 2.0))
    optimizer = AdamW([param], lr=0.1, eps=1e-12, weight_decay=0.5, correct_bias=True)
    param.grad = torch.zeros(1)  # no gradient signal: only the decay moves the parameter
    optimizer.step()
    assert param.item() == pytest.approx(2.0 * (1 - 0.1 * 0.5))


def _per_tensor_reference(params, grads_per_step, lr, betas, eps, weight_decay):
    """The authors' ``transformers.AdamW(correct_bias=False)`` written out per tensor, step by step."""
    state = [(torch.zeros_like(p), torch.zeros_like(p)) for p in params]
    for grads in grads_per_step:
        for param, grad, (m, v) in zip(params, grads, state, strict=True):
            m.mul_(betas[0]).add_(grad, alpha=1 - betas[0])
            v.mul_(betas[1]).addcmul_(grad, grad, value=1 - betas[1])
            param.addcdiv_(m, v.sqrt().add_(eps), value=-lr)
            param.add_(param, alpha=-lr * weight_decay)
    return params


def test_the_multi_tensor_step_equals_the_per_tensor_arithmetic():
    torch.manual_seed(0)
    shapes = [(7, 3), (3,), (5, 5, 2)]
    start = [torch.randn(shape) for shape in shapes]
    grads_per_step = [[torch.randn(shape) for shape in shapes] for _ in range(20)]
    ours = [torch.nn.Parameter(t.clone()) for t in start]
    optimizer = AdamW(ours, lr=5e-3, eps=1e-6, weight_decay=0.01, correct_bias=False)
    for grads in grads_per_step:
        for param, grad in zip(ours, grads, strict=True):
            param.grad = grad.clone()
        optimizer.step()
    expected = _per_tensor_reference([t.clone() for t in start], grads_per_step, 5e-3, (0.9, 0.999), 1e-6, 0.01)
    for param, reference in zip(ours, expected, strict=True):
        assert torch.equal(param.detach(), reference)


def test_bias_correction_counts_each_parameters_own_steps():
    """A parameter without a gradient at first starts its own count (as torch.optim.AdamW's per-parameter step)."""
    torch.manual_seed(0)
    start = [torch.randn(5), torch.randn(3)]
    ours = [torch.nn.Parameter(t.clone()) for t in start]
    reference = [torch.nn.Parameter(t.clone()) for t in start]
    mine = AdamW(ours, lr=1e-2, eps=1e-12, weight_decay=0.0, correct_bias=True)
    torchs = torch.optim.AdamW(reference, lr=1e-2, eps=1e-12, weight_decay=0.0, foreach=False)
    for step in range(6):
        for index, (a, b) in enumerate(zip(ours, reference, strict=True)):
            gradient = torch.randn_like(a) if index == 0 or step >= 2 else None  # the second joins at step 3
            a.grad = None if gradient is None else gradient.clone()
            b.grad = None if gradient is None else gradient.clone()
        mine.step()
        torchs.step()
    for a, b in zip(ours, reference, strict=True):
        assert torch.allclose(a, b, atol=1e-6)


def test_the_loop_fuses_only_the_uncorrected_update():
    """With bias correction torch adds eps after the correction and the authors' AdamW before it: not the
    same update, so bias-corrected recipes (SimCSE, SG-OPT) keep the multi-tensor version."""
    from consert.train.loop import LoopSettings, adamw

    settings = LoopSettings(
        lr=5e-7, batch_size=4, epochs=1, max_steps=None, warmup_ratio=0.1, weight_decay=0.01, adam_eps=1e-6,
        max_grad_norm=1.0, eval_every=2, patience=None, eval_at_start=False, seed=1, dtype="fp32",
        bias_correction=False,
    )  # fmt: skip
    named = list(torch.nn.Linear(2, 2).named_parameters())
    assert isinstance(adamw(named, settings, fused=True), torch.optim.AdamW)
    assert isinstance(adamw(named, settings, fused=False), AdamW)
    corrected = LoopSettings(**{**settings.__dict__, "bias_correction": True})
    assert isinstance(adamw(named, corrected, fused=True), AdamW)


def test_decay_first_is_bert_flows_adam_weight_decay():
    """BERT's AdamWeightDecayOptimizer (BERT-flow's): update = m / (sqrt(v) + eps) + weight_decay * param, then
    param -= lr * update, with no bias correction: two steps by hand in float64."""
    torch.manual_seed(0)
    start = torch.randn(5, dtype=torch.float64)
    grads = [torch.randn(5, dtype=torch.float64) for _ in range(2)]
    param = torch.nn.Parameter(start.clone())
    optimizer = AdamW([param], lr=1e-3, eps=1e-6, weight_decay=0.01, correct_bias=False, decay_first=True)
    expected, m, v = start.clone(), torch.zeros(5, dtype=torch.float64), torch.zeros(5, dtype=torch.float64)
    for grad in grads:
        param.grad = grad.clone()
        optimizer.step()
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        expected = expected - 1e-3 * (m / (v.sqrt() + 1e-6) + 0.01 * expected)
    torch.testing.assert_close(param.detach(), expected, rtol=0, atol=1e-15)
    # the default order (transformers 3.4's) decays the updated weights: a different number
    other = torch.nn.Parameter(start.clone())
    default = AdamW([other], lr=1e-3, eps=1e-6, weight_decay=0.01, correct_bias=False)
    for grad in grads:
        other.grad = grad.clone()
        default.step()
    assert not torch.equal(other.detach(), param.detach())
