"""What ``consert compare`` decides with besides ``decision.yaml``: a workflow config's overrides, its design
and its gate policy, as one resolved file (``results/comparison_config.yaml``) that the comparison and the
gate read, as a training run reads its ``train.yaml``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consert.configs import ConfigError, ResolvedFile, key
from consert.paper.design import expected_seeds
from consert.verdict.decision import INCONCLUSIVE_POLICIES, load_decision


@dataclass
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
    inconclusive: str = key(
        "what the gate does with an inconclusive primary cell (its interval straddles the margin): pass or fail",
        "pass",
    )
    allow_stand_in: bool = key("let the gate pass when no cell of the paper is comparable (an offline run)", False)

    def __post_init__(self) -> None:
        if self.inconclusive not in INCONCLUSIVE_POLICIES:
            raise ConfigError(f"inconclusive: expected one of {INCONCLUSIVE_POLICIES}, got {self.inconclusive!r}")

    @classmethod
    def of_workflow(cls, config: dict[str, Any], published: Path) -> ComparisonConfig:
        """The settings a workflow config (its defaults filled in) gives its comparison and its gate."""
        comparison, gate = config.get("comparison", {}), config.get("gate", {})
        margins, noise = dict(comparison.get("margins", {})), dict(comparison.get("seed_noise", {}))
        decision = load_decision(published, margins, noise)
        return cls(
            margins=margins,
            seed_noise=noise,
            seeds=expected_seeds(config, decision),
            not_run=list(config.get("not_run", [])),
            inconclusive=gate.get("inconclusive", "pass"),
            allow_stand_in=bool(gate.get("allow_stand_in", False)),
        )
