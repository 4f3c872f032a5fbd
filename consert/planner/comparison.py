"""What ``consert compare`` decides with besides ``decision.yaml``: a workflow config's overrides, its design
and its gate policy, as one resolved file (``results/comparison_config.yaml``) that the comparison and the
gate read, as a training run reads its ``train.yaml``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from consert.configs import ResolvedFile, key
from consert.planner.design import expected_seeds
from consert.verdict.decision import INCONCLUSIVE_POLICIES, load_decision

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig


class ComparisonConfig(ResolvedFile):
    """A comparison's settings beside the published numbers and their declared decision rule."""

    margins: dict[str, float] = key(
        "overrides of decision.yaml's margins, by artifact (e.g. table2: 1.0, table4_steps: 300)", factory=dict
    )
    seed_noise: dict[str, float] = key(
        "overrides of decision.yaml's seed SD of one run's Avg, by kind (consert, flow, flow_nli, sgopt, simcse)",
        factory=dict,
    )
    seeds: dict[str, int] = key(
        "the seeds the design gives each kind of trained row (ARTIFACT:KIND: N): a row that ran fewer is missing",
        factory=dict,
    )
    not_run: list[str] = key(
        "published rows this run deliberately does not reproduce (ARTIFACT:ROW globs, e.g. 'table2:*large*')",
        factory=list,
    )
    inconclusive: Literal[INCONCLUSIVE_POLICIES] = key(
        "what the gate does with an inconclusive primary cell (its interval straddles the margin): pass or fail",
        "pass",
    )
    allow_stand_in: bool = key("let the gate pass when no cell of the paper is comparable (an offline run)", False)

    @classmethod
    def of_workflow(cls, config: WorkflowConfig, published: Path) -> ComparisonConfig:
        """The settings a workflow config gives its comparison and its gate."""
        margins, noise, gate = dict(config.comparison.margins), dict(config.comparison.seed_noise), config.gate
        decision = load_decision(published, margins, noise)
        return cls.from_dict(
            {
                "margins": margins,
                "seed_noise": noise,
                "seeds": expected_seeds(config, decision),
                "not_run": list(config.not_run),
                "inconclusive": gate.inconclusive,
                "allow_stand_in": gate.allow_stand_in,
            },
            source="config",
        )
