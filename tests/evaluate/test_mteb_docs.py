"""mteb as its users expect: ``consert evaluate --format mteb`` writes, by default, into mteb's own cache, and
the loading snippet of docs/evaluation.md, run as written, finds the scores the command printed."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from consert.cli import main as cli_main
from tests.conftest import ROOT

DOC = ROOT / "docs" / "evaluation.md"


def _snippet() -> str:
    """The Python block of the docs' "Load the mteb files" section, as written."""
    section = DOC.read_text().split("## Load the mteb files", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _printed_spearman(out: str) -> dict[str, float]:
    """The printed table's ``all`` Spearman of each set (columns: dataset n_pairs all mean wmean)."""
    rows = [line.split() for line in out.splitlines()]
    return {row[0]: float(row[2]) for row in rows if len(row) >= 3 and row[0].startswith("STS") and row[1].isdigit()}


def test_the_docs_snippet_loads_the_default_mteb_output(tiny_model_dir, tiny_tree, tmp_path, monkeypatch, capsys):
    cache = tmp_path / "mteb-cache"
    monkeypatch.setenv("MTEB_CACHE", str(cache))  # mteb's own default folder, for the command and for mteb
    monkeypatch.chdir(tmp_path)
    (tmp_path / "path" / "to").mkdir(parents=True)
    (tmp_path / "path" / "to" / "model").symlink_to(tiny_model_dir)  # the docs' model, a tiny random BERT
    printed = {}
    for pooling in ("model", "avg_top2"):  # the model's own modules; SimCSE's name of the paper's pooling
        command = ["evaluate", "path/to/model", "--pooling", pooling, "--tasks", "STS12", "STSBenchmark"]
        assert cli_main([*command, "--format", "mteb", "--data", str(tiny_tree)]) == 0
        out = capsys.readouterr().out
        assert f"wrote {cache}/results/path__to__model/no_revision_available/" in out, out
        printed[pooling] = _printed_spearman(out)
    assert not (tmp_path / "mteb_results").exists()  # nothing outside mteb's cache
    with contextlib.redirect_stdout(io.StringIO()) as shown:
        exec(compile(_snippet(), str(DOC), "exec"), {})
    loaded = {
        (experiment, task): float(score) for _, experiment, task, score in map(str.split, shown.getvalue().splitlines())
    }
    expected = {
        (experiment, task): round(printed[pooling][name], 2)
        for experiment, pooling in (("None", "model"), ("max_length_64__pooling_mean_-2,-1", "avg_top2"))
        for task, name in (("STS12", "STS12"), ("STSBenchmark", "STSb"))
    }
    assert loaded == pytest.approx(expected, abs=0.011), shown.getvalue()
