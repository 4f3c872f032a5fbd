"""Cell-by-cell comparison of reproduced artifacts with the published numbers.

Every reproduced cell that has a published counterpart becomes one row of ``comparison.csv``:
artifact, row, column, aggregate, published, reproduced, delta, tolerance, within_tolerance,
comparable and the reason when it is not comparable (a different encoder, the offline stand-in,
SICK-E instead of SNLI+MNLI, GloVe 6B-50d instead of 840B-300d, an unknown aggregate). Only
comparable cells can fail a gate.

Each published STS12-16 number (and an Avg over them) was aggregated one way: ConSERT merges a
year's subsets into one Spearman (``all``), BERT-flow and BERT-whitening report SentEval's mean
weighted by subset size (``wmean``). ``aggregates.csv`` beside the published tables maps every
published row to its aggregate, with the source; the reproduced value of the same aggregate is
compared. STS-B and SICK-R have one test split, where every aggregate agrees (``test split``).

Each cell is judged by a stated yardstick (:mod:`consert.paper.yardstick`, ``yardsticks.csv`` beside the
published tables): untrained rows within rounding plus a precision allowance, trained rows within
the seed prediction interval when several seeds ran (their p-values Holm-adjusted over the run's
cells, so the family-wise error is at most ``alpha``), else within a declared default.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from consert.data.senteval import DATASETS
from consert.paper.tables import MULTI_SUBSET, authors_topk_k
from consert.paper.yardstick import (
    DEFAULT_ALPHA,
    Yardstick,
    holm,
    trained_yardstick,
    untrained_yardstick,
)

SCORE_COLUMNS = (*DATASETS, "Avg")
#: The paper's encoders by size: only runs that descend from these are comparable.
PAPER_MODELS = {"base": "bert-base-uncased", "large": "bert-large-uncased"}
DEFAULT_TOLERANCES = {
    "table2": 1.0,
    "table3": 1.0,
    "table4": 1.0,
    "table4_steps": 300.0,
    "sgopt": 1.0,
    "text": 1.0,
    "family": 1.0,
}

COMPARISON_COLUMNS = (
    "artifact",
    "row",
    "column",
    "aggregate",
    "published",
    "reproduced",
    "delta",
    "tolerance",
    "tolerance_source",
    "within_tolerance",
    "decision",
    "p_value",
    "p_adjusted",
    "ci_low",
    "ci_high",
    "interval",
    "verdict",
    "comparable",
    "reason",
    "setting",
    "status",
)
#: The reproduced artifact files the comparison reads, and the comparison artifacts each feeds.
ARTIFACT_FILES = {
    "table2_unsup.csv": ("table2", "whitening_table1", "sgopt_table1"),
    "table3_sup.csv": ("table3",),
    "table4_batch_size.csv": ("table4",),
    "figure4_topk.csv": ("figure4_topk",),
    "figure5_heatmap.csv": ("figure5_heatmap",),
    "table_contrastive_family.csv": ("family",),
}
#: The contrastive family's published rows (``contrastive_family.csv``) and the reproduced rows they match.
FAMILY_ROWS = (("SimCSE-BERT-base", "SimCSE-base", "base"), ("AugCSE-BERT-base", "AugCSE-base", "base"))


def not_comparable_reason(row: pd.Series, size: str | None) -> str:
    """Empty when the reproduced row used the paper's encoder and data; else why not."""
    texts = " ".join(str(row.get(c, "")) for c in ("setting", "nli"))
    if "stand-in" in texts:
        return "offline stand-in: " + "; ".join(
            s for s in (str(row.get("setting", "")), str(row.get("nli", ""))) if "stand-in" in s
        )
    if str(row.get("data_verified", "")).lower() == "false":
        return "data files differ from SentEval's (data_verified = False)"
    if size in PAPER_MODELS:
        model = str(row.get("base_model", "") or row.get("model", ""))
        if model != PAPER_MODELS[size]:
            return f"encoder {model!r} is not the paper's {PAPER_MODELS[size]!r}"
    return ""


#: The aggregates a published row may declare (``unknown``: not recorded by its authors).
AGGREGATES = ("all", "mean", "wmean", "unknown")
AGGREGATES_FILE = "aggregates.csv"


