"""The packed forward (dense layers on real tokens only) equals the Hugging Face forward pass."""

from __future__ import annotations

import functools

import pytest
import torch

from consert.encode.pooling import Pooling
from consert.train.augment import AugmentationRatios
from consert.train.packed import ATTENTION_KERNELS, Packing, attention_kernel, packed_encoder
from consert.train.views import PackedPass, two_view_forward
from tests import fixtures


@pytest.fixture(scope="module")
def tiny_bert():
    config, model = fixtures.tiny_bert(vocab_size=500, hidden_size=32, layers=3, heads=4, intermediate_size=64)
    config._attn_implementation = "eager"  # the reference pass: the Hugging Face eager attention
    return model.double().train()  # float64: the two passes agree far below float32 rounding


def _batch():
    return fixtures.padded_batch([9, 3, 14, 6], vocab=500)


def test_packing_of_a_mask():
    _, mask = _batch()
    packing = Packing.of(mask)
    assert len(packing.index) == 9 + 3 + 14 + 6 and packing.lengths.tolist() == [9, 3, 14, 6]
    assert packing.first.tolist() == [0, 9, 12, 26] and packing.row[:10].tolist() == [0] * 9 + [1]
    assert packing.index[9].item() == 16  # row 1's first token in the flattened 4 x 16 batch
    assert packing.offsets.tolist() == [0, 9, 12, 26, 32, 32] and packing.offsets.dtype == torch.int32
    assert packing.longest == 16  # the padded length bounds every row's segment; the trash one is empty


def test_the_trash_segment_and_its_bound():
    _, mask = _batch()  # 32 real tokens in rows of at most 16
    assert Packing.of(mask, capacity=52).offsets.tolist()[-2:] == [32, 52]  # 20 spare slots: one segment
    assert Packing.of(mask, capacity=52).longest == 20  # longer than any row
    assert Packing.of(mask, capacity=40, longest=128).shape() == (4, 16, 40, 128)  # a graph's fixed bound
    with pytest.raises(ValueError, match="longest 16 is shorter than a segment of the packing \\(20\\)"):
        Packing.of(mask, capacity=52, longest=16)


def _packed_qkv(packing: Packing, heads: int = 3, size: int = 8, seed: int = 3) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    shape = (len(packing.index), heads, size)
    return [torch.randn(shape, generator=generator, dtype=torch.float64, requires_grad=True) for _ in range(3)]


def test_the_segment_kernels_equal_the_padded_kernel_in_float64_values_and_gradients():
    """The jagged kernel (the variable-length contract: each row a segment, the spare slots a trash segment of
    their own) gives the padded, masked attention's context and Q/K/V gradients on every real token."""
    _, mask = _batch()
    packing = Packing.of(mask, capacity=32 + 11)
    real = torch.arange(len(packing.index)) < 32
    results = {}
    for name in ("padded", "jagged"):
        q, k, v = _packed_qkv(packing)
        context = ATTENTION_KERNELS[name](q, k, v, packing, 0.0, 0.3)
        weights = torch.linspace(-1, 1, context[real].numel(), dtype=torch.float64).view_as(context[real])
        (context[real] * weights).sum().backward()
        results[name] = (context[real].detach(), [t.grad for t in (q, k, v)])
    (padded, padded_grads), (jagged, jagged_grads) = results["padded"], results["jagged"]
    assert torch.allclose(jagged, padded, rtol=0, atol=1e-12), (jagged - padded).abs().max()
    for mine, theirs in zip(jagged_grads, padded_grads, strict=True):
        assert torch.allclose(mine, theirs, rtol=0, atol=1e-12)
        assert not mine[~real].any()  # nothing flows from the trash to a real token, or back
    # a token attends to its own row only: changing row 1's keys leaves rows 0, 2 and 3 untouched
    q, k, v = (t.detach() for t in _packed_qkv(packing))
    moved = k.clone()
    moved[9:12] += 5.0
    before = ATTENTION_KERNELS["jagged"](q, k, v, packing, 0.0, 0.3)
    after = ATTENTION_KERNELS["jagged"](q, moved, v, packing, 0.0, 0.3)
    changed = (after - before).abs().amax(dim=(1, 2)) > 0
    assert changed[9:12].all() and not changed[:9].any() and not changed[12:].any()


