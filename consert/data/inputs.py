"""What a run reads beyond the STS sets (NLI files, GloVe, a training corpus, WordNet, a spaCy pipeline), each
checked before any work: on disk, downloaded by a workflow job (where the config names the place
:mod:`consert.data.download` fetches it to), or named with the command that gets it."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from consert.data.download import SOURCES, Source

#: The files of a WordNet 3.0 database folder the harness reads (AugCSE's antonym switch).
WORDNET_FILES = ("index.adj", "data.adj")
#: Where Debian's ``wordnet-base`` package puts WordNet 3.0's database files.
DEBIAN_WORDNET = Path("/usr/share/wordnet")
#: Where a WordNet 3.0 database is looked for when none is configured, in order: where ``consert download-data
#: --wordnet`` puts it, NLTK's data folders (``$NLTK_DATA``, then NLTK's defaults on Linux), Debian's wordnet-base.
WORDNET_DEFAULTS = (
    SOURCES["wordnet"].default,
    *os.environ.get("NLTK_DATA", "").split(os.pathsep),
    "~/nltk_data",
    "/usr/share/nltk_data",
    "/usr/local/share/nltk_data",
    str(DEBIAN_WORDNET),
)


@dataclass(frozen=True)
class ExternalInput:
    """One thing a run reads that the harness does not ship: a file, a folder or an installed package."""

    title: str  # what it is: "SNLI 1.0", "spaCy pipeline en_core_web_sm"
    location: str  # its path, or the package's name
    present: bool
    command: str  # what gets it
    source: Source | None = None  # set where a workflow job downloads it: at the source's own place, none of it there
    is_path: bool = True  # whether ``location`` is a file or folder (not an installed package's name)
    hub_id: str = ""  # a model of the Hugging Face hub, which the workflow's job hub_model fetches into its cache
    note: str = ""  # what else its state says (a model folder's rows not compared with the paper's)

    @property
    def job(self) -> str:
        """The workflow rule that downloads it ("" where none can)."""
        if self.present:
            return ""
        if self.hub_id:
            return HUB_MODEL_JOB
        return f"{self.source.name}_data" if self.source is not None else ""

    def state(self, jobs: bool = True) -> str:
        """Present, which workflow job downloads it (``jobs``), or what to run; then its note."""
        if self.present:
            state = "present"
        elif jobs and self.job:
            origin = f"{hub_endpoint()}/{self.hub_id}" if self.hub_id else self.source.url
            state = f"missing: job {self.job} downloads it from {origin}"
        else:
            state = f"missing: {self.command}"
        return f"{state}; {self.note}" if self.note else state

    def line(self, jobs: bool = True) -> str:
        """What it is, where, and its :meth:`state`."""
        return f"{self.title} ({self.location}): {self.state(jobs)}"


def lines(inputs: Iterable[ExternalInput], jobs: bool = True) -> list[str]:
    """A line per input, the files of one source in one state on one line (SNLI's three: one)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for item in unique(inputs):
        groups.setdefault((item.title, item.state(jobs)), []).append(item.location)
    return [f"{title} ({', '.join(locations)}): {state}" for (title, state), locations in groups.items()]


def _source_of(path: str) -> tuple[Source, Path] | None:
    """The source that leaves a file of ``path``'s name at ``path``, and the destination it would be fetched into
    (a plain download's: the file itself, of the name it has by default); None for any other file."""
    parts = Path(path).parts
    for source in SOURCES.values():
        if not source.members:
            if Path(path).name == Path(source.default).name:
                return source, Path(path)
            continue
        for member, below in source.members:
            below_parts = Path(below).parts
            if not member.endswith("/") and len(parts) > len(below_parts) and parts[-len(below_parts) :] == below_parts:
                return source, Path(*parts[: -len(below_parts)])
    return None


def file_input(path: str | os.PathLike, what: str) -> ExternalInput:
    """A file a run reads (``what``: the key that names it): one a source fetches is downloaded by a workflow job
    where ``path`` is the source's own place, and by ``consert download-data`` wherever it is."""
    path = str(path)
    found = _source_of(path)
    if found is None:
        return ExternalInput(what, path, Path(path).is_file(), f"put the file there (the config's {what})")
    source, dest = found
    default = Path(dest) == Path(source.default)
    command = f"consert download-data --{source.name}" + ("" if default else f" {dest}")
    job = default and not any(output.exists() for output in source.outputs())  # never over files it did not write
    return ExternalInput(source.title, path, Path(path).is_file(), f"run `{command}`", source if job else None)


def _wordnet_folder(candidate: Path) -> Path | None:
    """The WordNet 3.0 database folder ``candidate`` is or holds (an NLTK data folder's ``corpora/wordnet``)."""
    for folder in (candidate, candidate / "corpora" / "wordnet", candidate / "wordnet"):
        if all((folder / name).is_file() for name in WORDNET_FILES):
            return folder
    return None


def find_wordnet(configured: str | os.PathLike | None = None) -> Path | None:
    """WordNet 3.0's database folder: ``configured`` (a dict folder, or an NLTK data folder), else the first of
    :data:`WORDNET_DEFAULTS` that holds one; ``None`` when none does."""
    candidates = [configured] if configured else [c for c in WORDNET_DEFAULTS if c]
    for candidate in candidates:
        found = _wordnet_folder(Path(candidate).expanduser())
        if found is not None:
            return found
    return None


def wordnet_input(configured: str | os.PathLike | None = None) -> ExternalInput:
    """WordNet 3.0 (AugCSE's antonym switch): the configured folder, else the first found of
    :data:`WORDNET_DEFAULTS`; a workflow job downloads it into the place ``consert download-data --wordnet`` fills
    where the config names that place or none, and nothing is there yet."""
    found = find_wordnet(configured)
    source = SOURCES["wordnet"]
    default = not configured or Path(configured) == Path(source.default)
    location = str(found or configured or source.default)
    command = (
        "run `consert download-data --wordnet"
        + ("`" if default else f" {configured}`")
        + " (or install Debian's wordnet-base)"
    )
    if not found and Path(location).is_dir() and any(Path(location).iterdir()):  # a download would keep its files
        command = f"the folder holds no WordNet 3.0 database ({', '.join(WORDNET_FILES)}): name one that does"
    job = default and found is None and not Path(source.default).exists()  # never over a folder it did not write
    return ExternalInput(source.title, location, found is not None, command, source if job else None)


def spacy_pipeline_input(model: str) -> ExternalInput:
    """An installed spaCy pipeline package (or a pipeline folder), which spaCy's own download installs."""
    folder = Path(model).is_dir()
    present = folder or importlib.util.find_spec(model) is not None
    command = f"run `consert download-data --spacy {model}` (spaCy's own `python -m spacy download {model}`)"
    return ExternalInput(f"spaCy pipeline {model}", model, present, command, is_path=folder)


#: The workflow rule that fetches a hub model into the hub's cache, where snakemake runs (workflow/rules/data.smk).
HUB_MODEL_JOB = "hub_model"


def hub_endpoint() -> str:
    """Where the hub is (``$HF_ENDPOINT``, else huggingface.co), as huggingface_hub reads it."""
    from huggingface_hub import constants

    return constants.ENDPOINT


def missing_message(inputs: Iterable[ExternalInput], jobs: bool = False, dry_run: bool = False) -> str:
    """The missing ones of ``inputs`` in one message, each with what gets it: one line for a command; with
    ``jobs`` (the workflow), a line each, naming the job that downloads it where one does (``dry_run``: what a run
    would stop for)."""
    missing = [item for item in unique(inputs) if not item.present]
    count = f"{len(missing)} input is" if len(missing) == 1 else f"{len(missing)} inputs are"
    if not jobs:
        return f"{count} not on disk: " + "; ".join(lines(missing, jobs=False))
    blocked = blocking(missing)
    stop = "A run would stop before any job" if dry_run else "Stopped before any job"
    head = f"{stop}: {count} not on disk, and no job of this run downloads {len(blocked)} of them:"
    tail = "Get those, then run again (`consert download-data --all` fetches everything the paper config reads)."
    return "\n".join([head, *(f"  {line}" for line in lines(missing)), tail])


def unique(inputs: Iterable[ExternalInput]) -> list[ExternalInput]:
    """``inputs`` without repeats, in their order."""
    return list(dict.fromkeys(inputs))


def blocking(inputs: Sequence[ExternalInput]) -> list[ExternalInput]:
    """The missing inputs no workflow job downloads."""
    return [item for item in inputs if not item.present and not item.job]
