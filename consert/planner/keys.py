"""The workflow config's keys, declared once: :class:`WorkflowConfig`, the typed object that the workflow
(``common.smk``), the planner and every command that takes ``--configfile`` read, with each key's type, default,
title and description. The JSON schema (``workflow/schemas/config.schema.yaml``) and ``config/README.md``'s table
of keys are generated from it (``python scripts/config_keys.py``; a test fails when either differs).

Declarations only: reading a config file, with one line per fault, is :mod:`consert.planner.load`'s job.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import GenerateJsonSchema

from consert import sweeps
from consert.configs import AtLeastOne, Positive

#: A training stage a config sets keys for (``stages``, ``size_stages``): the name of one of ConSERT's stage records
#: (consert/train/modes.py), which the schema lists (:func:`json_schema`'s ``stages``).
Stage = str
#: Training keys (``consert train --list-keys``), checked by the trainer's own config when a run is planned.
TrainKeys = dict[str, Any]


def repeated_seed_fault(seeds: Sequence[Any]) -> str:
    """Why a list of seeds cannot be run as given (a seed in it twice: planned once, it would be averaged twice),
    or ""."""
    repeated = next((seed for index, seed in enumerate(seeds) if seed in seeds[:index]), None)
    if repeated is None:
        return ""
    return f"seed {repeated} is given twice ({list(seeds)}); expected distinct seeds"


def _distinct(seeds: list[int]) -> list[int]:
    if fault := repeated_seed_fault(seeds):
        raise ValueError(fault)
    return seeds


#: Seeds of a kind of run: at least one, each once (the schema says ``uniqueItems``).
Seeds = Annotated[list[int], Field(min_length=1, json_schema_extra={"uniqueItems": True}), AfterValidator(_distinct)]


class Keys(BaseModel):
    """A block of the config: unknown keys refused, no key reassigned once read (``model_copy(update=...)`` makes a
    changed copy)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NliKeys(Keys):
    """The supervision of Table 3."""

    source: Literal["sick-e", "snli+mnli"] = Field(
        "sick-e", description="sick-e (SICK's entailment labels, offline) or snli+mnli (the paper: the files below)."
    )
    files: list[str] = Field([], description="The SNLI and MultiNLI jsonl files (official releases) for snli+mnli.")


class FlowNliKeys(Keys):
    """Table 3's BERT-flow (NLI) rows. base li (default): the flow is fitted on BERT-flow's own BERT-NLI, trained
    here by its authors' recipe (consert/train/recipes.py BERTFLOW_NLI) on `files` (their ALLNLI: MNLI train + SNLI
    train, dev and test; else the config's nli); base sbert: on ConSERT's SBERT-NLI re-implementation (the Table 3
    sup run). train: TrainConfig overrides of that encoder's run (the `train` block does not apply to it)."""

    base: Literal["li", "sbert"] = Field("li", description="li: BERT-flow's own BERT-NLI; sbert: the Table 3 sup run.")
    files: list[str] = Field([], description="The BERT-NLI's jsonl files (their ALLNLI); none: the config's nli.")
    train: TrainKeys = Field({}, description="TrainConfig keys of the BERT-NLI runs.")


