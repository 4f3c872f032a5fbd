"""The ConSERT trainer: unsupervised, NLI-supervised (SBERT-NLI), joint and two-stage variants.

One stage = AdamW with linear warm-up over 10% of the planned steps, gradient clipping, STS-B dev
evaluation every ``eval_every`` steps with the paper's pooling, the best checkpoint kept in memory,
early stopping after ``patience`` evaluations without improvement, and an export of the best
checkpoint in sentence-transformers' format. ``sup-unsup``/``joint-unsup`` run an NLI stage, then
an unsupervised stage that starts from the first stage's best checkpoint.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from consert.data.nli import LABEL_INDEX, SICK_E_LABEL, load_nli
from consert.data.senteval import NliPair, SentEvalData, load_senteval
from consert.encode.batching import TokenCache, pad_multiple, to_device
from consert.encode.encoder import SentenceEncoder
from consert.encode.models import ResolvedModel, attention_implementation, default_device, resolve_model
from consert.encode.pooling import Pooling
from consert.encode.precision import Precision, configure_cuda_matmul, training_precision
from consert.evaluate.protocol import encode_and_score, spearman_x100
from consert.hardware import hardware_summary
from consert.provenance import git_commit, package_versions
from consert.train.augcse import AugmentationDiscriminator, BatchNormProjection, discriminator_loss
from consert.train.augment import AugmentationRatios, fgv_perturbation
from consert.train.config import SUPERVISED_MODES, TrainConfig
from consert.train.export import export_model
from consert.train.graphs import GraphedStep, graphed_probe_runner
from consert.train.loop import LoopSettings, TrainingFault, planned_step_count, run_loop
from consert.train.losses import CONTRASTIVE_LOSSES, NliHead, ProjectionHead, paired_nt_xent
from consert.train.packed import Packing, packed_encoder
from consert.train.recipes import FIRST_STAGE
from consert.train.text_augment import AugmentedText, augment_corpus, spacy_pipeline
from consert.train.views import PackedPass, forward_with_embedding_grad, pooled_forward, two_view_forward, view_forward

#: Dev pairs whose cosine similarities all exceed this mean the embedding has collapsed.
COLLAPSE_COSINE = 0.999
#: ``compile: auto`` compiles the training forward on CUDA for runs of at least this many steps.
COMPILE_MIN_STEPS = 500
#: Training-only projection heads by ``TrainConfig.projection``.
PROJECTION_HEADS = {"mlp": ProjectionHead, "bn_mlp": BatchNormProjection}


@dataclass
class TrainResult:
    """Where the best model went and how it was found."""

    output_dir: Path
    best_step: int
    best_dev_spearman: float
    steps: int
    log: list[dict]
    model: nn.Module | None = None  # the in-memory model, holding the best checkpoint
    tokenizer: object | None = None
    #: AugCSE: per text augmentation, how often it was drawn and how often it changed the text
    augmentation_rates: dict[str, dict[str, float]] = field(default_factory=dict)


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def load_trainable(resolved: ResolvedModel, device: str, remove_dropout: bool):
    """Tokenizer and model for training; with ``remove_dropout`` every dropout probability is 0."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    config = AutoConfig.from_pretrained(resolved.path)
    if remove_dropout:
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob", "dropout", "attention_dropout"):
            if hasattr(config, name):
                setattr(config, name, 0.0)
    model = AutoModel.from_pretrained(
        resolved.path, config=config, attn_implementation=attention_implementation(device)
    )
    if remove_dropout:
        for module in model.modules():
            if isinstance(module, nn.Dropout):
                module.p = 0.0
    return AutoTokenizer.from_pretrained(resolved.path), model.to(device)


def training_texts(config: TrainConfig, data: SentEvalData) -> list[str]:
    """The unlabeled texts (STS corpus or a file), subsampled to ``n_texts`` with the run's seed."""
    if config.train_texts == "sts":
        texts = data.unlabeled_texts()
    else:
        path = Path(config.train_texts)
        if not path.is_file():
            hint = " (`consert download-data --wiki1m` fetches SimCSE's)" if "wiki1m" in path.name else ""
            raise FileNotFoundError(f"train_texts: {path} not found (expected one text per line){hint}")
        texts = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if config.n_texts is not None and config.n_texts < len(texts):
        texts = few_shot_texts(texts, config.n_texts, config.seed, config.upsample)
    return texts


