"""The gate on a comparison: the primary cells that decide, the failures and gaps, and the exit status of
``consert compare --check``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from consert.verdict.cells import gap_row
from consert.verdict.decision import BLOCK, INCONCLUSIVE_POLICIES, PRIMARY, SHIFT
from consert.verdict.yardstick import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
)


def primary_cells(comparison: pd.DataFrame) -> pd.DataFrame:
    """Compared, comparable primary cells: what the gate decides on."""
    chosen = (comparison.status == "compared") & (comparison.role == PRIMARY)
    return comparison[chosen & comparison.comparable.astype(bool)]


def failures(comparison: pd.DataFrame, inconclusive: str = "pass") -> pd.DataFrame:
    """What a gate fails on: comparable primary cells (and the shared shift) that are ``not reproduced``,
    and, with ``inconclusive="fail"``, those that are ``inconclusive``."""
    failing = [NOT_REPRODUCED] + ([INCONCLUSIVE] if inconclusive == "fail" else [])
    decided = (comparison.status == "compared") & comparison.role.isin([PRIMARY, SHIFT, BLOCK])
    return comparison[decided & comparison.comparable.astype(bool) & comparison.verdict.isin(failing)]


def gaps(comparison: pd.DataFrame) -> pd.DataFrame:
    """Published rows with nothing reproduced that no ``not_run`` pattern declares: the gate fails on them."""
    return comparison[comparison.status == "missing"]


#: Exit status of ``compare --check`` when no cell of the paper is comparable (stand-in or other setting only).
NO_COMPARABLE_EXIT = 3


#: ``status`` of the row that records a gate passed on stand-in results by ``--allow-stand-in``.
STAND_IN_ALLOWED = "stand-in allowed"


def comparable_cells(comparison: pd.DataFrame) -> pd.DataFrame:
    """Compared cells of the paper produced in the paper's setting (the stand-in's own anchor excluded)."""
    chosen = (comparison.status == "compared") & comparison.comparable.astype(bool)
    return comparison[chosen & ~comparison.artifact.isin(["stand_in_mteb", SHIFT])]


def stand_in_allowed_row(comparison: pd.DataFrame) -> dict[str, Any]:
    """The row that says a gate passed with no comparable cell because ``--allow-stand-in`` was given."""
    compared = comparison[(comparison.status == "compared") & ~comparison.artifact.isin(["stand_in_mteb", SHIFT])]
    reasons = sorted({str(r).split(":")[0] for r in compared.reason if str(r)})
    return {
        **gap_row("gate", "no comparable cell", ""),
        "status": STAND_IN_ALLOWED,
        "verdict": "not comparable",
        "reason": f"--allow-stand-in: none of the {len(compared)} compared cells of the paper is comparable "
        f"({'; '.join(reasons)}); the gate passed without comparing anything with the paper",
    }


def verdict_counts(comparison: pd.DataFrame) -> dict[str, int]:
    """How many comparable primary cells are reproduced, not reproduced and inconclusive."""
    counts = primary_cells(comparison).verdict.value_counts()
    return {verdict: int(counts.get(verdict, 0)) for verdict in (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)}


def not_comparable_rows(comparison: pd.DataFrame) -> pd.DataFrame:
    """Primary cells of the paper compared in another setting (another encoder, unverified data, other NLI data, the
    stand-in): outside the gate's verdicts, but counted in its summary so that none leaves it silently."""
    chosen = (comparison.status == "compared") & (comparison.role == PRIMARY)
    paper = ~comparison.artifact.isin(["stand_in_mteb", SHIFT])
    return comparison[chosen & paper & ~comparison.comparable.astype(bool)]


def rows_at_hand(comparison: pd.DataFrame, patterns: Sequence[str]) -> tuple[pd.DataFrame, str]:
    """The comparison's rows that match one of ``patterns`` (``ARTIFACT:ROW`` globs: a table, one row), decided with
    every row that ran (the seed SD pooled per kind and size over them, the shared shift over them), and why those
    verdicts are provisional: "" where every published row ran, so that they are what the whole comparison gives;
    else which artifacts' published rows did not run, whose seeds would pool in."""
    from fnmatch import fnmatch

    chosen = comparison.apply(lambda r: any(fnmatch(f"{r.artifact}:{r.row}", p) for p in patterns), axis=1)
    chosen = chosen.astype(bool)
    absent = sorted(set(comparison.artifact[(comparison.status == "missing") & ~chosen]))
    why = (
        f"provisional: rows of {', '.join(absent)} did not run; their seeds would pool with these rows' (per kind "
        "and size) and move the shared shift: `snakemake all` decides every row"
        if absent
        else ""
    )
    return comparison[chosen], why


def gate(comparison: pd.DataFrame, allow_stand_in: bool = False, inconclusive: str = "pass") -> tuple[int, str]:
    """The gate's exit status and its one-line reason.

    1 when nothing was compared, a published row is missing without being declared, a comparable primary
    cell (the stand-in's own anchor included) or the shared shift is ``not reproduced`` (or, with
    ``inconclusive="fail"``, inconclusive); :data:`NO_COMPARABLE_EXIT` when no cell of the paper is
    comparable (stand-in results cannot pass for a reproduction), unless ``allow_stand_in``; else 0.
    """
    if inconclusive not in INCONCLUSIVE_POLICIES:
        raise ValueError(f"inconclusive: expected one of {INCONCLUSIVE_POLICIES}, got {inconclusive!r}")
    compared = comparison[comparison.status == "compared"]
    if compared.empty:
        return 1, "no reproduced cell has a published counterpart: nothing was compared"
    missing, failed = gaps(comparison), failures(comparison, inconclusive)
    if len(missing):
        return 1, (
            f"{len(missing)} published rows are missing (nothing reproduced, or fewer seeds than the config's "
            "design); produce them or declare them with --not-run ARTIFACT:ROW (config key not_run)"
        )
    counts = verdict_counts(comparison)
    outside = len(not_comparable_rows(comparison))
    summary = ", ".join([f"{n} {verdict}" for verdict, n in counts.items()]
                        + ([f"{outside} not comparable (counted)"] if outside else []))  # fmt: skip
    if len(failed):
        what = "not reproduced" + (" or inconclusive" if inconclusive == "fail" else "")
        return 1, f"{len(failed)} decided cells are {what} ({summary} of the primary cells; see comparison.csv)"
    if comparable_cells(comparison).empty:
        if allow_stand_in:
            return 0, f"no cell of the paper is comparable; passing because --allow-stand-in was given ({summary})"
        return NO_COMPARABLE_EXIT, (
            f"none of the {len(compared)} compared cells of the paper is comparable (offline stand-in, another "
            "encoder or other NLI data): nothing to gate on; --allow-stand-in accepts such a run knowingly"
        )
    shift = comparison[comparison.role == SHIFT]
    shift_text = f"; shared shift {shift.verdict.iloc[0]}" if len(shift) else ""
    undecided = " (inconclusive cells are not shown equivalent: more seeds decide them)" if counts[INCONCLUSIVE] else ""
    return 0, f"primary cells: {summary}{shift_text}{undecided}"
