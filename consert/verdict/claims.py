"""The paper's claims, checked on whatever ran: ``results/claims.csv``.

The claims are data (``results/published/consert_claims.yaml``): each quotes the paper's sentence, says
where it stands, what it measures (``kind``) and how the sentence states it (``test``). Each statistic
gets an interval from the uncertainty of **seeds** (the claims are about methods, not checkpoints), as the
gate sees it: the seed SD pooled over every row of the kind and model size with 2+ seeds (``Avg_std``,
``n_seeds``) where it exceeds the declared SD of the kind (``decision.yaml``), else the declared one, taken as
known (a one-seed row too); untrained rows (BERT, GloVe) and fixed counts carry none. The interval
is two-sided at ``decision.yaml``'s level (90 %: one-sided 5 % on each side). The tests:

* ``direction`` ("outperforms", "better"): holds when the interval of ``a - b`` lies above ``margin``
  (default 0), does not hold when it lies below, else *not decided*;
* ``significant`` ("significantly"): a one-sided p over the seed means (Welch's t for pooled SDs, the normal
  where a side's SD is declared), Holm-adjusted over the run's "significant" claims, must lie below ``alpha``;
* ``trend`` (with ``direction``): the weighted least-squares slope per doubling of ``x`` over every row run;
* ``within`` ("comparable", "not so significant"): the interval lies within ``+-margin``;
* ``below`` ("less than 0.3"): one-sided: holds when the interval lies below ``margin``, does not hold when it
  lies above;
* ``noninferior`` ("basically achieve comparable results"): the interval lies above ``-margin``;
* ``about`` ("roughly 4 points", "an 8% relative gain", "a gain of 2.88"): the interval of
  ``statistic - target`` lies within ``+-margin``;
* ``near_best`` ("the best", "the optimal ... within a range"): the interval of the claimed cell minus the
  best other one; holds when it lies above 0 (shown best), does not hold when it lies below 0 (another is
  shown better), else *not contradicted* (neither: a non-rejection, never reported as holding).

A claim needing several comparisons (every set, every pair, both ends) holds when each holds and does not
hold when one does not (intersection-union); its p-value is the largest. ``comparable`` says whether the
rows used were produced in the paper's setting: a stand-in run's verdicts are shown, never passed off as
the paper's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import yaml

from consert.registry import FIGURE4, FIGURE5, FIGURE7, TABLE2, TABLE3, TABLE4
from consert.verdict.claim_checks import CHECKS, Estimate, Outcome, Tables
from consert.verdict.decision import (
    RowKinds,
    load_decision,
    not_comparable_reason,
)
from consert.verdict.yardstick import holm

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig

CLAIMS_FILE = "consert_claims.yaml"


TESTS = ("direction", "significant", "within", "below", "noninferior", "about", "near_best")


HOLDS, FAILS, UNDECIDED, NOT_RUN = "holds", "does not hold", "not decided", "not run"


#: A near-best claim whose cell is neither shown best nor shown beaten: a non-rejection, not a confirmation.
NOT_CONTRADICTED = "not contradicted"


CLAIM_COLUMNS = (
    "id",
    "section",
    "where",
    "quote",
    "size",
    "test",
    "cells",
    "statistic",
    "low",
    "high",
    "verdict",
    "p_value",
    "p_adjusted",
    "noise",
    "detail",
    "comparable",
    "reason",
    "setting",
)


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


def judge(estimate: Estimate, claim: dict, level: float) -> tuple[str, float, float]:
    """(verdict, low, high) of one comparison under the claim's test, ``[low, high]`` the statistic's interval
    (``significant`` is judged by its p-value later; here its interval can only say ``does not hold``)."""
    low, high = estimate.interval(level)
    margin = float(claim.get("margin", 0.0))
    test = claim["test"]
    if test in ("direction", "significant"):
        above, below = low > margin, high < margin
    elif test == "noninferior":
        above, below = low > -margin, high < -margin
    elif test == "below":  # "less than": the statistic under margin, whatever its sign
        above, below = high < margin, low > margin
    elif test == "near_best":  # the claimed cell minus the best other: shown best, shown beaten, or neither
        return (HOLDS if low > 0 else FAILS if high < 0 else NOT_CONTRADICTED), low, high
    else:  # within, about: the interval of (statistic - target) against +-margin
        target = float(claim.get("target", 0.0))
        shifted_low, shifted_high = low - target, high - target
        above = -margin <= shifted_low and shifted_high <= margin
        below = shifted_low > margin or shifted_high < -margin
    return (HOLDS if above else FAILS if below else UNDECIDED), low, high


def _combine(verdicts: list[str]) -> str:
    """Intersection-union: holds when every comparison holds, does not hold when one does not."""
    if FAILS in verdicts:
        return FAILS
    if all(v == HOLDS for v in verdicts):
        return HOLDS
    return NOT_CONTRADICTED if all(v in (HOLDS, NOT_CONTRADICTED) for v in verdicts) else UNDECIDED


KIND_ARTIFACTS = {"best_cell": FIGURE5.key, "peak_in_range": FIGURE7.key, "both_ends": FIGURE7.key,
                  "topk_gain": FIGURE4.key, "topk_largest_gain": FIGURE4.key, "trend": TABLE4.key}  # fmt: skip


#: Artifacts with a row per model size the config runs; the others are sweeps over ``sweeps.sizes``.
PER_MODEL_ARTIFACTS = (TABLE2.key, TABLE3.key)


def _sizes(claim: dict[str, Any], config: WorkflowConfig) -> list[str]:
    """The model sizes a claim is checked for: each size run, among the claim's ``sizes`` if it lists any.

    A claim that reads only Tables 2 and 3 is checked for every model size; one that reads a sweep
    (Table 4, the figures) for the sweeps' sizes."""
    cells = [claim.get(key) for key in ("a", "b")] + list(claim.get("winners", [])) + list(claim.get("losers", []))
    artifacts = {cell["artifact"] for cell in cells if cell and "artifact" in cell}
    artifacts |= {KIND_ARTIFACTS.get(claim["kind"], TABLE2.key)}
    per_model = artifacts <= set(PER_MODEL_ARTIFACTS)
    sizes = list(config.models) if per_model else list(config.sweeps.sizes)
    wanted = claim.get("sizes")
    return [size for size in sizes if wanted is None or size in wanted]


