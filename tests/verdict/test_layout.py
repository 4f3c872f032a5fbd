"""The comparison in the paper's layout: a row per published row, its cells side by side, the same numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd

from consert.paper.catalogue import COMPARED
from consert.verdict.decision import COMPARISON_COLUMNS
from consert.verdict.layout import paper_layout
from tests.conftest import PUBLISHED


def _cell(**values) -> dict:
    return {**dict.fromkeys(COMPARISON_COLUMNS, np.nan), **values}


def test_each_published_row_is_one_row_with_its_cells_side_by_side():
    """Two cells of ConSERT-base (Avg primary, STS12 diagnostic), a gap row (the comparison's, column ``*``), a
    whole artifact missing, a row of yours and a stated value: ConSERT-base is one row with both cells' numbers and
    its primary's verdict; the gap row keeps its status and shows the paper's numbers (Table 2 of the paper:
    ConSERT-large, STS12 70.69, Avg 76.45); the row of yours, the missing artifact's ``*`` and the figure's stated
    value are not published table rows."""
    comparison = pd.DataFrame([
        _cell(artifact="table2", row="ConSERT-base", column="Avg", role="primary", published=72.74, reproduced=72.1,
              seed_std=0.3, delta=-0.64, diff_low=-1.1, diff_high=-0.2, verdict="reproduced", status="compared",
              comparable=True, n_seeds=3, setting="paper setting", reason=""),
        _cell(artifact="table2", row="ConSERT-base", column="STS12", role="diagnostic", published=64.64,
              reproduced=65.0, seed_std=0.5, delta=0.36, diff_low=-0.4, diff_high=1.1, verdict="reproduced",
              status="compared", comparable=True),
        _cell(artifact="table2", row="ConSERT-large", column="*", role="primary", verdict="not run",
              status="not run", reason="declared"),
        _cell(artifact="table3", row="*", column="*", role="primary", verdict="missing", status="missing"),
        _cell(artifact="table2", row="mine (yours)", column="Avg", role="yours", status="yours", reproduced=70.0),
        _cell(artifact="figure4_topk", row="best k", column="k", role="primary", status="compared"),
    ])  # fmt: skip
    layout = paper_layout(comparison, COMPARED, PUBLISHED).set_index("row")
    assert list(layout.index) == ["ConSERT-base", "ConSERT-large"]
    base = layout.loc["ConSERT-base"]
    assert (base["Avg ours"], base["Avg sd"], base["Avg published"], base["Avg low"], base["Avg high"]) == (
        72.1, 0.3, 72.74, -1.1, -0.2)  # fmt: skip
    assert base["STS12 ours"] == 65.0 and base["STS12 verdict"] == "reproduced" and pd.isna(base["STS13 ours"])
    assert (base.primary, base.verdict, base.n_seeds, base.status) == ("Avg", "reproduced", 3, "compared")
    large = layout.loc["ConSERT-large"]
    assert (large.status, large.verdict, large.reason, large.primary) == ("not run", "not run", "declared", "")
    assert (large["STS12 published"], large["Avg published"]) == (70.69, 76.45) and pd.isna(large["Avg ours"])
    # without the published folder, the numbers of a row not run are not known
    assert pd.isna(paper_layout(comparison, COMPARED).set_index("row").loc["ConSERT-large", "Avg published"])
