"""``consert download-data`` end to end against a web server on 127.0.0.1 that serves archives in the official
layouts (tests/mirror.py): every input of the paper config lands where the config names it, a download cut off
midway resumes from where it broke off (in the same run, and in the next), STS13's gold is its ``STS.gs`` file (the
archive also holds ``STS.output`` sample outputs), and the files that differ from SentEval's are named. Nothing is
called ready unverified: a body cut with no length, a server's error page, a file that changed between two tries, a
sha256 other than the pinned or first-recorded one, a GloVe line or a WordNet folder unlike the paper's are each
removed and named in one line. The served files are the tests' own, held to a test manifest
(``$CONSERT_TEST_DOWNLOADS``); where none is set, the shipped pins are tested (SNLI's, SICK's)."""

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
from consert.data.download import _SICK_URL, _STS_ARCHIVES, _STSB_ARCHIVE, MIRROR_ENV, SOURCES, TEST_EXPECTED_ENV
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
    wordnet = {f"wordnet/{kind}.{pos}": b"  1 license line\n" for kind in ("index", "data") for pos in WORDNET_POS}
    wordnet["wordnet/LICENSE"] = b"WordNet\n"
    mirror.put(SOURCES["wordnet"].url, _zip(wordnet))
    expected.update({f"data/wordnet/{name.split('/')[1]}": data for name, data in wordnet.items()})
    return expected


WORDNET_POS = ("noun", "verb", "adj", "adv")


def write_test_manifest(mirror, path: Path, **entries: dict) -> Path:
    """The tests' own manifest: SNLI and MultiNLI pinned to the sha256 and size of the archives served (the shipped
    pins are the real files'), the fakes' line counts (40,000 wiki1m lines, 1,200 GloVe lines); ``entries`` added."""
    served = {source.url: mirror.root.joinpath(mirror.path_of(source.url).lstrip("/")).read_bytes()
              for source in (SOURCES["snli"], SOURCES["multinli"])}  # fmt: skip
    manifest = {url: {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)} for url, data in served.items()}
    manifest |= {SOURCES["wiki1m"].url: {"lines": 40000}, SOURCES["glove"].url: {"lines": 1200}, **entries}
    path.write_text(json.dumps(manifest))
    return path


def _killed_run(mirror, source, fraction: float) -> int:
    """What a run killed ``fraction`` of the way through ``source``'s file leaves: its first bytes in ``.partial``
    (beside its target: the archives' folder for an archive) and, beside them, the response's validator (the file's
    ETag); returns the bytes kept."""
    data = mirror.root.joinpath(mirror.path_of(source.url).lstrip("/")).read_bytes()
    target = (
        Path(source.default)
        if not source.members
        else Path(source.default).parent / ".download" / source.url.rsplit("/", 1)[1]
    )
    killed = target.with_name(target.name + ".partial")
    killed.parent.mkdir(parents=True, exist_ok=True)
    killed.write_bytes(data[: int(len(data) * fraction)])
    etag = f'"{hashlib.sha256(data).hexdigest()[:16]}"'  # the mirror's ETag of that version
    target.with_name(target.name + ".partial.json").write_text(json.dumps({"If-Range": etag}))
    return killed.stat().st_size


FLAGS = ["download-data", "--sts", "--nli", "--glove", "--wiki1m", "--wordnet"]