def evaluate_claims(
    claims: list[dict[str, Any]],
    results: Path,
    config: WorkflowConfig,
    files: dict[str, str],
    published: Path = Path("results/published"),
    alpha: float | None = None,
) -> pd.DataFrame:
    """One row per claim and model size (``files``: each artifact's CSV under ``results``; ``alpha``: in place of
    the config's ``gate.alpha``)."""
    alpha = alpha if alpha is not None else config.gate.alpha
    decision = load_decision(published)
    tables = Tables(results, decision, files, RowKinds(published))
    rows = []
    for claim in claims:
        for size in _sizes(claim, config):
            rows.append(_claim_row(claim, size, CHECKS[claim["kind"]](claim, tables, size), decision.level))
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=list(CLAIM_COLUMNS))
    # the family: the claims a p-value decides (the paper says "significantly"), in the paper's setting
    family = (frame.test == "significant") & frame.comparable.astype(bool) & frame.p_value.notna()
    frame["p_adjusted"] = np.nan
    frame.loc[family, "p_adjusted"] = holm(frame.loc[family, "p_value"].to_numpy(dtype=float))
    significant = (frame.test == "significant") & (frame.verdict == HOLDS)
    frame.loc[significant & family & (frame.p_adjusted >= alpha), "verdict"] = "not significant"
    frame.loc[significant & ~family, "verdict"] = UNDECIDED  # rows outside the paper's setting: no test
    return frame[list(CLAIM_COLUMNS)]


def _claim_row(claim: dict[str, Any], size: str, outcome: Outcome, level: float) -> dict[str, Any]:
    """One claim's row: its verdict (``significant`` claims are adjusted together afterwards)."""
    reasons = sorted({r for r in (not_comparable_reason(row, _encoder_size(row, size)) for row in outcome.used) if r})
    settings = sorted({str(row.get("setting", "")) for row in outcome.used if str(row.get("setting", ""))})
    row = {key: claim[key] for key in ("id", "section", "where", "quote", "test")}
    row.update(size=size, cells=outcome.cells, detail=outcome.detail, reason="; ".join(reasons),
               setting="; ".join(settings), p_value=np.nan, statistic=np.nan, low=np.nan, high=np.nan,
               noise="")  # fmt: skip
    if outcome.estimates is None:
        return {**row, "verdict": NOT_RUN, "comparable": False}
    judged = [judge(estimate, claim, level) for estimate in outcome.estimates]
    worst = min(range(len(judged)), key=lambda i: judged[i][1])  # the comparison that decides a combined claim
    verdict = _combine([v for v, _, _ in judged])
    if "at_least" in claim:  # "the best among 6 of 7 sets": enough of the comparisons must hold
        verdict = HOLDS if sum(v == HOLDS for v, _, _ in judged) >= int(claim["at_least"]) else FAILS
    declared = any(e.declared for e in outcome.estimates)
    exact = all(not e.variance for e in outcome.estimates)
    row.update(statistic=outcome.estimates[worst].value, low=judged[worst][1], high=judged[worst][2],
               noise="exact" if exact else "declared seed SD" if declared else "seeds")  # fmt: skip
    if claim["test"] == "significant":  # one seed on a side: its declared SD, as in every other test
        row["p_value"] = max(e.p_greater() for e in outcome.estimates)
        verdict = FAILS if verdict == FAILS else HOLDS  # held to its Holm-adjusted p-value afterwards
    return {**row, "verdict": verdict, "comparable": not reasons}


def _encoder_size(row: pd.Series, size: str) -> str | None:
    """The model size whose encoder a row must descend from to be comparable; None for rows without an
    encoder column (figure curves) or of no model size (GloVe's ``-``): their setting alone decides."""
    if "base_model" not in row.index or str(row.get("size", size)) == "-":
        return None
    return size
