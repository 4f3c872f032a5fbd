"""Cell-by-cell comparison of reproduced artifacts with the published numbers (the gate: :mod:`consert.verdict.gate`).

Every reproduced cell that has a published counterpart becomes one row of ``comparison.csv``. One
**primary** cell per published row decides the row (Avg with the aggregate the published row used;
``decision.yaml`` names the exceptions); the seven sets stay beside it as **diagnostics**, with their
own interval, outside the gate. Each cell is judged by an equivalence test (:mod:`consert.verdict.yardstick`):
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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pandas as pd

from consert import row_labels
from consert.encode.models import PAPER_ENCODERS
from consert.registry import FAMILY, FIGURE4, FIGURE5, TABLE2, TABLE3, TABLE4
from consert.verdict.cells import Context, gap_row, published_row_cells, read_seeded_table
from consert.verdict.decision import (
    AGGREGATES_FILE,
    COMPARISON_COLUMNS,
    PRIMARY,
    SCORE_PAIRS,
    Judged,
    RowKinds,
    family_rows,
    load_aggregates,
    load_decision,
)
from consert.verdict.rows import decide
from consert.verdict.stated import figure4_text_cells, figure5_text_cells, stand_in_cells


def _by_method(frame: pd.DataFrame) -> pd.Series:
    return frame.method


def _every_row(frame: pd.DataFrame) -> pd.DataFrame:
    return frame


RowName = Callable[[str], str]


def _per_size(*names: tuple[RowName, RowName]) -> Callable[[pd.DataFrame], list[tuple[str, str, str | None]]]:
    """Row pairs for every paper model size, from (published, reproduced) row names of a size
    (:mod:`consert.row_labels`)."""
    return lambda _: [(published(size), ours(size), size) for size in PAPER_ENCODERS for published, ours in names]


def _consert(setting: str) -> RowName:
    """ConSERT's row of a setting, by size."""
    return lambda size: row_labels.consert(size, setting)


def _published_with(name: RowName, setting: str) -> RowName:
    """A published row's name with the column that tells it apart in its table (Table 3's training data)."""
    return lambda size: f"{name(size)} | {setting}"


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
    of_the_paper: bool = True  # its cells are rows of a published table
    judged: Judged | None = None  # its rows' aggregate and seed noise, when the block declares them itself

    def cells(self, published: Path, reproduced: pd.DataFrame, context: Context) -> list[dict[str, Any]]:
        pub = pd.read_csv(published / self.published_file)
        pub = pub.assign(key=self.published_key(pub))
        rep = self.reproduced_rows(reproduced)
        rep = rep.assign(key=self.reproduced_key(rep))
        pairs, columns = self.pairs(pub), list(self.columns)
        return published_row_cells(self.artifact, pub, rep, pairs, columns, context, self.report_gaps, self.margin_key)


@dataclass(frozen=True)
class StatedCells:
    """Cells that a procedure builds from one reproduced file: the stand-in's own published scores, the values
    the paper states in its text for Figures 4 and 5."""

    artifact: str
    reproduced_file: str
    build: Callable[[pd.DataFrame, Path, Context], list[dict[str, Any]]]
    optional: bool = False
    of_the_paper: bool = True  # its cells are the paper's (the stand-in's anchor is not)

    def cells(self, published: Path, reproduced: pd.DataFrame, context: Context) -> list[dict[str, Any]]:
        return self.build(reproduced, published, context)


def _base_rows(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["size"] == "base"]


def _by_batch_size(frame: pd.DataFrame) -> pd.Series:
    return frame.batch_size.astype(str)


def _table4_rows(columns: tuple[str, str], **options: Any) -> ComparedRows:
    """Table 4 (base, by batch size): one published column against one reproduced column."""
    return ComparedRows(
        TABLE4.key, "consert_table4_batch_size.csv", TABLE4.csv, _by_batch_size, _same_keys,
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
        (row_labels.bert, lambda size: row_labels.bert(size, "mean:-2,-1")),
        (row_labels.flow, row_labels.flow),
        (row_labels.consert, row_labels.consert),
    )(_)


#: A block of the comparison: rows of a published table, or cells a procedure builds.
ComparedBlock = ComparedRows | StatedCells


def read_reproduced(blocks: Sequence[ComparedBlock], results: Path) -> dict[str, pd.DataFrame | None]:
    """Every reproduced file ``blocks`` read (None where it is missing). Loading only loads."""
    files = dict.fromkeys(block.reproduced_file for block in blocks)
    return {name: read_seeded_table(results / name) if (results / name).is_file() else None for name in files}


