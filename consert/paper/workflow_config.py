"""The workflow config checked at startup, each fault in one line: the schema's keys and types first,
then every training run's resolved keys, as the run's own trainer would check them.

Snakemake's own validation prints the whole schema and config (hundreds of lines) for an unknown key,
and a bad training value surfaced only when a job's input function built its run config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import yaml

from consert.configs import ConfigError, unknown_key_message
from consert.paper.plan import plan_runs, train_overrides, unique_runs
from consert.train.config import TrainConfig, check_train_config


def check_schema(config: dict[str, Any], schema_path: str | Path) -> None:
    """Raise a one-line :class:`ConfigError` for the config's most relevant schema violation, if any."""
    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(config))
    if error is None:
        return
    where = ".".join(str(part) for part in error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(known))
        raise ConfigError(unknown_key_message(unknown[0], known, f"config{'.' + where if where else ''}"))
    raise ConfigError(f"config key `{where or '(top level)'}`: {error.message}")


def check_training_keys(config: dict[str, Any]) -> None:
    """Build and check every planned run's training config (``train``, ``stages``, ``size_stages``,
    the family's and BERT-flow's blocks): the first fault is a one-line :class:`ConfigError` naming the run."""
    for run_id, spec in unique_runs(plan_runs(config)).items():
        try:
            check_train_config(TrainConfig.from_dict(train_overrides(spec, config), source="train keys"))
        except ConfigError as err:
            raise ConfigError(f"config, run {run_id}: {err}") from None