def load_aggregates(published: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """``{(artifact, published row or "*"): (aggregate, source)}`` from ``aggregates.csv``."""
    table = pd.read_csv(published / AGGREGATES_FILE, dtype=str)
    bad = sorted(set(table["aggregate"]) - set(AGGREGATES))
    if bad:
        raise ValueError(f"{published / AGGREGATES_FILE}: unknown aggregate(s) {bad}; expected one of {AGGREGATES}")
    columns = zip(table["artifact"], table["row"], table["aggregate"], table["source"], strict=True)
    return {(artifact, row): (aggregate, source) for artifact, row, aggregate, source in columns}


def aggregate_of(aggregates: dict[tuple[str, str], tuple[str, str]], artifact: str, row: str) -> str:
    """The aggregate of a published row: its own entry, else its artifact's ``*`` entry."""
    entry = aggregates.get((artifact, row)) or aggregates.get((artifact, "*"))
    if entry is None:
        raise KeyError(f"{AGGREGATES_FILE} names no aggregate for {artifact} row {row!r} (nor a '*' row)")
    return entry[0]


def cell_value(row: pd.Series, column: str, aggregate: str) -> tuple[Any, str, str, str]:
    """(reproduced value, the cell's aggregate label, why it is not comparable or "", the column it was read from)."""
    if column not in MULTI_SUBSET:
        return row.get(column), "test split" if column in DATASETS else "", "", column
    if aggregate == "unknown":
        why = "the published value's aggregate over subsets is unknown"
        return row.get(column), "unknown", why, column
    name = column if aggregate == "all" else f"{column}_{aggregate}"
    return row.get(name), aggregate, "", name


def bootstrap_bounds(row: pd.Series, name: str) -> tuple[float, float, str]:
    """A cell's test-set bootstrap interval (averaged over seeds), or NaNs: the uncertainty of paired
    comparisons on the same pairs, shown beside the cell (the verdict uses the yardstick)."""
    low = pd.to_numeric(row.get(f"{name}_ci_low"), errors="coerce")
    high = pd.to_numeric(row.get(f"{name}_ci_high"), errors="coerce")
    if pd.notna(low) and pd.notna(high):
        return float(low), float(high), "bootstrap"
    return np.nan, np.nan, ""


YARDSTICKS_FILE = "yardsticks.csv"


class Yardsticks:
    """``yardsticks.csv``: per published row (``artifact``, ``row`` glob; the first match wins), whether it
    comes from training (``trained``), how many runs its published value averages, and the source."""

    def __init__(self, published: Path, declared: dict[str, float], level: float = 0.95):
        table = pd.read_csv(published / YARDSTICKS_FILE, dtype=str)
        self.rules = list(zip(table.artifact, table.row, table.trained, table.published_runs, strict=True))
        self.path, self.declared, self.level = published / YARDSTICKS_FILE, declared, level

    def published_row(self, artifact: str, row: str) -> tuple[bool, int]:
        """(trained, published runs) of a published row."""
        for rule_artifact, pattern, trained, runs in self.rules:
            if rule_artifact == artifact and fnmatch(row, pattern):
                return trained.strip().lower() == "true", int(runs)
        raise KeyError(f"{self.path} has no rule for {artifact} row {row!r}")

    def of(self, artifact: str, row: str, source: pd.Series, std_column: str, declared_key: str) -> Yardstick:
        """The yardstick of one cell: ``source`` is the reproduced row, ``std_column`` its seed-std column."""
        trained, runs = self.published_row(artifact, row)
        if not trained:
            return untrained_yardstick()
        std = pd.to_numeric(source.get(std_column), errors="coerce")
        seeds = pd.to_numeric(source.get("n_seeds"), errors="coerce")
        n = int(seeds) if pd.notna(seeds) else 1
        declared = self.declared[declared_key]
        return trained_yardstick(
            float(std) if pd.notna(std) else np.nan,
            n,
            declared,
            f"comparison.{declared_key}",
            self.level,
            runs,
        )


def _cells(
    artifact: str,
    published: pd.DataFrame,
    reproduced: pd.DataFrame,
    key_pairs: list[tuple[str, str, str | None]],
    columns: list[tuple[str, str]],
    declared_key: str,
    aggregates: dict[tuple[str, str], tuple[str, str]],
    yardsticks: Yardsticks,
    report_gaps: bool = True,
) -> list[dict[str, Any]]:
    """Rows for each (published row name, reproduced row name, size) and (published col, reproduced col);
    a published row without its reproduced row gives one gap row (see :func:`gap_row`)."""
    out = []
    for published_name, reproduced_name, size in key_pairs:
        pub = published[published.key == published_name]
        rep = reproduced[reproduced.key == reproduced_name]
        if pub.empty:
            raise ValueError(f"{artifact}: the published table has no row {published_name!r}")
        published_columns = [c for c, _ in columns if c in pub]
        if published_columns and "source" in pub and pub[published_columns].isna().all(axis=None):
            out.append(unpublished_row(artifact, published_name, rep, str(pub.iloc[0].source)))
            continue
        if rep.empty:
            if report_gaps:
                out.append(gap_row(artifact, published_name, f"no reproduced row named {reproduced_name!r}"))
            continue
        pub_row, rep_row = pub.iloc[0], rep.iloc[0]
        reason = not_comparable_reason(rep_row, size)
        row_aggregate = aggregate_of(aggregates, artifact, published_name)
        for published_column, reproduced_column in columns:
            value, aggregate, why, name = cell_value(rep_row, reproduced_column, row_aggregate)
            row = _comparison_row(
                artifact,
                published_name,
                published_column,
                pub_row.get(published_column),
                value,
                yardsticks.of(artifact, published_name, rep_row, f"{name}_std", declared_key),
                rep_row,
                "; ".join(r for r in (reason, why) if r),
                aggregate,
                bootstrap_bounds(rep_row, name),
            )
            if row is not None:
                out.append(row)
    return out


def gap_row(artifact: str, row: str, reason: str) -> dict[str, Any]:
    """A published row (``*``: a whole artifact) with nothing reproduced to compare it with."""
    return {
        "artifact": artifact,
        "row": row,
        "column": "*",
        "aggregate": "",
        "published": np.nan,
        "reproduced": np.nan,
        "delta": np.nan,
        "tolerance": np.nan,
        "tolerance_source": "",
        "within_tolerance": False,
        "decision": "",
        "p_value": np.nan,
        "p_adjusted": np.nan,
        "ci_low": np.nan,
        "ci_high": np.nan,
        "interval": "",
        "verdict": "missing",
        "comparable": False,
        "reason": reason,
        "setting": "",
        "status": "missing",
    }


def unpublished_row(artifact: str, row: str, reproduced: pd.DataFrame, source: str) -> dict[str, Any]:
    """A row reproduced (or planned) with no published value to compare it with: listed, never a gate failure."""
    return {
        **gap_row(artifact, row, f"no published value ({source})"),
        "status": "no published value",
        "verdict": "not comparable",
        "setting": reproduced.iloc[0].get("setting", "") if not reproduced.empty else "",
    }


def compare(
    results: Path,
    published: Path,
    tolerances: dict[str, float] | None = None,
    not_run: Sequence[str] = (),
    alpha: float = DEFAULT_ALPHA,
) -> pd.DataFrame:
    """The comparison table of the reproduced artifacts under ``results``.

    Every published row the harness reproduces gives cells (``status`` ``compared``) or a gap row:
    ``not run`` when it matches one of ``not_run`` (``artifact:row`` glob patterns a config declares,
    e.g. ``table2:*large*`` for a base-only run), else ``missing``; a missing artifact file gives one
    gap row per comparison artifact it feeds. ``tolerances`` are the declared defaults of trained rows
    that ran one seed; ``alpha`` is the family-wise error rate of the cells judged by p-values.
    """
    tol = {**DEFAULT_TOLERANCES, **(tolerances or {})}
    aggregates = load_aggregates(published)
    yardsticks = Yardsticks(published, tol, level=1 - alpha)
    rows: list[dict[str, Any]] = []
    score_columns = [(c, c) for c in SCORE_COLUMNS]

    def load(name: str) -> pd.DataFrame | None:
        path = results / name
        if path.is_file():
            return pd.read_csv(path).copy()  # one block per dtype: wide tables read as many blocks
        rows.extend(gap_row(artifact, "*", f"{path} not found") for artifact in ARTIFACT_FILES[name])
        return None

    def cells(artifact, pub, rep, pairs, columns, declared_key, report_gaps=True):
        return _cells(artifact, pub, rep, pairs, columns, declared_key, aggregates, yardsticks, report_gaps)

    table2 = load("table2_unsup.csv")
    if table2 is not None:
        pub = pd.read_csv(published / "consert_table2_unsup.csv").assign(key=lambda f: f.method)
        rep = table2.assign(key=table2.method)
        pairs = [("Avg. GloVe embeddings", "Avg. GloVe embeddings", None)]
        for size in PAPER_MODELS:
            pairs += [
                (f"BERT-{size}", f"BERT-{size} (mean:-2,-1)", size),
                (f"BERT-{size}-flow", f"BERT-{size}-flow", size),
                (f"ConSERT-{size}", f"ConSERT-{size}", size),
            ]
        rows += cells("table2", pub, rep, pairs, score_columns, "table2")
        whitening = pd.read_csv(published / "bert_whitening_table1.csv")
        whitening = whitening.assign(key=whitening.method)
        pairs = [(m, f"{m} ({p})", "base") for m, p in zip(whitening.method, whitening.pooling, strict=True)]
        rows += cells("whitening_table1", whitening, rep, pairs, score_columns, "table2")
        sgopt = pd.read_csv(published / "sgopt_table1_bert_base.csv")
        sgopt = sgopt.assign(key=sgopt.model + " | " + sgopt.pooling.astype(str))
        pairs = [
            ("BERT-base + contrastive (SG-OPT) | cls", "BERT-base-SG-OPT", "base"),
            ("BERT-base no tuning | cls", "BERT-base (cls)", "base"),
            ("BERT-base no tuning | mean", "BERT-base (mean)", "base"),
        ]
        rows += cells("sgopt_table1", sgopt, rep, pairs, score_columns, "sgopt")
    table3 = load("table3_sup.csv")
    if table3 is not None:
        pub = pd.read_csv(published / "consert_table3_sup.csv")
        pub = pub.assign(key=pub.method + " | " + pub.setting)
        rep = table3.assign(key=table3.method)
        pairs = []
        for size in PAPER_MODELS:
            pairs += [
                (f"SBERT-{size}-NLI (re-impl.) | nli", f"ConSERT-{size} sup", size),
                (f"ConSERT-{size} joint | nli", f"ConSERT-{size} joint", size),
                (f"ConSERT-{size} sup-unsup | nli+sts_unlabeled", f"ConSERT-{size} sup-unsup", size),
                (f"ConSERT-{size} joint-unsup | nli+sts_unlabeled", f"ConSERT-{size} joint-unsup", size),
                (f"BERT-{size}-flow | nli+sts_unlabeled", f"BERT-{size}-flow (NLI)", size),
            ]
        rows += cells("table3", pub, rep, pairs, score_columns, "table3")
    table4 = load("table4_batch_size.csv")
    if table4 is not None:
        pub = pd.read_csv(published / "consert_table4_batch_size.csv")
        pub = pub.assign(key=pub.batch_size.astype(str))
        rep = table4[table4["size"] == "base"]
        rep = rep.assign(key=rep.batch_size.astype(str))
        pairs = [(k, k, "base") for k in pub.key]
        rows += cells("table4", pub, rep, pairs, [("avg_spearman", "Avg")], "table4")
        rows += cells("table4", pub, rep, pairs, [("steps", "best_step")], "table4_steps", report_gaps=False)
    # optional: only configs whose `family.methods` lists a method produce it
    family = load("table_contrastive_family.csv") if (results / "table_contrastive_family.csv").is_file() else None
    if family is not None:
        pub = pd.read_csv(published / "contrastive_family.csv").assign(key=lambda f: f.method)
        rep = family.assign(key=family.method)
        rows += cells("family", pub, rep, list(FAMILY_ROWS), score_columns, "family")
    rows += _text_values(load, published, yardsticks)
    frame = pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))
    declared = frame.apply(lambda r: any(fnmatch(f"{r.artifact}:{r.row}", p) for p in not_run), axis=1)
    frame.loc[(frame.status == "missing") & declared.astype(bool), ["status", "verdict"]] = "not run"
    return decide(frame, alpha)


