"""The paper's qualitative claims, checked on whatever ran: ``results/claims.csv``.

The claims are data (``results/published/consert_claims.yaml``: id, section, where in the paper, kind
and the cells it rests on); this module has one small check per kind. Each row says the verdict
(``holds`` / ``does not hold`` / ``not run``), the cells used, a paired-bootstrap p-value where the
claim compares two rows (the share of resamples in which the claimed winner does not win; the
resamples are shared by every model, see :mod:`consert.bootstrap`), and ``comparable``: whether the
rows used were produced in the paper's setting. A stand-in run's verdicts are shown, never passed
off as the paper's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from .bootstrap import load_replicates
from .compare import not_comparable_reason
from .data import DATASETS

CLAIMS_FILE = "consert_claims.yaml"
CLAIM_COLUMNS = (
    "id",
    "section",
    "where",
    "in_paper",
    "size",
    "cells",
    "verdict",
    "p_value",
    "detail",
    "comparable",
    "reason",
    "setting",
)

#: (holds or None when it cannot be decided, p-value, cells used, detail, the table rows used)
Outcome = tuple[bool | None, float, str, str, list[pd.Series]]


def load_claims(path: str | Path) -> list[dict[str, Any]]:
    """The claims of a YAML file (a list of mappings with at least id, section, where, kind, artifact)."""
    claims = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    for claim in claims:
        missing = {"id", "section", "where", "kind", "artifact"} - set(claim)
        if missing:
            raise ValueError(f"{path}: claim {claim.get('id', '?')!r} lacks {sorted(missing)}")
        if claim["kind"] not in CHECKS:
            raise ValueError(f"{path}: claim {claim['id']!r}: unknown kind {claim['kind']!r}; known: {sorted(CHECKS)}")
    return claims


class _Tables:
    """The artifact CSVs under a results folder, read once; None for an artifact that is absent."""

    def __init__(self, results: Path, config: dict[str, Any], root: Path):
        from .paper import LAYOUT

        self.results, self.config, self.root, self.layout = results, config, root, LAYOUT
        self._cache: dict[str, pd.DataFrame | None] = {}

    def __call__(self, artifact: str) -> pd.DataFrame | None:
        if artifact not in self._cache:
            path = self.results / self.layout[artifact][0]
            self._cache[artifact] = pd.read_csv(path) if path.is_file() else None
        return self._cache[artifact]

    def replicates(self, artifact: str, method: str, column: str) -> np.ndarray | None:
        """Bootstrap replicates of one table row's cell, averaged over its seeds (None when not kept)."""
        from .paper import SOURCES

        found = []
        for labels, path, pooling in SOURCES[artifact](self.config):
            if labels.get("method") == method:
                stored = load_replicates(self.root / path, pooling)
                if (column, "all") in stored:
                    found.append(stored[(column, "all")])
        return np.mean(found, axis=0) if found else None


def _row(table: pd.DataFrame | None, method: str) -> pd.Series | None:
    if table is None or "method" not in table:
        return None
    rows = table[table.method == method]
    return rows.iloc[0] if len(rows) else None


def _greater(claim: dict, tables: _Tables, size: str) -> Outcome:
    a_name, b_name, column = claim["a"].format(size=size), claim["b"].format(size=size), claim["column"]
    table = tables(claim["artifact"])
    a, b = _row(table, a_name), _row(table, b_name)
    cells = f"{claim['artifact']}: {a_name} vs {b_name}, {column}"
    if a is None or b is None:
        return None, np.nan, cells, "row not run", []
    p_value = np.nan
    ra, rb = tables.replicates(claim["artifact"], a_name, column), tables.replicates(claim["artifact"], b_name, column)
    if ra is not None and rb is not None:
        p_value = float(np.mean(ra - rb <= 0))
    detail = f"{a[column]:.2f} vs {b[column]:.2f} (difference {a[column] - b[column]:+.2f})"
    return bool(a[column] > b[column]), p_value, cells, detail, [a, b]


def _greater_on_every_set(claim: dict, tables: _Tables, size: str) -> Outcome:
    a_name, b_name = claim["a"].format(size=size), claim["b"].format(size=size)
    table = tables(claim["artifact"])
    a, b = _row(table, a_name), _row(table, b_name)
    cells = f"{claim['artifact']}: {a_name} vs {b_name}, each of the 7 sets"
    if a is None or b is None:
        return None, np.nan, cells, "row not run", []
    losing = [name for name in DATASETS if not a[name] > b[name]]
    detail = "wins on every set" if not losing else f"does not win on {', '.join(losing)}"
    return not losing, np.nan, cells, detail, [a, b]


def _heatmap(claim: dict, tables: _Tables, size: str, best: bool) -> Outcome:
    table = tables("figure5")
    cell = tuple(claim["cell"])
    cells = f"figure5: {cell[0]} + {cell[1]} among the pairs trained"
    if table is None:
        return None, np.nan, cells, "artifact not run", []
    table = table[table["size"] == size]
    chosen = table[(table.view1 == cell[0]) & (table.view2 == cell[1])]
    if chosen.empty:
        return None, np.nan, cells, f"the {cell[0]} + {cell[1]} cell was not run", []
    value = float(chosen.Avg.iloc[0])
    extreme = table.Avg.max() if best else table.Avg.min()
    top = table.loc[table.Avg.idxmax() if best else table.Avg.idxmin()]
    augmentations = sorted(set(table.view1))
    detail = (
        f"{value:.2f}; {'best' if best else 'worst'} cell {top.view1} + {top.view2} at {extreme:.2f} "
        f"(augmentations run: {', '.join(augmentations)})"
    )
    return bool(value >= extreme if best else value <= extreme), np.nan, cells, detail, [chosen.iloc[0]]


