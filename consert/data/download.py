"""Download the STS sets from their original sources into SentEval's layout (needs network).

This mirrors what SentEval's ``data/downstream/get_transfer_data.bash`` does for the STS tasks:
fetch the official archives, rename files to ``STS.input.*`` / ``STS.gs.*``, and Moses-tokenize the
sentence columns (here with ``sacremoses``, the Python port of the Moses tokenizer, lowercased as
SentEval's prepared files are). Nothing else in the harness ever calls this: a data directory that
is already on disk is read in place. Byte-level differences from SentEval's prepared files are
possible; the evaluation records the sha256 of every file it reads so such differences are visible.
"""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path

from consert.data.senteval import (
    BESIDE_CHECKOUT,
    DATA_ENV_VAR,
    DEFAULT_DATA_DIR,
    SICK_SPLITS,
    STS_YEAR_SUBSETS,
    DataFormatError,
    find_data_dir,
    resolve_data_dir,
)

#: How the workflow names a data folder (the hint of its data errors).
WORKFLOW_FLAG = "--config data_dir=DIR"

_STS_ARCHIVES = {
    "STS12": ("http://ixa2.si.ehu.es/stswiki/images/4/40/STS2012-en-test.zip", "test-gold"),
    "STS13": ("http://ixa2.si.ehu.es/stswiki/images/2/2f/STS2013-en-test.zip", "test-gs"),
    "STS14": ("http://ixa2.si.ehu.es/stswiki/images/8/8c/STS2014-en-test.zip", "sts-en-test-gs-2014"),
    "STS15": ("http://ixa2.si.ehu.es/stswiki/images/d/da/STS2015-en-test.zip", "test_evaluation_task2a"),
    "STS16": ("http://ixa2.si.ehu.es/stswiki/images/9/98/STS2016-en-test.zip", "sts2016-english-with-gs-v1.0"),
}
_STSB_ARCHIVE = "http://ixa2.si.ehu.es/stswiki/images/4/48/Stsbenchmark.tar.gz"
_SICK_URL = "https://raw.githubusercontent.com/alvations/stasis/master/SICK-data/{name}"


def _fetch(url: str) -> bytes:
    """The body of ``url``, with a progress bar of the bytes received."""
    from tqdm.auto import tqdm

    with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 - fixed official URLs
        total = int(response.headers.get("Content-Length") or 0) or None
        chunks = []
        with tqdm(total=total, unit="B", unit_scale=True, desc=url.rsplit("/", 1)[-1]) as bar:
            for chunk in iter(lambda: response.read(1 << 16), b""):
                chunks.append(chunk)
                bar.update(len(chunk))
        return b"".join(chunks)


def _tokenizer():
    try:
        from sacremoses import MosesTokenizer
    except ImportError:
        raise RuntimeError("`consert download-data` tokenizes like SentEval: pip install sacremoses") from None
    moses = MosesTokenizer(lang="en")
    return lambda text: moses.tokenize(text, escape=False, return_str=True).lower()


def _find(folder: Path, name: str) -> Path:
    matches = list(folder.rglob(name))
    if not matches:
        raise RuntimeError(f"{name} not found in the downloaded archive under {folder}")
    return matches[0]


def download_senteval(dest: Path) -> Path:
    """Fill ``dest/downstream`` with STS12-16, STS-B and SICK; return ``dest``. Writes atomically."""
    tokenize = _tokenizer()
    final = dest / "downstream"
    if (final / "STS").is_dir():
        return dest
    with tempfile.TemporaryDirectory(dir=dest.parent if dest.parent.exists() else None) as scratch:
        staging = Path(scratch) / "downstream"
        for year, (url, _) in _STS_ARCHIVES.items():
            unpacked = Path(scratch) / year
            zipfile.ZipFile(io.BytesIO(_fetch(url))).extractall(unpacked)
            target = staging / "STS" / f"{year}-en-test"
            target.mkdir(parents=True)
            for subset in STS_YEAR_SUBSETS[year]:
                source_input = _find(unpacked, f"STS*.input.{subset}.txt")
                gold_name = f"STS.output.{subset}.txt" if year == "STS13" else f"STS*.gs.{subset}.txt"
                shutil.copy(_find(unpacked, gold_name), target / f"STS.gs.{subset}.txt")
                rows = source_input.read_text(encoding="utf-8").splitlines()
                tokenized = ["\t".join(tokenize(col) for col in row.split("\t")[:2]) for row in rows]
                (target / f"STS.input.{subset}.txt").write_text("\n".join(tokenized) + "\n", encoding="utf-8")
        stsb = Path(scratch) / "stsb"
        tarfile.open(fileobj=io.BytesIO(_fetch(_STSB_ARCHIVE))).extractall(stsb, filter="data")
        (staging / "STS" / "STSBenchmark").mkdir(parents=True)
        for split in ("train", "dev", "test"):
            rows = _find(stsb, f"sts-{split}.csv").read_text(encoding="utf-8").splitlines()
            out = []
            for row in rows:
                fields = row.split("\t")
                out.append("\t".join(fields[:5] + [tokenize(fields[5]), tokenize(fields[6])]))
            (staging / "STS" / "STSBenchmark" / f"sts-{split}.csv").write_text("\n".join(out) + "\n", encoding="utf-8")
        (staging / "SICK").mkdir(parents=True)
        for filename in SICK_SPLITS.values():
            (staging / "SICK" / filename).write_bytes(_fetch(_SICK_URL.format(name=filename)))
        dest.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), final)
    return dest


#: SimCSE's training text (1M English Wikipedia sentences), from the authors' data/download_wiki.sh.
WIKI1M_URL = "https://huggingface.co/datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt"


def download_wiki1m(path: Path) -> Path:
    """Fetch SimCSE's ``wiki1m_for_simcse.txt`` to ``path`` (atomically; kept when already there)."""
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(_fetch(WIKI1M_URL))
    partial.replace(path)
    return path


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
            return resolve_data_dir(download_senteval(configured))
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