def decide(frame: pd.DataFrame, alpha: float = DEFAULT_ALPHA) -> pd.DataFrame:
    """Verdicts of the compared cells: Holm over the comparable cells judged by p-values (the family
    of one run's decisions, family-wise error at most ``alpha``), ``|delta| <= tolerance`` for the others;
    ``reproduced``, else ``higher``/``lower`` (the reproduction's side); ``not comparable`` for other settings."""
    frame = frame.copy()
    compared = frame.status == "compared"
    tested = compared & frame.comparable.astype(bool) & (frame.decision == "holm")
    frame["p_adjusted"] = np.nan
    frame.loc[tested, "p_adjusted"] = holm(frame.loc[tested, "p_value"].to_numpy(dtype=float))
    passes = frame.within_tolerance.astype(bool).where(~tested, frame.p_adjusted >= alpha)
    side = np.where(frame.reproduced > frame.published, "higher", "lower")
    verdicts = np.where(passes, "reproduced", side)
    verdicts = np.where(frame.comparable.astype(bool), verdicts, "not comparable")
    frame.loc[compared, "verdict"] = verdicts[compared.to_numpy()]
    return frame


def _text_values(load, published: Path, yardsticks: Yardsticks) -> list[dict[str, Any]]:
    """The numbers the paper states in its text for Figures 4 and 5."""
    text = pd.read_csv(published / "consert_text_values.csv")
    stated = dict(zip(text.quantity, text.value, strict=True))
    rows = []
    curve = load("figure4_topk.csv")
    if curve is not None:
        bert = curve[curve.model == "BERT-base"].set_index("k")
        if bert.empty:
            rows.append(gap_row("figure4_topk", "BERT-base", "no BERT-base curve in figure4_topk.csv"))
        else:
            published_k = int(stated["best k for BERT-base"])
            reproduced = {  # at the paper's k, not the curve's maximum (an argmax is biased upwards)
                "BERT-base avg spearman with no tokens removed": bert.Avg.get(0, np.nan),
                "BERT-base best avg spearman (k=34 most frequent tokens removed)": bert.Avg.get(
                    published_k + 1, np.nan
                ),
            }
            for quantity, value in reproduced.items():
                if pd.isna(value):  # the curve stops short of the paper's k (a small topk_max)
                    rows.append(
                        gap_row("figure4_topk", quantity, f"the BERT-base curve stops at k = {bert.index.max()}")
                    )
                    continue
                rows.append(_text_row("figure4_topk", quantity, stated[quantity], value, yardsticks, bert.iloc[0]))
            rows.append(best_k_row(bert.Avg, published_k, bert.iloc[0]))
    heat = load("figure5_heatmap.csv")
    if heat is not None:
        heat = heat[heat["size"] == "base"].set_index(["view1", "view2"])
        pairs = {
            "None-None avg spearman": ("none", "none"),
            "best pair (Shuffle + Feature Cutoff) avg spearman": ("shuffle", "feature_cutoff"),
        }
        for quantity, cell in pairs.items():
            if cell not in heat.index:
                rows.append(gap_row("figure5_heatmap", quantity, f"no base heatmap cell {cell}"))
            else:
                row = heat.loc[cell]
                rows.append(_text_row("figure5_heatmap", quantity, stated[quantity], row.Avg, yardsticks, row))
    return [r for r in rows if r is not None]


