"""The design a workflow config runs, as the gate sees it: the trained primary cells it compares with published
numbers, and the seeds each runs (what ``consert compare`` checks the rows that ran against, and what the gate's
error rates are simulated on)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from consert import row_labels
from consert.encode.models import PAPER_ENCODERS
from consert.registry import FAMILY, FIGURE5, TABLE2, TABLE3, TABLE4
from consert.train.modes import MODES, published_in
from consert.verdict.decision import Decision
from consert.verdict.gate_rates import DesignRow, simulate

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig


def paper_design(config: WorkflowConfig, decision: Decision) -> list[DesignRow]:
    """The trained primary cells a workflow config compares with published numbers (paper sizes only)."""
    n, sweep_n, sgopt_n = len(config.seeds), len(config.sweep_seeds), len(config.sgopt_seeds)
    rows: list[DesignRow] = []

    def add(label: str, artifact: str, kind: str, seeds: int, m: int = 1, size: str = "base") -> None:
        sigma = float(decision.noise[kind]["avg"])  # primary cells: the avg scale
        rows.append(DesignRow(label, artifact, kind, "avg", seeds, m, sigma, size))

    sizes = [size for size in config.models if size in PAPER_ENCODERS]
    for size in sizes:
        add(f"table2 {row_labels.consert(size)}", TABLE2.key, "consert", n, size=size)
        add(f"table2 {row_labels.flow(size)}", TABLE2.key, "flow", 1, size=size)
        for setting in published_in(TABLE3.key):
            add(f"table3 {row_labels.consert(size, setting)}", TABLE3.key, "consert", n, size=size)
        add(f"table3 {row_labels.flow(size, nli=True)}", TABLE3.key, "flow_nli", n, size=size)
    if "base" in sizes:
        add("sgopt_table1 SG-OPT (STS-B)", "sgopt_table1", "sgopt", sgopt_n, m=8)
    sweeps = config.sweeps
    if "base" in sweeps.sizes:
        for batch_size in sweeps.batch_sizes:
            if batch_size in (16, 48, 192, 288):  # Table 4's published sizes; 96 is the Table 2 run again
                add(f"table4 batch {batch_size}", TABLE4.key, "consert", sweep_n)
        augmentations = set(sweeps.augmentations)
        if "none" in augmentations:
            add("figure5 None-None", FIGURE5.stem, "consert", sweep_n)
    for name in config.family.methods:  # a method's published rows that hold a number, at a paper size
        method = MODES[name]
        for size in config.family.sizes:
            if method.published_number and size in method.published and size in PAPER_ENCODERS:
                add(f"family {method.label}-{size}", FAMILY.key, method.noise, n, size=size)
    return rows


def expected_seeds(config: WorkflowConfig, decision: Decision) -> dict[str, int]:
    """The seeds a config's design gives each trained primary row, by ``artifact:kind`` (what ``consert compare
    --seeds`` checks the rows that ran against: a missing seed is a missing row, not a quieter one)."""
    return {f"{row.artifact}:{row.kind}": row.n for row in paper_design(config, decision)}


def sweep_block_caught(config: WorkflowConfig, decision: Decision, seeds: list[int], replicates: int = 4000,
                       shift: float = 1.0, seed: int = 11) -> dict[int, float]:  # fmt: skip
    """How often the gate catches every sweep row (Table 4 and Figure 5's stated cells) ``shift`` points low, when
    the sweeps run each number of ``seeds`` (the config's design otherwise), ``replicates`` simulated runs each."""
    caught = {}
    for count in seeds:
        sweeps = config.sweeps.model_copy(update={"seeds": list(range(1, count + 1))})
        design = paper_design(config.model_copy(update={"sweeps": sweeps}), decision)
        sweep = np.array([row.artifact in (TABLE4.key, FIGURE5.stem) for row in design])
        truth = np.where(sweep, -shift, 0.0)
        drawn = simulate(design, decision, truth, replicates, np.random.default_rng(seed))
        caught[count] = float(drawn["fails"].mean())
    return caught
