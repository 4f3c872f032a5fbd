"""``consert bench --config FILE``: what a workflow config's DAG costs on the device at hand, measured job kind
by job kind.

Every training run of the config (``runs/<run>/train.yaml``'s values, SG-OPT's too) is planned as the trainer
plans it: the items of one epoch of the paper's run (the 89,192 STS texts, the 942,069 SNLI + MultiNLI pairs,
SimCSE's 1,000,000 Wikipedia sentences, a few-shot sample upsampled as the authors'), the batch size, the
epochs, ``max_steps``; the dev evaluations on its evaluation grid; and the 7-set evaluation that follows it.
Runs that train alike (model size, mode, batch size, max length) form a job kind, and each kind is timed once:
the harness's own trainer for ``steps`` steps on a randomly initialised BERT of the size's hub shape
(bert-base-uncased's or bert-large-uncased's configuration, no download; the same arithmetic, for timing
only), its steady steps per second after a warm-up (without the windows of steps in which a CUDA graph was
captured), what a run pays once (warm-up, graph captures, compilation), and one dev evaluation and one 7-set
evaluation per size.

The projection runs every run to its planned length: an upper bound. The runs whose recipe stops early (the
authors' ``patience`` evaluations without a gain; SG-OPT's dev declines) may end sooner; the table says which
rule each kind follows. A second projection (``expected_``) stops each BERT-base unsupervised run on the STS
texts where it would if it peaked at the step the paper's Table 4 gives for its batch size (an assumption for
the runs of other views or temperatures, which Table 4 does not cover); the paper gives no peak for the
others. ``--resources gpu=N`` is projected as the GPU-hours over N cards or the longest chain
of one run (its NLI stage, itself, its evaluation), whichever is longer. BERT-flow's and whitening's fits, and
the CPU jobs, are not timed here.
"""

from __future__ import annotations

import importlib.util
import json
import math
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import torch

from consert.bench import execution_settings
from consert.data.senteval import PACKAGE_CHECKOUT, SentEvalData
from consert.data.senteval import dev_pairs as dev_task_pairs
from consert.encode.models import STAND_IN_MODEL, resolve_model
from consert.paper.recipe_card import NLI_PAIRS, STS_TEXTS
from consert.planner.paths import sgopt_run
from consert.planner.plan import plan_runs, unique_runs
from consert.planner.run_configs import consert_train_config, sgopt_run_config
from consert.train.config import TrainConfig
from consert.train.export import TRAINING_RECORD
from consert.train.loop import evaluation_grid, loop_settings, planned_step_count
from consert.train.objectives import objective_for

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig

#: The hub configurations' shapes (layers, hidden size, heads, feed-forward size), by the config's size keys.
HUB_SHAPES = {
    "base": {"num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 3072},
    "large": {"num_hidden_layers": 24, "hidden_size": 1024, "num_attention_heads": 16, "intermediate_size": 4096},
}
#: A 2-layer BERT for trying the command on a small machine (``--shape tiny``).
TINY_SHAPE = {"num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 64}
#: Lines of SimCSE's wiki1m_for_simcse.txt (its data/download_wiki.sh).
WIKI1M_TEXTS = 1_000_000
#: The published numbers of a checkout, and Table 4's file among them (its batch sizes' best steps).
PUBLISHED = PACKAGE_CHECKOUT / "results" / "published"
TABLE4_FILE = "consert_table4_batch_size.csv"


@dataclass(frozen=True)
class PlannedJob:
    """One training run as the trainer plans it, and the kind of step it repeats."""

    run: str
    kind: str
    steps: int
    dev_evaluations: int
    stopping: str
    after: str | None = None  # the run whose exported model it starts from (a two-stage mode's NLI run)
    #: where it would stop if it peaked where the paper's run of its recipe did (:func:`stop_after_peak`): the
    #: steps and dev evaluations; None where the paper gives no peak (the planned length then)
    expected: tuple[int, int] | None = None

    @property
    def expected_steps(self) -> int:
        return self.expected[0] if self.expected else self.steps

    @property
    def expected_dev_evaluations(self) -> int:
        return self.expected[1] if self.expected else self.dev_evaluations


def _items(config: TrainConfig) -> int:
    """Items of one epoch of the paper's run of ``config`` (the card's counts; a text file: its lines if here)."""
    if objective_for(config).is_supervised:
        return NLI_PAIRS
    if config.train_texts != "sts":
        path = Path(config.train_texts)
        return sum(1 for _ in path.open(encoding="utf-8")) if path.is_file() else WIKI1M_TEXTS
    if config.n_texts:  # few-shot: the sample repeated int(corpus / n) times (main.py --do_upsampling)
        return config.n_texts * int(STS_TEXTS / config.n_texts) if config.upsample else config.n_texts
    return STS_TEXTS


def planned_run_steps(config: TrainConfig) -> int:
    """The steps the paper's run of ``config`` plans (its epochs over the paper's items, capped by its own
    ``max_steps``), read without the data."""
    return planned_step_count(_items(config), config.batch_size, config.epochs, config.max_steps)


def published_peaks(published: Path = PUBLISHED) -> dict[int, int]:
    """Table 4's steps of the best checkpoint of BERT-base's unsupervised run (the STS texts, the paper's views
    and temperature), by batch size; none where the published folder is not here (an installed package)."""
    table = published / TABLE4_FILE
    if not table.is_file():
        return {}
    rows = pd.read_csv(table)
    return dict(zip(rows.batch_size.astype(int), rows.steps.astype(int), strict=True))


def stop_after_peak(grid: Counter[int], peak: int, patience: int) -> tuple[int, int]:
    """``(steps, dev passes)`` of a run whose best dev score comes at the evaluation at step ``peak`` and is never
    beaten: it stops at the ``patience``-th evaluation after it (an epoch end scored twice counts twice, as the
    loop counts it, but is one dev pass), or at the grid's end."""
    events = [step for step in sorted(grid) for _ in range(grid[step])]
    if peak not in grid:
        raise ValueError(f"step {peak} is not on the run's evaluation grid")
    stop = events.index(peak) + patience
    end = events[min(stop, len(events) - 1)]
    return end, sum(1 for step in grid if step <= end)  # the dev set is scored once at a step counted twice


def _stopping(patience: int | None, counts: str = "evaluations without a gain") -> str:
    return "full length" if patience is None else f"patience {patience} ({counts}; the recipe's)"


def _peaks_as_table4(size: str, config: TrainConfig) -> bool:
    """Whether a run trains as Table 4's runs did (BERT-base, unsupervised, every STS text, the authors'
    patience), so that it is expected to peak where Table 4's run of its batch size peaked."""
    return (
        size == "base"
        and config.mode == "unsup"
        and config.train_texts == "sts"
        and not config.n_texts
        and config.patience is not None
    )


def planned_jobs(workflow: WorkflowConfig, data: SentEvalData) -> tuple[list[PlannedJob], dict[str, Any]]:
    """Every training run of the workflow config, planned; and one config per job kind, the kind's first run's
    (a :class:`TrainConfig`, or SG-OPT's config), to time the kind with. ``data``: SG-OPT's texts."""
    from baselines.sgopt import SgOptConfig, sgopt_texts

    jobs, kinds, peaks = [], {}, published_peaks()
    for run_id, spec in unique_runs(plan_runs(workflow)).items():
        config = consert_train_config(run_id, spec, workflow)
        kind = f"{spec.size} {spec.mode} b{config.batch_size} L{config.max_length}"
        kinds.setdefault(kind, config)
        items, settings = _items(config), loop_settings(config, "fp32")
        steps = planned_step_count(items, config.batch_size, config.epochs, config.max_steps)
        grid = evaluation_grid(items, settings)
        after = spec.stage1.run_id if spec.stage1 else None
        peak = peaks.get(config.batch_size) if _peaks_as_table4(spec.size, config) else None
        expected = stop_after_peak(grid, peak, config.patience) if peak and peak in grid else None
        stopping = _stopping(config.patience)
        # one dev pass per evaluation step, also where the loop counts it twice (an epoch end on the eval_every grid)
        jobs.append(PlannedJob(run_id, kind, steps, len(grid), stopping, after, expected))
    for size in workflow.models:
        for seed in workflow.sgopt_seeds:
            values = sgopt_run_config(size, seed, workflow)
            config = SgOptConfig(**{k: v for k, v in values.items() if k != "data"})
            kind = f"{size} sgopt b{config.batch_size} L{config.max_length}"
            kinds.setdefault(kind, config)
            items = len(sgopt_texts(config.train_texts, data))
            steps = planned_step_count(items, config.batch_size, config.epochs, config.max_steps)
            evaluations = steps // config.eval_every + (steps % config.eval_every > 0)
            stopping = _stopping(config.patience, "dev declines, never reset")
            jobs.append(PlannedJob(sgopt_run(size, seed), kind, steps, evaluations, stopping))
    return jobs, kinds


@dataclass(frozen=True)
class KindRate:
    """A job kind's measured steady training rate and how it ran."""

    kind: str
    steps_per_s: float
    steps_timed: int
    how: str
    #: seconds a run pays once besides its steps at the steady rate (warm-up, graph captures, compilation)
    one_time_s: float = 0.0
    #: the precision the timed steps ran in (the training record's; empty where the run did not export)
    dtype: str = ""
    #: of ``one_time_s``, the seconds torch.compile took: compiling, or loading from the disk cache
    compile_s: float = 0.0
    #: whether it compiled anything (Inductor's disk cache missed), rather than only loading
    compiled: bool = False


#: A measurement :func:`run` takes of each timed kind besides its rate (``also``): from the kind's config, model,
#: the data, the device and its measured rate, named values (the cost table's columns for the kind).
KindMeasure = Callable[[Any, str, SentEvalData, str, "KindRate"], dict[str, float]]


def timed_config(config, model: str, steps: int, device: str, workdir: Path, data: SentEvalData):
    """The kind's config for a timing run, and what was swapped: the random model, ``steps`` steps, no dev
    evaluation inside the timed steps, and inputs that are here (the STS texts for a missing text file;
    pairs of SNLI's and MultiNLI's stated lengths, written in ``workdir``, for missing NLI files
    (:mod:`consert.bench.nli_lengths`); AugCSE's augmentations that need no parser when its spaCy model is not
    installed)."""
    from baselines.sgopt import SgOptConfig
    from consert.bench.nli_lengths import lengths_note, write_nli_files
    from consert.train.text_augment import WITHOUT_PARSER

    data_dir = str(data.root)

    # epochs enough that max_steps, not a small data set, ends the timing run
    common = {"model": model, "max_steps": steps, "epochs": steps, "device": device, "output_dir": str(workdir / "out")}
    if isinstance(config, SgOptConfig):
        return config.replace(**common, eval_every=10 * steps), []
    # one dev evaluation, after the timed steps (the epoch grid would score the dev set at each short epoch's end)
    changes: dict[str, Any] = {**common, "eval_every": 10 * steps, "eval_grid": "global", "data": data_dir}
    if config.two_stage:  # its second stage alone, from the random model as from its NLI run's export
        changes["stage1_model"] = model
    swapped = []
    supervised = objective_for(config).is_supervised  # the timed stage reads NLI pairs, else texts
    if not supervised and config.train_texts != "sts" and not Path(config.train_texts).is_file():
        changes["train_texts"] = "sts"
        swapped.append(f"STS texts for the missing {config.train_texts}")
    if supervised and config.nli_files and not all(Path(p).is_file() for p in config.nli_files):
        files = write_nli_files(workdir / "nli", data.unlabeled_texts(), pairs=steps * config.batch_size)
        changes.update(nli_source="snli+mnli", nli_files=[str(path) for path in files])
        swapped.append(f"for the missing NLI files, {lengths_note()}")
    augcse = config.augcse
    if augcse.spacy_model and importlib.util.find_spec(augcse.spacy_model) is None:
        without = tuple(n for n in augcse.text_augmentations if n in WITHOUT_PARSER)
        changes["augcse"] = augcse.replace(spacy_model=None, text_augmentations=without)
        swapped.append(f"no parser-based augmentations ({augcse.spacy_model} is not installed)")
    return config.replace(**changes), swapped


def untimeable(config) -> str | None:
    """Why a kind cannot be timed here (a package its run needs is not installed), or None."""
    if getattr(config, "objective", None) == "augcse" and importlib.util.find_spec("spacy") is None:
        return "AugCSE's text augmentations need spaCy, which is not installed here"
    return None


def measure_kind(
    kind: str, config, model: str, data: SentEvalData, steps: int, device: str, run_steps: int | None = None
) -> KindRate:
    """Train ``steps`` steps of ``config`` on ``model``, executed as a run of ``run_steps`` steps is (CUDA graphs
    or a compiled forward under ``auto``); the steady rate after a third of them (warm-up, compilation), and what
    the timed steps took beyond that rate: the run's one-time cost. A graphed step first captures every batch
    shape of the timed steps (:func:`~consert.train.loop.capture_ahead`, charged to the one-time cost: a full run
    sees a few more shapes), so that no timed window captures; a window that still did is left out of the rate."""
    import torch._inductor.utils

    from baselines.sgopt import SgOptConfig, train_sgopt
    from consert.bench.steady_rate import steady_rate
    from consert.train.loop import TrainingFault, read_interval
    from consert.train.trainer import train

    # nothing compiled in this process before: the kind compiles, or loads from the disk cache, as a new run does
    torch._dynamo.reset()
    torch._inductor.utils.clear_caches()
    compiled_before, misses_before = _compile_seconds(), _cache_misses()
    with tempfile.TemporaryDirectory(prefix="consert-cost-") as scratch:
        timed, swapped = timed_config(config, model, steps, device, Path(scratch), data)
        try:
            if isinstance(timed, SgOptConfig):
                result = train_sgopt(timed, data, progress=False, capture_steps=steps)
                log, captured_ahead = result.loop.log, result.captured_ahead_s
            else:
                result = train(timed, data, progress=False, execution_steps=run_steps, capture_steps=steps)
                log, captured_ahead = result.log, result.captured_ahead_s
            record = json.loads((Path(result.output_dir) / TRAINING_RECORD).read_text(encoding="utf-8"))
        except TrainingFault as fault:  # random weights may pool to one direction: the steps ran all the same
            if fault.log is None:
                raise
            log, captured_ahead, record = fault.log, 0.0, {}  # its captures are then charged to no run
            swapped.append("the random model's dev vectors collapsed (timed steps are unaffected)")
    rate = steady_rate(log, skip=max(1, steps // 3), window=read_interval(device))
    if rate.counts_captures:
        swapped.append("graph captures in every timed window: the rate counts them (a lower bound)")
    elif rate.capture_windows:
        swapped.append(f"{rate.capture_windows} window(s) with graph captures left out of the rate")
    if captured_ahead:
        swapped.append(f"its {steps} steps' graphs captured ahead in {captured_ahead:.1f} s")
    one_time = rate.one_time_s + captured_ahead
    how = "; ".join(swapped) or "as configured"
    compile_s, compiled = _compile_seconds() - compiled_before, _cache_misses() > misses_before
    dtype = record.get("dtype", "")
    return KindRate(kind, rate.steps_per_s, rate.timed_steps, how, one_time, dtype, compile_s, compiled)


def _inductor_cache(folder: Path):
    """Inductor's disk cache in ``folder`` inside the block (its in-memory caches cleared on the way in and out)."""
    from torch._inductor.runtime.cache_dir_utils import temporary_cache_dir

    folder.mkdir(parents=True, exist_ok=True)
    return temporary_cache_dir(str(folder))


def _compile_seconds() -> float:
    """The seconds torch.compile has spent in this process so far (TorchDynamo's own account)."""
    return torch._dynamo.utils.calculate_time_spent().get("total_wall_time", 0.0)


def _cache_misses() -> int:
    """The graphs Inductor has compiled in this process so far, not found in its disk cache."""
    return torch._dynamo.utils.counters["inductor"]["fxgraph_cache_miss"]


def compilation_once(rates: dict[str, KindRate]) -> tuple[dict[str, float], float]:
    """Compilation charged once a machine, not once a run: compiled code is shared through the disk cache
    (:mod:`consert.train.fused`), so a kind whose timing compiled (Inductor's cache missed) pays that once, and
    each of its runs the load a run that finds the cache pays, taken as the cheapest load measured among the kinds
    of its model size and precision that only loaded; with none, its compilation stays per run (an upper bound).
    A kind that only loaded keeps its load per run. The one-time seconds by kind and the seconds charged once."""
    loads: dict[tuple[str, str], float] = {}
    for rate in rates.values():
        if rate.compile_s > 0 and not rate.compiled:
            key = (rate.kind.split()[0], rate.dtype)
            loads[key] = min(loads.get(key, rate.compile_s), rate.compile_s)
    one_time = {kind: rate.one_time_s for kind, rate in rates.items()}
    once = 0.0
    for rate in rates.values():
        load = loads.get((rate.kind.split()[0], rate.dtype), rate.compile_s)
        if rate.compiled and load < rate.compile_s:
            once += rate.compile_s - load
            one_time[rate.kind] = max(0.0, rate.one_time_s - (rate.compile_s - load))
    return one_time, once


def evaluation_seconds(model: str, data: SentEvalData, device: str, dev_pairs: int | None = None) -> float:
    """Seconds of one evaluation of ``model`` as a training job's: the 7 sets with the paper's pooling (or the
    first ``dev_pairs`` pairs of the dev task, STS-B's dev split: a dev evaluation), after a warm-up pass."""
    from consert.encode.encoder import SentenceEncoder
    from consert.evaluate.protocol import encode_and_score, evaluate_model

    encoder = SentenceEncoder.load(model, device=device)
    if dev_pairs is not None:
        pairs = dev_task_pairs(data, dev_pairs)
        encode_and_score(encoder, pairs, "mean")
        started = time.perf_counter()
        encode_and_score(encoder, pairs, "mean")
        return time.perf_counter() - started
    started = time.perf_counter()
    evaluate_model(model, data=data, encoder=encoder, device=device, progress=False)
    return time.perf_counter() - started


def projection(
    jobs: list[PlannedJob],
    rates: dict[str, float],
    dev_seconds: dict[str, float],
    test_seconds: dict[str, float],
    gpus: int,
    one_time: dict[str, float] | None = None,
    once_s: float = 0.0,
) -> tuple[pd.DataFrame, dict[str, float]]:
    """Per job kind: runs, steps, dev evaluations, the stopping rule, the rate, the one-time seconds of a run
    (``one_time``, by kind; none where not given) and the GPU-hours; the same where each run stops as expected
    (``expected_``: after its published peak where the paper gives one); and the totals: GPU-hours, and the wall
    hours on ``gpus`` cards (GPU-hours / cards, or the longest chain of runs, whichever is longer), both ways, with
    ``once_s`` seconds charged once to the DAG (compilation, :func:`compilation_once`)."""
    one_time = one_time or {}

    def seconds(job: PlannedJob, steps: int, dev_evaluations: int) -> float:
        size = job.kind.split()[0]
        training = steps / rates[job.kind] + one_time.get(job.kind, 0.0)
        return training + dev_evaluations * dev_seconds[size] + test_seconds[size]

    planned = {job.run: seconds(job, job.steps, job.dev_evaluations) for job in jobs}
    expected = {job.run: seconds(job, job.expected_steps, job.expected_dev_evaluations) for job in jobs}
    rows = []
    for kind in dict.fromkeys(job.kind for job in jobs):
        mine = [job for job in jobs if job.kind == kind]
        rows.append(
            {
                "kind": kind,
                "runs": len(mine),
                "steps": sum(job.steps for job in mine),
                "dev_evaluations": sum(job.dev_evaluations for job in mine),
                "stopping": mine[0].stopping,
                "steps_per_s": rates[kind],
                "one_time_s": one_time.get(kind, 0.0),
                "gpu_hours": sum(planned[job.run] for job in mine) / 3600,
                "expected_steps": sum(job.expected_steps for job in mine),
                "expected_gpu_hours": sum(expected[job.run] for job in mine) / 3600,
            }
        )
    table = pd.DataFrame(rows).sort_values("gpu_hours", ascending=False, ignore_index=True)
    totals = {}
    for prefix, by_run in (("", planned), ("expected_", expected)):
        chain = [by_run[job.run] + (by_run.get(job.after, 0.0) if job.after else 0.0) for job in jobs]
        longest = max((value for value in chain if not math.isnan(value)), default=0.0) / 3600
        total = table[f"{prefix}gpu_hours"].sum() + once_s / 3600
        totals.update(
            {
                f"{prefix}gpu_hours": total,
                f"{prefix}wall_hours": max(total / gpus, longest),
                f"{prefix}longest_chain_hours": longest,
            }
        )
    totals["compile_once_s"] = once_s
    return table, totals


def rate_projection(workflow: WorkflowConfig, jobs: list[PlannedJob], steps_per_s: float) -> pd.DataFrame:
    """Each table's and figure's training runs (a two-stage run's NLI stage and BERT-flow's BERT-NLI among them),
    their planned steps and those steps' GPU-hours at one rate (the box check's,
    :func:`consert.bench.cuda.exported_run_rate`), and ``all`` (every run once): a first estimate, which costs every
    step as one of the timed run's kind (BERT-large's and a batch of 192's cost more, BERT-NLI's and SG-OPT's
    batches of 16 less; ``consert bench --config`` times each kind) and leaves out evaluations, encodings and fits."""
    from consert.paper import catalogue
    from consert.paper.job_costs import artifact_jobs

    steps = {job.run: job.steps for job in jobs}

    def row(name: str, runs: set[str]) -> dict[str, Any]:
        total = sum(steps[run] for run in runs)
        return {"artifact": name, "runs": len(runs), "steps": total, "gpu_hours": total / steps_per_s / 3600}

    rows = []
    for artifact in catalogue.ARTIFACTS:
        if artifact.kind not in ("table", "figure") or not artifact.runs_in(workflow):  # the paper's, trained
            continue
        evaluations = artifact_jobs(artifact.key, workflow).values()
        runs = {Path(evaluation).stem for evaluation in evaluations if evaluation} & steps.keys()
        if runs:
            rows.append(row(artifact.key, runs))
    rows.append(row("all", set(steps)))
    return pd.DataFrame(rows).assign(steps_per_s=steps_per_s)


def kind_run_steps(jobs: list[PlannedJob]) -> dict[str, int]:
    """Each kind's first run's planned steps: the run length its timing executes its step for (CUDA graphs and
    compilation apply to long runs only)."""
    return {job.kind: job.steps for job in reversed(jobs)}


def random_bert(folder: Path, shape: dict[str, int]) -> str:
    """A randomly initialised BERT of ``shape`` (BertConfig's keys; torch seeded with 0) with the stand-in's uncased
    30,522-token WordPiece vocabulary, saved to ``folder``; its path."""
    import shutil

    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    BertModel(BertConfig(**shape)).save_pretrained(folder)
    vocabulary = Path(resolve_model(STAND_IN_MODEL).path)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (vocabulary / name).is_file():
            shutil.copy(vocabulary / name, Path(folder) / name)
    return str(folder)


def random_models(sizes, folder: Path, shape: str = "hub") -> dict[str, str]:
    """A randomly initialised BERT per size under ``folder``: the size's hub shape, or ``tiny``'s 2 layers."""
    return {size: random_bert(folder / size, TINY_SHAPE if shape == "tiny" else HUB_SHAPES[size]) for size in sizes}


def run(
    workflow: WorkflowConfig,
    data: SentEvalData,
    device: str,
    steps: int,
    gpus: int,
    shape: str = "hub",
    compare: tuple[str, ...] = (),
    also: KindMeasure | None = None,
) -> tuple[pd.DataFrame, dict[str, float]]:
    """Plan, time every job kind and each size's evaluations, and project; printed as it goes. ``compare``:
    executions (:data:`COMPARED_EXECUTIONS`) each kind is also timed in, in the same run, as the columns
    ``<execution>_steps_per_s`` (empty where the kind has no such execution: SG-OPT never compiles; or where its
    step cannot run so: ``graphs`` or ``fused`` for a step that cannot be graphed). ``also``: a measurement
    taken of each timed kind besides its rate (its values the table's columns; the harness's own benchmarks, such as
    a step against the card's limit, ``harness_bench/speed_of_light.py``)."""
    from consert.hardware import hardware_summary

    jobs, kinds = planned_jobs(workflow, data)
    print(f"{len(jobs)} training runs in {len(kinds)} job kinds; timing on {hardware_summary(device)}", flush=True)
    rates, measured, notes, dev_seconds, test_seconds, limits = {}, {}, {}, {}, {}, {}
    compared: dict[str, dict[str, float]] = {execution: {} for execution in compare}
    # The kinds' timings share one empty Inductor cache, as a new machine's runs share theirs, so every compilation
    # the DAG needs happens (and is charged) here; the other measurements compile into throwaway caches.
    with tempfile.TemporaryDirectory(prefix="consert-cost-models-") as scratch, _inductor_cache(Path(scratch) / "main"):
        models = random_models(workflow.models, Path(scratch), shape)
        for size in workflow.models:
            dev_seconds[size] = evaluation_seconds(models[size], data, device, dev_pairs=1500)
            test_seconds[size] = evaluation_seconds(models[size], data, device)
            print(f"  {size}: dev evaluation {dev_seconds[size]:.2f} s, 7-set evaluation {test_seconds[size]:.1f} s")
        run_steps = kind_run_steps(jobs)
        for kind, config in kinds.items():
            missing = untimeable(config)
            if missing:
                rates[kind], notes[kind] = float("nan"), f"not timed: {missing}"
                print(f"  {kind}: not timed ({missing})", flush=True)
                continue
            model = models[kind.split()[0]]
            rate = measure_kind(kind, config, model, data, steps, device, run_steps[kind])
            rates[kind], measured[kind], notes[kind] = rate.steps_per_s, rate, rate.how
            print(
                f"  {kind}: {rate.steps_per_s:.2f} steps/s ({rate.steps_timed} steps timed; "
                f"{rate.one_time_s:.1f} s once a run"
                + (f", of which compilation {rate.compile_s:.1f} s" if rate.compile_s else "")
                + f"; {rate.how})",
                flush=True,
            )
            if also is not None:
                with _inductor_cache(Path(scratch) / f"also {kind}"):
                    limits[kind] = also(config, model, data, device, rate)
                print(f"    {', '.join(f'{k} {v:.3g}' for k, v in limits[kind].items())}", flush=True)
            for execution in compare:
                settings = execution_settings(config, execution)
                if settings is None:
                    continue
                try:
                    timed = config.replace(**settings)
                    with _inductor_cache(Path(scratch) / f"{execution} {kind}"):
                        compared[execution][kind] = measure_kind(kind, timed, model, data, steps, device).steps_per_s
                except ValueError as refused:  # cuda_graphs: on where the step cannot be graphed says why
                    if settings.get("cuda_graphs") != "on":  # any other failure is one
                        raise
                    compared[execution][kind] = float("nan")
                    notes[kind] += f"; {execution}: not timed ({refused})"
                    print(f"    {execution}: not timed ({refused})", flush=True)
                    continue
                print(f"    {execution}: {compared[execution][kind]:.2f} steps/s", flush=True)
    one_time, once = compilation_once(measured)
    table, totals = projection(jobs, rates, dev_seconds, test_seconds, gpus, one_time, once)
    for execution, by_kind in compared.items():
        table[f"{execution}_steps_per_s"] = table.kind.map(by_kind)
    for column in dict.fromkeys(column for values in limits.values() for column in values):
        table[column] = table.kind.map({kind: values.get(column, math.nan) for kind, values in limits.items()})
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    table["timed_as"] = table.kind.map(notes)
    untimed = table.kind[table.steps_per_s.isna()].tolist()
    print(
        f"total {totals['gpu_hours']:.1f} GPU-hours; on {gpus} card(s) {totals['wall_hours']:.1f} h "
        f"(longest chain {totals['longest_chain_hours']:.1f} h); every run at its planned length (an upper bound)"
        + (f"; compilation charged once: {once:.0f} s" if once else "")
        + (f"; not counted, not timed here: {', '.join(untimed)}" if untimed else "")
    )
    print(
        f"expected {totals['expected_gpu_hours']:.1f} GPU-hours, on {gpus} card(s) {totals['expected_wall_hours']:.1f}"
        f" h, if every BERT-base unsupervised run on the STS texts peaks where Table 4's run of its batch size did "
        f"and stops when its patience runs out; the others at their planned length"
    )
    return table, totals
