"""The workflow config, read in one place: :func:`load_workflow_config` checks a config, each fault in one line (the
keys and their types first, then every training run's resolved keys as the run's own trainer would check them, then
BERT-flow's and SG-OPT's blocks as their settings classes do, then the local model folders), and returns it as the
typed :class:`~consert.planner.keys.WorkflowConfig`, its defaults filled in. The workflow (``common.smk``), the
planner and every command that takes ``--configfile`` read a config through it; :mod:`consert.planner.keys` is the
one description of its keys (the schema and ``config/README.md``'s table are generated from it).

A type error surfaces here as one line naming the key, where snakemake's own validation prints the whole schema and
config (hundreds of lines), and a bad training value would surface only when a job's input function built its run
config.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pydantic

from baselines import BASELINE_SPECS
from baselines.flow_settings import FlowSettings
from consert import registry
from consert.configs import ConfigError, read_yaml, unknown_key_message
from consert.encode.models import looks_like_a_path
from consert.planner.keys import BaselineKeys, FamilyKeys, WorkflowConfig, json_schema, repeated_seed_fault
from consert.planner.plan import plan_runs, train_overrides, unique_runs
from consert.planner.run_configs import sgopt_run_config
from consert.train.config import TrainConfig, check_train_config
from consert.train.modes import METHOD_KEYS_BLOCK, STAGE_KEYS_BLOCK, modes_of
from consert.train.objectives import check_objective


def load_workflow_config(config: Mapping[str, Any]) -> WorkflowConfig:
    """``config`` (a workflow config's mapping, as snakemake or a YAML file gives it) checked, a one-line
    :class:`ConfigError` for its first fault, and returned typed, its defaults filled in."""
    check_schema(config)
    try:
        typed = WorkflowConfig.model_validate(config)
    except pydantic.ValidationError as err:  # a constraint the schema cannot state; not expected after the check
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"config key `{where}`: {first['msg']}") from None
    check_family(typed.family)
    check_sizes(typed)
    check_training_keys(typed)
    check_baseline_keys(typed)
    check_local_models(typed.models)
    check_local_models({f"{i}.model": model.model for i, model in enumerate(typed.yours)}, key="yours")
    check_yours(typed)
    check_row_seeds(typed)
    return typed


def check_row_seeds(config: WorkflowConfig) -> None:
    """Each ``row_seeds`` key names a trained row of Tables 2 and 3 or the family that the config plans, and gives it
    the config's seeds and more (without one of them the design would call the row missing, and the figures read the
    first seed's run)."""
    plain = config.model_copy(update={"row_seeds": {}})
    tables = (registry.TABLE2.key, registry.TABLE3.key, registry.FAMILY.key)
    rows = list(dict.fromkeys(str(p.labels["method"]) for p in plan_runs(plain) if p.artifact in tables))
    for row, seeds in config.row_seeds.items():
        if row not in rows:
            raise ConfigError(f"config row_seeds: {row!r} is not a trained row this config plans; expected one of "
                              f"{', '.join(rows)}")  # fmt: skip
        if lacking := [seed for seed in config.seeds if seed not in seeds]:
            raise ConfigError(f"config row_seeds.{row}: {seeds} lacks seed {lacking[0]} of `seeds` {config.seeds}; "
                              "expected the config's seeds and more (the figures, the design read them)")  # fmt: skip


def check_yours(config: WorkflowConfig) -> None:
    """Each model of yours: a pooling ``consert evaluate`` takes (``auto``, ``model`` or one it parses), and tables of
    the paper's 7 sets the config builds (the family's only where it trains the family)."""
    from consert.encode.pooling import MODEL_POOLING, Pooling

    tables = [artifact.key for artifact in (registry.TABLE2, registry.TABLE3, registry.FAMILY)]
    for index, model in enumerate(config.yours):
        where = f"config yours.{index} ({model.name})"
        if model.pooling not in ("auto", MODEL_POOLING):
            try:
                Pooling.parse(model.pooling)
            except ValueError as err:
                raise ConfigError(f"{where}: pooling: {err}") from None
        unknown = [table for table in model.tables if table not in tables]
        if unknown:
            raise ConfigError(f"{where}: tables: {unknown[0]!r} is not one of {', '.join(tables)}")
        if registry.FAMILY.key in model.tables and not registry.FAMILY.runs_in(config):
            family = registry.FAMILY.key
            raise ConfigError(f"{where}: tables: {family}, but the config trains no family (family.methods is empty)")


def typed_overrides(config: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with the values that came from snakemake's ``--config`` read as YAML reads them: snakemake parses a
    nested value (``--config "seeds=[1,2]"``, ``"train={lr: 1e-5}"``) with YAML's base loader, which leaves every
    scalar a string ("1", "null", "true"), where a config file gives numbers, nulls and booleans."""
    import yaml

    def typed(given: Any, override: Any) -> Any:
        if isinstance(override, Mapping) and isinstance(given, Mapping):
            return {key: typed(value, override.get(key)) if key in override else value for key, value in given.items()}
        if isinstance(override, list) and isinstance(given, list):
            return [typed(value, value) for value in given]
        if isinstance(override, str) and isinstance(given, str) and given == override:
            try:
                return yaml.safe_load(given) if given.strip() else given
            except yaml.YAMLError:
                return given
        return given

    return typed(dict(config), dict(overrides))


def read_workflow_config(path: str | Path) -> WorkflowConfig:
    """A workflow config file, checked and typed (as the DAG sees it); a fault names the file."""
    values = read_yaml(path)  # its faults name the file (and line) already
    try:
        return load_workflow_config(values)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def check_local_models(models: dict[str, str], key: str = "models") -> None:
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
            f"config {key}.{size}: local model path {name} {found}; expected a model folder (config.json, the "
            "tokenizer and the weights) or a hub id such as bert-base-uncased"
        )


def config_schema() -> dict[str, Any]:
    """The workflow config's JSON schema (``workflow/schemas/config.schema.yaml``): the keys' declarations, with the
    stage names ConSERT's records give (:mod:`consert.train.modes`)."""
    return json_schema(stages=tuple(modes_of(STAGE_KEYS_BLOCK)))


def check_schema(config: Mapping[str, Any]) -> None:
    """Raise a one-line :class:`ConfigError` for the config's most relevant violation of the keys' schema, if any
    (an unknown key, with the known ones and a "did you mean"; else the key and what was expected)."""
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(config_schema()).iter_errors(config))
    if error is None:
        return
    where = ".".join(str(part) for part in error.absolute_path)
    block = f"config{'.' + where if where else ''}"
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(known))
        raise ConfigError(unknown_key_message(unknown[0], known, block))
    if error.validator == "uniqueItems":  # the seeds keys: say which seed repeats
        raise ConfigError(f"config key `{where}`: {repeated_seed_fault(error.instance)}")
    if "propertyNames" in error.relative_schema_path:  # a block whose keys are a fixed set (the training stages)
        raise ConfigError(unknown_key_message(str(error.instance), list(error.schema["enum"]), block))
    raise ConfigError(f"config key `{where or '(top level)'}`: {error.message}")