def few_shot_texts(texts: list[str], n: int, seed: int, upsample: bool = True) -> list[str]:
    """The ConSERT authors' few-shot corpus (``main.py --data_proportion p --do_upsampling``): the whole
    corpus shuffled by Python's ``random`` seeded with the run's seed, its first ``n`` texts kept, and,
    upsampled, that list repeated ``int(1 / p)`` times (``p = n / len(texts)``), so it stays at most the
    corpus's size. (Their ``int(p * len)`` keeps 99 texts for ``p = 100 / 89,192``; here exactly n.)"""
    order = list(texts)
    random.Random(seed).shuffle(order)
    chosen = order[:n]
    return chosen * int(1.0 / (n / len(texts))) if upsample else chosen


class _Stage:
    """One training stage: model, optimizer, schedule, losses and the dev evaluation."""

    def __init__(self, config: TrainConfig, data: SentEvalData, supervised: bool):
        self.config, self.supervised = config, supervised
        self.resolved = resolve_model(config.model)
        self.device = config.device or default_device()
        if torch.device(self.device).type == "cuda":
            configure_cuda_matmul()
        self.tokenizer, self.model = load_trainable(self.resolved, self.device, config.remove_dropout)
        self.train_pooling = Pooling.parse(config.train_pooling)
        self.precision: Precision | None = None  # resolved by settle(), once the plan is known
        self.dev_encoder: SentenceEncoder | None = None
        self.tokens = TokenCache(self.tokenizer, config.max_length)
        self.pad_multiple = pad_multiple(self.device)
        self.forward_model: nn.Module = self.model  # compiled by compile_forward when asked
        self.compiled = False
        # off by default: on the H100 the padded compiled step measured faster (30.0 against 27.6 steps/s);
        # both are bound by kernel launches, and the packed one has a third less GPU work (docs/performance.md)
        self.packed = config.packed == "on" and self.train_pooling.layers == (-1,)
        self.packed_encoder = packed_encoder
        self.graphed: GraphedStep | None = None  # the step as CUDA graphs (settle)
        self.ratios = AugmentationRatios(
            config.token_cutoff, config.feature_cutoff, config.dropout, config.adversarial_epsilon
        )
        hidden = self.model.config.hidden_size
        self.head = (
            NliHead(
                hidden,
                features=config.classifier_features,
                bias=config.classifier_bias,
                init_std=config.classifier_init_std,
            ).to(self.device)  # fmt: skip
            if supervised
            else None
        )
        head = PROJECTION_HEADS.get(config.projection)
        self.projection = head(hidden).to(self.device) if head else None
        self.discriminator = (
            AugmentationDiscriminator(hidden, classes=len(config.text_augmentations) + 1).to(self.device)
            if config.discriminator_weight > 0
            else None
        )
        self.dev_pairs = data.sets["STSb"].groups["dev"][: config.dev_max_pairs]

    @property
    def dtype(self) -> str:
        """The resolved training precision (known once :meth:`settle` has run)."""
        if self.precision is None:
            raise RuntimeError("the stage's precision is resolved by settle(), once the plan is known")
        return self.precision.dtype

    def graphs_blocker(self, planned_steps: int) -> str | None:
        """Why this stage cannot (or, under ``cuda_graphs: auto``, should not) train through CUDA
        graphs, whatever the precision; None when it can."""
        config = self.config
        if config.cuda_graphs == "off":
            return "cuda_graphs: off"
        if torch.device(self.device).type != "cuda":
            return f"device {self.device} is not CUDA"
        if self.supervised or config.discriminator_weight > 0:
            return "only the unsupervised contrastive step is graphed (NLI and AugCSE steps stay eager or compiled)"
        if "adversarial" in config.views:
            return "the adversarial view needs a supervised gradient"
        if self.train_pooling.layers != (-1,):
            return f"train_pooling {config.train_pooling}: the packed forward keeps the last layer only"
        if config.cuda_graphs == "auto" and planned_steps < COMPILE_MIN_STEPS:
            return f"auto: {planned_steps} planned steps < {COMPILE_MIN_STEPS}"
        return None

    def settle(self, planned_steps: int, parameters: list[nn.Parameter]) -> None:
        """Once the plan is known: the precision, then how the step runs. CUDA graphs over the packed
        step when ``cuda_graphs`` says so (``auto``: where they apply, on CUDA runs of
        :data:`COMPILE_MIN_STEPS` steps or more; ``dtype: auto`` then measures only the precisions a
        graph can take), else a compiled forward when ``compile`` says so. ``cuda_graphs: on`` where
        they cannot apply is an error that says why."""
        config = self.config
        blocker = self.graphs_blocker(planned_steps)
        runner = graphed_probe_runner if blocker is None else None  # auto measures the step as it will run
        self.precision = training_precision(config.dtype, self.device, self.model, graphed_runner=runner)
        if blocker is None and self.dtype == "fp16":  # asked for explicitly
            blocker = "fp16 trains under a gradient scaler that reads the host"
        self.dev_encoder = SentenceEncoder(
            self.tokenizer,
            self.model,
            max_length=config.evaluation_max_length,
            dtype=self.dtype,
            resolved=self.resolved,
            engine="torch",  # the model changes every step: no ONNX export
        )
        if config.cuda_graphs == "on" and blocker:
            raise ValueError(f"cuda_graphs: on, but {blocker}")
        if blocker is None:
            self.packed = True

            def loss_of(ids: torch.Tensor, mask: torch.Tensor, packing: Packing) -> torch.Tensor:
                return self.contrastive_loss(ids, mask, PackedPass(packing, packed_encoder))

            self.graphed = GraphedStep(loss_of, parameters, self.device, self.dtype)
            return
        self.compile_forward(planned_steps)

    def compile_forward(self, planned_steps: int) -> None:
        """Train through a compiled forward when ``compile`` says so (``auto``: CUDA runs of
        :data:`COMPILE_MIN_STEPS` steps or more, where the compilation pays for itself): the packed
        encoder (dynamic shapes: the real-token count changes every step), else the whole model (one
        graph per padded shape: CUDA batches are padded to multiples of 16). The dev evaluation and the
        export use the model itself."""
        wanted = self.config.compile
        if wanted == "auto":
            wanted = "on" if torch.device(self.device).type == "cuda" and planned_steps >= COMPILE_MIN_STEPS else "off"
        if wanted != "on" or "adversarial" in self.config.views:  # FGV keeps a tensor of the pass: eager
            return
        torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
        if self.packed:
            self.packed_encoder = torch.compile(packed_encoder, dynamic=True)
        else:
            self.forward_model = torch.compile(self.model, dynamic=False)
        self.compiled = True

    def packed_pass(self, mask: torch.Tensor) -> PackedPass | None:
        """The packing of a batch's two views (from the host copy of its mask), or None when not packing."""
        if not self.packed:
            return None
        return PackedPass(Packing.of(mask.repeat(2, 1)).to(self.device), self.packed_encoder)

    def tokenize(self, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Padded ``(input_ids, attention_mask)`` on the device, from ids tokenized once per text."""
        return to_device(self.tokens.batch(texts, self.pad_multiple), self.device)

    def prefill(self, texts: list[str], planned_texts: int) -> None:
        """Tokenize every training text in one call when the run will see them all (one call over the
        corpus beats one per batch); a short run tokenizes only the batches it draws."""
        if planned_texts >= len(texts):
            self.tokens.ids(texts)

    def heads(self) -> list[nn.Module]:
        """The training-only modules whose parameters the optimiser updates besides the encoder's."""
        return [head for head in (self.head, self.projection, self.discriminator) if head is not None]

    def unsupervised_loss(self, texts: list[str]) -> torch.Tensor:
        """``contrastive_weight`` x the contrastive loss (``config.loss``) of two augmented views of each
        text, through the projection head when there is one (SimCSE); with CUDA graphs, a replay that
        also writes the gradients."""
        ids, mask = self.tokens.batch(texts, self.pad_multiple)
        if self.graphed is not None:
            return self.graphed(ids, mask)
        packed = self.packed_pass(mask)
        ids, mask = to_device((ids, mask), self.device)
        return self.contrastive_loss(ids, mask, packed)

    def contrastive_loss(self, ids: torch.Tensor, mask: torch.Tensor, packed: PackedPass | None) -> torch.Tensor:
        """The weighted contrastive loss of a tokenized batch on the device (no host reads: graph-safe)."""
        model, views, pooling = self.forward_model, self.config.views, self.train_pooling
        view1, view2 = two_view_forward(model, ids, mask, views, pooling, self.ratios, packed=packed)
        if self.projection is not None:  # both views in one call: a batch-norm head normalises them together
            view1, view2 = self.projection(torch.cat([view1, view2])).split(len(ids))
        loss = CONTRASTIVE_LOSSES[self.config.loss](view1, view2, self.config.temperature)
        return self.config.contrastive_weight * loss

    def augcse_loss(self, items: list[AugmentedText]) -> torch.Tensor:
        """AugCSE (``diff_cse_mode``): (original, augmented, original) in one dropout pass through the
        encoder and the projection; the contrastive loss on the two originals, plus
        ``discriminator_weight`` x the reversed-gradient discriminator's BCE on (original, augmented)."""
        config, count = self.config, len(items)
        texts = [item.text for item in items]
        ids, mask = self.tokenize(texts + [item.augmented for item in items] + texts)
        pooled = pooled_forward(self.forward_model, ids, mask, self.train_pooling)
        projected = self.projection(pooled) if self.projection is not None else pooled
        anchor, augmented, positive = projected.split(count)
        contrastive = CONTRASTIVE_LOSSES[config.loss](anchor, positive, config.temperature)
        labels = torch.tensor([item.label for item in items], device=self.device)
        return config.contrastive_weight * contrastive + config.discriminator_weight * discriminator_loss(
            self.discriminator, anchor, augmented, labels
        )

    def supervised_loss(self, pairs: list[NliPair], joint: bool) -> torch.Tensor:
        """NLI cross entropy; with ``joint``, plus ``alpha * NT-Xent`` over views of all NLI texts.

        With a clean first view (the authors' joint recipe: none + token cutoff) the classifier's
        forward pass is that view, as in the authors' loss; only the augmented view is encoded again.
        """
        config, count = self.config, len(pairs)
        ids, mask = self.tokenize([p.premise for p in pairs] + [p.hypothesis for p in pairs])
        labels = torch.tensor([LABEL_INDEX[p.label] for p in pairs], device=self.device)
        adversarial = joint and "adversarial" in config.views
        if adversarial:
            pooled, embedded = forward_with_embedding_grad(self.model, ids, mask, self.train_pooling)
        else:
            pooled = pooled_forward(self.forward_model, ids, mask, self.train_pooling)
        cross_entropy = self.head.loss(pooled[:count], pooled[count:], labels)
        if not joint:
            return cross_entropy
        perturbation = None
        if adversarial:
            (gradient,) = torch.autograd.grad(cross_entropy, embedded, retain_graph=True)
            perturbation = fgv_perturbation(gradient.detach(), config.adversarial_epsilon)
        first, second = config.views
        if first == "none":  # the classifier's clean pass is the first view, as the authors' rep_a
            view1 = pooled
            view2 = view_forward(self.forward_model, ids, mask, second, self.train_pooling, self.ratios, perturbation)
        else:
            view1, view2 = two_view_forward(
                self.forward_model, ids, mask, config.views, self.train_pooling, self.ratios, perturbation
            )
        return cross_entropy + config.contrastive_weight * paired_nt_xent(view1, view2, count, config.temperature)

    def dev_spearman(self) -> float:
        """STS-B dev Spearman x 100 with the dev pooling; raises on a collapsed embedding."""
        cosines, gold = encode_and_score(self.dev_encoder, self.dev_pairs, self.config.dev_pooling)
        if np.all(cosines > COLLAPSE_COSINE):
            raise TrainingFault(
                f"embedding collapsed: every STS-B dev pair has cosine > {COLLAPSE_COSINE} "
                f"(min {cosines.min():.5f}); not exporting"
            )
        return spearman_x100(cosines, gold)


def _loop_settings(config: TrainConfig, dtype: str) -> LoopSettings:
    """The stage's optimisation and evaluation settings."""
    return LoopSettings(
        lr=config.lr,
        batch_size=config.batch_size,
        epochs=config.epochs,
        max_steps=config.max_steps,
        warmup_ratio=config.warmup_ratio,
        weight_decay=config.weight_decay,
        adam_eps=config.adam_eps,
        max_grad_norm=config.max_grad_norm,
        eval_every=config.eval_every,
        patience=config.patience,
        eval_at_start=config.eval_at_start,
        seed=config.seed,
        dtype=dtype,
        bias_correction=config.adam_bias_correction,
        eval_grid=config.eval_grid,
        final_state=config.final_state,
    )


def train_stage(config: TrainConfig, data: SentEvalData, supervised_mode: str | None, progress: bool) -> TrainResult:
    """Run one stage (``supervised_mode`` ``sup``/``joint`` on NLI, or ``None`` for unsupervised)."""
    set_seed(config.seed)
    stage = _Stage(config, data, supervised=supervised_mode is not None)
    augmentation_rates: dict[str, dict[str, float]] = {}
    if supervised_mode:
        items: list = load_nli(config.nli_source, data, config.nli_files)

        def loss_fn(batch: list) -> torch.Tensor:
            return stage.supervised_loss(batch, joint=supervised_mode == "joint")
    elif stage.discriminator is not None:
        items, augmentation_rates = augment_corpus(
            training_texts(config, data),
            config.text_augmentations,
            config.seed,
            spacy_pipeline(config.spacy_model),
            progress,
        )
        loss_fn = stage.augcse_loss
    else:
        items = training_texts(config, data)
        loss_fn = stage.unsupervised_loss
    planned_steps = planned_step_count(len(items), config.batch_size, config.epochs, config.max_steps)
    planned = planned_steps * config.batch_size
    if supervised_mode:
        stage.prefill([text for pair in items for text in (pair.premise, pair.hypothesis)], 2 * planned)
    elif stage.discriminator is None:
        stage.prefill(items, planned)
    parameters = list(stage.model.named_parameters())
    for head in stage.heads():
        parameters += [(f"{type(head).__name__}.{name}", value) for name, value in head.named_parameters()]
    stage.settle(planned_steps, [value for _, value in parameters])
    settings = _loop_settings(config, stage.dtype)
    outcome = run_loop(
        stage.model,
        parameters,
        items,
        loss_fn,
        stage.dev_spearman,
        settings,
        stage.device,
        desc=f"train {supervised_mode or 'unsup'}",
        progress=progress,
        computes_gradients=stage.graphed is not None,
    )
    record = {
        "base_model": stage.resolved.base_model,
        "started_from": config.model,
        "stage": config.mode,
        "nli": (SICK_E_LABEL if config.nli_source == "sick-e" else config.nli_source) if supervised_mode else None,
        "setting": stage.resolved.setting,
        "best_step": outcome.best_step,
        "best_dev_spearman": outcome.best_dev,
        "final_state": config.final_state,  # the exported state: the best dev one, or the last
        "exported_step": outcome.final_step,
        "exported_dev_spearman": outcome.final_dev,
        "steps_run": outcome.steps,
        "planned_steps": outcome.planned,
        "train_items": len(items),
        "text_augmentations": augmentation_rates,
        "dev_pooling": config.dev_pooling,
        "eval_pooling": config.eval_pooling,
        "dtype": stage.dtype,
        "precision": stage.precision.describe(),
        "compiled": stage.compiled,
        "packed": stage.packed,
        "cuda_graphs": len(stage.graphed.captured) if stage.graphed else 0,  # graphs captured (shapes seen)
        "hardware": hardware_summary(stage.device),
        "config": config.to_dict(),
        "data_sha256": data.fingerprint,
        "harness_commit": git_commit(),
        "packages": package_versions(),
    }
    stage.graphed = None  # the graphs' memory goes now, not when the cycle collector finds it
    output = export_model(
        stage.model,
        stage.tokenizer,
        config.output_dir,
        pooling=config.eval_pooling,
        max_length=config.max_length,
        record=record,
        log=outcome.log,
    )
    return TrainResult(
        output,
        outcome.best_step,
        outcome.best_dev,
        outcome.steps,
        outcome.log,
        stage.model,
        stage.tokenizer,
        augmentation_rates,
    )


def train(config: TrainConfig, data: SentEvalData | None = None, progress: bool = True) -> TrainResult:
    """Train ConSERT as ``config.mode`` says and export the best checkpoint to ``config.output_dir``.

    A two-stage mode trains its NLI stage first (:meth:`TrainConfig.first_stage`, exported beside
    the output as ``OUTPUT_DIR.stage1``) unless ``stage1_model`` names one already trained; the
    second stage starts from that model with its own recipe.
    """
    data = data if data is not None else load_senteval(config.data)
    if config.mode in SUPERVISED_MODES:  # BERT-flow's NLI encoder trains as SBERT-NLI does: the classifier alone
        return train_stage(config, data, "joint" if config.mode == "joint" else "sup", progress)
    if config.mode not in FIRST_STAGE:  # unsup, simcse, augcse: one unsupervised stage
        return train_stage(config, data, None, progress)
    start = config.stage1_model
    if start is None:
        start = str(train_stage(config.first_stage(), data, FIRST_STAGE[config.mode], progress).output_dir)
    return train_stage(config.replace(model=start), data, None, progress)
