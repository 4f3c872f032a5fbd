"""``consert evaluate FOLDER`` of a harness export puts the scores into its model card (the ``model-index`` of
the front matter and the Scores section), atomically and under the user's umask; a card the harness did not
write, and a partial or dev evaluation, leave the card byte for byte."""

from __future__ import annotations

import os
import re
import shutil
import stat

import pytest
import yaml

from consert.cli import main
from consert.data.senteval import DATASETS

#: What every harness call here passes: the tiny tree's data, fp32 PyTorch (no precision probe, no ONNX).
FAST = ["--dtype", "fp32", "--engine", "torch"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A tiny random BERT exported by the harness (mean of the last two layers built into its modules)."""
    from transformers import AutoTokenizer

    from consert.encode.models import STAND_IN_MODEL, resolve_model
    from consert.train.export import export_model
    from tests import fixtures

    _, model = fixtures.tiny_bert(vocab_size=30522, hidden_size=32, layers=2, heads=2, intermediate_size=64)
    tokenizer = AutoTokenizer.from_pretrained(resolve_model(STAND_IN_MODEL).path)
    run = tmp_path_factory.mktemp("exports") / "tiny-run"
    record = {"eval_pooling": "mean:-2,-1", "base_model": "tiny-bert", "config": {"output_dir": str(run / "model")}}
    return export_model(model, tokenizer, run / "model", pooling="mean:-2,-1", max_length=32, record=record, log=[])


@pytest.fixture()
def folder(exported, tmp_path):
    """A fresh copy of the export (each test changes its card)."""
    return shutil.copytree(exported, tmp_path / "tiny-run" / "model")


def _front_matter(card: str) -> dict:
    """The Hub's reading of a card's metadata: the YAML between the first two ``---`` lines."""
    return yaml.safe_load(card.split("---\n")[1])


def _printed_scores(out: str) -> dict[str, float]:
    """The scores of the summary line as printed (``STS12 12.34 [lo, hi] | ... | Avg. 56.78 [...]``)."""
    (line,) = [line for line in out.splitlines() if line.startswith("STS12 ")]
    return {m[1]: float(m[2]) for m in re.finditer(r"(\S+?)\.? (-?\d+\.\d\d)(?: \[[^]]*\])?(?: \||$)", line)}


def test_evaluating_an_export_writes_the_printed_scores_into_its_card(folder, tiny_tree, capsys):
    card = folder / "README.md"
    before = card.read_text()
    assert "model-index" not in _front_matter(before) and "Not evaluated yet" in before
    edited = before.replace("## Citation", "A line the user added by hand.\n\n## Citation")
    card.write_text(edited)
    previous = os.umask(0o027)
    try:
        assert main(["evaluate", str(folder), "--data", str(tiny_tree), *FAST]) == 0
    finally:
        os.umask(previous)
    out = capsys.readouterr().out
    printed = _printed_scores(out)
    assert set(printed) == {*DATASETS, "Avg"}
    assert f"updated the scores of {card}" in out

    after = card.read_text()
    (index,) = _front_matter(after)["model-index"]
    assert index["name"] == "tiny-run"
    values = {r["dataset"]["name"]: r["metrics"][0]["value"] for r in index["results"]}
    assert values == {name: printed[name] for name in DATASETS}
    assert all(
        r["dataset"]["split"] == "test" and r["metrics"][0]["type"] == "spearman_cosine" for r in index["results"]
    )
    row = "| " + " | ".join(f"{printed[name]:.2f}" for name in (*DATASETS, "Avg")) + " |"
    assert row in after.splitlines() and "Not evaluated yet" not in after
    # the rest of the card as it was: the metadata besides the model-index, the hand-written line
    meta_before, meta_after = _front_matter(edited), _front_matter(after)
    assert {k: v for k, v in meta_after.items() if k != "model-index"} == meta_before
    assert "A line the user added by hand." in after and after.endswith(edited.split("## Usage")[1])
    # a fresh file under the umask (0666 & ~027), nothing left beside it
    assert stat.S_IMODE(card.stat().st_mode) == 0o640
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == []


def test_a_dev_or_partial_evaluation_leaves_the_card_as_it_is(folder, tiny_tree, capsys):
    card = folder / "README.md"
    before = card.read_bytes()
    common = [str(folder), "--data", str(tiny_tree), *FAST]
    assert main(["evaluate", *common, "--split", "dev", "--tasks", "STSb", "SICK-R"]) == 0
    assert card.read_bytes() == before and "left as it is: --split dev" in capsys.readouterr().out
    assert main(["evaluate", *common, "--tasks", "STS12", "STSb", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert card.read_bytes() == before and "left as it is: only STS12 STSb evaluated" in captured.err
    assert [block["pooling"] for block in yaml.safe_load(captured.out)] == ["mean:-2,-1"]  # stdout stays JSON


def test_a_card_the_harness_did_not_write_is_left_byte_for_byte(folder, tiny_tree, capsys):
    """An export whose card was replaced (or predates the marker), and a model folder that is no export."""
    foreign = b"---\nlicense: mit\nmodel-index:\n- name: theirs\n  results: []\n---\n# Their card\n\n## Scores\n\n1\n"
    card = folder / "README.md"
    card.write_bytes(foreign)
    assert main(["evaluate", str(folder), "--data", str(tiny_tree), *FAST]) == 0
    assert card.read_bytes() == foreign
    assert "left as it is: not marked as written by the harness's export" in capsys.readouterr().out

    (folder / "consert_training.json").unlink()  # no longer an export: not a word about its card
    assert main(["evaluate", str(folder), "--data", str(tiny_tree), *FAST]) == 0
    assert card.read_bytes() == foreign and "model card" not in capsys.readouterr().out


def test_the_card_update_replaces_the_scores_and_only_them():
    """A second update replaces the first (no second table, no second model-index); a broken front matter is
    refused in one line rather than rewritten."""
    import pandas as pd

    from consert.train.model_card import model_card, with_scores

    record = {"eval_pooling": "mean:-2,-1", "config": {"output_dir": "runs/mine/model"}}
    names = [*DATASETS, "Avg"]

    def frame(values):
        return pd.DataFrame({"dataset": names, "subset": "all", "spearman": values})

    first = with_scores(model_card(record), record, frame([70, 71, 72, 73, 74, 75, 76, 73]))
    second = with_scores(first, record, frame([60.004, 61, 62, 63, 64, 65, 66, 63.0]))
    assert second == with_scores(model_card(record), record, frame([60.004, 61, 62, 63, 64, 65, 66, 63.0]))
    assert (
        second.count("| STS12 |") == 1 and "| 60.00 | 61.00 | 62.00 | 63.00 | 64.00 | 65.00 | 66.00 | 63.00 |" in second
    )
    (index,) = _front_matter(second)["model-index"]
    assert index["name"] == "mine" and [r["metrics"][0]["value"] for r in index["results"]] == [60.0, *range(61, 67)]
    with pytest.raises(ValueError, match="not YAML"):
        with_scores("---\nkey: [unclosed\n---\n# card\n", record, frame([70] * 8))
