"""Arguments several commands share, and the argparse types that give a one-line error on bad input."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from consert.train.config import MIN_MAX_LENGTH

#: The encoder's default max length (tokens, [CLS] and [SEP] included) on the command line.
MAX_LENGTH = 64


def add_data_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data",
        default=None,
        metavar="DIR",
        help="SentEval data directory (default: $CONSERT_DATA, else ./data/senteval, else ../shared/data/senteval "
        "or ../SentEval/data beside the working directory or the checkout)",
    )


def task_name(text: str) -> str:
    """An argparse type: a declared set (the paper's 7 by default), by the harness's name or SentEval's
    (``STSBenchmark``)."""
    from consert.data.senteval import TASK_ALIASES, TASKS

    name = TASK_ALIASES.get(text, text)
    if name not in TASKS:
        raise argparse.ArgumentTypeError(f"unknown task {text!r}: expected one of {', '.join(TASKS)}")
    return name


def add_choice_argument(parser: argparse.ArgumentParser, flag: str, choices: Sequence[str], help_text: str) -> None:
    """A flag that picks one of ``choices``, the first of them its default."""
    parser.add_argument(flag, choices=choices, default=choices[0], help=help_text)


def add_precision_arguments(parser: argparse.ArgumentParser, flag: str) -> None:
    from consert.encode.precision import DTYPE_CHOICES, ENGINES

    add_choice_argument(
        parser,
        flag,
        DTYPE_CHOICES,
        "precision of the encoding; auto: the fastest measured on this machine (cached; $CONSERT_DTYPE overrides auto)",
    )
    add_choice_argument(
        parser,
        "--engine",
        ENGINES,
        "inference engine; auto: the fastest measured with the dtype (ONNX Runtime or PyTorch on a CPU; "
        "$CONSERT_ENGINE overrides auto)",
    )


def at_least(minimum: int):
    """An argparse type: an integer >= ``minimum``, else a one-line usage error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threads",
        type=at_least(1),
        default=None,
        metavar="N",
        help="CPU threads to compute with (default: $OMP_NUM_THREADS when set, else the physical cores this "
        "process may use, by its affinity and cgroup quota, less those the machine's load keeps busy; at least 1)",
    )


def add_encoder_arguments(parser: argparse.ArgumentParser, takes: dict[str, str] | None = None) -> None:
    """The encoder's options, and ``--encoding-config`` setting its dtype and max length (and ``takes``: {the file's
    key: the argument it sets})."""
    parser.add_argument(
        "--max-length",
        type=at_least(MIN_MAX_LENGTH),
        default=MAX_LENGTH,
        help=f"tokens per sentence, [CLS] and [SEP] included (at least {MIN_MAX_LENGTH}, at most the model's limit)",
    )
    add_precision_arguments(parser, "--dtype")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    add_data_argument(parser)
    add_encoding_config_argument(parser, {"dtype": "dtype", "max_length": "max_length", **(takes or {})})


def add_repeatable_argument(
    parser: argparse.ArgumentParser,
    flag: str,
    metavar: str,
    help_text: str,
    parse: Callable[[str], object] | None = None,
) -> None:
    """A flag given any number of times: its values (each read by ``parse``, when given) in a list, empty when
    the flag is not given."""
    parser.add_argument(flag, action="append", default=[], metavar=metavar, type=parse, help=help_text)


def add_vectors_argument(
    parser: argparse.ArgumentParser, help_text: str = "read vectors from `consert encode`"
) -> None:
    """``--vectors CACHE.npz``: a vector cache (``consert encode`` writes them) read instead of encoding."""
    parser.add_argument("--vectors", default=None, metavar="CACHE.npz", help=help_text)


