"""Pooling of token vectors into sentence vectors, named by hidden-state index.

Grammar: ``cls`` (the [CLS] vector of the last layer), ``mean`` (masked mean of the last layer) and
``mean:I,J,...`` (masked mean of the average of hidden states I, J, ...; 0 is the embedding output,
-1 the last layer). So ``mean:-2,-1`` is the paper's evaluation pooling and ``mean:0,-1`` is
ConSERT's "first-last"; BERT-whitening's "first-last" is ``mean:1,-1``. Index names avoid the
ambiguity of "first-last", which different codebases use for different layers.

``cls_pooler`` is the [CLS] vector through the model's own pooler (BERT's dense + tanh): SimCSE's ``cls``,
how SimCSE scores its checkpoints (evaluation only: the trainer's poolings are the others). SimCSE's other
pooler names (its ``evaluation.py --pooler``) are accepted as aliases of the same poolings here
(:data:`SIMCSE_POOLERS`); its ``cls`` is not one of them, as ``cls`` here is the [CLS] vector itself, as
ConSERT and BERT-flow use it (SimCSE's ``cls_before_pooler``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch loads when a pooling runs, not when a command's arguments are parsed
    import torch

#: The ConSERT paper's evaluation pooling: average of the last two layers' token vectors.
PAPER_POOLING = "mean:-2,-1"
#: The [CLS] vector through the model's pooler (SimCSE's ``cls``): evaluation only.
POOLER = "cls_pooler"
#: Not a pooling of the harness: the model's own sentence-transformers modules (``consert evaluate``).
MODEL_POOLING = "model"
#: Not a pooling either: the model's own modules (:data:`MODEL_POOLING`) where it has sentence-transformers modules,
#: else ``mean`` (the last layer's tokens): a model of yours (``consert evaluate --pooling auto``).
AUTO_POOLING = "auto"
#: SimCSE's pooler names and the pooling each is here (SimCSE's evaluation.py: ``avg_first_last`` averages
#: hidden states 1 and -1, ``avg_top2`` the last two).
SIMCSE_POOLERS = {"cls_before_pooler": "cls", "avg": "mean", "avg_first_last": "mean:1,-1", "avg_top2": "mean:-2,-1"}
#: What ``cls`` is here, against SimCSE's names (SimCSE's ``cls`` is another vector): said beside ``cls``.
CLS_VS_SIMCSE = "the [CLS] vector before the pooler = SimCSE's cls_before_pooler; SimCSE's cls is cls_pooler here"


@dataclass(frozen=True)
class Pooling:
    """A parsed pooling spec: ``kind`` is ``cls``, ``cls_pooler`` or ``mean``; ``layers`` are hidden-state
    indices."""

    kind: str
    layers: tuple[int, ...]

    @classmethod
    def parse(cls, spec: str | Pooling) -> Pooling:
        """Parse ``cls``, ``mean``, ``mean:I,J,...`` or a SimCSE pooler name; raise ValueError naming the bad
        spec."""
        if isinstance(spec, Pooling):
            return spec
        text = SIMCSE_POOLERS.get(spec.strip(), spec.strip())
        if text in ("cls", POOLER):
            return cls(text, (-1,))
        if text == "mean":
            return cls("mean", (-1,))
        if text.startswith("mean:"):
            try:
                layers = tuple(int(part) for part in text[5:].split(","))
            except ValueError:
                layers = ()
            if layers:
                return cls("mean", layers)
        raise ValueError(
            f"unknown pooling {spec!r}: expected 'cls', '{POOLER}', 'mean' or 'mean:I,J,...' with hidden-state "
            "indices (0 = embedding output, -1 = last layer), e.g. 'mean:-2,-1', or one of SimCSE's "
            f"{', '.join(SIMCSE_POOLERS)}"
        )

    def __str__(self) -> str:
        if self.kind in ("cls", POOLER):
            return self.kind
        return "mean" if self.layers == (-1,) else "mean:" + ",".join(map(str, self.layers))

    @property
    def needs_all_hidden_states(self) -> bool:
        """Whether the model must return every layer (anything but the last layer alone)."""
        return self.layers != (-1,)

    def check_layers(self, num_hidden_states: int) -> None:
        """Raise ValueError if a layer index does not exist in a model with that many hidden states."""
        for layer in self.layers:
            if not -num_hidden_states <= layer < num_hidden_states:
                raise ValueError(
                    f"pooling {self}: hidden-state index {layer} out of range for a model with "
                    f"{num_hidden_states} hidden states (0..{num_hidden_states - 1})"
                )

    def __call__(
        self, hidden_states: Sequence[torch.Tensor], attention_mask: torch.Tensor, pooler: torch.nn.Module | None = None
    ) -> torch.Tensor:
        """Pool ``hidden_states`` (each B x L x d) into B x d; ``attention_mask`` (B x L) masks padding;
        ``pooler``: the model's pooler, which ``cls_pooler`` applies to the last layer."""
        import torch

        self.check_layers(len(hidden_states))
        if self.kind == "cls":
            return hidden_states[-1][:, 0]
        if self.kind == POOLER:
            if pooler is None:
                raise ValueError(f"pooling {POOLER}: the model has no pooler (BERT's dense + tanh over [CLS])")
            return pooler(hidden_states[-1].to(next(pooler.parameters()).dtype))
        tokens = torch.stack([hidden_states[i] for i in self.layers]).float().mean(0)
        return masked_mean(tokens, attention_mask)


def pooling_label(name: str) -> str:
    """``name`` as the user typed it, with what it is here where that may surprise: the harness's spelling of
    another codebase's name (``avg_first_last (mean:1,-1 here)``), and for ``cls`` its SimCSE counterpart
    (:data:`CLS_VS_SIMCSE`). A name that is no pooling of the harness (``model (...)``) is returned as it is."""
    try:
        canonical = str(Pooling.parse(name))
    except ValueError:
        return name
    if name.strip() == "cls":
        return f"{name} ({CLS_VS_SIMCSE})"
    if name.strip() == POOLER:
        return f"{name} (SimCSE's cls)"
    return name if canonical == name.strip() else f"{name} ({canonical} here)"


def masked_mean(tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``tokens`` (B x L x d) over positions where ``mask`` (B x L) is non-zero.

    A row with no unmasked position gives a zero vector rather than NaN.
    """
    weights = mask.to(tokens.dtype).unsqueeze(-1)
    return (tokens * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
