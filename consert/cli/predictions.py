"""``consert predictions``: per-pair gold and cosine of one dataset (Figure 1)."""

from __future__ import annotations

import argparse

from consert.cli.arguments import add_cached_model_arguments
from consert.cli.common import load_cache, load_encoder
from consert.data.senteval import DATASETS, FIGURE_TASK

NAME = "predictions"
HELP = "per-pair gold and cosine of one dataset (Figure 1)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert predictions``."""
    add_cached_model_arguments(parser, "read vectors from a vector cache")
    parser.add_argument("--dataset", default=FIGURE_TASK, choices=DATASETS)
    parser.add_argument("--output", required=True, metavar="FILE.csv")


def run(args: argparse.Namespace) -> int:
    """Run ``consert predictions`` on parsed ``args``; return its exit status."""
    from consert.data.senteval import load_senteval
    from consert.evaluate.protocol import pair_predictions
    from consert.io import write_csv
    from consert.provenance import made_where_and_when

    data = load_senteval(args.data)
    encoder = load_encoder(args)
    sentences = list(
        dict.fromkeys(s for ps in data.sets[args.dataset].eval_groups.values() for p in ps for s in (p.sent1, p.sent2))
    )
    if args.vectors:
        matrix = load_cache(args.vectors, encoder, data, poolings=[args.pooling]).lookup(sentences, args.pooling)
    else:
        matrix = encoder.encode(sentences, args.pooling)
    vectors = dict(zip(sentences, matrix, strict=True))
    frame = pair_predictions(data, vectors, args.dataset).assign(
        model=args.model, pooling=args.pooling, setting=encoder.resolved.setting, **made_where_and_when(encoder.device)
    )
    print(f"wrote {write_csv(frame, args.output)} ({len(frame)} pairs)")
    return 0