def add_training_arguments(
    parser: argparse.ArgumentParser, config_help: str, set_help: str, list_keys_help: str | None = None
) -> None:
    """The arguments of a command that trains and exports a model (``train``, ``sgopt``): its settings from
    ``--config FILE.yaml`` and ``--set KEY=VALUE`` overrides (with ``list_keys_help``, ``--list-keys`` between
    them), ``--overwrite`` of an earlier export, and the export's evaluation (:func:`add_evaluate_arguments`)."""
    parser.add_argument("--config", default=None, metavar="FILE.yaml", help=config_help)
    if list_keys_help is not None:
        parser.add_argument("--list-keys", action="store_true", help=list_keys_help)
    add_repeatable_argument(parser, "--set", "KEY=VALUE", set_help)
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an earlier export in output_dir (never other files)"
    )
    add_evaluate_arguments(parser)


def add_evaluate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--evaluate", default=None, metavar="FILE.csv", help="then evaluate the export on the 7 sets")
    add_precision_arguments(parser, "--eval-dtype")
    parser.add_argument(
        "--save-vectors", default=None, metavar="CACHE.npz", help="keep that evaluation's vectors as a vector cache"
    )
    parser.add_argument(
        "--save-pooling",
        action="append",
        metavar="P",
        help="a further pooling to keep in the --save-vectors cache (repeatable; e.g. BERT-flow's mean:1,-1)",
    )
    add_topk_max_argument(parser, "in that cache")
    parser.add_argument(
        "--curve",
        default=None,
        metavar="FILE.csv",
        help="write the run's training curve (loss, learning rate, dev Spearman per step) there",
    )


def probability(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def add_topk_max_argument(parser: argparse.ArgumentParser, where: str) -> None:
    parser.add_argument(
        "--topk-max",
        type=non_negative_int,
        default=0,
        metavar="K",
        help=f"also collect the top-k masking statistics (k <= K) of the evaluation sentences {where}",
    )


def add_cached_model_arguments(
    parser: argparse.ArgumentParser, vectors_help: str, takes: dict[str, str] | None = None
) -> None:
    """A model, the pooling it is read with, a vector cache it may be read from, and the encoder's options: the
    arguments of the commands that draw a figure's data from one model (``topk``, ``predictions``)."""
    from consert.encode.pooling import PAPER_POOLING

    parser.add_argument("model")
    parser.add_argument("--pooling", default=PAPER_POOLING, metavar="P")
    add_vectors_argument(parser, vectors_help)
    add_encoder_arguments(parser, takes)


def add_encoding_config_argument(parser: argparse.ArgumentParser, takes: dict[str, str]) -> None:
    """``--encoding-config FILE.yaml``: the workflow's resolved encoding settings
    (:class:`~consert.planner.encoding.EncodingSettings`), of which this command takes ``takes`` ({the file's
    key: the argument it sets}); a flag given on the command line wins (:func:`apply_encoding_config`)."""
    flags = ", ".join(f"{name} (--{dest.replace('_', '-')})" for name, dest in takes.items())
    parser.add_argument(
        "--encoding-config",
        default=None,
        metavar="FILE.yaml",
        help=f"the workflow's encoding settings (its results/encoding_config.yaml): this command takes {flags}; "
        "a flag given wins",
    )
    parser.set_defaults(encoding_keys=takes)


def apply_encoding_config(
    parser: argparse.ArgumentParser, subparser: argparse.ArgumentParser, argv: Sequence[str] | None, args
) -> argparse.Namespace:
    """``args`` with the values of ``--encoding-config``'s file for each argument of the command that its command
    line leaves out. The command line is parsed again with those arguments' defaults None, so that a flag given,
    even at its default value, wins over the file, and a repeatable one (``--pooling``) replaces the file's list
    rather than adding to it. A wrong key or value in the file is one line naming it."""
    from consert.configs import ConfigError
    from consert.planner.encoding import EncodingSettings

    try:
        settings = EncodingSettings.read(args.encoding_config)
    except ConfigError as err:
        subparser.error(f"--encoding-config: {err}")
    takes = args.encoding_keys
    subparser.set_defaults(**dict.fromkeys(takes.values()))  # None: no flag parses to it
    args, _ = parser.parse_known_args(argv)
    for name, dest in takes.items():
        if getattr(args, dest) is None:
            setattr(args, dest, getattr(settings, name))
    return args
