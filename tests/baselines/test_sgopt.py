"""SG-OPT: the L_opt3 loss by hand, frozen parts stay frozen, a short real run completes."""

from __future__ import annotations

import math

import pytest
import torch

from baselines.sgopt import (
    SelfGuidedLoss,
    SgOptConfig,
    SgOptTrainer,
    graphs_blocker,
    layer_views,
    squared_distance,
    train_sgopt,
)
from consert.configs import ConfigError
from consert.train.packed import Packing
from tests.train.test_losses import AUTOCAST_DEVICES


def test_loss_equals_hand_computation():
    c = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    h = torch.tensor([[[1.0, 1.0], [2.0, 0.0]], [[0.0, 1.0], [1.0, -1.0]]])  # B=2, L+1=2, p=2
    tau = 0.5

    def cos(u, v):
        return float(torch.dot(u, v) / (u.norm() * v.norm()))

    terms = []
    for i in range(2):
        negatives = sum(math.exp(cos(c[i], h[m, n]) / tau) for m in range(2) if m != i for n in range(2))
        for k in range(2):
            positive = math.exp(cos(c[i], h[i, k]) / tau)
            terms.append(-math.log(positive / (positive + negatives)))
    assert SelfGuidedLoss(tau, 0.1).contrastive(c, h).item() == pytest.approx(sum(terms) / 4, rel=1e-6)


@pytest.mark.parametrize("device", AUTOCAST_DEVICES)
def test_the_similarities_stay_fp32_under_bf16_autocast(device):
    """At SG-OPT's temperature 0.01, a bf16 cosine (steps of 2**-8 near 1) would move a logit by 0.39: under bf16
    autocast the loss equals the loss of the same bf16 projections without it."""
    generator = torch.Generator().manual_seed(0)
    anchor = torch.randn(1, 1, 32, generator=generator) + 0.3 * torch.randn(4, 1, 32, generator=generator)
    h = (anchor + 0.05 * torch.randn(4, 3, 32, generator=generator)).bfloat16()  # B=4, L+1=3: cosines near 1
    c = (anchor[:, 0] + 0.05 * torch.randn(4, 32, generator=generator)).bfloat16()
    c, h = c.to(device), h.to(device)
    with torch.autocast(device, dtype=torch.bfloat16):
        under_autocast = SelfGuidedLoss(0.01, 0.1).contrastive(c, h)
    assert under_autocast.item() == pytest.approx(SelfGuidedLoss(0.01, 0.1).contrastive(c, h).item(), rel=1e-6)


def test_the_distance_to_the_frozen_copy_and_its_gradient_by_hand():
    """||theta_T - theta_F||^2 = 1 + 4 (the weights) + 9 (the biases) = 14 here; its gradient 2 (theta_T - theta_F)
    reaches the tuned copy only, exactly (a product by 2 is exact), and a frozen tuned tensor gets none."""
    tuned, frozen = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)
    with torch.no_grad():
        tuned.weight.copy_(torch.tensor([[1.0, 2.0]]))
        frozen.weight.copy_(torch.tensor([[0.0, 4.0]]))
        tuned.bias.fill_(0.5), frozen.bias.fill_(3.5)
    tuned.bias.requires_grad_(False)  # as BERT_T's embeddings: frozen, still in the distance
    distance = squared_distance(tuned, frozen)
    assert distance.item() == 1 + 4 + 9
    (0.1 * distance).backward()
    assert torch.equal(tuned.weight.grad, 0.1 * 2 * torch.tensor([[1.0, -2.0]]))
    assert tuned.bias.grad is None and frozen.weight.grad is None
    tuned.bias.requires_grad_(True)
    with torch.no_grad():
        tuned.bias.fill_(4.0)
    assert squared_distance(tuned, frozen).item() == 1 + 4 + 0.25


def test_layer_views_pool_real_tokens_only():
    hidden = (torch.tensor([[[1.0], [5.0], [100.0]]]), torch.tensor([[[2.0], [-4.0], [100.0]]]))
    mask = torch.tensor([[1, 1, 0]])
    assert layer_views(hidden, mask, "max").flatten().tolist() == [5.0, 2.0]
    assert layer_views(hidden, mask, "mean").flatten().tolist() == [3.0, -1.0]


@pytest.mark.slow
def test_short_run_keeps_frozen_parts_and_moves_the_rest(real_data, tmp_path):
    from transformers import AutoModel

    from consert.encode.models import STAND_IN_MODEL, resolve_model

    config = SgOptConfig(
        model=STAND_IN_MODEL,
        output_dir=str(tmp_path / "sgopt"),
        max_steps=3,
        batch_size=8,
        eval_every=3,
        projection_dim=64,
        dev_max_pairs=50,
        lr=1e-4,
    )
    result = train_sgopt(config, real_data, progress=False)
    original = AutoModel.from_pretrained(resolve_model(STAND_IN_MODEL).path)
    trainer = result.trainer
    for (name, frozen), (_, initial) in zip(
        trainer.frozen.named_parameters(), original.named_parameters(), strict=True
    ):
        assert torch.equal(frozen, initial), name
    for (name, tuned), (_, initial) in zip(
        trainer.tuned.embeddings.named_parameters(), original.embeddings.named_parameters(), strict=True
    ):
        assert torch.equal(tuned, initial), name
    losses = [e["loss"] for e in result.loop.log if "loss" in e]
    assert len(losses) == 3 and all(math.isfinite(v) for v in losses)
    assert (result.output_dir / "modules.json").is_file()
    # the model ends at its best dev state: the untouched start (step 0) or a tuned step
    query = trainer.tuned.encoder.layer[0].attention.self.query.weight
    unchanged = torch.equal(query, original.encoder.layer[0].attention.self.query.weight)
    assert unchanged == (result.loop.best_step == 0)


