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
with an HTTP ``Range`` request, in the same run (:data:`ATTEMPTS` tries) or the next (the partial file stays, and
beside it the server's validator, its ``ETag`` or ``Last-Modified``, sent as ``If-Range``: a file that changed on the
server is fetched whole again, never spliced). A download is called ready only once it is verified
(:class:`Expected`): its pinned sha256 and size where a public record gives them (SNLI, MultiNLI; SICK's files by the
shipped manifest); else its own checks (every zip member against its CRC, a gzip stream to its end, the text the
paper's copy is: wiki1m's 1,000,000 lines, GloVe's 2,196,017 lines of a word and 300 numbers, WordNet's database
files) and, after its first download, the sha256 that download recorded beside the data. A body the server gave no
length for is complete only when these checks pass. A file that fails is removed and named in one line with what to
run. Archives are unpacked into ``.partial`` names and renamed, then deleted: a crash leaves no half-written input
where a run would read it. Nothing in the harness downloads what is already on disk.

``$CONSERT_TEST_MIRROR`` (tests only) serves every official URL from a local server: ``http://HOST/PATH`` is
fetched as ``$CONSERT_TEST_MIRROR/HOST/PATH``; ``$CONSERT_TEST_DOWNLOADS`` (tests only) names a JSON file of what
each URL's download must be (:func:`expected_of`), standing in for the shipped pins and counts.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import gzip
import hashlib
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

import numpy as np

from consert.data.archives import NoSpace, UnsafeArchive, check_free_space, checked_members, inside
from consert.data.senteval import (
    BESIDE_CHECKOUT,
    DATA_ENV_VAR,
    DEFAULT_DATA_DIR,
    MANIFEST,
    SICK_SPLITS,
    STS_YEAR_SUBSETS,
    DataFormatError,
    find_data_dir,
    manifest_mismatches,
    resolve_data_dir,
    shipped_manifest,
)

#: How the workflow names a data folder (the hint of its data errors).
WORKFLOW_FLAG = "--config data_dir=DIR"
#: Tests only: the base URL of a local server that serves each official URL under ``/HOST/PATH``.
MIRROR_ENV = "CONSERT_TEST_MIRROR"
#: Tests only: a JSON file ``{url: {"sha256": ..., "size": ..., "lines": ...}}`` of what each download must be, in
#: place of the shipped pins and counts (a URL it does not list is unpinned there, with the shipped count).
TEST_EXPECTED_ENV = "CONSERT_TEST_DOWNLOADS"
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
#: The most characters of a network fault's own text that an error line quotes.
MAX_REASON = 200

_STS_ARCHIVES = {
    "STS12": ("http://ixa2.si.ehu.es/stswiki/images/4/40/STS2012-en-test.zip", "test-gold"),
    "STS13": ("http://ixa2.si.ehu.es/stswiki/images/2/2f/STS2013-en-test.zip", "test-gs"),
    "STS14": ("http://ixa2.si.ehu.es/stswiki/images/8/8c/STS2014-en-test.zip", "sts-en-test-gs-2014"),
    "STS15": ("http://ixa2.si.ehu.es/stswiki/images/d/da/STS2015-en-test.zip", "test_evaluation_task2a"),
    "STS16": ("http://ixa2.si.ehu.es/stswiki/images/9/98/STS2016-en-test.zip", "sts2016-english-with-gs-v1.0"),
}
_STSB_ARCHIVE = "http://ixa2.si.ehu.es/stswiki/images/4/48/Stsbenchmark.tar.gz"
_SICK_URL = "https://raw.githubusercontent.com/alvations/stasis/master/SICK-data/{name}"


def unreachable(err: BaseException) -> bool:
    """Whether ``err`` says the network failed (no network, a server down), where a data folder on disk is the way
    around it; not a file that arrived wrong, a full disk or an archive refused, each with its own line."""
    return isinstance(err, urllib.error.URLError) or bool(getattr(err, "unreachable", False))


class DownloadError(OSError):
    """A download that did not complete; the message says what arrived and how to resume. ``unreachable``: every try
    failed on the network (no network, a server down), where a data folder on disk is the way around it."""

    def __init__(self, message: str, unreachable: bool = False):
        super().__init__(message)
        self.unreachable = unreachable


