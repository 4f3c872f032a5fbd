"""Command line: ``consert <command>`` (also ``python -m consert <command>``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .config import ConfigError
from .data import DataFormatError
from .loop import TrainingFault
from .models import ModelNotAvailableError
from .pooling import PAPER_POOLING


def _add_data_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data",
        default=None,
        metavar="DIR",
        help="SentEval data directory (default: $CONSERT_DATA, else ./data/senteval)",
    )


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from .data import load_senteval
    from .evaluate import evaluate_model, summary_table
    from .io import write_csv

    data = load_senteval(args.data)
    frame = evaluate_model(
        args.model,
        args.pooling or [PAPER_POOLING],
        data,
        max_length=args.max_length,
        dtype=args.dtype,
        device=args.device,
        batch_size=args.batch_size,
    )
    for pooling, block in frame.groupby("pooling", sort=False):
        print(f"\n{args.model}  pooling={pooling}  max_length={args.max_length}  dtype={args.dtype}")
        print(f"setting: {block.setting.iloc[0]}")
        print(summary_table(block).to_string(index=False, float_format=lambda v: f"{v:6.2f}"))
    if args.output:
        print(f"\nwrote {write_csv(frame, args.output)}")
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from .config import load_train_config
    from .train import train

    config = load_train_config(args.config, args.set)
    result = train(config)
    print(
        f"best STS-B dev Spearman {result.best_dev_spearman:.2f} at step {result.best_step} "
        f"({result.steps} steps run); model exported to {result.output_dir}"
    )
    return 0


def _cmd_table1(args: argparse.Namespace) -> int:
    from .data import load_senteval
    from .io import write_csv
    from .table1 import dataset_statistics

    table = dataset_statistics(load_senteval(args.data))
    print(table.to_string(index=False))
    print(f"\nwrote {write_csv(table, args.output)}")
    return 0


def _cmd_download_data(args: argparse.Namespace) -> int:
    from .download import download_senteval

    print(f"SentEval data ready in {download_senteval(Path(args.dest))}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="consert", description="ConSERT reproduction harness")
    commands = parser.add_subparsers(dest="command", required=True)

    evaluate = commands.add_parser("evaluate", help="evaluate an encoder on the 7 STS sets")
    evaluate.add_argument("model", help="hub id or local directory (e.g. an exported ConSERT model)")
    evaluate.add_argument(
        "--pooling",
        action="append",
        metavar="P",
        help=f"cls | mean | mean:I,J,... (hidden-state indices); repeatable; default {PAPER_POOLING}",
    )
    evaluate.add_argument("--max-length", type=int, default=64)
    evaluate.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32")
    evaluate.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    evaluate.add_argument("--batch-size", type=int, default=128)
    evaluate.add_argument("--output", default=None, metavar="FILE.csv", help="write the tidy result CSV")
    _add_data_argument(evaluate)
    evaluate.set_defaults(run=_cmd_evaluate)

    train = commands.add_parser("train", help="train ConSERT (unsup, joint, sup, sup-unsup, joint-unsup)")
    train.add_argument("--config", default=None, metavar="FILE.yaml", help="training config (see consert/config.py)")
    train.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key (repeatable), e.g. --set mode=joint --set max_steps=30",
    )
    train.set_defaults(run=_cmd_train)

    table1 = commands.add_parser("table1", help="regenerate the paper's Table 1 (dataset statistics)")
    table1.add_argument("--output", default="results/table1_datasets.csv", metavar="FILE.csv")
    _add_data_argument(table1)
    table1.set_defaults(run=_cmd_table1)

    download = commands.add_parser("download-data", help="download SentEval's STS data (needs network)")
    download.add_argument("--dest", default="data/senteval", metavar="DIR")
    download.set_defaults(run=_cmd_download_data)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for bad input, with a one-line error)."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (DataFormatError, ConfigError, ModelNotAvailableError, TrainingFault, ValueError) as err:
        print(f"consert {args.command}: error: {err}", file=sys.stderr)
        return 2
