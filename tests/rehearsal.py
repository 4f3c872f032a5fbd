"""The paper's own config, rehearsed offline: what it reads that cannot be had here, made small.

``config/config.yaml`` names `bert-base-uncased` and `bert-large-uncased` (hub ids), SNLI and MultiNLI
jsonl files, SimCSE's wiki1m file and glove.840B.300d.txt. :func:`build` puts into a working folder:

* a private Hugging Face hub cache holding both hub ids as tiny randomly initialised BERTs of the paper's
  architecture family (base: 2 layers x 32, large: 4 layers x 48), with the stand-in's uncased WordPiece
  tokenizer; the harness finds them as it finds a user's cached models (``snapshot_download``, offline).
  Their config carries ``consert_rehearsal``, so every row trained or evaluated from them says "rehearsal";
* small SNLI/MultiNLI jsonl files (some ``-`` labels), a wiki1m-format text file and a GloVe
  840B-format file (300 values a line, one word with a space in it; a ``.rehearsal`` sidecar labels it);
* the real STS data (``data/senteval``, a link to the SentEval folder beside the checkout).

``python -m tests.rehearsal DIR`` builds the folder and prints the command that runs the rehearsal;
``tests/workflow/test_rehearsal.py`` (slow suite) runs it to its last job.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

#: A commit id for the cache's refs/main (any 40 hex digits: nothing is downloaded).
COMMIT = "0" * 40
SIZES = {
    "bert-base-uncased": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64},
    "bert-large-uncased": {
        "hidden_size": 48,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "intermediate_size": 96,
    },
}
LABELS = ("entailment", "neutral", "contradiction")


def hub_cache(root: Path) -> Path:
    """Write both hub ids as tiny random BERTs into a Hugging Face hub cache under ``root``; return the cache."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from consert.encode.models import REHEARSAL_KEY, STAND_IN_MODEL, resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(STAND_IN_MODEL).path)
    cache = root / "hf-hub"
    for name, shape in SIZES.items():
        repo = cache / f"models--{name.replace('/', '--')}"
        snapshot = repo / "snapshots" / COMMIT
        torch.manual_seed(len(name))
        # initializer_range 0.2 (BERT's is 0.02): random tiny encoders whose sentences differ enough
        # (cosines 0.8-0.95) that training does not collapse them into the harness's collapse check
        config = BertConfig(vocab_size=tokenizer.vocab_size, initializer_range=0.2, **shape)
        setattr(config, REHEARSAL_KEY, True)
        BertModel(config).save_pretrained(snapshot)
        tokenizer.save_pretrained(snapshot)
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / "main").write_text(COMMIT)
    return cache


def _sentences(senteval: Path, count: int) -> list[str]:
    """Real sentences to build the generated files from (STS-B's training pairs)."""
    lines = (senteval / "downstream" / "STS" / "STSBenchmark" / "sts-train.csv").read_text(encoding="utf-8")
    sentences = [field for line in lines.splitlines() for field in line.split("\t")[5:7]]
    return sentences[:count]


def data_files(root: Path, senteval: Path) -> None:
    """NLI jsonl files, a wiki1m-format file and a GloVe 840B-format file under ``root / "data"``."""
    rng = random.Random(0)
    sentences = _sentences(senteval, 4000)
    data = root / "data"
    (data / "senteval").parent.mkdir(parents=True, exist_ok=True)
    if not (data / "senteval").exists():
        (data / "senteval").symlink_to(senteval.resolve(), target_is_directory=True)
    files = {
        "nli/snli_1.0/snli_1.0_train.jsonl": 300,
        "nli/snli_1.0/snli_1.0_dev.jsonl": 60,
        "nli/snli_1.0/snli_1.0_test.jsonl": 60,
        "nli/multinli_1.0/multinli_1.0_train.jsonl": 300,
    }
    for name, count in files.items():
        path = data / name
        path.parent.mkdir(parents=True, exist_ok=True)
        records = []
        for i in range(count):
            label = "-" if i % 20 == 0 else LABELS[i % 3]  # pairs without consensus, skipped as SBERT did
            records.append(
                {"sentence1": rng.choice(sentences), "sentence2": rng.choice(sentences), "gold_label": label}
            )
        path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    (data / "wiki1m_for_simcse.txt").write_text("\n".join(sentences[:2000]) + "\n", encoding="utf-8")
    words = sorted({word for sentence in sentences for word in sentence.split()})[:3000]
    glove = data / "glove" / "glove.840B.300d.txt"
    glove.parent.mkdir(parents=True, exist_ok=True)
    with open(glove, "w", encoding="utf-8") as handle:
        for word in [*words, "at & t"]:  # 840B has words with spaces: the vector is the last 300 fields
            handle.write(word + " " + " ".join(f"{rng.gauss(0, 0.3):.4f}" for _ in range(300)) + "\n")
    Path(f"{glove}.rehearsal").write_text("generated by tests/rehearsal.py: not GloVe's vectors\n")


def build(root: Path, senteval: Path) -> dict[str, str]:
    """Build the rehearsal's folder; return the environment its snakemake run needs."""
    root.mkdir(parents=True, exist_ok=True)
    data_files(root, senteval)
    return {"HF_HUB_CACHE": str(hub_cache(root)), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


COMMAND = "snakemake all --configfile config/config.yaml config/rehearsal.yaml --cores 2"


if __name__ == "__main__":
    import os

    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.rehearsal DIR   (builds DIR; the STS data from $CONSERT_DATA)")
    root = Path(sys.argv[1]).resolve()
    senteval = Path(os.environ.get("CONSERT_DATA", "../shared/data/senteval"))
    env = build(root, senteval)
    exports = " ".join(f"{key}={value}" for key, value in env.items())
    print(f"built {root}; run:\n  {exports} {COMMAND} --directory {root}")