def check_family(family: FamilyKeys) -> None:
    """Each method ``family.methods`` lists, and each method block beside the family's own keys, names a record of
    the family's in :data:`~consert.train.modes.MODES` (the records are the one list of methods); else a one-line
    :class:`ConfigError` naming the key."""
    methods = modes_of(METHOD_KEYS_BLOCK)
    names = sorted(methods)
    for name in family.methods:
        if name not in methods:
            raise ConfigError(unknown_key_message(name, names, "config family.methods", what="method"))
    blocks = [key for key in family.method_blocks() if key not in methods]
    if blocks:
        raise ConfigError(unknown_key_message(blocks[0], [*FamilyKeys.model_fields, *names], "config family"))


def check_sizes(config: WorkflowConfig) -> None:
    """Each size the sweeps, the family and ``size_stages`` name is a key of ``models``; else a one-line
    :class:`ConfigError` naming the key (a typo would otherwise plan nothing for it, or fail in the planner)."""
    named = {
        "sweeps.sizes": config.sweeps.sizes,
        "family.sizes": config.family.sizes if config.family.methods else [],
        "size_stages": list(config.size_stages),
    }
    for key, sizes in named.items():
        for size in sizes:
            if size not in config.models:
                raise ConfigError(unknown_key_message(size, sorted(config.models), f"config {key}", what="size"))


def check_training_keys(config: WorkflowConfig) -> None:
    """Build and check every planned run's training config (``train``, ``stages``, ``size_stages``,
    the family's and BERT-flow's blocks): the first fault is a one-line :class:`ConfigError` naming the run."""
    for run_id, spec in unique_runs(plan_runs(config)).items():
        try:
            run = TrainConfig.from_dict(train_overrides(spec, config), source="train keys")
            check_train_config(run)
            check_objective(run)
        except ConfigError as err:
            raise ConfigError(f"config, run {run_id}: {err}") from None


def check_baseline_keys(config: WorkflowConfig) -> None:
    """BERT-flow's and SG-OPT's blocks (``baselines.flow``, ``baselines.sgopt``) and each baseline of a table's
    (``baselines.<name>``), checked by their settings classes, whose keys they are (each with its help text): the
    first fault is a one-line :class:`ConfigError` naming the block."""
    try:
        FlowSettings.of_workflow(config)
    except ConfigError as err:  # its message names the block as the settings' own file does, or not at all
        fault = str(err).removeprefix("baselines.flow: ").removeprefix("flow: ")
        raise ConfigError(f"config baselines.flow: {fault}") from None
    for size in config.models:
        try:
            sgopt_run_config(size, config.sgopt_seeds[0], config)
        except ConfigError as err:
            raise ConfigError(f"config baselines.sgopt, run {err}") from None
    for name, block in config.baselines.own_blocks().items():
        spec = BASELINE_SPECS.get(name)
        if spec is None or not spec.table or not spec.settings:  # a typo of a key, or a block nothing reads
            tabled = [spec.name for spec in BASELINE_SPECS.values() if spec.table and spec.settings]
            raise ConfigError(unknown_key_message(name, [*BaselineKeys.model_fields, *tabled], "config baselines"))
        spec.settings_class().from_dict(block, source=f"config baselines.{name}")
