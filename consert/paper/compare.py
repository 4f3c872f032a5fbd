"""Cell-by-cell comparison of reproduced artifacts with the published numbers, and the gate built on it.

Every reproduced cell that has a published counterpart becomes one row of ``comparison.csv``. One
**primary** cell per published row decides the row (Avg with the aggregate the published row used;
``decision.yaml`` names the exceptions); the seven sets stay beside it as **diagnostics**, with their
own interval, outside the gate. Each cell is judged by an equivalence test (:mod:`consert.paper.yardstick`):
the interval of reproduced - published (``diff_low``, ``diff_high``) against a declared ``margin``, with
the verdict ``reproduced``, ``not reproduced`` or ``inconclusive``; ``not comparable`` when the row was
not produced in the paper's setting (the offline stand-in, another encoder, SICK-E instead of
SNLI+MNLI, an unknown aggregate). A last row tests a **shared shift** of every trained primary cell.

Each published STS12-16 number (and an Avg over them) was aggregated one way: ConSERT merges a year's
subsets into one Spearman (``all``), BERT-flow and BERT-whitening report SentEval's mean weighted by
subset size (``wmean``). ``aggregates.csv`` beside the published tables maps every published row to its
aggregate, with the source; the reproduced value of the same aggregate is compared.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from consert.data.senteval import DATASETS
from consert.encode.models import STAND_IN_MODEL
from consert.paper.marks import FIGURE4_POINTS, FIGURE5_CELLS
from consert.paper.tables import MULTI_SUBSET, authors_topk_k
from consert.paper.yardstick import (
    BLOCK_ALPHA,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    SPREAD_ALPHA,
    SPREAD_RATIO,
    UNDECIDABLE,
    UNTRAINED_MARGIN,
    UNTRAINED_SOURCE,
    RowDesign,
    SeedNoise,
    decide_rows,
    difference_half_width,
    equivalence_verdict,
    pooled_noise,
    shared_shift,
)

SCORE_COLUMNS = (*DATASETS, "Avg")
#: The (published, reproduced) columns of a table of the 7 sets and their Avg.
SCORE_PAIRS = tuple((column, column) for column in SCORE_COLUMNS)
#: The paper's encoders by size: only runs that descend from these are comparable.
PAPER_MODELS = {"base": "bert-base-uncased", "large": "bert-large-uncased"}

_UNSET: Any = np.nan  # a number (or verdict) not set for this row


@dataclass
class ComparisonRow:
    """One row of ``comparison.csv``, its columns in order: a compared cell, a gap, or the shared shift. The
    defaults are a row with nothing set: numbers unset, texts empty."""

    artifact: str = _UNSET  # the compared table or figure (table2, whitening_table1, figure4_topk, ...)
    row: str = _UNSET  # its published row
    column: str = ""  # its published column (a set, Avg, a stated value)
    size: str = ""  # the model size the row is judged at (base, large; empty: none)
    aggregate: str = ""  # SentEval's aggregate the published value used (all, mean, wmean)
    role: str = ""  # primary (decides the row), diagnostic, or the shared shift
    published: float = _UNSET
    reproduced: float = _UNSET
    delta: float = _UNSET  # reproduced - published
    n_seeds: int = _UNSET  # the reproduced runs the value averages
    seed_std: float = _UNSET  # their standard deviation
    published_runs: int = _UNSET  # the runs the published value averages
    same_run_as: str = ""  # the row whose run this is again (decided, neither pooled nor averaged twice)
    noise: str = ""  # the seed-noise kind the interval is built with
    sigma: float = _UNSET  # the seed SD of one run used for the interval
    sigma_df: float = _UNSET  # its degrees of freedom (inf: declared)
    sigma_source: str = ""  # pooled over which rows, or which declaration
    margin: float = _UNSET  # the equivalence margin
    margin_source: str = ""  # and its reason
    diff_low: float = _UNSET  # the decision interval of reproduced - published
    diff_high: float = _UNSET
    verdict: str = _UNSET  # reproduced, not reproduced, inconclusive, not comparable, missing, not run
    test_ci_low: float = _UNSET  # the test-pair bootstrap interval of the reproduced value (shown, not decided on)
    test_ci_high: float = _UNSET
    comparable: bool = _UNSET  # the reproduced row ran in the paper's setting
    reason: str = _UNSET  # why it is not comparable, or missing
    setting: str = ""  # the reproduced row's setting (paper, rehearsal, stand-in)
    status: str = _UNSET  # compared, missing, not run, no published value


COMPARISON_COLUMNS = tuple(f.name for f in fields(ComparisonRow))
PRIMARY, DIAGNOSTIC, SHIFT, BLOCK = "primary", "diagnostic", "shared shift", "block shift"
#: Noise kinds without a seed model: ``none`` (untrained, deterministic), ``fixed`` (a count judged by a fixed
#: tolerance, e.g. Table 4's steps), ``near-best`` (Figure 4's best k, decided when its row is built).
UNTRAINED, FIXED, NEAR_BEST = "none", "fixed", "near-best"
#: What ``compare --check`` does with an inconclusive primary cell (``gate.inconclusive``).
INCONCLUSIVE_POLICIES = ("pass", "fail")
#: The reproduced artifact files the comparison reads, and the comparison artifacts each feeds.
ARTIFACT_FILES = {
    "table2_unsup.csv": ("table2", "whitening_table1", "sgopt_table1"),
    "table3_sup.csv": ("table3",),
    "table4_batch_size.csv": ("table4",),
    "figure4_topk.csv": ("figure4_topk",),
    "figure5_heatmap.csv": ("figure5_heatmap",),
    "table_contrastive_family.csv": ("family",),
}
#: The blocks of the block-wise shift tests: which artifacts test together (the sweeps: Table 4 and Figure 5).
BLOCK_OF = {"table2": "Table 2", "table3": "Table 3", "table4": "sweeps", "figure5_heatmap": "sweeps",
            "family": "family", "sgopt_table1": "SG-OPT"}  # fmt: skip


def block_of(artifact: str, size: str) -> str:
    """The block a row of ``artifact`` at model ``size`` is tested in: its table and size."""
    return f"{BLOCK_OF.get(artifact, artifact)} {size}"


#: The contrastive family's published rows (``contrastive_family.csv``) and the reproduced rows they match.
FAMILY_ROWS = (("SimCSE-BERT-base", "SimCSE-base", "base"), ("AugCSE-BERT-base", "AugCSE-base", "base"))


def not_comparable_reason(row: pd.Series, size: str | None) -> str:
    """Empty when the reproduced row used the paper's encoder and data; else why not."""
    texts = " ".join(str(row.get(c, "")) for c in ("setting", "nli"))
    if "stand-in" in texts:
        return "offline stand-in: " + "; ".join(
            s for s in (str(row.get("setting", "")), str(row.get("nli", ""))) if "stand-in" in s
        )
    if unverified_data(row):
        return unverified_data(row)
    if size in PAPER_MODELS:
        model = str(row.get("base_model", "") or row.get("model", ""))
        if model != PAPER_MODELS[size]:
            return f"encoder {model!r} is not the paper's {PAPER_MODELS[size]!r}"
    return ""


