"""The gate's error rates, measured by simulating a config's design.

The gate (:func:`consert.paper.compare.gate`) fails a run when a comparable primary cell, or the shift
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
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from consert.paper.compare import PAPER_MODELS, Decision, load_decision
from consert.paper.plan import sweep_seeds
from consert.paper.yardstick import NOT_REPRODUCED, PUBLISHED_ROUNDING, REPRODUCED, equivalence_verdicts


@dataclass(frozen=True)
class DesignRow:
    """One trained primary cell of a design: its label, artifact (for the margin), noise kind and scale,
    our seeds ``n``, the runs ``m`` its published value averages, and its true seed SD."""

    label: str
    artifact: str
    kind: str
    scale: str
    n: int
    m: int
    sigma: float


def paper_design(config: dict[str, Any], decision: Decision) -> list[DesignRow]:
    """The trained primary cells a workflow config compares with published numbers (paper sizes only)."""
    n, sweep_n = len(config["seeds"]), len(sweep_seeds(config))
    sgopt_n = len(config["baselines"].get("sgopt_seeds") or config["seeds"])
    rows: list[DesignRow] = []

    def add(label: str, artifact: str, kind: str, seeds: int, m: int = 1) -> None:  # primary cells: the avg scale
        rows.append(DesignRow(label, artifact, kind, "avg", seeds, m, float(decision.noise[kind]["avg"])))

    sizes = [size for size in config["models"] if size in PAPER_MODELS]
    for size in sizes:
        add(f"table2 ConSERT-{size}", "table2", "consert", n)
        add(f"table2 BERT-{size}-flow", "table2", "flow", 1)
        for setting in ("sup", "joint", "sup-unsup", "joint-unsup"):
            add(f"table3 ConSERT-{size} {setting}", "table3", "consert", n)
        add(f"table3 BERT-{size}-flow (NLI)", "table3", "flow_nli", n)
    if "base" in sizes:
        add("sgopt_table1 SG-OPT (STS-B)", "sgopt_table1", "sgopt", sgopt_n, m=8)
    sweeps = config["sweeps"]
    if "base" in sweeps["sizes"]:
        for batch_size in sweeps["batch_sizes"]:
            if batch_size in (16, 48, 192, 288):  # Table 4's published sizes; 96 is the Table 2 run again
                add(f"table4 batch {batch_size}", "table4", "consert", sweep_n)
        augmentations = set(sweeps["augmentations"])
        if "none" in augmentations:
            add("figure5 None-None", "figure5_heatmap", "consert", sweep_n)
    family = config.get("family") or {}
    if "simcse" in (family.get("methods") or []) and "base" in (family.get("sizes") or []):
        add("family SimCSE-base", "family", "simcse", n)
    return rows


def simulate(
    design: list[DesignRow],
    decision: Decision,
    truth: np.ndarray,
    replicates: int,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Draw ``replicates`` runs whose rows are off by ``truth`` (one value per design row) and decide them.

    Returns ``verdicts`` (replicates x rows), ``shift`` (the shared shift's verdict per replicate),
    ``fails`` (whether the gate fails each replicate), and the draws: ``delta`` and our seeds' ``spread``."""
    n = np.array([row.n for row in design])
    m = np.array([row.m for row in design])
    sigma = np.array([row.sigma for row in design])
    margins = np.array([decision.margin(row.artifact)[0] for row in design])
    shape = (replicates, len(design))
    # our mean of n seeds and its sample SD; the published mean of m runs
    ours = truth + sigma * rng.standard_normal(shape) / np.sqrt(n)
    spread = sigma * np.sqrt(rng.chisquare(np.maximum(n - 1, 1), shape) / np.maximum(n - 1, 1))
    published = sigma * rng.standard_normal(shape) / np.sqrt(m)
    delta = ours - np.round(published, 2)
    half = np.empty(shape)
    for key in sorted({(row.kind, row.scale) for row in design}):
        columns = np.array([(row.kind, row.scale) == key for row in design])
        df = int(np.sum(np.maximum(n[columns] - 1, 0)))
        if df:
            pooled = np.sqrt(np.sum((n[columns] - 1) * spread[:, columns] ** 2, axis=1) / df)[:, None]
            quantile = stats.t.ppf(0.5 + decision.level / 2, df)
        else:
            pooled = decision.declared_noise(*key).sigma
            quantile = stats.norm.ppf(0.5 + decision.level / 2)
        scale = np.sqrt(1 / n[columns] + 1 / m[columns])
        half[:, columns] = quantile * pooled * scale + PUBLISHED_ROUNDING
    verdicts = equivalence_verdicts(delta - half, delta + half, margins)
    k = len(design)
    mean = delta.mean(axis=1)
    shift_half = stats.t.ppf(0.5 + decision.level / 2, k - 1) * delta.std(axis=1, ddof=1) / math.sqrt(k)
    shift = equivalence_verdicts(mean - shift_half, mean + shift_half, decision.shift_margin[0])
    fails = (verdicts == NOT_REPRODUCED).any(axis=1) | (shift == NOT_REPRODUCED)
    return {"verdicts": verdicts, "shift": shift, "fails": fails, "delta": delta, "spread": spread}


def error_rates(
    config: dict[str, Any],
    published: Path,
    replicates: int = 4000,
    shift: float = 1.0,
    error: float = 2.0,
    seed: int = 0,
) -> pd.DataFrame:
    """The gate's rates under a config's design, one row per scenario (and per row for a one-row error),
    with the Monte Carlo standard error of each rate."""
    decision = load_decision(published)
    design = paper_design(config, decision)
    rng = np.random.default_rng(seed)
    zeros = np.zeros(len(design))
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
    shifted = simulate(design, decision, zeros - shift, replicates, rng)
    record(f"shift {-shift:+g} on every trained row", "every row", shifted["fails"].mean(), "gate fails")
    for index, row in enumerate(design):
        truth = zeros.copy()
        truth[index] = -error
        outcome = simulate(design, decision, truth, replicates, rng)
        record(f"one row {-error:+g}", row.label, outcome["fails"].mean(), "gate fails")
    frame = pd.DataFrame(rows)
    design_table = pd.DataFrame([vars(row) for row in design]).rename(columns={"label": "row"})
    return frame.merge(design_table[["row", "kind", "n", "m", "sigma"]], on="row", how="left")
