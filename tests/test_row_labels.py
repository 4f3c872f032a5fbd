"""The tables' row names are built in consert/row_labels.py alone: no f-string of a row label anywhere else in the
packages (a second spelling could drift from the published tables' and leave a row uncompared); and each name is the
published tables' spelling."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pandas as pd

from consert import row_labels
from tests.conftest import ROOT

#: How a row label begins: a model name and a dash, then its size (a formatted value), or a model of yours.
ROW_LABEL_START = re.compile(r"^(ConSERT|BERT|SBERT|SimCSE|AugCSE)-$")


def _row_label_fstrings(path: Path) -> list[str]:
    """The f-strings of ``path`` that build a row label: ``f"BERT-{size}..."`` and the like, or ``f"... ({YOURS})"``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.JoinedStr) or not node.values:
            continue
        first = node.values[0]
        starts = isinstance(first, ast.Constant) and ROW_LABEL_START.match(str(first.value))
        yours = any(isinstance(v, ast.FormattedValue) and getattr(v.value, "id", "") == "YOURS" for v in node.values)
        if starts or yours:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_row_label_is_built_outside_row_labels():
    modules = [path for package in ("consert", "baselines") for path in sorted((ROOT / package).rglob("*.py"))]
    assert _row_label_fstrings(ROOT / "consert" / "row_labels.py")  # the scan sees the f-strings where they are
    elsewhere = [hit for path in modules if path.name != "row_labels.py" for hit in _row_label_fstrings(path)]
    assert elsewhere == []


def test_the_names_are_the_published_tables_spelling():
    """Every size's published Table 2 and Table 3 rows, as the published files spell them (read, not restated)."""
    table2 = set(pd.read_csv(ROOT / "results" / "published" / "consert_table2_unsup.csv").method)
    table3 = pd.read_csv(ROOT / "results" / "published" / "consert_table3_sup.csv")
    table3 = set(table3.method + " | " + table3.training_data)
    for size in ("base", "large"):
        assert {row_labels.bert(size), row_labels.flow(size), row_labels.consert(size)} <= table2
        assert f"{row_labels.sbert_nli(size)} | nli" in table3
        assert f"{row_labels.consert(size, 'sup-unsup')} | nli+sts_unlabeled" in table3
    assert row_labels.whitening("base", "cls", 256) == "BERT-base-whitening-256 (cls)"
    assert row_labels.whitening("base", "mean:1,-1", None) == "BERT-base-whitening (mean:1,-1)"
    assert row_labels.yours("mine") == "mine (yours)"
