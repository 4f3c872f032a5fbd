"""The gate's error rates, measured by simulating a config's design.

The gate (:func:`consert.verdict.gate.gate`) fails a run when a comparable primary cell, or the shift
shared by the trained primary cells, is *not reproduced*. How often it says the right thing depends on
the design: which trained rows a config runs, with how many seeds, how many runs each published value
averages, and the seed SD of each kind of row. This module draws whole runs from that design, with the
true seed SD set to the declared one (``decision.yaml``), applies the same decision rule (pooled SD per
kind, the 90 % interval of reproduced - published, the declared margins, the shared-shift test), and
counts:

* ``correct``: every row's expectation equals the published row's: how often the gate passes;
* ``shift``: every trained row lower by ``shift`` points: how often the gate fails;
* ``one row``: one row's primary cell off by ``error`` points: how often the gate fails, per row.

Untrained rows are deterministic and judged on their point difference, so they change none of these
rates and are left out of the design; so are the rows that repeat Table 2's ConSERT-base run (Table 4's
batch 96, Figure 5's Shuffle + Feature Cutoff: ``same_run_as`` in ``yardsticks.csv``), which the gate
neither pools nor averages twice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from consert.registry import FIGURE5, TABLE3, TABLE4
from consert.verdict.compare import trained_primary_cells
from consert.verdict.decision import Decision, block_of
from consert.verdict.yardstick import (
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDABLE,
    RowDesign,
    decide_rows,
    equivalence_verdicts,
)


@dataclass(frozen=True)
class DesignRow:
    """One trained primary cell of a design: its label, artifact (for the margin), noise kind and scale,
    our seeds ``n``, the runs ``m`` its published value averages, its declared seed SD, and the model size it is
    pooled and tested at (with its artifact, the block: :func:`~consert.verdict.decision.block_of`)."""

    label: str
    artifact: str
    kind: str
    scale: str
    n: int
    m: int
    sigma: float
    size: str = "base"


def row_design(design: list[DesignRow], decision: Decision) -> RowDesign:
    """The arrays :func:`~consert.verdict.yardstick.decide_rows` decides a design's rows with."""
    return RowDesign(
        n=np.array([row.n for row in design], dtype=float),
        m=np.array([row.m for row in design], dtype=float),
        margin=np.array([decision.margin(row.artifact)[0] for row in design]),
        declared=np.array([decision.declared_noise(row.kind, row.scale).sigma for row in design]),
        group=np.array([f"{row.kind} {row.size}" for row in design]),
        block=np.array([block_of(row.artifact, row.size) for row in design]),
        repeats=np.zeros(len(design), dtype=bool),  # a design row is a run of its own
    )


def design_of(comparison: pd.DataFrame, decision: Decision) -> list[DesignRow]:
    """The design that actually ran: the rows the gate decides (:func:`~consert.verdict.compare.trained_primary_cells`),
    with the seeds each ran."""
    return [
        DesignRow(
            f"{row.artifact} {row.row}",
            row.artifact,
            row.noise,
            "avg",
            int(row.n_seeds),
            int(row.published_runs),
            decision.declared_noise(row.noise, "avg").sigma,
            str(row.size or "base"),
        )  # fmt: skip
        for row in trained_primary_cells(comparison).itertuples()
    ]


def design_power(design: list[DesignRow], decision: Decision, replicates: int = 1000, seed: int = 0) -> str:
    """One line: how often the gate passes a correct run of ``design``, catches a 1-point shift of every row,
    and catches a 2-point error in its least-watched decidable row (simulated, ``replicates`` runs each)."""
    if len(design) < 2:
        return f"power of this run's design: {len(design)} trained rows compared, nothing to simulate"
    rng, zeros = np.random.default_rng(seed), np.zeros(len(design))
    correct = simulate(design, decision, zeros, replicates, rng)
    shifted = simulate(design, decision, zeros - 1.0, replicates, rng)
    caught = []
    for index in np.flatnonzero(correct["verdicts"][0] != UNDECIDABLE):
        truth = zeros.copy()
        truth[index] = -2.0
        caught.append((simulate(design, decision, truth, replicates, rng)["fails"].mean(), design[index].label))
    worst = min(caught) if caught else (math.nan, "none")
    return (
        f"power of this run's design ({len(design)} trained rows, {replicates} simulated runs each): a correct "
        f"run passes {1 - correct['fails'].mean():.3f}; a 1-point shift of every row is caught "
        f"{shifted['fails'].mean():.3f}; a 2-point error in one row is caught at least {worst[0]:.3f} ({worst[1]})"
    )


