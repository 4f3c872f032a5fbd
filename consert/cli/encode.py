"""``consert encode``: encode every distinct STS text once into a vector cache."""

from __future__ import annotations

import argparse

from consert.cli.arguments import add_encoder_arguments, add_topk_max_argument
from consert.cli.common import encode_cache, load_encoder
from consert.encode.pooling import PAPER_POOLING

NAME = "encode"
HELP = "encode every distinct STS text once into a vector cache"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert encode``."""
    parser.add_argument("model")
    parser.add_argument("--pooling", action="append", metavar="P", help=f"repeatable; default {PAPER_POOLING}")
    parser.add_argument("--output", required=True, metavar="CACHE.npz")
    add_topk_max_argument(parser, "(for `consert topk --vectors`)")
    add_encoder_arguments(parser, {"cache_poolings": "pooling"})


def run(args: argparse.Namespace) -> int:
    """Run ``consert encode`` on parsed ``args``; return its exit status."""
    from consert.data.senteval import load_senteval

    data = load_senteval(args.data)
    encoder = load_encoder(args)
    cache = encode_cache(encoder, data.unlabeled_texts(), args.pooling or [PAPER_POOLING], data, args.topk_max)
    extra = f" + top-{args.topk_max} statistics" if args.topk_max else ""
    print(f"wrote {cache.save(args.output)}: {len(cache.sentences)} distinct texts x {sorted(cache.vectors)}{extra}")
    return 0
