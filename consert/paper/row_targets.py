"""One published row on its own: a target per row (``results/rows/ARTIFACT/ROW.csv``) whose job reads only that
row's evaluations (its seeds) and ends with its verdict.

The row's table is built from those evaluations alone, as its artifact builds every row (one row of it), and
decided by the comparison restricted to it (:func:`consert.verdict.gate.rows_at_hand`): the same procedure as the
whole comparison, with the seed SD pooled over the rows at hand (its own) and labelled provisional, since the other
rows whose seeds would pool with it did not run. ``snakemake all`` decides every row.
"""

from __future__ import annotations

import glob
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from consert import registry
from consert.paper import artifacts, catalogue
from consert.planner import paths
from consert.verdict.compare import ComparedRows, compare
from consert.verdict.gate import rows_at_hand

if TYPE_CHECKING:
    from consert.planner.comparison import ComparisonConfig
    from consert.planner.keys import WorkflowConfig

#: Where the one-row targets live: results/rows/<compared artifact>/<row slug>.csv.
ROWS = paths.RESULTS / "rows"


def row_slug(row: str) -> str:
    """A published row's name as a file name: every run of characters other than letters, digits, ``.``, ``+`` and
    ``-`` becomes one ``_`` (``ConSERT-base joint | nli`` -> ``ConSERT-base_joint_nli``)."""
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", row).strip("_")


def row_target(artifact: str, row: str) -> str:
    """The target of one published row of a compared artifact (``table2``, ``whitening_table1``, ...)."""
    return str(ROWS / artifact / f"{row_slug(row)}.csv")


def _row_blocks() -> list[ComparedRows]:
    """The compared blocks whose published rows are rows of a reproduced table (not the values stated in text)."""
    return [block for block in catalogue.COMPARED if isinstance(block, ComparedRows) and block.of_the_paper]


def _reproducing(block: ComparedRows) -> registry.Artifact:
    return catalogue.record_of(block).declared


def _pairs(block: ComparedRows, published: Path) -> dict[str, str]:
    """``{published row: reproduced row}`` of a block."""
    table = pd.read_csv(published / block.published_file)
    return {name: reproduced for name, reproduced, _ in block.pairs(table.assign(key=block.published_key(table)))}


def row_sources(
    block: ComparedRows, row: str, config: WorkflowConfig, published: Path
) -> list[artifacts.ArtifactSource]:
    """The sources of the reproduced row that published ``row`` of ``block`` is compared with (none where the config
    does not reproduce it)."""
    pairs = _pairs(block, published)
    if row not in pairs:
        return []
    sources = catalogue.record_of(block).sources_under(config)
    labels = pd.DataFrame([labels for labels, _, _ in sources])
    chosen = block.reproduced_rows(labels)
    keys = block.reproduced_key(chosen).astype(str)
    return [sources[index] for index in chosen.index[keys == str(pairs[row])]]


def row_targets(config: WorkflowConfig, published: Path) -> dict[str, tuple[str, str]]:
    """``{target: (artifact, published row)}`` of every published row the config reproduces."""
    targets: dict[str, tuple[str, str]] = {}
    for block in _row_blocks():
        if not _reproducing(block).runs_in(config):
            continue
        for row in _pairs(block, published):
            if row_sources(block, row, config, published):
                targets.setdefault(row_target(block.artifact, row), (block.artifact, row))
    return targets


def row_inputs(artifact: str, row: str, config: WorkflowConfig, published: Path) -> list[str]:
    """The evaluation files one published row's target reads: its reproduced row's, every seed."""
    block = next(block for block in _row_blocks() if block.artifact == artifact)
    return list(dict.fromkeys(path for _, path, _ in row_sources(block, row, config, published)))


def row_verdict(
    artifact: str, row: str, config: WorkflowConfig, published: Path, settings: ComparisonConfig
) -> tuple[pd.DataFrame, str]:
    """The comparison's rows of one published row, decided from its own evaluations, and why they are provisional
    (:func:`~consert.verdict.gate.rows_at_hand`)."""
    from consert.io import write_csv

    block = next(block for block in _row_blocks() if block.artifact == artifact)
    sources = row_sources(block, row, config, published)
    reproducing = _reproducing(block)
    table = catalogue.build(reproducing.key, config, sources)
    with tempfile.TemporaryDirectory() as folder:
        write_csv(table, Path(folder) / reproducing.csv)
        whole = compare(
            catalogue.COMPARED,
            Path(folder),
            published,
            settings.not_run,
            settings.margins,
            settings.seed_noise,
            settings.seeds,
        )
    return rows_at_hand(whole, [f"{artifact}:{glob.escape(row)}"])


def write_row_verdict(
    artifact: str, row: str, config: WorkflowConfig, published: Path, settings: ComparisonConfig, output: str | Path
) -> list[str]:
    """Decide one published row (:func:`row_verdict`), write its cells with why they are provisional to ``output``
    atomically, and return the lines that say its verdict."""
    from consert.io import write_csv

    cells, provisional = row_verdict(artifact, row, config, published, settings)
    write_csv(cells.assign(provisional=provisional), output)
    return verdict_lines(output)


def verdict_lines(path: str | Path) -> list[str]:
    """What a one-row target ends with: its primary cell's verdict, with the interval and margin that decided it,
    and why it is provisional."""
    from consert.verdict.decision import PRIMARY

    cells = pd.read_csv(path)
    lines = []
    for cell in cells[cells.role == PRIMARY].itertuples():
        if cell.status != "compared":
            lines.append(f"{cell.artifact} {cell.row}: {cell.status} ({cell.reason})")
            continue
        setting = "" if cell.comparable else f" ({cell.reason})"
        lines.append(
            f"{cell.artifact} {cell.row} {cell.column}: {cell.verdict}: reproduced {cell.reproduced:.2f} over "
            f"{int(cell.n_seeds)} seeds, published {cell.published:.2f}, delta {cell.delta:+.2f} in "
            f"[{cell.diff_low:+.2f}, {cell.diff_high:+.2f}] against margin {cell.margin:g}{setting}"
        )
    provisional = cells.provisional.dropna()
    return lines + ([f"  {provisional.iloc[0]}"] if len(provisional) and provisional.iloc[0] else [])