def unverified_data(row: pd.Series) -> str:
    """Why a row cannot be compared with anything published on SentEval's files, or "" when it can."""
    if str(row.get("data_verified", "")).lower() == "false":
        return "data files differ from SentEval's (data_verified = False)"
    return ""


#: The aggregates a published row may declare (``unknown``: not recorded by its authors).
AGGREGATES = ("all", "mean", "wmean", "unknown")
AGGREGATES_FILE = "aggregates.csv"
DECISION_FILE = "decision.yaml"
ROW_KINDS_FILE = "yardsticks.csv"


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


def bootstrap_bounds(row: pd.Series, name: str) -> tuple[float, float]:
    """A cell's test-set bootstrap interval (averaged over seeds), or NaNs: the uncertainty of paired
    comparisons on the same pairs, shown beside the cell; the verdict uses the decision interval."""
    low = pd.to_numeric(row.get(f"{name}_ci_low"), errors="coerce")
    high = pd.to_numeric(row.get(f"{name}_ci_high"), errors="coerce")
    return (float(low), float(high)) if pd.notna(low) and pd.notna(high) else (np.nan, np.nan)


@dataclass(frozen=True)
class Decision:
    """The declarations of ``decision.yaml`` (with a config's overrides): the interval's level, each
    artifact's primary column, margins with their reasons, the shared shift's margin, declared seed noise."""

    level: float
    primary: dict[str, str]
    margins: dict[str, tuple[float, str]]
    shift_margin: tuple[float, str]
    noise: dict[str, dict[str, Any]]

    def primary_column(self, artifact: str) -> str:
        """The column of ``artifact`` whose cell decides a row (``*``: every column is its own row)."""
        return self.primary.get(artifact, self.primary["default"])

    def margin(self, artifact: str) -> tuple[float, str]:
        """(margin, reason) of a trained cell of ``artifact``."""
        if artifact not in self.margins:
            raise KeyError(f"{DECISION_FILE} declares no margin for {artifact!r}")
        return self.margins[artifact]

    def declared_noise(self, kind: str, scale: str) -> SeedNoise:
        """The declared seed SD of one run of ``kind`` at ``scale`` (``avg`` or ``set``), known (infinite df)."""
        if kind not in self.noise:
            raise KeyError(f"{DECISION_FILE} declares no seed_noise for kind {kind!r}")
        entry = self.noise[kind]
        return SeedNoise(float(entry[scale]), math.inf, f"declared ({kind}, {scale}): {entry['source']}")


