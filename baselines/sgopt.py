"""SG-OPT (Kim et al., ACL 2021, ``papers/sgopt.txt`` Section 3): self-guided contrastive learning.

A frozen copy BERT_F yields one view per hidden state k = 0..L of each sentence, h_{i,k} = p(H_{i,k})
(p = mean pooling over real tokens, what the authors' code ran: ``training.py`` defaults to
``--pooling2 mean`` and no script changes it; the paper's text says max, a setting here). The
tuned copy BERT_T (its embedding layer frozen) yields c_i, its last-layer [CLS]. A projection head f
(Linear d->4096, GELU, Linear 4096->4096, GELU; weights normal(0, 0.02), biases zero) maps both.
With phi(u, v) = exp(cos(f(u), f(v)) / tau):

    L_opt3_{i,k} = -log phi(c_i, h_{i,k}) / (phi(c_i, h_{i,k}) + sum_{m != i} sum_{n=0..L} phi(c_i, h_{m,n}))
    L_opt = 1 / (B (L + 1)) sum_i sum_k L_opt3_{i,k} + lambda ||theta_T - theta_F||^2

Settings, as the authors ran (galsang/SG-BERT ``training.py``, ``loss.py``, ``modules.py``): the 17,256
texts of STS-B train+dev+test (both sides, no dedup; paper footnote 7), tau 0.01, lambda 0.1, lr
5e-5, batch 16, 1 epoch, AdamW betas (0.9, 0.9), weight decay 0.01, 10% warm-up, max length 128,
dropout on in both copies, dev every 50 steps with patience 10 counted as dev scores below the
previous one (never reset), and the state training stopped in is the result (not the best dev
one). The final embedding is the tuned copy's [CLS].
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from consert.configs import AutoOnOff, Settings, Temperature, key
from consert.data.senteval import STSB, SentEvalData, dev_pairs, load_senteval
from consert.encode.batching import TokenCache, pad_multiple, to_device
from consert.encode.models import default_device, resolve_model
from consert.encode.precision import training_precision
from consert.train.architectures import embed, fast_path_fault, trainable_config
from consert.train.export import export_model
from consert.train.graphs import FP16_BLOCKER, GraphedStep, graphed_probe_runner, graphs_unavailable
from consert.train.loop import LoopResult, loop_settings, run_loop
from consert.train.losses import similarities_in_fp32
from consert.train.packed import Packing, packed_hidden_states
from consert.train.record import loop_record, provenance_record
from consert.train.trained_encoder import load_trainable, set_seed


class SgOptConfig(Settings):
    """SG-OPT's settings; every default is the authors' (module docstring), each key with its help text."""

    model: str = key("the encoder to tune: a hub id or a local folder")
    output_dir: str = key("where the tuned model is exported (absent, empty, or an earlier export of the harness)")
    temperature: Temperature = key("tau of phi(u, v) = exp(cos(f(u), f(v)) / tau)", 0.01)
    regularization: float = key("lambda: the weight of ||theta_T - theta_F||^2", 0.1)
    lr: float = key("AdamW's learning rate", 5e-5)
    batch_size: int = key("texts per step", 16)
    epochs: int = key("passes over the training texts", 1)
    max_steps: int | None = key("stop after this many steps (null: the epochs' length); for smoke runs", None)
    betas: tuple[float, float] = key("AdamW's betas (the authors' 0.9, 0.9)", (0.9, 0.9))
    eval_every: int = key("steps between two STS-B dev evaluations", 50)
    patience: int = key("dev scores below the previous one before stopping (the count is never reset)", 10)
    final_state: str = key(
        '"last": the state training stopped in, as the authors test it; "best": the best dev', "last"
    )
    warmup_ratio: float = key("the share of the steps spent warming the learning rate up", 0.1)
    weight_decay: float = key("AdamW's weight decay", 0.01)
    projection_dim: int = key("the projection head's width (Linear d -> p, GELU, Linear p -> p, GELU)", 4096)
    view_pooling: str = key("the pooling of the frozen copy's hidden states (the authors' code: mean)", "mean")
    guide_dropout: bool = key(
        "dropout on in the frozen guide too (the authors' fit puts the whole loss model in train mode)", True
    )
    train_texts: str = key('"stsb": STS-B train+dev+test (17,256); "stsb-train"; "sts": all 89,192 STS texts', "stsb")
    max_length: int = key("tokens per text, [CLS] and [SEP] included", 128)
    dev_max_pairs: int | None = key("evaluate on the first n STS-B dev pairs only (fast smoke runs)", None)
    seed: int = key("the run's seed (data order, dropout, the projection head)", 1)
    dtype: str = key("the precision measured fastest on this machine (consert.encode.precision)", "auto")
    device: str | None = key("cpu or cuda (null: cuda when available)", None)
    cuda_graphs: AutoOnOff = key(
        "replay the step as CUDA graphs over its packed real tokens: on, off, or auto (on CUDA, unless the "
        "precision is fp16, whose gradient scaler a replay cannot run)",
        "auto",
    )


def graphs_blocker(config: SgOptConfig, device: str) -> str | None:
    """Why SG-OPT's step does not run as CUDA graphs on ``device``; None when it does."""
    unavailable = graphs_unavailable(config.cuda_graphs, device)
    if unavailable is not None:
        return unavailable
    if config.dtype == "fp16":
        return FP16_BLOCKER
    return None


