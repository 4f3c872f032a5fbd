"""``consert evaluate``: evaluate an encoder on the 7 STS sets."""

from __future__ import annotations

import argparse

from consert.cli.arguments import add_encoder_arguments, at_least
from consert.encode.pooling import PAPER_POOLING

NAME = "evaluate"
HELP = "evaluate an encoder on the 7 STS sets"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert evaluate``."""
    parser.add_argument("model", help="hub id or local directory (e.g. an exported ConSERT model)")
    parser.add_argument(
        "--pooling",
        action="append",
        metavar="P",
        help=f"cls | mean | mean:I,J,... (hidden-state indices); repeatable; default {PAPER_POOLING}",
    )
    parser.add_argument(
        "--batch-size", type=at_least(1), default=None, help="sentences per forward pass (default: 64 CPU, 512 CUDA)"
    )
    parser.add_argument("--vectors", default=None, metavar="CACHE.npz", help="read vectors from `consert encode`")
    parser.add_argument("--output", default=None, metavar="FILE.csv", help="write the tidy result CSV")
    add_encoder_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Run ``consert evaluate`` on parsed ``args``; return its exit status."""
    from consert.data.senteval import load_senteval
    from consert.evaluate.protocol import evaluate_model, summary_table
    from consert.io import write_csv

    data = load_senteval(args.data)
    frame = evaluate_model(
        args.model,
        args.pooling or [PAPER_POOLING],
        data,
        max_length=args.max_length,
        dtype=args.dtype,
        device=args.device,
        batch_size=args.batch_size,
        vectors=args.vectors,
        engine=args.engine,
    )
    for pooling, block in frame.groupby("pooling", sort=False):
        print(
            f"\n{args.model}  pooling={pooling}  max_length={args.max_length}  dtype={block.dtype.iloc[0]}  "
            f"engine={block.engine.iloc[0]}"
        )
        print(f"setting: {block.setting.iloc[0]}")
        print(summary_table(block).to_string(index=False, float_format=lambda v: f"{v:6.2f}"))
    if args.output:
        print(f"\nwrote {write_csv(frame, args.output)}")
    return 0
