"""No number printed with exit 0 stands on a missing part (issue 75): a vector that is not finite, or a set whose
Spearman is not, stops the evaluation in one line naming the run, the set and the count; every aggregate over a part
that is NaN is NaN (a set's mean over subsets, the Avg, a table's mean, SD and interval over seeds); a dev score that
is not finite stops training; a seed is averaged once. Fixtures built here; expected values by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from consert.cli import main
from consert.data.senteval import load_senteval
from consert.encode.cache import VectorCache
from consert.encode.models import STAND_IN_MODEL
from consert.evaluate.protocol import NonFiniteScores, aggregate, evaluate_vectors, evaluation_sentences
from consert.paper.tables import seed_interval, summarize


def test_a_vector_cache_whose_first_vectors_are_nan_stops_the_evaluation_in_one_line(tiny_tree, tmp_path, encoder,
                                                                                       capsys):  # fmt: skip
    """What an fp16 run that diverged writes: its first 5 vectors NaN. At 03ef47f the evaluation exited 0 with an
    Avg of the six other sets (pandas' mean skips NaN). Now: exit 2, one line, the run, STS12 and the count; no
    result file."""
    data = load_senteval(tiny_tree)
    cache = VectorCache.build(encoder, data.unlabeled_texts(), ["mean"], data.fingerprint, progress=False)
    cache.vectors["mean"][:5] = np.nan
    cache.save(tmp_path / "cache.npz")
    output = tmp_path / "scores.csv"
    argv = ["evaluate", STAND_IN_MODEL, "--pooling", "mean", "--data", str(tiny_tree), "--dtype", "fp32",
            "--engine", "torch", "--vectors", str(tmp_path / "cache.npz"), "--output", str(output)]  # fmt: skip
    assert main(argv) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]  # after the progress bars, one line
    evaluated = len(data.sets["STS12"].eval_sentences())
    assert error.startswith("consert evaluate: error: ")
    assert f"{STAND_IN_MODEL} (mean): STS12: 5 of {evaluated:,} sentence vectors are not finite" in error
    assert not output.exists()


def test_an_infinite_vector_in_one_tasks_own_vectors_names_that_task(tiny_tree):
    """Methods fitted per task (BERT-flow, whitening) give each task its own vectors: the fault names the task whose
    vectors are not finite, and counts only its evaluated sentences."""
    data = load_senteval(tiny_tree)
    sentences = evaluation_sentences(data)
    rng = np.random.default_rng(0)
    vectors = {name: dict(zip(sentences, rng.normal(size=(len(sentences), 8)), strict=True)) for name in data.sets}
    bad = data.sets["SICK-R"].eval_sentences()[:2]
    vectors["SICK-R"] = {**vectors["SICK-R"], **{s: np.full(8, np.inf) for s in bad}}
    from consert.evaluate.protocol import evaluate_task_vectors

    with pytest.raises(NonFiniteScores, match=r"^flow: SICK-R: 2 of \d+ sentence vectors are not finite"):
        evaluate_task_vectors(data, vectors, resamples=0, with_diagnostics=False, run="flow")


def test_a_collapsed_embedding_is_not_scored(tiny_tree):
    """Every sentence the same vector: every cosine 1, a Spearman that is not defined. At 03ef47f: NaN rows, and an
    Avg of nothing reported as NaN only by luck; now one line naming the set and the pairs."""
    data = load_senteval(tiny_tree)
    sentences = evaluation_sentences(data)
    same = dict(zip(sentences, np.ones((len(sentences), 4)), strict=True))
    pairs = sum(len(p) for p in data.sets["STS12"].eval_groups.values())
    with pytest.warns(Warning):  # scipy's ConstantInputWarning
        with pytest.raises(NonFiniteScores, match=rf"^run: STS12: .*all {pairs} pairs have the same cosine"):
            evaluate_vectors(data, same, resamples=0, with_diagnostics=False, run="run")


def test_a_sets_mean_over_subsets_is_nan_where_a_subset_is():
    """SentEval's mean and wmean over subsets, by hand: subsets of Spearman 100 and NaN (constant gold) average to
    NaN, never to 100; the merged Spearman is that of all pairs."""
    rising = (np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0]))
    flat = (np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0]))
    with pytest.warns(Warning):
        scores = aggregate({"a": rising, "b": flat})
    assert scores["subset:a"] == pytest.approx(100.0) and math.isnan(scores["subset:b"])
    assert math.isnan(scores["mean"]) and math.isnan(scores["wmean"]) and math.isfinite(scores["all"])


def _evaluation(scores: dict[str, float]) -> pd.DataFrame:
    """An evaluation frame's dataset rows (subset "all") with the given Spearman, as the protocol writes them."""
    return pd.DataFrame({"dataset": list(scores), "subset": "all", "spearman": list(scores.values())})


SETS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R", "Avg")


def test_a_tables_mean_sd_and_interval_over_seeds_are_nan_where_a_seed_is():
    """Three seeds of one row, the second's STS12 NaN: its STS12 mean, SD and seed interval are NaN (at 03ef47f the
    mean of the two others, 70.5); the sets every seed has keep theirs: STS13 mean 61, SD 1 (60, 61, 62)."""
    values = [{**dict.fromkeys(SETS, 50.0), "STS12": 70.0 + i, "STS13": 60.0 + i} for i in range(3)]
    values[1]["STS12"] = np.nan
    entries = [
        ({"method": "ConSERT-base", "seed": seed}, _evaluation(v)) for seed, v in zip((1, 2, 3), values, strict=True)
    ]
    row = summarize(entries).iloc[0]
    assert math.isnan(row.STS12) and math.isnan(row.STS12_std)
    assert math.isnan(row.STS12_seed_ci_low) and math.isnan(row.STS12_seed_ci_high)
    assert row.STS13 == pytest.approx(61.0) and row.STS13_std == pytest.approx(1.0)
    assert (row.n_seeds, row.seeds) == (3, "1;2;3")
    assert all(math.isnan(v) for v in seed_interval(pd.Series([1.0, np.nan, 3.0])))
    low, high = seed_interval(pd.Series([60.0, 61.0, 62.0]))
    assert (low, high) == pytest.approx((61 - 4.3027 / math.sqrt(3), 61 + 4.3027 / math.sqrt(3)), abs=1e-3)  # t(2)


def test_one_seed_given_twice_to_a_table_is_refused():
    """At 03ef47f `seeds: [1, 1]` planned one run and averaged it twice: `n_seeds 2`, `seeds 1;1`, SD 0."""
    evaluation = _evaluation(dict.fromkeys(SETS, 50.0))
    entries = [({"method": "ConSERT-base", "seed": 1}, evaluation), ({"method": "ConSERT-base", "seed": 1}, evaluation)]
    with pytest.raises(ValueError, match="^method ConSERT-base: seed 1 is given twice; expected each seed once$"):
        summarize(entries)
    other = [({"method": "ConSERT-base", "seed": 1}, evaluation), ({"method": "ConSERT-large", "seed": 1}, evaluation)]
    assert summarize(other).n_seeds.tolist() == [1, 1]


def test_a_dev_score_that_is_not_finite_stops_training_without_choosing_a_state():
    """NaN > best is False: at 03ef47f a NaN dev score was never chosen, silently, or left no state at all."""
    import torch

    from consert.train.loop import LoopSettings, TrainingFault, _DevSelection

    model = torch.nn.Linear(2, 2)
    settings = LoopSettings(lr=1e-5, batch_size=2, epochs=1, max_steps=None, warmup_ratio=0.1, weight_decay=0.0,
                            adam_eps=1e-6, max_grad_norm=1.0, eval_every=10, patience=None, eval_at_start=False,
                            seed=1, dtype="fp32")  # fmt: skip
    selection = _DevSelection(model, settings, [], 0.0)
    selection.record(10, 70.0, 1)
    with pytest.raises(TrainingFault, match=r"^step 20: the dev Spearman is nan \(not finite"):
        selection.record(20, float("nan"), 1)
