"""The workflow config, read in one place: :func:`load_workflow_config` checks it, each fault in one line (the
schema's keys and types first, then every training run's resolved keys as the run's own trainer would check them,
then the local model folders), and fills in the schema's defaults. The workflow (``common.smk``), the planner and
every command that takes ``--configfile`` read a config through it; the schema is the one description of its keys
(``config/README.md``'s table of keys is generated from it, :func:`keys_table`).

Snakemake's own validation prints the whole schema and config (hundreds of lines) for an unknown key,
and a bad training value surfaced only when a job's input function built its run config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import yaml

from consert.configs import ConfigError, read_yaml, unknown_key_message
from consert.encode.models import looks_like_a_path
from consert.paper.plan import plan_runs, train_overrides, unique_runs
from consert.train.config import TrainConfig, check_train_config
from consert.train.methods import METHODS
from consert.train.objectives import check_objective

#: The workflow config's JSON schema: every key, its type, its default and its description.
SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"
#: The ``family`` block's own keys; any other key of it is a method's block, under the method's name.
FAMILY_KEYS = ("methods", "sizes", "train_texts", "train")


def load_workflow_config(config: dict[str, Any], schema_path: str | Path = SCHEMA) -> dict[str, Any]:
    """``config`` checked (a one-line :class:`ConfigError` for its first fault) and its defaults filled in, in place
    (as snakemake's own validation does to the workflow's ``config``); returned."""
    from snakemake.utils import validate

    check_schema(config, schema_path)
    try:
        validate(config, str(schema_path), set_default=True)
    except Exception as err:  # noqa: BLE001 - snakemake wraps jsonschema's ValidationError in a WorkflowError
        raise ConfigError(str(err).splitlines()[0]) from None
    check_family(config["family"])
    check_training_keys(config)
    check_local_models(config["models"])
    return config


def read_workflow_config(path: str | Path) -> dict[str, Any]:
    """A workflow config file, checked and its defaults filled in (as the DAG sees it); a fault names the file."""
    try:
        return load_workflow_config(read_yaml(path))
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def check_local_models(models: dict[str, str]) -> None:
    """A model given as a local path (absolute, ./, ../, ~ or deeper than org/name) must be a model folder; a hub id
    (``bert-base-uncased``, ``org/name``) stays a hub id, resolved by the jobs (offline: from the cache)."""
    for size, name in models.items():
        path = Path(name).expanduser()
        if not path.is_dir() and not looks_like_a_path(name):
            continue
        if not path.exists():
            found = "does not exist"
        elif not path.is_dir():
            found = "is a file"
        elif not (path / "config.json").is_file():
            found = "has no config.json"
        else:
            continue
        raise ConfigError(
            f"config models.{size}: local model path {name} {found}; expected a model folder (config.json, the "
            "tokenizer and the weights) or a hub id such as bert-base-uncased"
        )


def keys_table(schema_path: str | Path = SCHEMA) -> str:
    """The Markdown table of the config's top-level keys and what each sets (each key's ``title`` in the schema):
    the table of ``config/README.md`` (``python scripts/config_keys.py`` writes it there)."""
    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    rows = [f"| `{key}` | {spec['title']} |" for key, spec in schema["properties"].items()]
    return "\n".join(["| key | what it sets |", "|---|---|", *rows]) + "\n"


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


def check_family(family: dict[str, Any]) -> None:
    """Each method ``family.methods`` lists, and each method block beside the family's own keys, names a record of
    :data:`~consert.train.methods.METHODS` (the schema takes any name: the records are the one list of methods);
    else a one-line :class:`ConfigError` naming the key."""
    names = sorted(METHODS)
    for name in family["methods"]:
        if name not in METHODS:
            raise ConfigError(unknown_key_message(name, names, "config family.methods", what="method"))
    blocks = [key for key in family if key not in FAMILY_KEYS and key not in METHODS]
    if blocks:
        raise ConfigError(unknown_key_message(blocks[0], [*FAMILY_KEYS, *names], "config family"))


def check_training_keys(config: dict[str, Any]) -> None:
    """Build and check every planned run's training config (``train``, ``stages``, ``size_stages``,
    the family's and BERT-flow's blocks): the first fault is a one-line :class:`ConfigError` naming the run."""
    for run_id, spec in unique_runs(plan_runs(config)).items():
        try:
            run = TrainConfig.from_dict(train_overrides(spec, config), source="train keys")
            check_train_config(run)
            check_objective(run)
        except ConfigError as err:
            raise ConfigError(f"config, run {run_id}: {err}") from None
