"""Benchmarks against sentence-transformers, measured back to back in one process.

``python -m harness_bench references`` runs, alternating and repeated, (1) the 7-set STS evaluation of the stand-in:
this harness (every distinct sentence once, length-sorted; each path ``auto`` chooses between: fp32 through
ONNX Runtime, fp32 and bf16 autocast through PyTorch) against sentence-transformers' ``EmbeddingSimilarityEvaluator``
on the same model, data, max length and threads; and (2) one ConSERT training step (batch 96, two
views, backward and AdamW step; fp32 and bf16) against a ``SentenceTransformerTrainer``
step (default settings, fp32) with the equivalent in-batch contrastive loss
(``MultipleNegativesRankingLoss`` on (text, text) pairs). It prints the CPU (model, torch capability,
bf16 units, threads), the dtype ``auto`` measures fastest, medians, the ratios and the peak RSS of a separate
evaluation process. Machines are noisy: compare ratios from one run only.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np
import torch

from consert.data.senteval import SentEvalData
from consert.encode.models import STAND_IN_MODEL, resolve_model
from consert.encode.precision import autocast
from consert.hardware import hardware_summary

REFERENCE = "sentence-transformers"


def _median_times(functions: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """Run each function ``repeats`` times, alternating between them; return the wall times."""
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repeats):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            times[name].append(time.perf_counter() - start)
    return times


def _st_evaluators(data: SentEvalData):
    from sentence_transformers.evaluation import EmbeddingSimilarityEvaluator

    evaluators = {}
    for name, sts in data.sets.items():
        pairs = [p for group in sts.eval_groups.values() for p in group]
        evaluators[name] = EmbeddingSimilarityEvaluator(
            [p.sent1 for p in pairs],
            [p.sent2 for p in pairs],
            [p.score for p in pairs],
            main_similarity="cosine",
            name=name,
            show_progress_bar=False,
        )
    return evaluators


#: The harness's CPU evaluation paths besides PyTorch fp32 (sentence-transformers' own, the reference):
#: what ``dtype: auto`` chooses between on a CPU (:mod:`consert.encode.precision`).
HARNESS_PATHS = (("fp32", "onnxruntime"), ("fp32", "torch"), ("bf16", "torch"))


def bench_evaluation(data: SentEvalData, repeats: int, batch_size: int | None = None) -> dict[str, object]:
    """Harness (each of :data:`HARNESS_PATHS`) vs sentence-transformers' evaluator; Spearman of each.

    Both sides start from a loaded model: the timings are encoding plus scoring. sentence-transformers
    runs PyTorch fp32 on the same model, max length and pooling, so its Spearman is also the fp32
    reference the harness's paths are checked against.
    """
    from sentence_transformers import SentenceTransformer

    from consert.encode.encoder import SentenceEncoder
    from consert.evaluate.protocol import evaluate_embedder

    path = str(resolve_model(STAND_IN_MODEL).path)
    reference = SentenceTransformer(path, device="cpu")
    reference.max_seq_length = 64
    evaluators = _st_evaluators(data)  # its defaults: batch size 16
    results: dict[str, dict[str, float]] = {}

    def run_reference():
        results[REFERENCE] = {
            name: float(next(v for k, v in evaluator(reference).items() if k.endswith("spearman_cosine"))) * 100
            for name, evaluator in evaluators.items()
        }

    def run_harness(encoder: SentenceEncoder, label: str) -> Callable[[], None]:
        def run():  # the work sentence-transformers' evaluator does: no bootstrap (timed on its own below)
            embed = lambda sentences: encoder.encode(sentences, "mean", progress=False)  # noqa: E731
            frame = evaluate_embedder(data, embed, resamples=0)
            rows = frame[(frame.subset == "all") & (frame.dataset != "Avg")]
            results[label] = dict(zip(rows.dataset, rows.spearman, strict=True))

        return run

    functions: dict[str, Callable[[], None]] = {REFERENCE: run_reference}
    for dtype, engine in HARNESS_PATHS:
        encoder = SentenceEncoder.load(STAND_IN_MODEL, dtype=dtype, engine=engine, batch_size=batch_size, device="cpu")
        label = f"harness {encoder.dtype} ({encoder.engine})"
        functions[label] = run_harness(encoder, label)
    times = _median_times(functions, repeats)
    return {"times": times, "spearman": results}


def bench_training_step(data: SentEvalData, repeats: int, batch_size: int = 96) -> dict[str, object]:
    """One ConSERT step vs one SentenceTransformerTrainer step with the in-batch contrastive loss."""
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.losses import MultipleNegativesRankingLoss

    from consert.train.config import TrainConfig
    from consert.train.execution import StepExecution
    from consert.train.objectives import Contrastive
    from consert.train.trained_encoder import TrainedEncoder, set_seed

    texts = data.unlabeled_texts()
    rng = np.random.default_rng(0)
    batch = [texts[i] for i in rng.choice(len(texts), batch_size, replace=False)]

    def consert_step_function(dtype: str) -> Callable[[], None]:
        set_seed(1)
        config = TrainConfig(batch_size=batch_size, dtype=dtype, device="cpu")
        encoder = TrainedEncoder(config, data)
        execution = StepExecution(encoder)
        objective = Contrastive(config, encoder, execution)
        execution.settle(1, list(encoder.model.parameters()), objective)
        optimizer = torch.optim.AdamW(encoder.model.parameters(), lr=1e-6)

        def consert_step():
            with autocast("cpu", encoder.dtype):
                loss = objective.loss(batch)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        return consert_step

    consert_steps = {f"consert step {dtype}": consert_step_function(dtype) for dtype in ("fp32", "bf16")}

    model = SentenceTransformer(str(resolve_model(STAND_IN_MODEL).path), device="cpu")
    model.max_seq_length = 64
    loss = MultipleNegativesRankingLoss(model)
    dataset = Dataset.from_dict({"anchor": batch, "positive": batch})
    arguments = SentenceTransformerTrainingArguments(
        output_dir=tempfile.mkdtemp(prefix="consert-bench-"), per_device_train_batch_size=batch_size, report_to=[]
    )  # otherwise its defaults
    trainer = SentenceTransformerTrainer(model=model, args=arguments, train_dataset=dataset, loss=loss)
    trainer.create_optimizer_and_scheduler(num_training_steps=repeats + 1)
    features = next(iter(trainer.get_train_dataloader()))
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train(); we call its step directly

    def st_step():
        model.train()
        trainer.training_step(model, features)
        trainer.optimizer.step()
        trainer.optimizer.zero_grad()

    for step in (st_step, *consert_steps.values()):  # warm-up
        step()
    times = _median_times({"sentence-transformers step": st_step, **consert_steps}, repeats)
    return {"times": times, "batch_size": batch_size}


def peak_rss_of_evaluation(data_dir: str) -> float:
    """Peak RSS (GB) of a fresh process that runs the 7-set evaluation of the stand-in (``dtype auto``)."""
    code = (
        "import resource, sys; from consert.cli import main; "
        f"main(['evaluate', {STAND_IN_MODEL!r}, '--pooling', 'mean', '--data', {data_dir!r}]); "
        "print('RSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    line = next(line for line in result.stderr.splitlines() if line.startswith("RSS_KB"))
    return int(line.split()[1]) / 1024**2


def bench_bootstrap(data: SentEvalData, repeats: int) -> dict[str, float]:
    """Seconds the bootstrap intervals (1,000 resamples, every set and aggregate) add to scoring one
    model, and seconds of that model's whole evaluation (encoding + scoring, dtype auto)."""
    from consert.encode.encoder import SentenceEncoder
    from consert.evaluate.bootstrap import DEFAULT_RESAMPLES
    from consert.evaluate.protocol import evaluate_vectors, evaluation_sentences

    encoder = SentenceEncoder.load(STAND_IN_MODEL, device="cpu")
    sentences = evaluation_sentences(data)
    vectors: dict[str, np.ndarray] = {}

    def evaluate():
        vectors.update(zip(sentences, encoder.encode(sentences, "mean", progress=False), strict=True))
        evaluate_vectors(data, vectors, resamples=0)

    times = _median_times(
        {
            "evaluation": evaluate,
            "scoring": lambda: evaluate_vectors(data, vectors, resamples=0),
            "scoring + bootstrap": lambda: evaluate_vectors(data, vectors, resamples=DEFAULT_RESAMPLES),
        },
        repeats,
    )
    medians = {name: statistics.median(values) for name, values in times.items()}
    bootstrap = max(medians["scoring + bootstrap"] - medians["scoring"], 0.0)
    return {"evaluation_s": medians["evaluation"], "bootstrap_s": bootstrap, "resamples": DEFAULT_RESAMPLES}