@dataclass(frozen=True)
class Pin:
    """A download's bytes as a public record gives them: their sha256, their size where known, and the record."""

    sha256: str
    size: int | None
    record: str


#: Marks a download that no public record readable here pins: its own checks (:class:`Expected`) stand in, and the
#: sha256 of its first download, kept beside the data, holds every later copy.
UNPINNED: Pin | None = None


@dataclass(frozen=True)
class TextShape:
    """What a downloaded text must be: UTF-8 of ``lines`` lines, each ``numbers`` numbers after a word where
    ``numbers`` is set (a word-vector file)."""

    lines: int
    numbers: int = 0


@dataclass(frozen=True)
class Expected:
    """What one download must be before it is called ready: ``pin`` (sha256 and size of a public record, or of its
    first download; :data:`UNPINNED`: none), the shape of the text it leaves (``text``), the files its folder
    must hold (``files``), and its bounds: the most bytes it may download where no pin gives its size
    (``bound``), and the most its archive's members may unpack to (``unpacked``)."""

    pin: Pin | None = UNPINNED
    text: TextShape | None = None
    files: tuple[str, ...] = ()
    bound: int | None = None
    unpacked: int | None = None


def file_sha256(path: Path) -> str:
    """The sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def archive_fault(path: Path) -> str:
    """Why a downloaded archive is not whole ("" when it is): a zip's every member read against its CRC, a gzip
    stream read to its end (its CRC and length) and its tar listing; other files pass."""
    name = path.name.removesuffix(".partial")
    try:
        if name.endswith(".zip"):
            with zipfile.ZipFile(path) as archive:
                bad = archive.testzip()
            return f"its member {bad} fails its CRC" if bad else ""
        if name.endswith((".tar.gz", ".tgz")):
            with gzip.open(path) as stream:
                while stream.read(CHUNK):
                    pass
            with tarfile.open(path) as archive:
                archive.getmembers()
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, ValueError) as err:
        return f"not a readable archive ({' '.join(str(err).split()) or type(err).__name__})"
    return ""


#: Each byte's class in a word-vector file: 0 a byte of a number ("-0.082752", "1.3e-05") or a carriage return, 1 a
#: space, 2 a newline, 3 any other (a word's).
_CLASSES = bytes(0 if byte in b"0123456789.eE+-\r" else {ord(" "): 1, ord("\n"): 2}.get(byte, 3) for byte in range(256))


def _vector_lines_fault(block: bytes, numbers: int) -> int | None:
    """The index of the first line of ``block`` (whole lines, each ending in a newline) that is not a word, a space
    and ``numbers`` space-separated numbers, or None. Vectorised: the ``numbers`` fields after each line's last
    ``numbers`` spaces may hold only digits, signs, points and exponents, and a word must come before them (a word
    may hold spaces: GloVe 840B's ". . ." and the like)."""
    data = np.frombuffer(block.translate(_CLASSES), dtype=np.uint8)
    ends = np.flatnonzero(data == 2)
    starts = np.concatenate(([0], ends[:-1] + 1))
    spaces = np.flatnonzero(data == 1)
    last = np.searchsorted(spaces, ends)  # spaces before each line's end
    first = np.searchsorted(spaces, starts)
    enough = last - first >= numbers
    tail = np.where(enough, spaces[np.clip(last - numbers, 0, max(len(spaces) - 1, 0))], ends)
    other = np.flatnonzero(data == 3)  # bytes no number holds
    clean = np.searchsorted(other, tail) == np.searchsorted(other, ends)
    worded = tail > starts  # a word before the numbers
    bad = np.flatnonzero(~(enough & clean & worded))
    return int(bad[0]) if len(bad) else None


def text_fault(path: Path, shape: TextShape) -> str:
    """Why a downloaded text is not the one expected ("" when it is): not UTF-8, another number of lines, or (a
    word-vector file) a line that is not a word and ``shape.numbers`` numbers. Read in chunks, never whole."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    count, offset, rest = 0, 0, b""
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as err:
                return f"not UTF-8 text (byte {offset + err.start:,})"
            offset += len(chunk)
            block, newline, rest = (rest + chunk).rpartition(b"\n")
            if newline and shape.numbers and (bad := _vector_lines_fault(block + newline, shape.numbers)) is not None:
                return f"line {count + bad + 1:,} is not a word and {shape.numbers} numbers"
            count += block.count(b"\n") + bool(newline)
        if rest.strip() and shape.numbers and _vector_lines_fault(rest + b"\n", shape.numbers) is not None:
            return f"line {count + 1:,} is not a word and {shape.numbers} numbers"
        count += bool(rest.strip())
    if count != shape.lines:
        return f"{count:,} lines where the paper's copy has {shape.lines:,}"
    return ""


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


def _validator(response: http.client.HTTPResponse) -> dict[str, str]:
    """What tells this version of the file from another (RFC 9110): a strong ETag, else Last-Modified."""
    etag = response.headers.get("ETag", "")
    if etag and not etag.startswith("W/"):  # a weak ETag may not be sent as If-Range
        return {"If-Range": etag}
    modified = response.headers.get("Last-Modified", "")
    return {"If-Range": modified} if modified else {}


def _kept_validator(path: Path) -> dict[str, str]:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return {}


def fetch(
    url: str,
    target: Path,
    progress: bool = True,
    pin: Pin | None = UNPINNED,
    check: Callable[[Path], str] | None = None,
    rerun: str = "run the same command again",
    bound: int | None = None,
) -> Path:
    """Download ``url`` to ``target`` (kept when already there): into ``target.partial``, resumed with an HTTP
    ``Range`` request from where an earlier try (this run's or a killed one's) broke off, with ``If-Range`` (the
    validator of the response the kept bytes came from) so that a file changed on the server starts again; then
    verified (``pin``'s size and sha256, ``check``'s fault: "" passes) and renamed onto ``target``. At most
    ``pin``'s size, else ``bound`` bytes, are read, and only when the disk has room for them. A failed verification
    removes the download; it, a full disk and :data:`ATTEMPTS` broken tries are one-line :class:`DownloadError` s
    naming the file and ending in ``rerun``, what to run."""
    from tqdm.auto import tqdm

    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    kept = target.with_name(target.name + ".partial.json")  # the validator of the bytes kept in partial
    size_limit = pin.size if pin is not None and pin.size is not None else None
    most = size_limit if size_limit is not None else bound  # never more bytes than the file can hold
    problem = ""

    def start_again() -> None:
        partial.unlink(missing_ok=True)
        kept.unlink(missing_ok=True)

    for attempt in range(ATTEMPTS):
        if attempt:
            time.sleep(BACKOFF * 2 ** (attempt - 1))
        have = partial.stat().st_size if partial.is_file() else 0
        validator = _kept_validator(kept) if have else {}
        if have and not validator and pin is None:  # nothing proves the kept bytes are of the file served now
            start_again()
            have = 0
        headers = {"Range": f"bytes={have}-", **validator} if have else {}
        try:
            with urllib.request.urlopen(urllib.request.Request(official(url), headers=headers), timeout=60) as response:  # noqa: S310
                if have and response.status != 206:  # the server ignored the range, or the file changed: start again
                    have = 0
                announced = _announced_total(response, have)
                if announced is not None and most is not None and announced > most:
                    start_again()
                    raise DownloadError(
                        f"{url}: the server announced {announced:,} bytes, above its bound of {most:,}: not the file "
                        f"the harness expects; nothing was kept: {rerun}"
                    )
                total = announced if announced is not None else size_limit
                check_free_space(partial.parent, (total or 0) - have, f"downloading {url}")
                kept.write_text(json.dumps(_validator(response)))
                with (
                    partial.open("ab" if have else "wb") as out,
                    tqdm(
                        total=total, initial=have, unit="B", unit_scale=True, desc=target.name, disable=not progress
                    ) as bar,
                ):
                    for chunk in iter(lambda: response.read(CHUNK), b""):
                        out.write(chunk)
                        bar.update(len(chunk))
                        if (total is not None and out.tell() > total) or (most is not None and out.tell() > most):
                            break  # more than the file holds: stop reading, refused below
        except (DownloadError, NoSpace):
            raise
        except urllib.error.HTTPError as err:
            whole = err.headers.get("Content-Range", "").rpartition("/")[2] if err.headers else ""
            if err.code == 416 and have and whole == str(have):  # nothing left to send: an earlier try got every byte
                total = have
            elif err.code == 416 and have:  # the kept bytes are not a start of this file (it changed): start again
                start_again()
                problem = f"the {have:,} bytes kept in {partial.name} were not of this file"
                continue
            elif err.code in TRANSIENT:
                problem = _reason(err)
                continue
            else:
                _drop_empty(partial, kept)
                raise DownloadError(f"{url}: {_reason(err)}") from None
        except OSError as err:
            if err.errno == errno.ENOSPC:  # not the network's: trying again would fill the disk again
                raise DownloadError(
                    f"{partial}: the disk is full after {partial.stat().st_size:,} bytes; free some space and run "
                    "the same command again to resume"
                ) from None
            if err.filename and not isinstance(err, urllib.error.URLError):  # a local file's fault, not the network's
                raise DownloadError(f"{err.filename}: {err.strerror or err}; {rerun}") from None
            problem = _reason(err)
            continue
        except http.client.HTTPException as err:
            problem = _reason(err)
            continue
        size = partial.stat().st_size
        if total is not None and size < total:
            problem = f"the connection broke off after {size:,} of {total:,} bytes"
            continue
        fault = f"{size:,} bytes arrived where the file has {total:,}" if total is not None and size > total else ""
        if not fault and most is not None and size > most:
            fault = f"more than its bound of {most:,} bytes arrived"
        if not fault and pin is not None and (digest := file_sha256(partial)) != pin.sha256:
            fault = f"its sha256 is {digest[:16]}..., not {pin.sha256[:16]}... ({pin.record})"
        if not fault and check is not None:
            fault = check(partial)
        if fault:
            start_again()
            unannounced = " (the server announced no length: the body may have been cut short)" if total is None else ""
            raise DownloadError(f"{url}: {fault}{unannounced}; the download was removed: {rerun}")
        partial.replace(target)
        kept.unlink(missing_ok=True)
        return target
    _drop_empty(partial, kept)
    received = partial.stat().st_size if partial.is_file() else 0
    left = f"{partial} keeps the {received:,} bytes received: run" if received else "nothing arrived: run"
    message = f"{url}: {problem} ({ATTEMPTS} tries); {left} the same command again to resume"
    raise DownloadError(message, unreachable=True)


def _reason(err: BaseException) -> str:
    """A network fault in a few words, on one line (a redirect loop's text holds the whole last response)."""
    if isinstance(err, urllib.error.HTTPError):
        return f"the server answered {err.code} {' '.join(str(err.reason).split())[:MAX_REASON]}"
    text = " ".join(str(getattr(err, "reason", err)).split()) or type(err).__name__
    return text[:MAX_REASON]


def _drop_empty(partial: Path, kept: Path) -> None:
    """Remove a partial download that holds nothing, and its validator: nothing to resume from."""
    if partial.is_file() and partial.stat().st_size == 0:
        partial.unlink()
        kept.unlink(missing_ok=True)
    elif not partial.exists():
        kept.unlink(missing_ok=True)


def _archive(url: str, folder: Path) -> Path:
    """Where the archive of ``url`` waits below ``folder`` until it is unpacked."""
    return folder / ARCHIVES / url.rsplit("/", 1)[-1]


@contextlib.contextmanager
def _opened(archive: Path, url: str, opener, rerun: str):
    """``opener(archive)``; an archive that cannot be read (a server's error page) is removed, so that the next run
    fetches it again, and named in a :class:`DownloadError` ending in ``rerun``."""
    try:
        handle = opener(archive)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError) as err:
        archive.unlink()
        raise DownloadError(f"{url}: the download is not a readable archive ({err}); it was removed: {rerun}") from None
    with handle:
        yield handle


def _unpack(member: BinaryIO, target: Path) -> None:
    """Stream one archive member to ``target`` (through ``target.partial``)."""
    partial = target.with_name(target.name + ".partial")
    target.parent.mkdir(parents=True, exist_ok=True)
    with partial.open("wb") as out:
        shutil.copyfileobj(member, out, CHUNK)
    partial.replace(target)


def _discard(archive: Path) -> None:
    """Remove an archive that was unpacked, and the archives' folder once no other archive waits in it."""
    archive.unlink()
    with contextlib.suppress(OSError):
        archive.parent.rmdir()


def expected_of(url: str, shipped: Expected) -> Expected:
    """What the download of ``url`` must be: ``shipped``, or, where a test names its own manifest
    (:data:`TEST_EXPECTED_ENV`), the pin and line count it gives that URL (unpinned where it gives none)."""
    manifest = os.environ.get(TEST_EXPECTED_ENV)
    if not manifest:
        return shipped
    entry = json.loads(Path(manifest).read_text(encoding="utf-8")).get(url, {})
    pin = Pin(entry["sha256"], entry.get("size"), f"the test manifest {manifest}") if "sha256" in entry else UNPINNED
    text = replace(shipped.text, lines=entry["lines"]) if shipped.text and "lines" in entry else shipped.text
    bounds = {key: entry[key] for key in ("bound", "unpacked") if key in entry}
    return replace(shipped, pin=pin, text=text, **bounds)


def recorded_pin(record: Path) -> Pin | None:
    """The sha256 an unpinned file's first download recorded in ``record`` (``SHA256  URL``), or None."""
    if not record.is_file():
        return None
    digest = record.read_text(encoding="utf-8").split(maxsplit=1)[:1]
    if not digest or not re.fullmatch(r"[0-9a-f]{64}", digest[0]):
        raise DownloadError(f"{record}: expected a sha256 and the URL it came from; remove the file to download anew")
    return Pin(digest[0], None, f"its first download, recorded in {record}")


@dataclass(frozen=True)
class Source:
    """One input from outside the STS sets: its official archive (or file), what it leaves on disk and what that must
    be (:class:`Expected`: ``pin``, ``text``, ``files``, the bounds ``bound`` and ``unpacked``).

    ``members`` maps an archive member to its path below the destination folder; a member ending in ``/`` is a
    folder whose files all go there. With no members the download is the file itself (then the destination is
    a file path). ``text`` is the shape of the text it leaves first (the file itself, or its first member's);
    ``files`` the files its folder must hold."""

    name: str  # the command's flag and the workflow's rule: `consert download-data --NAME`, rule NAME_data
    title: str
    url: str
    default: str  # the destination the paper config names (a folder; the file for a plain download)
    members: tuple[tuple[str, str], ...] = ()
    pin: Pin | None = UNPINNED
    text: TextShape | None = None
    files: tuple[str, ...] = ()
    bound: int | None = None  # the most bytes its download may hold where no pin gives its size
    unpacked: int | None = None  # the most bytes the members it unpacks may hold
    #: copies its maintainers name, tried in order when the official URL fails; each held to the same checks
    mirrors: tuple[str, ...] = ()

    def outputs(self, dest: str | Path | None = None) -> list[Path]:
        """The files (a folder's: the folder) it leaves below ``dest`` (default: :attr:`default`)."""
        dest = Path(dest or self.default)
        if not self.members:
            return [dest]
        return [dest / below if below else dest for _, below in self.members]

    def present(self, dest: str | Path | None = None) -> bool:
        """Whether everything it leaves is already on disk."""
        return all(path.exists() for path in self.outputs(dest))

    def record(self, dest: str | Path | None = None) -> Path:
        """Where an unpinned download's first sha256 is kept, beside the data: ``FILE.sha256`` for a file, the
        archive's name and ``.sha256`` beside the folder it is unpacked into."""
        dest = Path(dest or self.default)
        if not self.members:
            return dest.with_name(dest.name + ".sha256")
        return dest.parent / (self.url.rsplit("/", 1)[-1] + ".sha256")

    def download(self, dest: str | Path | None = None, progress: bool = True) -> list[Path]:
        """Fetch and unpack into ``dest`` whatever of it is missing, verified (:class:`Expected`); return its outputs.
        Where the official URL fails (the network, the server, or bytes that fail the checks), each of
        :attr:`mirrors` is tried in turn, held to the same checks (the official file's pin or first recorded sha256).
        A download that fails its checks is removed, with what it unpacked, in one :class:`DownloadError` line
        naming every URL tried."""
        dest = Path(dest or self.default)
        if self.present(dest):
            return self.outputs(dest)
        failures = []
        for url in (self.url, *self.mirrors):
            try:
                return self._download_from(url, dest, progress)
            except OSError as err:  # DownloadError and the network's URLError alike
                failures.append((url, err))
        if len(failures) == 1:
            raise failures[0][1]
        said = [(url, " ".join(str(err).split())) for url, err in failures]
        tried = "; ".join(text if text.startswith(url) else f"{url}: {text}" for url, text in said)
        raise DownloadError(f"{self.title}: every copy failed: {tried}", all(unreachable(e) for _, e in failures))

    def _download_from(self, url: str, dest: Path, progress: bool) -> list[Path]:
        """:meth:`download` from one URL (the official one or a mirror), held to the official file's checks."""
        shipped = Expected(self.pin, self.text, self.files, self.bound, self.unpacked)
        expected = expected_of(self.url, shipped)
        record = self.record(dest)
        pin = expected.pin or recorded_pin(record)
        rerun = f"run `consert download-data --{self.name}{'' if dest == Path(self.default) else f' {dest}'}` again"
        if not self.members:
            check = (lambda path: text_fault(path, expected.text)) if expected.text else None
            downloaded = fetch(url, dest, progress, pin, check, rerun, expected.bound)
        else:  # beside dest: a folder may be dest
            archive = _archive(url, dest.parent)
            downloaded = fetch(url, archive, progress, pin, archive_fault, rerun, expected.bound)
            existed = dest.exists()
            written: list[Path] = []
            try:
                fault = self._unpack(downloaded, dest, expected.unpacked, written)
                fault = fault or self._outputs_fault(dest, expected)
            except (UnsafeArchive, zipfile.BadZipFile, EOFError, zlib.error) as err:
                fault = f"unpacking failed ({' '.join(str(err).split())})"
            except OSError as err:  # a full disk, a folder it cannot write: named, and what it wrote removed
                fault = f"unpacking into {err.filename or dest} failed ({err.strerror or err})"
            if fault:
                for path in written:
                    shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
                if not existed and dest.is_dir() and not any(dest.iterdir()):
                    dest.rmdir()
                _discard(downloaded)
                raise DownloadError(f"{url}: {fault}; the download was removed: {rerun}")
        if expected.pin is None and not record.exists():  # its first download: later copies are held to it
            record.write_text(f"{file_sha256(downloaded)}  {self.url}\n", encoding="utf-8")
        if self.members:
            _discard(downloaded)
        return self.outputs(dest)

    def _unpack(self, archive: Path, dest: Path, bound: int | None, written: list[Path]) -> str:
        """Unpack the members not yet below ``dest``, each written below it only (every name checked before any is
        written: no member outside its folder, no link, within ``bound`` and the free space); append what it
        wrote to ``written``. Returns why the archive lacks a member it should hold, or ""."""
        wanted: dict[str, Path] = {}  # archive member -> where it goes
        staged: list[tuple[Path, Path]] = []  # a folder member's staging folder -> its target
        listed = {member.name: member for member in checked_members(archive)}
        for member, below in self.members:
            target = dest / below if below else dest
            if target.exists():
                continue
            if member.endswith("/"):  # a folder: every file below it, renamed into place together
                staging = target.with_name(target.name + ".partial")
                files = [n for n, m in listed.items() if n.startswith(member) and m.kind == "file"]
                if not files:
                    return f"the archive has no folder {member}"
                for name in files:
                    try:
                        wanted[name] = inside(staging, name[len(member) :])
                    except UnsafeArchive:
                        escape = f"{archive.name}: member {name!r} would be written outside {target}"
                        raise UnsafeArchive(escape) from None
                staged.append((staging, target))
            elif member in listed:
                wanted[member] = target
            else:
                return f"the archive has no {member}"
        checked_members(archive, [listed[name] for name in wanted], bound)
        check_free_space(dest, sum(listed[name].size for name in wanted), f"unpacking {archive.name}")
        for staging, _ in staged:
            shutil.rmtree(staging, ignore_errors=True)
            written.append(staging)
        with _opened(archive, self.url, zipfile.ZipFile, "run the same command again") as unzipped:
            for name, target in wanted.items():
                written.append(target)
                with unzipped.open(name) as handle:
                    _unpack(handle, target)
        for staging, target in staged:
            staging.rename(target)
            written.append(target)
        return ""

    def _outputs_fault(self, dest: Path, expected: Expected) -> str:
        """Why what it left below ``dest`` is not what the paper read ("" when it is)."""
        if expected.text is not None:
            output = self.outputs(dest)[0]
            if fault := text_fault(output, expected.text):
                return f"{output.name}: {fault}"
        missing = [name for name in expected.files if not (self.outputs(dest)[0] / name).is_file()]
        return f"no {', '.join(missing)} in the archive's folder (WordNet's database files)" if missing else ""


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
            pin=Pin(
                "afb3d70a5af5d8de0d9d81e2637e0fb8c22d1235c2749d83125ca43dab0dbd3e",
                94_550_081,
                "tensorflow/datasets' url_checksums/snli.txt",
            ),
            unpacked=2 << 30,  # its three jsonl files: about 0.5 GB
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
            pin=Pin(
                "049f507b9e36b1fcb756cfd5aeb3b7a0cfcb84bf023793652987f7e7e0957822",
                226_850_426,
                "tensorflow/datasets' url_checksums/multi_nli.txt",
            ),
            unpacked=2 << 30,  # its three jsonl files: about 0.5 GB
            # the record lists this mirror of the same bytes (the pin holds it)
            mirrors=("https://storage.googleapis.com/tfds-data/downloads/multi_nli/multinli_1.0.zip",),
        ),
        Source(
            "glove",
            "GloVe 840B (300d)",
            "https://nlp.stanford.edu/data/glove.840B.300d.zip",  # nlp.stanford.edu/projects/glove
            "data/glove",
            (("glove.840B.300d.txt", "glove.840B.300d.txt"),),
            pin=UNPINNED,  # no public record of its sha256 is readable here: the zip's CRCs and its shape stand in
            text=TextShape(lines=2_196_017, numbers=300),
            bound=3 << 30,  # the zip: 2.0 GiB
            unpacked=6 << 30,  # glove.840B.300d.txt: 5.3 GiB
            # GloVe's maintainers' copy (stanfordnlp/GloVe's README, stanfordnlp/GloVe#222)
            mirrors=("https://huggingface.co/stanfordnlp/glove/resolve/main/glove.840B.300d.zip",),
        ),
        Source(
            "wiki1m",
            "SimCSE's 1M Wikipedia sentences",
            WIKI1M_URL,
            "data/wiki1m_for_simcse.txt",
            pin=UNPINNED,  # no public record of its sha256 is readable here: its shape stands in
            text=TextShape(lines=1_000_000),
            bound=500 << 20,  # about 120 MB
        ),
        Source(
            "wordnet",
            "WordNet 3.0",
            # NLTK's data index (raw.githubusercontent.com/nltk/nltk_data/gh-pages/index.xml)
            "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/wordnet.zip",
            "data/wordnet",
            (("wordnet/", ""),),
            pin=UNPINNED,  # no public record of its sha256 is readable here: the zip's CRCs and the files stand in
            files=tuple(f"{kind}.{pos}" for kind in ("index", "data") for pos in ("noun", "verb", "adj", "adv")),
            bound=100 << 20,  # about 11 MB
            unpacked=500 << 20,  # about 35 MB
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


#: What ``consert download-data`` fetches the STS sets with, for a download's fault line.
STS_RERUN = "run `consert download-data` again"


#: The bounds of SentEval's STS files (each a few MB): the most bytes one may download, and unpack to.
STS_BOUNDS = Expected(bound=100 << 20, unpacked=500 << 20)


def _unpack_all(archive_path: Path, folder: Path, opener, **options) -> None:
    """Every member of an archive into ``folder``, once each is checked (:func:`checked_members`: inside it, files
    and folders only, within the STS bound and the free space)."""
    listed = checked_members(archive_path, bound=STS_BOUNDS.unpacked)
    check_free_space(folder, sum(m.size for m in listed), f"unpacking {archive_path.name}")
    with _opened(archive_path, archive_path.name, opener, STS_RERUN) as archive:
        archive.extractall(folder, **options)


def _sts_year(tokenize, year: str, archive_path: Path, scratch: Path, staging: Path) -> None:
    """One STS year's archive into ``staging/STS/<year>-en-test``: inputs tokenized, the gold standard as it is."""
    unpacked = scratch / year
    _unpack_all(archive_path, unpacked, zipfile.ZipFile)
    target = staging / "STS" / f"{year}-en-test"
    target.mkdir(parents=True)
    for subset in STS_YEAR_SUBSETS[year]:
        source_input = _find(unpacked, f"STS*.input.{subset}.txt")  # STS2016.input.* in STS16's archive
        shutil.copy(_find(unpacked, f"STS*.gs.{subset}.txt"), target / f"STS.gs.{subset}.txt")
        rows = source_input.read_text(encoding="utf-8").splitlines()
        tokenized = ["\t".join(tokenize(col) for col in row.split("\t")[:2]) for row in rows]
        (target / f"STS.input.{subset}.txt").write_text("\n".join(tokenized) + "\n", encoding="utf-8")


def _sick_pin(url: str) -> Pin | None:
    """A SICK file's pin: it is copied as it is, so the shipped manifest's sha256 is the download's (None for the
    archives, whose unpacked and tokenized files the manifest checks)."""
    name = url.rsplit("/", 1)[-1]
    if url != _SICK_URL.format(name=name):
        return UNPINNED
    return Pin(shipped_manifest()[f"SICK/{name}"], None, f"the shipped manifest {MANIFEST}")


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
        expected = expected_of(url, replace(STS_BOUNDS, pin=_sick_pin(url)))
        pin = expected.pin
        fetch(url, _archive(url, dest), progress, pin, None if pin else archive_fault, STS_RERUN, expected.bound)
    scratch = dest / ".unpacking"
    shutil.rmtree(scratch, ignore_errors=True)
    staging = scratch / "downstream"
    unpacking = _STSB_ARCHIVE
    try:
        for year, (url, _) in _STS_ARCHIVES.items():
            unpacking = url
            _sts_year(tokenize, year, _archive(url, dest), scratch, staging)
        unpacking = _STSB_ARCHIVE
        _unpack_all(_archive(_STSB_ARCHIVE, dest), scratch / "stsb", tarfile.open, filter="data")
    except (UnsafeArchive, zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error, OSError) as err:
        shutil.rmtree(scratch, ignore_errors=True)
        _archive(unpacking, dest).unlink(missing_ok=True)
        what = err.strerror if isinstance(err, OSError) and err.strerror else " ".join(str(err).split())
        where = f" into {err.filename}" if isinstance(err, OSError) and err.filename else ""
        raise DownloadError(
            f"{unpacking}: unpacking{where} failed ({what}); the archive was removed: {STS_RERUN}"
        ) from None
    stsb = scratch / "stsb"
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
            if isinstance(err, OSError) and not unreachable(err):  # a file that arrived wrong: its own line
                raise
            reason = f"the download failed: {str(err).splitlines()[0]}"
    else:
        reason = "downloading is off"
    looked = ", ".join([str(configured), *(str((checkout / relative).resolve()) for relative in BESIDE_CHECKOUT)])
    raise DataFormatError(
        configured,
        f"no SentEval data (looked in ${DATA_ENV_VAR}, {looked}) and {reason}. Run `consert download-data` "
        f"where there is network, or point at a SentEval data folder with ${DATA_ENV_VAR} or {WORKFLOW_FLAG}",
    )
