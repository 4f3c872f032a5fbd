"""NLI training data: SNLI and MultiNLI in their official jsonl releases, and the SICK-E stand-in.

Offline there is no SNLI/MNLI; SICK's training split carries entailment labels (SICK-E, 4,500
pairs) and stands in for them. Results trained on it are labelled ``nli = sick-e (offline
stand-in)``, never passed off as the paper's SNLI+MNLI (about 1M pairs).
"""

from __future__ import annotations

import json
from pathlib import Path

from consert.data.senteval import NLI_LABELS, DataFormatError, NliPair, SentEvalData, normalize_sentence

#: Label index used by the classifier head.
LABEL_INDEX = {label: index for index, label in enumerate(NLI_LABELS)}
NLI_SOURCES = ("sick-e", "snli+mnli")
SICK_E_LABEL = "sick-e (offline stand-in for SNLI+MNLI)"


def load_nli_jsonl(path: str | Path) -> list[NliPair]:
    """Read an SNLI/MNLI jsonl file (``sentence1``, ``sentence2``, ``gold_label``).

    Pairs without annotator consensus (``gold_label == '-'``) are skipped, as in SBERT's training.
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, "file not found (download SNLI/MultiNLI from their official releases)")
    pairs = []
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise DataFormatError(path, "not UTF-8 text; expected SNLI's and MultiNLI's jsonl", number) from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                label = record["gold_label"]
                premise, hypothesis = record["sentence1"], record["sentence2"]
            except (json.JSONDecodeError, KeyError, TypeError):
                raise DataFormatError(
                    path, "expected a JSON object with sentence1, sentence2 and gold_label", number
                ) from None
            for key, value in (("gold_label", label), ("sentence1", premise), ("sentence2", hypothesis)):
                if not isinstance(value, str):
                    raise DataFormatError(path, f"{key}: expected a string, found {value!r}", number)
            if label == "-":
                continue
            if label.upper() not in LABEL_INDEX:
                raise DataFormatError(path, f"expected gold_label in {NLI_LABELS} or '-', found {label!r}", number)
            pairs.append(NliPair(normalize_sentence(premise), normalize_sentence(hypothesis), label.upper()))
    if not pairs:
        raise DataFormatError(path, "no labelled pairs in file")
    return pairs


def load_nli(source: str, data: SentEvalData | None = None, files: list[str] | None = None) -> list[NliPair]:
    """NLI pairs for supervised training: ``sick-e`` (from the SentEval data) or ``snli+mnli`` files."""
    if source == "sick-e":
        if data is None or "SICK-R" not in data.sets:
            raise ValueError("nli source sick-e needs the SentEval data with SICK loaded")
        return list(data.sets["SICK-R"].nli["train"])
    if source == "snli+mnli":
        if not files:
            raise ValueError(
                "nli source snli+mnli needs nli_files: paths of snli_1.0_train.jsonl, multinli_1.0_train.jsonl"
            )
        return [pair for file in files for pair in load_nli_jsonl(file)]
    raise ValueError(f"unknown nli source {source!r}; choose from {NLI_SOURCES}")
