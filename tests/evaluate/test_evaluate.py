"""The Spearman aggregation (all / mean / wmean) on toy cases with known values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from consert.evaluate.protocol import aggregate, cosine_rows, evaluate_vectors, spearman_x100


def test_spearman_perfect_and_reversed():
    assert spearman_x100([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(100.0)
    assert spearman_x100([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-100.0)


def test_all_mean_wmean_differ_as_defined():
    # subset A: 4 pairs perfectly ranked; subset B: 2 pairs reversed. Predictions of B are offset so
    # the merged ranking is not simply the concatenation.
    a = (np.array([0.1, 0.2, 0.3, 0.4]), np.array([1.0, 2.0, 3.0, 4.0]))
    b = (np.array([0.9, 0.8]), np.array([0.5, 4.5]))
    scores = aggregate({"A": a, "B": b})
    assert scores["subset:A"] == pytest.approx(100.0)
    assert scores["subset:B"] == pytest.approx(-100.0)
    assert scores["mean"] == pytest.approx(0.0)
    assert scores["wmean"] == pytest.approx((4 * 100 - 2 * 100) / 6)
    # merged: preds 0.1 .2 .3 .4 .9 .8 ranks 1 2 3 4 6 5 ; gold 1 2 3 4 .5 4.5 ranks 2 3 4 5 1 6
    d2 = sum((p - g) ** 2 for p, g in zip([1, 2, 3, 4, 6, 5], [2, 3, 4, 5, 1, 6], strict=True))
    assert scores["all"] == pytest.approx((1 - 6 * d2 / (6 * 35)) * 100)


def test_cosine_rows_handles_zero_vectors():
    sims = cosine_rows(np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[1.0, 1.0], [1.0, 0.0]]))
    assert sims == pytest.approx([np.sqrt(0.5), 0.0])


def test_frame_has_dataset_subset_and_avg_rows(tiny_tree):
    from consert.data.senteval import load_senteval

    data = load_senteval(tiny_tree)
    rng = np.random.default_rng(0)
    vectors = {}
    for sts in data.sets.values():
        for pairs in sts.groups.values():
            for pair in pairs:
                vectors.setdefault(pair.sent1, rng.normal(size=4))
                vectors.setdefault(pair.sent2, rng.normal(size=4))
    frame = evaluate_vectors(data, vectors)
    per_set = frame[frame.subset == "all"]
    assert list(per_set.dataset) == ["STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R", "Avg"]
    avg = per_set.set_index("dataset").spearman
    assert avg["Avg"] == pytest.approx(avg.drop("Avg").mean())
    assert len(frame[frame.dataset == "STS14"]) == 1 + 6
    assert frame[(frame.dataset == "STS15") & (frame.subset == "all")].n_pairs.item() == 5 * 3


def _toy_task_files(root) -> None:
    """A toy STS set of 12 scored pairs beside the SentEval tree: ``TOY/pairs.tsv``, sentence, sentence, score."""
    folder = root / "TOY"
    folder.mkdir()
    rows = [f"the toy sentence {i}\ta toy sentence {i % 5}\t{(i * 7) % 6 * 0.8:.1f}" for i in range(12)]
    (folder / "pairs.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def _load_toy(reader, root):
    from consert.data.senteval import ScoredPair, StsData

    path = root / "TOY" / "pairs.tsv"
    pairs = [ScoredPair(a, b, float(score)) for a, b, score in (line.split("\t") for line in reader.lines(path))]
    texts = [t for p in pairs for t in (p.sent1, p.sent2)]
    return StsData("TOY", {"test": pairs}, eval_subsets=("test",), group_texts={"test": texts})


def test_a_declared_toy_task_is_evaluated_and_leaves_the_papers_avg_and_corpus_alone(tiny_tree, monkeypatch):
    """A set declared once (one StsTask record) is loaded and scored like the others; not being one of the paper's
    seven, it adds neither a column of the paper's Avg nor texts to the training corpus. The same set declared
    ``in_paper`` (after import, as here) does both: the Avg and the corpus follow TASKS' declarations when called."""
    from consert.data import senteval
    from consert.evaluate.protocol import evaluate_embedder

    _toy_task_files(senteval.resolve_data_dir(tiny_tree))

    def embed(sentences):  # letter counts: a deterministic embedder that ranks pairs differently per set
        return np.array([[s.count(c) + 0.1 for c in "abcdefghijklmnopqrstuvwxyz0123456789"] for s in sentences])

    def evaluated(in_paper: bool):
        """The seven sets and the seven with TOY (declared ``in_paper``): the data and their per-set rows."""
        monkeypatch.setitem(senteval.TASKS, "TOY", senteval.StsTask("TOY", _load_toy, in_paper=in_paper))
        paper = senteval.load_senteval(tiny_tree, allow_unverified=True)
        with_toy = senteval.load_senteval(tiny_tree, datasets=(*senteval.DATASETS, "TOY"), allow_unverified=True)
        without, frame = (
            evaluate_embedder(data, embed, resamples=0).query("subset == 'all'").set_index("dataset")
            for data in (paper, with_toy)
        )
        return paper, with_toy, without, frame

    seven = list(senteval.DATASETS)
    paper, with_toy, without, frame = evaluated(in_paper=False)
    assert "TOY" in frame.index and frame.loc["TOY", "n_pairs"] == 12 and "TOY" not in without.index
    pd.testing.assert_series_equal(frame.loc["Avg"], without.loc["Avg"])
    assert frame.loc["Avg", "spearman"] == pytest.approx(without.loc[seven, "spearman"].mean())
    assert with_toy.unlabeled_texts() == paper.unlabeled_texts() and "TOY" not in senteval.DATASETS
    seven_avg = frame.loc["Avg", "spearman"]

    paper, with_toy, _, frame = evaluated(in_paper=True)
    assert frame.loc["Avg", "n_pairs"] == frame.loc[[*seven, "TOY"], "n_pairs"].sum()
    assert frame.loc["Avg", "spearman"] == pytest.approx(frame.loc[[*seven, "TOY"], "spearman"].mean())
    assert frame.loc["Avg", "spearman"] != pytest.approx(seven_avg)
    assert with_toy.unlabeled_texts() == paper.unlabeled_texts() + with_toy.sets["TOY"].texts
    assert len(with_toy.sets["TOY"].texts) == 24
