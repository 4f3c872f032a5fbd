"""What the harness reads from outside, fetched from its official sources (needs network).

* SentEval's seven STS sets, as ``data/downstream/get_transfer_data.bash`` makes them: the official archives,
  their files renamed to ``STS.input.*`` / ``STS.gs.*`` (the gold standard; STS13's ``STS.output.*`` are sample
  system outputs, its readme says), the sentence columns Moses-tokenized (``sacremoses``, the Python port) and
  lowercased. Byte differences from SentEval's prepared files are possible: what was written is checked against
  the shipped sha256 manifest, and every file that differs is named (the evaluations refuse such files unless
  allowed, and mark their rows ``data_verified = False``).
* :data:`SOURCES`: SNLI 1.0 and MultiNLI 1.0 (Table 3's supervision), GloVe 840B (Table 2's GloVe row), SimCSE's
  1M Wikipedia sentences (the contrastive family's training text) and WordNet 3.0 (AugCSE's antonym switch), each
  from its authors' archive into the place the paper config names.
* spaCy's ``en_core_web_sm`` (AugCSE's parser-based augmentations) through spaCy's own ``spacy download``.

Every download goes to ``<name>.partial`` beside its target with a progress bar; a broken connection is resumed
with an HTTP ``Range`` request, in the same run (:data:`ATTEMPTS` tries) or the next (the partial file stays);
the size is checked against what the server announced, then the file is renamed into place. Archives are
unpacked into ``.partial`` names and renamed, then deleted: a crash leaves no half-written input where a run
would read it. Nothing in the harness downloads what is already on disk.

``$CONSERT_TEST_MIRROR`` (tests only) serves every official URL from a local server: ``http://HOST/PATH`` is
fetched as ``$CONSERT_TEST_MIRROR/HOST/PATH``.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from consert.data.senteval import (
    BESIDE_CHECKOUT,
    DATA_ENV_VAR,
    DEFAULT_DATA_DIR,
    SICK_SPLITS,
    STS_YEAR_SUBSETS,
    DataFormatError,
    find_data_dir,
    manifest_mismatches,
    resolve_data_dir,
)

#: How the workflow names a data folder (the hint of its data errors).
WORKFLOW_FLAG = "--config data_dir=DIR"
#: Tests only: the base URL of a local server that serves each official URL under ``/HOST/PATH``.
MIRROR_ENV = "CONSERT_TEST_MIRROR"
#: Tries per file before a download gives up (each after the first resumes where the last one broke off), and the
#: seconds waited before the second (doubled before each later one).
ATTEMPTS = 3
BACKOFF = 1.0
#: Answers of a server that is busy or broken for now: tried again, as a broken connection is.
TRANSIENT = (429, 500, 502, 503, 504)
#: Bytes read from the network at a time.
CHUNK = 1 << 20
#: Where archives wait, below the folder they are unpacked into, until they are.
ARCHIVES = ".download"

_STS_ARCHIVES = {
    "STS12": ("http://ixa2.si.ehu.es/stswiki/images/4/40/STS2012-en-test.zip", "test-gold"),
    "STS13": ("http://ixa2.si.ehu.es/stswiki/images/2/2f/STS2013-en-test.zip", "test-gs"),
    "STS14": ("http://ixa2.si.ehu.es/stswiki/images/8/8c/STS2014-en-test.zip", "sts-en-test-gs-2014"),
    "STS15": ("http://ixa2.si.ehu.es/stswiki/images/d/da/STS2015-en-test.zip", "test_evaluation_task2a"),
    "STS16": ("http://ixa2.si.ehu.es/stswiki/images/9/98/STS2016-en-test.zip", "sts2016-english-with-gs-v1.0"),
}
_STSB_ARCHIVE = "http://ixa2.si.ehu.es/stswiki/images/4/48/Stsbenchmark.tar.gz"
_SICK_URL = "https://raw.githubusercontent.com/alvations/stasis/master/SICK-data/{name}"


class DownloadError(OSError):
    """A download that did not complete; the message says what arrived and how to resume."""


def official(url: str) -> str:
    """``url``, or its copy on the test mirror when ``$CONSERT_TEST_MIRROR`` is set."""
    mirror = os.environ.get(MIRROR_ENV, "").rstrip("/")
    if not mirror:
        return url
    parts = urllib.parse.urlsplit(url)
    return f"{mirror}/{parts.netloc}{parts.path}"


def _announced_total(response: http.client.HTTPResponse, have: int) -> int | None:
    """The whole file's size the server announced: ``Content-Range``'s total for a resumed (206) response,
    else ``Content-Length``; ``None`` when it announced none."""
    content_range = response.headers.get("Content-Range", "")
    if response.status == 206 and "/" in content_range and not content_range.endswith("*"):
        return int(content_range.rsplit("/", 1)[1])
    length = response.headers.get("Content-Length")
    return int(length) + have if length else None


def fetch(url: str, target: Path, progress: bool = True) -> Path:
    """Download ``url`` to ``target`` (kept when already there): into ``target.partial``, resumed with an HTTP
    ``Range`` request from where an earlier try (this run's or a killed one's) broke off, the size checked
    against the server's, then renamed onto ``target``. A :class:`DownloadError` after :data:`ATTEMPTS` tries."""
    from tqdm.auto import tqdm

    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    problem = ""
    for attempt in range(ATTEMPTS):
        if attempt:
            time.sleep(BACKOFF * 2 ** (attempt - 1))
        have = partial.stat().st_size if partial.is_file() else 0
        request = urllib.request.Request(official(url), headers={"Range": f"bytes={have}-"} if have else {})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - official URLs
                if have and response.status != 206:  # the server ignored the range: start again
                    have = 0
                total = _announced_total(response, have)
                with (
                    partial.open("ab" if have else "wb") as out,
                    tqdm(
                        total=total, initial=have, unit="B", unit_scale=True, desc=target.name, disable=not progress
                    ) as bar,
                ):
                    for chunk in iter(lambda: response.read(CHUNK), b""):
                        out.write(chunk)
                        bar.update(len(chunk))
        except urllib.error.HTTPError as err:
            whole = err.headers.get("Content-Range", "").rpartition("/")[2] if err.headers else ""
            if err.code == 416 and have and whole == str(have):  # nothing left to send: an earlier try got every byte
                total = have
            elif err.code == 416 and have:  # the kept bytes are not a start of this file (it changed): start again
                partial.unlink()
                problem = f"the {have:,} bytes kept in {partial.name} were not of this file"
                continue
            elif err.code in TRANSIENT:
                problem = f"the server answered {err.code} {err.reason}"
                continue
            else:
                raise DownloadError(f"{url}: the server answered {err.code} {err.reason}") from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as err:
            problem = " ".join(str(getattr(err, "reason", err)).split()) or type(err).__name__
            continue
        size = partial.stat().st_size
        if total is None or size == total:
            partial.replace(target)
            return target
        if size > total:
            partial.unlink()
            raise DownloadError(f"{url}: {size} bytes arrived where the server announced {total}; run it again")
        problem = f"the connection broke off after {size:,} of {total:,} bytes"
    received = partial.stat().st_size if partial.is_file() else 0
    kept = f"{partial} keeps the {received:,} bytes received: run" if received else "nothing arrived: run"
    raise DownloadError(f"{url}: {problem} ({ATTEMPTS} tries); {kept} the same command again to resume")