def artifact_files(blocks: Sequence[ComparedBlock]) -> dict[str, tuple[str, ...]]:
    """The reproduced artifact files ``blocks`` read, and the compared artifacts of the paper each feeds (a missing
    file is one gap row for each)."""
    return {
        file: tuple(dict.fromkeys(b.artifact for b in blocks if b.reproduced_file == file and b.of_the_paper))
        for file in dict.fromkeys(block.reproduced_file for block in blocks)
    }


def context_of(
    blocks: Sequence[ComparedBlock],
    published: Path,
    margins: dict[str, float] | None = None,
    seed_noise: dict[str, float] | None = None,
) -> Context:
    """What every cell of a comparison of ``blocks`` is judged with: the published folder's declarations
    (``decision.yaml``, ``aggregates.csv``, ``yardsticks.csv``; ``margins`` and ``seed_noise`` override the first),
    and the aggregate and seed noise a block declares itself (:class:`~consert.verdict.decision.Judged`), refused
    in one line where the folder's files declare them for the same artifact too."""
    context = Context(load_aggregates(published), RowKinds(published), load_decision(published, margins, seed_noise))
    in_files = {artifact for artifact, _ in context.aggregates}, {rule[0] for rule in context.kinds.rules}
    declared: dict[str, Judged] = {}
    for block in blocks:
        judged = block.judged if isinstance(block, ComparedRows) else None
        if judged is None or declared.get(block.artifact) == judged:
            continue
        judged.check(block.artifact, context.decision)
        for what, names, file in (("aggregate", in_files[0], published / AGGREGATES_FILE),
                                  ("seed noise", in_files[1], context.kinds.path)):  # fmt: skip
            if block.artifact in names:
                raise ValueError(f"{block.artifact}: its {what} is declared twice, by its compared block and in "
                                 f"{file}; declare it in one place")  # fmt: skip
        if block.artifact in declared:
            raise ValueError(f"{block.artifact}: its compared blocks declare two judgements; declare one")
        declared[block.artifact] = judged
        context.aggregates[(block.artifact, "*")] = (judged.aggregate, judged.source)
        context.kinds.declare(block.artifact, judged.noise, judged.published_runs)
    return context


def compare(
    blocks: Sequence[ComparedBlock],
    results: Path,
    published: Path,
    not_run: Sequence[str] = (),
    margins: dict[str, float] | None = None,
    seed_noise: dict[str, float] | None = None,
    seeds: dict[str, int] | None = None,
) -> pd.DataFrame:
    """The comparison table of the reproduced artifacts under ``results``, block by block of ``blocks`` (the
    catalogue's: :data:`consert.paper.catalogue.COMPARED`).

    Every published row the harness reproduces gives cells (``status`` ``compared``) or a gap row:
    ``not run`` when it matches one of ``not_run`` (``artifact:row`` glob patterns a config declares,
    e.g. ``table2:*large*`` for a base-only run), else ``missing``; a missing artifact file gives one
    gap row per comparison artifact it feeds. ``margins`` and ``seed_noise`` override ``decision.yaml``.
    ``seeds`` (``artifact:kind`` -> seeds, the config's design): a comparable trained primary cell that ran
    fewer is ``missing`` (its seeds named in ``reason``) unless ``not_run`` declares it.
    """
    context = context_of(blocks, published, margins, seed_noise)
    reproduced = read_reproduced(blocks, results)
    fed = artifact_files(blocks)
    rows: list[dict[str, Any]] = []
    reported: set[str] = set()
    for block in blocks:
        frame = reproduced[block.reproduced_file]
        if frame is not None:
            rows += block.cells(published, frame, context)
        elif _required(block, seeds) and block.reproduced_file not in reported:
            reported.add(block.reproduced_file)
            why = f"{results / block.reproduced_file} not found"
            rows += [gap_row(artifact, "*", why) for artifact in fed[block.reproduced_file]]
    frame = pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))
    declared = frame.apply(lambda r: any(fnmatch(f"{r.artifact}:{r.row}", p) for p in not_run), axis=1)
    frame.loc[(frame.status == "missing") & declared.astype(bool), ["status", "verdict"]] = "not run"
    short = _missing_seeds(frame, seeds or {}) & ~declared.astype(bool)
    frame.loc[short, "reason"] = [f"{int(n)} of {seeds[f'{a}:{k}']} seeds ran (the config's design)"
                                  for n, a, k in zip(frame.n_seeds[short], frame.artifact[short], frame.noise[short],
                                                     strict=True)]  # fmt: skip
    frame.loc[short, ["status", "verdict"]] = "missing"
    return decide(frame, context.decision)


