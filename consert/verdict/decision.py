"""What a comparison declares: the row of ``comparison.csv`` and its roles, the published files read
(``decision.yaml``'s margins and seed SDs, the aggregate of each published row, the row kinds), which runs are
comparable, and the blocks the gate tests together."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from consert.data.senteval import DATASETS, STS_YEAR_SUBSETS
from consert.encode.models import PAPER_ENCODERS, PAPER_HUB_IDS
from consert.registry import FAMILY, FIGURE5, TABLE2, TABLE3, TABLE4
from consert.train.modes import METHOD_KEYS_BLOCK, MODES, modes_of
from consert.verdict.yardstick import (
    SeedNoise,
)

SCORE_COLUMNS = (*DATASETS, "Avg")


#: The (published, reproduced) columns of a table of the 7 sets and their Avg.
SCORE_PAIRS = tuple((column, column) for column in SCORE_COLUMNS)


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
    status: str = _UNSET  # compared, missing, not run, no published value; yours (a row of yours: no verdict)
    against: str = ""  # a row of yours: the ConSERT row its paired difference (``delta``) is taken from


COMPARISON_COLUMNS = tuple(f.name for f in fields(ComparisonRow))


PRIMARY, DIAGNOSTIC, SHIFT, BLOCK = "primary", "diagnostic", "shared shift", "block shift"

#: Noise kinds without a seed model: ``none`` (untrained, deterministic), ``fixed`` (a count judged by a fixed
#: tolerance, e.g. Table 4's steps), ``near-best`` (Figure 4's best k, decided when its row is built).
UNTRAINED, FIXED, NEAR_BEST = "none", "fixed", "near-best"


#: What ``compare --check`` does with an inconclusive primary cell (``gate.inconclusive``).
INCONCLUSIVE_POLICIES = ("pass", "fail")


#: The blocks of the block-wise shift tests: which artifacts test together (the sweeps: Table 4 and Figure 5).
BLOCK_OF = {TABLE2.key: "Table 2", TABLE3.key: "Table 3", TABLE4.key: "sweeps", FIGURE5.stem: "sweeps",
            FAMILY.key: FAMILY.key, "sgopt_table1": "SG-OPT"}  # fmt: skip


def block_of(artifact: str, size: str) -> str:
    """The block a row of ``artifact`` at model ``size`` is tested in: its table and size."""
    return f"{BLOCK_OF.get(artifact, artifact)} {size}"


def family_rows() -> list[tuple[str, str, str]]:
    """The contrastive family's published rows (``contrastive_family.csv``) and the reproduced rows they match:
    ``(published, reproduced, size)`` of each mode's published row there (:data:`consert.train.modes.MODES`)."""
    return [
        (published, f"{method.label}-{size}", size)
        for method in modes_of(METHOD_KEYS_BLOCK).values()
        for size, published in method.published.items()
    ]


def method_noise() -> list[tuple[str, str]]:
    """``(word, kind)``: a claim's cell whose method contains ``word`` carries ``kind``'s seed noise: each mode's
    label but ConSERT's (:data:`consert.train.modes.MODES`), then BERT-flow's baseline, then ConSERT, which a cell
    naming another method beside it does not take."""
    consert = MODES["unsup"]
    others = dict.fromkeys((mode.label, mode.noise) for mode in MODES.values() if mode.label != consert.label)
    return [*others, *(("flow", "flow"), (consert.label, consert.noise))]


def not_comparable_reason(row: pd.Series, size: str | None) -> str:
    """Empty when the reproduced row used the paper's encoder and data; else why not."""
    texts = " ".join(str(row.get(c, "")) for c in ("setting", "nli"))
    if "stand-in" in texts:
        return "offline stand-in: " + "; ".join(
            s for s in (str(row.get("setting", "")), str(row.get("nli", ""))) if "stand-in" in s
        )
    if unverified_data(row):
        return unverified_data(row)
    if size in PAPER_ENCODERS:
        model = str(row.get("base_model", "") or row.get("model", ""))
        weights, evidence = _text(row, "base_weights"), _text(row, "base_weights_evidence")
        if not weights and not evidence:  # a row from before encoders were identified: by its hub id
            weights, evidence = PAPER_HUB_IDS.get(model, ""), "its name"
        if weights != PAPER_ENCODERS[size]:
            why = evidence or "its weights were not identified"
            return f"encoder {model!r} is not the paper's {PAPER_ENCODERS[size]!r} ({why})"
    return ""


def _text(row: pd.Series, column: str) -> str:
    """A text cell of a row, "" where it is empty."""
    value = row.get(column, "")
    return "" if pd.isna(value) else str(value)


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