def _archive(url: str, folder: Path) -> Path:
    """Where the archive of ``url`` waits below ``folder`` until it is unpacked."""
    return folder / ARCHIVES / url.rsplit("/", 1)[-1]


@contextlib.contextmanager
def _opened(archive: Path, url: str, opener):
    """``opener(archive)``; an archive that cannot be read (a download spliced from two versions of the file, a
    server's error page) is removed, so that the next run fetches it again, and named in a :class:`DownloadError`."""
    try:
        handle = opener(archive)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError) as err:
        archive.unlink()
        raise DownloadError(
            f"{url}: the download is not a readable archive ({err}); it was removed: run again"
        ) from None
    with handle:
        yield handle


def _unpack(member: BinaryIO, target: Path) -> None:
    """Stream one archive member to ``target`` (through ``target.partial``)."""
    partial = target.with_name(target.name + ".partial")
    target.parent.mkdir(parents=True, exist_ok=True)
    with partial.open("wb") as out:
        shutil.copyfileobj(member, out, CHUNK)
    partial.replace(target)


@dataclass(frozen=True)
class Source:
    """One input from outside the STS sets: its official archive (or file), and what it leaves on disk.

    ``members`` maps an archive member to its path below the destination folder; a member ending in ``/`` is a
    folder whose files all go there. With no members the download is the file itself (then the destination is
    a file path)."""

    name: str  # the command's flag and the workflow's rule: `consert download-data --NAME`, rule NAME_data
    title: str
    url: str
    default: str  # the destination the paper config names (a folder; the file for a plain download)
    members: tuple[tuple[str, str], ...] = ()

    def outputs(self, dest: str | Path | None = None) -> list[Path]:
        """The files (a folder's: the folder) it leaves below ``dest`` (default: :attr:`default`)."""
        dest = Path(dest or self.default)
        if not self.members:
            return [dest]
        return [dest / below if below else dest for _, below in self.members]

    def present(self, dest: str | Path | None = None) -> bool:
        """Whether everything it leaves is already on disk."""
        return all(path.exists() for path in self.outputs(dest))

    def download(self, dest: str | Path | None = None, progress: bool = True) -> list[Path]:
        """Fetch and unpack into ``dest`` whatever of it is missing; return its outputs."""
        dest = Path(dest or self.default)
        if self.present(dest):
            return self.outputs(dest)
        if not self.members:
            return [fetch(self.url, dest, progress)]
        archive = fetch(self.url, _archive(self.url, dest.parent), progress)  # beside dest: a folder may be dest
        with _opened(archive, self.url, zipfile.ZipFile) as unzipped:
            names = unzipped.namelist()
            for member, below in self.members:
                target = dest / below if below else dest
                if target.exists():
                    continue
                if member.endswith("/"):  # a folder: every file below it, renamed into place together
                    staging = target.with_name(target.name + ".partial")
                    shutil.rmtree(staging, ignore_errors=True)
                    files = [n for n in names if n.startswith(member) and not n.endswith("/")]
                    if not files:
                        raise DownloadError(f"{self.url}: the archive has no folder {member}")
                    for name in files:
                        with unzipped.open(name) as handle:
                            _unpack(handle, staging / name[len(member) :])
                    staging.rename(target)
                elif member in names:
                    with unzipped.open(member) as handle:
                        _unpack(handle, target)
                else:
                    raise DownloadError(f"{self.url}: the archive has no {member}")
        archive.unlink()
        with contextlib.suppress(OSError):  # the archives' folder, once no other archive waits in it
            archive.parent.rmdir()
        return self.outputs(dest)