class SgOptProjection(nn.Sequential):
    """f: Linear(d, p), GELU, Linear(p, p), GELU; weights normal(0, ``std``), biases zero (BERT's init)."""

    def __init__(self, dim: int, projection_dim: int = 4096, std: float = 0.02):
        super().__init__(
            nn.Linear(dim, projection_dim), nn.GELU(), nn.Linear(projection_dim, projection_dim), nn.GELU()
        )
        for layer in self:
            if isinstance(layer, nn.Linear):
                nn.init.normal_(layer.weight, mean=0.0, std=std)
                nn.init.zeros_(layer.bias)


class SelfGuidedLoss(nn.Module):
    """L_opt (module docstring), constructed with its settings as a sentence-transformers loss is: tau
    (``temperature``) and lambda (``regularization``)."""

    def __init__(self, temperature: float, regularization: float):
        super().__init__()
        self.temperature, self.regularization = temperature, regularization

    def contrastive(self, c: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """Mean L_opt3 over sentences i and layers k, for projected ``c`` (B x p) and ``h`` (B x (L+1) x p)."""
        batch, views, _ = h.shape
        with similarities_in_fp32(c):
            logits = torch.einsum("ip,mnp->imn", F.normalize(c.float(), dim=-1), F.normalize(h.float(), dim=-1))
        logits = logits / self.temperature
        positives = logits.diagonal(dim1=0, dim2=1).t()  # B x (L+1): phi(c_i, h_{i,k}); no host index (graph-safe)
        others = ~torch.eye(batch, dtype=torch.bool, device=c.device)
        negatives = torch.logsumexp(logits.masked_fill(~others.unsqueeze(-1), float("-inf")).flatten(1), dim=1)
        return (torch.logaddexp(positives, negatives.unsqueeze(1)) - positives).mean()

    def forward(self, c: torch.Tensor, h: torch.Tensor, tuned: nn.Module, frozen: nn.Module) -> torch.Tensor:
        """L_opt: the contrastive term plus lambda x the squared distance of the tuned copy's weights from the
        frozen copy's."""
        return self.contrastive(c, h) + self.regularization * squared_distance(tuned, frozen)


def layer_views(hidden_states: Sequence[torch.Tensor], attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """B x (L+1) x d: one pooled view per hidden state (``max`` or ``mean`` over real tokens)."""
    stacked = torch.stack(list(hidden_states), dim=1).float()  # B x (L+1) x T x d
    mask = attention_mask.bool()[:, None, :, None]
    if pooling == "max":
        return stacked.masked_fill(~mask, float("-inf")).amax(dim=2)
    if pooling == "mean":
        return (stacked * mask).sum(2) / mask.sum(2).clamp(min=1)
    raise ValueError(f"SG-OPT view pooling must be 'max' or 'mean', got {pooling!r}")


def packed_layer_views(states: Sequence[torch.Tensor], packing: Packing, pooling: str) -> torch.Tensor:
    """:func:`layer_views` from packed hidden states (T x d each, :func:`consert.train.packed.packed_hidden_states`):
    B x (L+1) x d, pooled over each row's real tokens (the packing's spare slots pool into a trash row, dropped)."""
    stacked = torch.stack(list(states), dim=1).float()  # T x (L+1) x d
    shape = (packing.rows + 1, *stacked.shape[1:])
    if pooling == "max":
        rows = packing.row.view(-1, 1, 1).expand_as(stacked)
        return stacked.new_full(shape, float("-inf")).scatter_reduce(0, rows, stacked, "amax")[: packing.rows]
    if pooling == "mean":
        summed = stacked.new_zeros(shape).index_add(0, packing.row, stacked)[: packing.rows]
        return summed / packing.lengths.view(-1, 1, 1).to(summed.dtype)
    raise ValueError(f"SG-OPT view pooling must be 'max' or 'mean', got {pooling!r}")


class _SquaredDistance(torch.autograd.Function):
    """sum_j ||a_j - b_j||^2 over pairs of tensors, the b_j constant, in multi-tensor kernels: a handful of kernel
    launches however many tensors (a per-tensor formula launches about eight per parameter, forward and
    backward: some 1,600 a step for BERT-base, more than the step's own matmuls on a GPU). The gradient is
    2 (a_j - b_j), as autograd gives it for the per-tensor formula, to the bit (a product by 2 is exact); the
    value's sum runs in another order (it is only logged)."""

    @staticmethod
    def forward(ctx, constants: list[torch.Tensor], *tensors: torch.Tensor) -> torch.Tensor:
        differences = torch._foreach_sub(tensors, constants)
        ctx.save_for_backward(*differences)
        return torch.stack(torch._foreach_norm(differences)).float().pow(2).sum()

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        return (None, *torch._foreach_mul(ctx.saved_tensors, 2 * grad))


def squared_distance(tuned: nn.Module, frozen: nn.Module) -> torch.Tensor:
    """||theta_T - theta_F||^2 over all parameters (theta_F constant)."""
    pairs = list(zip(tuned.parameters(), frozen.parameters(), strict=True))
    return _SquaredDistance.apply([b.detach() for _, b in pairs], *(a for a, _ in pairs))


class SgOptTrainer:
    """Holds BERT_T, BERT_F and f; ``loss(texts)`` is the SG-OPT objective on one batch, eager over the padded
    batch; ``packed_loss`` the same over its real tokens only, with no host reads: what the CUDA graphs replay
    (``graphed``, when they apply: :func:`graphs_blocker`)."""

    def __init__(self, config: SgOptConfig, data: SentEvalData):
        self.config, self.data = config, data
        self.resolved = resolve_model(config.model)
        model_config = trainable_config(self.resolved.path, config.model)  # the table's architectures only
        self.device = default_device(config.device)
        self.tokenizer, self.tuned = load_trainable(self.resolved, self.device, remove_dropout=False)
        self.frozen = copy.deepcopy(self.tuned).train(config.guide_dropout).requires_grad_(False)
        self.tuned.embeddings.requires_grad_(False)  # the 0th layer of BERT_T stays fixed
        blocker = graphs_blocker(config, self.device) or fast_path_fault(model_config, "cuda_graphs") or None
        if config.cuda_graphs == "on" and blocker:  # refused before any work
            raise ValueError(f"SG-OPT cuda_graphs: on, but {blocker}")
        runner = graphed_probe_runner if blocker is None else None  # auto measures the step as it will run
        self.precision = training_precision(config.dtype, self.device, self.tuned, graphed_runner=runner)
        if blocker is None and self.precision.dtype == "fp16":  # fp16 through $CONSERT_DTYPE
            if config.cuda_graphs == "on":
                raise ValueError(f"SG-OPT cuda_graphs: on, but {FP16_BLOCKER}")
            blocker = FP16_BLOCKER
        std = getattr(self.tuned.config, "initializer_range", 0.02)
        self.head = SgOptProjection(self.tuned.config.hidden_size, config.projection_dim, std).to(self.device)
        self.criterion = SelfGuidedLoss(config.temperature, config.regularization)
        self.tokens = TokenCache(self.tokenizer, config.max_length)  # each text tokenized once a run
        self.graphed: GraphedStep | None = None
        if blocker is None:
            parameters = [*self.tuned.parameters(), *self.head.parameters()]
            # no cast_once: the regulariser reads BERT_T's weights, whose distance to BERT_F's is far below what
            # bf16 copies of them would resolve
            self.graphed = GraphedStep(self.packed_loss, parameters, self.device, self.precision.dtype, copies=1)

    def loss(self, texts: list[str]) -> torch.Tensor:
        """The batch's loss; when ``graphed``, a replay that has also written the gradients."""
        ids, mask = self.tokens.batch(texts, pad_multiple(self.device))
        if self.graphed is not None:
            return self.graphed(ids, mask)
        return self.padded_loss(*to_device((ids, mask), self.device))

    def padded_loss(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The loss of a padded batch on the device, through the Hugging Face forward passes."""
        batch = {"input_ids": ids, "attention_mask": mask}
        with torch.no_grad():
            hidden = self.frozen(**batch, output_hidden_states=True).hidden_states
            views = layer_views(hidden, mask, self.config.view_pooling)
        return self._objective(self.tuned(**batch).last_hidden_state[:, 0], views)

    def packed_loss(self, ids: torch.Tensor, mask: torch.Tensor, packing: Packing) -> torch.Tensor:
        """:meth:`padded_loss` over the batch's real tokens only (``packing``, on the device), reading nothing
        back to the host: the dense layers skip the padding, as the ConSERT trainer's packed step does."""
        with torch.no_grad():
            states = packed_hidden_states(self.frozen, embed(self.frozen, ids), packing)
            views = packed_layer_views(states, packing, self.config.view_pooling)
        last = packed_hidden_states(self.tuned, embed(self.tuned, ids), packing)[-1]
        return self._objective(last.index_select(0, packing.first), views)  # each row's [CLS]

    def _objective(self, c: torch.Tensor, views: torch.Tensor) -> torch.Tensor:
        """L_opt from the tuned copy's [CLS] vectors ``c`` (B x d) and the frozen copy's views (B x (L+1) x d)."""
        return self.criterion(self.head(c), self.head(views), self.tuned, self.frozen)

    def training_texts(self) -> list[str]:
        return sgopt_texts(self.config.train_texts, self.data)


def sgopt_texts(train_texts: str, data: SentEvalData) -> list[str]:
    """SG-OPT's training texts for its ``train_texts`` setting."""
    stsb = data.sets[STSB]  # the SG-OPT authors' setting: STS-B's sentences
    if train_texts == "stsb":
        return stsb.scored_texts()
    if train_texts == "stsb-train":
        return [s for p in stsb.groups["train"] for s in (p.sent1, p.sent2)]
    if train_texts == "sts":
        return data.unlabeled_texts()
    raise ValueError(f"SG-OPT train_texts must be 'stsb', 'stsb-train' or 'sts', got {train_texts!r}")


@dataclass
class SgOptResult:
    """The exported folder, the loop's outcome, and the trainer (tuned/frozen copies and head)."""

    output_dir: Path
    loop: LoopResult
    trainer: SgOptTrainer
    #: seconds spent capturing the CUDA graphs of the first ``capture_steps`` steps before training
    captured_ahead_s: float = 0.0


def train_sgopt(
    config: SgOptConfig, data: SentEvalData | None = None, progress: bool = True, capture_steps: int | None = None
) -> SgOptResult:
    """Train SG-OPT and export BERT_T (pooling ``cls``) to ``config.output_dir``. ``capture_steps``: as the
    ConSERT trainer's (:func:`consert.train.trainer.train_stage`), for a benchmark."""
    from consert.encode.encoder import SentenceEncoder
    from consert.evaluate.protocol import encode_and_score, spearman_x100

    data = data if data is not None else load_senteval()
    set_seed(config.seed)
    trainer = SgOptTrainer(config, data)
    dev = dev_pairs(data, config.dev_max_pairs)
    encoder = SentenceEncoder(
        trainer.tokenizer, trainer.tuned, max_length=config.max_length, dtype=trainer.precision.dtype, engine="torch"
    )

    def dev_spearman() -> float:
        return spearman_x100(*encode_and_score(encoder, dev, "cls"))

    settings = loop_settings(  # the authors' fixed values beside the config's
        config, encoder.dtype, adam_eps=1e-6, max_grad_norm=1.0, eval_at_start=False, patience_counts="declines"
    )
    parameters = list(trainer.tuned.named_parameters()) + list(trainer.head.named_parameters())
    outcome = run_loop(
        trainer.tuned,
        parameters,
        trainer.training_texts(),
        trainer.loss,
        dev_spearman,
        settings,
        trainer.device,
        desc="train sg-opt",
        progress=progress,
        graphed=trainer.graphed,
        capture_steps=capture_steps,
    )
    record = {
        "method": "sg-opt",
        "base_model": trainer.resolved.name,
        **trainer.resolved.identity.columns(),
        "setting": trainer.resolved.setting,
        **loop_record(outcome),
        "eval_pooling": "cls",
        **provenance_record(trainer.precision, trainer.device, config.model_dump(), data),
    }
    output = export_model(
        trainer.tuned,
        trainer.tokenizer,
        config.output_dir,
        pooling="cls",
        max_length=config.max_length,
        record=record,
        log=outcome.log,
    )
    return SgOptResult(output, outcome, trainer, outcome.captured_ahead_s)