def _peak_in_range(claim: dict, tables: _Tables, size: str) -> Outcome:
    table = tables("figure7")
    cells = f"figure7: argmax temperature in [{claim['low']}, {claim['high']}], the largest one worst"
    if table is None:
        return None, np.nan, cells, "artifact not run", []
    curve = table[table["size"] == size].sort_values("temperature")
    inside = curve.temperature.between(claim["low"], claim["high"])
    if len(curve) < 3 or not inside.any():
        return None, np.nan, cells, f"temperatures run: {curve.temperature.tolist()} (too few to decide)", []
    peak = float(curve.loc[curve.Avg.idxmax(), "temperature"])
    largest_worst = bool(curve.Avg.iloc[-1] == curve.Avg.min())
    detail = f"peak at {peak:g}; largest temperature {curve.temperature.iloc[-1]:g} is the worst: {largest_worst}"
    return bool(claim["low"] <= peak <= claim["high"] and largest_worst), np.nan, cells, detail, [curve.iloc[0]]


def _topk_gain(claim: dict, tables: _Tables, size: str) -> Outcome:
    table = tables("figure4")
    cells = f"figure4: BERT-{size} best k > 0 vs k = 0"
    if table is None or table[table.model == f"BERT-{size}"].empty:
        return None, np.nan, cells, "curve not run", []
    curve = table[table.model == f"BERT-{size}"].set_index("k")
    best_k = int(curve.Avg.drop(index=0).idxmax())
    detail = f"{curve.Avg.loc[best_k]:.2f} at k = {best_k} vs {curve.Avg.loc[0]:.2f} with nothing removed"
    return bool(curve.Avg.loc[best_k] > curve.Avg.loc[0]), np.nan, cells, detail, [curve.iloc[0]]


def _more_texts_help(claim: dict, tables: _Tables, size: str) -> Outcome:
    table = tables("figure6")
    cells = "figure6: unsup, all texts vs the fewest"
    if table is None:
        return None, np.nan, cells, "artifact not run", []
    curve = table[(table["size"] == size) & (table.variant == "unsup")]
    counts = pd.to_numeric(curve.n_texts.where(curve.n_texts.astype(str) != "all"), errors="coerce")
    if len(curve) < 2 or counts.isna().sum() != 1:
        return None, np.nan, cells, "needs a few-shot size and 'all'", []
    fewest, full = curve.loc[counts.idxmin()], curve[counts.isna()].iloc[0]
    detail = f"{full.Avg:.2f} with all texts vs {fewest.Avg:.2f} with {fewest.n_texts}"
    return bool(full.Avg > fewest.Avg), np.nan, cells, detail, [full, fewest]


def _not_monotonic(claim: dict, tables: _Tables, size: str) -> Outcome:
    table = tables("table4")
    cells = "table4: Avg by batch size"
    if table is None:
        return None, np.nan, cells, "artifact not run", []
    curve = table[table["size"] == size].sort_values("batch_size")
    if len(curve) < 3:
        return None, np.nan, cells, "needs three batch sizes", []
    steps = np.diff(curve.Avg.to_numpy())
    detail = ", ".join(f"{b}: {v:.2f}" for b, v in zip(curve.batch_size, curve.Avg, strict=True))
    return bool((steps < 0).any()), np.nan, cells, detail, [curve.iloc[0]]


CHECKS: dict[str, Callable[[dict, _Tables, str], Outcome]] = {
    "greater": _greater,
    "greater_on_every_set": _greater_on_every_set,
    "best_cell": lambda claim, tables, size: _heatmap(claim, tables, size, best=True),
    "worst_cell": lambda claim, tables, size: _heatmap(claim, tables, size, best=False),
    "peak_in_range": _peak_in_range,
    "topk_gain": _topk_gain,
    "more_texts_help": _more_texts_help,
    "not_monotonic": _not_monotonic,
}


def evaluate_claims(
    claims: list[dict[str, Any]], results: Path, config: dict[str, Any], root: Path = Path(".")
) -> pd.DataFrame:
    """One row per claim and model size (claims about a size-free figure: the figures' size)."""
    from .paper import figure_size

    tables = _Tables(results, config, root)
    rows = []
    for claim in claims:
        templated = "{size}" in str(claim.get("a", ""))
        for size in list(config["models"]) if templated else [figure_size(config)]:
            holds, p_value, cells, detail, used = CHECKS[claim["kind"]](claim, tables, size)
            # rows without an encoder column (figure curves) are judged by their setting alone
            reasons = {not_comparable_reason(row, size if "base_model" in row.index else None) for row in used}
            reasons = sorted(r for r in reasons if r)
            settings = sorted({str(row.get("setting", "")) for row in used if str(row.get("setting", ""))})
            verdict = "not run" if holds is None else ("holds" if holds else "does not hold")
            rows.append(
                {
                    "id": claim["id"],
                    "section": claim["section"],
                    "where": claim["where"],
                    "in_paper": claim.get("in_paper", True),
                    "size": size,
                    "cells": cells,
                    "verdict": verdict,
                    "p_value": p_value,
                    "detail": detail,
                    "comparable": holds is not None and not reasons,
                    "reason": "; ".join(reasons),
                    "setting": "; ".join(settings),
                }
            )
    return pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))
