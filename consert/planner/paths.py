"""Where each job's file goes: the one set of path conventions that the workflow's rules, the planner's run
configs and the artifacts' builders share, so the DAG's inputs and the builders' reads cannot drift apart."""

from __future__ import annotations

from pathlib import Path

from consert import row_labels
from consert.row_labels import YOURS

RESULTS = Path("results")
EVALS = RESULTS / "evals"
CURVE_DIR = RESULTS / "curves"
RUNS = Path("runs")
BENCHMARKS = Path("benchmarks")


def hub_slug(name: str) -> str:
    """A hub id as a file name: ``google-bert/bert-base-uncased`` -> ``google-bert--bert-base-uncased``."""
    return name.replace("/", "--")


def hub_record(name: str) -> str:
    """What the job that fetches the hub model ``name`` into the hub's cache writes: its snapshot folder."""
    return f"data/hub/{hub_slug(name)}.json"


def consert_eval(run_id: str) -> str:
    """Evaluation CSV of one ConSERT run."""
    return str(EVALS / "consert" / f"{run_id}.csv")


def run_curve(run_id: str) -> str:
    """Training curve of one training run (any trainable mode, SG-OPT's too): :mod:`consert.train.curves`."""
    return str(CURVE_DIR / f"{run_id}.csv")


def benchmark(evaluation: str) -> str:
    """Snakemake benchmark file of the job that writes ``evaluation`` (an evaluation CSV under
    ``results/evals``): the same path under ``benchmarks/``, as ``.tsv``."""
    return str(BENCHMARKS / Path(evaluation).relative_to(EVALS).with_suffix(".tsv"))


def run_model(run_id: str) -> str:
    """Exported model folder of one training run."""
    return str(RUNS / run_id / "model")


def train_yaml(run_id: str) -> str:
    """The resolved config one training run trains with (:mod:`consert.planner.run_configs`)."""
    return str(RUNS / run_id / "train.yaml")


def baseline_eval(size: str, name: str) -> str:
    """Evaluation CSV of a baseline of one model size (``poolings``, ``whitening-kall``, ``flow``, ...)."""
    return str(EVALS / "baselines" / size / f"{name}.csv")


def pooling_slug(pooling: str) -> str:
    """A pooling name fit for a file name: ``mean:1,-1`` -> ``mean_1_-1``."""
    return pooling.replace(":", "_").replace(",", "_")


def whitening_eval(size: str, pooling: str, k: int | None) -> str:
    """Evaluation CSV of BERT-whitening (fitted per task) on one pooling, keeping k dimensions (all: None)."""
    return baseline_eval(size, f"whitening-{pooling_slug(pooling)}-k{k or 'all'}")


def vector_cache(size: str) -> str:
    """Corpus vector cache of one model size (``consert encode``)."""
    return str(RESULTS / "cache" / f"{size}.npz")


def run_vectors(run_id: str) -> str:
    """Vector cache of one training run's evaluation (``consert train --save-vectors``)."""
    return str(RUNS / run_id / "vectors.npz")


def glove_eval() -> str:
    return str(EVALS / "baselines" / "glove.csv")


def your_eval(name: str) -> str:
    """The evaluation CSV of a model of yours (the config's ``yours:``)."""
    return str(EVALS / YOURS / f"{name}.csv")


def your_label(name: str) -> str:
    """A model of yours as the tables name its row."""
    return row_labels.yours(name)


def sgopt_run(size: str, seed: int) -> str:
    return f"sgopt-{size}-seed{seed}"


def sgopt_eval(size: str, seed: int) -> str:
    return str(EVALS / "sgopt" / f"{sgopt_run(size, seed)}.csv")


def flow_nli_eval(size: str, seed: int) -> str:
    """BERT-flow fitted on top of the SBERT-NLI re-implementation (Table 3's flow + NLI row)."""
    return baseline_eval(size, f"flow-nli-seed{seed}")


def topk_eval(size: str, which: str) -> str:
    return str(EVALS / "topk" / f"{size}-{which}.csv")


def predictions_eval(size: str, which: str) -> str:
    return str(EVALS / "predictions" / f"{size}-{which}.csv")
