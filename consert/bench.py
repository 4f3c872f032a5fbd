"""Benchmarks against sentence-transformers, measured back to back in one process.

``consert bench`` runs, alternating and repeated, (1) the 7-set STS evaluation of the stand-in:
this harness's fast path (bf16, every distinct sentence once) against sentence-transformers'
``EmbeddingSimilarityEvaluator`` on the same model, data, max length and threads; and (2) one
ConSERT training step (batch 96, two views, backward and AdamW step) against a
``SentenceTransformerTrainer`` step (default settings) with the equivalent in-batch contrastive
loss (``MultipleNegativesRankingLoss`` on (text, text) pairs). It prints medians, the ratios and the
peak RSS of a separate evaluation process. Machines are noisy: compare ratios from one run only.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np
import torch

from .data import SentEvalData, load_senteval
from .models import STAND_IN_MODEL, resolve_model


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


def bench_evaluation(data: SentEvalData, repeats: int, batch_size: int = 256) -> dict[str, object]:
    """Harness (bf16 and fp32) vs sentence-transformers' evaluator; Spearman of each.

    Both sides start from a loaded model: the timings are encoding plus scoring.
    """
    from sentence_transformers import SentenceTransformer

    from .encode import SentenceEncoder
    from .evaluate import evaluate_embedder

    path = str(resolve_model(STAND_IN_MODEL).path)
    reference = SentenceTransformer(path, device="cpu")
    reference.max_seq_length = 64
    evaluators = _st_evaluators(data)  # its defaults: batch size 16
    results: dict[str, dict[str, float]] = {}

    def run_reference():
        results["sentence-transformers"] = {
            name: float(next(v for k, v in evaluator(reference).items() if k.endswith("spearman_cosine"))) * 100
            for name, evaluator in evaluators.items()
        }

    encoders = {d: SentenceEncoder.load(STAND_IN_MODEL, dtype=d, batch_size=batch_size) for d in ("bf16", "fp32")}

    def run_harness(dtype: str):
        def run():
            frame = evaluate_embedder(data, lambda sentences: encoders[dtype].encode(sentences, "mean", progress=False))
            rows = frame[(frame.subset == "all") & (frame.dataset != "Avg")]
            results[f"harness {dtype}"] = dict(zip(rows.dataset, rows.spearman, strict=True))

        return run

    times = _median_times(
        {
            "sentence-transformers": run_reference,
            "harness bf16": run_harness("bf16"),
            "harness fp32": run_harness("fp32"),
        },
        repeats,
    )
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

    from .config import TrainConfig
    from .train import _Stage, set_seed

    texts = data.unlabeled_texts()
    rng = np.random.default_rng(0)
    batch = [texts[i] for i in rng.choice(len(texts), batch_size, replace=False)]

    config = TrainConfig(batch_size=batch_size, dtype="bf16", device="cpu")
    set_seed(1)
    stage = _Stage(config, data, supervised=False)
    optimizer = torch.optim.AdamW(stage.model.parameters(), lr=1e-6)

    def consert_step():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = stage.unsupervised_loss(batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

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

    consert_step(), st_step()  # warm-up
    times = _median_times({"sentence-transformers step": st_step, "consert step": consert_step}, repeats)
    return {"times": times, "batch_size": batch_size}


def peak_rss_of_evaluation(data_dir: str) -> float:
    """Peak RSS (GB) of a fresh process that runs the 7-set evaluation of the stand-in (fast path)."""
    code = (
        "import resource, sys; from consert.cli import main; "
        f"main(['evaluate', {STAND_IN_MODEL!r}, '--pooling', 'mean', '--dtype', 'bf16', '--data', {data_dir!r}]); "
        "print('RSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    line = next(line for line in result.stderr.splitlines() if line.startswith("RSS_KB"))
    return int(line.split()[1]) / 1024**2


def run(data_dir: str | None, repeats: int = 3) -> dict[str, object]:
    """Run every benchmark and print a report as it goes; return the raw numbers."""
    data = load_senteval(data_dir)
    report: dict[str, object] = {"threads": torch.get_num_threads(), "repeats": repeats}
    print(f"torch threads: {report['threads']}; {repeats} alternating repeats; medians in seconds", flush=True)

    evaluation = report["evaluation"] = bench_evaluation(data, repeats)
    med = {k: statistics.median(v) for k, v in evaluation["times"].items()}
    spearman = evaluation["spearman"]
    worst = max(abs(spearman["harness bf16"][k] - spearman["harness fp32"][k]) for k in spearman["harness fp32"])
    versus_st = max(
        abs(spearman["harness fp32"][k] - spearman["sentence-transformers"][k]) for k in spearman["harness fp32"]
    )
    fast, plain = (med["sentence-transformers"] / med[f"harness {d}"] for d in ("bf16", "fp32"))
    print(
        f"evaluation, 7 STS test sets: sentence-transformers {med['sentence-transformers']:.1f}s | harness fp32 "
        f"{med['harness fp32']:.1f}s | harness bf16 {med['harness bf16']:.1f}s"
    )
    print(f"  speed-up of the fast path over sentence-transformers: {fast:.2f}x (fp32 path: {plain:.2f}x)")
    print(f"  max |Spearman bf16 - fp32| = {worst:.3f}; max |harness fp32 - sentence-transformers| = {versus_st:.3f}")

    report["peak_rss_gb"] = peak_rss_of_evaluation(str(data.root))
    print(f"peak RSS of the 7-set evaluation (bf16, separate process): {report['peak_rss_gb']:.2f} GB", flush=True)

    training = report["training"] = bench_training_step(data, repeats)
    med = {k: statistics.median(v) for k, v in training["times"].items()}
    print(
        f"training step, batch {training['batch_size']}, two views: sentence-transformers "
        f"{med['sentence-transformers step']:.2f}s | consert {med['consert step']:.2f}s | speed-up "
        f"{med['sentence-transformers step'] / med['consert step']:.2f}x"
    )
    print(f"this process's peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2:.2f} GB")
    return report


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1] if len(sys.argv) > 1 else None), indent=1, default=str))
