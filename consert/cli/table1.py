"""``consert table1``: regenerate the paper's Table 1 (dataset statistics)."""

from __future__ import annotations

import argparse

from consert.cli.arguments import add_data_argument
from consert.registry import TABLE1

NAME = TABLE1.key  # the command is named after the artifact it builds
HELP = "regenerate the paper's Table 1 (dataset statistics)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert table1``."""
    parser.add_argument("--output", default=f"results/{TABLE1.csv}", metavar="FILE.csv")
    add_data_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Run ``consert table1`` on parsed ``args``; return its exit status."""
    from consert.data.senteval import load_senteval
    from consert.io import write_csv
    from consert.paper.table1 import dataset_statistics

    table = dataset_statistics(load_senteval(args.data))
    print(table.to_string(index=False))
    print(f"\nwrote {write_csv(table, args.output)}")
    return 0
