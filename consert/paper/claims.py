"""The paper's claims, checked on whatever ran: ``results/claims.csv``.

The claims are data (``results/published/consert_claims.yaml``): each quotes the paper's sentence,
says where it stands, and how it is tested (``test``):

* ``direction``: the point estimates lie on the stated side ("outperforms", "better", "the best");
* ``significant``: the sentence says "significantly", so the paired-bootstrap p-value, Holm-adjusted
  over the run's comparable "significant" claims (the ones a p-value decides), must be below ``alpha``;
* ``within``: the sentence says a difference is small; the point estimate lies within its ``margin``.

A claim comparing two rows gets a one-sided paired-bootstrap p-value, ``(k + 1) / (B + 1)`` with k the
resamples in which the claimed winner does not win (the resamples are shared by every model scored on
the same pairs, see :mod:`consert.evaluate.bootstrap`); one that needs every one of several comparisons takes
the largest of their p-values (an intersection-union test). The p-values of one run's comparable
"significant" claims are Holm-adjusted together (``p_adjusted``); the others show their raw p-value.
``comparable`` says whether the rows used were produced in the paper's setting: a stand-in run's
verdicts are shown, never passed off as the paper's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from scipy import stats

from consert.data.senteval import DATASETS
from consert.io import load_replicates
from consert.paper.compare import not_comparable_reason
from consert.paper.tables import authors_topk_k
from consert.paper.yardstick import DEFAULT_ALPHA, bootstrap_p_value, holm

CLAIMS_FILE = "consert_claims.yaml"
TESTS = ("direction", "significant", "within")
CLAIM_COLUMNS = (
    "id",
    "section",
    "where",
    "quote",
    "in_paper",
    "size",
    "test",
    "cells",
    "verdict",
    "p_value",
    "p_adjusted",
    "detail",
    "comparable",
    "reason",
    "setting",
)


@dataclass
class Outcome:
    """What one check found: whether the point estimates say the claim holds (None: cannot be decided),
    the p-value of the claimed direction (NaN without replicates), the cells, a detail line, the rows used."""

    holds: bool | None
    p_value: float
    cells: str
    detail: str
    used: list[pd.Series]


def load_claims(path: str | Path) -> list[dict[str, Any]]:
    """The claims of a YAML file (a list of mappings with at least id, section, where, quote, kind, test)."""
    claims = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    for claim in claims:
        missing = {"id", "section", "where", "quote", "kind", "test"} - set(claim)
        if missing:
            raise ValueError(f"{path}: claim {claim.get('id', '?')!r} lacks {sorted(missing)}")
        if claim["kind"] not in CHECKS:
            raise ValueError(f"{path}: claim {claim['id']!r}: unknown kind {claim['kind']!r}; known: {sorted(CHECKS)}")
        if claim["test"] not in TESTS:
            raise ValueError(f"{path}: claim {claim['id']!r}: unknown test {claim['test']!r}; known: {TESTS}")
    return claims


def _format(cell: dict[str, Any], size: str) -> dict[str, str]:
    return {key: str(value).format(size=size) for key, value in cell.items()}


def _describe(cell: dict[str, str]) -> str:
    labels = ", ".join(f"{value}" for key, value in cell.items() if key != "artifact")
    return f"{cell['artifact']}: {labels}"


class Tables:
    """The artifact CSVs under a results folder, read once, and the bootstrap replicates of their rows."""

    def __init__(self, results: Path, config: dict[str, Any], root: Path):
        from consert.paper.artifacts import LAYOUT, SOURCES

        self.results, self.config, self.root = results, config, root
        self.layout, self.sources = LAYOUT, SOURCES
        self._cache: dict[str, pd.DataFrame | None] = {}

    def __call__(self, artifact: str) -> pd.DataFrame | None:
        """The artifact's table, or None when it is absent."""
        if artifact not in self._cache:
            path = self.results / self.layout[artifact][0]
            self._cache[artifact] = pd.read_csv(path) if path.is_file() else None
        return self._cache[artifact]

    def row(self, cell: dict[str, str], size: str) -> pd.Series | None:
        """The row of ``cell`` (``artifact`` and label values, compared as text; rows of other sizes skipped)."""
        table = self(cell["artifact"])
        labels = {key: value for key, value in cell.items() if key != "artifact"}
        if table is None or not set(labels) <= set(table.columns):
            return None
        chosen = table
        if "size" in table.columns and "size" not in labels and "method" not in labels:
            chosen = chosen[chosen["size"].astype(str) == size]
        for key, value in labels.items():
            chosen = chosen[chosen[key].astype(str) == value]
        return chosen.iloc[0] if len(chosen) else None

    def replicates(self, cell: dict[str, str], size: str, column: str) -> np.ndarray | None:
        """Bootstrap replicates of one cell, averaged over its seeds (None when none were kept)."""
        labels = {key: value for key, value in cell.items() if key != "artifact"}
        found = []
        for source_labels, path, pooling in self.sources[cell["artifact"]](self.config):
            text = {key: str(value) for key, value in source_labels.items()}
            if "size" in text and "size" not in labels and "method" not in labels and text["size"] != size:
                continue
            if all(text.get(key) == value for key, value in labels.items()):
                stored = load_replicates(self.root / path, pooling)
                if (column, "all") in stored:
                    found.append(stored[(column, "all")])
        return np.mean(found, axis=0) if found else None