def load_decision(
    published: Path, margins: dict[str, float] | None = None, seed_noise: dict[str, float] | None = None
) -> Decision:
    """``decision.yaml`` under ``published``; ``margins`` (per artifact) and ``seed_noise`` (per kind: the
    Avg's SD; one set's is scaled alike) override it, and say so in their source."""
    path = published / DECISION_FILE
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    declared = {name: (float(e["margin"]), str(e["reason"])) for name, e in raw["margins"].items()}
    for name, value in (margins or {}).items():
        if name not in declared:
            raise ValueError(f"margin override for unknown artifact {name!r}; known: {sorted(declared)}")
        was = f"{path.name}: {declared[name][0]:g}"
        declared[name] = (float(value), f"config override (comparison.margins.{name}; {was})")
    noise = {kind: dict(entry) for kind, entry in raw["seed_noise"].items()}
    for kind, value in (seed_noise or {}).items():
        if kind not in noise:
            raise ValueError(f"seed_noise override for unknown kind {kind!r}; known: {sorted(noise)}")
        ratio = float(noise[kind]["set"]) / float(noise[kind]["avg"])
        source = f"config override (comparison.seed_noise.{kind}); {path.name}: {noise[kind]['source']}"
        noise[kind].update(avg=float(value), set=float(value) * ratio, source=source)
    shift = raw["shared_shift"]
    shift_margin = (float(shift["margin"]), str(shift["reason"]))
    return Decision(float(raw["level"]), dict(raw["primary"]), declared, shift_margin, noise)


class RowKinds:
    """``yardsticks.csv``: per published row (``artifact``, ``row`` glob; the first match wins), the kind of
    its seed noise (``none`` for untrained rows), how many runs its published value averages, and, for a
    row that is another artifact's run again (Table 4's batch 96 is Table 2's run), that row."""

    def __init__(self, published: Path):
        table = pd.read_csv(published / ROW_KINDS_FILE, dtype=str, keep_default_na=False)
        columns = (table.artifact, table.row, table.noise, table.published_runs, table.same_run_as)
        self.rules = list(zip(*columns, strict=True))
        self.path = published / ROW_KINDS_FILE

    def of(self, artifact: str, row: str) -> tuple[str, int, str]:
        """(noise kind, published runs, the row it repeats or "") of a published row."""
        for rule_artifact, pattern, noise, runs, same_run_as in self.rules:
            if rule_artifact == artifact and fnmatch(row, pattern):
                return noise.strip(), int(runs), same_run_as.strip()
        raise KeyError(f"{self.path} has no rule for {artifact} row {row!r}")


@dataclass
class Context:
    """What every cell of one comparison is built with."""

    aggregates: dict[tuple[str, str], tuple[str, str]]
    kinds: RowKinds
    decision: Decision


def _cells(
    artifact: str,
    published: pd.DataFrame,
    reproduced: pd.DataFrame,
    key_pairs: list[tuple[str, str, str | None]],
    columns: list[tuple[str, str]],
    context: Context,
    report_gaps: bool = True,
    margin_key: str | None = None,
) -> list[dict[str, Any]]:
    """Rows for each (published row name, reproduced row name, size) and (published col, reproduced col);
    a published row without its reproduced row gives one gap row (see :func:`gap_row`)."""
    out = []
    primary = context.decision.primary_column(artifact)
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
        row_aggregate = aggregate_of(context.aggregates, artifact, published_name)
        decided = False
        for published_column, reproduced_column in columns:
            value, aggregate, why, name = cell_value(rep_row, reproduced_column, row_aggregate)
            role = PRIMARY if published_column == primary or primary == "*" else DIAGNOSTIC
            row = cell_row(
                artifact, published_name, published_column, pub_row.get(published_column), value, rep_row,
                context, role, "; ".join(r for r in (reason, why) if r), aggregate, name, margin_key,
            )  # fmt: skip
            if row is not None:
                out.append({**row, "size": size or ""})
                decided |= role == PRIMARY
            elif role == PRIMARY and primary != "*" and pd.notna(pd.to_numeric(pub_row.get(published_column))):
                why = f"the reproduced row {reproduced_name!r} has no value for its primary cell ({name})"
                out.append(gap_row(artifact, published_name, why))  # a row cannot pass without its primary cell
    return out


def cell_row(
    artifact: str,
    row: str,
    column: str,
    published: Any,
    reproduced: Any,
    reproduced_row: pd.Series,
    context: Context,
    role: str,
    reason: str,
    aggregate: str = "",
    name: str | None = None,
    margin_key: str | None = None,
) -> dict[str, Any] | None:
    """One comparison row (its interval and verdict are set by :func:`decide`), or None when either value
    is missing. ``reproduced_row`` is the reproduced table's row the value comes from; ``name`` its column
    (its ``_std`` and ``_ci_*`` columns are read beside it)."""
    published_value = pd.to_numeric(published, errors="coerce")
    reproduced_value = pd.to_numeric(reproduced, errors="coerce")
    if pd.isna(published_value) or pd.isna(reproduced_value):
        return None
    name = name or column
    noise, runs, same_run_as = context.kinds.of(artifact, row)
    if margin_key is not None:  # a count judged by a fixed tolerance (Table 4's steps)
        noise = FIXED
    if noise == UNTRAINED:
        margin, margin_source = UNTRAINED_MARGIN, UNTRAINED_SOURCE
    else:
        margin, margin_source = context.decision.margin(margin_key or artifact)
    seeds = pd.to_numeric(reproduced_row.get("n_seeds"), errors="coerce")
    std = pd.to_numeric(reproduced_row.get(f"{name}_std"), errors="coerce")
    low, high = bootstrap_bounds(reproduced_row, name)
    return {
        **gap_row(artifact, row, reason),
        "column": column,
        "aggregate": aggregate,
        "role": role,
        "published": float(published_value),
        "reproduced": float(reproduced_value),
        "delta": float(reproduced_value) - float(published_value),
        "n_seeds": int(seeds) if pd.notna(seeds) else 1,
        "seed_std": float(std) if pd.notna(std) else np.nan,
        "published_runs": runs,
        "same_run_as": same_run_as,
        "noise": noise,
        "margin": float(margin),
        "margin_source": margin_source,
        "verdict": "",
        "test_ci_low": low,
        "test_ci_high": high,
        "comparable": not reason,
        "setting": reproduced_row.get("setting", ""),
        "status": "compared",
    }