@dataclass(frozen=True)
class Judged:
    """How a compared block's published rows are judged, declared by the block itself: one aggregate over subsets
    and one seed-noise kind for all its rows (a table added from runs that exist, with its published CSV). The
    paper's blocks declare theirs in ``aggregates.csv`` and ``yardsticks.csv``, row by row; an artifact declared in
    both places is refused (:func:`consert.verdict.compare.context_of`). Its margin is ``decision.yaml``'s, as
    every margin with its reason."""

    aggregate: str  # one of AGGREGATES: how its published STS12-16 and Avg were aggregated
    noise: str  # its rows' seed-noise kind: a kind of decision.yaml's seed_noise, or "none" (untrained)
    source: str  # where the aggregate and the noise come from (the published table's paper, its protocol)
    published_runs: int = 1  # the runs each published value averages

    def check(self, artifact: str, decision: Decision) -> None:
        """Refuse, in one line naming ``artifact``, an aggregate or noise kind nothing knows, a count of runs below
        one, and a trained block without a margin."""
        if self.aggregate not in AGGREGATES:
            raise ValueError(f"{artifact}: unknown aggregate {self.aggregate!r}; expected one of {AGGREGATES}")
        if self.noise != UNTRAINED and self.noise not in decision.noise:
            known = sorted([UNTRAINED, *decision.noise])
            raise ValueError(f"{artifact}: unknown seed-noise kind {self.noise!r}; expected one of {known}")
        if self.published_runs < 1:
            raise ValueError(f"{artifact}: published_runs must be at least 1, got {self.published_runs}")
        if self.noise != UNTRAINED:
            decision.margin(artifact)  # raises, naming decision.yaml, where it declares none


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

    def declared_noise(self, kind: str, scale: str, size: str = "base") -> SeedNoise:
        """The declared seed SD of one run of ``kind`` at ``scale`` (``avg`` or ``set``) and model ``size`` (an entry's
        ``sizes`` may declare a size apart: BERT-large-flow), known (infinite df)."""
        if kind not in self.noise:
            raise KeyError(f"{DECISION_FILE} declares no seed_noise for kind {kind!r}")
        own = (self.noise[kind].get("sizes") or {}).get(size)
        entry, label = ({**self.noise[kind], **own}, f"{kind} {size}") if own else (self.noise[kind], kind)
        return SeedNoise(float(entry[scale]), math.inf, f"declared ({label}, {scale}): {entry['source']}")

    def source_noise(self, kind: str, size: str = "base") -> float:
        """The Avg seed SD its source itself gives (``source_avg``; the declared one where the source is the
        declaration): what the gate's simulation draws a run at its source's noise with."""
        entry = (self.noise[kind].get("sizes") or {}).get(size) or self.noise[kind]
        return float(entry.get("source_avg", entry["avg"]))


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
        noise[kind].update(avg=float(value), set=float(value) * ratio, source=source, sizes={})  # every size
    shift = raw["shared_shift"]
    shift_margin = (float(shift["margin"]), str(shift["reason"]))
    return Decision(float(raw["level"]), dict(raw["primary"]), declared, shift_margin, noise)


class RowKinds:
    """``yardsticks.csv``: per published row (``artifact``, ``row`` glob; the first match wins), the kind of
    its seed noise (``none`` for untrained rows), how many runs its published value averages, and, for a
    row that is another artifact's run again (Table 4's batch 96 is Table 2's run), that row. The contrastive
    family's methods' rows come first, from their records (:data:`consert.train.modes.MODES`: each method's published
    rows carry its noise kind, each the value of one run); the file's ``family`` rule covers the table's other rows."""

    def __init__(self, published: Path):
        table = pd.read_csv(published / ROW_KINDS_FILE, dtype=str, keep_default_na=False)
        columns = (table.artifact, table.row, table.noise, table.published_runs, table.same_run_as)
        family = [
            (FAMILY.key, row, mode.noise, "1", "")
            for mode in modes_of(METHOD_KEYS_BLOCK).values()
            for row in mode.published.values()
        ]
        self.rules = family + list(zip(*columns, strict=True))
        self.path = published / ROW_KINDS_FILE

    def declare(self, artifact: str, noise: str, published_runs: int) -> None:
        """A rule for every row of ``artifact``, after the file's: a compared block's own noise kind
        (:class:`Judged`)."""
        self.rules.append((artifact, "*", noise, str(published_runs), ""))

    def of(self, artifact: str, row: str) -> tuple[str, int, str]:
        """(noise kind, published runs, the row it repeats or "") of a published row."""
        found = self.find(artifact, row)
        if found is None:
            raise KeyError(f"{self.path} has no rule for {artifact} row {row!r}")
        return found

    def find(self, artifact: str, row: str) -> tuple[str, int, str] | None:
        """As :meth:`of`, or None when no rule matches."""
        for rule_artifact, pattern, noise, runs, same_run_as in self.rules:
            if rule_artifact == artifact and fnmatch(row, pattern):
                return noise.strip(), int(runs), same_run_as.strip()
        return None


#: Sets whose SentEval aggregates (mean / wmean over subsets) differ from the merged Spearman.
MULTI_SUBSET = (*STS_YEAR_SUBSETS, "Avg")


def authors_topk_k(tokens_removed: int) -> int | None:
    """The ConSERT authors' k for a curve point: their ``analysis_rep_space.py`` drops every token of
    frequency rank <= k (ranks from 0), i.e. k + 1 tokens; no removal has no k (None)."""
    return tokens_removed - 1 if tokens_removed > 0 else None