def _paired_p(tables: Tables, a: dict[str, str], b: dict[str, str], size: str, column: str) -> float:
    """One-sided paired-bootstrap p-value that ``a`` does not beat ``b`` on ``column`` (NaN without replicates)."""
    ra, rb = tables.replicates(a, size, column), tables.replicates(b, size, column)
    if ra is None or rb is None or len(ra) != len(rb):
        return np.nan
    return bootstrap_p_value(ra - rb)


def _largest(p_values: list[float]) -> float:
    """The intersection-union p-value of several comparisons: their largest; NaN if any is missing."""
    return float("nan") if not p_values or any(np.isnan(p) for p in p_values) else max(p_values)


def _two_rows(claim: dict, tables: Tables, size: str) -> tuple[dict, dict, pd.Series | None, pd.Series | None]:
    a, b = _format(claim["a"], size), _format(claim["b"], size)
    return a, b, tables.row(a, size), tables.row(b, size)


def _two_cells(claim: dict, tables: Tables, size: str, within: bool) -> Outcome:
    """``a`` beats ``b`` on ``column`` (a paired p-value where replicates were kept), or, ``within``, the two
    differ by less than the claim's ``margin``."""
    column = claim.get("column", "Avg")
    margin = float(claim["margin"]) if within else None
    a, b, row_a, row_b = _two_rows(claim, tables, size)
    relation = f"|{_describe(a)} - {_describe(b)}| < {margin:g}" if within else f"{_describe(a)} vs {_describe(b)}"
    cells = f"{relation}, {column}"
    if row_a is None or row_b is None:
        return Outcome(None, np.nan, cells, "row not run", [])
    difference = row_a[column] - row_b[column]
    margin_text = f", margin {margin:g}" if within else ""
    detail = f"{row_a[column]:.2f} vs {row_b[column]:.2f} (difference {difference:+.2f}{margin_text})"
    if within:
        return Outcome(bool(abs(difference) < margin), np.nan, cells, detail, [row_a, row_b])
    return Outcome(bool(difference > 0), _paired_p(tables, a, b, size, column), cells, detail, [row_a, row_b])


def _greater_on_every_set(claim: dict, tables: Tables, size: str) -> Outcome:
    a, b, row_a, row_b = _two_rows(claim, tables, size)
    cells = f"{_describe(a)} vs {_describe(b)}, each of the 7 sets"
    if row_a is None or row_b is None:
        return Outcome(None, np.nan, cells, "row not run", [])
    losing = [name for name in DATASETS if not row_a[name] > row_b[name]]
    detail = "wins on every set" if not losing else f"does not win on {', '.join(losing)}"
    p_value = _largest([_paired_p(tables, a, b, size, name) for name in DATASETS])
    return Outcome(not losing, p_value, cells, detail, [row_a, row_b])