def gap_row(artifact: str, row: str, reason: str) -> dict[str, Any]:
    """A published row (``*``: a whole artifact) with nothing reproduced to compare it with."""
    return asdict(
        ComparisonRow(
            artifact, row, "*", role=PRIMARY, verdict="missing", comparable=False, reason=reason, status="missing"
        )
    )


def unpublished_row(artifact: str, row: str, reproduced: pd.DataFrame, citation: str) -> dict[str, Any]:
    """A row reproduced (or planned) with no published value to compare it with: listed, never a gate failure."""
    return {
        **gap_row(artifact, row, f"no published value ({citation})"),
        "status": "no published value",
        "verdict": "not comparable",
        "setting": reproduced.iloc[0].get("setting", "") if not reproduced.empty else "",
    }


def _by_method(frame: pd.DataFrame) -> pd.Series:
    return frame.method


def _every_row(frame: pd.DataFrame) -> pd.DataFrame:
    return frame


def _per_size(*templates: tuple[str, str]) -> Callable[[pd.DataFrame], list[tuple[str, str, str | None]]]:
    """Row pairs for every paper model size, from (published, reproduced) names with ``{size}`` in them."""
    return lambda _: [(p.format(size=size), r.format(size=size), size) for size in PAPER_MODELS for p, r in templates]


@dataclass(frozen=True)
class ComparedRows:
    """A block of compared rows, declared once: the published file and how its rows are keyed, the reproduced
    artifact file and how its rows are keyed, which published row pairs with which reproduced row (and the
    model size the pair is judged at), and the (published, reproduced) columns compared."""

    artifact: str
    published_file: str
    reproduced_file: str
    published_key: Callable[[pd.DataFrame], pd.Series]
    pairs: Callable[[pd.DataFrame], list[tuple[str, str, str | None]]]
    reproduced_key: Callable[[pd.DataFrame], pd.Series] = _by_method
    columns: tuple[tuple[str, str], ...] = SCORE_PAIRS
    reproduced_rows: Callable[[pd.DataFrame], pd.DataFrame] = _every_row
    report_gaps: bool = True
    margin_key: str | None = None  # a count judged by a fixed tolerance under this key (Table 4's steps)
    optional: bool = False  # compared only when the config produced it (the contrastive family)

    def cells(self, published: Path, reproduced: pd.DataFrame, context: Context) -> list[dict[str, Any]]:
        pub = pd.read_csv(published / self.published_file)
        pub = pub.assign(key=self.published_key(pub))
        rep = self.reproduced_rows(reproduced)
        rep = rep.assign(key=self.reproduced_key(rep))
        pairs, columns = self.pairs(pub), list(self.columns)
        return _cells(self.artifact, pub, rep, pairs, columns, context, self.report_gaps, self.margin_key)


@dataclass(frozen=True)
class StatedCells:
    """Cells that a procedure builds from one reproduced file: the stand-in's own published scores, the values
    the paper states in its text for Figures 4 and 5."""

    artifact: str
    reproduced_file: str
    build: Callable[[pd.DataFrame, Path, Context], list[dict[str, Any]]]
    optional: bool = False

    def cells(self, published: Path, reproduced: pd.DataFrame, context: Context) -> list[dict[str, Any]]:
        return self.build(reproduced, published, context)


def _base_rows(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["size"] == "base"]


def _by_batch_size(frame: pd.DataFrame) -> pd.Series:
    return frame.batch_size.astype(str)


def _table4_rows(columns: tuple[str, str], **options: Any) -> ComparedRows:
    """Table 4 (base, by batch size): one published column against one reproduced column."""
    return ComparedRows(
        "table4", "consert_table4_batch_size.csv", "table4_batch_size.csv", _by_batch_size, _same_keys,
        reproduced_key=_by_batch_size, columns=(columns,), reproduced_rows=_base_rows, **options,
    )  # fmt: skip


def _same_keys(published: pd.DataFrame) -> list[tuple[str, str, str | None]]:
    return [(key, key, "base") for key in published.key]