class BaselineKeys(Keys):
    """The baselines' settings. Any other key is the block of a baseline of a table (a record of baselines/__init__.py
    naming its table), under its name: its own settings (`consert baseline NAME --list-keys`). A block for a name
    without such a record stops the workflow at its start."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, dict[str, Any]] = Field(init=False)

    poolings: list[str] = Field(
        ["cls", "mean", "mean:-2,-1", "mean:0,-1", "mean:1,-1"],
        description="Table 2's untrained BERT rows, one per pooling (mean:A,B averages the layers A and B).",
    )
    whitening_k: list[int | None] = Field(
        [None, 256], description="BERT-whitening's kept dimensions, one row each; null = all."
    )
    whitening_poolings: list[str] = Field(
        ["mean:1,-1", "mean:-2,-1"],
        description="Poolings BERT-whitening is fitted on (per task); mean:1,-1 is the authors' first-last-avg (first "
        "transformer layer + last), mean:-2,-1 ConSERT's.",
    )
    flow_pooling: str = Field(
        "mean:1,-1", description="BERT-flow's pooling (the authors' first-last-avg, which averages layers 1 and 12)."
    )
    flow: dict[str, Any] = Field(
        {},
        description="BERT-flow settings over the authors' (FlowSettings, baselines/flow_settings.py, each with its "
        "help; `consert baseline --help`), checked at the workflow's start and resolved into "
        "results/flow_config.yaml.",
    )
    sgopt: dict[str, Any] = Field({}, description="SgOptConfig overrides (see baselines/sgopt.py).")
    flow_nli: FlowNliKeys = FlowNliKeys()
    sgopt_seeds: Seeds | None = Field(
        None,
        description="Seeds of the SG-OPT runs Table 2's row averages (default: the config's seeds). SG-OPT's published "
        "numbers are the mean of 8 runs, seeds 1, 2, 3, 4, 1234, 2345, 3456, 7890 (its Table 8); the paper config "
        "runs those.",
    )
    glove: str | None = Field(
        None, description="Path of glove.840B.300d.txt; null = the offline glove.6B 50d stand-in."
    )
    topk_max: Annotated[int, Field(ge=0)] = Field(50, description="Figure 4's largest k (top-k neighbours).")

    def own_blocks(self) -> dict[str, dict[str, Any]]:
        """The blocks of the baselines of a table, by baseline name (the keys beside the declared ones)."""
        return dict(self.model_extra or {})


class _SweepBlock(Keys):
    """Table 4, Figures 5-7 and every other sweep of consert/sweeps.py: a list each, by default the paper's."""

    sizes: list[str] = Field(description="Model size labels (keys of models) that the sweeps run on.")
    seeds: Seeds | None = Field(
        None,
        description="Seeds of the sweeps (Table 4, Figures 5-7); default the config's `seeds`. The paper config runs "
        "one: the comparison judges one-seed rows with the declared seed SD (decision.yaml).",
    )
    heatmap: Literal["ordered", "unordered"] = Field(
        "ordered",
        description="Figure 5: train every ordered augmentation pair (the paper), or each unordered pair once and show "
        "it in both cells (fewer runs; rows say trained_as).",
    )


#: The ``sweeps:`` block: :class:`_SweepBlock`'s keys and each sweep axis's list, under its record's key.
SweepKeys = create_model(
    "SweepKeys",
    __base__=_SweepBlock,
    __doc__=_SweepBlock.__doc__,
    **{
        axis.key: (list[axis.value_type], Field(list(axis.default), description=axis.description))
        for axis in sweeps.AXES
    },
)


class FamilyKeys(Keys):
    """The contrastive family beside ConSERT (results/table_contrastive_family.csv): the methods of the family's
    records in consert/train/modes.py, trained by the same loop with their authors' recipes
    (consert/train/methods.py). ConSERT's `train` block does not apply to them. Any other key is a method's own
    block, under its name: TrainConfig keys of that method's runs, and a method's own settings under their own key
    (`consert train --list-keys`). A block for a name without a record stops the workflow at its start."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, TrainKeys] = Field(init=False)

    methods: list[str] = Field(
        [],
        description="The methods to train, by the names of the family's records in consert/train/modes.py; none "
        "unless listed (the shipped configs list them all). A name without a record stops the workflow "
        "at its start.",
    )
    sizes: list[str] = Field(["base"], description="Model size labels (keys of models) the family is trained on.")
    train_texts: str = Field(
        "sts",
        description='"sts" (the 89,192 unlabeled STS texts, the offline stand-in) or a file with one sentence a line '
        "(the authors': data/wiki1m_for_simcse.txt, 1M Wikipedia sentences).",
    )
    train: TrainKeys = Field({}, description="TrainConfig keys of every family run (e.g. short CPU runs).")

    def method_blocks(self) -> dict[str, TrainKeys]:
        """The methods' own blocks, by method name (the keys beside the family's own)."""
        return dict(self.model_extra or {})

    def method_keys(self, method: str) -> TrainKeys:
        """The training keys of ``method``'s runs: the family's ``train``, then the method's own block."""
        return {**self.train, **self.method_blocks().get(method, {})}


class ComparisonKeys(Keys):
    """Overrides of results/published/decision.yaml, where every margin and declared seed SD lives with its reason;
    comparison.csv names an override as the source of its value."""

    margins: dict[str, Positive] = Field(
        {},
        description="Margin per artifact (table2, table3, table4, table4_steps, sgopt_table1, figure5_heatmap, "
        "family); untrained rows keep 0.035.",
    )
    seed_noise: dict[str, Positive] = Field(
        {},
        description="Declared seed SD of one run's Avg per kind of row (consert, flow, flow_nli, sgopt, simcse), used "
        "where one seed ran.",
    )


