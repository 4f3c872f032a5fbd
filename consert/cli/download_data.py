"""``consert download-data``: download SentEval's STS data (needs network)."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "download-data"
HELP = "download SentEval's STS data (needs network)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert download-data``."""
    parser.add_argument("--dest", default="data/senteval", metavar="DIR")
    parser.add_argument(
        "--wiki1m",
        nargs="?",
        const="data/wiki1m_for_simcse.txt",
        default=None,
        metavar="FILE",
        help="also fetch SimCSE's 1M Wikipedia sentences (SimCSE/AugCSE training text; default path "
        "data/wiki1m_for_simcse.txt)",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``consert download-data`` on parsed ``args``; return its exit status."""
    from consert.data.download import download_senteval, download_wiki1m
    from consert.data.senteval import DATA_ENV_VAR

    try:
        print(f"SentEval data ready in {download_senteval(Path(args.dest))}")
    except OSError as err:  # no network: URLError is an OSError
        raise OSError(
            f"downloading SentEval's STS files failed ({str(err).splitlines()[0]}); without network, put a SentEval "
            f"data folder at {args.dest} or name one with ${DATA_ENV_VAR} (a workflow: --config data_dir=DIR)"
        ) from None
    if args.wiki1m:
        print(f"SimCSE's Wikipedia sentences ready in {download_wiki1m(Path(args.wiki1m))}")
    return 0
