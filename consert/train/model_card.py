"""The model card (``README.md``) of an exported run: what it is, how it was trained, what it scores, how to
cite it. :mod:`consert.train.export` writes it from the training record, and again with the 7-set scores once
evaluated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from consert.data.senteval import DATASETS
from consert.train.modes import find_mode
from consert.train.objectives import OBJECTIVES

CARD = "README.md"
#: The line that marks a card as the harness's own (written at export): only such a card is rewritten by
#: ``consert evaluate`` (:func:`with_scores`); a card without it, an older export's included, is left alone.
CARD_MARKER = (
    "<!-- consert-model-card: written by the ConSERT harness; `consert evaluate FOLDER` updates its scores -->"
)
#: The heading of the card's results section.
SCORES_HEADING = "## Scores (Spearman x 100 of cosine similarity, STS test sets, all pairs of each set)"

CITATION = """@inproceedings{yan-etal-2021-consert,
    title = "{C}on{SERT}: A Contrastive Framework for Self-Supervised Sentence Representation Transfer",
    author = "Yan, Yuanmeng and Li, Rumei and Wang, Sirui and Zhang, Fuzheng and Wu, Wei and Xu, Weiran",
    booktitle = "Proceedings of ACL-IJCNLP 2021",
    year = "2021",
    pages = "5065--5075",
    doi = "10.18653/v1/2021.acl-long.393",
}"""


def _mode(record: dict[str, Any]) -> str:
    """What the run trained: its mode, or the method its export records (SG-OPT's)."""
    return record.get("mode") or record.get("method") or record.get("config", {}).get("mode", "unsup")


def _training_data(record: dict[str, Any]) -> str:
    config = record.get("config", {})
    mode = _mode(record)
    known = find_mode(mode)
    parts = [known.training_data if known else mode]
    if record.get("nli"):
        parts.append(f"NLI: {record['nli']}")
    objective = OBJECTIVES.get(config.get("objective", ""))  # none for SG-OPT, which trains on texts
    if objective is None or not objective.is_supervised:  # a two-stage run's record is its second stage's
        texts = config.get("train_texts", "sts")
        texts = "the unlabeled sentences of the 7 STS sets (no scores)" if texts == "sts" else texts
        few = f", the first {config['n_texts']} drawn with the run's seed" if config.get("n_texts") else ""
        parts.append(f"texts: {texts}{few}")
    return "; ".join(parts)


def _scores_table(scores: pd.DataFrame) -> list[str]:
    """The test Spearman x 100 of each set and the Avg, with the Avg's bootstrap interval where there is one."""
    rows = scores[scores.subset == "all"].set_index("dataset")
    names = [name for name in (*DATASETS, "Avg") if name in rows.index]
    lines = [
        "| " + " | ".join(names) + " |",
        "|" + "---|" * len(names),
        "| " + " | ".join(f"{rows.loc[name, 'spearman']:.2f}" for name in names) + " |",
    ]
    interval = rows.loc["Avg", ["spearman_ci_low", "spearman_ci_high"]] if "spearman_ci_low" in rows else None
    if interval is not None and interval.notna().all():
        low, high = interval.iloc[0], interval.iloc[1]
        lines += ["", f"Avg 95% bootstrap interval over the test pairs: [{low:.2f}, {high:.2f}]."]
    return lines


def run_name(record: dict[str, Any]) -> str:
    """The run's name: its export folder's, or the folder above it when the export is ``<run>/model``."""
    folder = Path(record.get("config", {}).get("output_dir", "model"))
    return (folder.parent.name if folder.name == "model" else folder.name) or "model"


def front_matter(record: dict[str, Any], scores: pd.DataFrame | None = None) -> str:
    """The Hub's metadata: library, pipeline, tags, the base model and, once evaluated, a ``model-index``
    with each STS set's test Spearman x 100 of cosine similarity."""
    meta: dict[str, Any] = {
        "library_name": "sentence-transformers",
        "pipeline_tag": "sentence-similarity",
        "tags": ["sentence-transformers", "sentence-similarity", "feature-extraction", "consert", _mode(record)],
        "language": ["en"],
    }
    if record.get("base_model"):
        meta["base_model"] = str(record["base_model"])
    if scores is not None:
        meta["model-index"] = model_index(record, scores)
    return _dump_front_matter(meta)


def _dump_front_matter(meta: dict[str, Any]) -> str:
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, width=1000, allow_unicode=True) + "---"


