"""Every training run's resolved config as a file, ``runs/<run>/train.yaml``: every key the run trains with,
the authors' defaults filled in, so that a reviewer diffs two runs' files to see what differs, and the run
reads its file (``consert train --config``, ``consert sgopt --config``) rather than values in shell flags."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml

from baselines.sgopt import SgOptConfig
from consert.planner.paths import run_model, sgopt_run
from consert.planner.plan import RunSpec, train_overrides
from consert.train.config import TrainConfig

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig


def consert_train_config(run_id: str, spec: RunSpec, config: WorkflowConfig) -> TrainConfig:
    """The ``TrainConfig`` of a run of ConSERT's loop (any mode ``consert train`` trains) of the workflow ``config``."""
    values = {**train_overrides(spec, config), "output_dir": run_model(run_id)}
    return TrainConfig.from_dict(values, source=run_id)


def sgopt_run_config(size: str, seed: int, config: WorkflowConfig) -> dict[str, Any]:
    """The resolved SG-OPT config of one seed of ``size`` (its ``data`` beside its settings' keys)."""
    values = {
        "model": config.models[size],
        "seed": seed,
        **config.baselines.sgopt,
        "output_dir": run_model(sgopt_run(size, seed)),
    }
    resolved = SgOptConfig.from_dict(values, source=sgopt_run(size, seed)).model_dump()
    return {**resolved, "data": config.data_dir}


def run_config_text(values: dict[str, Any]) -> str:
    """A resolved config as YAML text (keys in the config's order, tuples as lists)."""
    plain = {key: list(value) if isinstance(value, tuple) else value for key, value in values.items()}
    return yaml.safe_dump(plain, sort_keys=False, default_flow_style=None)