def _greater_every_pair(claim: dict, tables: Tables, size: str) -> Outcome:
    winners = [_format(cell, size) for cell in claim["winners"]]
    losers = [_format(cell, size) for cell in claim["losers"]]
    column = claim.get("column", "Avg")
    cells = f"each of {[_describe(c) for c in winners]} vs each of {[_describe(c) for c in losers]}, {column}"
    rows = {id(cell): tables.row(cell, size) for cell in (*winners, *losers)}
    if any(row is None for row in rows.values()):
        return Outcome(None, np.nan, cells, "cells not run", [])
    pairs = [(w, lo) for w in winners for lo in losers]
    margins = [rows[id(w)][column] - rows[id(lo)][column] for w, lo in pairs]
    p_values = [_paired_p(tables, w, lo, size, column) for w, lo in pairs]
    detail = f"smallest winning margin {min(margins):+.2f}"
    return Outcome(min(margins) > 0, _largest(p_values), cells, detail, list(rows.values()))


def _best_cell(claim: dict, tables: Tables, size: str) -> Outcome:
    table = tables("figure5")
    view1, view2 = claim["cell"]
    cells = f"figure5: {view1} + {view2} among the pairs trained"
    if table is None:
        return Outcome(None, np.nan, cells, "artifact not run", [])
    table = table[table["size"] == size]
    chosen = table[(table.view1 == view1) & (table.view2 == view2)]
    if chosen.empty:
        return Outcome(None, np.nan, cells, f"the {view1} + {view2} cell was not run", [])
    value = float(chosen.Avg.iloc[0])
    # the runner-up among the other runs (a mirrored cell of an unordered heatmap is the same run)
    others = table[table.trained_as != chosen.trained_as.iloc[0]] if "trained_as" in table else table.drop(chosen.index)
    if others.empty:
        return Outcome(None, np.nan, cells, "only one pair was run", [])
    second = others.loc[others.Avg.idxmax()]
    cell = {"artifact": "figure5", "view1": view1, "view2": view2}
    runner = {"artifact": "figure5", "view1": str(second.view1), "view2": str(second.view2)}
    augmentations = ", ".join(sorted(set(table.view1)))
    detail = f"{value:.2f}; best other run {second.view1} + {second.view2} at {second.Avg:.2f} (run: {augmentations})"
    p_value = _paired_p(tables, cell, runner, size, "Avg")
    return Outcome(bool(value > second.Avg), p_value, cells, detail, [chosen.iloc[0]])


def _peak_in_range(claim: dict, tables: Tables, size: str) -> Outcome:
    table = tables("figure7")
    low, high = claim["low"], claim["high"]
    cells = f"figure7: argmax temperature in [{low}, {high}]"
    if table is None:
        return Outcome(None, np.nan, cells, "artifact not run", [])
    curve = table[table["size"] == size].sort_values("temperature")
    inside = curve.temperature.between(low, high)
    if not (inside.any() and (curve.temperature < low).any() and (curve.temperature > high).any()):
        reason = f"temperatures run: {curve.temperature.tolist()} (needs one inside the range and one on each side)"
        return Outcome(None, np.nan, cells, reason, [])
    peak = float(curve.loc[curve.Avg.idxmax(), "temperature"])
    detail = f"peak at {peak:g} ({curve.Avg.max():.2f}); temperatures run: {curve.temperature.tolist()}"
    return Outcome(bool(low <= peak <= high), np.nan, cells, detail, [curve.iloc[0]])


def _topk_curve(claim: dict, tables: Tables, size: str) -> pd.Series | None:
    table = tables("figure4")
    model = claim["model"].format(size=size)
    if table is None or table[table.model == model].empty:
        return None
    return table[table.model == model].set_index("k")


