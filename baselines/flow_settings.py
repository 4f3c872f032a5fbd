"""BERT-flow's settings (:mod:`baselines.flow`), each with its help text: light to import, so that the command
line can list them without loading torch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from consert.configs import AtLeastOne, Positive, ResolvedFile, key

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig


class FlowSettings(ResolvedFile):
    """How BERT-flow's flow is built and fitted; every default is the authors' (module docstring). A workflow
    config's ``baselines.flow`` overrides them; the workflow hands ``consert baseline flow`` the resolved
    settings as one file (``results/flow_config.yaml``)."""

    levels: AtLeastOne = key("levels of the Glow (BERT-flow's config_l3_d3_w32: 3)", 3)
    depth: AtLeastOne = key("flow steps per level (3)", 3)
    width: AtLeastOne = key("hidden units of each coupling's network (32)", 32)
    lr: Positive = key("constant learning rate of the flow (1e-3)", 1e-3)
    weight_decay: Annotated[float, Field(ge=0)] = key("AdamWeightDecay's decay, on every flow variable (0.01)", 0.01)
    max_grad_norm: Positive = key("global gradient-norm clip (1.0)", 1.0)
    epochs: AtLeastOne = key("passes over the fitted texts (1)", 1)
    batch_size: AtLeastOne = key("sentences a step (64: the authors' 32 pairs), the last partial batch dropped", 64)
    encoder_dropout: bool = key(
        "encode every fitting batch afresh with the encoder's dropout on, as the authors' estimator did (one "
        "encoder pass per fitted sentence); false reads the cached dropout-free vectors",
        True,
    )

    @classmethod
    def of_workflow(cls, config: WorkflowConfig) -> FlowSettings:
        """The settings a workflow config gives BERT-flow: the authors', with ``baselines.flow`` over them."""
        return cls.from_dict(config.baselines.flow, source="baselines.flow")
