"""The SentEval loaders on generated fixtures and on the real data."""

from __future__ import annotations

import shutil

import pytest

from consert.data.senteval import DATASETS, DataFormatError, load_senteval, resolve_data_dir

STS12 = ("downstream", "STS", "STS12-en-test")


def _file(root, *parts):
    return root.joinpath(*parts)


def test_tiny_tree_loads_with_blank_gold_lines_skipped(tiny_tree):
    data = load_senteval(tiny_tree)
    assert tuple(data.sets) == DATASETS
    # STS15/16: 6 pairs per subset, every other gold blank -> 3 scored pairs, but all 12 texts kept
    sts15 = data.sets["STS15"]
    assert all(len(pairs) == 3 for pairs in sts15.eval_groups.values())
    assert len(sts15.texts) == 5 * 6 * 2
    assert len(data.sets["STS12"].eval_groups["MSRpar"]) == 6
    assert len(data.sets["STSb"].eval_groups) == 1 and len(data.sets["STSb"].groups["train"]) == 6
    assert len(data.unlabeled_texts()) == sum(len(s.texts) for s in data.sets.values())


def test_crlf_and_whitespace_are_normalised(tiny_tree):
    path = _file(tiny_tree, *STS12, "STS.input.MSRpar.txt")
    path.write_bytes(b"a  man\t plays .\r\nthe dog\truns\r\n")
    _file(tiny_tree, *STS12, "STS.gs.MSRpar.txt").write_bytes(b"4.0\r\n1.5\r\n")
    pairs = load_senteval(tiny_tree).sets["STS12"].groups["MSRpar"]
    assert [(p.sent1, p.sent2, p.score) for p in pairs] == [("a man", "plays .", 4.0), ("the dog", "runs", 1.5)]


def test_stsb_extra_tab_columns_are_ignored(tiny_tree):
    path = _file(tiny_tree, "downstream", "STS", "STSBenchmark", "sts-test.csv")
    path.write_text("g\tf\ty\t1\t3.5\tfirst sentence\tsecond sentence\tsource-a\tsource-b\n")
    (pair,) = load_senteval(tiny_tree).sets["STSb"].groups["test"]
    assert (pair.sent1, pair.sent2, pair.score) == ("first sentence", "second sentence", 3.5)


def test_tab_inside_sts_sentence_is_a_clear_error(tiny_tree):
    path = _file(tiny_tree, *STS12, "STS.input.MSRpar.txt")
    lines = path.read_text().splitlines()
    lines[2] = lines[2] + "\tstray third field"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFormatError) as err:
        load_senteval(tiny_tree)
    assert err.value.line == 3 and err.value.path == path
    assert "expected 2 tab-separated fields, found 3" in str(err.value)


def test_non_numeric_score_names_file_and_line(tiny_tree):
    path = _file(tiny_tree, *STS12, "STS.gs.MSRvid.txt")
    lines = path.read_text().splitlines()
    lines[4] = "four"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFormatError, match=r"STS\.gs\.MSRvid\.txt:5: expected a gold score .*, found 'four'"):
        load_senteval(tiny_tree)


@pytest.mark.parametrize(
    ("gold", "where"),
    [
        ("0_5", "sts"),  # float() reads it as 5.0
        ("\u0664", "sts"),  # an Arabic-Indic 4: float() reads it as 4.0
        ("\uff13.5", "stsb"),  # a full-width 3
        ("nan", "sts"),
        ("inf", "stsb"),
        ("4e0", "sick"),
        ("+4", "sick"),
        ("4.", "sts"),
    ],
)
def test_a_gold_score_float_reads_but_senteval_never_writes_is_refused_with_file_line_and_value(tiny_tree, gold, where):
    """SentEval's gold files hold ASCII decimals ("4", "3.8", "4.800"); anything else is refused, naming the file,
    the line and the value as found, on each of the three layouts (an STS year, STS-B's column 4, SICK's column 3)."""
    if where == "sts":
        path, line = _file(tiny_tree, *STS12, "STS.gs.MSRvid.txt"), 2
        rows = path.read_text().splitlines()
        rows[1] = gold
    else:
        path = _file(tiny_tree, "downstream", *(("SICK", "SICK_test_annotated.txt") if where == "sick" else
                                                ("STS", "STSBenchmark", "sts-dev.csv")))  # fmt: skip
        rows, line = path.read_text().splitlines(), 3
        fields = rows[2].split("\t")
        fields[3 if where == "sick" else 4] = gold
        rows[2] = "\t".join(fields)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as err:
        load_senteval(tiny_tree)
    assert (err.value.path, err.value.line) == (path, line)
    assert f"found {gold!r}" in str(err.value) and "\n" not in str(err.value)