def simulate(
    design: list[DesignRow],
    decision: Decision,
    truth: np.ndarray,
    replicates: int,
    rng: np.random.Generator,
    noise: np.ndarray | None = None,
    seeds: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Draw ``replicates`` runs whose rows are off by ``truth`` (one value per design row), with true seed SDs
    ``noise`` times the declared ones (default 1; the published runs keep the declared SD), and decide them
    with the gate's rule (:func:`~consert.verdict.yardstick.decide_rows`, and the shared shift). ``seeds``: the
    seeds that ran per row, where fewer than the design's (a missing seed fails the gate).

    Returns ``verdicts`` (replicates x rows), ``shift`` (the shared shift's verdict per replicate),
    ``fails`` (whether the gate fails each replicate), and the draws: ``delta`` and our seeds' ``spread``."""
    rows = row_design(design, decision)
    ran = rows.n if seeds is None else np.asarray(seeds, dtype=float)
    true_sigma = rows.declared * (1.0 if noise is None else np.asarray(noise, dtype=float))
    shape = (replicates, len(design))
    # our mean of the seeds that ran and their sample SD; the published mean of m runs
    ours = truth + true_sigma * rng.standard_normal(shape) / np.sqrt(ran)
    spread = true_sigma * np.sqrt(rng.chisquare(np.maximum(ran - 1, 1), shape) / np.maximum(ran - 1, 1))
    published = rows.declared * rng.standard_normal(shape) / np.sqrt(rows.m)
    delta = ours - np.round(published, 2)
    decided = decide_rows(delta, spread, RowDesign(**{**vars(rows), "n": ran}), decision.shift_margin[0],
                          decision.level)  # fmt: skip
    counted = decided.verdict[0] != UNDECIDABLE
    k = int(counted.sum())
    shift = np.full(replicates, "not decided", dtype=object)
    if k >= 3:  # the shared shift needs 3 rows, as the gate's
        mean = delta[:, counted].mean(axis=1)
        half = stats.t.ppf(0.5 + decision.level / 2, k - 1) * delta[:, counted].std(axis=1, ddof=1) / math.sqrt(k)
        shift = equivalence_verdicts(mean - half, mean + half, decision.shift_margin[0])
    missing = bool((ran < rows.n).any())
    fails = decided.fails | (shift == NOT_REPRODUCED) | missing
    return {"verdicts": decided.verdict, "shift": shift, "fails": fails, "delta": delta, "spread": spread,
            "blocks": decided.blocks, "block_p": decided.block_p}  # fmt: skip


#: The blocks a one-block error is simulated in: the 7 BERT-large rows, Table 3 (both sizes), the sweeps.
ERROR_BLOCKS = {
    "the large rows": lambda row: row.size == "large",
    "Table 3": lambda row: row.artifact == TABLE3.key,
    "the sweeps": lambda row: row.artifact in (TABLE4.key, FIGURE5.stem),
}


def error_rates(
    design: list[DesignRow],
    decision: Decision,
    replicates: int = 4000,
    shift: float = 1.0,
    error: float = 2.0,
    seed: int = 0,
    noisy_error: float = 3.0,
    noisy: float = 5.0,
    wider: float = 1.5,
) -> pd.DataFrame:
    """The gate's rates under a config's design (:func:`consert.paper.design.paper_design`), one row per
    scenario (and per row for a one-row error),
    with the Monte Carlo standard error of each rate:

    * ``correct``: every row true; also with every kind's true seed SD ``wider`` times the declared one;
    * ``shift``: every trained row ``shift`` points low;
    * ``block``: every row of one block (:data:`ERROR_BLOCKS`) ``shift`` points low;
    * ``one row``: one row ``error`` points low; ``noisy row``: one row ``noisy_error`` points low with seeds
      ``noisy`` times noisier than declared;
    * ``missing seed``: one row with a seed fewer than the design's.
    """
    rng = np.random.default_rng(seed)
    zeros, ones = np.zeros(len(design)), np.ones(len(design))
    undecidable = simulate(design, decision, zeros, 1, rng)["verdicts"][0] == UNDECIDABLE
    rows = []

    def record(scenario: str, row: str, rate: float, what: str, decided: float = math.nan) -> None:
        error_ = math.sqrt(rate * (1 - rate) / replicates)
        rows.append({"scenario": scenario, "row": row, "what": what, "rate": rate, "mc_se": error_,
                     "reproduced_share": decided, "replicates": replicates})  # fmt: skip

    correct = simulate(design, decision, zeros, replicates, rng)
    record("correct", "every row", 1 - correct["fails"].mean(), "gate passes")
    for index, row in enumerate(design):
        shown = float((correct["verdicts"][:, index] == REPRODUCED).mean())
        record("correct", row.label, float((correct["verdicts"][:, index] != NOT_REPRODUCED).mean()),
               "row not failed", shown)  # fmt: skip
    noisier = simulate(design, decision, zeros, replicates, rng, noise=ones * wider)
    record(f"correct, true seed SD {wider:g}x the declared", "every row", 1 - noisier["fails"].mean(), "gate passes")
    shifted = simulate(design, decision, zeros - shift, replicates, rng)
    record(f"shift {-shift:+g} on every trained row", "every row", shifted["fails"].mean(), "gate fails")
    for name, member in ERROR_BLOCKS.items():
        chosen = np.array([member(row) for row in design])
        if chosen.any():
            outcome = simulate(design, decision, np.where(chosen, -shift, 0.0), replicates, rng)
            record(f"block {-shift:+g}", name, outcome["fails"].mean(), "gate fails")
    for index, row in enumerate(design):
        if undecidable[index]:
            continue
        truth = zeros.copy()
        truth[index] = -error
        outcome = simulate(design, decision, truth, replicates, rng)
        record(f"one row {-error:+g}", row.label, outcome["fails"].mean(), "gate fails")
        truth[index], noise = -noisy_error, ones.copy()
        noise[index] = noisy
        outcome = simulate(design, decision, truth, replicates, rng, noise=noise)
        record(f"noisy row {-noisy_error:+g}, seeds {noisy:g}x noisier", row.label, outcome["fails"].mean(),
               "gate fails")  # fmt: skip
    seeds = np.array([row.n for row in design])
    if (seeds >= 2).any():
        short = seeds.copy()
        short[int(np.argmax(seeds >= 2))] -= 1
        outcome = simulate(design, decision, zeros, replicates, rng, seeds=short)
        record("missing seed", design[int(np.argmax(seeds >= 2))].label, outcome["fails"].mean(), "gate fails")
    frame = pd.DataFrame(rows)
    design_table = pd.DataFrame([vars(row) for row in design]).rename(columns={"label": "row"})
    return frame.merge(design_table[["row", "kind", "n", "m", "sigma"]], on="row", how="left")
