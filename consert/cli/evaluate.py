"""``consert evaluate``: evaluate an encoder on the STS sets (all 7, or some; test or dev split)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from consert.cli.arguments import (
    MAX_LENGTH,
    add_choice_argument,
    add_encoder_arguments,
    add_threads_argument,
    add_vectors_argument,
    at_least,
    task_name,
)
from consert.data.senteval import DATASETS, TASK_ALIASES, TASKS
from consert.encode.pooling import (
    AUTO_POOLING,
    CLS_VS_SIMCSE,
    MODEL_POOLING,
    PAPER_POOLING,
    POOLER,
    SIMCSE_POOLERS,
    Pooling,
)
from consert.evaluate.formats import FORMATS
from consert.paper.beside import PUBLISHED

NAME = "evaluate"
HELP = "evaluate an encoder on the STS sets"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert evaluate``."""
    parser.add_argument("model", help="hub id or local directory (e.g. an exported ConSERT model)")
    parser.add_argument(
        "--pooling",
        action="append",
        metavar="P",
        help=f"cls ({CLS_VS_SIMCSE}) | mean | mean:I,J,... (hidden-state indices) | {POOLER} (SimCSE's cls) | model "
        f"(the model's own sentence-transformers modules) | {AUTO_POOLING} ({MODEL_POOLING} where the model has such "
        f"modules, else mean) | SimCSE's {' | '.join(SIMCSE_POOLERS)}; output names it as "
        f"typed; repeatable; default {PAPER_POOLING} ({MODEL_POOLING} with --format mteb)",
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        type=task_name,
        default=None,
        metavar="TASK",
        help=f"some of {' '.join(TASKS)} (also {' '.join(TASK_ALIASES)})",
    )
    add_choice_argument(
        parser,
        "--split",
        ("test", "dev"),
        "test (the protocol) or dev (STS-B dev and SICK-R trial, SimCSE's --mode dev)",
    )
    add_choice_argument(
        parser,
        "--format",
        FORMATS,
        "table (printed), csv or json (to --output, else stdout), mteb (mteb's result files under --output)",
    )
    parser.add_argument(
        "--batch-size", type=at_least(1), default=None, help="sentences per forward pass (default: 64 CPU, 512 CUDA)"
    )
    add_vectors_argument(parser)
    parser.add_argument(
        "--beside-paper",
        action="store_true",
        help="set the 7 sets and Avg among the published rows of the paper's Tables 2 and 3, by Avg descending "
        "(the published values marked as published, never compared as a reproduction): --format table, csv or json",
    )
    parser.add_argument(
        "--published",
        default=str(PUBLISHED),
        metavar="DIR",
        help="the published tables --beside-paper reads (default: this checkout's results/published)",
    )
    parser.add_argument(
        "--output",
        default=None,
        metavar="PATH",
        help="the tidy result CSV (table, csv), the JSON file (json), or mteb's cache folder (mteb: files under "
        "its results/, as mteb.ResultCache(PATH) loads them; default mteb's own, $MTEB_CACHE else ~/.cache/mteb)",
    )
    add_encoder_arguments(parser, {"poolings": "pooling"})
    add_threads_argument(parser)


