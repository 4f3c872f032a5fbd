"""NLI pairs shaped as SNLI's and MultiNLI's, for timing the NLI job kinds where their files are missing.

A packed step's work follows its texts' lengths, so the cost table times the NLI kinds on pairs whose premises and
hypotheses have the lengths the corpora's papers and dataset cards state (SICK-E's pairs, the trainer's offline
stand-in, are shorter). The texts are the STS corpus's words, so BERT's tokenizer splits them as it splits real
English; each text's word count is a random STS text's, scaled so that the counts average the stated mean (the
STS texts' skew kept, since only means are stated). SNLI and MultiNLI pairs come in the proportion of their
labelled training pairs. :data:`NLI_LENGTHS` says where each mean comes from.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from consert.io import atomic_path


@dataclass(frozen=True)
class StatedLengths:
    """A corpus's labelled training pairs and its mean words per premise and per hypothesis, with their source."""

    corpus: str
    pairs: int
    premise_words: float
    hypothesis_words: float
    source: str


#: The lengths the cost table's NLI pairs are drawn with. SNLI's pairs: 550,152 less the 785 without a gold label.
NLI_LENGTHS = (
    StatedLengths(
        "SNLI",
        549_367,
        14.1,
        8.3,
        "mean token counts of the SNLI dataset card (huggingface stanfordnlp/snli), from Bowman et al. 2015",
    ),
    StatedLengths(
        "MultiNLI",
        392_702,
        22.3,
        8.3,
        "premises: 22.3 words, Williams et al. 2018, Table 3, as recalled (no copy of the paper is readable offline "
        "here: unverified); hypotheses: no length stated in the paper or the dataset card, SNLI's taken",
    ),
)


def scaled_lengths(reference: list[int], mean: float, count: int, rng: random.Random) -> list[int]:
    """``count`` word counts drawn from ``reference``'s, each scaled by ``mean`` over their mean and rounded
    (at least 1): the reference's shape at the stated mean."""
    factor = mean / (sum(reference) / len(reference))
    return [max(1, round(rng.choice(reference) * factor)) for _ in range(count)]


def write_nli_files(folder: Path, texts: list[str], pairs: int, seed: int = 0) -> list[Path]:
    """One jsonl file a corpus of :data:`NLI_LENGTHS` in ``folder`` (as the official releases lay them out:
    ``sentence1``, ``sentence2``, ``gold_label``), ``pairs`` pairs in all in the corpora's proportion, their words
    drawn from ``texts`` and their lengths by :func:`scaled_lengths` over ``texts``' word counts."""
    rng = random.Random(seed)
    words = [word for text in texts for word in text.split()]
    reference = [len(text.split()) for text in texts if text.split()]
    total = sum(corpus.pairs for corpus in NLI_LENGTHS)
    paths = []
    for corpus in NLI_LENGTHS:
        count = max(1, round(pairs * corpus.pairs / total))
        premises = scaled_lengths(reference, corpus.premise_words, count, rng)
        hypotheses = scaled_lengths(reference, corpus.hypothesis_words, count, rng)
        path = folder / f"{corpus.corpus.lower()}_length_matched.jsonl"
        with atomic_path(path) as temporary, open(temporary, "w", encoding="utf-8") as handle:
            for index, (premise, hypothesis) in enumerate(zip(premises, hypotheses, strict=True)):
                record = {
                    "sentence1": " ".join(rng.choices(words, k=premise)),
                    "sentence2": " ".join(rng.choices(words, k=hypothesis)),
                    "gold_label": ("entailment", "neutral", "contradiction")[index % 3],
                }
                handle.write(json.dumps(record) + "\n")
        paths.append(path)
    return paths


def lengths_note() -> str:
    """What the pairs' lengths are and where they come from, for the cost table's ``timed_as``."""
    return "; ".join(
        f"{c.corpus}-shaped pairs (premise {c.premise_words}, hypothesis {c.hypothesis_words} words: {c.source})"
        for c in NLI_LENGTHS
    )
