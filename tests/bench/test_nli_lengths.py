"""The cost table's NLI pairs have the stated lengths and proportions of SNLI and MultiNLI, and the trainer's own
reader takes them."""

from __future__ import annotations

import random

import pytest

from consert.bench.nli_lengths import NLI_LENGTHS, scaled_lengths, write_nli_files
from consert.data.nli import load_nli_jsonl


def test_scaled_lengths_keep_the_reference_shape_at_the_stated_mean():
    """References of 2 and 4 words (mean 3) scaled to a mean of 6: every count is 4 or 8, half each."""
    counts = scaled_lengths([2, 4], 6.0, 4000, random.Random(0))
    assert set(counts) == {4, 8}
    assert sum(counts) / len(counts) == pytest.approx(6.0, abs=0.15)
    assert min(scaled_lengths([1, 30], 0.5, 200, random.Random(1))) == 1  # never an empty text


def test_the_files_hold_each_corpus_in_its_proportion_at_its_stated_lengths(tmp_path):
    """20,000 pairs from texts of 5 to 15 words: SNLI's share 549,367 / 942,069 of them, premises and hypotheses
    averaging the stated means, read back by the trainer's SNLI/MultiNLI reader."""
    rng = random.Random(2)
    texts = [" ".join(f"w{rng.randrange(500)}" for _ in range(n)) for n in rng.choices(range(5, 16), k=3000)]
    paths = write_nli_files(tmp_path, texts, pairs=20_000, seed=3)
    assert [p.name for p in paths] == ["snli_length_matched.jsonl", "multinli_length_matched.jsonl"]
    total = sum(corpus.pairs for corpus in NLI_LENGTHS)
    for path, corpus in zip(paths, NLI_LENGTHS, strict=True):
        pairs = load_nli_jsonl(path)
        assert len(pairs) == round(20_000 * corpus.pairs / total)
        premises = sum(len(p.premise.split()) for p in pairs) / len(pairs)
        hypotheses = sum(len(p.hypothesis.split()) for p in pairs) / len(pairs)
        assert premises == pytest.approx(corpus.premise_words, abs=0.2), corpus.corpus
        assert hypotheses == pytest.approx(corpus.hypothesis_words, abs=0.2), corpus.corpus
        assert {p.label for p in pairs} == {"ENTAILMENT", "NEUTRAL", "CONTRADICTION"}
    assert [c.premise_words for c in NLI_LENGTHS] == [14.1, 22.3]  # SNLI's card; MultiNLI's Table 3 (as recalled)
