"""Your models as rows of the paper's tables: the paired difference from a ConSERT row, checked against a hand
computation on a tiny generated set (explicit resamples of the pairs, scipy's Spearman)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from scipy.stats import spearmanr

from consert.data.senteval import DATASETS, load_senteval
from consert.evaluate.bootstrap import BOOTSTRAP_SEED, resample_counts, set_seed
from consert.evaluate.protocol import evaluate_vectors, evaluation_sentences
from consert.io import write_csv
from consert.paper.yours import paired_difference, paired_rows
from consert.planner.load import load_workflow_config
from consert.planner.paths import consert_eval, your_eval
from consert.planner.plan import RunSpec
from tests.conftest import ROOT
from tests.fixtures import write_senteval_tree

RESAMPLES = 300


def test_the_paired_difference_subtracts_the_seeds_mean_resample_by_resample():
    """By hand: yours 10 - mean(8, 9) = 1.5; resample by resample, yours (5, 1, 4, 2) - the seeds' mean of (3, 0, 2, 1)
    and (1, 2, 0, 3) = (3, 0, 3, 0), whose 2.5th and 97.5th percentiles are 0 and 3. Sorting each side before
    subtracting (unpaired) gives (1, 1, 2, 2): 1 and 2."""
    yours = np.array([5.0, 1.0, 4.0, 2.0])
    seeds = [np.array([3.0, 0.0, 2.0, 1.0]), np.array([1.0, 2.0, 0.0, 3.0])]
    assert paired_difference(10.0, yours, [8.0, 9.0], seeds) == pytest.approx((1.5, 0.0, 3.0))
    with pytest.raises(ValueError, match="not the same resamples"):
        paired_difference(10.0, yours, [8.0], [np.arange(5.0)])


def _hand_avg_replicates(data, vectors: dict[str, np.ndarray]) -> np.ndarray:
    """Each resample's Avg of the 7 sets' merged Spearman, by hand: the pairs drawn as the protocol draws them
    (stratified by subset, seeded by the set's name), repeated explicitly, cosines and scipy's Spearman."""
    per_set = []
    for name in DATASETS:
        groups = data.sets[name].eval_groups
        pairs = [pair for subset in groups.values() for pair in subset]
        one, two = (np.stack([vectors[getattr(p, side)] for p in pairs]) for side in ("sent1", "sent2"))
        cosine = (one * two).sum(1) / np.linalg.norm(one, axis=1) / np.linalg.norm(two, axis=1)
        gold = np.array([p.score for p in pairs])
        counts = resample_counts([len(s) for s in groups.values()], RESAMPLES, set_seed(BOOTSTRAP_SEED, name))
        drawn = [np.repeat(np.arange(len(pairs)), row) for row in counts]
        per_set.append([spearmanr(cosine[i], gold[i]).statistic * 100 for i in drawn])
    return np.mean(per_set, axis=0)


def test_a_row_of_yours_is_paired_with_each_seed_of_the_consert_row_on_the_same_pairs(tmp_path, monkeypatch):
    """The test config's Table 2 ConSERT row (seeds 1 and 2) and a model of yours, each random vectors evaluated on a
    generated set as the protocol evaluates them: comparison.csv's paired row holds yours - the seeds' mean and the
    percentile interval of the hand-computed resampled Avg differences; its own row, yours' Avg and interval."""
    data = load_senteval(write_senteval_tree(tmp_path / "senteval", pairs_per_file=12) / "downstream")
    sentences = evaluation_sentences(data)
    rng = np.random.default_rng(7)
    vectors = {key: dict(zip(sentences, rng.normal(size=(len(sentences), 8)), strict=True)) for key in (0, 1, 2)}
    monkeypatch.chdir(tmp_path)
    config = load_workflow_config({**yaml.safe_load((ROOT / "config" / "test.yaml").read_text()), "data_dir": "."})
    assert [m.name for m in config.yours] == ["minilm-own"] and config.seeds == [1, 2]
    runs = [RunSpec("base", seed=seed).run_id for seed in (1, 2)]
    paths = [your_eval("minilm-own"), *(consert_eval(run) for run in runs)]
    frames = [evaluate_vectors(data, vectors[key], resamples=RESAMPLES, with_diagnostics=False) for key in (0, 1, 2)]
    for path, frame in zip(paths, frames, strict=True):
        write_csv(frame.assign(pooling="mean", setting="test", data_sha256=data.fingerprint), path)
    rows = paired_rows(config)
    own, paired = rows.iloc[0], rows.iloc[1]
    avg = [float(f.loc[f.dataset == "Avg", "spearman"].iloc[0]) for f in frames]
    assert own.reproduced == pytest.approx(avg[0], abs=1e-4) and own.status == "yours" and own.verdict == ""
    assert paired.against == "ConSERT-base" and paired.n_seeds == 2 and len(rows) == 2
    assert paired.delta == pytest.approx(avg[0] - (avg[1] + avg[2]) / 2, abs=2e-4)  # the CSVs' 4 decimals
    hand = [_hand_avg_replicates(data, vectors[key]) for key in (0, 1, 2)]
    difference = hand[0] - (hand[1] + hand[2]) / 2
    low, high = np.percentile(difference[np.isfinite(difference)], [2.5, 97.5])
    assert (paired.diff_low, paired.diff_high) == pytest.approx((low, high), abs=1e-9)
    write_csv(frames[2].assign(pooling="mean", setting="test", data_sha256="other files"), paths[2])
    with pytest.raises(ValueError, match="data_sha256 .* against other files; a paired difference needs the same"):
        paired_rows(config)  # a seed evaluated on other STS files is no pair of yours