def _topk_gain(claim: dict, tables: Tables, size: str) -> Outcome:
    """Avg at the paper's k (fixed in advance; our k counts removed tokens: the authors' k + 1) vs no removal."""
    k = int(claim["authors_k"]) + 1
    curve = _topk_curve(claim, tables, size)
    cells = (
        f"figure4: {claim['model'].format(size=size)} Avg with the authors' k = {claim['authors_k']} vs none removed"
    )
    if curve is None or k not in curve.index or 0 not in curve.index:
        return Outcome(None, np.nan, cells, f"curve not run up to {k} removed tokens", [])
    assert authors_topk_k(k) == int(claim["authors_k"])
    gain = curve.Avg.loc[k] - curve.Avg.loc[0]
    detail = f"{curve.Avg.loc[k]:.2f} vs {curve.Avg.loc[0]:.2f} (gain {gain:+.2f})"
    return Outcome(bool(gain > 0), np.nan, cells, detail, [curve.iloc[0]])


def _topk_gain_below(claim: dict, tables: Tables, size: str) -> Outcome:
    """Every point of the curve gains less than ``margin`` over no removal (the largest gain is the statistic)."""
    margin = float(claim["margin"])
    curve = _topk_curve(claim, tables, size)
    cells = f"figure4: {claim['model'].format(size=size)} largest gain over no removal < {margin:g}"
    if curve is None or 0 not in curve.index or len(curve) < 2:
        return Outcome(None, np.nan, cells, "curve not run", [])
    gains = curve.Avg.drop(index=0) - curve.Avg.loc[0]
    k = int(gains.idxmax())
    detail = f"largest gain {gains.max():+.2f} at {k} tokens removed (authors' k = {authors_topk_k(k)})"
    return Outcome(bool(gains.max() < margin), np.nan, cells, detail, [curve.iloc[0]])


def _increasing(claim: dict, tables: Tables, size: str) -> Outcome:
    table = tables("table4")
    cells = "table4: Spearman's rho of batch size and Avg > 0"
    if table is None:
        return Outcome(None, np.nan, cells, "artifact not run", [])
    curve = table[table["size"] == size].sort_values("batch_size")
    if len(curve) < 3:
        return Outcome(None, np.nan, cells, "needs three batch sizes", [])
    rho = stats.spearmanr(curve.batch_size, curve.Avg).statistic
    listing = ", ".join(f"{b}: {v:.2f}" for b, v in zip(curve.batch_size, curve.Avg, strict=True))
    return Outcome(bool(rho > 0), np.nan, cells, f"rho = {rho:+.2f} ({listing})", [curve.iloc[0]])


def _range_below(claim: dict, tables: Tables, size: str) -> Outcome:
    table = tables("table4")
    margin = float(claim["margin"])
    cells = f"table4: best - worst Avg over batch sizes < {margin:g}"
    if table is None:
        return Outcome(None, np.nan, cells, "artifact not run", [])
    curve = table[table["size"] == size]
    if len(curve) < 2:
        return Outcome(None, np.nan, cells, "needs two batch sizes", [])
    spread = curve.Avg.max() - curve.Avg.min()
    return Outcome(bool(spread < margin), np.nan, cells, f"best - worst = {spread:.2f}", [curve.iloc[0]])


CHECKS: dict[str, Callable[[dict, Tables, str], Outcome]] = {
    "greater": lambda claim, tables, size: _two_cells(claim, tables, size, within=False),
    "within": lambda claim, tables, size: _two_cells(claim, tables, size, within=True),
    "greater_on_every_set": _greater_on_every_set,
    "greater_every_pair": _greater_every_pair,
    "best_cell": _best_cell,
    "peak_in_range": _peak_in_range,
    "topk_gain": _topk_gain,
    "topk_gain_below": _topk_gain_below,
    "increasing": _increasing,
    "range_below": _range_below,
}


#: The artifact each kind of claim reads when its cells do not name one.
KIND_ARTIFACTS = {"best_cell": "figure5", "peak_in_range": "figure7", "topk_gain": "figure4",
                  "topk_gain_below": "figure4", "increasing": "table4", "range_below": "table4"}  # fmt: skip
