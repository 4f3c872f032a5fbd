"""Sentence encoding: each distinct sentence once, length-sorted batches, any number of poolings.

One forward pass per batch serves every requested pooling, so a model's hidden states are computed
once however many poolings (and baselines built on them) are evaluated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from consert.encode.batching import TokenCache, pad_multiple
from consert.encode.models import ResolvedModel, default_device, load_tokenizer_and_model, resolve_model
from consert.encode.ort_engine import OrtEncoderSession
from consert.encode.pooling import PAPER_POOLING, Pooling
from consert.encode.precision import Precision, autocast, configure_cuda_matmul, inference_precision

BatchObserver = Callable[[Sequence[str], tuple[torch.Tensor, ...], dict[str, torch.Tensor]], None]


#: Sentences per forward pass when none is given: on a CPU, 64 kept the weights and activations of
#: MiniLM in cache (the 7-set evaluation in fp32 was 10% faster than at 128 and 30% faster than at 256,
#: Intel Xeon, 1 thread); a GPU wants fewer, larger batches (launch overhead per batch).
DEFAULT_BATCH_SIZE = {"cpu": 64, "cuda": 512}


def default_batch_size(device: str) -> int:
    """Sentences per forward pass on ``device`` (see :data:`DEFAULT_BATCH_SIZE`)."""
    return DEFAULT_BATCH_SIZE.get(torch.device(device).type, 64)


class SentenceEncoder:
    """A Hugging Face encoder (tokenizer + ``AutoModel``) that turns sentences into pooled vectors.

    Use :meth:`load` to build one from a hub id or local directory; the constructor wraps an
    in-memory model (e.g. one being trained). The model's train/eval mode is restored after encoding.

    Args:
        max_length: tokens per sentence after truncation (the paper uses 64).
        dtype: ``auto`` (measured on this machine, see :mod:`consert.encode.precision`), ``fp32``, ``bf16`` or
            ``fp16`` (CUDA); reduced precisions run under autocast, pooled vectors are float32.
        batch_size: sentences per forward pass (default :func:`default_batch_size`).
        resolved: where the weights came from (for provenance), if known.
        engine: ``torch`` (the default for a model in memory, which may still be training), ``auto``
            (measured with the dtype), or ``onnxruntime`` (fp32 on CPU; :mod:`consert.encode.ort_engine`). The
            ONNX export is taken on first use: a model that changes afterwards needs a new encoder.

    :attr:`precision` holds the resolved choice (:attr:`dtype`, :attr:`engine`, and how it was made).
    """

    def __init__(
        self,
        tokenizer,
        model: torch.nn.Module,
        *,
        max_length: int = 64,
        dtype: str = "auto",
        batch_size: int | None = None,
        resolved: ResolvedModel | None = None,
        engine: str = "torch",
    ):
        self.tokenizer, self.model = tokenizer, model
        if torch.device(self.device).type == "cuda":
            configure_cuda_matmul()  # fp32 on CUDA is TF32 in every process, as the precision probe measures it
        limit = getattr(getattr(model, "config", None), "max_position_embeddings", None)
        if limit is not None and max_length > limit:
            raise ValueError(f"max_length {max_length} exceeds the model's limit of {limit} positions")
        batch_size = batch_size or default_batch_size(self.device)
        if max_length < 2 or batch_size < 1:
            raise ValueError(f"max_length must be >= 2 and batch_size >= 1, got {max_length} and {batch_size}")
        self.max_length, self.batch_size = max_length, batch_size
        self.precision: Precision = inference_precision(dtype, engine, self.device, model)
        self.dtype, self.engine = self.precision.dtype, self.precision.engine
        self.resolved = resolved
        self.tokens = TokenCache(tokenizer, max_length) if tokenizer is not None else None
        self._ort: OrtEncoderSession | None = None

    @classmethod
    def load(
        cls,
        model: str | ResolvedModel,
        max_length: int = 64,
        dtype: str = "auto",
        device: str | None = None,
        batch_size: int | None = None,
        engine: str = "auto",
    ) -> SentenceEncoder:
        """Load ``model`` (hub id, local directory or resolved model) for encoding on ``device``.

        Reduced precisions run under autocast with fp32 weights: on the stand-in every set-level
        Spearman stays within 0.03 of fp32 that way, while bf16 weights (LayerNorm and softmax in
        bf16 too) moved one by 0.08, at the same speed. ``auto`` precision and engine are measured
        on this machine (:mod:`consert.encode.precision`).
        """
        resolved = model if isinstance(model, ResolvedModel) else resolve_model(model)
        tokenizer, network = load_tokenizer_and_model(resolved, default_device(device))
        return cls(
            tokenizer,
            network,
            max_length=max_length,
            dtype=dtype,
            batch_size=batch_size,
            resolved=resolved,
            engine=engine,
        )

    @property
    def device(self) -> str:
        """Device type the model lives on (``cpu`` or ``cuda``)."""
        return next(self.model.parameters()).device.type

    def encode(
        self, sentences: Sequence[str], pooling: str = PAPER_POOLING, progress: bool = True, dropout: bool = False
    ) -> np.ndarray:
        """Encode ``sentences`` (N) into an N x d float32 array with one pooling.

        ``dropout``: run the model in train mode (dropout on, no gradients; PyTorch engine), as
        BERT-flow's encoder while the flow is fitted.
        """
        return self.encode_poolings(sentences, [pooling], progress=progress, dropout=dropout)[
            str(Pooling.parse(pooling))
        ]

    def encode_poolings(
        self,
        sentences: Sequence[str],
        poolings: Sequence[str],
        progress: bool = True,
        observers: Sequence[BatchObserver] = (),
        dropout: bool = False,
    ) -> dict[str, np.ndarray]:
        """Encode ``sentences`` once and return ``{pooling name: N x d float32 array}``.

        Duplicate sentences are encoded once; batches are sorted by token length so that padding
        is minimal; padding positions are masked in every mean pooling. Each of ``observers`` is
        called with every batch's sentences, hidden states and padded batch (for statistics that
        need token vectors, such as :class:`consert.encode.rank_sums.RankSumCollector`).
        """
        specs = [Pooling.parse(p) for p in poolings]
        dim = self.model.config.hidden_size
        unique = list(dict.fromkeys(sentences))
        outputs = {spec: np.zeros((len(unique), dim), dtype=np.float32) for spec in specs}
        need_all = bool(observers) or any(spec.needs_all_hidden_states for spec in specs)
        pooler = getattr(self.model, "pooler", None)
        for rows, hidden, batch in self.forward_batches(unique, need_all, progress, dropout):
            for spec in specs:
                outputs[spec][rows] = spec(hidden, batch["attention_mask"], pooler).float().cpu().numpy()
            for observe in observers:
                observe([unique[row] for row in rows], hidden, batch)
        row_of = {sentence: row for row, sentence in enumerate(unique)}
        rows = np.fromiter((row_of[s] for s in sentences), dtype=np.int64, count=len(sentences))
        return {str(spec): matrix[rows] for spec, matrix in outputs.items()}

    def forward_batches(
        self, unique: Sequence[str], all_hidden_states: bool = True, progress: bool = True, dropout: bool = False
    ) -> Iterator[tuple[np.ndarray, tuple[torch.Tensor, ...], dict[str, torch.Tensor]]]:
        """Run the model over ``unique`` sentences in length-sorted batches (eval mode unless
        ``dropout``, no grad).

        Yields ``(rows, hidden_states, batch)``: the rows of ``unique`` in the batch, the hidden
        states (all layers, or only the last one), and the padded ``input_ids``/``attention_mask``.
        """
        token_ids = self.tokens.ids(list(unique)) if unique else []
        order = np.argsort([len(ids) for ids in token_ids], kind="stable")[::-1]
        multiple = pad_multiple(self.device)
        was_training = self.model.training
        self.model.train(dropout)
        try:
            with torch.inference_mode(), autocast(self.device, self.dtype):
                starts = range(0, len(order), self.batch_size)
                for start in tqdm(starts, desc="encoding", unit="batch", disable=not progress, leave=False):
                    rows = order[start : start + self.batch_size]
                    input_ids, mask = self.tokens.pad([token_ids[i] for i in rows], multiple)
                    batch = {"input_ids": input_ids, "attention_mask": mask}
                    yield rows, self._hidden_states(batch, all_hidden_states, dropout), batch
        finally:
            self.model.train(was_training)

    def _hidden_states(
        self, batch: dict[str, torch.Tensor], all_hidden_states: bool, dropout: bool = False
    ) -> tuple[torch.Tensor, ...]:
        """The model's hidden states for one padded batch (moved to the model's device in place)."""
        if self.engine == "onnxruntime" and not dropout:  # the ONNX export has no dropout
            if self._ort is None:
                self._ort = OrtEncoderSession(self.model)
            return self._ort.run(batch["input_ids"], batch["attention_mask"], all_hidden_states)
        pin = self.device == "cuda"
        for key, value in batch.items():
            batch[key] = (value.pin_memory() if pin else value).to(self.model.device, non_blocking=pin)
        out = self.model(**batch, output_hidden_states=all_hidden_states)
        return out.hidden_states if all_hidden_states else (out.last_hidden_state,)