def best_k_row(curve: pd.Series, published_k: int, source: pd.Series) -> dict[str, Any] | None:
    """Figure 4's best k, in the authors' convention: reproduced when the published k is one of the
    near-best k, those whose Avg lies within the untrained allowance of the curve's maximum (a flat
    top has several; which one wins the argmax is then a matter of rounding). The tolerance is the
    farthest near-best k from the argmax."""
    allowance = untrained_yardstick().tolerance
    near = [authors_topk_k(int(k)) for k, value in curve.items() if value >= curve.max() - allowance]
    near = [k for k in near if k is not None]
    best = authors_topk_k(int(curve.idxmax()))
    if best is None:  # nothing removed is best: no k
        best = -1
    reach = max((abs(k - best) for k in near), default=0)
    yardstick = Yardstick(
        float(reach),
        f"k (authors' convention) whose Avg is within {allowance:g} of the maximum: {near or 'none'}",
        "fixed",
    )
    row = _comparison_row("figure4_topk", "best k for BERT-base", "value", published_k, best, yardstick, source,
                          not_comparable_reason(source, "base"), "all")  # fmt: skip
    if row is not None:
        row["within_tolerance"] = published_k in near
    return row


def _text_row(
    artifact: str, quantity: str, published: Any, reproduced: Any, yardsticks: Yardsticks, source: pd.Series
) -> dict[str, Any] | None:
    reason = not_comparable_reason(source, "base")
    bounds = bootstrap_bounds(source, "Avg") if "avg spearman" in quantity else (np.nan, np.nan, "")
    yardstick = yardsticks.of(artifact, quantity, source, "Avg_std", "text")
    return _comparison_row(artifact, quantity, "value", published, reproduced, yardstick, source, reason, "all", bounds)