#: The encoder options ``--pooling model`` does not use (the model's modules set its length; it runs in fp32 on
#: PyTorch), with their defaults.
_UNUSED_BY_MODEL_POOLING = {"max_length": MAX_LENGTH, "dtype": "auto", "engine": "auto", "vectors": None}


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, when parsed, what would fail or be ignored only after the model and data load: an unknown
    pooling, several poolings for mteb's files (one score per model and task), and encoder options
    ``--pooling model`` ignores. Fills in the default pooling (``model`` for ``--format mteb``) and names
    SimCSE's poolers by their poolings here (``args.pooling``: what is encoded and cached), keeping the name
    each was typed as (``args.pooling_names``: what the output says; two spellings of one pooling are one)."""
    if Path(args.model).is_file():
        parser.error(
            f"model {args.model}: is a file; expected a model folder (config.json, the tokenizer and the weights, "
            "as `consert train` exports) or a hub id"
        )
    poolings = args.pooling or [MODEL_POOLING if args.format == "mteb" else PAPER_POOLING]
    args.pooling_names = {}
    try:
        for typed in poolings:
            canonical = typed if typed in (MODEL_POOLING, AUTO_POOLING) else str(Pooling.parse(typed))
            args.pooling_names.setdefault(canonical, typed.strip())
    except ValueError as err:
        parser.error(f"--pooling: {err}")
    args.pooling = list(args.pooling_names)
    if args.format == "mteb" and len(args.pooling) > 1:
        parser.error(
            f"--format mteb: mteb's files hold one score per model and task; give one --pooling, not {poolings}"
        )
    if args.beside_paper:
        beside_faults = {
            "--split dev": args.split != "test",
            f"--tasks {' '.join(args.tasks or ())}": args.tasks is not None,
            "--format mteb": args.format == "mteb",
        }
        given = [flag for flag, fault in beside_faults.items() if fault]
        if given:
            parser.error(
                f"--beside-paper sets the test split of the 7 sets beside the paper's rows; drop {', '.join(given)}"
            )
        from consert.paper.beside import published_rows

        try:  # before the model loads: a folder without the published tables is one line
            published_rows(Path(args.published))
        except (OSError, ValueError, KeyError) as err:
            parser.error(f"--published {args.published}: {err}; expected the published tables (results/published)")
    if AUTO_POOLING in args.pooling and len(args.pooling) > 1:
        parser.error(f"--pooling {AUTO_POOLING} chooses the model's pooling; give it alone, not with {poolings}")
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
    from consert.evaluate.formats import with_pooling_names

    try:
        sets = tuple(dict.fromkeys((*DATASETS, *(args.tasks or ()))))  # the paper's seven, and any other asked for
        data = load_senteval(args.data, sets).select(args.tasks, args.split)
    except ValueError as err:
        print(f"consert evaluate: {err}", file=sys.stderr)
        return 2
    if args.pooling == [AUTO_POOLING]:  # the model's own modules, else mean: settled once the model is at hand
        from consert.encode.models import own_or_mean

        args.pooling = [own_or_mean(args.model)]
        args.pooling_names = {args.pooling[0]: args.pooling[0]}
    started = time.perf_counter()
    harness_frame = _evaluate(args, data)  # named as the harness names its poolings: mteb's files, the card
    seconds = time.perf_counter() - started
    frame = with_pooling_names(harness_frame, getattr(args, "pooling_names", {}))  # as typed: what is shown
    if args.beside_paper:
        _write_beside_paper(args, frame)
    else:
        _write_results(args, frame, harness_frame, seconds)
    data_on_stdout = args.format in ("json", "csv") and not args.output
    _update_model_card(args, harness_frame, sys.stderr if data_on_stdout else sys.stdout)
    return 0


def _write_results(args: argparse.Namespace, frame, harness_frame, seconds: float) -> None:
    """Print or write the results in ``args.format``: ``frame`` names the poolings as typed, mteb's files take
    ``harness_frame``'s names (one experiment folder for two spellings of one pooling)."""
    from consert.encode.pooling import pooling_label
    from consert.evaluate.formats import mteb_cache_dir, summary_line, to_json, write_mteb
    from consert.evaluate.protocol import summary_table
    from consert.io import write_csv, write_text

    if args.format == "json":
        text = to_json(frame)
        if args.output:
            print(f"wrote {write_text(text, args.output)}")
        else:
            print(text)
        return
    if args.format == "csv" and not args.output:
        frame.to_csv(sys.stdout, index=False)
        return
    for pooling, block in frame.groupby("pooling", sort=False):
        print(
            f"\n{args.model}  pooling={pooling_label(pooling)}  split={args.split}  "
            f"max_length={block.max_length.iloc[0]}  dtype={block.dtype.iloc[0]}  engine={block.engine.iloc[0]}"
        )
        print(f"setting: {block.setting.iloc[0]}")
        print(summary_table(block).to_string(index=False, float_format=lambda v: f"{v:6.2f}"))
        print(summary_line(block))
    if args.format == "mteb":
        cache = args.output or mteb_cache_dir()
        for path in write_mteb(harness_frame, cache, args.split, seconds):
            print(f"wrote {path}")
        print(f"load them: mteb.ResultCache({str(cache)!r}).load_results(models=[{args.model!r}]) (docs: Evaluation)")
    elif args.output:
        print(f"\nwrote {write_csv(frame, args.output)}")


def _write_beside_paper(args: argparse.Namespace, frame) -> None:
    """The model's rows among the published rows of Tables 2 and 3 (:mod:`consert.paper.beside`), in
    ``args.format``: printed, or CSV or JSON to ``--output`` (else stdout)."""
    from consert.io import write_csv, write_text
    from consert.paper.beside import beside_paper, render

    table = beside_paper(frame, Path(args.published))
    if args.format == "table":
        print(f"\n{args.model} beside the paper (split=test, the 7 sets; {frame.setting.iloc[0]})")
        print(render(table))
        if args.output:
            print(f"\nwrote {write_csv(table, args.output)}")
        return
    if args.format == "json":
        text = table.to_json(orient="records", indent=2)
        print(f"wrote {write_text(text, args.output)}" if args.output else text)
    elif args.output:
        print(f"wrote {write_csv(table, args.output)}")
    else:
        table.to_csv(sys.stdout, index=False)


def _update_model_card(args: argparse.Namespace, frame, stream) -> None:
    """Put the scores of a full test evaluation (the test split, all 7 sets) of a harness export into its model
    card (:func:`consert.train.export.update_model_card`): those of the pooling the export is saved with, or of
    ``--pooling model`` (the same modules). A folder that is no harness export is not touched, and a card the
    harness did not write (no marker, as in exports older than it) is left byte for byte; one line says why a
    harness export's card was left as it is."""
    from consert.train.export import card_to_update, update_model_card

    card = card_to_update(args.model)
    if card is None:
        return
    blocks = {str(pooling): block for pooling, block in frame.groupby("pooling", sort=False)}
    try:
        exported = str(Pooling.parse(card.pooling)) if card.pooling else None
    except ValueError:  # a record naming no pooling of the harness: only --pooling model's scores fit
        exported = None
    own = [block for pooling, block in blocks.items() if pooling.startswith(MODEL_POOLING)]
    chosen = blocks[exported] if exported in blocks else next(iter(own), None)
    sets = [] if chosen is None else [name for name in DATASETS if name in set(chosen.dataset)]
    if not card.marked:
        why = "not marked as written by the harness's export (an older export, or another card)"
    elif args.split != "test":
        why = "--split dev: only a full test evaluation of the 7 sets updates it"
    elif chosen is None:
        flags = f"--pooling {exported} or --pooling model" if exported else "--pooling model"
        why = f"it reports the pooling the export is saved with: evaluate with {flags}"
    elif len(sets) < len(DATASETS):
        why = f"only {' '.join(sets)} evaluated: a full test evaluation of the 7 sets updates it"
    else:
        try:
            print(f"updated the scores of {update_model_card(args.model, chosen)}", file=stream)
            return
        except ValueError as err:
            why = str(err)
    print(f"model card {card.path} left as it is: {why}", file=stream)
