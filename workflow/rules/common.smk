"""Helpers shared by the rules: config validation, the run plan, the resolved settings files jobs read, and the
rules' input functions. What the workflow starts and stops around its jobs (the device check, MPS, the job server)
is consert.workflow_hooks, called from the Snakefile's onstart, onsuccess and onerror."""

import json
import os
import re
import shlex
import sys
from itertools import chain
from pathlib import Path

import yaml
from snakemake.exceptions import WorkflowError

from consert.data.download import find_senteval
from consert.gpu_pool import idle_cards, pool_folder, visible_ids
from consert.bench.dag_cost import planned_run_steps
from consert.train.execution import COMPILE_MIN_STEPS
from consert.data.inputs import blocking, file_input, lines, missing_message, unique
from consert.encode.models import MODELS_ON_DISK_ENV, model_input
from consert.encode.pooling import PAPER_POOLING
from consert.data.senteval import DataFormatError
from baselines import TABLED
from baselines.flow_settings import FlowSettings
from consert import registry
from consert.paper import artifacts, catalogue
from consert.planner import paths
from consert.configs import ConfigError
from consert.planner.plan import flow_nli_run, plan_runs, unique_runs
from consert.planner.comparison import ComparisonConfig
from consert.planner.encoding import EncodingSettings
from consert.planner.load import load_workflow_config, typed_overrides
from consert.planner.run_configs import consert_train_config, run_config_text, sgopt_run_config
from consert.train.objectives import run_inputs
from consert.planner.paths import your_eval
from consert.paper.yours import paired_inputs
from consert.paper.row_targets import row_inputs, row_target, row_targets
from consert.workflow_hooks import job_command


#: The checkout, for the conda environment's editable install (workflow/envs/consert.yaml: `-e ${CONSERT_CHECKOUT}`),
#: which conda runs from snakemake's copy of the file in its prefix, wherever --conda-prefix puts it.
os.environ.update(CONSERT_CHECKOUT=str(Path(workflow.basedir).resolve()))  # set, not read: no envvars directive

if not config:
    raise WorkflowError(
        "no config: use --profile profiles/default (the paper's config/config.yaml) or "
        "--configfile config/offline.yaml (the offline stand-in)"
    )
# one line per fault, before any job: the keys and their types, every run's training keys, the local models;
# then the encoding every job shares (a bad pooling is refused here)
try:
    #: The config, checked and typed (consert.planner.keys.WorkflowConfig, its defaults filled in): what every
    #: rule and helper reads. Snakemake's own `config` (what scripts and the report read) holds the same values.
    CONFIG = load_workflow_config(typed_overrides(config, workflow.config_settings.overwrite_config or {}))
    ENCODING = EncodingSettings.of_workflow(CONFIG)
except ConfigError as err:  # one line, not a traceback: the message names the key and what was expected
    sys.exit(str(err))

try:  # the configured folder; for the default one, $CONSERT_DATA or a SentEval folder beside the checkout
    FOUND_DATA = find_senteval(CONFIG.data_dir, Path(workflow.basedir))
except DataFormatError as err:
    sys.exit(str(err))