def _comparison_row(
    artifact: str,
    row: str,
    column: str,
    published: Any,
    reproduced: Any,
    yardstick: Yardstick,
    source: pd.Series,
    reason: str,
    aggregate: str = "",
    bounds: tuple[float, float, str] = (np.nan, np.nan, ""),
) -> dict[str, Any] | None:
    """One comparison row (its verdict is set by :func:`decide`), or None when either value is missing."""
    value, ours = pd.to_numeric(published, errors="coerce"), pd.to_numeric(reproduced, errors="coerce")
    if pd.isna(value) or pd.isna(ours):
        return None
    delta = float(ours) - float(value)
    low, high, source_name = bounds
    return {
        "artifact": artifact,
        "row": row,
        "column": column,
        "aggregate": aggregate,
        "published": float(value),
        "reproduced": float(ours),
        "delta": delta,
        "tolerance": yardstick.tolerance,
        "tolerance_source": yardstick.source,
        "within_tolerance": abs(delta) <= yardstick.tolerance,
        "decision": yardstick.decision,
        "p_value": yardstick.p_value(delta),
        "p_adjusted": np.nan,
        "ci_low": low,
        "ci_high": high,
        "interval": source_name,
        "verdict": "",
        "comparable": not reason,
        "reason": reason,
        "setting": source.get("setting", ""),
        "status": "compared",
    }