def test_the_kernel_choice_on_this_machine():
    """FlashAttention's variable-length kernel is CUDA's, in half precision: a CPU or fp32 step attends padded."""
    assert attention_kernel(torch.zeros(5, 2, 8)) == "padded"
    assert attention_kernel(torch.zeros(5, 2, 8, dtype=torch.bfloat16)) == "padded"  # bf16, but on the CPU


@pytest.mark.parametrize("kernel", ["padded", "jagged"])
@pytest.mark.parametrize("spare", [0, 13], ids=["exact", "13 spare slots"])
@pytest.mark.parametrize("pooling", ["mean", "cls"])
@pytest.mark.parametrize("views", [("none", "none"), ("shuffle", "feature_cutoff"), ("token_cutoff", "dropout")])
def test_packed_views_equal_the_padded_forward_values_and_gradients(tiny_bert, pooling, views, spare, kernel):
    """Spare slots (a CUDA graph's rounded-up token count) go to the trash: nothing real changes. Attention by
    either kernel: the padded layout, or the real tokens' segments only (the variable-length contract)."""
    ids, mask = _batch()
    spec, ratios = Pooling.parse(pooling), AugmentationRatios()
    packing = Packing.of(mask.repeat(2, 1), capacity=2 * (9 + 3 + 14 + 6) + spare)
    encoder = functools.partial(packed_encoder, kernel=kernel)
    results = {}
    for name, packed in (("padded", None), ("packed", PackedPass(packing, encoder))):
        tiny_bert.zero_grad(set_to_none=True)
        torch.manual_seed(7)  # the same augmentation draws for both
        view1, view2 = two_view_forward(tiny_bert, ids, mask, views, spec, ratios, packed=packed)
        (view1 * view2).sum().backward()
        grads = {n: p.grad.clone() for n, p in tiny_bert.named_parameters() if p.grad is not None}
        results[name] = (torch.cat([view1, view2]).detach(), grads)
    (padded, padded_grads), (packed, packed_grads) = results["padded"], results["packed"]
    assert torch.allclose(packed, padded, atol=1e-10), (packed - padded).abs().max()
    assert padded_grads.keys() == packed_grads.keys()
    for name, grad in padded_grads.items():
        assert torch.allclose(packed_grads[name], grad, atol=1e-10), name


def test_spare_slots_point_past_the_batch_and_a_short_capacity_is_refused():
    _, mask = _batch()  # 4 rows of 16 positions, 32 real tokens
    packing = Packing.of(mask, capacity=35)
    assert packing.index[32:].tolist() == [64] * 3 and packing.row[32:].tolist() == [4] * 3  # trash position, row
    assert packing.keys.sum().item() == 32  # spare slots are never keys
    with pytest.raises(ValueError, match="cannot hold the batch's 32 real tokens"):
        Packing.of(mask, capacity=31)


def test_packing_keeps_only_the_last_layer():
    from consert.train.packed import packed_pool

    with pytest.raises(ValueError, match="last layer only"):
        packed_pool(Pooling.parse("mean:-2,-1"), torch.zeros(3, 2), Packing.of(torch.ones(1, 3)))


def objective_step(model_dir: str, data_dir, values: dict, device: str = "cpu", items: list | None = None):
    """One batch of the objective a config trains, through the real trainer's parts (its execution settled
    as for a 10,000-step run, so ``cuda_graphs: on`` replays the step as a graph): whether it packed, how
    many graphs it captured, its loss, and the gradients of the encoder and the heads. The batch: ``items``,
    else the objective's first 6 training items."""
    from consert.data.senteval import load_senteval
    from consert.train.config import TrainConfig
    from consert.train.execution import StepExecution
    from consert.train.objectives import objective_for
    from consert.train.trained_encoder import TrainedEncoder

    config = TrainConfig.from_dict(
        {"model": model_dir, "device": device, "remove_dropout": True, "data": str(data_dir), "dtype": "fp32",
         "nli_source": "sick-e", "compile": "off", **values}
    )  # fmt: skip
    data = load_senteval(data_dir)
    encoder = TrainedEncoder(config, data)
    execution = StepExecution(encoder)
    torch.manual_seed(0)  # the heads' initial weights
    objective = objective_for(config)(config, encoder, execution)
    modules = {"encoder": encoder.model, **{f"head{i}": head for i, head in enumerate(objective.heads())}}
    execution.settle(10_000, [p for module in modules.values() for p in module.parameters()], objective)
    items = items if items is not None else objective.training_items(data, progress=False)[:6]
    torch.manual_seed(1)  # the views' draws
    return step_result(execution.packed, execution.graphed, objective.loss(items), modules)


