"""``consert download-data`` end to end against a web server on 127.0.0.1 that serves archives in the official
layouts (tests/mirror.py): every input of the paper config lands where the config names it, a download cut off
midway resumes from where it broke off (in the same run, and in the next), STS13's gold is its ``STS.gs`` file (the
archive also holds ``STS.output`` sample outputs), and the files that differ from SentEval's are named."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile
from importlib import resources
from pathlib import Path

import pytest

from consert.cli import main as cli_main
from consert.data import download
from consert.data.download import _SICK_URL, _STS_ARCHIVES, _STSB_ARCHIVE, MIRROR_ENV, SOURCES
from consert.data.senteval import SICK_SPLITS, STS_YEAR_SUBSETS, load_senteval
from tests.mirror import serving

#: The STS16 archive names its files STS2016.*; the others STS.*.
PREFIX = {"STS16": "STS2016"}


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _tar_gz(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _pairs(year: str, subset: str, count: int) -> bytes:
    """Raw (untokenized, cased) sentence pairs, as the official archives hold them."""
    return "".join(
        f"The {year} {subset} pair {i}, isn't it?\tA second sentence (number {i}).\n" for i in range(count)
    ).encode()


def _manifest() -> dict[str, str]:
    return json.loads(resources.files("consert.data.manifests").joinpath("senteval_sts.json").read_text())["files"]


def build_official_archives(mirror, real_data: Path) -> dict[str, bytes]:
    """Serve every archive the paper config's inputs come from, in its official layout; return the files the
    downloads must leave, by their path below the working directory. STS13's archive holds both its gold standard
    (the real files, whose sha256 the manifest knows) and sample outputs that differ from it."""
    real = real_data / "downstream"
    expected: dict[str, bytes] = {}
    for year, (url, folder) in _STS_ARCHIVES.items():
        files = {f"{folder}/00-readme.txt": b"readme\n"}
        for subset in STS_YEAR_SUBSETS[year]:
            prefix = PREFIX.get(year, "STS")
            if year == "STS13":  # the real gold standard (the manifest knows it), and sample outputs unlike it
                gold = (real / "STS" / f"{year}-en-test" / f"STS.gs.{subset}.txt").read_bytes()
                files[f"{folder}/STS.output.{subset}.txt"] = b"".join(
                    b"%.1f\n" % (i % 5) for i in range(gold.count(b"\n"))
                )
            else:
                gold = b"".join(b"%.2f\n" % (i / 2) for i in range(4))
            files[f"{folder}/{prefix}.input.{subset}.txt"] = _pairs(year, subset, gold.count(b"\n"))
            files[f"{folder}/{prefix}.gs.{subset}.txt"] = gold
            expected[f"data/senteval/downstream/STS/{year}-en-test/STS.gs.{subset}.txt"] = gold
        mirror.put(url, _zip(files))
    stsb = {
        f"stsbenchmark/sts-{split}.csv": b"main-captions\tMSRvid\t2012test\t0001\t2.500\tA Girl styles.\tOK, fine.\n"
        for split in ("train", "dev", "test")
    }
    mirror.put(_STSB_ARCHIVE, _tar_gz({**stsb, "stsbenchmark/readme.txt": b"STS-B\n"}))
    for name in SICK_SPLITS.values():
        data = (real / "SICK" / name).read_bytes()
        mirror.put(_SICK_URL.format(name=name), data)
        expected[f"data/senteval/downstream/SICK/{name}"] = data
    for source in (SOURCES["snli"], SOURCES["multinli"]):
        files = {
            member: json.dumps({"gold_label": "neutral", "sentence1": member}).encode() + b"\n"
            for member, _ in source.members
        }
        prefix = source.members[0][0].split("/")[0]
        extra = {f"{prefix}/README.txt": b"readme\n", f"__MACOSX/{prefix}/._{prefix}_train.jsonl": b"\x00\x05"}
        mirror.put(source.url, _zip({**files, **extra}))
        expected.update({f"data/nli/{below}": files[member] for member, below in source.members})
    glove = b"".join(
        b"word%d " % i + b" ".join(b"0.%03d" % ((i * j) % 997) for j in range(300)) + b"\n" for i in range(1200)
    )
    mirror.put(SOURCES["glove"].url, _zip({"glove.840B.300d.txt": glove}))
    expected["data/glove/glove.840B.300d.txt"] = glove
    wiki = b"".join(b"Wikipedia sentence number %d.\n" % i for i in range(40000))
    mirror.put(SOURCES["wiki1m"].url, wiki)
    expected["data/wiki1m_for_simcse.txt"] = wiki
    wordnet = {
        "wordnet/index.adj": b"  1 license line\n",
        "wordnet/data.adj": b"  1 license line\n",
        "wordnet/LICENSE": b"WordNet\n",
    }
    mirror.put(SOURCES["wordnet"].url, _zip(wordnet))
    expected.update({f"data/wordnet/{name.split('/')[1]}": data for name, data in wordnet.items()})
    return expected


@pytest.fixture()
def mirror(tmp_path, monkeypatch, real_data_dir):
    """The official archives served on 127.0.0.1, the harness pointed at them, the working directory a fresh one."""
    with serving(tmp_path / "www") as served:
        served.expected = build_official_archives(served, real_data_dir)
        monkeypatch.setenv(MIRROR_ENV, served.url)
        (tmp_path / "work").mkdir()
        monkeypatch.chdir(tmp_path / "work")
        yield served


FLAGS = ["download-data", "--sts", "--nli", "--glove", "--wiki1m", "--wordnet"]


def test_every_input_arrives_where_the_paper_config_names_it_and_a_cut_download_resumes(mirror, capsys):
    glove, wiki1m = SOURCES["glove"], SOURCES["wiki1m"]
    glove_size = len(mirror.root.joinpath(mirror.path_of(glove.url).lstrip("/")).read_bytes())
    mirror.cut_next(glove.url, glove_size // 2)  # the connection drops halfway through the GloVe archive
    killed = Path(wiki1m.default + ".partial")  # a run killed a third of the way through wiki1m
    killed.parent.mkdir(parents=True)
    killed.write_bytes(mirror.expected[wiki1m.default][: len(mirror.expected[wiki1m.default]) // 3])
    kept = killed.stat().st_size
    assert cli_main(FLAGS) == 0
    printed = capsys.readouterr().out
    for path, data in mirror.expected.items():
        assert Path(path).read_bytes() == data, path
    assert mirror.fetched(glove.url) == [0, glove_size // 2]  # resumed where it broke off, not from the start
    assert mirror.fetched(wiki1m.url) == [kept]  # the killed run's bytes kept, the rest asked for
    # STS13's gold standard is STS.gs (the archive's STS.output are sample outputs); inputs tokenized and lowercased
    sts13 = Path("data/senteval/downstream/STS/STS13-en-test")
    assert sorted(p.name for p in sts13.iterdir()) == sorted(
        f"STS.{kind}.{subset}.txt" for kind in ("gs", "input") for subset in STS_YEAR_SUBSETS["STS13"]
    )
    assert (sts13 / "STS.input.FNWN.txt").read_text().splitlines()[0] == (
        "the sts13 fnwn pair 0 , isn 't it ?\ta second sentence ( number 0 ) ."
    )
    # the manifest check names every written file that differs from SentEval's, and only those
    manifest = _manifest()
    written = {str(p.relative_to("data/senteval/downstream")) for p in Path("data/senteval").rglob("*") if p.is_file()}
    differing = {
        name
        for name in written
        if hashlib.sha256(Path("data/senteval/downstream", name).read_bytes()).hexdigest() != manifest[name]
    }
    assert {name for name in written if name.startswith("STS/STS13-en-test/STS.gs.")} <= written - differing
    assert differing and all(".input." in name or ".gs." in name or "STSBenchmark" in name for name in differing)
    named = {line.strip().split(":")[0] for line in printed.splitlines() if line.startswith("  ")}
    assert named == differing
    assert f"{len(differing)} files differ from SentEval's prepared files" in printed
    # nothing left half-written or waiting: no partial files, no archives, no staging folders
    assert not [p for p in Path(".").rglob("*") if p.name.endswith(".partial") or p.name in (".download", ".unpacking")]
    data = load_senteval("data/senteval", allow_unverified=True)
    assert not data.verified and len(data.sets["STS12"].eval_groups["MSRpar"]) == 4
    # a second run finds everything on disk and asks the server for nothing
    seen = len(mirror.requests)
    assert cli_main(FLAGS) == 0 and len(mirror.requests) == seen


def test_a_download_that_keeps_breaking_says_how_far_it_got_and_the_next_run_resumes(mirror, capsys):
    wiki1m = SOURCES["wiki1m"]
    size = len(mirror.expected[wiki1m.default])
    breaks = iter([size // 10] * download.ATTEMPTS)  # every try of this run breaks off

    class Cuts(dict):  # each response for wiki1m breaks off after a tenth of the file
        def pop(self, key, default=None):
            return next(breaks, default) if key == mirror.path_of(wiki1m.url) else default

    mirror.cuts = Cuts()
    assert cli_main(["download-data", "--wiki1m"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]  # after the progress bars, one line
    assert line.startswith("consert download-data: error: ")
    assert (
        f"the connection broke off after {3 * (size // 10):,} of {size:,} bytes" in line
        and "run the same command again to resume" in line
    )
    assert Path(wiki1m.default + ".partial").stat().st_size == 3 * (size // 10) and not Path(wiki1m.default).exists()
    assert cli_main(["download-data", "--wiki1m"]) == 0
    assert Path(wiki1m.default).read_bytes() == mirror.expected[wiki1m.default]
    assert mirror.fetched(wiki1m.url) == [0, size // 10, 2 * (size // 10), 3 * (size // 10)]


def test_consert_train_names_every_missing_input_before_any_work(tmp_path, monkeypatch, capsys):
    """A training config that names files not on disk stops in one line naming each, with what gets it: the
    paper's places with the download flag, another place with the flag and that place."""
    monkeypatch.chdir(tmp_path)
    files = "nli_files=[data/nli/snli_1.0/snli_1.0_train.jsonl, elsewhere/multinli_1.0/multinli_1.0_train.jsonl]"
    argv = ["train", "--set", "mode=joint-unsup", "--set", "nli_source=snli+mnli", "--set", files,
            "--set", "train_texts=data/wiki1m_for_simcse.txt", "--set", "output_dir=run"]  # fmt: skip
    assert cli_main(argv) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and line.startswith("consert train: error: 3 inputs are not on disk: ")
    assert "SNLI 1.0 (data/nli/snli_1.0/snli_1.0_train.jsonl): missing: run `consert download-data --snli`" in line
    assert (
        "(elsewhere/multinli_1.0/multinli_1.0_train.jsonl): missing: run `consert download-data --multinli elsewhere`"
        in line
    )
    assert "(data/wiki1m_for_simcse.txt): missing: run `consert download-data --wiki1m`" in line
    assert not Path("run").exists() and not Path("run.stage1").exists()


