"""The encoder a stage trains: the model and tokenizer loaded for training, its tokens, its augmentation
ratios, and the STS-B dev check that selects its checkpoint."""

from __future__ import annotations

import random

import numpy as np
import torch
from torch import nn

from consert.data.senteval import SentEvalData, dev_pairs
from consert.encode.batching import TokenCache, pad_multiple
from consert.encode.encoder import SentenceEncoder
from consert.encode.models import ResolvedModel, attention_implementation, default_device, resolve_model
from consert.encode.pooling import Pooling
from consert.encode.precision import Precision, configure_cuda_matmul
from consert.evaluate.protocol import encode_and_score, spearman_x100
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


class TrainedEncoder:
    """The model a stage trains, with what every objective reads from it: tokens (each text tokenized once),
    the training pooling, the augmentation ratios, the device; and the dev evaluation with the dev pooling."""

    def __init__(self, config: TrainConfig, data: SentEvalData):
        self.config = config
        self.resolved = resolve_model(config.model)
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
