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
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .artifacts import MULTI_SUBSET, authors_topk_k
from .data import DATASETS

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
    "within_tolerance",
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


def cell_value(row: pd.Series, column: str, aggregate: str) -> tuple[Any, str, str, tuple[float, float, str]]:
    """(reproduced value, the cell's aggregate label, why it is not comparable or "", its interval)."""
    if column not in MULTI_SUBSET:
        return row.get(column), "test split" if column in DATASETS else "", "", cell_interval(row, column)
    if aggregate == "unknown":
        why = "the published value's aggregate over subsets is unknown"
        return row.get(column), "unknown", why, cell_interval(row, column)
    name = column if aggregate == "all" else f"{column}_{aggregate}"
    return row.get(name), aggregate, "", cell_interval(row, name)


def cell_interval(row: pd.Series, name: str) -> tuple[float, float, str]:
    """The wider of a cell's test-set bootstrap interval and its interval over seeds, with its source."""
    candidates = []
    for source, prefix in (("bootstrap", f"{name}_ci"), ("seeds", f"{name}_seed_ci")):
        low = pd.to_numeric(row.get(f"{prefix}_low"), errors="coerce")
        high = pd.to_numeric(row.get(f"{prefix}_high"), errors="coerce")
        if pd.notna(low) and pd.notna(high):
            candidates.append((float(high) - float(low), float(low), float(high), source))
    if not candidates:
        return np.nan, np.nan, ""
    _, low, high, source = max(candidates)
    return low, high, source


def verdict(comparable: bool, published: float, reproduced: float, tolerance: float, low: float, high: float) -> str:
    """``reproduced`` when the published value lies in the interval or within the tolerance (a floor),
    else ``higher``/``lower`` (the reproduction's side); ``not comparable`` for other settings."""
    if not comparable:
        return "not comparable"
    inside = pd.notna(low) and pd.notna(high) and low <= published <= high
    if inside or abs(reproduced - published) <= tolerance:
        return "reproduced"
    return "higher" if reproduced > published else "lower"


def _cells(
    artifact: str,
    published: pd.DataFrame,
    reproduced: pd.DataFrame,
    key_pairs: list[tuple[str, str, str | None]],
    columns: list[tuple[str, str]],
    tolerance: float,
    aggregates: dict[tuple[str, str], tuple[str, str]],
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
            value, aggregate, why, bounds = cell_value(rep_row, reproduced_column, row_aggregate)
            row = _comparison_row(
                artifact,
                published_name,
                published_column,
                pub_row.get(published_column),
                value,
                tolerance,
                rep_row,
                "; ".join(r for r in (reason, why) if r),
                aggregate,
                bounds,
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
        "within_tolerance": False,
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
    results: Path, published: Path, tolerances: dict[str, float] | None = None, not_run: Sequence[str] = ()
) -> pd.DataFrame:
    """The comparison table of the reproduced artifacts under ``results``.

    Every published row the harness reproduces gives cells (``status`` ``compared``) or a gap row:
    ``not run`` when it matches one of ``not_run`` (``artifact:row`` glob patterns a config declares,
    e.g. ``table2:*large*`` for a base-only run), else ``missing``; a missing artifact file gives one
    gap row per comparison artifact it feeds.
    """
    tol = {**DEFAULT_TOLERANCES, **(tolerances or {})}
    aggregates = load_aggregates(published)
    rows: list[dict[str, Any]] = []
    score_columns = [(c, c) for c in SCORE_COLUMNS]

    def load(name: str) -> pd.DataFrame | None:
        path = results / name
        if path.is_file():
            return pd.read_csv(path)
        rows.extend(gap_row(artifact, "*", f"{path} not found") for artifact in ARTIFACT_FILES[name])
        return None

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
        rows += _cells("table2", pub, rep, pairs, score_columns, tol["table2"], aggregates)
        whitening = pd.read_csv(published / "bert_whitening_table1.csv")
        whitening = whitening.assign(key=whitening.method)
        pairs = [(m, f"{m} ({p})", "base") for m, p in zip(whitening.method, whitening.pooling, strict=True)]
        rows += _cells("whitening_table1", whitening, rep, pairs, score_columns, tol["table2"], aggregates)
        sgopt = pd.read_csv(published / "sgopt_table1_bert_base.csv")
        sgopt = sgopt.assign(key=sgopt.model + " | " + sgopt.pooling.astype(str)).rename(columns={"STSb": "STSb"})
        pairs = [
            ("BERT-base + contrastive (SG-OPT) | cls", "BERT-base-SG-OPT", "base"),
            ("BERT-base no tuning | cls", "BERT-base (cls)", "base"),
            ("BERT-base no tuning | mean", "BERT-base (mean)", "base"),
        ]
        rows += _cells("sgopt_table1", sgopt, rep, pairs, score_columns, tol["sgopt"], aggregates)
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
        rows += _cells("table3", pub, rep, pairs, score_columns, tol["table3"], aggregates)
    table4 = load("table4_batch_size.csv")
    if table4 is not None:
        pub = pd.read_csv(published / "consert_table4_batch_size.csv")
        pub = pub.assign(key=pub.batch_size.astype(str))
        rep = table4[table4["size"] == "base"]
        rep = rep.assign(key=rep.batch_size.astype(str))
        pairs = [(k, k, "base") for k in pub.key]
        rows += _cells("table4", pub, rep, pairs, [("avg_spearman", "Avg")], tol["table4"], aggregates)
        steps = [("steps", "best_step")]
        rows += _cells("table4", pub, rep, pairs, steps, tol["table4_steps"], aggregates, report_gaps=False)
    # optional: only configs whose `family.methods` lists a method produce it
    family = load("table_contrastive_family.csv") if (results / "table_contrastive_family.csv").is_file() else None
    if family is not None:
        pub = pd.read_csv(published / "contrastive_family.csv").assign(key=lambda f: f.method)
        rep = family.assign(key=family.method)
        rows += _cells("family", pub, rep, list(FAMILY_ROWS), score_columns, tol["family"], aggregates)
    rows += _text_values(load, published, tol["text"])
    frame = pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))
    declared = frame.apply(lambda r: any(fnmatch(f"{r.artifact}:{r.row}", p) for p in not_run), axis=1)
    frame.loc[(frame.status == "missing") & declared.astype(bool), ["status", "verdict"]] = "not run"
    return frame


