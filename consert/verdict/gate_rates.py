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
* ``one row``: one row's primary cell off by ``error`` points: how often the gate fails, per row;
* ``seeds identical``: every seed a copy of the first (a seed never applied): how often the gate fails;

and the scenarios :func:`error_rates` lists (noisier seeds, blocks, the undecidable SimCSE row, a missing seed).

Untrained rows are deterministic and judged on their point difference, so they change none of these
rates and are left out of the design; so are the rows that repeat Table 2's ConSERT-base run (Table 4's
batch 96, Figure 5's Shuffle + Feature Cutoff: ``same_run_as`` in ``yardsticks.csv``), which the gate
neither pools nor averages twice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from consert.registry import FIGURE5, TABLE3, TABLE4
from consert.verdict.decision import Decision, block_of
from consert.verdict.rows import trained_primary_cells
from consert.verdict.yardstick import (
    NOT_REPRODUCED,
    REPRODUCED,
    TIGHT_RATIO,
    RowDesign,
    decide_rows,
    equivalence_verdicts,
    undecidable_rows,
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
        declared=np.array([decision.declared_noise(row.kind, row.scale, row.size).sigma for row in design]),
        group=np.array([f"{row.kind} {row.size}" for row in design]),
        block=np.array([block_of(row.artifact, row.size) for row in design]),
        repeats=np.zeros(len(design), dtype=bool),  # a design row is a run of its own
    )


