"""``consert evaluate`` names each pooling as the user typed it (SimCSE's ``avg_first_last``, not the harness's
``mean:1,-1``) in the table, the CSV and the JSON, says beside ``cls`` which of SimCSE's it is, and keeps one
pooling typed two ways as one: scored once, from one vector cache."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from consert.cli import main
from consert.encode.pooling import CLS_VS_SIMCSE
from consert.io import load_replicates

FAST = ["--dtype", "fp32", "--engine", "torch"]


def test_output_names_the_poolings_as_typed(tiny_model_dir, tiny_tree, tmp_path, capsys):
    csv = tmp_path / "r.csv"
    poolings = ["--pooling", "avg_first_last", "--pooling", "mean:1,-1", "--pooling", "cls"]
    assert main(["evaluate", tiny_model_dir, "--data", str(tiny_tree), *FAST, *poolings, "--output", str(csv)]) == 0
    headings = re.findall(r"pooling=(.*?)  split=", capsys.readouterr().out)
    assert headings == ["avg_first_last (mean:1,-1 here)", f"cls ({CLS_VS_SIMCSE})"]  # mean:1,-1 is the same one
    frame = pd.read_csv(csv)
    assert list(frame.pooling.unique()) == ["avg_first_last", "cls"]
    assert load_replicates(csv, "avg_first_last") and load_replicates(csv, "cls")  # the CSV's names find them

    assert main(["evaluate", tiny_model_dir, "--data", str(tiny_tree), *FAST, *poolings, "--format", "json"]) == 0
    blocks = json.loads(capsys.readouterr().out)
    assert [block["pooling"] for block in blocks] == ["avg_first_last", "cls"]
    by_name = frame[frame.subset == "all"].groupby("pooling").spearman.apply(list)
    for block in blocks:  # the same scores under the same names in both formats
        assert [round(s["spearman"], 4) for s in block["scores"].values()] == by_name[block["pooling"]]


def test_two_spellings_of_one_pooling_share_a_vector_cache(tiny_model_dir, tiny_tree, tmp_path, capsys):
    cache = tmp_path / "vectors.npz"
    common = ["--data", str(tiny_tree), *FAST]
    assert main(["encode", tiny_model_dir, "--pooling", "mean:1,-1", "--output", str(cache), *common]) == 0
    assert main(["evaluate", tiny_model_dir, "--pooling", "avg_first_last", *common, "--format", "json"]) == 0
    direct = json.loads(capsys.readouterr().out.split("\n", 1)[1])  # after encode's "wrote" line
    assert main(["evaluate", tiny_model_dir, "--pooling", "avg_first_last", "--vectors", str(cache), *common,
                 "--format", "json"]) == 0  # fmt: skip
    cached = json.loads(capsys.readouterr().out)
    assert cached[0]["pooling"] == "avg_first_last" and cached[0]["scores"] == direct[0]["scores"]


def test_help_and_docs_put_simcses_cls_beside_cls(capsys):
    from pathlib import Path

    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    assert f"cls ({CLS_VS_SIMCSE}) |" in " ".join(capsys.readouterr().out.split())
    root = Path(__file__).resolve().parents[2]
    for page in (root / "README.md", root / "docs" / "evaluation.md"):
        text = " ".join(page.read_text(encoding="utf-8").split())
        start = text.index("`--pooling`")
        assert text[start:].startswith(("`--pooling` takes `cls` (the", "`--pooling`: `cls` (the")), page
        assert "SimCSE's `cls_before_pooler`; SimCSE's `cls` is `cls_pooler` here" in text[start : start + 200], page
