"""``consert bench``: benchmark evaluation and training against their references."""

from __future__ import annotations

import argparse
from pathlib import Path

from consert.cli.arguments import add_data_argument, at_least

NAME = "bench"
HELP = "benchmark evaluation and training against their references"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert bench``."""
    parser.add_argument("--repeats", type=at_least(1), default=3, help="alternating repeats (cpu)")
    parser.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="cpu: against sentence-transformers; cuda: the paper-scale trainer, a plain loop, the compiled ceiling",
    )
    parser.add_argument("--json", default=None, metavar="FILE.json", help="also write the raw numbers")
    add_data_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Run ``consert bench`` on parsed ``args``; return its exit status."""
    import json

    from consert.data.senteval import load_senteval

    data = load_senteval(args.data)
    if args.device == "cuda":
        from consert.bench import cuda

        report = cuda.run(data)
    else:
        from consert.bench import cpu

        report = cpu.run(data, repeats=args.repeats)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0