#: Artifacts with a row per model size the config runs; the others are sweeps over ``sweeps.sizes``.
PER_MODEL_ARTIFACTS = ("table2", "table3")


def _sizes(claim: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """The model sizes a claim is checked for: each size run, among the claim's ``sizes`` if it lists any.

    A claim that reads only Tables 2 and 3 is checked for every model size; one that reads a sweep
    (Table 4, the figures) for the sweeps' sizes."""
    cells = [claim.get(key) for key in ("a", "b")] + list(claim.get("winners", [])) + list(claim.get("losers", []))
    artifacts = {cell["artifact"] for cell in cells if cell} | {KIND_ARTIFACTS.get(claim["kind"], "table2")}
    per_model = artifacts <= set(PER_MODEL_ARTIFACTS)
    sizes = list(config["models"]) if per_model else list(config["sweeps"]["sizes"])
    wanted = claim.get("sizes")
    return [size for size in sizes if wanted is None or size in wanted]


def evaluate_claims(
    claims: list[dict[str, Any]],
    results: Path,
    config: dict[str, Any],
    root: Path = Path("."),
    alpha: float | None = None,
) -> pd.DataFrame:
    """One row per claim and model size; p-values Holm-adjusted over the run's claims (``alpha``: the
    config's ``gate.alpha``, else 0.05) and a "significant" claim holding only below ``alpha``."""
    alpha = alpha if alpha is not None else float((config.get("gate") or {}).get("alpha", DEFAULT_ALPHA))
    tables = Tables(results, config, root)
    rows = []
    for claim in claims:
        for size in _sizes(claim, config):
            outcome = CHECKS[claim["kind"]](claim, tables, size)
            reasons = {not_comparable_reason(row, _encoder_size(row, size)) for row in outcome.used}
            reasons = sorted(r for r in reasons if r)
            settings = sorted({str(row.get("setting", "")) for row in outcome.used if str(row.get("setting", ""))})
            rows.append(
                {
                    "id": claim["id"],
                    "section": claim["section"],
                    "where": claim["where"],
                    "quote": claim["quote"],
                    "in_paper": claim.get("in_paper", True),
                    "size": size,
                    "test": claim["test"],
                    "cells": outcome.cells,
                    "holds": outcome.holds,
                    "p_value": outcome.p_value,
                    "detail": outcome.detail,
                    "comparable": outcome.holds is not None and not reasons,
                    "reason": "; ".join(reasons),
                    "setting": "; ".join(settings),
                }
            )
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=list(CLAIM_COLUMNS))
    # the family: the claims a p-value decides (the paper says "significantly"), in the paper's setting
    family = (frame.test == "significant") & frame.comparable.astype(bool)
    frame["p_adjusted"] = np.nan
    frame.loc[family, "p_adjusted"] = holm(frame.loc[family, "p_value"].to_numpy(dtype=float))
    frame["verdict"] = [_verdict(row, alpha) for row in frame.itertuples()]
    return frame[list(CLAIM_COLUMNS)]


def _encoder_size(row: pd.Series, size: str) -> str | None:
    """The model size whose encoder a row must descend from to be comparable; None for rows without an
    encoder column (figure curves) or of no model size (GloVe's ``-``): their setting alone decides."""
    if "base_model" not in row.index or str(row.get("size", size)) == "-":
        return None
    return size


def _verdict(row, alpha: float) -> str:
    """``not run``, ``holds`` or ``does not hold``; a "significant" claim also needs its adjusted p below
    ``alpha`` (``not significant`` when the direction holds but the p-value does not; ``not decided``
    when it has no replicates to test with, or its rows are not the paper's setting: such a claim is
    left out of the Holm family, and only its unadjusted ``p_value`` is reported)."""
    if row.holds is None:
        return "not run"
    if not row.holds:
        return "does not hold"
    if row.test != "significant":
        return "holds"
    if np.isnan(row.p_adjusted):
        return "not decided"
    return "holds" if row.p_adjusted < alpha else "not significant"
