"""The STS evaluation protocol: cosine similarity against gold, Spearman x 100.

For every STS year the paper merges all subsets and computes Spearman once (``all``). SentEval also
reports the plain mean over subsets (``mean``) and the mean weighted by subset size (``wmean``);
BERT-flow and BERT-whitening report ``wmean``. STS-B and SICK-R use their test split, for which all
three coincide. The seven-set average ``Avg`` is taken over the per-set values of the paper's seven sets.

No aggregate skips a missing part: a set's mean over its subsets and the Avg over the sets are NaN where a part is.
The protocol refuses to score what cannot be scored (:class:`NonFiniteScores`): a vector that is not finite (what a
diverged run encodes), or a set whose correlation is not (every pair with the same cosine: a collapsed embedding).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.stats import pearsonr, spearmanr

from consert.data.senteval import TASKS, ScoredPair, SentEvalData, paper_tasks
from consert.evaluate.bootstrap import BOOTSTRAP_SEED, DEFAULT_RESAMPLES, Replicates, bootstrap_sets, interval
from consert.evaluate.diagnostics import DIAGNOSTIC_COLUMNS, diagnostics

if TYPE_CHECKING:
    from consert.encode.cache import VectorCache
    from consert.encode.encoder import SentenceEncoder

#: SentEval's aggregates over a year's subsets, in the order of their result columns.
AGGREGATE_KEYS = ("all", "mean", "wmean")
#: Columns of the per-dataset/per-subset result frame (provenance columns are appended later); the
#: interval columns are empty on subset rows and when no bootstrap was asked for.
RESULT_COLUMNS = (
    "dataset",
    "subset",
    "n_pairs",
    "spearman",
    "spearman_mean",
    "spearman_wmean",
    *(
        f"spearman{'' if key == 'all' else '_' + key}_ci_{end}"
        for key in ("all", "mean", "wmean")
        for end in ("low", "high")
    ),
    "pearson",  # of all pairs, as mteb reports beside the Spearman (its cosine_pearson); dataset rows only
)
EmbedFn = Callable[[Sequence[str]], np.ndarray]


class NonFiniteScores(ValueError):
    """Vectors or a correlation that are not finite: nothing is scored or written. The message names the run (where
    the caller gave one), the set and how many vectors were not finite, in one line."""


def check_finite_vectors(data: SentEvalData, vectors: dict[str, dict[str, np.ndarray]], run: str = "") -> None:
    """Raise :class:`NonFiniteScores` when a set's evaluated sentences have a vector holding a NaN or an infinity,
    counting them (a diverged run, an fp16 overflow, writes such vectors; their pairs' cosines are NaN)."""
    not_finite: dict[int, set[str]] = {}  # by mapping: the sets usually share one
    for name, sts in data.sets.items():
        given = vectors[name]
        if id(given) not in not_finite:
            sentences = list(given)
            finite = np.isfinite(np.stack([given[s] for s in sentences])).all(axis=1) if sentences else []
            not_finite[id(given)] = {sentences[i] for i in np.flatnonzero(~np.asarray(finite, dtype=bool))}
        if not not_finite[id(given)]:
            continue
        evaluated = sts.eval_sentences()
        bad = sum(s in not_finite[id(given)] for s in evaluated)
        if bad:
            raise NonFiniteScores(
                f"{_of(run)}{name}: {bad:,} of {len(evaluated):,} sentence vectors are not finite (NaN or infinite); "
                "not scored (a diverged run? train it again, or evaluate in fp32)"
            )


def check_finite_scores(scores: dict[str, float], groups: dict[str, tuple[np.ndarray, np.ndarray]], dataset: str,
                        run: str = "") -> None:  # fmt: skip
    """Raise :class:`NonFiniteScores` when the merged Spearman of a set (``scores["all"]``), or that of a subset with
    gold pairs, is not finite: fewer than two pairs, or predictions or gold scores that do not vary."""
    merged = tuple(np.concatenate(parts) for parts in zip(*groups.values(), strict=True))
    parts = {"all": merged} | {f"subset:{name}": pair for name, pair in groups.items() if len(pair[1])}
    for key, (predicted, gold) in parts.items():
        if np.isfinite(scores[key]):
            continue
        where = dataset if key == "all" else f"{dataset} ({key.removeprefix('subset:')})"
        if len(gold) < 2:
            why = f"{len(gold)} gold pair"
        elif np.ptp(predicted) == 0:
            why = f"all {len(gold):,} pairs have the same cosine (a collapsed embedding)"
        else:
            why = f"the gold scores of its {len(gold):,} pairs do not vary"
        raise NonFiniteScores(f"{_of(run)}{where}: Spearman is not finite: {why}; not scored")


def _of(run: str) -> str:
    return f"{run}: " if run else ""


def spearman_x100(predicted: Sequence[float], gold: Sequence[float]) -> float:
    """Spearman rank correlation times 100 (scipy's, ties averaged)."""
    return float(spearmanr(predicted, gold).statistic) * 100.0


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of two N x d arrays (a zero vector gives similarity 0)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.einsum("ij,ij->i", a, b) / np.where(norms > 0, norms, 1.0)


def aggregate(groups: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, float]:
    """SentEval's three aggregations over subsets given ``{subset: (predicted, gold)}``.

    ``all``: Spearman of all subsets concatenated; ``mean``: mean of per-subset Spearman;
    ``wmean``: per-subset Spearman weighted by the number of pairs. A subset's NaN makes ``mean`` and ``wmean`` NaN.
    """
    per_subset = {name: spearman_x100(pred, gold) for name, (pred, gold) in groups.items()}
    sizes = np.array([len(gold) for _, gold in groups.values()], dtype=float)
    values = np.array(list(per_subset.values()))
    merged_pred = np.concatenate([pred for pred, _ in groups.values()])
    merged_gold = np.concatenate([gold for _, gold in groups.values()])
    return {
        "all": spearman_x100(merged_pred, merged_gold),
        "mean": float(values.mean()),
        "wmean": float((values * sizes).sum() / sizes.sum()),
        **{f"subset:{name}": value for name, value in per_subset.items()},
    }


def evaluation_sentences(data: SentEvalData) -> list[str]:
    """Every sentence the protocol needs, each once, in a fixed order."""
    return list(dict.fromkeys(s for sts in data.sets.values() for s in sts.eval_sentences()))


def score_pairs(pairs: Sequence[ScoredPair], vectors: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Cosine predictions and gold scores for ``pairs`` given ``{sentence: vector}``."""
    left = np.stack([vectors[p.sent1] for p in pairs])
    right = np.stack([vectors[p.sent2] for p in pairs])
    return cosine_rows(left, right), np.array([p.score for p in pairs])


def encode_and_score(encoder, pairs: Sequence[ScoredPair], pooling: str) -> tuple[np.ndarray, np.ndarray]:
    """Cosine predictions and gold scores of ``pairs``, encoding each distinct sentence once."""
    sentences = list(dict.fromkeys(s for p in pairs for s in (p.sent1, p.sent2)))
    vectors = dict(zip(sentences, encoder.encode(sentences, pooling, progress=False), strict=True))
    return score_pairs(pairs, vectors)


def evaluate_vectors(
    data: SentEvalData,
    vectors: dict[str, np.ndarray],
    resamples: int = DEFAULT_RESAMPLES,
    with_diagnostics: bool = True,
    run: str = "",
) -> pd.DataFrame:
    """Result frame for sentence vectors given as ``{sentence: vector}`` covering every eval sentence.

    One row per dataset (``subset == 'all'``), one per subset, and a final ``Avg`` row; see
    :data:`RESULT_COLUMNS` and, for the intervals and diagnostics, :func:`evaluate_task_vectors`.
    """
    return evaluate_task_vectors(
        data, {name: vectors for name in data.sets}, resamples, with_diagnostics=with_diagnostics, run=run
    )


def evaluate_task_vectors(
    data: SentEvalData,
    vectors: dict[str, dict[str, np.ndarray]],
    resamples: int = DEFAULT_RESAMPLES,
    bootstrap_seed: int = BOOTSTRAP_SEED,
    with_diagnostics: bool = True,
    run: str = "",
) -> pd.DataFrame:
    """As :func:`evaluate_vectors`, with each dataset's own ``{sentence: vector}`` (``vectors[dataset]``).

    For methods fitted once per task (BERT-flow, BERT-whitening), where one sentence has a different
    vector in each task. With ``resamples`` > 0 every dataset row and the Avg row get percentile
    bootstrap intervals of each aggregate (``spearman_ci_low``/``_high``, ``spearman_mean_ci_*``,
    ``spearman_wmean_ci_*``; :mod:`consert.evaluate.bootstrap`); the resamples depend only on
    ``bootstrap_seed`` and the pairs, so every model evaluated on the same data gets the same ones
    (paired). The replicates are kept in ``frame.attrs["replicates"]`` (``{dataset: {aggregate: B}}``).
    Every dataset row also gets the representation diagnostics of its test sentences
    (:data:`~consert.evaluate.diagnostics.DIAGNOSTIC_COLUMNS`); the Avg row, the mean over the sets of
    anisotropy, alignment and uniformity. ``with_diagnostics=False`` leaves them out (their all-pairs
    uniformity costs seconds a set: Figure 4's curve, 51 evaluations of one model, does without).
    A vector or a set's correlation that is not finite raises :class:`NonFiniteScores`, naming ``run`` (the model or
    run evaluated), the set and how many vectors; every aggregate is NaN where a part of it is.
    """
    names = [n for n in TASKS if n in data.sets]
    check_finite_vectors(data, vectors, run)
    scored = {
        name: {sub: score_pairs(pairs, vectors[name]) for sub, pairs in data.sets[name].eval_groups.items()}
        for name in names
    }
    replicates = Replicates(bootstrap_sets(scored, resamples, bootstrap_seed) if resamples else {})
    rows = []
    for name in names:
        groups = scored[name]
        scores = aggregate(groups)
        check_finite_scores(scores, groups, name, run)
        n_total = sum(len(gold) for _, gold in groups.values())
        bounds: list[float] = []
        if resamples:
            bounds = [b for key in AGGREGATE_KEYS for b in interval(replicates[name][key])]
        merged = [np.concatenate(parts) for parts in zip(*groups.values(), strict=True)]
        pearson = float(pearsonr(*merged).statistic) * 100.0
        rows.append((name, "all", n_total, scores["all"], scores["mean"], scores["wmean"], *_or_nan(bounds), pearson))
        for sub, (_, gold) in groups.items():
            rows.append((name, sub, len(gold), scores[f"subset:{sub}"], *[np.nan] * (len(RESULT_COLUMNS) - 4)))
    frame = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    paper = paper_tasks()  # the paper's Avg: its seven sets, as TASKS declares them now
    per_set = frame[(frame.subset == "all") & frame.dataset.isin(paper)]
    if len(per_set) == len(paper):
        # skipna=False: an Avg over a set that is NaN is NaN, never the mean of the others
        average = ["Avg", "all", int(per_set.n_pairs.sum()), *per_set[list(RESULT_COLUMNS[3:6])].mean(skipna=False)]
        pearson = float(per_set.pearson.mean(skipna=False))
        bounds = []
        if resamples:
            replicates["Avg"] = {key: np.mean([replicates[n][key] for n in paper], axis=0) for key in AGGREGATE_KEYS}
            bounds = [b for key in AGGREGATE_KEYS for b in interval(replicates["Avg"][key])]
        frame = pd.concat([frame, pd.DataFrame([[*average, *_or_nan(bounds), pearson]], columns=list(RESULT_COLUMNS))])
        frame = frame.reset_index(drop=True)
    if with_diagnostics:
        frame = _with_diagnostics(frame, data, vectors, scored)
    frame.attrs["replicates"] = replicates
    return frame


def _with_diagnostics(
    frame: pd.DataFrame,
    data: SentEvalData,
    vectors: dict[str, dict[str, np.ndarray]],
    scored: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]],
) -> pd.DataFrame:
    """``frame`` with :data:`DIAGNOSTIC_COLUMNS` on its dataset rows (and the Avg row's means)."""
    values = {}
    for name, groups in scored.items():
        pairs = [(p.sent1, p.sent2, p.score) for sub in groups for p in data.sets[name].eval_groups[sub]]
        cosine = np.concatenate([predicted for predicted, _ in groups.values()])
        values[name] = diagnostics(vectors[name], pairs, cosine)
    table = pd.DataFrame.from_dict(values, orient="index", columns=list(DIAGNOSTIC_COLUMNS))
    if "Avg" in set(frame.dataset):
        paper = table.loc[list(paper_tasks()), ["anisotropy", "alignment", "uniformity"]]
        table.loc["Avg", ["anisotropy", "alignment", "uniformity"]] = paper.mean(skipna=False)
    dataset_rows = frame.subset == "all"
    for column in DIAGNOSTIC_COLUMNS:
        frame[column] = np.where(dataset_rows, frame.dataset.map(table[column]), np.nan)
    return frame


def _or_nan(bounds: list[float]) -> list[float]:
    return bounds or [np.nan] * 2 * len(AGGREGATE_KEYS)


def evaluate_embedder(
    data: SentEvalData, embed: EmbedFn, resamples: int = DEFAULT_RESAMPLES, run: str = ""
) -> pd.DataFrame:
    """Run the protocol with ``embed`` (list of sentences -> N x d array), each sentence encoded once (``run``: what
    a fault names)."""
    sentences = evaluation_sentences(data)
    matrix = embed(sentences)
    return evaluate_vectors(data, dict(zip(sentences, matrix, strict=True)), resamples, run=run)


def pair_predictions(data: SentEvalData, vectors: dict[str, np.ndarray], dataset: str) -> pd.DataFrame:
    """Per-pair gold score and cosine of one dataset's evaluated pairs (e.g. Figure 1's scatter)."""
    rows = []
    for subset, pairs in data.sets[dataset].eval_groups.items():
        cosine, gold = score_pairs(pairs, vectors)
        rows.append(
            pd.DataFrame(
                {
                    "dataset": dataset,
                    "subset": subset,
                    "sent1": [p.sent1 for p in pairs],
                    "sent2": [p.sent2 for p in pairs],
                    "gold": gold,
                    "cosine": cosine,
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def summary_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The per-dataset rows as a small table: dataset, pairs, all / mean / wmean Spearman."""
    table = frame[frame.subset == "all"][["dataset", "n_pairs", "spearman", "spearman_mean", "spearman_wmean"]]
    return table.rename(columns={"spearman": "all", "spearman_mean": "mean", "spearman_wmean": "wmean"})


def evaluate_model(
    model: str,
    poolings: Sequence[str] = ("mean:-2,-1",),
    data: SentEvalData | None = None,
    max_length: int = 64,
    dtype: str = "auto",
    device: str | None = None,
    batch_size: int | None = None,
    seed: int | None = None,
    progress: bool = True,
    vectors: str | VectorCache | None = None,
    encoder: SentenceEncoder | None = None,
    engine: str = "auto",
) -> pd.DataFrame:
    """Evaluate a Hugging Face encoder on the seven STS sets with each pooling, encoding once.

    With ``vectors`` (a :class:`consert.encode.cache.VectorCache`, or its file, made from the same weights,
    data, max length and dtype) nothing is encoded: the vectors are read from the cache. Returns the tidy
    result frame (see :func:`evaluate_vectors`) with provenance columns, one block per pooling.
    An already loaded ``encoder`` of ``model`` (same max length and dtype) saves loading it again.
    """
    from consert.data.senteval import load_senteval
    from consert.encode.cache import VectorCache, cache_key
    from consert.encode.encoder import SentenceEncoder
    from consert.encode.models import hidden_states_of, resolve_model
    from consert.encode.pooling import Pooling
    from consert.provenance import provenance

    # what can be refused before the model loads: a vector cache missing or unreadable, a layer the model lacks
    cache = vectors
    if isinstance(vectors, (str, os.PathLike)):
        cache = VectorCache.load(vectors, poolings=poolings)
    states = hidden_states_of(resolve_model(model).path) if encoder is None else None
    for pooling in poolings if states is not None else ():
        Pooling.parse(pooling).check_layers(states)
    data = data if data is not None else load_senteval()
    if encoder is None:
        encoder = SentenceEncoder.load(
            model, max_length=max_length, dtype=dtype, device=device, batch_size=batch_size, engine=engine
        )
    sentences = evaluation_sentences(data)
    if cache is not None:
        cache.check_key(cache_key(encoder, data.fingerprint), str(model if cache is vectors else vectors))
        matrices = {str(Pooling.parse(p)): cache.lookup(sentences, p) for p in poolings}
    else:
        matrices = encoder.encode_poolings(sentences, poolings, progress=progress)
    frames = []
    for pooling, matrix in matrices.items():
        frame = evaluate_vectors(data, dict(zip(sentences, matrix, strict=True)), run=f"{model} ({pooling})")
        columns = provenance(
            model=str(model),
            base_model=encoder.resolved.base_model,
            identity=encoder.resolved.identity,
            model_sha256=encoder.resolved.weights_sha256,
            setting=encoder.resolved.setting,
            pooling=pooling,
            max_length=max_length,
            dtype=encoder.dtype,
            engine=encoder.engine,
            precision=encoder.precision.describe(),
            device=encoder.device,
            data_dir=data.root,
            data_sha256=data.fingerprint,
            data_verified=data.verified,
            seed=seed,
        )
        frames.append(frame.assign(**columns))
    result = pd.concat(frames, ignore_index=True)
    by_pooling = Replicates({f.pooling.iloc[0]: f.attrs.get("replicates", {}) for f in frames})
    result.attrs = {"replicates_by_pooling": by_pooling}
    return result


def evaluate_sentence_transformer(
    model: str, data: SentEvalData, device: str | None = None, batch_size: int | None = None, progress: bool = True
) -> pd.DataFrame:
    """Evaluate ``model`` as ``SentenceTransformer(model).encode`` gives its vectors (its own pooling, Dense
    and Normalize modules), in fp32, with the provenance columns of :func:`evaluate_model`."""
    from sentence_transformers import SentenceTransformer

    from consert.encode.encoder import default_batch_size
    from consert.encode.models import resolve_model
    from consert.encode.pooling import MODEL_POOLING
    from consert.provenance import provenance

    resolved = resolve_model(model)
    encoder = SentenceTransformer(str(resolved.path), device=device)
    device = str(encoder.device)
    batch_size = batch_size or default_batch_size(device)
    frame = evaluate_embedder(
        data,
        lambda sentences: encoder.encode(sentences, batch_size=batch_size, show_progress_bar=progress),
        run=str(model),
    )
    modules = " + ".join(type(module).__name__ for module in encoder)
    columns = provenance(
        model=str(model),
        base_model=resolved.base_model,
        identity=resolved.identity,
        model_sha256=resolved.weights_sha256,
        setting=resolved.setting,
        pooling=f"{MODEL_POOLING} ({modules})",
        max_length=encoder.max_seq_length,
        dtype="fp32",
        engine="sentence-transformers",
        precision="fp32: the model's own sentence-transformers modules",
        device=device,
        data_dir=data.root,
        data_sha256=data.fingerprint,
        data_verified=data.verified,
    )
    return frame.assign(**columns)
