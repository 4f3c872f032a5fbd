"""``consert evaluate``: evaluate an encoder on the STS sets (all 7, or some; test or dev split)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from consert.cli.arguments import MAX_LENGTH, add_encoder_arguments, add_threads_argument, at_least, task_name
from consert.data.senteval import DATASETS, TASK_ALIASES, TASKS
from consert.encode.pooling import MODEL_POOLING, PAPER_POOLING, POOLER, SIMCSE_POOLERS, Pooling
from consert.evaluate.formats import FORMATS

NAME = "evaluate"
HELP = "evaluate an encoder on the STS sets"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert evaluate``."""
    parser.add_argument("model", help="hub id or local directory (e.g. an exported ConSERT model)")
    parser.add_argument(
        "--pooling",
        action="append",
        metavar="P",
        help=f"cls | mean | mean:I,J,... (hidden-state indices) | {POOLER} (SimCSE's cls) | model (the model's own "
        f"sentence-transformers modules) | SimCSE's {' | '.join(SIMCSE_POOLERS)}; repeatable; default {PAPER_POOLING} "
        f"({MODEL_POOLING} with --format mteb)",
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        type=task_name,
        default=None,
        metavar="TASK",
        help=f"some of {' '.join(TASKS)} (also {' '.join(TASK_ALIASES)})",
    )
    parser.add_argument(
        "--split",
        choices=("test", "dev"),
        default="test",
        help="test (the protocol) or dev (STS-B dev and SICK-R trial, SimCSE's --mode dev)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table (printed), csv or json (to --output, else stdout), mteb (mteb's result files under --output)",
    )
    parser.add_argument(
        "--batch-size", type=at_least(1), default=None, help="sentences per forward pass (default: 64 CPU, 512 CUDA)"
    )
    parser.add_argument("--vectors", default=None, metavar="CACHE.npz", help="read vectors from `consert encode`")
    parser.add_argument(
        "--output",
        default=None,
        metavar="PATH",
        help="the tidy result CSV (table, csv), the JSON file (json), or mteb's cache folder (mteb: files under "
        "its results/, as mteb.ResultCache(PATH) loads them; default mteb's own, $MTEB_CACHE else ~/.cache/mteb)",
    )
    add_encoder_arguments(parser)
    add_threads_argument(parser)


#: The encoder options ``--pooling model`` does not use (the model's modules set its length; it runs in fp32 on
#: PyTorch), with their defaults.
_UNUSED_BY_MODEL_POOLING = {"max_length": MAX_LENGTH, "dtype": "auto", "engine": "auto", "vectors": None}


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, when parsed, what would fail or be ignored only after the model and data load: an unknown
    pooling, several poolings for mteb's files (one score per model and task), and encoder options
    ``--pooling model`` ignores. Fills in the default pooling (``model`` for ``--format mteb``) and names
    SimCSE's poolers by their poolings here."""
    if Path(args.model).is_file():
        parser.error(
            f"model {args.model}: is a file; expected a model folder (config.json, the tokenizer and the weights, "
            "as `consert train` exports) or a hub id"
        )
    poolings = args.pooling or [MODEL_POOLING if args.format == "mteb" else PAPER_POOLING]
    try:
        args.pooling = list(dict.fromkeys(p if p == MODEL_POOLING else str(Pooling.parse(p)) for p in poolings))
    except ValueError as err:
        parser.error(f"--pooling: {err}")
    if args.format == "mteb" and len(args.pooling) > 1:
        parser.error(
            f"--format mteb: mteb's files hold one score per model and task; give one --pooling, not {poolings}"
        )
    if args.pooling == [MODEL_POOLING]:
        ignored = [name for name, default in _UNUSED_BY_MODEL_POOLING.items() if getattr(args, name) != default]
        if ignored:
            flags = ", ".join(f"--{name.replace('_', '-')}" for name in ignored)
            parser.error(
                f"--pooling model encodes with the model's own modules, length and fp32; it would ignore {flags}"
            )


def _evaluate(args: argparse.Namespace, data):
    """The result frame of every pooling asked for, the model's own modules included."""
    import pandas as pd

    from consert.evaluate.protocol import evaluate_model, evaluate_sentence_transformer

    poolings = args.pooling
    frames = []
    if MODEL_POOLING in poolings:
        frames.append(evaluate_sentence_transformer(args.model, data, args.device, args.batch_size))
    harness = [p for p in poolings if p != MODEL_POOLING]
    if harness:
        frames.append(
            evaluate_model(
                args.model,
                harness,
                data,
                max_length=args.max_length,
                dtype=args.dtype,
                device=args.device,
                batch_size=args.batch_size,
                vectors=args.vectors,
                engine=args.engine,
            )
        )
    return pd.concat(frames, ignore_index=True)


def run(args: argparse.Namespace) -> int:
    """Run ``consert evaluate`` on parsed ``args``; return its exit status."""
    from consert.data.senteval import load_senteval
    from consert.evaluate.formats import mteb_cache_dir, summary_line, to_json, write_mteb
    from consert.evaluate.protocol import summary_table
    from consert.io import write_csv, write_text

    try:
        sets = tuple(dict.fromkeys((*DATASETS, *(args.tasks or ()))))  # the paper's seven, and any other asked for
        data = load_senteval(args.data, sets).select(args.tasks, args.split)
    except ValueError as err:
        print(f"consert evaluate: {err}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    frame = _evaluate(args, data)
    seconds = time.perf_counter() - started
    if args.format == "json":
        text = to_json(frame)
        if args.output:
            print(f"wrote {write_text(text, args.output)}")
        else:
            print(text)
        return 0
    if args.format == "csv" and not args.output:
        frame.to_csv(sys.stdout, index=False)
        return 0
    for pooling, block in frame.groupby("pooling", sort=False):
        print(
            f"\n{args.model}  pooling={pooling}  split={args.split}  max_length={block.max_length.iloc[0]}  "
            f"dtype={block.dtype.iloc[0]}  engine={block.engine.iloc[0]}"
        )
        print(f"setting: {block.setting.iloc[0]}")
        print(summary_table(block).to_string(index=False, float_format=lambda v: f"{v:6.2f}"))
        print(summary_line(block))
    if args.format == "mteb":
        cache = args.output or mteb_cache_dir()
        for path in write_mteb(frame, cache, args.split, seconds):
            print(f"wrote {path}")
        print(f"load them: mteb.ResultCache({str(cache)!r}).load_results(models=[{args.model!r}]) (docs: Evaluation)")
    elif args.output:
        print(f"\nwrote {write_csv(frame, args.output)}")
    return 0