#: The STS data every evaluation and training reads (an input of each such rule): the folder found on disk,
#: else the default folder, where rule senteval_data downloads it. Reading the config needs no data.
DATA = str(FOUND_DATA or Path(CONFIG.data_dir) / "downstream")
CONFIG = CONFIG.model_copy(update={"data_dir": DATA})
config.update(CONFIG.model_dump())  # snakemake's own config, what scripts and the report read: the same values
#: The harness's command in the jobs' shell lines (consert.workflow_hooks.job_command), consert-job where this run
#: starts the job server (it asks the server), else consert.
CONSERT = job_command(CONFIG, workflow.local_exec)
PLAN = plan_runs(CONFIG)
RUNS = unique_runs(PLAN)
SGOPT_RUNS = {  # SG-OPT's runs, by run id: (size, seed)
    paths.sgopt_run(size, seed): (size, seed) for size in CONFIG.models for seed in CONFIG.sgopt_seeds
}
#: What each training run reads beyond the STS sets (consert.data.inputs), and GloVe's file: the inputs of their
#: jobs. A missing one is downloaded by a job of this run where the config names the place `consert download-data`
#: fetches it to (rules NAME_data, workflow/rules/data.smk); else the DAG stops before any job, naming them all.
TRAIN_CONFIGS = {run: consert_train_config(run, spec, CONFIG) for run, spec in RUNS.items()}
RUN_INPUTS = {run: run_inputs(train_config) for run, train_config in TRAIN_CONFIGS.items()}
GLOVE_INPUTS = [file_input(CONFIG.baselines.glove, "baselines.glove")] if CONFIG.baselines.glove else []
#: The encoders the config names, each in its state (a hub model in the hub's cache or fetched by the job hub_model
#: where snakemake runs, before any job that reads it; a local folder, and whether its rows are compared with the
#: paper's): inputs like the data, said before any GPU-hour.
MODEL_INPUTS = [model_input(f"models.{size}", name) for size, name in CONFIG.models.items()] + [
    model_input(f"yours.{model.name}", model.model) for model in CONFIG.yours
]
EXTERNAL_INPUTS = unique([*MODEL_INPUTS, *chain.from_iterable(RUN_INPUTS.values()), *GLOVE_INPUTS])
#: The sources a download job of this run fetches: each needed at its own place, none of it on disk there.
DOWNLOADS = list(dict.fromkeys(item.source for item in EXTERNAL_INPUTS if item.job and item.source))
#: The hub models the job hub_model fetches, by the file name of their record (data/hub/ORG--NAME.json).
HUB_DOWNLOADS = {paths.hub_slug(item.hub_id): item.hub_id for item in MODEL_INPUTS if item.job}
if not (workflow.remote_exec or workflow.subprocess_exec):  # once, where snakemake was started
    print("Inputs beyond the STS sets:", *(f"  {line}" for line in lines(EXTERNAL_INPUTS)), sep="\n", file=sys.stderr)


#: The models of yours, by name (consert.paper.yours), and the file of their paired rows of comparison.csv.
YOURS = {model.name: model for model in CONFIG.yours}
YOURS_PAIRED = "results/yours.csv"


def your_folder(name):
    """A model of yours given as a local folder: an input of its evaluation (a changed folder reevaluates it)."""
    model = YOURS[name].model
    return [model] if Path(model).expanduser().is_dir() else []


def config_showing(artifact):
    """The config a job of ``artifact`` is handed (its `config` param): with only the models of yours that it shows
    (a table that names them; the diagnostics, which read every table's rows; `yours`: all of them), so that adding
    one reruns only the jobs that show it, not every job whose params hold the config."""
    shown = [m for m in CONFIG.yours if artifact in ("yours", registry.DIAGNOSTICS.key) or artifact in m.tables]
    return CONFIG.model_copy(update={"yours": shown})


def hub_inputs(name):
    """The record of the job hub_model that fetches the hub model ``name``, where one does (none where the model is
    in the hub's cache, a folder or the stand-in): an input of every job that reads the model, which then reads the
    cache offline."""
    slug = paths.hub_slug(name)
    return [paths.hub_record(name)] if slug in HUB_DOWNLOADS else []


def external_inputs(inputs):
    """The files and folders of ``inputs`` a job reads (on disk, or a download job's output); where one that no job
    downloads is missing, the workflow stops before any job with one message that names every missing input (a dry
    run prints the message once and lists every job all the same). Called for the jobs the requested targets need
    only: a target that reads none of them runs."""
    if blocking(inputs):
        message = missing_message(EXTERNAL_INPUTS, jobs=True, dry_run=workflow.dryrun)
        if not workflow.dryrun:
            sys.exit(message)
        if not MISSING_SAID:
            MISSING_SAID.append(message)
            print(message, file=sys.stderr)
    return [item.location for item in inputs if item.is_path]


#: The missing inputs' message, once said in a dry run.
MISSING_SAID = []


def download_outputs(source):
    """What a download job leaves: the source's files, a folder (WordNet's) as a directory output."""
    if not source.members:
        return [source.default]
    outputs = zip(source.members, source.outputs(), strict=True)
    return [directory(str(path)) if member.endswith("/") else str(path) for (member, _), path in outputs]


SIZES = list(CONFIG.models)
SEEDS = CONFIG.seeds
DTYPE = CONFIG.dtype
KEEP_MODELS = CONFIG.keep_models
# `--resources gpu=N` counts real GPUs. A job of the paper's config takes one whole; the stand-in
# configs' jobs (under 2 GB of GPU memory each) share it (`share_gpu: true`), as many at once as
# `--cores` allows.
GPU_PER_JOB = 0 if CONFIG.share_gpu else 1


