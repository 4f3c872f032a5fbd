"""SentEval data layer: the seven STS evaluation sets read from SentEval's on-disk layout.

Layout (what SentEval's ``data/downstream/get_transfer_data.bash`` leaves on disk)::

    <root>/downstream/STS/STS12-en-test/STS.input.<subset>.txt   two tab-separated sentences a line
    <root>/downstream/STS/STS12-en-test/STS.gs.<subset>.txt      gold score a line, blank = unscored
    ...  STS13 .. STS16 likewise
    <root>/downstream/STS/STSBenchmark/sts-{train,dev,test}.csv  tab-separated, score col 4, sentences 5, 6
    <root>/downstream/SICK/SICK_{train,trial,test_annotated}.txt header row; A, B, relatedness, entailment

``<root>`` may also be the ``downstream`` folder itself. Sentences are whitespace-normalised the way
SentEval's batchers see them (``" ".join(s.split())``). Every file read is recorded so results can
carry a fingerprint of exactly the data they came from.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

#: Environment variable naming the SentEval data directory when no explicit path is given.
DATA_ENV_VAR = "CONSERT_DATA"
#: Where ``consert download-data`` puts the data when neither an argument nor the variable is set.
DEFAULT_DATA_DIR = Path("data") / "senteval"

#: Subsets of each STS year, as SentEval evaluates them (STS13 without the licensed SMT subset).
STS_YEAR_SUBSETS: dict[str, tuple[str, ...]] = {
    "STS12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "STS13": ("FNWN", "headlines", "OnWN"),
    "STS14": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    "STS15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "STS16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}
STSB_SPLITS: dict[str, str] = {"train": "sts-train.csv", "dev": "sts-dev.csv", "test": "sts-test.csv"}
SICK_SPLITS: dict[str, str] = {
    "train": "SICK_train.txt",
    "trial": "SICK_trial.txt",
    "test": "SICK_test_annotated.txt",
}
SCORE_RANGE = (0.0, 5.0)
SICK_RELATEDNESS_RANGE = (1.0, 5.0)
NLI_LABELS = ("ENTAILMENT", "NEUTRAL", "CONTRADICTION")


class DataFormatError(ValueError):
    """A data file is missing or malformed; says which file, which line and what was expected."""

    def __init__(self, path: Path | str, message: str, line: int | None = None):
        self.path = Path(path)
        self.line = line
        self.reason = message
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class ScoredPair:
    """Two sentences and their gold similarity score."""

    sent1: str
    sent2: str
    score: float


@dataclass(frozen=True)
class NliPair:
    """A premise/hypothesis pair with its NLI label (one of ``NLI_LABELS``)."""

    premise: str
    hypothesis: str
    label: str


@dataclass
class StsData:
    """One evaluation set: scored pairs per subset (STS years) or per split (STS-B, SICK-R).

    ``eval_subsets`` names the groups that are evaluated (all subsets of a year; the test split of
    STS-B and SICK-R). ``group_texts`` holds every input sentence of each group's file, in file order, both
    sides, unscored pairs included, without dedup; :attr:`texts` all of them, group after group: the unlabeled
    corpus of the paper's Table 1.
    """

    name: str
    groups: dict[str, list[ScoredPair]]
    eval_subsets: tuple[str, ...]
    group_texts: dict[str, list[str]] = field(default_factory=dict)
    #: SICK only: entailment labels of each split, aligned with ``groups``.
    nli: dict[str, list[NliPair]] = field(default_factory=dict)

    @property
    def texts(self) -> list[str]:
        """Every input sentence of every file, group after group in ``group_texts``' order (the files')."""
        return [text for texts in self.group_texts.values() for text in texts]

    @property
    def eval_groups(self) -> dict[str, list[ScoredPair]]:
        """The scored pairs that the STS protocol evaluates, by subset."""
        return {name: self.groups[name] for name in self.eval_subsets}

    def scored_texts(self) -> list[str]:
        """Both sentences of every scored pair of every split or subset, in file order, no dedup.

        What BERT-whitening (and BERT-flow's "target, train+dev+test") fit on per task: STS-B
        train+dev+test (17,256), SICK-R train+trial+test (19,854), all scored pairs of a year.
        """
        return [s for pairs in self.groups.values() for p in pairs for s in (p.sent1, p.sent2)]

    def eval_sentences(self) -> list[str]:
        """Every sentence of the evaluated pairs, each once, in a fixed order."""
        return list(dict.fromkeys(s for pairs in self.eval_groups.values() for p in pairs for s in (p.sent1, p.sent2)))


class DataIntegrityError(DataFormatError):
    """Data files differ from the SentEval files the paper used (by sha256); lists every file."""


#: Set to 1 to evaluate on files that differ from SentEval's (your own data, a re-tokenization).
ALLOW_UNVERIFIED_ENV_VAR = "CONSERT_ALLOW_UNVERIFIED_DATA"


@dataclass
class SentEvalData:
    """The seven STS sets, the sha256 of every file read, and whether they match SentEval's files."""

    root: Path
    sets: dict[str, StsData]
    file_hashes: dict[str, str]
    verified: bool = False

    @property
    def fingerprint(self) -> str:
        """sha256 over (relative path, file sha256) of every file read: identifies the data exactly."""
        digest = hashlib.sha256()
        for name in sorted(self.file_hashes):
            digest.update(f"{name}\t{self.file_hashes[name]}\n".encode())
        return digest.hexdigest()

    def select(self, tasks: Sequence[str] | None = None, split: str = "test") -> SentEvalData:
        """The same data evaluating only ``tasks`` (default: all seven) on ``split``: ``test`` (the protocol),
        or ``dev`` (STS-B's dev split and SICK's trial split, SimCSE's and SentEval's dev sets)."""
        tasks = list(tasks or self.sets)
        unknown = [name for name in tasks if name not in self.sets]
        if unknown:
            raise ValueError(f"unknown task(s) {', '.join(unknown)}: expected some of {', '.join(self.sets)}")
        if split not in ("test", "dev"):
            raise ValueError(f"unknown split {split!r}: expected test or dev")
        if split == "dev":
            without = [name for name in tasks if TASKS[name].dev_split is None]
            if without:
                with_dev = " and ".join(name for name, task in TASKS.items() if task.dev_split)
                raise ValueError(f"no dev split for {', '.join(without)}: --split dev evaluates {with_dev}")
        sets = {
            name: replace(self.sets[name], eval_subsets=(TASKS[name].dev_split,)) if split == "dev" else self.sets[name]
            for name in tasks
        }
        return replace(self, sets=sets)

    def unlabeled_texts(self) -> list[str]:
        """Every input sentence of the paper's sets (the seven: 89,192 for SentEval's files), in a fixed order.

        The sets are those :data:`TASKS` declares ``in_paper`` when called (:func:`paper_tasks`), not when
        this module was imported: a set declared later joins the corpus as its declaration says."""
        return [text for name in paper_tasks() if name in self.sets for text in self.sets[name].texts]


def normalize_sentence(text: str) -> str:
    """Collapse whitespace as SentEval's ``s.split()`` followed by ``" ".join`` does."""
    return " ".join(text.split())


#: SentEval data folders beside a checkout, found without being named: this project's shared data folder,
#: and the ``data`` folder of a SentEval clone.
BESIDE_CHECKOUT = ("../shared/data/senteval", "../SentEval/data")
#: The folder this package is installed from (a clone, for an editable install).
PACKAGE_CHECKOUT = Path(__file__).resolve().parents[2]


def _data_root(candidate: Path) -> Path | None:
    """The folder holding ``STS/`` and ``SICK/``: ``candidate`` or its ``downstream`` subfolder."""
    for root in (candidate / "downstream", candidate):
        if (root / "STS").is_dir():
            return root
    return None


def _given_data_dir(candidate: Path, source: str, flag: str) -> Path:
    root = _data_root(candidate)
    if root is not None:
        return root
    if candidate.is_file():
        raise DataFormatError(candidate, f"a file, not a folder ({source}): {flag} expects the SentEval data folder")
    raise DataFormatError(
        candidate,
        f"no SentEval data directory here ({source}); expected STS/ and SICK/ below it or below downstream/",
    )


def find_data_dir(checkout: Path | None = None, flag: str = "--data DIR") -> Path | None:
    """The SentEval data folder found without being named, or ``None``: ``$CONSERT_DATA`` when set (it must
    hold the data), else ``data/senteval``, else a folder of :data:`BESIDE_CHECKOUT` next to the working
    directory or to ``checkout`` (default: the clone this package is installed from)."""
    if os.environ.get(DATA_ENV_VAR):
        return _given_data_dir(Path(os.environ[DATA_ENV_VAR]), f"${DATA_ENV_VAR}", flag)
    roots = dict.fromkeys([Path.cwd().resolve(), (checkout or PACKAGE_CHECKOUT).resolve()])
    for candidate in (DEFAULT_DATA_DIR, *((root / beside).resolve() for root in roots for beside in BESIDE_CHECKOUT)):
        root = _data_root(candidate)
        if root is not None:
            return root
    return None


def resolve_data_dir(
    path: str | os.PathLike | None = None, flag: str = "--data DIR", checkout: Path | None = None
) -> Path:
    """The SentEval data directory: ``path`` if given, else the one :func:`find_data_dir` finds.

    Returns the folder that contains ``STS/`` and ``SICK/`` (accepting either the SentEval ``data``
    folder or its ``downstream`` subfolder). Never downloads: no data raises a one-line
    :class:`DataFormatError` that names where it looked and how to get the data (``flag``: the option of
    the command at hand that names a folder).
    """
    if path is not None:
        return _given_data_dir(Path(path), "the given path", flag)
    found = find_data_dir(checkout, flag)
    if found is not None:
        return found
    beside = [str(((checkout or PACKAGE_CHECKOUT) / relative).resolve()) for relative in BESIDE_CHECKOUT]
    looked = ", ".join([str(DEFAULT_DATA_DIR), *beside])
    raise DataFormatError(
        DEFAULT_DATA_DIR,
        f"no SentEval data (looked in {looked}, and beside the working directory); pass {flag}, "
        f"set ${DATA_ENV_VAR}, or run `consert download-data` (needs network) to fill ./data/senteval",
    )


#: The characters besides ``\n`` and ``\r`` that ``str.splitlines`` (and so SentEval's reader) breaks lines at.
OTHER_LINE_BREAKS = {
    "\v": "a vertical tab (U+000B)",
    "\f": "a form feed (U+000C)",
    "\x1c": "a file separator (U+001C)",
    "\x1d": "a group separator (U+001D)",
    "\x1e": "a record separator (U+001E)",
    "\x85": "a next-line character (U+0085)",
    "\u2028": "a line separator (U+2028)",
    "\u2029": "a paragraph separator (U+2029)",
}


class _FileReader:
    """Reads text files as UTF-8 lines, records their sha256, and turns problems into DataFormatError."""

    def __init__(self, root: Path):
        self.root = root
        self.hashes: dict[str, str] = {}

    def lines(self, path: Path) -> list[str]:
        if not path.is_file():
            raise DataFormatError(path, "file not found")
        raw = path.read_bytes()
        self.hashes[str(path.relative_to(self.root))] = hashlib.sha256(raw).hexdigest()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            line = raw[: err.start].count(b"\n") + 1
            raise DataFormatError(path, f"not valid UTF-8 (byte {err.start})", line) from None
        lines = [line.removesuffix("\r") for line in text.split("\n")]
        if lines and not lines[-1]:  # the newline ending the last line
            lines.pop()
        for number, line in enumerate(lines, start=1):
            breaks = [c for c in line if c in OTHER_LINE_BREAKS]
            if breaks:
                raise DataFormatError(
                    path,
                    f"holds {OTHER_LINE_BREAKS[breaks[0]]}, a line break to Python's and SentEval's readers: expected "
                    "one pair (or score) a line",
                    number,
                )
        if not lines:
            raise DataFormatError(path, "file is empty")
        return lines


#: A gold score as SentEval's files write it: ASCII digits, optionally a point and more digits ("4", "3.8", "4.800").
#: ``float()`` alone would also read "0_5" as 5, "٤" (an Arabic-Indic 4) as 4, "nan", "inf" and "1e0".
GOLD_SCORE = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def _parse_score(text: str, path: Path, line: int, valid: tuple[float, float]) -> float:
    if not GOLD_SCORE.fullmatch(text):
        raise DataFormatError(
            path, f"expected a gold score of ASCII digits with an optional decimal point, found {text!r}", line
        )
    score = float(text)
    if not valid[0] <= score <= valid[1]:
        raise DataFormatError(path, f"score {score} outside [{valid[0]}, {valid[1]}]", line)
    return score


def _split_fields(row: str, path: Path, line: int, count: int, exact: bool) -> list[str]:
    fields = row.split("\t")
    if len(fields) < count or (exact and len(fields) != count):
        want = f"{count}" if exact else f"at least {count}"
        raise DataFormatError(path, f"expected {want} tab-separated fields, found {len(fields)}", line)
    return fields


def load_sts_year(reader: _FileReader, year_dir: Path, name: str, subsets: tuple[str, ...]) -> StsData:
    """Read one STS year: ``STS.input.<subset>.txt`` with its ``STS.gs.<subset>.txt`` per subset."""
    groups: dict[str, list[ScoredPair]] = {}
    texts: dict[str, list[str]] = {}
    for subset in subsets:
        input_path = year_dir / f"STS.input.{subset}.txt"
        gold_path = year_dir / f"STS.gs.{subset}.txt"
        inputs, golds = reader.lines(input_path), reader.lines(gold_path)
        if len(inputs) != len(golds):
            raise DataFormatError(
                gold_path,
                f"has {len(golds)} lines but {input_path.name} has {len(inputs)}; expected one gold "
                "line (possibly blank) per sentence pair",
            )
        pairs, texts[subset] = [], []
        for number, (row, gold) in enumerate(zip(inputs, golds, strict=True), start=1):
            sent1, sent2 = (normalize_sentence(s) for s in _split_fields(row, input_path, number, 2, exact=True))
            texts[subset].extend((sent1, sent2))
            if gold.strip():
                pairs.append(ScoredPair(sent1, sent2, _parse_score(gold.strip(), gold_path, number, SCORE_RANGE)))
        groups[subset] = pairs
    return StsData(name, groups, eval_subsets=subsets, group_texts=texts)


def load_stsb(reader: _FileReader, folder: Path) -> StsData:
    """Read STS-B: score in column 4, sentences in columns 5 and 6 (0-based); later columns ignored."""
    groups: dict[str, list[ScoredPair]] = {}
    for split, filename in STSB_SPLITS.items():
        path = folder / filename
        pairs = []
        for number, row in enumerate(reader.lines(path), start=1):
            fields = _split_fields(row, path, number, 7, exact=False)
            pair = ScoredPair(
                normalize_sentence(fields[5]),
                normalize_sentence(fields[6]),
                _parse_score(fields[4].strip(), path, number, SCORE_RANGE),
            )
            pairs.append(pair)
        groups[split] = pairs
    return StsData(STSB, groups, eval_subsets=("test",), group_texts=_pair_texts(groups))


def _pair_texts(groups: dict[str, list[ScoredPair]]) -> dict[str, list[str]]:
    """Both sentences of every pair of each group, in order (a file whose every pair is scored)."""
    return {name: [s for pair in pairs for s in (pair.sent1, pair.sent2)] for name, pairs in groups.items()}


def load_sick(reader: _FileReader, folder: Path) -> StsData:
    """Read SICK: a header row, then pair_ID, sentence_A, sentence_B, relatedness, entailment label."""
    groups: dict[str, list[ScoredPair]] = {}
    nli: dict[str, list[NliPair]] = {}
    for split, filename in SICK_SPLITS.items():
        path = folder / filename
        lines = reader.lines(path)
        header = lines[0].split("\t")
        if header[:5] != ["pair_ID", "sentence_A", "sentence_B", "relatedness_score", "entailment_judgment"]:
            raise DataFormatError(
                path, "expected header pair_ID, sentence_A, sentence_B, relatedness_score, entailment_judgment", 1
            )
        pairs, labelled = [], []
        for number, row in enumerate(lines[1:], start=2):
            fields = _split_fields(row, path, number, 5, exact=True)
            sent1, sent2 = normalize_sentence(fields[1]), normalize_sentence(fields[2])
            label = fields[4].strip().upper()
            if label not in NLI_LABELS:
                raise DataFormatError(
                    path, f"expected an entailment label in {NLI_LABELS}, found {fields[4]!r}", number
                )
            pairs.append(
                ScoredPair(sent1, sent2, _parse_score(fields[3].strip(), path, number, SICK_RELATEDNESS_RANGE))
            )
            labelled.append(NliPair(sent1, sent2, label))
        groups[split], nli[split] = pairs, labelled
    return StsData("SICK-R", groups, eval_subsets=("test",), group_texts=_pair_texts(groups), nli=nli)


#: The shipped manifest of SentEval's prepared files, as the package holds it.
MANIFEST = "consert/data/manifests/senteval_sts.json"


def shipped_manifest() -> dict[str, str]:
    """The sha256 of every file of SentEval's prepared data (STS12-16, STS-B, SICK) by its path below
    ``downstream`` (:data:`MANIFEST`)."""
    import json
    from importlib import resources

    return json.loads(resources.files("consert.data.manifests").joinpath("senteval_sts.json").read_text())["files"]


def manifest_mismatches(file_hashes: dict[str, str]) -> list[str]:
    """Files whose sha256 differs from the manifest of SentEval's files (or that it does not know)."""
    expected = shipped_manifest()
    problems = []
    for name, digest in sorted(file_hashes.items()):
        if name not in expected:
            problems.append(f"{name}: not among SentEval's files")
        elif expected[name] != digest:
            problems.append(f"{name}: sha256 {digest[:12]}... expected {expected[name][:12]}...")
    return problems


#: STS-B's name among the sets (its column in the paper's tables, its key in :data:`TASKS` and in results).
STSB = "STSb"


@dataclass(frozen=True)
class StsTask:
    """One evaluation set, declared once (as an mteb task's metadata): how it is read from the data folder,
    its dev split (then its groups are ``train``, the dev split and ``test``), its names elsewhere, mteb's
    task and the dataset revision it pins (where mteb's pairs and gold scores are the SentEval set's),
    whether it is one of the paper's seven sets (a column of its tables and a seventh of its Avg), and whether
    its dev split is the dev evaluation that selects checkpoints (:func:`dev_task`; one set declares it)."""

    name: str
    load: Callable[[_FileReader, Path], StsData]  # (the reader, the folder holding STS/ and SICK/) -> the set
    dev_split: str | None = None
    aliases: tuple[str, ...] = ()  # SentEval's and SimCSE's task names
    mteb: tuple[str, str] | None = None  # (mteb's task name, the dataset revision mteb pins)
    in_paper: bool = True
    selects_checkpoints: bool = False


def _sts_year(name: str, mteb_revision: str) -> StsTask:
    """An STS year of SentEval's layout: its subsets as SentEval evaluates them."""

    def load(reader: _FileReader, root: Path) -> StsData:
        return load_sts_year(reader, root / "STS" / f"{name}-en-test", name, STS_YEAR_SUBSETS[name])

    return StsTask(name, load, mteb=(name, mteb_revision))


#: Every evaluation set, in the paper's column order. SICK-R has no mteb task here: mteb scores all 9,927
#: SICK pairs, SentEval its 4,927 test pairs.
TASKS: dict[str, StsTask] = {
    task.name: task
    for task in (
        _sts_year("STS12", "a0d554a64d88156834ff5ae9920b964011b16384"),
        _sts_year("STS13", "7e90230a92c190f1bf69ae9002b8cea547a64cca"),
        _sts_year("STS14", "6031580fec1f6af667f0bd2da0a551cf4f0b2375"),
        _sts_year("STS15", "ae752c7c21bf194d8b67fd573edf7ae58183cbe3"),
        _sts_year("STS16", "4d8694f8f0e0100860b497b999b3dbed754a0513"),
        StsTask(
            STSB,
            lambda reader, root: load_stsb(reader, root / "STS" / "STSBenchmark"),
            dev_split="dev",
            aliases=("STSBenchmark",),
            mteb=("STSBenchmark", "b0fddb56ed78048fa8b90373c8a3cfc37b684831"),
            # the authors' choice: ConSERT selects its checkpoints on STS-B's dev split (the SG-OPT baseline too)
            selects_checkpoints=True,
        ),
        # SentEval's SICK "trial" split is its dev set
        StsTask(
            "SICK-R",
            lambda reader, root: load_sick(reader, root / "SICK"),
            dev_split="trial",
            aliases=("SICKRelatedness",),
        ),  # fmt: skip
    )
}


def paper_tasks() -> tuple[str, ...]:
    """The sets :data:`TASKS` declares ``in_paper`` now, in its order: those the Avg averages and the training
    corpus holds. Read at each call, so that a set declared after import counts as its declaration says."""
    return tuple(name for name, task in TASKS.items() if task.in_paper)


#: The paper's seven sets, in its column order: the columns of its tables (and the default sets to load).
#: Fixed at import; the Avg and the corpus follow :func:`paper_tasks`, which reads :data:`TASKS` when called.
DATASETS: tuple[str, ...] = paper_tasks()
#: The set the paper's per-pair figures plot: Figure 1 (gold against predicted similarity) and Figure 4 (the
#: top-k frequency masking curve, its token frequencies counted on this set's test split) are on STS-B test.
#: Not the dev task (:func:`dev_task`), though the two are the same set.
FIGURE_TASK = STSB
#: Other names of the sets: SentEval's and SimCSE's task names (mteb's for STS-B).
TASK_ALIASES: dict[str, str] = {alias: task.name for task in TASKS.values() for alias in task.aliases}


def dev_task() -> StsTask:
    """The set whose dev split selects checkpoints (the one :data:`TASKS` declares ``selects_checkpoints``)."""
    chosen = [task for task in TASKS.values() if task.selects_checkpoints]
    if len(chosen) != 1 or chosen[0].dev_split is None:
        raise ValueError(f"expected one set with a dev split to select checkpoints, found {[t.name for t in chosen]}")
    return chosen[0]


def dev_pairs(data: SentEvalData, limit: int | None = None) -> list[ScoredPair]:
    """The dev evaluation's pairs: the first ``limit`` (default: all) of :func:`dev_task`'s dev split."""
    task = dev_task()
    return data.sets[task.name].groups[task.dev_split][:limit]


def load_senteval(
    path: str | os.PathLike | None = None,
    datasets: tuple[str, ...] = DATASETS,
    allow_unverified: bool | None = None,
    flag: str = "--data DIR",
) -> SentEvalData:
    """Load the STS evaluation sets from a SentEval data directory (see :func:`resolve_data_dir`).

    Every file is checked against the sha256 manifest of the files the paper used: a truncated
    download or a different tokenization raises :class:`DataIntegrityError` naming each file,
    unless ``allow_unverified`` (default: ``$CONSERT_ALLOW_UNVERIFIED_DATA``) is set, in which
    case the data loads with ``verified = False`` and every result says so. ``flag`` names the option that
    gives ``path`` in the command at hand (the hint of a missing folder).
    """
    root = resolve_data_dir(path, flag)
    unknown = set(datasets) - set(TASKS)
    if unknown:
        raise ValueError(f"unknown datasets {sorted(unknown)}; choose from {tuple(TASKS)}")
    reader = _FileReader(root)
    sets = {name: TASKS[name].load(reader, root) for name in datasets}
    problems = manifest_mismatches(reader.hashes)
    if allow_unverified is None:
        allow_unverified = os.environ.get(ALLOW_UNVERIFIED_ENV_VAR, "0") not in ("0", "", "false")
    if problems and not allow_unverified:
        raise DataIntegrityError(
            root,
            "files differ from SentEval's (the paper's) data:\n  " + "\n  ".join(problems) + "\nIf you mean to use "
            f"other files, set {ALLOW_UNVERIFIED_ENV_VAR}=1 (results then carry data_verified=False).",
        )
    return SentEvalData(root=root, sets=sets, file_hashes=reader.hashes, verified=not problems)