def _zip_files(prefix: str, names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Members ``prefix/NAME`` unpacked as ``prefix/NAME`` (the archive's own layout)."""
    return tuple((f"{prefix}/{name}", f"{prefix}/{name}") for name in names)


#: SimCSE's training text (1M English Wikipedia sentences), from the authors' data/download_wiki.sh.
WIKI1M_URL = "https://huggingface.co/datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt"
#: Every input of the paper config beside the STS sets that a download can fetch, by name.
SOURCES: dict[str, Source] = {
    source.name: source
    for source in (
        Source(
            "snli",
            "SNLI 1.0",
            "https://nlp.stanford.edu/projects/snli/snli_1.0.zip",  # nlp.stanford.edu/projects/snli
            "data/nli",
            _zip_files("snli_1.0", ("snli_1.0_train.jsonl", "snli_1.0_dev.jsonl", "snli_1.0_test.jsonl")),
        ),
        Source(
            "multinli",
            "MultiNLI 1.0",
            "https://cims.nyu.edu/~sbowman/multinli/multinli_1.0.zip",  # cims.nyu.edu/~sbowman/multinli
            "data/nli",
            _zip_files(
                "multinli_1.0",
                ("multinli_1.0_train.jsonl", "multinli_1.0_dev_matched.jsonl", "multinli_1.0_dev_mismatched.jsonl"),
            ),
        ),
        Source(
            "glove",
            "GloVe 840B (300d)",
            "https://nlp.stanford.edu/data/glove.840B.300d.zip",  # nlp.stanford.edu/projects/glove
            "data/glove",
            (("glove.840B.300d.txt", "glove.840B.300d.txt"),),
        ),
        Source("wiki1m", "SimCSE's 1M Wikipedia sentences", WIKI1M_URL, "data/wiki1m_for_simcse.txt"),
        Source(
            "wordnet",
            "WordNet 3.0",
            # NLTK's data index (raw.githubusercontent.com/nltk/nltk_data/gh-pages/index.xml)
            "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/wordnet.zip",
            "data/wordnet",
            (("wordnet/", ""),),
        ),
    )
}
#: The spaCy pipeline AugCSE's parser-based augmentations use (NL-Augmenter's initialize.py).
SPACY_MODEL = "en_core_web_sm"


def spacy_download_command(model: str = SPACY_MODEL) -> list[str]:
    """spaCy's own download of ``model`` (it installs the package with pip): the command ``--spacy`` runs."""
    return [sys.executable, "-m", "spacy", "download", model]


def download_spacy_model(model: str = SPACY_MODEL) -> None:
    """Install ``model`` with spaCy's own download (needs network); a :class:`DownloadError` when it fails."""
    result = subprocess.run(spacy_download_command(model), check=False)
    if result.returncode != 0:
        raise DownloadError(f"`{' '.join(spacy_download_command(model))}` failed (exit {result.returncode})")


def _tokenizer():
    try:
        from sacremoses import MosesTokenizer
    except ImportError:
        raise RuntimeError("`consert download-data` tokenizes like SentEval: pip install sacremoses") from None
    moses = MosesTokenizer(lang="en")
    return lambda text: moses.tokenize(text, escape=False, return_str=True).lower()


def _find(folder: Path, name: str) -> Path:
    matches = sorted(folder.rglob(name))
    if not matches:
        raise DownloadError(f"{name} not found in the downloaded archive under {folder}")
    return matches[0]


def _sts_year(tokenize, year: str, archive_path: Path, scratch: Path, staging: Path) -> None:
    """One STS year's archive into ``staging/STS/<year>-en-test``: inputs tokenized, the gold standard as it is."""
    unpacked = scratch / year
    with _opened(archive_path, archive_path.name, zipfile.ZipFile) as archive:
        archive.extractall(unpacked)
    target = staging / "STS" / f"{year}-en-test"
    target.mkdir(parents=True)
    for subset in STS_YEAR_SUBSETS[year]:
        source_input = _find(unpacked, f"STS*.input.{subset}.txt")  # STS2016.input.* in STS16's archive
        shutil.copy(_find(unpacked, f"STS*.gs.{subset}.txt"), target / f"STS.gs.{subset}.txt")
        rows = source_input.read_text(encoding="utf-8").splitlines()
        tokenized = ["\t".join(tokenize(col) for col in row.split("\t")[:2]) for row in rows]
        (target / f"STS.input.{subset}.txt").write_text("\n".join(tokenized) + "\n", encoding="utf-8")


def download_senteval(dest: Path, progress: bool = True) -> list[str]:
    """Fill ``dest/downstream`` with STS12-16, STS-B and SICK (kept when ``STS/`` is there); return the files that
    differ from SentEval's prepared ones (the shipped manifest), each ``"PATH: why"``. Writes atomically: the
    folder appears whole or not at all; archives wait in ``dest/.download`` until every one has arrived."""
    tokenize = _tokenizer()
    final = dest / "downstream"
    if (final / "STS").is_dir():
        return []
    dest.mkdir(parents=True, exist_ok=True)
    sick = [_SICK_URL.format(name=name) for name in SICK_SPLITS.values()]
    archives = [*(url for url, _ in _STS_ARCHIVES.values()), _STSB_ARCHIVE, *sick]
    for url in archives:  # every file first: a broken connection resumes without unpacking again
        fetch(url, _archive(url, dest), progress)
    scratch = dest / ".unpacking"
    shutil.rmtree(scratch, ignore_errors=True)
    staging = scratch / "downstream"
    for year, (url, _) in _STS_ARCHIVES.items():
        _sts_year(tokenize, year, _archive(url, dest), scratch, staging)
    stsb = scratch / "stsb"
    with _opened(_archive(_STSB_ARCHIVE, dest), _STSB_ARCHIVE, tarfile.open) as archive:
        archive.extractall(stsb, filter="data")
    (staging / "STS" / "STSBenchmark").mkdir(parents=True)
    for split in ("train", "dev", "test"):
        rows = _find(stsb, f"sts-{split}.csv").read_text(encoding="utf-8").splitlines()
        out = []
        for row in rows:
            fields = row.split("\t")
            out.append("\t".join(fields[:5] + [tokenize(fields[5]), tokenize(fields[6])]))
        (staging / "STS" / "STSBenchmark" / f"sts-{split}.csv").write_text("\n".join(out) + "\n", encoding="utf-8")
    (staging / "SICK").mkdir()
    for url in sick:
        shutil.copy(_archive(url, dest), staging / "SICK" / url.rsplit("/", 1)[-1])
    written = {
        str(path.relative_to(staging)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(staging.rglob("*"))
        if path.is_file()
    }
    staging.rename(final)
    shutil.rmtree(scratch, ignore_errors=True)
    for url in archives:  # its own files only: another download may wait in the same folder
        _archive(url, dest).unlink()
    with contextlib.suppress(OSError):
        (dest / ARCHIVES).rmdir()
    return manifest_mismatches(written)


def find_senteval(configured: str | Path, checkout: Path) -> Path | None:
    """The SentEval data folder for the workflow config's ``data_dir``, if one is on disk; never downloads.

    A ``data_dir`` other than the default (``data/senteval``) is used as given (a
    :class:`~consert.data.senteval.DataFormatError` when it holds no data); the default is looked for as
    every command looks (:func:`~consert.data.senteval.find_data_dir`); ``None`` when none holds data.
    """
    if Path(configured) != DEFAULT_DATA_DIR:
        return resolve_data_dir(configured, flag=WORKFLOW_FLAG)
    return find_data_dir(checkout, flag=WORKFLOW_FLAG)


def locate_senteval(configured: str | Path, checkout: Path, download: bool = True) -> Path:
    """The SentEval data folder a run reads, for the config's ``data_dir``: :func:`find_senteval`'s, else
    SentEval's STS files downloaded into the default folder (checked against the shipped manifest when loaded).
    With no data and no network, a :class:`~consert.data.senteval.DataFormatError` says in one line what to do.
    """
    found = find_senteval(configured, checkout)
    if found is not None:
        return found
    configured = Path(configured)
    if download:
        try:
            download_senteval(configured)
            return resolve_data_dir(configured)
        except (OSError, RuntimeError) as err:  # no network (URLError is an OSError), no sacremoses
            reason = f"the download failed: {str(err).splitlines()[0]}"
    else:
        reason = "downloading is off"
    looked = ", ".join([str(configured), *(str((checkout / relative).resolve()) for relative in BESIDE_CHECKOUT)])
    raise DataFormatError(
        configured,
        f"no SentEval data (looked in ${DATA_ENV_VAR}, {looked}) and {reason}. Run `consert download-data` "
        f"where there is network, or point at a SentEval data folder with ${DATA_ENV_VAR} or {WORKFLOW_FLAG}",
    )
