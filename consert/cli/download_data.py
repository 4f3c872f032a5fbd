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
    """Run ``consert download-data`` on parsed ``args``; return its exit status. Every input asked for is tried,
    whatever became of the others; with more than one, a table says what each is (fetched, present, failed and
    why), and the exit is 1 where any failed."""
    from consert.data.download import SOURCES, SPACY_MODEL

    wanted = {name: getattr(args, name) for name in SOURCES}
    if args.nli:
        wanted.update(snli=wanted["snli"] or args.nli, multinli=wanted["multinli"] or args.nli)
    if args.all:
        wanted = {name: wanted[name] or source.default for name, source in SOURCES.items()}
    spacy_model = args.spacy or (SPACY_MODEL if args.all else None)
    tasks = []  # (what, fetch: returns "fetched ..." or "present ...")
    if args.model:
        tasks.append(("hub models " + ", ".join(args.model), lambda: _download_models(args.model, args.record)))
    if args.sts or args.all or not (any(wanted.values()) or spacy_model or args.model):
        tasks.append(("SentEval's STS sets", lambda: _download_sts(Path(args.dest))))
    for name, dest in wanted.items():
        if dest:
            tasks.append((SOURCES[name].title, lambda source=SOURCES[name], dest=dest: _download_source(source, dest)))
    if spacy_model:
        tasks.append((f"spaCy pipeline {spacy_model}", lambda: _install_spacy(spacy_model)))
    if len(tasks) == 1:  # one input: its line, and its error as the command's
        what, fetch = tasks[0]
        print(f"{what}: {fetch()}")
        return 0
    states = {}
    for what, fetch in tasks:
        try:
            states[what] = fetch()
        except OSError as err:  # a download's failure, the network's: the next input is tried all the same
            states[what] = f"failed: {' '.join(str(err).split())}"
        print(f"{what}: {states[what]}", flush=True)
    width = max(map(len, states))
    rows = [f"{what:<{width}}  {state}" for what, state in states.items()]
    print("\n".join(["", f"{'input':<{width}}  state", *rows]))
    failed = [what for what, state in states.items() if state.startswith("failed")]
    if failed:
        print(f"{len(failed)} of {len(states)} inputs failed: run the same command again (what arrived is kept)")
    return 1 if failed else 0


def _download_sts(dest: Path) -> str:
    """SentEval's STS sets into ``dest``; what became of them."""
    from consert.data.download import download_senteval, unreachable
    from consert.data.senteval import ALLOW_UNVERIFIED_ENV_VAR, DATA_ENV_VAR

    if (dest / "downstream" / "STS").is_dir():
        return f"present ({dest})"
    try:
        differing = download_senteval(dest)
    except OSError as err:  # no network: URLError is an OSError
        if not unreachable(err):  # a file that arrived wrong, a full disk: its own line
            raise
        raise OSError(
            f"downloading SentEval's STS files failed ({str(err).splitlines()[0]}); without network, put a "
            f"SentEval data folder at {dest} or name one with ${DATA_ENV_VAR} (a workflow: --config data_dir=DIR)"
        ) from None
    if differing:
        print(
            f"{len(differing)} files differ from SentEval's prepared files (the sha256 manifest "
            f"consert/data/manifests/senteval_sts.json); evaluations refuse them unless "
            f"{ALLOW_UNVERIFIED_ENV_VAR}=1, and their rows then say data_verified = False:\n  " + "\n  ".join(differing)
        )
    return f"fetched ({dest}){f', {len(differing)} files differ from SentEval' if differing else ''}"


def _download_source(source, dest: str) -> str:
    """One source into ``dest``; what became of it."""
    if source.present(dest):
        return f"present ({', '.join(str(path) for path in source.outputs(dest))})"
    return f"fetched ({', '.join(str(path) for path in source.download(dest))})"


def _install_spacy(model: str) -> str:
    from consert.data.download import download_spacy_model
    from consert.data.inputs import spacy_pipeline_input

    if spacy_pipeline_input(model).present:  # pip would install it again
        return "present (installed)"
    download_spacy_model(model)
    return "fetched (installed)"


def _download_models(names: list[str], record: str | None) -> str:
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
    return f"fetched ({', '.join(fetched.values())})"