def test_gold_scores_as_senteval_writes_them_are_read_as_their_decimal_value(tiny_tree):
    path = _file(tiny_tree, *STS12, "STS.gs.MSRvid.txt")
    rows = path.read_text().splitlines()
    rows[:4] = ["5", "0.0", " 3.800 ", "4.80000000000000"]  # the real files' shapes (and stray spaces, stripped)
    path.write_text("\n".join(rows) + "\n")
    scores = [p.score for p in load_senteval(tiny_tree).sets["STS12"].groups["MSRvid"][:4]]
    assert scores == [5.0, 0.0, 3.8, 4.8]


def test_out_of_range_score_is_rejected(tiny_tree):
    path = _file(tiny_tree, "downstream", "SICK", "SICK_trial.txt")
    lines = path.read_text().splitlines()
    fields = lines[1].split("\t")
    fields[3] = "7.5"
    lines[1] = "\t".join(fields)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFormatError, match=r"SICK_trial\.txt:2: score 7\.5 outside \[1\.0, 5\.0\]"):
        load_senteval(tiny_tree)


def test_missing_file_is_named(tiny_tree):
    path = _file(tiny_tree, *STS12, "STS.gs.SMTeuroparl.txt")
    path.unlink()
    with pytest.raises(DataFormatError, match="STS.gs.SMTeuroparl.txt: file not found"):
        load_senteval(tiny_tree)


def test_line_count_mismatch_is_reported(tiny_tree):
    path = _file(tiny_tree, *STS12, "STS.gs.MSRpar.txt")
    path.write_text("1.0\n2.0\n")
    with pytest.raises(DataFormatError, match="has 2 lines but STS.input.MSRpar.txt has 6"):
        load_senteval(tiny_tree)


def test_empty_and_undecodable_files(tiny_tree):
    path = _file(tiny_tree, *STS12, "STS.input.MSRvid.txt")
    path.write_bytes(b"")
    with pytest.raises(DataFormatError, match="file is empty"):
        load_senteval(tiny_tree)
    path.write_bytes(b"ok\tfine\n\xff\xfe bad\tbytes\n")
    with pytest.raises(DataFormatError, match=r"MSRvid\.txt:2: not valid UTF-8"):
        load_senteval(tiny_tree)


def test_data_dir_resolution_order(tiny_tree, tmp_path, monkeypatch):
    downstream = tiny_tree / "downstream"
    assert resolve_data_dir(tiny_tree) == downstream
    assert resolve_data_dir(downstream) == downstream
    monkeypatch.setenv("CONSERT_DATA", str(tiny_tree))
    assert resolve_data_dir() == downstream
    monkeypatch.delenv("CONSERT_DATA")
    clone = tmp_path / "work" / "clone"
    clone.mkdir(parents=True)
    monkeypatch.chdir(clone)
    with pytest.raises(
        DataFormatError, match=r"^[^\n]*pass --set data=DIR, set \$CONSERT_DATA, or run `consert download-data`"
    ):
        resolve_data_dir(flag="--set data=DIR", checkout=clone)
    shutil.copytree(tiny_tree, tmp_path / "work" / "shared" / "data" / "senteval")  # ../shared beside the clone
    found = resolve_data_dir(checkout=clone)
    assert found == (tmp_path / "work" / "shared" / "data" / "senteval" / "downstream").resolve()
    monkeypatch.chdir(tmp_path)  # the working directory elsewhere: found beside the package's checkout
    assert resolve_data_dir(checkout=clone) == found


def test_a_file_given_as_the_data_folder_is_named_as_a_file(tmp_path):
    table = tmp_path / "some.csv"
    table.write_text("a,b\n")
    with pytest.raises(DataFormatError, match=r"some\.csv: a file, not a folder \(the given path\): --data DIR"):
        resolve_data_dir(table)


def test_fingerprint_is_stable_and_changes_with_content(tiny_tree):
    before = load_senteval(tiny_tree).fingerprint
    assert load_senteval(tiny_tree).fingerprint == before
    path = _file(tiny_tree, *STS12, "STS.gs.MSRpar.txt")
    path.write_text("0.000\n" + "\n".join(path.read_text().splitlines()[1:]) + "\n")
    assert load_senteval(tiny_tree).fingerprint != before


def test_real_data_counts(real_data):
    counts = {name: sum(len(p) for p in sts.eval_groups.values()) for name, sts in real_data.sets.items()}
    assert counts == {
        "STS12": 3108,
        "STS13": 1500,
        "STS14": 3750,
        "STS15": 3000,
        "STS16": 1186,
        "STSb": 1379,
        "SICK-R": 4927,
    }
    assert len(real_data.unlabeled_texts()) == 89192
    assert len(real_data.sets["SICK-R"].nli["train"]) == 4500
