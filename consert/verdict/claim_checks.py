"""The statistics each kind of claim measures (:data:`CHECKS`), over the tables of a run
(:class:`Tables`: each cell's seed mean and SD as the gate sees it)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from consert import registry, sweeps
from consert.data.senteval import DATASETS
from consert.row_labels import YOURS
from consert.verdict.cells import read_seeded_table
from consert.verdict.decision import Decision, RowKinds, authors_topk_k, method_noise


@dataclass(frozen=True)
class Estimate:
    """A value with the variance of its seed noise (0: exact), its degrees of freedom (``inf``: declared or
    exact), whether a declared SD was used, and whether it is a trained row with fewer than 2 seeds."""

    value: float
    variance: float = 0.0
    df: float = math.inf
    declared: bool = False
    one_seed: bool = False

    def __sub__(self, other: Estimate) -> Estimate:
        variance = self.variance + other.variance
        terms = [v**2 / d for v, d in ((self.variance, self.df), (other.variance, other.df)) if v and math.isfinite(d)]
        df = variance**2 / sum(terms) if terms and not (self.declared or other.declared) else math.inf
        return Estimate(self.value - other.value, variance, df, self.declared or other.declared,
                        self.one_seed or other.one_seed)  # fmt: skip

    def scaled(self, factor: float, shift: float = 0.0) -> Estimate:
        """``factor * self + shift``."""
        return Estimate(self.value * factor + shift, self.variance * factor**2, self.df, self.declared, self.one_seed)

    def interval(self, level: float) -> tuple[float, float]:
        """The two-sided ``level`` interval (Welch's t, the normal for declared or exact values)."""
        if not self.variance:
            return self.value, self.value
        upper = 0.5 + level / 2
        quantile = stats.norm.ppf(upper) if math.isinf(self.df) else stats.t.ppf(upper, self.df)
        half = float(quantile * math.sqrt(self.variance))
        return self.value - half, self.value + half

    def p_greater(self, margin: float = 0.0) -> float:
        """One-sided p-value that the value is not above ``margin`` (0 or 1 for an exact value)."""
        if not self.variance:
            return 0.0 if self.value > margin else 1.0
        scale = (self.value - margin) / math.sqrt(self.variance)
        return float(stats.norm.sf(scale) if math.isinf(self.df) else stats.t.sf(scale, self.df))


@dataclass
class Outcome:
    """What one check found: the comparisons' estimates (None when a row did not run), the cells, a detail
    line, and the rows used."""

    estimates: list[Estimate] | None
    cells: str
    detail: str
    used: list[pd.Series] = field(default_factory=list)


def _format(cell: dict[str, Any], size: str) -> dict[str, Any]:
    return {key: str(value).format(size=size) if isinstance(value, str) else value for key, value in cell.items()}


def _describe(cell: dict[str, Any]) -> str:
    if "value" in cell:
        return f"{cell.get('label', 'published')} {cell['value']:g}"
    labels = ", ".join(f"{value}" for key, value in cell.items() if key not in ("artifact", "noise"))
    return f"{cell['artifact']}: {labels}"


#: The kind of seed noise of a claim's cell when it names none: by artifact, or by the method's name.
SWEEP_ARTIFACTS = tuple(artifact.key for artifact in sweeps.SWEEPS)


def noise_kind(cell: dict[str, Any], kinds: RowKinds | None = None) -> str:
    """``none`` (untrained or exact) or the kind of seed noise of ``decision.yaml`` a cell's row carries: the gate's
    kind (``kinds``, ``yardsticks.csv``: Table 3's "BERT-base-flow (NLI)" is ``flow_nli``) where it has a rule for
    the row, else by the method's name."""
    if "noise" in cell:
        return str(cell["noise"])
    if cell["artifact"] in SWEEP_ARTIFACTS:
        return "consert"
    method = str(cell.get("method", ""))
    found = kinds.find(cell["artifact"], method) if kinds is not None and method else None
    if found is not None:  # else a row the published files name otherwise (BERT-base (mean:-2,-1), SG-OPT)
        return found[0]
    return next((kind for word, kind in method_noise() if word in method), "none")


class Tables:
    """The artifact CSVs under a results folder (``files``: each artifact's CSV there), read once, and the
    estimates of their cells."""

    def __init__(self, results: Path, decision: Decision, files: dict[str, str], kinds: RowKinds | None = None):
        self.results, self.decision, self.files, self.kinds = results, decision, files, kinds
        self._cache: dict[str, pd.DataFrame | None] = {}

    def __call__(self, artifact: str) -> pd.DataFrame | None:
        """The artifact's table, or None when it is absent; without the rows of your models (no claim of the paper is
        about them, and their seeds pool with nothing)."""
        if artifact not in self._cache:
            path = self.results / self.files[artifact]
            table = read_seeded_table(path) if path.is_file() else None
            if table is not None and "size" in table.columns:
                table = table[table["size"].astype(str) != YOURS].reset_index(drop=True)
            self._cache[artifact] = table
        return self._cache[artifact]

    def row(self, cell: dict[str, Any], size: str) -> pd.Series | None:
        """The row of ``cell`` (``artifact`` and label values, compared as text; rows of other sizes skipped)."""
        table = self(cell["artifact"])
        labels = {key: value for key, value in cell.items() if key not in ("artifact", "noise")}
        if table is None or not set(labels) <= set(table.columns):
            return None
        chosen = table
        if "size" in table.columns and "size" not in labels and "method" not in labels:
            chosen = chosen[chosen["size"].astype(str) == size]
        for key, value in labels.items():
            chosen = chosen[chosen[key].astype(str) == str(value)]
        return chosen.iloc[0] if len(chosen) else None

    def estimate(self, row: pd.Series, column: str, kind: str) -> Estimate:
        """A cell's value with its seed noise, as the gate sees it: the seed SD pooled over every row of its kind
        and model size that ran 2+ seeds (:meth:`pooled`), when that is larger than the declared SD of ``kind``;
        else the declared one, as known (a one-seed row too)."""
        value = float(row[column])
        if kind == "none":
            return Estimate(value)
        seeds = pd.to_numeric(row.get("n_seeds"), errors="coerce")
        n = int(seeds) if pd.notna(seeds) else 1
        scale = "avg" if column in ("Avg", "value") else "set"
        sigma = self.decision.declared_noise(kind, scale, str(row.get("size", "")) or "base").sigma
        pooled, df = self.pooled(kind, str(row.get("size", "")), column)
        if df and pooled > sigma:
            return Estimate(value, pooled**2 / n, df, one_seed=n < 2)
        return Estimate(value, sigma**2 / n, math.inf, declared=True, one_seed=n < 2)

    def pooled(self, kind: str, size: str, column: str) -> tuple[float, int]:
        """The seed SD of ``column`` pooled over the rows of every artifact of ``kind`` at model ``size`` that ran
        2+ seeds, and its degrees of freedom (0: none)."""
        squares, df = 0.0, 0
        for artifact in (scored.key for scored in sweeps.SCORED):
            table = self(artifact)
            if table is None or f"{column}_std" not in table or "n_seeds" not in table:
                continue
            for _, row in table.iterrows():
                n, std = pd.to_numeric(row.get("n_seeds"), errors="coerce"), pd.to_numeric(row[f"{column}_std"])
                method = str(row.get("method", ""))
                same_kind = noise_kind({"artifact": artifact, "method": method}, self.kinds) == kind
                if str(row.get("size", "")) != size or not same_kind:
                    continue
                if pd.notna(n) and n >= 2 and pd.notna(std):
                    squares, df = squares + (n - 1) * float(std) ** 2, df + int(n) - 1
        return (math.sqrt(squares / df), df) if df else (math.nan, 0)

    def cell(self, cell: dict[str, Any], size: str, column: str) -> tuple[Estimate, pd.Series | None] | None:
        """The estimate of a claim's cell (a table row, or a published constant ``{value: ...}``)."""
        if "value" in cell:
            return Estimate(float(cell["value"])), None
        row = self.row(cell, size)
        if row is None or column not in row.index:
            return None
        return self.estimate(row, column, noise_kind(cell, self.kinds)), row


def _difference(claim: dict, tables: Tables, size: str) -> Outcome:
    """``a - b`` on ``column`` (default Avg); ``relative: true`` makes it ``100 (a - b) / b``."""
    column = claim.get("column", "Avg")
    a, b = _format(claim["a"], size), _format(claim["b"], size)
    cells = f"{_describe(a)} vs {_describe(b)}, {column}"
    found_a, found_b = tables.cell(a, size, column), tables.cell(b, size, column)
    if found_a is None or found_b is None:
        return Outcome(None, cells, "row not run")
    (ea, row_a), (eb, row_b) = found_a, found_b
    estimate = ea - eb
    detail = f"{ea.value:.2f} vs {eb.value:.2f} (difference {estimate.value:+.2f})"
    if claim.get("relative"):  # 100 (a / b - 1); by the delta method var = (var_a + (a / b)^2 var_b) / b^2
        ratio = ea.value / eb.value
        spread = ea - eb.scaled(ratio)  # its variance and Welch df are those of the two terms above
        estimate = Estimate(100 * (ratio - 1), spread.variance * (100 / eb.value) ** 2, spread.df, spread.declared,
                            spread.one_seed)  # fmt: skip
        detail = f"{ea.value:.2f} vs {eb.value:.2f} (relative gain {estimate.value:+.2f} %)"
    return Outcome([estimate], cells, detail, [r for r in (row_a, row_b) if r is not None])


def _trend(claim: dict, tables: Tables, size: str) -> Outcome:
    """The slope of ``column`` (default Avg) on log2 of ``x`` over every row of ``artifact`` run at ``size``
    (e.g. Table 4's five batch sizes): weighted least squares with each row's seed variance, so the statistic
    is the Avg gained per doubling, with the variance of that slope."""
    column, x = claim.get("column", "Avg"), claim["x"]
    table = tables(claim["artifact"])
    cells = f"{claim['artifact']}: slope of {column} per doubling of {x}, over every {x} run"
    if table is None:
        return Outcome(None, cells, "artifact not run")
    rows = table[table["size"].astype(str) == size].sort_values(x)
    if rows[x].nunique() < 3:
        return Outcome(None, cells, f"{x} run: {rows[x].tolist()} (a trend needs 3 or more)")
    estimates = [
        tables.estimate(row, column, noise_kind({"artifact": claim["artifact"]}, tables.kinds))
        for _, row in rows.iterrows()
    ]
    positions = np.log2(rows[x].to_numpy(dtype=float))
    weights = np.array([1 / e.variance if e.variance else 1.0 for e in estimates])
    centred = positions - np.average(positions, weights=weights)
    denominator = float(np.sum(weights * centred**2))
    slope = float(np.sum(weights * centred * [e.value for e in estimates]) / denominator)
    variance = float(np.sum((weights * centred) ** 2 * [e.variance for e in estimates]) / denominator**2)
    df = min(e.df for e in estimates)
    estimate = Estimate(slope, variance, df, any(e.declared for e in estimates), any(e.one_seed for e in estimates))
    detail = f"{slope:+.3f} Avg per doubling of {x} over {rows[x].tolist()}"
    return Outcome([estimate], cells, detail, [row for _, row in rows.iterrows()])


def _every_set(claim: dict, tables: Tables, size: str) -> Outcome:
    """``a - b`` on each of the 7 sets."""
    a, b = _format(claim["a"], size), _format(claim["b"], size)
    cells = f"{_describe(a)} vs {_describe(b)}, each of the 7 sets"
    found = [(tables.cell(a, size, name), tables.cell(b, size, name)) for name in DATASETS]
    if any(x is None or y is None for x, y in found):
        return Outcome(None, cells, "row not run")
    estimates = [x[0] - y[0] for x, y in found]
    losing = [name for name, e in zip(DATASETS, estimates, strict=True) if e.value <= 0]
    detail = "ahead on every set" if not losing else f"not ahead on {', '.join(losing)}"
    return Outcome(estimates, cells, detail, [r for r in (found[0][0][1], found[0][1][1]) if r is not None])


def _every_pair(claim: dict, tables: Tables, size: str) -> Outcome:
    """Each winner minus each loser on ``column``."""
    winners = [_format(cell, size) for cell in claim["winners"]]
    losers = [_format(cell, size) for cell in claim["losers"]]
    column = claim.get("column", "Avg")
    cells = f"each of {[_describe(c) for c in winners]} vs each of {[_describe(c) for c in losers]}, {column}"
    found = {id(cell): tables.cell(cell, size, column) for cell in (*winners, *losers)}
    if any(value is None for value in found.values()):
        return Outcome(None, cells, "cells not run")
    estimates = [found[id(w)][0] - found[id(lo)][0] for w in winners for lo in losers]
    detail = f"smallest winning margin {min(e.value for e in estimates):+.2f}"
    return Outcome(estimates, cells, detail, [row for _, row in found.values() if row is not None])


def _near_best(values: pd.Series, chosen: Any, tables: Tables, row: pd.Series, column: str = "Avg") -> Estimate:
    """The chosen entry minus the best other entry, with the seed noise of a difference of two such runs."""
    unit = tables.estimate(row, column, "consert")
    others = values.drop(index=chosen)
    return Estimate(float(values.loc[chosen] - others.max()), 2 * unit.variance, unit.df, unit.declared,
                    unit.one_seed)  # fmt: skip


def _best_cell(claim: dict, tables: Tables, size: str) -> Outcome:
    table = tables(registry.FIGURE5.key)
    view1, view2 = claim["cell"]
    cells = f"figure5: {view1} + {view2} among the pairs trained"
    if table is None:
        return Outcome(None, cells, "artifact not run")
    table = table[table["size"] == size]
    chosen = table[(table.view1 == view1) & (table.view2 == view2)]
    if chosen.empty:
        return Outcome(None, cells, f"the {view1} + {view2} cell was not run")
    # a mirrored cell of an unordered heatmap is the same run: one entry per run trained
    runs = table.drop_duplicates("trained_as") if "trained_as" in table else table
    key = runs.trained_as if "trained_as" in runs else runs.view1 + "+" + runs.view2
    values = pd.Series(runs.Avg.to_numpy(), index=key.to_numpy())
    mine = chosen.trained_as.iloc[0] if "trained_as" in chosen else f"{view1}+{view2}"
    if len(values) < 2:
        return Outcome(None, cells, "only one pair was run")
    estimate = _near_best(values, mine, tables, chosen.iloc[0])
    second = values.drop(index=mine).idxmax()
    detail = f"{values[mine]:.2f}; best other run {second} at {values[second]:.2f} (runs: {len(values)})"
    return Outcome([estimate], cells, detail, [chosen.iloc[0]])


def _peak_in_range(claim: dict, tables: Tables, size: str) -> Outcome:
    table = tables(registry.FIGURE7.key)
    low, high = claim["low"], claim["high"]
    cells = f"figure7: the best temperature in [{low}, {high}] against the best outside it"
    if table is None:
        return Outcome(None, cells, "artifact not run")
    curve = table[table["size"] == size].sort_values("temperature")
    inside = curve.temperature.between(low, high)
    if not (inside.any() and (curve.temperature < low).any() and (curve.temperature > high).any()):
        reason = f"temperatures run: {curve.temperature.tolist()} (needs one inside the range and one on each side)"
        return Outcome(None, cells, reason)
    best_row = curve[inside].loc[curve[inside].Avg.idxmax()]
    best_inside = float(best_row.Avg)
    values = pd.Series([best_inside, *curve[~inside].Avg], index=["inside", *curve[~inside].temperature])
    estimate = _near_best(values, "inside", tables, best_row)  # the seed spread of the claimed peak's run
    peak = float(curve.loc[curve.Avg.idxmax(), "temperature"])
    run = curve.temperature.tolist()
    where = "inside" if low <= peak <= high else "outside"
    detail = (
        f"the observed peak, {peak:g} ({curve.Avg.max():.2f}), lies {where} [{low:g}, {high:g}]; best inside "
        f"{best_inside:.2f}; temperatures run: {run}"
    )
    return Outcome([estimate], cells, detail, [curve.iloc[0]])


def _both_ends(claim: dict, tables: Tables, size: str) -> Outcome:
    """The chosen temperature's Avg minus the Avg at the smallest and at the largest temperature run."""
    table = tables(registry.FIGURE7.key)
    chosen = float(claim["chosen"])
    cells = f"figure7: Avg at {chosen:g} minus Avg at the smallest and at the largest temperature"
    if table is None:
        return Outcome(None, cells, "artifact not run")
    curve = table[table["size"] == size].sort_values("temperature").set_index("temperature")
    if chosen not in curve.index or len(curve) < 3:
        return Outcome(None, cells, f"temperatures run: {curve.index.tolist()} (needs {chosen:g} and both sides)")
    top = tables.estimate(curve.loc[chosen], "Avg", "consert")
    ends = [curve.index.min(), curve.index.max()]
    estimates = [top - tables.estimate(curve.loc[t], "Avg", "consert") for t in ends]
    detail = ", ".join(f"drop to {t:g}: {e.value:+.2f}" for t, e in zip(ends, estimates, strict=True))
    return Outcome(estimates, cells, detail, [curve.iloc[0]])


def _topk_curve(claim: dict, tables: Tables, size: str) -> pd.DataFrame | None:
    table = tables(registry.FIGURE4.key)
    model = claim["model"].format(size=size)
    if table is None or table[table.model == model].empty:
        return None
    return table[table.model == model].set_index("k")


def _topk_gain(claim: dict, tables: Tables, size: str) -> Outcome:
    """Avg at the paper's k (fixed in advance; our k counts removed tokens: the authors' k + 1) vs no removal:
    one model's curve, so exact."""
    k = int(claim["authors_k"]) + 1
    curve = _topk_curve(claim, tables, size)
    model = claim["model"].format(size=size)
    cells = f"figure4: {model} Avg with the authors' k = {claim['authors_k']} vs none removed"
    if curve is None or k not in curve.index or 0 not in curve.index:
        return Outcome(None, cells, f"curve not run up to {k} removed tokens")
    assert authors_topk_k(k) == int(claim["authors_k"])
    gain = curve.Avg.loc[k] - curve.Avg.loc[0]
    detail = f"{curve.Avg.loc[k]:.2f} vs {curve.Avg.loc[0]:.2f} (gain {gain:+.2f})"
    return Outcome([Estimate(float(gain))], cells, detail, [curve.iloc[0]])


def _topk_largest_gain(claim: dict, tables: Tables, size: str) -> Outcome:
    """The largest gain over no removal among the first ``max_k`` k of one model's curve (exact)."""
    max_k = int(claim["max_k"])
    curve = _topk_curve(claim, tables, size)
    cells = f"figure4: {claim['model'].format(size=size)} largest gain over no removal, authors' k <= {max_k}"
    if curve is None or 0 not in curve.index or len(curve) < 2:
        return Outcome(None, cells, "curve not run")
    few = [k for k in curve.index if k > 0 and (authors_topk_k(int(k)) or 0) <= max_k]
    gains = curve.Avg.loc[few] - curve.Avg.loc[0]
    k = int(gains.idxmax())
    detail = f"largest gain {gains.max():+.2f} at {k} tokens removed (authors' k = {authors_topk_k(k)})"
    return Outcome([Estimate(float(gains.max()))], cells, detail, [curve.iloc[0]])


def _best_on_sets(claim: dict, tables: Tables, size: str) -> Outcome:
    """On how many sets the row is near-best among the table's other rows of its size (each set: the row
    minus the best other row; ``at_least`` of them must hold)."""
    a = _format(claim["a"], size)
    table = tables(a["artifact"])
    cells = f"{_describe(a)} against every other row of its size run, each set"
    row = tables.row(a, size)
    if table is None or row is None:
        return Outcome(None, cells, "row not run")
    others = table[(table["size"].astype(str) == size) & (table.method != row.method)]
    if others.empty:
        return Outcome(None, cells, "no other row of this size")
    estimates = []
    for name in DATASETS:
        best = others.loc[others[name].idxmax()]
        kind = noise_kind({"artifact": a["artifact"], "method": best.method}, tables.kinds)
        estimates.append(tables.estimate(row, name, noise_kind(a, tables.kinds)) - tables.estimate(best, name, kind))
    ahead = [name for name, e in zip(DATASETS, estimates, strict=True) if e.value > 0]
    return Outcome(estimates, cells, f"ahead on {len(ahead)} of 7 sets ({', '.join(ahead)})", [row])


CHECKS: dict[str, Callable[[dict, Tables, str], Outcome]] = {
    "difference": _difference,
    "every_set": _every_set,
    "every_pair": _every_pair,
    "best_cell": _best_cell,
    "peak_in_range": _peak_in_range,
    "trend": _trend,
    "both_ends": _both_ends,
    "topk_gain": _topk_gain,
    "topk_largest_gain": _topk_largest_gain,
    "best_on_sets": _best_on_sets,
}