class GateKeys(Keys):
    """What the gate accepts."""

    alpha: Annotated[float, Field(gt=0, lt=1)] = Field(
        0.05,
        description='Significance level of the claims that say "significantly" (Welch over seeds, Holm over the '
        "run's claims).",
    )
    inconclusive: Literal["pass", "fail"] = Field(
        "pass",
        description="What `snakemake check_published` does with an inconclusive primary cell (its interval straddles "
        "the margin): `pass` lists it as not shown equivalent; `fail` demands every cell be decided.",
    )
    allow_stand_in: bool = Field(
        False,
        description="Let `snakemake check_published` pass when no cell of the paper is comparable (an offline "
        "stand-in run; the stand-in's own MTEB cells are decided all the same). Without it such a run exits 3: "
        "stand-in numbers cannot pass for a reproduction.",
    )


class YourModel(Keys):
    """A model of yours, a row of its own in the tables it names: evaluated under the paper's protocol on the 7 sets,
    labelled as yours, with no published value and no verdict (it never counts in the gate); beside it, against each
    ConSERT row of the same table, the paired difference on the same sentence pairs (docs: Your model beside the
    paper)."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$", max_length=80)] = Field(
        description="The row's name (letters, digits, . _ + -): `NAME (yours)` in the tables, and its files' name."
    )
    model: str = Field(description="A hub id or a local model folder.")
    pooling: str = Field(
        "auto",
        description="auto: the model's own sentence-transformers modules where it has them, else mean pooling of the "
        "last layer (the row says which); or any pooling of `consert evaluate --pooling`.",
    )
    tables: list[str] = Field(
        ["table2"],
        min_length=1,
        description="The tables the row appears in, by their keys: table2 (default), table3, the contrastive family's.",
    )


def _distinct_names(models: list[YourModel]) -> list[YourModel]:
    names = [model.name for model in models]
    repeated = next((name for index, name in enumerate(names) if name in names[:index]), None)
    if repeated is not None:
        raise ValueError(f"name {repeated!r} is given twice; expected each model of yours once")
    return models


class WorkflowConfig(Keys):
    """Configuration of the ConSERT reproduction workflow."""

    setting: str = Field(
        "",
        title="a label of the run written into the logs (`paper`, `offline stand-in ...`)",
        description="A human label of the run (paper / offline stand-in / test); written into the logs.",
    )
    data_dir: str = Field(
        title="the SentEval data folder; the default `data/senteval` is also looked for in `$CONSERT_DATA` and beside "
        "the checkout, else downloaded (docs: Data)",
        description="SentEval data directory (read in place).",
    )
    seeds: Seeds = Field(
        [1],
        title="the seeds of the primary rows (Tables 2 and 3, the family); tables report the mean, SD and intervals "
        "over them",
    )
    dtype: Literal["auto", "fp32", "bf16", "fp16"] = Field(
        "auto",
        title="precision of training and encoding (`auto`: measured on the machine)",
        description="Precision of training and encoding. auto: the fastest candidate measured on this machine, once, "
        "on the model at hand (cached; consert/encode/precision.py): bf16, fp32 through PyTorch or, for inference on "
        "a CPU, ONNX Runtime; on CUDA also fp16 with a gradient scaler. The resolved precision, with the timings it "
        "was chosen on, is in every result row.",
    )
    device: Literal["auto", "cuda", "cpu"] = Field(
        "auto",
        title="where jobs compute: `cuda` (the paper's config: a run stops at its start where torch sees no GPU), "
        "`cpu`, or `auto`",
        description="cuda: every job that encodes or trains computes on a GPU; a local run stops before any job, in "
        "one line naming torch's build, where none is visible (a cluster's jobs check on their nodes); cpu: on the "
        "CPU (a GPU box's cards stay free); auto: a GPU where one is visible.",
    )
    keep_models: bool = Field(
        False,
        title="keep exported models under `runs/` (else deleted once read; curves and evaluations stay)",
        description="Keep every exported ConSERT/SG-OPT model under runs/. By default a model is deleted once the "
        "rules that read it (its evaluation, a second stage, the figures) are done.",
    )
    share_gpu: bool = Field(
        False,
        title="`false`: each GPU job takes a whole GPU; `true`: small jobs share it",
        description="false (the paper): each GPU job takes a whole GPU, so `--resources gpu=1` runs them one at a "
        "time. true (the stand-in configs): jobs declare no whole GPU and share the one they find, as many at once "
        "as `--cores` allows (each uses `threads` cores); they also run on CPU machines.",
    )
    gpu_wait_minutes: AtLeastOne | None = Field(
        720,
        title="the longest a job waits for a card of a box's pool (`--resources gpu=N`) before it stops in one line "
        "naming who holds them; null: no bound",
        description="Minutes a job waits for a GPU of the local pool (each card's lock file names its holder's pid "
        "and user) before it stops in one line naming them. Default 720, the SLURM profile's runtime of a training "
        "job: a card held longer than a training run takes is held by something else. null: wait without bound.",
    )
    gpu_mps: bool = Field(
        True,
        title="with `share_gpu: true` on an NVIDIA box: the jobs sharing a card run under NVIDIA's MPS (started and "
        "stopped by the workflow; one line where it is missing)",
        description="With share_gpu: true on a machine with NVIDIA GPUs, start NVIDIA's Multi-Process Service for the "
        "workflow's jobs (pipes and logs under .snakemake/mps; stopped when the workflow ends), so that jobs sharing "
        "a card run side by side instead of time-slicing, each computing exactly what it computes alone. Where its "
        "control program is missing one line says so. Local jobs only (SLURM's do not inherit it). false: no MPS.",
    )
    job_server: bool = Field(
        False,
        title="start each local job's `consert` command from one process that has imported the harness once "
        "(seconds saved per job; the benchmarks' CPU time and memory are then the launcher's)",
        description="Start a job server at the workflow's start (local jobs only: a cluster's jobs start their own "
        "processes): the rules run `consert-job`, and each job's command runs in a process forked from one that has "
        "imported torch, "
        "transformers and the harness once, with the job's own arguments, folder, environment, streams and exit "
        "status. A job whose Python or import-time environment differs starts its own process. Snakemake's "
        "benchmark files then measure the launcher, so results/cost.csv leaves CPU time and peak memory empty.",
    )
    threads: AtLeastOne | Literal["auto"] = Field(
        2,
        title="torch threads per job (`auto`: the cores of one card's share, `--cores` / `--resources gpu=N`)",
        description="Torch threads per job. auto: --cores divided by --resources gpu=N (N = 1 when not given), so "
        "that N jobs that each take a GPU run at once on a box with N cards; under SLURM each job gets the CPUs "
        "its profile asks (cpus_per_task).",
    )
    models: dict[str, str] = Field(
        min_length=1,
        title="the encoder of each size label (`base`, `large`): a hub id or a local folder",
        description="Encoder per model size label (hub id or local directory).",
    )
    train: TrainKeys = Field(
        {},
        title="training keys (`consert train --list-keys`) of every ConSERT run; unset keys are the authors' recipe",
        description="TrainConfig keys of every ConSERT run, whatever its stage (see consert/train/config.py).",
    )
    stages: dict[Stage, TrainKeys] = Field(
        {},
        title="training keys per stage, over `train`",
        description="TrainConfig keys per ConSERT stage (its record's name in consert/train/modes.py; the schema "
        "lists them), over `train`. Unset keys are the authors' recipe (consert/train/recipes.py).",
    )
    size_stages: dict[str, dict[Stage, TrainKeys]] = Field(
        {},
        title="training keys per size and stage, over `stages` (BERT-large's scripts)",
        description="Per model size label, per stage: TrainConfig keys over `stages` (the authors' BERT-large scripts "
        "differ from the base ones).",
    )
    nli: NliKeys = Field(
        NliKeys(), title="the supervision of Table 3: `sick-e` offline, or SNLI + MultiNLI jsonl files"
    )
    baselines: BaselineKeys = Field(
        BaselineKeys(), title="poolings, whitening dimensions, BERT-flow, SG-OPT, GloVe and top-k settings"
    )
    sweeps: SweepKeys = Field(
        title="the sweeps of `consert/sweeps.py` (Table 4, Figures 5-7): sizes, seeds, and each sweep's values, by "
        "default the paper's"
    )
    family: FamilyKeys = Field(
        FamilyKeys(),
        title="the contrastive family beside ConSERT (`consert/train/methods.py`): methods, sizes, training texts and "
        "their overrides",
    )
    row_seeds: dict[str, Seeds] = Field(
        {},
        title="more seeds for some rows of Tables 2 and 3 and the family, by the row's name in the table (e.g. "
        "`{ConSERT-base: [1, 2, 3, 4, 5]}`): the config's seeds and more; only the new seeds' runs are planned",
    )
    yours: Annotated[list[YourModel], AfterValidator(_distinct_names)] = Field(
        [],
        title="models of yours, each a row of its own in the tables it names (Table 2 by default), beside the paper's "
        "rows with no verdict: `{name, model, pooling, tables}` (docs: Your model beside the paper)",
    )
    not_run: list[str] = Field(
        [],
        title="published rows this config does not reproduce, on purpose (`ARTIFACT:ROW` globs): `not run`, not "
        "`missing`",
        description="Published rows this config deliberately does not reproduce (ARTIFACT:ROW globs, e.g. "
        '"table2:*large*"): the comparison lists them as "not run"; any other published row without a reproduced '
        "counterpart fails `snakemake check_published`.",
    )
    comparison: ComparisonKeys = Field(
        ComparisonKeys(),
        title="overrides of `results/published/decision.yaml` (margins, declared seed SDs), each named in "
        "`comparison.csv`",
    )
    gate: GateKeys = Field(
        GateKeys(),
        title="what `snakemake check_published` and `consert compare --check` accept (the stand-in, inconclusive "
        "cells)",
    )

    def stage_keys(self, stage: str, size: str) -> TrainKeys:
        """The training keys runs of ``stage`` at model ``size`` get: ``train`` (all runs), then ``stages.<stage>``,
        then ``size_stages.<size>.<stage>`` (e.g. BERT-large's scripts)."""
        return {**self.train, **self.stages.get(stage, {}), **self.size_stages.get(size, {}).get(stage, {})}

    @property
    def sweep_seeds(self) -> list[int]:
        """The seeds of the sweeps (Table 4, Figures 5-7): ``sweeps.seeds``, else the config's ``seeds``. The primary
        rows (Tables 2 and 3, the family) run every seed of ``seeds``: the comparison pools their spread."""
        return list(self.sweeps.seeds or self.seeds)

    @property
    def sgopt_seeds(self) -> list[int]:
        """SG-OPT's seeds: ``baselines.sgopt_seeds`` (the paper config: SG-OPT's 8, its Table 8), else the run's."""
        return list(self.baselines.sgopt_seeds or self.seeds)


class _OwnTitles(GenerateJsonSchema):
    """A schema whose titles are the ones the keys declare (no title made up from a field's name)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def json_schema(stages: Sequence[str]) -> dict[str, Any]:
    """The config's JSON schema, each block written out where it is used (no ``$ref``; what
    ``workflow/schemas/config.schema.yaml`` holds); ``stages``: the names ``stages`` and ``size_stages`` take (ConSERT's
    stage records, :func:`consert.planner.load.config_schema`)."""
    schema = WorkflowConfig.model_json_schema(schema_generator=_OwnTitles)
    properties = schema["properties"]
    properties["stages"]["propertyNames"] = {"enum": list(stages)}
    properties["size_stages"]["additionalProperties"]["propertyNames"] = {"enum": list(stages)}
    blocks = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, list):
            return [inline(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            block = dict(blocks[node["$ref"].rsplit("/", 1)[1]])
            block.pop("title", None)
            node = {**block, **{key: value for key, value in node.items() if key != "$ref"}}
        return {key: inline(value) for key, value in node.items()}

    schema.pop("title", None)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **inline(schema)}


def schema_text(schema: dict[str, Any]) -> str:
    """``workflow/schemas/config.schema.yaml``'s text: ``schema`` (:func:`json_schema`'s) as YAML, under a line that
    says where it comes from."""
    import yaml

    header = "# Generated from consert/planner/keys.py by `python scripts/config_keys.py`: edit the keys there.\n"
    return header + yaml.safe_dump(schema, sort_keys=False, width=118, allow_unicode=True)


def keys_table() -> str:
    """The Markdown table of the config's top-level keys and what each sets (each key's title): the table of
    ``config/README.md``."""
    rows = [f"| `{key}` | {field.title} |" for key, field in WorkflowConfig.model_fields.items()]
    return "\n".join(["| key | what it sets |", "|---|---|", *rows]) + "\n"


def key_rows(block: type[Keys] = WorkflowConfig, prefix: str = "") -> list[tuple[str, Any, str]]:
    """Every key of ``block``, a nested block's keys as ``block.key``: its name, its default (``required`` where it
    has none, ``block`` for a block of keys) and what it sets (its description, else its title). The docs' table of
    the workflow config's keys (``docs/hooks/config_keys.py``)."""
    rows: list[tuple[str, Any, str]] = []
    for name, field in block.model_fields.items():
        inner = field.annotation if isinstance(field.annotation, type) and issubclass(field.annotation, Keys) else None
        what = " ".join((field.description or field.title or (inner.__doc__ if inner else "") or "").split())
        if inner:
            rows += [(f"{prefix}{name}", "block", what), *key_rows(inner, f"{prefix}{name}.")]
        else:
            rows.append((f"{prefix}{name}", "required" if field.is_required() else field.get_default(), what))
    return rows
