"""Command line: ``consert <command>`` (also ``python -m consert <command>``).

Each command is one module of this package with ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``; :data:`COMMANDS` lists them, in the order ``consert --help`` shows them. Arguments
several commands share are in :mod:`.arguments`, shared steps (vector caches, evaluating an export) in
:mod:`.common`, how a command behaves as a process (its threads, progress bars in a log file) in :mod:`.process`.
A usage error is one line, ``consert COMMAND: error: ...`` (exit 2).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from consert import __version__
from consert.cli import (
    baseline,
    bench,
    claims,
    compare,
    download_data,
    encode,
    evaluate,
    gate_rates,
    predictions,
    recipe,
    sgopt,
    table1,
    topk,
    train,
)
from consert.cli.arguments import apply_encoding_config
from consert.cli.process import LogProgress, set_threads
from consert.configs import ConfigError
from consert.data.senteval import DataFormatError
from consert.encode.models import ModelNotAvailableError
from consert.gpu_pool import device_from_pool
from consert.train.loop import TrainingFault

#: Every command, in the order ``consert --help`` lists them.
COMMANDS = (
    evaluate,
    train,
    baseline,
    encode,
    topk,
    sgopt,
    predictions,
    compare,
    gate_rates,
    bench,
    claims,
    recipe,
    table1,
    download_data,
)

#: Failures that bad input or a broken environment cause: one line and exit 2 (tracebacks with --debug).
EXPECTED_FAILURES = (
    DataFormatError,
    ConfigError,
    ModelNotAvailableError,
    TrainingFault,
    ValueError,
    KeyError,
    TypeError,
    OverflowError,
    OSError,
)
#: Arguments that name files a command writes.
OUTPUT_ARGUMENTS = ("output", "evaluate", "save_vectors")


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, ``consert COMMAND: error: ...``, with where the
    usage is (argparse's default prints the usage first, 4-9 lines, some of them the top-level one)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` shows the usage)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command in :data:`COMMANDS`; ``parser.commands`` maps each name to its
    subparser."""
    parser = Parser(prog="consert", description="ConSERT reproduction harness")
    parser.add_argument("--version", action="version", version=f"consert {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of a failure")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    parser.commands = {}
    for command in COMMANDS:
        subparser = commands.add_parser(command.NAME, help=command.HELP)
        command.add_arguments(subparser)
        subparser.set_defaults(run=command.run)
        parser.commands[command.NAME] = subparser
    return parser


def parse(argv: Sequence[str] | None = None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The parsed ``argv`` and the parser of its command, every combination of arguments checked: a usage
    error is one line naming the command, the flag and what was expected (exit 2), before any work."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    subparser = parser.commands[args.command]
    if unknown:
        subparser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if getattr(args, "encoding_config", None):  # the workflow's encoding settings, under the flags given
        args = apply_encoding_config(parser, subparser, argv, args)
    command = next(c for c in COMMANDS if c.NAME == args.command)
    if hasattr(command, "check_arguments"):  # combinations of arguments, refused before any work
        command.check_arguments(subparser, args)
    if not getattr(args, "evaluate", True) and (args.save_vectors or args.topk_max):
        subparser.error("--save-vectors and --topk-max keep the vectors of --evaluate: pass --evaluate FILE.csv too")
    if getattr(args, "topk_max", 0) and hasattr(args, "save_vectors") and not args.save_vectors:
        subparser.error("--topk-max statistics are kept in the --save-vectors cache: pass --save-vectors CACHE.npz too")
    return subparser, args


def _check_outputs_writable(args: argparse.Namespace) -> None:
    """Refuse, before any work, an output that could not be written: its folder is created and a temporary
    file written there and removed (an output under a file, a directory itself, or on a filesystem that
    takes no files, such as /proc, fails here in one line, not after the work). ``--format mteb``'s output
    is a folder."""
    for name in OUTPUT_ARGUMENTS:
        value = getattr(args, name, None)
        if not isinstance(value, str) or not value:
            continue
        path = Path(value)
        flag = f"--{name.replace('_', '-')} {path}"
        folder = name == "output" and getattr(args, "format", None) == "mteb"
        if path.is_dir() != folder and path.exists():
            raise OSError(
                f"{flag}: is a {'file' if folder else 'directory'}; expected a {'folder' if folder else 'file'} path"
            )
        blocker = next((parent for parent in path.parents if parent.exists()), None)
        if blocker is not None and not blocker.is_dir():
            raise OSError(f"{flag}: {blocker} is a file, not a directory")
        target = path if folder else path.parent
        try:
            target.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=target, prefix=f".{path.name}.", suffix=".probe"):
                pass
        except OSError as err:
            raise OSError(f"{flag}: cannot be written there ({err.strerror or err})") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for bad input, with a one-line error)."""
    _, args = parse(argv)
    stderr, threads = sys.stderr, None
    if not stderr.isatty():  # a log file or a pipe: progress bars as one line per interval, not one endless line
        sys.stderr = LogProgress(stderr)
    try:
        _check_outputs_writable(args)
        if hasattr(args, "threads"):
            threads = set_threads(args.threads)
        with device_from_pool() as device:  # a workflow job on a box with several GPUs: its own card
            if device is not None:
                print(f"consert {args.command}: on GPU {device} (CUDA_VISIBLE_DEVICES)", file=sys.stderr)
            return args.run(args)
    except KeyboardInterrupt:  # every output is written beside its target and renamed into place
        print(f"consert {args.command}: interrupted; nothing written", file=sys.stderr)
        return 130
    except EXPECTED_FAILURES as err:
        if args.debug:
            raise
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"consert {args.command}: error: {message} (--debug shows the traceback)", file=sys.stderr)
        return 2
    finally:
        if threads is not None:  # called in-process (tests, a notebook): its thread count as it was
            set_threads(threads)
        if sys.stderr is not stderr:
            sys.stderr.close_bar()
            sys.stderr = stderr
