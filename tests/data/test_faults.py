"""Faults in the data: files that differ from SentEval's, malformed and fuzzed files, nothing half-written."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consert.cli import main
from consert.data.senteval import DataFormatError, DataIntegrityError, load_senteval

STS12 = ("downstream", "STS", "STS12-en-test")


def test_real_data_matches_the_manifest(real_data):
    assert real_data.verified


def test_modified_file_is_reported_by_name(real_data_dir, tmp_path, monkeypatch):
    import shutil

    copy = tmp_path / "senteval"
    shutil.copytree(real_data_dir, copy)
    gold = copy / "downstream" / "STS" / "STS13-en-test" / "STS.gs.FNWN.txt"
    gold.write_text("\n".join(gold.read_text().splitlines()[:-1] + ["0.0"]) + "\n")  # one changed score
    monkeypatch.delenv("CONSERT_ALLOW_UNVERIFIED_DATA", raising=False)
    with pytest.raises(DataIntegrityError, match=r"STS/STS13-en-test/STS\.gs\.FNWN\.txt: sha256"):
        load_senteval(copy)
    data = load_senteval(copy, allow_unverified=True)  # the explicit override
    assert not data.verified


def test_bad_data_leaves_no_output(tiny_tree, tmp_path):
    (tiny_tree / "downstream" / "SICK" / "SICK_test_annotated.txt").write_text("pair_ID\tsentence_A\n1\tx\n")
    out = tmp_path / "table1.csv"
    assert main(["table1", "--data", str(tiny_tree), "--output", str(out)]) == 2
    assert not out.exists() and list(tmp_path.glob("*.tmp")) == [] and list(tmp_path.glob(".table1*")) == []


_lines = st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40), min_size=0, max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(inputs=_lines, golds=_lines, raw=st.binary(max_size=64))
def test_fuzzed_sts_files_parse_or_raise_our_error(tmp_path_factory, inputs, golds, raw):
    from tests.fixtures import write_senteval_tree

    tree = write_senteval_tree(tmp_path_factory.mktemp("fuzz") / "senteval", pairs_per_file=2)
    folder = tree.joinpath(*STS12)
    (folder / "STS.input.MSRpar.txt").write_text("\n".join(inputs), encoding="utf-8")
    (folder / "STS.gs.MSRpar.txt").write_text("\n".join(golds), encoding="utf-8")
    (folder / "STS.input.MSRvid.txt").write_bytes(raw + b"\tb\n")
    try:
        data = load_senteval(tree)
    except DataFormatError as err:
        assert err.path.name.startswith("STS.")
    else:
        assert all(0 <= p.score <= 5 for p in data.sets["STS12"].groups["MSRpar"])


def test_nli_jsonl_loader(tmp_path):
    from consert.data.nli import load_nli_jsonl

    path = tmp_path / "snli.jsonl"
    path.write_text(
        '{"gold_label": "entailment", "sentence1": "A  man.", "sentence2": "A person."}\n'
        '{"gold_label": "-", "sentence1": "x", "sentence2": "y"}\n\n'
        '{"gold_label": "contradiction", "sentence1": "A", "sentence2": "B"}\n'
    )
    pairs = load_nli_jsonl(path)
    assert [(p.premise, p.label) for p in pairs] == [("A man.", "ENTAILMENT"), ("A", "CONTRADICTION")]
    path.write_text('{"gold_label": "entailment", "sentence1": "A"}\n')
    with pytest.raises(DataFormatError, match=r"snli\.jsonl:1: expected a JSON object with sentence1"):
        load_nli_jsonl(path)
    path.write_text('{"gold_label": "maybe", "sentence1": "A", "sentence2": "B"}\n')
    with pytest.raises(DataFormatError, match=r"snli\.jsonl:1: expected gold_label"):
        load_nli_jsonl(path)
    path.write_text("")
    with pytest.raises(DataFormatError, match="no labelled pairs"):
        load_nli_jsonl(path)
    with pytest.raises(DataFormatError, match="file not found"):
        load_nli_jsonl(tmp_path / "missing.jsonl")