def _whitening_pairs(published: pd.DataFrame) -> list[tuple[str, str, str | None]]:
    """BERT-whitening's Table 1 rows against Table 2's whitening rows of the same pooling."""
    return [(m, f"{m} ({p})", "base") for m, p in zip(published.method, published.pooling, strict=True)]


def _table2_pairs(_: pd.DataFrame) -> list[tuple[str, str, str | None]]:
    pairs = [("Avg. GloVe embeddings", "Avg. GloVe embeddings", None)]
    return pairs + _per_size(
        ("BERT-{size}", "BERT-{size} (mean:-2,-1)"),
        ("BERT-{size}-flow", "BERT-{size}-flow"),
        ("ConSERT-{size}", "ConSERT-{size}"),
    )(_)


def read_reproduced(results: Path) -> dict[str, pd.DataFrame | None]:
    """Every reproduced file the comparison reads (None where it is missing). Loading only loads."""
    files = dict.fromkeys(block.reproduced_file for block in COMPARED)
    # .copy(): one block per dtype (a wide table is read as many blocks, and keying it would fragment it)
    return {name: pd.read_csv(results / name).copy() if (results / name).is_file() else None for name in files}


def compare(
    results: Path,
    published: Path,
    not_run: Sequence[str] = (),
    margins: dict[str, float] | None = None,
    seed_noise: dict[str, float] | None = None,
    seeds: dict[str, int] | None = None,
) -> pd.DataFrame:
    """The comparison table of the reproduced artifacts under ``results``, block by block of :data:`COMPARED`.

    Every published row the harness reproduces gives cells (``status`` ``compared``) or a gap row:
    ``not run`` when it matches one of ``not_run`` (``artifact:row`` glob patterns a config declares,
    e.g. ``table2:*large*`` for a base-only run), else ``missing``; a missing artifact file gives one
    gap row per comparison artifact it feeds. ``margins`` and ``seed_noise`` override ``decision.yaml``.
    ``seeds`` (``artifact:kind`` -> seeds, the config's design): a comparable trained primary cell that ran
    fewer is ``missing`` (its seeds named in ``reason``) unless ``not_run`` declares it.
    """
    context = Context(load_aggregates(published), RowKinds(published), load_decision(published, margins, seed_noise))
    reproduced = read_reproduced(results)
    rows: list[dict[str, Any]] = []
    reported: set[str] = set()
    for block in COMPARED:
        frame = reproduced[block.reproduced_file]
        if frame is not None:
            rows += block.cells(published, frame, context)
        elif not block.optional and block.reproduced_file not in reported:
            reported.add(block.reproduced_file)
            why = f"{results / block.reproduced_file} not found"
            rows += [gap_row(artifact, "*", why) for artifact in ARTIFACT_FILES[block.reproduced_file]]
    frame = pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))
    declared = frame.apply(lambda r: any(fnmatch(f"{r.artifact}:{r.row}", p) for p in not_run), axis=1)
    frame.loc[(frame.status == "missing") & declared.astype(bool), ["status", "verdict"]] = "not run"
    short = _missing_seeds(frame, seeds or {}) & ~declared.astype(bool)
    frame.loc[short, "reason"] = [f"{int(n)} of {seeds[f'{a}:{k}']} seeds ran (the config's design)"
                                  for n, a, k in zip(frame.n_seeds[short], frame.artifact[short], frame.noise[short],
                                                     strict=True)]  # fmt: skip
    frame.loc[short, ["status", "verdict"]] = "missing"
    return decide(frame, context.decision)


def _missing_seeds(frame: pd.DataFrame, seeds: dict[str, int]) -> pd.Series:
    """Comparable primary cells that ran fewer seeds than the design gives their ``artifact:kind``."""
    expected = pd.Series([seeds.get(f"{a}:{k}", 0) for a, k in zip(frame.artifact, frame.noise, strict=True)],
                         index=frame.index)  # fmt: skip
    chosen = (frame.status == "compared") & (frame.role == PRIMARY) & frame.comparable.astype(bool)
    return chosen & (pd.to_numeric(frame.n_seeds, errors="coerce").fillna(0) < expected)


STAND_IN_FILE = "stand_in_mteb.csv"


def _stand_in_cells(table2: pd.DataFrame, published: Path, context: Context) -> list[dict[str, Any]]:
    """The stand-in's own published numbers (MTEB: mean pooling, test sets) against Table 2's mean-pooled row
    of the stand-in, when one ran (the offline configs): a gate that decides real cells offline."""
    anchors = pd.read_csv(published / STAND_IN_FILE)
    rows = []
    for _, rep_row in table2[table2.method.astype(str).str.fullmatch(r"BERT-\w+ \(mean\)")].iterrows():
        if str(rep_row.get("base_model", "") or rep_row.get("model", "")) != STAND_IN_MODEL:
            continue
        reason = unverified_data(rep_row)
        for anchor in anchors.itertuples():
            label = f"{anchor.model.split('/')[-1]} ({anchor.pooling}) {anchor.dataset}"
            value, aggregate, _, name = cell_value(rep_row, anchor.dataset, "all")
            row = cell_row("stand_in_mteb", label, anchor.dataset, anchor.value, value, rep_row, context, PRIMARY,
                           reason, aggregate, name)  # fmt: skip
            if row is not None:
                rows.append({**row, "setting": f"{row['setting']} vs its own published MTEB scores"})
    return rows


