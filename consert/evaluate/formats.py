"""The result frame in the forms users paste or feed to other tools: SimCSE's one-line summary, JSON, and
mteb's per-task result files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from consert.data.senteval import TASKS
from consert.io import write_text

#: The formats ``consert evaluate --format`` writes.
FORMATS = ("table", "csv", "json", "mteb")

#: mteb's name of each split the harness evaluates.
MTEB_SPLITS = {"test": "test", "dev": "validation"}


def set_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per evaluated set and the Avg (all pairs of a set pooled, as SimCSE and mteb score them)."""
    return frame[frame.subset == "all"].set_index("dataset")


def with_pooling_names(frame: pd.DataFrame, names: dict[str, str]) -> pd.DataFrame:
    """``frame`` with each pooling named as ``names`` maps it (the harness's spelling to the one the user typed:
    ``{"mean:1,-1": "avg_first_last"}``), in the ``pooling`` column and in the keys of its bootstrap replicates
    (written beside a CSV, looked up by the CSV's pooling). Poolings not in ``names`` keep their name."""
    renamed = frame.assign(pooling=frame.pooling.map(lambda pooling: names.get(pooling, pooling)))
    renamed.attrs = dict(frame.attrs)
    if "replicates_by_pooling" in frame.attrs:
        by_pooling = frame.attrs["replicates_by_pooling"]
        renamed.attrs["replicates_by_pooling"] = type(by_pooling)(
            {names.get(pooling, pooling): replicates for pooling, replicates in by_pooling.items()}
        )
    return renamed


def summary_line(frame: pd.DataFrame) -> str:
    """SimCSE's summary as one line to paste: each set's Spearman x 100 and the Avg, with the test-pair
    bootstrap 95% interval where the frame has one."""
    rows = set_rows(frame)
    names = [n for n in TASKS if n in rows.index]
    parts = []
    for name in [*names, "Avg"] if "Avg" in rows.index else names:
        row = rows.loc[name]
        interval = ""
        if pd.notna(row.get("spearman_ci_low")) and pd.notna(row.get("spearman_ci_high")):
            interval = f" [{row.spearman_ci_low:.2f}, {row.spearman_ci_high:.2f}]"
        parts.append(f"{'Avg.' if name == 'Avg' else name} {row.spearman:.2f}{interval}")
    if "Avg" not in rows.index and len(names) > 1:  # a subset of the sets: their plain mean, as SimCSE prints it
        parts.append(f"Avg. of these {len(names)} {rows.loc[names, 'spearman'].mean():.2f}")
    return " | ".join(parts)


def to_json(frame: pd.DataFrame) -> str:
    """The result frame as JSON: one object per pooling with its provenance and its sets' scores."""
    blocks = []
    for pooling, block in frame.groupby("pooling", sort=False):
        rows = set_rows(block)
        scores = {
            name: {
                key: (None if pd.isna(row[key]) else float(row[key]))
                for key in ("spearman", "spearman_ci_low", "spearman_ci_high", "n_pairs")
                if key in row
            }
            for name, row in rows.iterrows()
        }
        provenance = {
            key: block[key].iloc[0]
            for key in ("model", "base_model", "setting", "max_length", "dtype", "engine", "device", "data_sha256")
            if key in block
        }
        blocks.append({"pooling": pooling, **provenance, "scores": scores, "summary": summary_line(block)})
    return json.dumps(blocks, indent=2, default=str)


#: The mteb release whose result-file layout :func:`write_mteb` follows (its ``ResultCache`` loads them: tests).
MTEB_FORMAT_VERSION = "2.26.24"
#: The revision folder mteb uses for a model without a known revision.
MTEB_NO_REVISION = "no_revision_available"


def mteb_cache_dir() -> Path:
    """mteb's own cache folder, where ``mteb.ResultCache()`` looks by default: ``$MTEB_CACHE``, else
    ``~/.cache/mteb`` (as ``ResultCache.default_cache_path``; mteb itself need not be installed to write there)."""
    return Path(os.environ.get("MTEB_CACHE") or Path.home() / ".cache" / "mteb")


def write_mteb(frame: pd.DataFrame, cache: str | Path, split: str = "test", seconds: float | None = None) -> list[Path]:
    """mteb's result files for the sets whose data is mteb's (``StsTask.mteb``), in the mteb cache folder
    ``cache`` (:func:`mteb_cache_dir` by default in the CLI) laid out as ``ResultCache(cache)`` reads them:
    ``cache/results/<model>/no_revision_available/<Task>.json`` and ``model_meta.json`` for the model's own
    modules (``--pooling model``, as mteb encodes); for a pooling of the harness, under
    ``experiments/<pooling>__<max length>/`` of that folder with the pooling and max length as the
    experiment's keys, so that runs of one model with different poolings sit side by side. ``main_score`` is
    the cosine Spearman over all pairs in [0, 1], beside the Pearson; ``evaluation_time`` is ``seconds``
    (the whole evaluation). One pooling: mteb has one score per model and task."""
    poolings = frame.pooling.unique()
    if len(poolings) != 1:
        raise ValueError(f"mteb files hold one score per task: evaluate one pooling, not {', '.join(poolings)}")
    rows = set_rows(frame)
    model = str(frame.model.iloc[0]).rstrip("/")
    target = Path(cache) / "results" / model.replace("/", "__").replace(" ", "_") / MTEB_NO_REVISION
    experiment = None
    if not str(poolings[0]).startswith("model"):
        experiment = {"max_length": int(frame.max_length.iloc[0]), "pooling": str(poolings[0])}
        target = target / "experiments" / "__".join(f"{k}_{v}".replace(":", "_") for k, v in experiment.items())
    written = []
    for name, declared in TASKS.items():
        if declared.mteb is None or name not in rows.index or (split == "dev" and declared.dev_split is None):
            continue
        task, revision = declared.mteb
        spearman, pearson = (float(rows.loc[name, key]) / 100 for key in ("spearman", "pearson"))
        scores = {
            "cosine_spearman": spearman,
            "cosine_pearson": pearson,
            "spearman": spearman,
            "pearson": pearson,
            "main_score": spearman,
            "hf_subset": "default",
            "languages": ["eng-Latn"],
        }
        result = {
            "dataset_revision": revision,
            "task_name": task,
            "mteb_version": MTEB_FORMAT_VERSION,
            "scores": {MTEB_SPLITS[split]: [scores]},
            "evaluation_time": seconds,
            "kg_co2_emissions": None,
        }
        written.append(write_text(json.dumps(result, indent=2), target / f"{task}.json"))
    if written:
        written.append(
            write_text(json.dumps(_model_meta(frame, model, experiment), indent=2), target / "model_meta.json")
        )
    return written


def _model_meta(frame: pd.DataFrame, model: str, experiment: dict | None) -> dict:
    """mteb's ``model_meta.json`` of the evaluated model, as much of it as the evaluation knows."""
    return {
        "name": model,
        "revision": None,
        "release_date": None,
        "languages": ["eng-Latn"],
        "max_tokens": int(frame.max_length.iloc[0]),
        "framework": ["Sentence Transformers", "PyTorch"],
        "similarity_fn_name": "cosine",
        "use_instructions": False,
        "modalities": ["text"],
        "experiment_kwargs": experiment,
        "loader": None,
        "adapted_from": next((str(b) for b in frame.get("base_model", [])[:1] if str(b) != model), None),
    }