def failures(comparison: pd.DataFrame) -> pd.DataFrame:
    """Comparable cells whose verdict is ``higher`` or ``lower``: what a CI gate fails on."""
    return comparison[(comparison.status == "compared") & comparison.verdict.isin(["higher", "lower"])]


def gaps(comparison: pd.DataFrame) -> pd.DataFrame:
    """Published rows with nothing reproduced that no ``not_run`` pattern declares: the gate fails on them."""
    return comparison[comparison.status == "missing"]


#: Exit status of ``compare --check`` when no compared cell is comparable (stand-in or other setting only).
NO_COMPARABLE_EXIT = 3
#: ``status`` of the row that records a gate passed on stand-in results by ``--allow-stand-in``.
STAND_IN_ALLOWED = "stand-in allowed"


def comparable_cells(comparison: pd.DataFrame) -> pd.DataFrame:
    """Compared cells produced in the paper's setting: the only ones a gate can decide on."""
    return comparison[(comparison.status == "compared") & comparison.comparable.astype(bool)]


def stand_in_allowed_row(comparison: pd.DataFrame) -> dict[str, Any]:
    """The row that says a gate passed with no comparable cell because ``--allow-stand-in`` was given."""
    compared = comparison[comparison.status == "compared"]
    reasons = sorted({str(r).split(":")[0] for r in compared.reason if str(r)})
    return {
        **gap_row("gate", "no comparable cell", ""),
        "status": STAND_IN_ALLOWED,
        "verdict": "not comparable",
        "reason": f"--allow-stand-in: none of the {len(compared)} compared cells is comparable "
        f"({'; '.join(reasons)}); the gate passed without comparing anything with the paper",
    }


def gate(comparison: pd.DataFrame, allow_stand_in: bool = False) -> tuple[int, str]:
    """The gate's exit status and its one-line reason.

    1 when nothing was compared, a published row is missing without being declared, or a comparable
    cell's verdict is ``higher``/``lower``; :data:`NO_COMPARABLE_EXIT` when cells were compared but none
    is comparable (stand-in results cannot pass for a reproduction), unless ``allow_stand_in``; else 0.
    """
    compared = comparison[comparison.status == "compared"]
    if compared.empty:
        return 1, "no reproduced cell has a published counterpart: nothing was compared"
    missing, failed = gaps(comparison), failures(comparison)
    if len(missing):
        return 1, (
            f"{len(missing)} published rows have nothing reproduced; produce them or declare them with "
            "--not-run ARTIFACT:ROW (config key not_run)"
        )
    if len(failed):
        return 1, f"{len(failed)} comparable cells are higher or lower than published beyond their yardstick"
    if comparable_cells(comparison).empty:
        if allow_stand_in:
            return 0, f"no cell is comparable; passing because --allow-stand-in was given ({len(compared)} cells)"
        return NO_COMPARABLE_EXIT, (
            f"none of the {len(compared)} compared cells is comparable (offline stand-in, another encoder or "
            "other NLI data): nothing to gate on; --allow-stand-in accepts such a run knowingly"
        )
    return 0, f"every one of {len(comparable_cells(comparison))} comparable cells is reproduced"