def _text_values(load, published: Path, tolerance: float) -> list[dict[str, Any]]:
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
            best_k = authors_topk_k(int(bert.Avg.idxmax()))  # the paper's k is the authors' script's
            reproduced = {
                "BERT-base avg spearman with no tokens removed": bert.Avg.get(0, np.nan),
                "BERT-base best avg spearman (k=34 most frequent tokens removed)": bert.Avg.max(),
            }
            for quantity, value in reproduced.items():
                rows.append(_text_row("figure4_topk", quantity, stated[quantity], value, tolerance, bert.iloc[0]))
            rows.append(
                _text_row(
                    "figure4_topk", "best k for BERT-base", stated["best k for BERT-base"], best_k, np.inf, bert.iloc[0]
                )
            )
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
                rows.append(
                    _text_row(
                        "figure5_heatmap", quantity, stated[quantity], heat.loc[cell, "Avg"], tolerance, heat.loc[cell]
                    )
                )
    return [r for r in rows if r is not None]


def _text_row(artifact: str, quantity: str, published: Any, reproduced: Any, tolerance: float, source: pd.Series):
    reason = not_comparable_reason(source, "base")
    bounds = cell_interval(source, "Avg") if "avg spearman" in quantity else (np.nan, np.nan, "")
    return _comparison_row(artifact, quantity, "value", published, reproduced, tolerance, source, reason, "all", bounds)


def _comparison_row(
    artifact: str,
    row: str,
    column: str,
    published: Any,
    reproduced: Any,
    tolerance: float,
    source: pd.Series,
    reason: str,
    aggregate: str = "",
    bounds: tuple[float, float, str] = (np.nan, np.nan, ""),
) -> dict[str, Any] | None:
    """One comparison row, or None when either value is missing."""
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
        "tolerance": tolerance,
        "within_tolerance": abs(delta) <= tolerance,
        "ci_low": low,
        "ci_high": high,
        "interval": source_name,
        "verdict": verdict(not reason, float(value), float(ours), tolerance, low, high),
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
