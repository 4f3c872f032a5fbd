"""``consert download-data``: fetch what the paper config reads from its official sources (needs network)."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "download-data"
HELP = "download SentEval's STS sets and the paper config's other inputs (needs network)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert download-data``: one flag per input, each with the place the paper config names
    (``config/config.yaml``); no flag fetches the STS sets."""
    from consert.data.download import SOURCES, SPACY_MODEL

    parser.add_argument(
        "--sts", action="store_true", help="SentEval's seven STS sets into --dest (what no flag fetches)"
    )
    parser.add_argument("--dest", default="data/senteval", metavar="DIR", help="the STS sets' folder")
    for source in SOURCES.values():
        what = "file" if not source.members else "folder"
        parser.add_argument(
            f"--{source.name}",
            nargs="?",
            const=source.default,
            default=None,
            metavar=what.upper(),
            help=f"{source.title} from {source.url} (default {what} {source.default})",
        )
    parser.add_argument(
        "--nli",
        nargs="?",
        const=SOURCES["snli"].default,
        default=None,
        metavar="FOLDER",
        help=f"SNLI and MultiNLI into one folder (default {SOURCES['snli'].default})",
    )
    parser.add_argument(
        "--spacy",
        nargs="?",
        const=SPACY_MODEL,
        default=None,
        metavar="MODEL",
        help=f"a spaCy pipeline, installed by `python -m spacy download` (default {SPACY_MODEL})",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="HUB_ID",
        help="a model of the Hugging Face hub into its cache (repeatable; $HF_ENDPOINT names another hub)",
    )
    parser.add_argument(
        "--record", default=None, metavar="FILE.json", help="--model: write what was fetched, and where, to FILE"
    )
    parser.add_argument("--all", action="store_true", help="everything the paper config reads, at its places")


def run(args: argparse.Namespace) -> int:
    """Run ``consert download-data`` on parsed ``args``; return its exit status."""
    from consert.data.download import SOURCES, SPACY_MODEL, download_senteval, download_spacy_model, unreachable
    from consert.data.inputs import spacy_pipeline_input
    from consert.data.senteval import ALLOW_UNVERIFIED_ENV_VAR, DATA_ENV_VAR

    wanted = {name: getattr(args, name) for name in SOURCES}
    if args.nli:
        wanted.update(snli=wanted["snli"] or args.nli, multinli=wanted["multinli"] or args.nli)
    if args.all:
        wanted = {name: wanted[name] or source.default for name, source in SOURCES.items()}
    spacy_model = args.spacy or (SPACY_MODEL if args.all else None)
    if args.model:
        _download_models(args.model, args.record)
    if args.sts or args.all or not (any(wanted.values()) or spacy_model or args.model):
        try:
            differing = download_senteval(Path(args.dest))
        except OSError as err:  # no network: URLError is an OSError
            if not unreachable(err):  # a file that arrived wrong, a full disk: its own line
                raise
            raise OSError(
                f"downloading SentEval's STS files failed ({str(err).splitlines()[0]}); without network, put a "
                f"SentEval data folder at {args.dest} or name one with ${DATA_ENV_VAR} (a workflow: --config "
                "data_dir=DIR)"
            ) from None
        print(f"SentEval's STS sets ready in {args.dest}")
        if differing:
            print(
                f"{len(differing)} files differ from SentEval's prepared files (the sha256 manifest "
                f"consert/data/manifests/senteval_sts.json); evaluations refuse them unless "
                f"{ALLOW_UNVERIFIED_ENV_VAR}=1, and their rows then say data_verified = False:\n  "
                + "\n  ".join(differing)
            )
    for name, dest in wanted.items():
        if dest:
            source = SOURCES[name]
            outputs = source.download(dest)
            print(f"{source.title} ready: {', '.join(str(path) for path in outputs)}")
    if spacy_model and not spacy_pipeline_input(spacy_model).present:  # pip would install it again
        download_spacy_model(spacy_model)
    if spacy_model:
        print(f"spaCy's {spacy_model} installed")
    return 0


def _download_models(names: list[str], record: str | None) -> None:
    """Each hub model into the hub's cache; with ``record``, a JSON file of each model's snapshot folder."""
    import json

    from consert.encode.models import download_hub_model
    from consert.io import write_text

    fetched = {}
    for name in names:
        fetched[name] = str(download_hub_model(name))
        print(f"{name} ready in the hub's cache: {fetched[name]}")
    if record:
        write_text(json.dumps(fetched, indent=1) + "\n", record)