def design_of(comparison: pd.DataFrame, decision: Decision) -> list[DesignRow]:
    """The design that actually ran: the rows the gate decides (:func:`~consert.verdict.rows.trained_primary_cells`),
    with the seeds each ran."""
    return [
        DesignRow(
            f"{row.artifact} {row.row}",
            row.artifact,
            row.noise,
            "avg",
            int(row.n_seeds),
            int(row.published_runs),
            decision.declared_noise(row.noise, "avg", str(row.size or "base")).sigma,
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
    for index in np.flatnonzero(~undecidable_rows(row_design(design, decision), decision.level)):
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
    published_noise: float | np.ndarray = 1.0,
    identical: bool = False,
) -> dict[str, np.ndarray]:
    """Draw ``replicates`` runs whose rows are off by ``truth`` (one value per design row), with true seed SDs
    ``noise`` times the declared ones (default 1; the published runs' ``published_noise`` times), and decide them
    with the gate's rule (:func:`~consert.verdict.yardstick.decide_rows`, and the shared shift). ``seeds``: the
    seeds that ran per row, where fewer than the design's (a missing seed fails the gate). ``identical``: every
    seed a copy of the first (a seed never applied: one seed's noise, no spread).

    Returns ``verdicts`` (replicates x rows), ``shift`` (the shared shift's verdict per replicate),
    ``fails`` (whether the gate fails each replicate), and the draws: ``delta`` and our seeds' ``spread``."""
    rows = row_design(design, decision)
    ran = rows.n if seeds is None else np.asarray(seeds, dtype=float)
    true_sigma = rows.declared * (1.0 if noise is None else np.asarray(noise, dtype=float))
    shape = (replicates, len(design))
    # our mean of the seeds that ran and their sample SD; the published mean of m runs
    ours = truth + true_sigma * rng.standard_normal(shape) / np.sqrt(1 if identical else ran)
    spread = true_sigma * np.sqrt(rng.chisquare(np.maximum(ran - 1, 1), shape) / np.maximum(ran - 1, 1))
    spread = np.where(identical | (ran < 2), 0.0 if identical else np.nan, spread)
    published = published_noise * rows.declared * rng.standard_normal(shape) / np.sqrt(rows.m)
    delta = ours - np.round(published, 2)
    decided = decide_rows(delta, spread, RowDesign(**{**vars(rows), "n": ran}), decision.shift_margin[0],
                          decision.level)  # fmt: skip
    counted = np.ones(len(design), dtype=bool)  # every row, undecidable ones too (their noise only widens it)
    k = int(counted.sum())
    shift = np.full(replicates, "not decided", dtype=object)
    if k >= 3:  # the shared shift needs 3 rows, as the gate's
        mean = delta[:, counted].mean(axis=1)
        half = stats.t.ppf(0.5 + decision.level / 2, k - 1) * delta[:, counted].std(axis=1, ddof=1) / math.sqrt(k)
        shift = equivalence_verdicts(mean - half, mean + half, decision.shift_margin[0])
    missing = bool((ran < rows.n).any())
    fails = decided.fails | (shift == NOT_REPRODUCED) | missing
    return {"verdicts": decided.verdict, "shift": shift, "fails": fails, "delta": delta, "spread": spread,
            "blocks": decided.blocks, "block_p": decided.block_p, "below": decided.spread_below}  # fmt: skip


#: A 1-point error in every sweep row (Table 4's four batch sizes and Figure 5's None-None: every cell the paper
#: states for the sweeps that is not Table 2's run again; Figure 7 states a range, no value) caught by the gate, by the
#: seeds each sweep row runs: ``consert gate-rates --sweep-seeds 1-10`` on config/config.yaml, 4,000 runs each
#: (Monte Carlo SE <= 0.008). One published run a cell caps it near 0.82.
SWEEP_BLOCK_CAUGHT = {1: 0.525, 2: 0.670, 3: 0.721, 4: 0.758, 5: 0.770, 6: 0.777, 7: 0.791, 8: 0.801, 9: 0.811,
                      10: 0.821}  # fmt: skip
#: The catch rate the issue asks of a sweep's -1 block, and the fewest seeds that reach it.
SWEEP_TARGET = 0.80
SWEEP_SEEDS_NEEDED = min(n for n, rate in SWEEP_BLOCK_CAUGHT.items() if rate >= SWEEP_TARGET)


def sweep_power_line(seeds: int) -> str | None:
    """The first screen's line when the sweeps ran fewer seeds than catch a 1-point error in all of them
    :data:`SWEEP_TARGET` of the time (``None`` when they ran enough)."""
    if seeds >= SWEEP_SEEDS_NEEDED:
        return None
    rate = SWEEP_BLOCK_CAUGHT.get(seeds)
    shown = f"{rate:.2f}" if rate is not None else "below 0.80"
    return (
        f"The sweeps (Table 4, Figure 5) ran {seeds} seed{'s' * (seeds != 1)} a row: a 1-point error in all of them is "
        f"caught {shown} of the time, under {SWEEP_TARGET:.0%}; {SWEEP_SEEDS_NEEDED} seeds a sweep row reach it "
        f"({SWEEP_BLOCK_CAUGHT[SWEEP_SEEDS_NEEDED]:.2f}; simulated: consert gate-rates, docs/verdicts.md)"
    )


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
    """The gate's rates under a config's design (:func:`consert.planner.design.paper_design`), one row per
    scenario (and per row for a one-row error), with the Monte Carlo standard error of each rate:

    * ``correct``: every row true (and how often its seeds fall below the spread test's lower tail, also at a true
      seed SD of :data:`~consert.verdict.yardstick.TIGHT_RATIO` times the declared); also with every kind's true
      seed SD ``wider`` times the declared one (ours),
      and ``wider`` times on both sides (ours and the published run's, which come from the same training);
    * ``shift``: every trained row ``shift`` points low;
    * ``block``: every row of one block (:data:`ERROR_BLOCKS`) ``shift`` points low;
    * ``one row``: one row ``error`` points low; ``noisy row``: one row ``noisy_error`` points low with seeds
      ``noisy`` times noisier than declared; ``undecidable row``: a row no run can show equivalent (SimCSE)
      ``noisy_error`` points low;
    * ``seeds identical``: every seed a copy of the first (a seed never applied), correct, and with the first
      row with seeds ``1.5 shift`` points low;
    * ``missing seed``: one row with a seed fewer than the design's.
    """
    rng = np.random.default_rng(seed)
    zeros, ones = np.zeros(len(design)), np.ones(len(design))
    arrays = row_design(design, decision)
    undecidable = undecidable_rows(arrays, decision.level)
    rows: list[dict[str, object]] = []

    def record(scenario: str, row: str, rate: float, what: str, decided: float = math.nan) -> None:
        error_ = math.sqrt(rate * (1 - rate) / replicates)
        rows.append({"scenario": scenario, "row": row, "what": what, "rate": rate, "mc_se": error_,
                     "reproduced_share": decided, "replicates": replicates})  # fmt: skip

    def fails(truth: np.ndarray, **options: Any) -> float:
        return float(simulate(design, decision, truth, replicates, rng, **options)["fails"].mean())

    correct = simulate(design, decision, zeros, replicates, rng)
    record("correct", "every row", 1 - correct["fails"].mean(), "gate passes")
    for index, row in enumerate(design):
        shown = float((correct["verdicts"][:, index] == REPRODUCED).mean())
        record("correct", row.label, float((correct["verdicts"][:, index] != NOT_REPRODUCED).mean()),
               "row not failed", shown)  # fmt: skip
    record("correct, seeds below the spread test's lower tail", "every row",
           float((correct["below"] != "").any(axis=1).mean()), "gate fails on it")  # fmt: skip
    tight = simulate(design, decision, zeros, replicates, rng, noise=ones * TIGHT_RATIO)
    record(f"correct, true seed SD {TIGHT_RATIO:g}x the declared, seeds below the lower tail", "every row",
           float((tight["below"] != "").any(axis=1).mean()), "gate fails on it")  # fmt: skip
    record(f"correct, true seed SD {wider:g}x the declared", "every row", 1 - fails(zeros, noise=ones * wider),
           "gate passes")  # fmt: skip
    record(f"correct, true seed SD {wider:g}x the declared on both sides (ours and the published run's)",
           "every row", 1 - fails(zeros, noise=ones * wider, published_noise=wider), "gate passes")  # fmt: skip
    at_source = np.array([decision.source_noise(row.kind, row.size) for row in design]) / arrays.declared
    record("correct, every true seed SD at its source's value (ours and the published run's)", "every row",
           1 - fails(zeros, noise=at_source, published_noise=at_source), "gate passes")  # fmt: skip
    record(f"shift {-shift:+g} on every trained row", "every row", fails(zeros - shift), "gate fails")
    for name, member in ERROR_BLOCKS.items():
        chosen = np.array([member(row) for row in design])
        if chosen.any():
            record(f"block {-shift:+g}", name, fails(np.where(chosen, -shift, 0.0)), "gate fails")
    for index, row in enumerate(design):
        truth, noise = zeros.copy(), ones.copy()
        if undecidable[index]:
            truth[index] = -noisy_error
            record(f"undecidable row {-noisy_error:+g}", row.label, fails(truth), "gate fails")
            continue
        truth[index] = -error
        record(f"one row {-error:+g}", row.label, fails(truth), "gate fails")
        truth[index], noise[index] = -noisy_error, noisy
        record(f"noisy row {-noisy_error:+g}, seeds {noisy:g}x noisier", row.label, fails(truth, noise=noise),
               "gate fails")  # fmt: skip
    seeds = np.array([row.n for row in design])
    if (seeds >= 2).any():
        first = int(np.argmax(seeds >= 2))
        record("seeds identical (every seed a copy of the first), correct", "every row",
               fails(zeros, identical=True), "gate fails")  # fmt: skip
        truth = zeros.copy()
        truth[first] = -1.5 * shift
        record(f"seeds identical, one row {-1.5 * shift:+g}", design[first].label, fails(truth, identical=True),
               "gate fails")  # fmt: skip
        short = seeds.copy()
        short[first] -= 1
        record("missing seed", design[first].label, fails(zeros, seeds=short), "gate fails")
    frame = pd.DataFrame(rows)
    design_table = pd.DataFrame([vars(row) for row in design]).rename(columns={"label": "row"})
    design_table["sigma"] = arrays.declared  # the size's own where declared apart
    return frame.merge(design_table[["row", "kind", "n", "m", "sigma"]], on="row", how="left")