def decide(frame: pd.DataFrame, decision: Decision) -> pd.DataFrame:
    """Intervals and verdicts of the compared cells, the block-wise shift tests and the shared-shift row.

    The comparable trained primary cells are decided together by :func:`~consert.paper.yardstick.decide_rows`
    (the seed SD pooled per kind and model size, never below the declared one; the seed-spread test; leaning
    out; undecidable rows; the block tests). Other trained cells (diagnostics, rows of another setting) get
    their interval alike, pooled per kind, size, scale and comparability; untrained and fixed cells are judged
    on their point difference; ``not comparable`` for rows outside the paper's setting."""
    frame = frame.copy()
    for column in ("sigma_source", "verdict", "reason"):
        frame[column] = frame[column].astype(object)
    compared = frame.status == "compared"
    trained = compared & ~frame.noise.isin([UNTRAINED, FIXED, NEAR_BEST])
    frame.loc[compared, ["diff_low", "diff_high"]] = frame.loc[compared, ["delta", "delta"]].to_numpy()
    frame.loc[compared & ~trained, ["sigma", "sigma_df"]] = 0.0
    scale = np.where(frame.role == PRIMARY, "avg", "set")
    comparable = frame.comparable.astype(bool).to_numpy()
    repeats = repeats_another_run(frame).to_numpy()
    sizes = frame["size"].fillna("").astype(str).replace("", "base").to_numpy()
    keys = [frame.noise[trained], sizes[trained.to_numpy()], scale[trained.to_numpy()], comparable[trained.to_numpy()]]
    for (kind, _, level, _), group in frame[trained].groupby(keys):
        # one pool per kind, size, scale and comparability; a row that repeats another's run adds no seeds
        pool = group[~repeats[frame.index.get_indexer(group.index)]]
        declared = decision.declared_noise(kind, level)
        noise = pooled_noise(pool.seed_std.tolist(), pool.n_seeds.astype(int).tolist(), declared)
        noise = noise if noise.sigma > declared.sigma else declared  # never narrower than the declared SD
        for index, row in group.iterrows():
            half = difference_half_width(noise, int(row.n_seeds), int(row.published_runs), decision.level)
            frame.loc[index, ["sigma", "sigma_df", "sigma_source"]] = [noise.sigma, noise.df, noise.source]
            frame.loc[index, ["diff_low", "diff_high"]] = [row.delta - half, row.delta + half]
    decided = compared & (frame.noise != NEAR_BEST)
    verdicts = [
        equivalence_verdict(low, high, margin) if comparable else "not comparable"
        for low, high, margin, comparable in zip(
            frame.diff_low[decided], frame.diff_high[decided], frame.margin[decided],
            frame.comparable[decided].astype(bool), strict=True,
        )
    ]  # fmt: skip
    frame.loc[decided, "verdict"] = verdicts
    frame.loc[compared & (frame.noise == NEAR_BEST) & ~frame.comparable.astype(bool), "verdict"] = "not comparable"
    rows = trained & (frame.role == PRIMARY) & frame.comparable.astype(bool)
    blocks = _decide_rows(frame, rows.to_numpy(), sizes, repeats, decision) if rows.any() else []
    shift = shift_row(frame, decision)
    extra = blocks + ([shift] if shift is not None else [])
    return pd.concat([frame, pd.DataFrame(extra)], ignore_index=True) if extra else frame


