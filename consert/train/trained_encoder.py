"""The encoder a stage trains: the model and tokenizer loaded for training, its tokens, its augmentation
ratios, and the STS-B dev check that selects its checkpoint."""

from __future__ import annotations

import random
import sys

import numpy as np
import torch
from torch import nn

from consert.configs import ConfigError
from consert.data.senteval import SentEvalData, dev_pairs
from consert.encode.batching import TokenCache, pad_multiple
from consert.encode.encoder import SentenceEncoder
from consert.encode.models import (
    ResolvedModel,
    attention_implementation,
    default_device,
    pretrained_model,
    resolve_model,
    sentence_transformer_modules,
)
from consert.encode.pooling import Pooling
from consert.encode.precision import Precision, configure_cuda_matmul
from consert.evaluate.protocol import encode_and_score, spearman_x100
from consert.train.architectures import fast_path_fault, trainable_config, view_fault
from consert.train.augment import AugmentationRatios
from consert.train.config import TrainConfig
from consert.train.loop import TrainingFault

#: Dev pairs whose cosine similarities all exceed this mean the embedding has collapsed.
COLLAPSE_COSINE = 0.999


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def load_trainable(resolved: ResolvedModel, device: str, remove_dropout: bool):
    """Tokenizer and model for training (:func:`trainable_model`)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolved.path), trainable_model(resolved.path, device, remove_dropout)


def trainable_model(path, device: str, remove_dropout: bool) -> nn.Module:
    """The model of the folder ``path`` on ``device``; with ``remove_dropout`` every dropout probability is 0: each
    the architecture's config names (``*dropout``, ``*dropout_prob``: BERT's hidden and attention dropout,
    DistilBERT's ``dropout``, ModernBERT's attention, embedding and MLP dropout, which it reads as floats), and every
    ``nn.Dropout`` module."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(path)
    if remove_dropout:
        for name, value in vars(config).items():
            if name.endswith(("dropout", "dropout_prob")) and isinstance(value, float):
                setattr(config, name, 0.0)
    model = pretrained_model(path, config=config, attn_implementation=attention_implementation(device))
    if remove_dropout:
        for module in model.modules():
            if isinstance(module, nn.Dropout):
                module.p = 0.0
    return model.to(device)


def check_trainable(config: TrainConfig, resolved: ResolvedModel | None = None) -> None:
    """Refuse, in one :class:`ConfigError` line and before any weights load, a run its model cannot train as the
    config says (:mod:`consert.train.architectures`): an architecture outside the table, a shuffle view on one
    with relative positions only, a fast path asked for (``on``) and not proven on it."""
    resolved = resolved or resolve_model(config.model)
    model_config = trainable_config(resolved.path, config.model)
    if fault := view_fault(model_config, config.views, config.model):
        raise ConfigError(fault)
    for key in ("packed", "cuda_graphs", "compile"):
        if getattr(config, key) == "on" and (fault := fast_path_fault(model_config, key)):
            raise ConfigError(f"{key}: on, but {fault}")


class TrainedEncoder:
    """The model a stage trains, with what every objective reads from it: tokens (each text tokenized once),
    the training pooling, the augmentation ratios, the device; and the dev evaluation with the dev pooling."""

    def __init__(self, config: TrainConfig, data: SentEvalData):
        self.config = config
        self.resolved = resolve_model(config.model)
        check_trainable(config, self.resolved)
        #: The sentence-transformers modules of the model folder that the run neither trains nor exports (said
        #: before training, and in the record): the trainer trains the transformer under its own poolings.
        self.modules_not_kept = [] if self.resolved.trained_here else sentence_transformer_modules(self.resolved.path)
        if self.modules_not_kept:
            print(
                f"consert train: note: {config.model} is a sentence-transformers model whose "
                f"{', '.join(self.modules_not_kept)} follow its transformer; this run trains the transformer under "
                f"train_pooling {config.train_pooling} and exports it with eval_pooling {config.eval_pooling}: those "
                "modules are not trained or kept (`consert evaluate MODEL --pooling model` scores the folder with "
                "them)",
                file=sys.stderr,
            )
        self.device = default_device(config.device)
        if torch.device(self.device).type == "cuda":
            configure_cuda_matmul()
        self.tokenizer, self.model = load_trainable(self.resolved, self.device, config.remove_dropout)
        self.train_pooling = Pooling.parse(config.train_pooling)
        self.tokens = TokenCache(self.tokenizer, config.max_length)
        self.pad_multiple = pad_multiple(self.device)
        self.ratios = AugmentationRatios(
            config.token_cutoff, config.feature_cutoff, config.dropout, config.adversarial_epsilon
        )
        self.dev_pairs = dev_pairs(data, config.dev_max_pairs)
        self.precision: Precision | None = None  # resolved once the plan is known (StepExecution.settle)
        self.dev_encoder: SentenceEncoder | None = None

    @property
    def hidden_size(self) -> int:
        return self.model.config.hidden_size

    @property
    def dtype(self) -> str:
        """The resolved training precision (known once the step execution is settled)."""
        if self.precision is None:
            raise RuntimeError("the stage's precision is resolved by StepExecution.settle(), once the plan is known")
        return self.precision.dtype

    def use_precision(self, precision: Precision) -> None:
        """Train in ``precision``, and evaluate the dev set with the model itself in it."""
        self.precision = precision
        self.dev_encoder = SentenceEncoder(
            self.tokenizer,
            self.model,
            max_length=self.config.evaluation_max_length,
            dtype=self.dtype,
            resolved=self.resolved,
            engine="torch",  # the model changes every step: no ONNX export
        )

    def prefill(self, texts: list[str], planned_texts: int) -> None:
        """Tokenize every training text in one call when the run will see them all (one call over the
        corpus beats one per batch); a short run tokenizes only the batches it draws."""
        if planned_texts >= len(texts):
            self.tokens.ids(texts)

    def dev_spearman(self) -> float:
        """STS-B dev Spearman x 100 with the dev pooling; raises on a collapsed embedding."""
        cosines, gold = encode_and_score(self.dev_encoder, self.dev_pairs, self.config.dev_pooling)
        if np.all(cosines > COLLAPSE_COSINE):
            raise TrainingFault(
                f"embedding collapsed: every STS-B dev pair has cosine > {COLLAPSE_COSINE} "
                f"(min {cosines.min():.5f}); not exporting"
            )
        return spearman_x100(cosines, gold)