def test_every_input_arrives_where_the_paper_config_names_it_and_a_cut_download_resumes(mirror, capsys):
    glove, wiki1m = SOURCES["glove"], SOURCES["wiki1m"]
    glove_size = len(mirror.root.joinpath(mirror.path_of(glove.url).lstrip("/")).read_bytes())
    mirror.cut_next(glove.url, glove_size // 2)  # the connection drops halfway through the GloVe archive
    kept = _killed_run(mirror, wiki1m, 1 / 3)  # a run killed a third of the way through wiki1m
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
    # nothing left half-written or waiting: no partial files or their validators, no archives, no staging folders
    assert not [p for p in Path(".").rglob("*") if ".partial" in p.name or p.name in (".download", ".unpacking")]
    # the unpinned downloads' first sha256, beside the data; the pinned ones (the test manifest's) record none
    records = {str(p) for p in Path("data").rglob("*.sha256")}
    assert records == {
        "data/glove.840B.300d.zip.sha256",
        "data/wiki1m_for_simcse.txt.sha256",
        "data/wordnet.zip.sha256",
    }
    wiki = hashlib.sha256(mirror.expected[wiki1m.default]).hexdigest()
    assert Path("data/wiki1m_for_simcse.txt.sha256").read_text() == f"{wiki}  {wiki1m.url}\n"
    etag = (
        f'"{hashlib.sha256(mirror.root.joinpath(mirror.path_of(glove.url).lstrip("/")).read_bytes()).hexdigest()[:16]}"'
    )
    assert mirror.if_range_sent(glove.url) == ["", etag]  # the resume sent the first response's ETag
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
    """Kept bytes that nothing ties to the file now served (no validator beside them, an unpinned file) are not
    resumed from: the download starts again. A pinned file's kept bytes are resumed from (its sha256 would catch a
    splice): longer than the file (it changed between runs), the server answers 416 and the download starts again.
    An archive that is no zip (a server's error page) is one line, and removed, so that the next run fetches it."""
    wiki1m, snli, glove = SOURCES["wiki1m"], SOURCES["snli"], SOURCES["glove"]
    data = mirror.expected[wiki1m.default]
    stale = Path(wiki1m.default + ".partial")
    stale.parent.mkdir(parents=True)
    stale.write_bytes(data[: len(data) // 2])
    assert cli_main(["download-data", "--wiki1m"]) == 0
    assert Path(wiki1m.default).read_bytes() == data and mirror.fetched(wiki1m.url) == [0]
    archive = mirror.root.joinpath(mirror.path_of(snli.url).lstrip("/")).read_bytes()
    stale = Path("data/.download/snli_1.0.zip.partial")
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"x" * (len(archive) + 10))
    assert cli_main(["download-data", "--snli"]) == 0
    assert mirror.fetched(snli.url) == [len(archive) + 10, 0] and Path("data/nli/snli_1.0/snli_1.0_dev.jsonl").is_file()
    mirror.put(glove.url, b"<html>503 Service Unavailable</html>")
    assert cli_main(["download-data", "--glove"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert (
        "not a readable archive" in line
        and "the download was removed: run `consert download-data --glove` again" in line
    )
    assert not list(Path("data").rglob("*.zip*")) and not Path(glove.default).exists()


def test_an_installed_spacy_pipeline_is_not_downloaded_again(tmp_path, monkeypatch, capsys):
    """`--spacy MODEL` runs spaCy's download (pip) only where MODEL is not installed: an installed package (here a
    stand-in name that is importable) is left alone, with no network asked for."""
    site = tmp_path / "site" / "already_here_pipeline"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(download, "download_spacy_model", lambda model: pytest.fail(f"{model} fetched again"))
    assert cli_main(["download-data", "--spacy", "already_here_pipeline"]) == 0
    assert "spaCy pipeline already_here_pipeline: present (installed)" in capsys.readouterr().out


def _served(mirror, source) -> bytes:
    return mirror.root.joinpath(mirror.path_of(source.url).lstrip("/")).read_bytes()


def _error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after the progress bars, one line
    assert err.startswith("consert download-data: error: ")
    return err


def test_a_body_cut_with_no_length_announced_is_removed_not_called_ready(mirror, capsys):
    """wiki1m served without Content-Length and cut after 30 % (at 03ef47f: kept and "ready"): its line count is not
    the paper's, so nothing is kept, and the line says so and what to run. Whole, with no length, it passes its
    checks. A pinned file's size is known from its pin: cut with no length, it resumes from where it broke off."""
    wiki1m, snli = SOURCES["wiki1m"], SOURCES["snli"]
    data = mirror.expected[wiki1m.default]
    mirror.send_without_length(wiki1m.url)
    mirror.cut_next(wiki1m.url, int(len(data) * 0.3))
    assert cli_main(["download-data", "--wiki1m"]) == 2
    line = _error_line(capsys)
    arrived = len(data[: int(len(data) * 0.3)].splitlines())  # the last one cut midway
    assert f"{arrived:,} lines where the paper's copy has 40,000" in line
    assert "the server announced no length" in line and "run `consert download-data --wiki1m` again" in line
    assert not [p for p in Path(".").rglob("*") if "wiki1m" in p.name]  # nothing kept: no file, partial or record
    assert cli_main(["download-data", "--wiki1m"]) == 0 and Path(wiki1m.default).read_bytes() == data
    archive = _served(mirror, snli)
    mirror.send_without_length(snli.url)
    mirror.cut_next(snli.url, len(archive) // 3)
    assert cli_main(["download-data", "--snli"]) == 0
    assert (
        mirror.fetched(snli.url) == [0, len(archive) // 3] and Path("data/nli/snli_1.0/snli_1.0_train.jsonl").is_file()
    )


def test_a_servers_error_page_is_not_saved_as_the_corpus_and_consert_train_does_not_train_on_it(mirror, capsys):
    """An HTML error page answered with 200 for SimCSE's wiki1m (at 03ef47f: saved as the corpus, and trained on)."""
    wiki1m = SOURCES["wiki1m"]
    mirror.put(wiki1m.url, b"<!DOCTYPE html>\n<html><body>Rate limit exceeded</body></html>\n")
    assert cli_main(["download-data", "--wiki1m"]) == 2
    assert "2 lines where the paper's copy has 40,000; the download was removed" in _error_line(capsys)
    assert not Path(wiki1m.default).exists() and not Path(wiki1m.default + ".partial").exists()
    argv = ["train", "--set", f"train_texts={wiki1m.default}", "--set", "output_dir=run"]
    assert cli_main(argv) == 2
    assert "missing: run `consert download-data --wiki1m`" in capsys.readouterr().err and not Path("run").exists()


@pytest.mark.parametrize("validator", ["ETag", "Last-Modified"])
def test_a_file_that_changed_on_the_server_between_two_tries_is_fetched_whole_not_spliced(mirror, validator):
    """At 03ef47f a resume after the file changed spliced the two versions (no If-Range): a corpus of both, a zip that
    then failed every later run. The resume sends the first response's validator as If-Range; the server, its file
    changed, answers 200 with the new file, which is fetched whole, in the same run and across runs. A server with no
    validator: an unpinned file's kept bytes are not resumed from."""
    mirror.validators = {validator}
    wiki1m, glove = SOURCES["wiki1m"], SOURCES["glove"]
    old = mirror.expected[wiki1m.default]
    new = old.replace(b"Wikipedia", b"Wikimedia")  # the same length and lines: only a splice check tells them apart
    mirror.cut_next(wiki1m.url, len(old) // 2)
    mirror.change_after_next(wiki1m.url, new)
    assert cli_main(["download-data", "--wiki1m"]) == 0
    assert Path(wiki1m.default).read_bytes() == new and mirror.fetched(wiki1m.url) == [0, len(old) // 2]
    assert mirror.if_range_sent(wiki1m.url)[1] != ""  # asked from where it broke off, if unchanged: answered whole
    # a zip changed between two runs: a killed run's half and its validator, then the new archive is served whole
    mirror.validators = {"ETag"}  # what the killed run kept
    kept = _killed_run(mirror, glove, 0.5)
    lines = mirror.expected["data/glove/glove.840B.300d.txt"].splitlines(keepends=True)
    changed = b"".join(lines[1:] + lines[:1])  # the same words and vectors, another order
    mirror.put(glove.url, _zip({"glove.840B.300d.txt": changed}))
    assert cli_main(["download-data", "--glove"]) == 0
    assert Path(glove.default, "glove.840B.300d.txt").read_bytes() == changed
    assert mirror.fetched(glove.url) == [kept]  # asked from where the killed run stopped, answered whole (200)
    # no validator at all: kept bytes of an unpinned file are not resumed from
    mirror.validators = set()
    Path(wiki1m.default).unlink()
    Path(wiki1m.default + ".sha256").unlink()
    mirror.cut_next(wiki1m.url, len(new) // 2)
    before = len(mirror.fetched(wiki1m.url))
    assert cli_main(["download-data", "--wiki1m"]) == 0
    assert Path(wiki1m.default).read_bytes() == new and mirror.fetched(wiki1m.url)[before:] == [0, 0]


def test_a_download_is_held_to_its_pin_or_to_its_first_downloads_sha256(mirror, capsys, tmp_path, monkeypatch):
    """A pinned archive whose sha256 differs (here: the test manifest's pin of another file) is removed, nothing of it
    unpacked. An unpinned file's first download records its sha256 beside the data; a later copy that differs is
    refused, naming the record."""
    snli, wiki1m = SOURCES["snli"], SOURCES["wiki1m"]
    manifest = write_test_manifest(mirror, tmp_path / "other.json", **{snli.url: {"sha256": "0" * 64}})
    monkeypatch.setenv(TEST_EXPECTED_ENV, str(manifest))
    assert cli_main(["download-data", "--snli"]) == 2
    line = _error_line(capsys)
    assert f"its sha256 is {hashlib.sha256(_served(mirror, snli)).hexdigest()[:16]}..., not 0000000000000000..." in line
    assert f"(the test manifest {manifest})" in line and "run `consert download-data --snli` again" in line
    assert not Path("data/nli").exists() and not list(Path("data").rglob("snli*"))
    assert cli_main(["download-data", "--wiki1m"]) == 0
    Path(wiki1m.default).unlink()
    mirror.put(wiki1m.url, mirror.expected[wiki1m.default].replace(b"sentence", b"SENTENCE"))
    assert cli_main(["download-data", "--wiki1m"]) == 2
    assert f"(its first download, recorded in {wiki1m.default}.sha256)" in _error_line(capsys)
    assert not Path(wiki1m.default).exists()


def test_a_glove_file_or_a_wordnet_folder_unlike_the_papers_is_removed_with_what_it_unpacked(mirror, capsys):
    """The zip's CRCs pass, but what it holds is not the paper's: a GloVe line of 299 numbers, a WordNet folder
    without its noun and verb files. Each is one line, and nothing of it stays."""
    glove, wordnet = SOURCES["glove"], SOURCES["wordnet"]
    lines = mirror.expected["data/glove/glove.840B.300d.txt"].splitlines(keepends=True)
    lines[6] = lines[6].rsplit(b" ", 1)[0] + b"\n"
    mirror.put(glove.url, _zip({"glove.840B.300d.txt": b"".join(lines)}))
    assert cli_main(["download-data", "--glove"]) == 2
    line = _error_line(capsys)
    assert "glove.840B.300d.txt: line 7 is not a word and 300 numbers; the download was removed" in line
    assert not Path(glove.default).exists() and not list(Path("data").rglob("*glove*"))
    mirror.put(wordnet.url, _zip({"wordnet/index.adj": b"x\n", "wordnet/data.adj": b"x\n"}))
    assert cli_main(["download-data", "--wordnet"]) == 2
    assert (
        "no index.noun, index.verb, index.adv, data.noun, data.verb, data.adv in the archive's folder"
        in _error_line(capsys)
    )
    assert not Path(wordnet.default).exists() and not list(Path("data").rglob("*wordnet*"))


def test_the_shipped_pins_hold_the_real_files_and_refuse_others(tmp_path, monkeypatch, real_data_dir, capsys):
    """No test manifest: the shipped pins. SICK's real files, served as they are, pass the manifest's sha256; one byte
    changed is refused. SNLI's pin (tensorflow/datasets' record) refuses an archive that is not the real one."""
    with serving(tmp_path / "www") as served:
        build_official_archives(served, real_data_dir)
        monkeypatch.setenv(MIRROR_ENV, served.url)
        monkeypatch.delenv(TEST_EXPECTED_ENV, raising=False)
        (tmp_path / "work").mkdir()
        monkeypatch.chdir(tmp_path / "work")
        assert cli_main(["download-data", "--snli"]) == 2
        line = _error_line(capsys)
        assert "not afb3d70a5af5d8de... (tensorflow/datasets' url_checksums/snli.txt)" in line
        assert (
            cli_main(["download-data", "--sts"]) == 0 and Path("data/senteval/downstream/SICK/SICK_train.txt").is_file()
        )
        capsys.readouterr()
        trial = _SICK_URL.format(name="SICK_trial.txt")
        original = served.root.joinpath(served.path_of(trial).lstrip("/")).read_bytes()
        served.put(trial, original.replace(b"NEUTRAL", b"NEUTRAl", 1))
        assert cli_main(["download-data", "--sts", "--dest", "other"]) == 2
        assert "(the shipped manifest consert/data/manifests/senteval_sts.json)" in _error_line(capsys)
        assert not Path("other/downstream").exists()


def test_download_all_tries_every_input_and_ends_with_one_table_and_a_failure_exit(mirror, capsys, monkeypatch):
    """The STS host down (its first archive gone) and spaCy's download failing: `--all` still fetches every other
    input, ends with one table (fetched, present, failed and why) and exits 1; the next run finds them present."""
    sts12 = next(iter(_STS_ARCHIVES.values()))[0]
    mirror.root.joinpath(mirror.path_of(sts12).lstrip("/")).unlink()
    monkeypatch.setattr(download, "download_spacy_model", lambda model: (_ for _ in ()).throw(OSError("no network")))
    assert cli_main(["download-data", "--all"]) == 1
    printed = capsys.readouterr().out
    table = printed[printed.index("\ninput ") :].splitlines()
    states = dict(line.split("  ", 1) for line in table[2:-1])
    states = {what.strip(): state.strip() for what, state in states.items()}
    assert states["SentEval's STS sets"].startswith("failed: ") and sts12 in states["SentEval's STS sets"]
    assert states["spaCy pipeline en_core_web_sm"] == "failed: no network"
    for title in ("SNLI 1.0", "MultiNLI 1.0", "GloVe 840B (300d)", "SimCSE's 1M Wikipedia sentences", "WordNet 3.0"):
        assert states[title].startswith("fetched ("), (title, states[title])
    assert table[-1] == "2 of 7 inputs failed: run the same command again (what arrived is kept)"
    for path, data in mirror.expected.items():
        if "senteval" not in path:
            assert Path(path).read_bytes() == data, path
    assert cli_main(["download-data", "--all"]) == 1
    again = capsys.readouterr().out
    assert "SNLI 1.0: present (" in again and "GloVe 840B (300d): present (" in again


@pytest.mark.parametrize("name", ["multinli", "glove"])
def test_a_failing_official_source_falls_back_to_its_maintainers_mirror_held_to_the_same_checks(mirror, capsys, name):
    """The official host gone: the mirror its maintainers name is fetched and must pass the same checks (MultiNLI's
    pin, GloVe's shape); bytes of another file there are refused, naming both URLs."""
    source = SOURCES[name]
    official = mirror.root.joinpath(mirror.path_of(source.url).lstrip("/"))
    data = official.read_bytes()
    official.unlink()
    (copy,) = source.mirrors
    mirror.put(copy, data[:-1] + bytes([data[-1] ^ 1]) if name == "multinli" else _zip({"x.txt": b"not GloVe\n"}))
    assert cli_main(["download-data", f"--{name}"]) == 2
    line = _error_line(capsys)
    assert f"{source.title}: every copy failed: {source.url}: " in line and f"; {copy}: " in line
    assert not any(Path("data").rglob(f"*{source.members[0][1].rsplit('/', 1)[-1]}"))
    mirror.put(copy, data)
    assert cli_main(["download-data", f"--{name}"]) == 0
    for path, expected in mirror.expected.items():
        if path.startswith(str(Path(source.default))) and Path(path).name in {Path(b).name for _, b in source.members}:
            assert Path(path).read_bytes() == expected
    assert mirror.fetched(copy) == [0, 0]  # the official tried first (its 404 named in the line above), then the copy