def published_cells(blocks: Sequence[ComparedBlock], published: Path) -> pd.DataFrame:
    """Every published cell the row blocks of ``blocks`` pair with a reproduced row (``artifact``, ``row``,
    ``column``, ``published``), whether or not its row ran: the paper's layout shows a row not run beside its
    published numbers."""
    cells = []
    for block in blocks:
        if not isinstance(block, ComparedRows):
            continue
        pub = pd.read_csv(published / block.published_file)
        pub = pub.assign(key=block.published_key(pub))
        for published_name, _, _ in block.pairs(pub):
            row = pub[pub.key == published_name].iloc[0]
            for column, _ in block.columns:
                value = pd.to_numeric(row.get(column), errors="coerce")
                cells.append({"artifact": block.artifact, "row": published_name, "column": column, "published": value})
    return pd.DataFrame(cells, columns=["artifact", "row", "column", "published"]).drop_duplicates(
        ["artifact", "row", "column"]
    )


def _required(block: ComparedBlock, seeds: dict[str, int] | None) -> bool:
    """Whether a block's missing file is a gap: always, unless it is optional and the config's design (``seeds``,
    ``artifact:kind``) trains none of its rows (the contrastive family when the config trains it is required)."""
    return not block.optional or any(key.split(":")[0] == block.artifact for key in seeds or {})


def _missing_seeds(frame: pd.DataFrame, seeds: dict[str, int]) -> pd.Series:
    """Comparable primary cells that ran fewer seeds than the design gives their ``artifact:kind``."""
    expected = pd.Series([seeds.get(f"{a}:{k}", 0) for a, k in zip(frame.artifact, frame.noise, strict=True)],
                         index=frame.index)  # fmt: skip
    chosen = (frame.status == "compared") & (frame.role == PRIMARY) & frame.comparable.astype(bool)
    return chosen & (pd.to_numeric(frame.n_seeds, errors="coerce").fillna(0) < expected)


#: The blocks of each artifact of the paper that is compared, in the order of the comparison's rows (each is
#: attached to its artifact's record in :data:`consert.paper.catalogue.CATALOGUE`).
TABLE2_COMPARED: tuple[ComparedBlock, ...] = (
    ComparedRows(TABLE2.key, "consert_table2_unsup.csv", TABLE2.csv, _by_method, _table2_pairs),
    ComparedRows("whitening_table1", "bert_whitening_table1.csv", TABLE2.csv, _by_method, _whitening_pairs),
    ComparedRows(
        "sgopt_table1",
        "sgopt_table1_bert_base.csv",
        TABLE2.csv,
        lambda f: f.model + " | " + f.pooling.astype(str),
        lambda _: [
            ("BERT-base + contrastive (SG-OPT) | cls", row_labels.sgopt("base"), "base"),
            ("BERT-base no tuning | cls", row_labels.bert("base", "cls"), "base"),
            ("BERT-base no tuning | mean", row_labels.bert("base", "mean"), "base"),
        ],
    ),
    StatedCells("stand_in_mteb", TABLE2.csv, stand_in_cells, of_the_paper=False),
)
TABLE3_COMPARED: tuple[ComparedBlock, ...] = (
    ComparedRows(
        TABLE3.key,
        "consert_table3_sup.csv",
        TABLE3.csv,
        lambda f: f.method + " | " + f.training_data,
        _per_size(
            (_published_with(row_labels.sbert_nli, "nli"), _consert("sup")),
            (_published_with(_consert("joint"), "nli"), _consert("joint")),
            (_published_with(_consert("sup-unsup"), "nli+sts_unlabeled"), _consert("sup-unsup")),
            (_published_with(_consert("joint-unsup"), "nli+sts_unlabeled"), _consert("joint-unsup")),
            (_published_with(row_labels.flow, "nli+sts_unlabeled"), lambda size: row_labels.flow(size, nli=True)),
        ),
    ),
)
TABLE4_COMPARED: tuple[ComparedBlock, ...] = (
    _table4_rows(("avg_spearman", "Avg")),
    _table4_rows(("steps", "best_step"), report_gaps=False, margin_key="table4_steps"),
)
FAMILY_COMPARED: tuple[ComparedBlock, ...] = (
    ComparedRows(FAMILY.key, "contrastive_family.csv", FAMILY.csv, _by_method, lambda _: family_rows(), optional=True),
)
FIGURE4_COMPARED: tuple[ComparedBlock, ...] = (StatedCells(FIGURE4.stem, FIGURE4.csv, figure4_text_cells),)
FIGURE5_COMPARED: tuple[ComparedBlock, ...] = (StatedCells(FIGURE5.stem, FIGURE5.csv, figure5_text_cells),)