def _decide_rows(frame: pd.DataFrame, rows: np.ndarray, sizes: np.ndarray, repeats: np.ndarray,
                 decision: Decision) -> list[dict[str, Any]]:  # fmt: skip
    """Decide the comparable trained primary cells (``rows``) in place; return the block tests' rows."""
    chosen = frame[rows]
    design = RowDesign(
        n=chosen.n_seeds.to_numpy(dtype=float),
        m=chosen.published_runs.to_numpy(dtype=float),
        margin=chosen.margin.to_numpy(dtype=float),
        declared=np.array([decision.declared_noise(kind, "avg").sigma for kind in chosen.noise]),
        group=np.array([f"{kind} {size}" for kind, size in zip(chosen.noise, sizes[rows], strict=True)]),
        block=np.array([block_of(a, size) for a, size in zip(chosen.artifact, sizes[rows], strict=True)]),
        repeats=repeats[rows],
    )
    spread = chosen.seed_std.to_numpy(dtype=float)
    result = decide_rows(chosen.delta.to_numpy(dtype=float)[None], np.nan_to_num(spread)[None], design,
                         decision.shift_margin[0], decision.level)  # fmt: skip
    for position, index in enumerate(chosen.index):
        why = [str(frame.at[index, "reason"])] if isinstance(frame.at[index, "reason"], str) else []
        if result.spread_beyond[0, position]:
            why.append(f"seed spread beyond {SPREAD_RATIO:g}x the declared SD (chi-square, p < {SPREAD_ALPHA:g})")
        if result.leans_out[0, position]:
            why.append("leans out: its interval at the declared SD lies beyond the margin")
        if result.verdict[0, position] == UNDECIDABLE:
            why.append("the published run's own noise fills the margin: no run can show it equivalent")
        kind, df = frame.at[index, "noise"], result.df[0, position]
        declared = decision.declared_noise(kind, "avg")
        source = declared.source if math.isinf(df) else (
            f"pooled per kind and size ({design.group[position]}, {df:g} df), above the declared {declared.sigma:g}"
        )  # fmt: skip
        frame.loc[index, ["sigma", "sigma_df", "diff_low", "diff_high", "verdict", "reason"]] = [
            result.sigma[0, position], result.df[0, position], result.low[0, position], result.high[0, position],
            result.verdict[0, position], "; ".join(why),
        ]  # fmt: skip
        frame.loc[index, "sigma_source"] = source
    margin, reason = decision.shift_margin
    return [
        {
            **gap_row(SHIFT, f"block: {name}", ""),
            "column": "mean delta" if math.isfinite(mean) else "sum of squared standardised deltas",
            "role": BLOCK,
            "delta": mean,
            "noise": "rows",
            "margin": margin,
            "margin_source": reason,
            "verdict": NOT_REPRODUCED if p < BLOCK_ALPHA else "no shift shown",
            "comparable": True,
            "reason": f"Holm-adjusted p = {p:.3g} of a shift beyond the margin (family-wise {BLOCK_ALPHA:g})",
            "status": "compared",
        }
        for name, mean, p in zip(result.blocks, result.block_mean[0], result.block_p[0], strict=True)
    ]


def shift_row(frame: pd.DataFrame, decision: Decision) -> dict[str, Any] | None:
    """The shared-shift test over the comparable trained primary cells (None when there is none)."""
    cells = trained_primary_cells(frame)
    if cells.empty:
        return None
    margin, reason = decision.shift_margin
    result = shared_shift(cells.delta.tolist(), margin, decision.level)
    sign = f"{result.positive} of {result.rows} deltas positive, sign test p = {result.sign_p:.3g}"
    return {
        **gap_row(SHIFT, f"mean delta of {result.rows} trained primary cells", ""),
        "column": "mean delta",
        "role": SHIFT,
        "delta": result.mean,
        "n_seeds": result.rows,
        "noise": "rows",
        "sigma_source": "Student t over the rows' deltas",
        "margin": margin,
        "margin_source": reason,
        "diff_low": result.low,
        "diff_high": result.high,
        "verdict": result.verdict,
        "comparable": result.verdict != "not decided",
        "reason": sign if result.rows >= 3 else f"{result.rows} trained primary cells: a shared shift needs 3",
        "status": "compared",
    }


def trained_primary_cells(comparison: pd.DataFrame) -> pd.DataFrame:
    """Comparable primary cells of trained rows, each run once (a row repeating another's run left out):
    the ones the shared-shift test averages."""
    chosen = (comparison.status == "compared") & (comparison.role == PRIMARY) & comparison.comparable.astype(bool)
    once = ~repeats_another_run(comparison) & (comparison.verdict != UNDECIDABLE)
    return comparison[chosen & once & ~comparison.noise.isin([UNTRAINED, FIXED, NEAR_BEST])]


def repeats_another_run(comparison: pd.DataFrame) -> pd.Series:
    """Rows whose run is another row's (``same_run_as``): decided, but neither pooled nor averaged twice."""
    named = comparison.same_run_as.astype(object)
    return named.notna() & (named.astype(str).str.strip() != "") & (named.astype(str) != "nan")


def _stated(published: Path) -> dict[str, float]:
    text = pd.read_csv(published / "consert_text_values.csv")
    return dict(zip(text.quantity, text.value, strict=True))


def _figure4_text_cells(curve: pd.DataFrame, published: Path, context: Context) -> list[dict[str, Any]]:
    """What the paper states of Figure 4: BERT-base's Avg with nothing removed, at its best k, and that k."""
    stated = _stated(published)
    bert = curve[curve.model == "BERT-base"].set_index("k")
    if bert.empty:
        return [gap_row("figure4_topk", "BERT-base", "no BERT-base curve in figure4_topk.csv")]
    rows = []
    published_k = int(stated["best k for BERT-base"])
    nothing_removed, at_best_k = FIGURE4_POINTS
    reproduced = {  # at the paper's k, not the curve's maximum (an argmax is biased upwards)
        nothing_removed: bert.Avg.get(0, np.nan),
        at_best_k: bert.Avg.get(published_k + 1, np.nan),
    }
    for quantity, value in reproduced.items():
        if pd.isna(value):  # the curve stops short of the paper's k (a small topk_max)
            rows.append(gap_row("figure4_topk", quantity, f"the BERT-base curve stops at k = {bert.index.max()}"))
            continue
        rows.append(_text_row("figure4_topk", quantity, stated[quantity], value, context, bert.iloc[0]))
    rows.append(best_k_row(bert.Avg, published_k, bert.iloc[0], context))
    return [r for r in rows if r is not None]


