"""``python -m harness_bench references --device cuda``: the paper-scale trainer against its references, in one run.

Side by side, on the same GPU and the same random batches of STS texts (batch 96, max length 64, two
unsupervised views, the authors' optimiser settings):

* **the trainer** (:func:`consert.train.trainer.train`: pre-tokenized texts, batches padded to a multiple of
  16, the authors' AdamW without bias correction (torch's fused kernel on CUDA), the measured precision),
  eager, compiled, and packed as CUDA graphs, with its STS-B dev evaluations inside the loop (every 200
  steps within the epoch, timed separately);
* **a plain PyTorch loop** as one would write it: the tokenizer on every batch, padding to the longest,
  bf16 autocast, ``torch.optim.AdamW``, eager;
* **the compiled ceiling**: every batch padded to 64 tokens (static shapes), ``torch.compile`` of the
  whole step's forward and loss, fused ``torch.optim.AdamW``;
* **the 7-set evaluation** of the stand-in: the harness against sentence-transformers'
  ``EmbeddingSimilarityEvaluator`` (its defaults: fp32, batch 16), with the largest Spearman difference.

Without ``bert-base-uncased`` in the local Hugging Face cache, the paper-scale model is a randomly
initialised BERT-base (bert-base-uncased's configuration, the stand-in's uncased 30,522-token
vocabulary): the same arithmetic, for timing only.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path

import torch

from consert.bench.dag_cost import random_bert
from consert.bench.steady_rate import steady_rate
from consert.data.senteval import SentEvalData
from consert.encode.models import STAND_IN_MODEL, ModelNotAvailableError, resolve_model
from consert.train.loop import read_interval
from consert.train.losses import nt_xent

PAPER_BATCH, PAPER_LENGTH = 96, 64


def paper_shape_model(workdir: Path) -> tuple[str, str]:
    """``(path or hub id, label)`` of a BERT-base to time: bert-base-uncased if it is here, else a random one."""
    try:
        return str(resolve_model("bert-base-uncased").path), "bert-base-uncased"
    except ModelNotAvailableError:
        pass
    path = random_bert(workdir / "bert-base-random", {})  # BertConfig's defaults: bert-base-uncased's shape
    return path, "randomly initialised BERT-base (bert-base-uncased's shape, timing only)"


def _synchronize(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def bench_trainer(model: str, data: SentEvalData, steps: int, mode: str, workdir: Path, device: str = "cuda") -> dict:
    """The harness's trainer at paper scale for ``steps`` steps (dev set: all 1,500 STS-B dev pairs);
    ``mode``: ``eager``, ``compiled`` (torch.compile, padded) or ``graphs`` (CUDA graphs, packed)."""
    from consert.train.config import TrainConfig
    from consert.train.export import TRAINING_RECORD
    from consert.train.trainer import train

    config = TrainConfig(
        model=model,
        mode="unsup",
        device=device,
        max_steps=steps,
        compile="on" if mode == "compiled" else "off",
        cuda_graphs="on" if mode == "graphs" else "off",
        output_dir=str(workdir / f"trainer-{mode}"),
    )
    started = time.perf_counter()
    result = train(config, data, progress=False)
    rate = steady_rate(result.log, skip=min(200, steps // 3), window=read_interval(device))
    record = json.loads((Path(result.output_dir) / TRAINING_RECORD).read_text(encoding="utf-8"))
    return {
        "precision": record.get("precision", ""),
        "steps_per_s": rate.steps_per_s,
        "dev_evaluation_s": rate.evaluation_s,
        "dev_evaluations": rate.evaluations,
        "wall_s": time.perf_counter() - started,
        "mode": mode,
        "graphs_captured": record.get("cuda_graphs", 0),
    }


def bench_plain_loop(model_dir: str, texts: list[str], steps: int, ceiling: bool, device: str = "cuda") -> dict:
    """A plain loop (eager, the tokenizer per batch, padding to the longest) or the compiled ceiling
    (static 64-token shapes tokenized and on the GPU beforehand, the step's forward and loss compiled,
    fused AdamW); steps per second. Both clip gradients at norm 1.0, as the authors."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir, attn_implementation="sdpa").to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-7, eps=1e-6, weight_decay=0.01, fused=ceiling or None)
    padding = "max_length" if ceiling else True

    def loss_of(input_ids, mask):
        with torch.autocast(torch.device(device).type, dtype=torch.bfloat16):
            hidden = model(input_ids=input_ids, attention_mask=mask).last_hidden_state
        weights = mask.unsqueeze(-1).float()
        pooled = (hidden.float() * weights).sum(1) / weights.sum(1)
        return nt_xent(pooled[:PAPER_BATCH], pooled[PAPER_BATCH:], 0.1)

    forward = torch.compile(loss_of) if ceiling else loss_of
    rng = random.Random(0)

    def tokenized():
        batch = rng.sample(texts, PAPER_BATCH)
        encoded = tokenizer(
            batch + batch, padding=padding, truncation=True, max_length=PAPER_LENGTH, return_tensors="pt"
        )
        return encoded["input_ids"], encoded["attention_mask"]

    # the ceiling's batches are tokenized and on the GPU beforehand; the plain loop tokenizes each step
    ready = [tuple(t.to(device) for t in tokenized()) for _ in range(64)] if ceiling else []

    def step(index: int):
        input_ids, mask = ready[index % len(ready)] if ceiling else (t.to(device) for t in tokenized())
        loss = forward(input_ids, mask)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    for index in range(20):  # warm-up and compilation
        step(index)
    _synchronize(device)
    started = time.perf_counter()
    for index in range(steps):
        step(index)
    _synchronize(device)
    return {"steps_per_s": steps / (time.perf_counter() - started)}