def sgopt_step(model_dir: str, data_dir, values: dict, device: str = "cpu", packing_spare: int | None = None):
    """One SG-OPT batch (its first 6 training texts) through the trainer's parts, dropout off in both copies (so
    no pass draws anything) and the head seeded alike: ``(packed, graphs captured, loss, gradients)`` of the
    tuned copy (``encoder.*``) and the head (``head.*``), in the shape :func:`tests.train.test_packed.assert_same_step`
    compares. ``packing_spare``: the packed loss over the real tokens and that many spare slots, run eagerly;
    None: ``trainer.loss``, as a run executes it (padded, or a graph's replay under ``cuda_graphs``)."""
    from consert.data.senteval import load_senteval
    from tests.train.test_packed import step_result

    config = SgOptConfig(
        model=model_dir, output_dir="unused", device=device, dtype="fp32", guide_dropout=False, projection_dim=16,
        **values,
    )  # fmt: skip
    torch.manual_seed(0)  # the projection head's initial weights
    trainer = SgOptTrainer(config, load_senteval(data_dir))
    trainer.tuned.eval()  # the guide is in eval mode already (guide_dropout off)
    texts = trainer.training_texts()[:6]
    if packing_spare is None:
        loss = trainer.loss(texts)
    else:
        ids, mask = trainer.tokens.batch(texts)
        packing = Packing.of(mask, capacity=int(mask.sum()) + packing_spare).to(device)
        loss = trainer.packed_loss(ids.to(device), mask.to(device), packing)
    modules = {"encoder": trainer.tuned, "head": trainer.head}
    return step_result(packing_spare is not None, trainer.graphed, loss, modules)


@pytest.mark.parametrize("spare", [0, 7], ids=["exact", "7 spare slots"])
@pytest.mark.parametrize("pooling", ["mean", "max"])
def test_the_packed_step_equals_the_padded_step_in_loss_and_gradients(tiny_model_dir, tiny_tree, pooling, spare):
    """The graph-safe loss (dense layers on the real tokens, every hidden state pooled from the packing, each
    row's [CLS] at its first slot) is the padded Hugging Face step's: spare slots pool into the trash row."""
    from tests.train.test_packed import assert_same_step

    padded = sgopt_step(tiny_model_dir, tiny_tree, {"view_pooling": pooling})
    packed = sgopt_step(tiny_model_dir, tiny_tree, {"view_pooling": pooling}, packing_spare=spare)
    assert not padded[0] and packed[0]
    assert_same_step(padded, packed, 1e-4)


def test_cuda_graphs_are_refused_where_they_cannot_run_and_kept_off_by_auto(tiny_model_dir, tiny_tree):
    """``cuda_graphs: on`` on a CPU is an error that says why; ``auto`` and ``off`` train eagerly; a value
    outside auto/on/off is refused before any model loads."""
    from consert.data.senteval import load_senteval

    data = load_senteval(tiny_tree)
    for value in ("auto", "off"):
        config = SgOptConfig(model=tiny_model_dir, output_dir="unused", device="cpu", cuda_graphs=value)
        assert SgOptTrainer(config, data).graphed is None
    with pytest.raises(ValueError, match="cuda_graphs: on, but device cpu is not CUDA"):
        SgOptTrainer(SgOptConfig(model=tiny_model_dir, output_dir="unused", device="cpu", cuda_graphs="on"), data)
    with pytest.raises(ConfigError, match="cuda_graphs: expected one of 'auto', 'on' or 'off', got 'yes'"):
        SgOptConfig.from_dict({"model": tiny_model_dir, "output_dir": "unused", "cuda_graphs": "yes"})


@pytest.mark.parametrize(
    ("cuda_graphs", "dtype", "device", "reason"),
    [
        ("auto", "auto", "cuda", None),
        ("auto", "bf16", "cuda:1", None),
        ("on", "fp32", "cuda", None),
        ("auto", "fp16", "cuda", "fp16 trains under a gradient scaler"),
        ("off", "auto", "cuda", "cuda_graphs: off"),
        ("auto", "auto", "cpu", "device cpu is not CUDA"),
    ],
)
def test_sgopt_replays_its_step_as_cuda_graphs_on_cuda_unless_fp16_or_off(cuda_graphs, dtype, device, reason):
    """SG-OPT's graph decision (its graphed step passed its CUDA test): ``auto`` and ``on`` graph on any CUDA
    device in bf16 or fp32; fp16's scaler, ``off`` and a CPU keep it eager, each saying why."""
    config = SgOptConfig(model="unused", output_dir="unused", cuda_graphs=cuda_graphs, dtype=dtype)
    blocker = graphs_blocker(config, device)
    assert blocker is None if reason is None else reason in blocker
