"""The names of the tables' rows, built here and nowhere else: the join between a reproduced row and its published
one (``consert.verdict.compare`` pairs them by these names), the labels the planner gives its runs, the builders'
sources, the design's cells and the diagnostics table's rows. A name built elsewhere could drift from the published
tables' spelling and leave a row uncompared without a fault; a test finds no row label's f-string outside this module.
"""

from __future__ import annotations

#: What marks a model of yours (the config's ``yours:``): its rows' label, their ``size`` in the tables, their
#: ``status`` and ``role`` in ``comparison.csv``, outside the gate (which reads ``compared`` rows) and every verdict.
YOURS = "yours"


def consert(size: str, setting: str | None = None) -> str:
    """A ConSERT row: ``ConSERT-base``; of a Table 3 setting or a sweep's point, ``ConSERT-base sup``."""
    return f"ConSERT-{size}" + (f" {setting}" if setting else "")


def method(label: str, size: str) -> str:
    """A trainable method of the contrastive family by its label: ``SimCSE-base``."""
    return f"{label}-{size}"


def bert(size: str, pooling: str | None = None) -> str:
    """Untrained BERT: ``BERT-base`` (a figure's model, a published row), with a pooling ``BERT-base (cls)``."""
    return f"BERT-{size}" + (f" ({pooling})" if pooling else "")


def flow(size: str, nli: bool = False) -> str:
    """BERT-flow: ``BERT-base-flow``; fitted on the NLI encoder (Table 3), ``BERT-base-flow (NLI)``."""
    return f"BERT-{size}-flow" + (" (NLI)" if nli else "")


def whitening(size: str, pooling: str, k: int | None) -> str:
    """BERT-whitening on a pooling, keeping ``k`` dimensions (all: None): ``BERT-base-whitening-256 (cls)``."""
    return f"BERT-{size}-whitening" + (f"-{k}" if k else "") + f" ({pooling})"


def baseline(size: str, label: str) -> str:
    """A baseline of a table (its record names the table: :func:`baselines.in_table`): ``BERT-base-ABTT``."""
    return f"BERT-{size}-{label}"


def sgopt(size: str) -> str:
    """SG-OPT's row: ``BERT-base-SG-OPT``."""
    return f"BERT-{size}-SG-OPT"


def sbert_nli(size: str) -> str:
    """Table 3's published SBERT-NLI re-implementation: ``SBERT-base-NLI (re-impl.)``."""
    return f"SBERT-{size}-NLI (re-impl.)"


def yours(name: str) -> str:
    """A model of yours as the tables name its row: ``mine (yours)``."""
    return f"{name} ({YOURS})"