def auto_threads():
    """`threads: auto`: in a cluster job's own snakemake, the CPUs its allocation gives (SLURM's cpus_per_task, what
    the profile asks); else the cores of one card's share, `--cores` over `--resources gpu=N` (N = 1 when not given),
    so that N jobs that take a card each run at once (snakemake scales a larger count down to `--cores` and runs
    such a job alone)."""
    try:
        cores = workflow.cores
    except WorkflowError:  # no --cores: a cluster's main process, where the profile's cpus_per_task decide
        cores = 1
    if workflow.remote_exec:
        return int(os.environ.get("SLURM_CPUS_PER_TASK") or cores)
    cards = workflow.global_resources.get("gpu")
    cards = getattr(cards, "value", cards) or 1  # snakemake >= 9: a Resource; before: the number
    return max(1, cores // cards)


#: Threads per job: the config's, or `threads: auto`'s.
THREADS = auto_threads() if CONFIG.threads == "auto" else CONFIG.threads
FIGURE_SIZE = artifacts.figure_size(CONFIG)
PUBLISHED = str(Path(workflow.basedir) / "results" / "published")
#: The command that builds the HTML report of this run: the same config files.
REPORT_COMMAND = " ".join(
    ["snakemake", *(f"--configfile {path}" for path in workflow.overwrite_configfiles or ()), "--report report.html"]
)
#: A resolved config file is this template filled with its YAML text (rules run_config, resolved_config).
RUN_CONFIG_TEMPLATE = str(Path(workflow.basedir) / "workflow" / "templates" / "run_config.yaml.jinja")
#: The settings files resolved from the config, results/{name}_config.yaml (written by the rule resolved_config),
#: each read by the jobs of one kind: {name: what its text is}.
RESOLVED_CONFIGS = {
    "encoding": ENCODING.to_yaml,  # every job that encodes or reads a vector cache
    "flow": lambda: FlowSettings.of_workflow(CONFIG).to_yaml(),  # every BERT-flow job
    "comparison": lambda: ComparisonConfig.of_workflow(CONFIG, Path(PUBLISHED)).to_yaml(),  # the verdict's jobs
    # the config itself, every key (its overrides applied): the box check projects its tables' hours from it
    "workflow": lambda: yaml.safe_dump(CONFIG.model_dump(mode="json"), sort_keys=False, allow_unicode=True),
}
ENCODING_CONFIG = "results/encoding_config.yaml"
FLOW_CONFIG = "results/flow_config.yaml"
COMPARISON_CONFIG = "results/comparison_config.yaml"
WORKFLOW_CONFIG = "results/workflow_config.yaml"
#: One target per published row the config reproduces, {results/rows/ARTIFACT/ROW.csv: (artifact, published row)}
#: (consert.paper.row_targets): only that row's jobs run before it, and it ends with the row's verdict.
ROW_TARGETS = row_targets(CONFIG, Path(PUBLISHED))
#: The artifacts this config builds, {file stem: key} (consert.paper.catalogue): the paper's tables (the contrastive
#: family's only when the config trains it), its figures, and the harness's own figures beside them (what a
#: reviewer reads when a number is off).
TABLES = catalogue.stems("table", CONFIG)
FIGURES = catalogue.stems("figure", CONFIG)
DIAGNOSTIC_FIGURES = catalogue.stems("diagnostic", CONFIG)
#: Table 1: counted from the STS files.
TABLE1 = f"results/{registry.TABLE1.csv}"
#: The CSVs of the paper's tables and figures this config builds (what the claims, the cost and the summary read).
ARTIFACT_CSVS = [f"results/{stem}.csv" for stem in [*TABLES, *FIGURES]]


def get_final_output():
    """Every file the default target (`all`) asks for: each artifact this config builds (consert.paper.catalogue),
    with its drawing when it is a figure, then the comparison, the claims, the forest plot, the recipe card and the
    summary page."""
    drawn = [f"figures/{stem}.{ext}" for stem in [*FIGURES, *DIAGNOSTIC_FIGURES] for ext in ("png", "pdf")]
    return [
        TABLE1,
        *ARTIFACT_CSVS,
        *drawn,
        "results/comparison.csv",
        "results/claims.csv",
        "figures/comparison_forest.png",
        "figures/comparison_forest.pdf",
        "results/recipe.csv",
        "results/summary.html",
    ]


#: The artifacts the comparison reads (those this config builds), and their CSVs.
COMPARED_ARTIFACTS = catalogue.compared_artifacts(CONFIG)
COMPARED_TABLES = [f"results/{a.csv}" for a in COMPARED_ARTIFACTS]
#: The evaluation files behind them: the forest plot's stamp names where and when they were computed.
COMPARED_EVALUATIONS = catalogue.evaluation_inputs([a.key for a in COMPARED_ARTIFACTS], CONFIG)


#: On a box with several GPUs each job that may use one claims a card of this pool (consert.gpu_pool): a job
#: that counts a `gpu` resource holds its card whole (unless the config shares cards), the others share one.
#: A job the SLURM executor submits gets none (its allocation's card is its own); inside an allocation snakemake itself
#: runs in, a node-local pool of the allocation's cards (consert.gpu_pool.pool_folder).
GPU_POOL = pool_folder(".snakemake/gpu-pool", submitted_by_slurm=workflow.remote_exec or not workflow.local_exec)
if workflow.local_exec and not workflow.subprocess_exec and GPU_PER_JOB and CONFIG.device != "cpu":  # at the start
    _cards = len(visible_ids())
    _gpus = workflow.global_resources.get("gpu")
    _gpus = int(getattr(_gpus, "value", _gpus) or 1)
    if _idle := idle_cards(_cards, _gpus, workflow.cores, THREADS):
        print(_idle, file=sys.stderr)
GPU_SHARE = "shared" if CONFIG.share_gpu else "whole"


def device_env(gpu_job=False):
    """The environment of a job that encodes or trains: its threads, its device and its claim on a card of the pool.
    A GPU job (``gpu_job``: one that declares the `gpu` resource) computes on the config's device; the others, which
    read vector caches (a cluster sends them to its CPU nodes), on a GPU only where one is visible, unless the config
    asks for the CPU. Its models are on disk before it starts (hub models fetched by the job hub_model), so it never
    downloads one (MODELS_ON_DISK_ENV): a compute node without network runs it."""
    device = CONFIG.device if gpu_job or CONFIG.device == "cpu" else "auto"
    share = GPU_SHARE if gpu_job else "shared"
    wait = f"CONSERT_GPU_WAIT={CONFIG.gpu_wait_minutes * 60} " if CONFIG.gpu_wait_minutes else ""
    return (
        f"OMP_NUM_THREADS={{threads}} CONSERT_DEVICE={device} CONSERT_GPU_POOL={shlex.quote(GPU_POOL)} "
        f"CONSERT_GPU_SHARE={share} {MODELS_ON_DISK_ENV}=1 {wait}"
    )


def harness_command(arguments):
    """The shell words that run one harness command: `consert-job` where this run serves its jobs from the job
    server, else `consert` (CONSERT), then its arguments."""
    return f"{CONSERT} {arguments}"


def consert_shell(arguments, encoder=True, gpu_job=False):
    """The shell line that runs one `consert` command on the STS data (its input `senteval`), its output and its
    log; for a command that encodes or reads a vector cache, with its threads, device and card (:func:`device_env`)
    and the encoding settings (its input `encoding`)."""
    env, settings = (device_env(gpu_job), " --encoding-config {input.encoding:q}") if encoder else ("", "")
    return env + harness_command(f"{arguments} --data {{input.senteval:q}}{settings} --output {{output:q}} > {{log:q}} 2>&1")


#: The names eval_baseline's wildcard takes: the baselines whose record names a table (a pattern that matches nothing
#: where none does).
TABLED_BASELINES = "|".join(map(re.escape, TABLED)) or "(?!)"


def baseline_settings(wildcards):
    """The `--set KEY=VALUE` words of a baseline of a table: its config block (`baselines.<name>`), checked at the
    workflow's start, quoted for the shell."""
    block = CONFIG.baselines.own_blocks().get(wildcards.name, {})
    return shlex.join(f"--set={key}={json.dumps(value)}" for key, value in block.items())  # JSON is YAML


def run_config_yaml(wildcards):
    """The resolved config of a training run as YAML text: ConSERT and its family's, BERT-flow's BERT-NLI (the
    TrainConfig built once, TRAIN_CONFIGS), or SG-OPT's."""
    if wildcards.run in RUNS:
        return run_config_text(TRAIN_CONFIGS[wildcards.run].to_dict())
    size, seed = SGOPT_RUNS[wildcards.run]
    return run_config_text(sgopt_run_config(size, seed, CONFIG))


def model_output(path):
    """An exported model folder: kept with keep_models, else deleted once every rule that reads it
    (a second stage, BERT-flow on the NLI run, the figures) is done; its evaluation stays."""
    return directory(path) if KEEP_MODELS else temp(directory(path))


def stage1_model(wildcards):
    """Two-stage runs start from their NLI run's exported model."""
    stage1 = RUNS[wildcards.run].stage1
    return [paths.run_model(stage1.run_id)] if stage1 else []


def topk_model(wildcards):
    """BERT = the size's encoder; ConSERT = the first seed's Table 2 run."""
    if wildcards.which == "bert":
        return CONFIG.models[wildcards.size]
    return paths.run_model(artifacts.table2_consert_run(CONFIG, wildcards.size))


def figure_model_inputs(wildcards):
    """The STS data, the encoding settings and the vector cache of a figure's model (and, for ConSERT, the
    exported model)."""
    inputs = {"senteval": DATA, "encoding": ENCODING_CONFIG}
    if wildcards.which == "bert":
        return {**inputs, "vectors": paths.vector_cache(wildcards.size)}
    run = artifacts.table2_consert_run(CONFIG, wildcards.size)
    return {**inputs, "model": paths.run_model(run), "vectors": paths.run_vectors(run)}


# the runs whose evaluation vectors other rules read: the figures' run, and the NLI runs that
# BERT-flow builds on (Table 3); only these keep them (runs/{run}/vectors.npz)
# the runs BERT-flow (NLI) fits on (BERT-flow's own BERT-NLI, or the SBERT-NLI re-implementation)
FLOW_NLI_RUNS = {(size, seed): flow_nli_run(CONFIG, size, seed).run_id for size in SIZES for seed in SEEDS}
VECTOR_RUNS = sorted({artifacts.table2_consert_run(CONFIG, FIGURE_SIZE), *FLOW_NLI_RUNS.values()})
#: Runs that other computing jobs wait for: a second stage's first stage, and the runs whose kept vectors BERT-flow,
#: the top-k curve and the figures read.
UPSTREAM_RUNS = {spec.stage1.run_id for spec in RUNS.values() if spec.stage1} | set(VECTOR_RUNS)
#: A job's `priority:` when other computing jobs wait for it: it starts before the ready jobs nothing waits for. On
#: two cores the README's main job otherwise trained a first stage late, and its second stage ran alone at the end
#: (136 s of 996 with one core idle, Zen 4 EPYC).
UPSTREAM_PRIORITY = 1


def run_priority(wildcards):
    """:data:`UPSTREAM_PRIORITY` for a run other jobs wait for (:data:`UPSTREAM_RUNS`), else 0."""
    return UPSTREAM_PRIORITY if wildcards.run in UPSTREAM_RUNS else 0


def runs_in(runs):
    """Wildcard constraint: exactly one of ``runs``."""
    return "|".join(re.escape(run) for run in runs) or "(?!)"


def topk_max(cache):
    """The top-k statistics a vector cache keeps (its largest k; 0: none): those Figure 4 reads, of the figure
    size's BERT and ConSERT run."""
    figure_caches = {
        paths.vector_cache(FIGURE_SIZE),
        paths.run_vectors(artifacts.table2_consert_run(CONFIG, FIGURE_SIZE)),
    }
    return ENCODING.topk_max if cache in figure_caches else 0


#: The run the box check trains (check_box), Table 2's first ConSERT run of the first size, for a few hundred steps
#: (its config's own cap where that is lower).
CHECK_RUN = artifacts.table2_consert_run(CONFIG, SIZES[0])
CHECK_STEPS = min(300, TRAIN_CONFIGS[CHECK_RUN].max_steps or 300)
#: The run length the box check chooses its step's execution for: the full run's (at least the length from which
#: `auto` packs, replays CUDA graphs and compiles), so that its few hundred steps take the path the paper's runs take.
CHECK_EXECUTION_STEPS = max(COMPILE_MIN_STEPS, planned_run_steps(TRAIN_CONFIGS[CHECK_RUN]))
CHECK_EVALUATION = f"results/check/consert-{SIZES[0]}.csv"
CHECK_PROJECTION = "results/check/projection.csv"  # each table's planned training steps at the check's rate
FLOW_POOLING = CONFIG.baselines.flow_pooling
#: whitening pooling by its file-name slug
WHITENING_POOLINGS = {paths.pooling_slug(p): p for p in CONFIG.baselines.whitening_poolings}