def bench_evaluation(data: SentEvalData, device: str = "cuda") -> dict:
    """The harness's 7-set evaluation of the stand-in (dtype auto) against sentence-transformers' evaluator."""
    from sentence_transformers import SentenceTransformer

    from consert.encode.encoder import SentenceEncoder
    from consert.evaluate.protocol import evaluate_embedder
    from harness_bench.references_cpu import REFERENCE, _st_evaluators

    reference = SentenceTransformer(str(resolve_model(STAND_IN_MODEL).path), device=device)
    reference.max_seq_length = PAPER_LENGTH
    evaluators = _st_evaluators(data)
    encoder = SentenceEncoder.load(STAND_IN_MODEL, device=device)
    results, times = {}, {}
    for _ in range(2):  # the second round is timed (the first warms both up)
        started = time.perf_counter()
        results[REFERENCE] = {
            name: float(next(v for k, v in evaluator(reference).items() if k.endswith("spearman_cosine"))) * 100
            for name, evaluator in evaluators.items()
        }
        times[REFERENCE] = time.perf_counter() - started
        started = time.perf_counter()
        frame = evaluate_embedder(data, lambda s: encoder.encode(s, "mean", progress=False), resamples=0)
        rows = frame[(frame.subset == "all") & (frame.dataset != "Avg")]
        results["harness"] = dict(zip(rows.dataset, rows.spearman, strict=True))
        times["harness"] = time.perf_counter() - started
    worst = max(abs(results["harness"][k] - results[REFERENCE][k]) for k in results[REFERENCE])
    return {"seconds": times, "max_spearman_difference": worst, "precision": encoder.precision.describe()}


def run(data: SentEvalData, steps: int = 600, device: str = "cuda", model: str | None = None) -> dict[str, object]:
    """Every benchmark above, printed as it goes; returns the raw numbers (``device`` and ``model`` other
    than CUDA and BERT-base only to try the code on a small machine)."""
    from consert.hardware import hardware_summary
    from harness_bench.references_cpu import REFERENCE

    report: dict[str, object] = {"hardware": hardware_summary(device), "torch": torch.__version__}
    print(f"{device}: {report['hardware']}; torch {torch.__version__}", flush=True)
    workdir = Path(tempfile.mkdtemp(prefix="consert-bench-cuda-"))
    model, label = (model, model) if model else paper_shape_model(workdir)
    report["model"] = label
    print(f"paper scale: {label}; batch {PAPER_BATCH}, max length {PAPER_LENGTH}, two views", flush=True)
    texts = data.unlabeled_texts()
    evaluation = report["evaluation"] = bench_evaluation(data, device)
    seconds = evaluation["seconds"]
    print(
        f"7-set evaluation of the stand-in: {REFERENCE} (fp32, batch 16) {seconds[REFERENCE]:.1f}s, "
        f"harness {seconds['harness']:.1f}s ({evaluation['precision']}), "
        f"max |Spearman difference| {evaluation['max_spearman_difference']:.3f}",
        flush=True,
    )
    for name, function in (  # the compiled ones last: their compilation takes the longest
        ("plain PyTorch loop (eager)", lambda: bench_plain_loop(model, texts, steps // 2, False, device)),
        ("trainer, eager", lambda: bench_trainer(model, data, steps, "eager", workdir, device)),
        ("trainer, packed + CUDA graphs", lambda: bench_trainer(model, data, steps, "graphs", workdir, device)),
        ("compiled ceiling (static 64 tokens)", lambda: bench_plain_loop(model, texts, steps // 2, True, device)),
        ("trainer, compiled", lambda: bench_trainer(model, data, steps, "compiled", workdir, device)),
    ):
        result = report[name] = function()
        extra = ""
        if "dev_evaluation_s" in result:
            extra = (
                f"; {result['dev_evaluations']} dev evaluations of 1,500 pairs, {result['dev_evaluation_s']:.2f}s "
                f"each; whole run {result['wall_s']:.0f}s; {result['precision']}"
            )
            if result["graphs_captured"]:
                extra += f"; {result['graphs_captured']} graphs captured"
        print(f"  {name}: {result['steps_per_s']:.1f} steps/s{extra}", flush=True)
    return report