def test_kept_bytes_of_another_file_are_refetched_and_an_unreadable_archive_is_removed(mirror, capsys):
    """A .partial longer than the file now served (the file changed between runs): the server answers 416, and the
    download starts again rather than take those bytes. An archive that is no zip (a server's error page) is one
    line, and removed, so that the next run fetches it again."""
    wiki1m, glove = SOURCES["wiki1m"], SOURCES["glove"]
    data = mirror.expected[wiki1m.default]
    stale = Path(wiki1m.default + ".partial")
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"x" * (len(data) + 10))
    assert cli_main(["download-data", "--wiki1m"]) == 0
    assert Path(wiki1m.default).read_bytes() == data and mirror.fetched(wiki1m.url) == [len(data) + 10, 0]
    mirror.put(glove.url, b"<html>503 Service Unavailable</html>")
    assert cli_main(["download-data", "--glove"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "the download is not a readable archive" in line and "it was removed: run again" in line
    assert not list(Path("data").rglob("*.zip")) and not Path(glove.default).exists()


def test_an_installed_spacy_pipeline_is_not_downloaded_again(tmp_path, monkeypatch, capsys):
    """`--spacy MODEL` runs spaCy's download (pip) only where MODEL is not installed: an installed package (here a
    stand-in name that is importable) is left alone, with no network asked for."""
    site = tmp_path / "site" / "already_here_pipeline"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(download, "download_spacy_model", lambda model: pytest.fail(f"{model} fetched again"))
    assert cli_main(["download-data", "--spacy", "already_here_pipeline"]) == 0
    assert "spaCy's already_here_pipeline installed" in capsys.readouterr().out
