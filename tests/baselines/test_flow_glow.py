"""BERT-flow's Glow against the reference's equations (bohanli/BERT-flow, flow/glow_ops_1x1.py).

The expected values are computed here in NumPy, step by step from the reference's equations (not by
calling the module under test): ActNorm ``(x + b) exp(3 s)`` with log-determinant ``3 sum(s)``,
channel reversal, additive coupling ``z2 = x2 + NN(x1)`` with ``NN = ((relu(AN(relu(AN(x1 W1))) W2))
W3 + b3) exp(3 s3)``, the second half leaving at each split, bits per dimension.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from baselines.flow import Glow, glorot_bound


def _set(glow: Glow, rng: np.random.Generator) -> None:
    """Give every parameter a non-trivial value (the zero-initialised layers too)."""
    with torch.no_grad():
        for parameter in glow.parameters():
            parameter.copy_(torch.as_tensor(rng.normal(scale=0.3, size=parameter.shape)))


def _actnorm(x, b, s):
    return (x + b) * np.exp(3 * s), 3 * s.sum()


def _net(x, net):
    w1, w2 = net.hidden1.weight.detach().numpy(), net.hidden2.weight.detach().numpy()
    h = np.maximum(_actnorm(x @ w1.T, net.norm1.b.detach().numpy(), net.norm1.logs.detach().numpy())[0], 0)
    h = np.maximum(_actnorm(h @ w2.T, net.norm2.b.detach().numpy(), net.norm2.logs.detach().numpy())[0], 0)
    out = h @ net.out.weight.detach().numpy().T + net.out.bias.detach().numpy()
    return out * np.exp(3 * net.out_logs.detach().numpy())


def _reference_forward(glow: Glow, x: np.ndarray) -> tuple[np.ndarray, float]:
    """The reference's encoder: levels of (actnorm -> reverse -> additive coupling); x2 leaves at a split."""
    log_det, leaving = 0.0, []
    for level, steps in enumerate(glow.blocks):
        for step in steps:
            x, step_log_det = _actnorm(x, step.actnorm.b.detach().numpy(), step.actnorm.logs.detach().numpy())
            log_det += step_log_det
            x = x[:, ::-1]
            half = x.shape[1] // 2
            x1, x2 = x[:, :half], x[:, half:]
            x = np.concatenate([x1, x2 + _net(x1, step.net)], axis=1)
        if level < len(glow.blocks) - 1:
            half = x.shape[1] // 2
            leaving.append(x[:, half:])
            x = x[:, :half]
    return np.concatenate([*leaving, x], axis=1), log_det


def test_a_small_forward_pass_and_its_log_determinant_by_hand():
    torch.manual_seed(0)
    glow = Glow(dim=8, levels=2, depth=2, width=3).double()
    _set(glow, np.random.default_rng(1))
    x = np.random.default_rng(2).normal(size=(5, 8))
    z, log_det = glow(torch.as_tensor(x))
    expected_z, expected_log_det = _reference_forward(glow, x)
    np.testing.assert_allclose(z.detach().numpy(), expected_z, rtol=1e-12, atol=1e-12)
    assert log_det.tolist() == pytest.approx([expected_log_det] * 5, abs=1e-12)  # the same for every row
    # bits per dimension: -(log det + sum log N(z; 0, 1)) / (d ln 2)
    log_normal = -0.5 * expected_z**2 - 0.5 * math.log(2 * math.pi)
    bits = -(expected_log_det + log_normal.sum(axis=1)) / (8 * math.log(2))
    np.testing.assert_allclose(glow.bits_per_dim(torch.as_tensor(x)).detach().numpy(), bits, rtol=1e-12)


def test_the_reference_initialisation():
    torch.manual_seed(0)
    glow = Glow(dim=768, levels=3, depth=3, width=32)
    for level, channels in enumerate((768, 384, 192)):
        step = glow.blocks[level][0]
        bound = glorot_bound(channels)  # sqrt(6 / (1 + C)): 0.0883, 0.1248, 0.1759
        assert bound == pytest.approx(math.sqrt(6 / (1 + channels)))
        for values in (step.actnorm.b, step.actnorm.logs):  # no data-dependent init: Glorot-uniform
            assert values.abs().max() <= bound and values.abs().max() > 0.8 * bound
        net = step.net
        assert net.hidden1.weight.shape == (32, channels // 2) and net.hidden1.bias is None
        assert abs(net.hidden1.weight.std().item() - 0.05) < 0.005  # N(0, 0.05)
        assert net.norm1.b.abs().max() <= math.sqrt(6 / 33)
        assert not net.out.weight.any() and not net.out.bias.any() and not net.out_logs.any()
    # zero-initialised couplings are identities: at the start z is actnorm and reversals only
    x = torch.randn(4, 768)
    h = x
    for level, steps in enumerate(glow.blocks):
        for step in steps:
            h = ((h + step.actnorm.b) * torch.exp(3 * step.actnorm.logs)).flip(-1)
        if level < 2:
            h = h[:, : h.shape[1] // 2]
    assert torch.allclose(glow(x)[0][:, -192:], h, atol=1e-5)


def test_the_flow_is_invertible_and_the_split_keeps_the_first_half():
    torch.manual_seed(0)
    glow = Glow(dim=8, levels=2, depth=1, width=4).double()
    _set(glow, np.random.default_rng(3))
    x = torch.randn(6, 8, dtype=torch.float64)
    z, _ = glow(x)
    assert torch.allclose(glow.inverse(z), x, atol=1e-10)
    # the first four latent values are the second half after level 0: they do not depend on level 1's step
    with torch.no_grad():
        for parameter in glow.blocks[1].parameters():
            parameter.add_(1.0)
    moved, _ = glow(x)
    assert torch.equal(moved[:, :4], z[:, :4]) and not torch.allclose(moved[:, 4:], z[:, 4:])
