"""``consert topk``: Figure 4: Spearman vs k most frequent tokens removed."""

from __future__ import annotations

import argparse

from consert.cli.arguments import add_cached_model_arguments, non_negative_int
from consert.cli.common import load_cache, load_encoder

NAME = "topk"
HELP = "Figure 4: Spearman vs k most frequent tokens removed"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert topk``."""
    add_cached_model_arguments(parser, "read the statistics from a vector cache", {"topk_max": "max_k"})
    parser.add_argument(
        "--max-k", type=non_negative_int, default=50, metavar="K", help="the curve's largest k (default 50)"
    )
    parser.add_argument("--output", default=None, metavar="FILE.csv")


def run(args: argparse.Namespace) -> int:
    """Run ``consert topk`` on parsed ``args``; return its exit status."""
    from baselines.topk import topk_curve
    from consert.data.senteval import load_senteval
    from consert.io import write_csv
    from consert.provenance import made_where_and_when

    data = load_senteval(args.data)
    encoder = load_encoder(args)
    rank_sums = None
    if args.vectors:
        rank_sums = load_cache(args.vectors, encoder, data, rank_sums=True, poolings=[]).rank_sums
    curve = topk_curve(encoder, data, range(args.max_k + 1), args.pooling, rank_sums=rank_sums)
    average = curve[curve.dataset == "Avg"][["k", "spearman", "removed_tokens"]]
    print(average.to_string(index=False, float_format=lambda v: f"{v:6.2f}"))
    if args.output:
        curve = curve.assign(model=args.model, setting=encoder.resolved.setting, **made_where_and_when(encoder.device))
        print(f"\nwrote {write_csv(curve, args.output)}")
    return 0