def run(data: SentEvalData, repeats: int = 3) -> dict[str, object]:
    """Run every CPU benchmark and print a report as it goes; return the raw numbers."""
    from consert.encode.encoder import SentenceEncoder
    from consert.encode.precision import training_precision

    hardware = hardware_summary("cpu")
    encoder = SentenceEncoder.load(STAND_IN_MODEL, device="cpu")
    inference = encoder.precision
    training = training_precision("auto", "cpu", encoder.model)
    report: dict[str, object] = {
        "hardware": hardware,
        "inference_choice": inference.describe(),
        "training_choice": training.describe(),
        "repeats": repeats,
    }
    print(f"CPU: {hardware}", flush=True)
    print(f"auto, inference: {inference.describe()}", flush=True)
    print(f"auto, training: {training.describe()}", flush=True)
    print(f"{repeats} alternating repeats; medians in seconds; ratios are sentence-transformers / harness", flush=True)

    evaluation = report["evaluation"] = bench_evaluation(data, repeats)
    med = {k: statistics.median(v) for k, v in evaluation["times"].items()}
    spearman = evaluation["spearman"]
    print(f"evaluation, 7 STS test sets: {REFERENCE} (PyTorch fp32) {med[REFERENCE]:.1f}s")
    for label in (k for k in med if k != REFERENCE):
        worst = max(abs(spearman[label][k] - spearman[REFERENCE][k]) for k in spearman[REFERENCE])
        picked = " [chosen by auto]" if label == f"harness {inference.dtype} ({inference.engine})" else ""
        print(
            f"  {label}: {med[label]:.1f}s, speed-up {med[REFERENCE] / med[label]:.2f}x, "
            f"max |Spearman - PyTorch fp32| = {worst:.3f}{picked}"
        )

    boot = report["bootstrap"] = bench_bootstrap(data, repeats)
    print(
        f"bootstrap intervals ({boot['resamples']} resamples, 7 sets, all/mean/wmean, Avg): "
        f"{boot['bootstrap_s']:.2f}s = {100 * boot['bootstrap_s'] / boot['evaluation_s']:.1f}% of the "
        f"{boot['evaluation_s']:.1f}s evaluation (dtype auto) it adds to",
        flush=True,
    )

    report["peak_rss_gb"] = peak_rss_of_evaluation(str(data.root))
    print(f"peak RSS of the 7-set evaluation (dtype auto, own process): {report['peak_rss_gb']:.2f} GB", flush=True)

    training = report["training"] = bench_training_step(data, repeats)
    med = {k: statistics.median(v) for k, v in training["times"].items()}
    reference_step = med["sentence-transformers step"]
    print(
        f"training step, batch {training['batch_size']}, two views: sentence-transformers (fp32, its defaults) "
        f"{reference_step:.2f}s"
    )
    for label in (k for k in med if k.startswith("consert")):
        picked = " [chosen by auto]" if label.endswith(training.dtype) else ""
        print(f"  {label}: {med[label]:.2f}s, speed-up {reference_step / med[label]:.2f}x{picked}")
    print(f"this process's peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2:.2f} GB")
    return report
