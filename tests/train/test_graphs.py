"""The training step replayed as CUDA graphs equals the eager step (CUDA only: skipped on a CPU machine;
run on the GPU box, see README, Performance)."""

from __future__ import annotations

import pytest
import torch

from consert.bench.dag_cost import TINY_SHAPE, random_bert
from consert.encode.pooling import Pooling
from consert.io import CACHE_ENV
from consert.train.augment import AugmentationRatios
from consert.train.graphs import GraphedStep
from consert.train.losses import nt_xent
from consert.train.packed import ATTENTION_KERNELS, Packing, attention_kernel, packed_encoder
from consert.train.views import PackedPass, two_view_forward
from tests import fixtures
from tests.train.test_packed import assert_same_step, objective_step

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device"),
]


def _tiny_bert(dropout: bool = False):
    shape = {"vocab_size": 300, "hidden_size": 64, "layers": 2, "heads": 4, "intermediate_size": 128}
    _, model = fixtures.tiny_bert(**shape, dropout=dropout)
    return model.cuda().train()


def _batch(lengths: list[int], length: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    return fixtures.padded_batch(lengths, length, seed=seed)


def _loss_of(model, views):
    def loss_of(ids, mask, packing):
        view1, view2 = two_view_forward(
            model, ids, mask, views, Pooling.parse("mean"), AugmentationRatios(), packed=PackedPass(packing)
        )
        return nt_xent(view1, view2, 0.1)

    return loss_of


def test_replays_equal_the_eager_step_in_loss_and_gradients_across_shapes():
    """Deterministic views, so the eager step is the reference: three shapes, one of them seen twice
    with other contents (the static inputs must be rewritten before the replay)."""
    model = _tiny_bert()
    loss_of = _loss_of(model, ("none", "none"))
    graphed = GraphedStep(loss_of, list(model.parameters()), "cuda", "fp32", token_bucket=16)
    batches = [
        _batch([9, 3, 14, 6], 16, seed=1),
        _batch([30, 2, 7, 11], 32, seed=2),
        _batch([10, 4, 12, 5], 16, seed=3),  # 31 real tokens a view (the first: 32): the same graph, new ids
        _batch([9, 3, 14, 6, 8], 16, seed=4),
    ]
    for ids, mask in batches:
        loss = graphed(ids, mask)
        gradients = [p.grad.clone() for p in graphed.parameters]
        for parameter in model.parameters():
            parameter.grad = None
        reference = loss_of(ids.cuda(), mask.cuda(), Packing.of(mask.repeat(2, 1)).to("cuda"))
        reference.backward()
        reference = reference.item()  # drop the eager graph: a capture must not meet its AccumulateGrad nodes
        assert loss.item() == pytest.approx(reference, rel=1e-5)
        for parameter, gradient in zip(graphed.parameters, gradients, strict=True):
            torch.testing.assert_close(gradient, parameter.grad, rtol=1e-4, atol=1e-6)
        for parameter, gradient in zip(graphed.parameters, graphed.gradients, strict=True):
            parameter.grad = gradient  # hand the buffers back, as the loop never sets them to None
    assert len(graphed.captured) == 3
    reached = {id(p) for p in graphed.parameters}
    assert id(model.pooler.dense.weight) not in reached  # mean pooling never reaches the pooler: no gradient


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("views", [("shuffle", "feature_cutoff"), ("token_cutoff", "dropout")])
def test_each_replay_draws_new_augmentations(views, dtype):
    """Every view's random draws (sorts of random keys included) are captured and drawn anew on each
    replay, in fp32 and under bf16 autocast."""
    model = _tiny_bert()
    graphed = GraphedStep(_loss_of(model, views), list(model.parameters()), "cuda", dtype)
    ids, mask = _batch([9, 3, 14, 6], 16, seed=1)
    losses = [graphed(ids, mask).item() for _ in range(3)]
    assert len(graphed.captured) == 1 and len(set(losses)) == 3, losses
    assert all(torch.isfinite(p.grad).all() for p in graphed.parameters)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_each_replay_draws_new_dropout_masks_inside_bert(dtype):
    """SimCSE's only augmentation is BERT's own dropout (hidden and attention, the latter inside the fused attention
    kernel): replays of one batch with no other augmentation draw new masks, so their losses differ."""
    model = _tiny_bert(dropout=True)
    graphed = GraphedStep(_loss_of(model, ("none", "none")), list(model.parameters()), "cuda", dtype)
    ids, mask = _batch([9, 3, 14, 6], 16, seed=1)
    losses = [graphed(ids, mask).item() for _ in range(3)]
    assert len(graphed.captured) == 1 and len(set(losses)) == 3, losses


def test_the_graphed_precision_probe_times_replays_of_the_packed_step(tmp_path, monkeypatch):
    from consert.encode import precision
    from consert.train.graphs import graphed_probe_runner

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    monkeypatch.delenv(precision.DTYPE_ENV, raising=False)
    model = _tiny_bert()
    chosen = precision.training_precision("auto", "cuda", model, graphed_runner=graphed_probe_runner)
    assert chosen.how == "measured" and set(chosen.timings) <= {"bf16/torch", "fp32/torch"}
    assert all(p.grad is None for p in model.parameters())  # the probe's gradient buffers are gone


@pytest.mark.parametrize(
    "values",
    [
        {"mode": "unsup", "views": ["none", "none"]},
        {"mode": "simcse", "views": ["none", "none"]},
        {"mode": "sup"},
        {"mode": "joint", "views": ["none", "none"]},  # the authors' clean first view; the second drawn as none
        {"mode": "bertflow-nli", "batch_size": 16},
    ],
    ids=["unsup", "simcse", "sup", "joint", "bertflow-nli"],
)
def test_every_graphed_objectives_step_equals_its_eager_packed_step(tmp_path_factory, tiny_tree, values):
    """Through the trainer's own parts, each objective whose step is graphed gives, in one replay, the loss and
    gradients of its eager packed step (deterministic views and no dropout, so the eager step is the truth)."""
    model_dir = random_bert(tmp_path_factory.mktemp("tiny-bert"), TINY_SHAPE)
    eager = objective_step(model_dir, tiny_tree, {**values, "packed": "on", "cuda_graphs": "off"}, device="cuda")
    graphed = objective_step(model_dir, tiny_tree, {**values, "packed": "on", "cuda_graphs": "on"}, device="cuda")
    assert graphed[1] == 1 and eager[1] == 0  # the step was replayed from a graph, and the reference was not
    assert_same_step(eager, graphed, 1e-4)


@pytest.mark.parametrize(
    "values",
    [
        {"mode": "unsup"},
        {"mode": "bertflow-nli", "batch_size": 16},
        {"mode": "joint"},  # two encoder passes: autocast's per-use casts kept
        {"mode": "unsup", "compile": "on"},
    ],
    ids=["unsup", "bertflow-nli", "joint", "unsup fused"],
)
def test_a_graphed_bf16_step_equals_its_eager_packed_step(tmp_path_factory, tiny_tree, values):
    """In bf16 the graphed step casts the linear layers once a step (consert.train.cast_once) and, under compile: on,
    runs the fused per-token chain: through the trainer's parts, the eager packed bf16 step's loss and gradients
    (the same kernels: to float rounding; fused: Inductor keeps some intermediates in fp32, so to bf16 rounding)."""
    model_dir = random_bert(tmp_path_factory.mktemp("tiny-bert"), TINY_SHAPE)
    common = {**values, "packed": "on", "dtype": "bf16"}
    eager = objective_step(model_dir, tiny_tree, {**common, "cuda_graphs": "off", "compile": "off"}, device="cuda")
    graphed = objective_step(model_dir, tiny_tree, {**common, "cuda_graphs": "on"}, device="cuda")
    assert graphed[1] == 1 and eager[1] == 0
    fused = values.get("compile") == "on"
    assert_same_step(eager, graphed, 3e-2 if fused else 1e-3, loss_tolerance=2e-2 if fused else 1e-5)


def test_augcses_graphed_step_equals_its_eager_packed_step(tmp_path_factory, tiny_tree):
    """AugCSE's step (its three texts in one packed pass, the batch-norm head, the discriminator behind the
    gradient reversal) replayed gives the eager packed step's loss and gradients. The batch is written here
    (spaCy, which draws the augmentations, is not on the GPU machine) and the discriminator's dropout is off
    (its draws would differ between the eager step and the replay)."""
    from consert.train.text_augment import AugmentedText

    model_dir = random_bert(tmp_path_factory.mktemp("tiny-bert"), TINY_SHAPE)
    values = {
        "mode": "augcse",
        "packed": "on",
        "augcse": {"text_augmentations": ["random_swap", "sentence_reordering"], "discriminator_dropout": 0.0},
    }
    items = [
        AugmentedText("a man is playing a guitar .", "a man is playing guitar a .", 0),
        AugmentedText("two dogs run . the grass is green .", "the grass is green . two dogs run .", 1),
        AugmentedText("a woman slices an onion", "a woman slices an onion", 2),
        AugmentedText("the cat sleeps on the warm mat all day", "the cat on sleeps the warm mat all day", 0),
    ]
    eager = objective_step(model_dir, tiny_tree, {**values, "cuda_graphs": "off"}, device="cuda", items=items)
    graphed = objective_step(model_dir, tiny_tree, {**values, "cuda_graphs": "on"}, device="cuda", items=items)
    assert graphed[1] == 1 and eager[1] == 0
    # as in the packed test, a batch norm over 4 rows and temperature 0.05 amplify float32 rounding
    assert_same_step(eager, graphed, 2e-3)


def test_sgopts_graphed_step_equals_its_eager_packed_step(tiny_model_dir, tiny_tree):
    """SG-OPT's step (the frozen guide's packed pass pooled over every hidden state, the tuned copy's [CLS], the
    projection head, the distance to the guide in multi-tensor kernels) replayed gives the eager packed step's
    loss and gradients, dropout off in both copies (their draws would differ between the two)."""
    from tests.baselines.test_sgopt import sgopt_step

    for pooling in ("mean", "max"):
        values = {"view_pooling": pooling}
        eager = sgopt_step(tiny_model_dir, tiny_tree, {**values, "cuda_graphs": "off"}, "cuda", packing_spare=0)
        graphed = sgopt_step(tiny_model_dir, tiny_tree, {**values, "cuda_graphs": "on"}, "cuda")
        assert graphed[1] == 1 and eager[1] == 0  # the step was replayed from a graph, and the reference was not
        assert_same_step(eager, graphed, 1e-4)


def test_sgopt_trains_eagerly_under_fp16_from_the_environment(tiny_model_dir, tiny_tree, monkeypatch):
    """fp16 asked for through ``$CONSERT_DTYPE`` is known only once SG-OPT's precision is resolved: ``auto`` then
    keeps the step eager (a replayed step cannot run fp16's gradient scaler), ``on`` refuses in one line."""
    from dataclasses import replace

    from baselines import sgopt
    from consert.data.senteval import load_senteval

    monkeypatch.setenv("CONSERT_DTYPE", "fp16")
    data = load_senteval(tiny_tree)
    config = sgopt.SgOptConfig(model=tiny_model_dir, output_dir="unused", device="cuda", projection_dim=16)
    trainer = sgopt.SgOptTrainer(config, data)
    assert trainer.precision.dtype == "fp16" and trainer.graphed is None
    with pytest.raises(ValueError, match="cuda_graphs: on, but fp16 trains under a gradient scaler"):
        sgopt.SgOptTrainer(replace(config, cuda_graphs="on"), data)


def test_a_graphed_runs_log_marks_the_steps_that_captured(tiny_model_dir, tiny_tree, tmp_path):
    """The loop logs each capture at the step that made it (what a step rate leaves out): the first step captures,
    and the log's captures add up to the graphs the run kept."""
    import json
    from pathlib import Path

    from consert.data.senteval import load_senteval
    from consert.train.config import TrainConfig
    from consert.train.export import TRAINING_RECORD
    from consert.train.trainer import train

    config = TrainConfig(
        model=tiny_model_dir, device="cuda", dtype="fp32", cuda_graphs="on", compile="off", batch_size=4,
        max_steps=12, eval_every=12, dev_max_pairs=20, eval_at_start=False, output_dir=str(tmp_path / "out"),
    )  # fmt: skip
    result = train(config, load_senteval(tiny_tree), progress=False)
    captured = {entry["step"]: entry["captures"] for entry in result.log if entry.get("captures")}
    record = json.loads((Path(result.output_dir) / TRAINING_RECORD).read_text(encoding="utf-8"))
    assert 1 in captured and sum(captured.values()) == record["cuda_graphs"] >= 1


def test_flash_attention_takes_the_packed_bf16_step():
    """The training step's attention on CUDA in bf16 is FlashAttention's variable-length kernel; fp32 attends
    padded (the kernel has no fp32)."""
    assert attention_kernel(torch.zeros(5, 2, 16, device="cuda", dtype=torch.bfloat16)) == "varlen"
    assert attention_kernel(torch.zeros(5, 2, 16, device="cuda")) == "padded"


def test_the_varlen_kernel_equals_the_padded_kernel_within_bf16_rounding():
    """Values and Q/K/V gradients of both kernels in bf16 against the float64 segment reference on the CPU: the
    variable-length kernel's error is the padded kernel's, bf16 rounding (a segment or offset error is O(1)).
    The trash segment (21 spare slots, past a bound of 128) computes finite values."""
    _, mask = _batch([9, 3, 14, 6, 40, 1], 48, seed=5)
    tokens = int(mask.sum())
    packing = Packing.of(mask, capacity=tokens + 21, longest=128)
    generator = torch.Generator().manual_seed(3)
    inputs = [torch.randn(tokens + 21, 4, 64, generator=generator, dtype=torch.float64) for _ in range(3)]
    weights = torch.randn(tokens, 4, 64, generator=generator, dtype=torch.float64)

    def run(kernel: str, dtype: torch.dtype, device: str) -> list[torch.Tensor]:
        tensors = [t.to(device, dtype, copy=True).requires_grad_() for t in inputs]
        context = ATTENTION_KERNELS[kernel](*tensors, packing.to(device), 0.0, 0.125)
        assert torch.isfinite(context).all()
        (context[:tokens].double() * weights.to(device)).sum().backward()
        return [context[:tokens].detach().double().cpu()] + [t.grad[:tokens].double().cpu() for t in tensors]

    reference = run("jagged", torch.float64, "cpu")
    varlen, padded = run("varlen", torch.bfloat16, "cuda"), run("padded", torch.bfloat16, "cuda")
    for name, ref, mine, theirs in zip(("context", "dq", "dk", "dv"), reference, varlen, padded, strict=True):
        error, rounding = (mine - ref).abs().max().item(), (theirs - ref).abs().max().item()
        assert error <= 2 * rounding + 1e-3, (name, error, rounding)


def test_the_packed_encoder_by_varlen_equals_it_padded_under_bf16_autocast():
    """A tiny BERT's packed forward and backward under bf16 autocast, attention by each kernel (the fused Q/K/V
    projection's strided views go to the flash kernel as they are): the same vectors and gradients to bf16
    rounding."""
    model = _tiny_bert()
    ids, mask = _batch([9, 3, 14, 6], 16, seed=1)
    packing = Packing.of(mask, capacity=40, longest=128).to("cuda")
    results = {}
    for kernel in ("varlen", "padded"):
        model.zero_grad(set_to_none=True)
        with torch.autocast("cuda", torch.bfloat16):
            hidden = packed_encoder(model, model.embeddings(input_ids=ids.cuda()), packing, kernel)[:32].float()
        hidden.pow(2).mean().backward()
        grads = {n: p.grad.float().clone() for n, p in model.named_parameters() if p.grad is not None}
        results[kernel] = (hidden.detach(), grads)
    (varlen, varlen_grads), (padded, padded_grads) = results["varlen"], results["padded"]
    torch.testing.assert_close(varlen, padded, rtol=2e-2, atol=2e-2)
    scale = max(g.abs().max() for g in padded_grads.values())
    for name, grad in padded_grads.items():
        assert (varlen_grads[name] - grad).abs().max() <= 3e-2 * scale, name


def _fused_loss_of(model):
    """The contrastive step with no augmentation, its layers' per-token chain compiled (``compile: on``)."""
    from consert.train.fused import fused_encoder

    encoder = fused_encoder()

    def loss_of(ids, mask, packing):
        view1, view2 = two_view_forward(
            model,
            ids,
            mask,
            ("none", "none"),
            Pooling.parse("mean"),
            AugmentationRatios(),
            packed=PackedPass(packing, encoder),
        )
        return nt_xent(view1, view2, 0.1)

    return loss_of


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_the_fused_chain_replayed_as_graphs_equals_the_eager_packed_step(dtype):
    """Dropout off: the graphs over the compiled chain give the eager packed step's loss and gradients, in fp32 to
    float rounding and under bf16 autocast to bf16 rounding, for two shapes (one compilation: the count is
    dynamic)."""
    model = _tiny_bert()
    graphed = GraphedStep(_fused_loss_of(model), list(model.parameters()), "cuda", dtype, token_bucket=16)
    tolerance = {"fp32": 1e-4, "bf16": 3e-2}[dtype]
    for ids, mask in (_batch([9, 3, 14, 6], 16, seed=1), _batch([30, 2, 7, 11], 32, seed=2)):
        loss = graphed(ids, mask).item()
        gradients = [p.grad.float().clone() for p in graphed.parameters]
        for parameter in model.parameters():
            parameter.grad = None
        with torch.autocast("cuda", torch.bfloat16, enabled=dtype == "bf16"):
            reference = _loss_of(model, ("none", "none"))(
                ids.cuda(), mask.cuda(), Packing.of(mask.repeat(2, 1)).to("cuda")
            )
        reference.backward()
        assert loss == pytest.approx(reference.item(), rel=tolerance)
        scale = max(p.grad.abs().max() for p in graphed.parameters)
        for parameter, gradient in zip(graphed.parameters, gradients, strict=True):
            assert (gradient - parameter.grad.float()).abs().max() <= tolerance * scale
        for parameter, gradient in zip(graphed.parameters, graphed.gradients, strict=True):
            parameter.grad = gradient


def test_each_replay_of_the_fused_chain_draws_new_dropout_masks():
    """The fused kernels draw dropout's masks from Inductor's generator inside the graph: fresh on every replay. The
    hidden dropout only (inside the chain): attention's and the embeddings' would make the losses differ anyway."""
    model = _tiny_bert(dropout=True)
    model.embeddings.dropout.p = 0.0
    for layer in model.encoder.layer:
        layer.attention.self.dropout.p = 0.0
    graphed = GraphedStep(_fused_loss_of(model), list(model.parameters()), "cuda", "bf16")
    ids, mask = _batch([9, 3, 14, 6], 16, seed=1)
    losses = [graphed(ids, mask).item() for _ in range(3)]
    assert len(graphed.captured) == 1 and len(set(losses)) == 3, losses
    assert all(torch.isfinite(p.grad).all() for p in graphed.parameters)