def _figure5_text_cells(heat: pd.DataFrame, published: Path, context: Context) -> list[dict[str, Any]]:
    """What the paper states of Figure 5: the None-None cell and the best pair (Shuffle + Feature Cutoff)."""
    stated = _stated(published)
    heat = heat[heat["size"] == "base"].set_index(["view1", "view2"])
    rows = []
    for quantity, cell in FIGURE5_CELLS.items():
        if cell not in heat.index:
            rows.append(gap_row("figure5_heatmap", quantity, f"no base heatmap cell {cell}"))
        else:
            row = heat.loc[cell]
            rows.append(_text_row("figure5_heatmap", quantity, stated[quantity], row.Avg, context, row))
    return [r for r in rows if r is not None]


def best_k_row(
    curve: pd.Series, published_k: int, reproduced_row: pd.Series, context: Context
) -> dict[str, Any] | None:
    """Figure 4's best k, in the authors' convention: reproduced when the published k is one of the
    near-best k, those whose Avg lies within the untrained margin of the curve's maximum (a flat top has
    several; which one wins the argmax is then a matter of rounding); else not reproduced. The margin
    shown is the farthest near-best k from the argmax."""
    near = [authors_topk_k(int(k)) for k, value in curve.items() if value >= curve.max() - UNTRAINED_MARGIN]
    near = [k for k in near if k is not None]
    best = authors_topk_k(int(curve.idxmax()))
    if best is None:  # nothing removed is best: no k
        best = -1
    row = cell_row("figure4_topk", "best k for BERT-base", "value", published_k, best, reproduced_row, context,
                   PRIMARY, not_comparable_reason(reproduced_row, "base"), "all", "k")  # fmt: skip
    if row is None:
        return None
    reach = max((abs(k - best) for k in near), default=0)
    return {
        **row,
        "noise": NEAR_BEST,
        "sigma": 0.0,
        "sigma_df": 0.0,
        "margin": float(reach),
        "margin_source": f"k (authors' convention) within {UNTRAINED_MARGIN:g} of the maximum Avg: {near or 'none'}",
        "verdict": REPRODUCED if published_k in near else NOT_REPRODUCED,
    }


def _text_row(
    artifact: str, quantity: str, published: Any, reproduced: Any, context: Context, reproduced_row: pd.Series
) -> dict[str, Any] | None:
    reason = not_comparable_reason(reproduced_row, "base")
    return cell_row(
        artifact, quantity, "value", published, reproduced, reproduced_row, context, PRIMARY, reason, "all", "Avg"
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
    summary = ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
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


#: Every compared block, in the order of the comparison's rows.
COMPARED: tuple[ComparedRows | StatedCells, ...] = (
    ComparedRows("table2", "consert_table2_unsup.csv", "table2_unsup.csv", _by_method, _table2_pairs),
    ComparedRows("whitening_table1", "bert_whitening_table1.csv", "table2_unsup.csv", _by_method, _whitening_pairs),
    ComparedRows(
        "sgopt_table1",
        "sgopt_table1_bert_base.csv",
        "table2_unsup.csv",
        lambda f: f.model + " | " + f.pooling.astype(str),
        lambda _: [
            ("BERT-base + contrastive (SG-OPT) | cls", "BERT-base-SG-OPT", "base"),
            ("BERT-base no tuning | cls", "BERT-base (cls)", "base"),
            ("BERT-base no tuning | mean", "BERT-base (mean)", "base"),
        ],
    ),
    StatedCells("stand_in_mteb", "table2_unsup.csv", _stand_in_cells),
    ComparedRows(
        "table3",
        "consert_table3_sup.csv",
        "table3_sup.csv",
        lambda f: f.method + " | " + f.training_data,
        _per_size(
            ("SBERT-{size}-NLI (re-impl.) | nli", "ConSERT-{size} sup"),
            ("ConSERT-{size} joint | nli", "ConSERT-{size} joint"),
            ("ConSERT-{size} sup-unsup | nli+sts_unlabeled", "ConSERT-{size} sup-unsup"),
            ("ConSERT-{size} joint-unsup | nli+sts_unlabeled", "ConSERT-{size} joint-unsup"),
            ("BERT-{size}-flow | nli+sts_unlabeled", "BERT-{size}-flow (NLI)"),
        ),
    ),
    _table4_rows(("avg_spearman", "Avg")),
    _table4_rows(("steps", "best_step"), report_gaps=False, margin_key="table4_steps"),
    ComparedRows(
        "family",
        "contrastive_family.csv",
        "table_contrastive_family.csv",
        _by_method,
        lambda _: list(FAMILY_ROWS),
        optional=True,
    ),  # fmt: skip
    StatedCells("figure4_topk", "figure4_topk.csv", _figure4_text_cells),
    StatedCells("figure5_heatmap", "figure5_heatmap.csv", _figure5_text_cells),
)