def model_index(record: dict[str, Any], scores: pd.DataFrame) -> list[dict[str, Any]]:
    """The Hub's ``model-index``: each STS set's test Spearman x 100 of cosine similarity, over all its pairs."""
    rows = scores[scores.subset == "all"].set_index("dataset")
    results = [
        {
            "task": {"type": "sentence-similarity", "name": "Semantic Textual Similarity"},
            "dataset": {"name": name, "type": f"senteval-{name.lower()}", "split": "test"},
            "metrics": [
                {
                    "type": "spearman_cosine",
                    "value": round(float(rows.loc[name, "spearman"]), 2),
                    "name": "Spearman x 100 (cosine, all pairs)",
                }
            ],  # fmt: skip
        }
        for name in DATASETS
        if name in rows.index
    ]
    return [{"name": run_name(record), "results": results}]


def is_harness_card(text: str) -> bool:
    """Whether a card is the harness's own: it holds :data:`CARD_MARKER` as a line."""
    return CARD_MARKER in text.splitlines()


def with_scores(text: str, record: dict[str, Any], scores: pd.DataFrame) -> str:
    """The card ``text`` with ``scores``' results in it and nothing else changed: its front matter's
    ``model-index`` (replaced in place, or added) and the body of its results section (the lines under
    :data:`SCORES_HEADING` up to the next heading), where it has one. Raise ValueError for a card without
    front matter, or whose front matter is no YAML mapping."""
    lines = text.split("\n")
    if lines[0].strip() != "---" or "---" not in (line.strip() for line in lines[1:]):
        raise ValueError("the card has no front matter (a block between --- lines at its top)")
    end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    try:
        meta = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as err:
        raise ValueError(f"the card's front matter is not YAML ({err.__class__.__name__})") from None
    if not isinstance(meta, dict):
        raise ValueError("the card's front matter is not a YAML mapping")
    meta["model-index"] = model_index(record, scores)
    body = lines[end + 1 :]
    if SCORES_HEADING in body:
        start = body.index(SCORES_HEADING) + 1
        stop = next((i for i in range(start, len(body)) if body[i].startswith("## ")), len(body))
        body = [*body[:start], "", *_scores_table(scores), "", *body[stop:]]
    return "\n".join([_dump_front_matter(meta), *body])


def model_card(record: dict[str, Any], scores: pd.DataFrame | None = None) -> str:
    """The card's Markdown for a training ``record`` (``consert_training.json``) and, when evaluated, its
    ``scores`` (the frame of :func:`consert.evaluate.protocol.evaluate_model`)."""
    config = record.get("config", {})
    mode = _mode(record)
    setting = record.get("setting", "")
    recipe = {
        key: config[key] for key in ("views", "temperature", "batch_size", "lr", "max_length", "seed") if key in config
    }
    dev = record.get("exported_dev_spearman")
    lines = [
        front_matter(record, scores),
        CARD_MARKER,
        f"# {run_name(record)} (ConSERT harness, mode {mode})",
        "",
        f"**Setting: {setting}.**" if setting else "",
        "",
        "Trained and exported by the ConSERT reproduction harness.",
        "",
        f"- Base model: `{record.get('base_model', '')}` (started from `{record.get('started_from', '')}`)",
        f"- Mode: `{mode}`; " + ", ".join(f"{key} {value}" for key, value in recipe.items()),
        f"- Training data: {_training_data(record)}",
        f"- Exported: step {record.get('exported_step')} of {record.get('steps_run')} "
        f"(STS-B dev Spearman {dev:.2f}, the {record.get('final_state')} state)"
        if isinstance(dev, int | float)
        else f"- Exported: step {record.get('exported_step')} of {record.get('steps_run')}",
        f"- Pooling: `{record.get('eval_pooling')}`, built into the saved modules: "
        "`SentenceTransformer(folder).encode` gives the evaluated vectors",
        f"- Hardware: {record.get('hardware', '')}; harness commit {record.get('harness_commit', '')}",
        "",
        SCORES_HEADING,
        "",
        *(_scores_table(scores) if scores is not None else ["Not evaluated yet: `consert evaluate FOLDER`."]),
        "",
        "## Usage",
        "",
        "```python",
        "from sentence_transformers import SentenceTransformer",
        "",
        'model = SentenceTransformer("path/to/this/folder")',
        'vectors = model.encode(["A man is playing a guitar.", "Someone plays an instrument."])',
        "```",
        "",
        "## Citation",
        "",
        "```bibtex",
        CITATION,
        "```",
        "",
    ]
    return "\n".join(lines)
