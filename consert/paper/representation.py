"""The representation diagnostics table: anisotropy, alignment, uniformity and cosine by gold bin of
BERT, every baseline and every trained run, read from their evaluation CSVs (nothing is encoded).

:mod:`consert.evaluate.diagnostics` computes the values when a model is evaluated; this module gathers
them per method, averages seeds, and sets each row beside untrained BERT's value with the same pooling.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from consert import row_labels
from consert.evaluate.diagnostics import DIAGNOSTIC_COLUMNS
from consert.io import text_column

#: The label columns of a diagnostics row.
LABELS = ("method", "size", "mode", "dataset", "pooling", "setting")


def bert_reference(size: str, pooling: str) -> str:
    """The method label of untrained BERT with ``pooling`` (Table 2's rows)."""
    return row_labels.bert(size, pooling)


def diagnostics_table(sources: list[tuple[dict[str, Any], str, str | None]], read) -> pd.DataFrame:
    """One row per (method, dataset) with the diagnostics averaged over seeds, ``n_seeds``, and the
    anisotropy of untrained BERT of the same size and pooling (``bert_anisotropy``) with the difference."""
    frames = []
    seen: set[tuple[str, str | None, str]] = set()
    for labels, path, pooling in sources:
        key = (path, pooling, labels["method"])
        if key in seen:
            continue
        seen.add(key)
        frame = read(path)
        missing = [c for c in DIAGNOSTIC_COLUMNS if c not in frame.columns]
        if missing:
            raise ValueError(f"{path}: no representation diagnostics ({', '.join(missing)}); evaluate it again")
        rows = frame[frame.subset == "all"]
        if pooling is not None:
            rows = rows[rows.pooling == pooling]
        frames.append(
            rows[["dataset", "pooling", "setting", *DIAGNOSTIC_COLUMNS]].assign(
                method=labels["method"],
                size=labels.get("size", "-"),
                mode=labels.get("mode", ""),
                seed=labels.get("seed", ""),
            )
        )
    table = pd.concat(frames, ignore_index=True)
    table["setting"] = text_column(table, "setting")
    grouped = table.groupby(list(LABELS), sort=False, dropna=False)
    means = grouped[list(DIAGNOSTIC_COLUMNS)].mean().reset_index()
    means["n_seeds"] = grouped.size().to_numpy()
    reference = means.set_index(["method", "dataset"]).anisotropy
    keys = zip(means["size"], means.pooling, means.dataset, strict=True)
    means["bert_anisotropy"] = [reference.get((bert_reference(s, p), d), float("nan")) for s, p, d in keys]
    means["anisotropy_minus_bert"] = means.anisotropy - means.bert_anisotropy
    return means