def step_result(packed: bool, graphed, loss: torch.Tensor, modules: dict) -> tuple:
    """``(packed, graphs captured, loss, gradients by "<owner>.<parameter>")`` of a step whose loss is ``loss``
    (backpropagated here unless ``graphed``, a :class:`~consert.train.graphs.GraphedStep`, has written the
    gradients), over ``modules`` by owner name: what :func:`assert_same_step` compares."""
    if graphed is None:
        loss.backward()
    grads = {
        f"{owner}.{name}": p.grad.clone()
        for owner, module in modules.items()
        for name, p in module.named_parameters()
        if p.grad is not None
    }
    return packed, len(graphed.captured) if graphed else 0, loss.detach(), grads


def assert_same_step(reference: tuple, step: tuple, gradient_tolerance: float, loss_tolerance: float = 1e-5) -> None:
    """The same loss (to float32 rounding by default), and the same gradients relative to the step's largest entry."""
    _, _, reference_loss, reference_grads = reference
    _, _, loss, grads = step
    assert torch.allclose(loss, reference_loss, rtol=loss_tolerance, atol=1e-6), (loss, reference_loss)
    assert grads.keys() == reference_grads.keys() and any(k.startswith("encoder.") for k in grads)
    scale = max(grad.abs().max() for grad in reference_grads.values())  # scales with the step, not with one
    for name, grad in reference_grads.items():  # parameter's gradient, which may nearly cancel
        difference = (grads[name] - grad).abs().max()
        assert difference <= gradient_tolerance * scale, (name, difference, scale)


@pytest.mark.parametrize(
    "values",
    [
        {"mode": "unsup", "views": ["shuffle", "feature_cutoff"]},
        {"mode": "simcse", "views": ["shuffle", "feature_cutoff"]},  # its dropout views are off here: BERT's
        {"mode": "sup"},
        {"mode": "joint"},  # the authors' none + token cutoff: the classifier's pass is the first view
        {"mode": "joint", "views": ["shuffle", "token_cutoff"]},  # both views in one packed pass of 2 x 2B rows
        {"mode": "bertflow-nli"},
        pytest.param(
            {
                "mode": "augcse",
                "augcse": {"spacy_model": None, "text_augmentations": ["random_swap", "sentence_reordering"]},
            },
            marks=pytest.mark.gradient_tolerance(2e-3),  # temperature 0.05 and a batch norm over 6 rows amplify
        ),  # float32 rounding: its loss still agrees to 1e-5
    ],
    ids=["unsup", "simcse", "sup", "joint", "joint-two-views", "bertflow-nli", "augcse"],
)
def test_every_objectives_packed_step_equals_its_padded_step(tiny_model_dir, tiny_tree, values, request):
    """A step of each objective packed on its real tokens gives the padded step's loss and gradients, to float32
    rounding (the packed sums run in another order): a packing error moves them by their own size."""
    padded = objective_step(tiny_model_dir, tiny_tree, {**values, "packed": "off"})
    packed = objective_step(tiny_model_dir, tiny_tree, {**values, "packed": "on"})
    assert packed[0] and not padded[0]  # the step did pack, and the reference did not
    marker = request.node.get_closest_marker("gradient_tolerance")
    assert_same_step(padded, packed, marker.args[0] if marker else 1e-4)  # 1e-4 of the largest entry: rounding
