"""Nothing leaves the gate silently (issue 56): a row that cannot be shown equivalent can still be shown not
equivalent; seeds that do not spread (a seed never applied) fail; a NaN primary cell and a missing family file the
config trains are ``missing``; a table listing a seed twice is refused; rows of another setting are counted; the claims
use the gate's noise kinds. Fixtures built by construction, expected values from arithmetic and chi-square tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from consert.paper.catalogue import COMPARED
from consert.verdict.claim_checks import Tables, noise_kind
from consert.verdict.compare import compare
from consert.verdict.decision import MULTI_SUBSET, RowKinds, load_decision
from consert.verdict.gate import gate
from tests.conftest import PUBLISHED
from tests.verdict.test_compare import PAPER, _primary, _published_row, _results, _seeded


def test_a_row_no_run_can_show_equivalent_still_fails_when_its_interval_lies_beyond_the_margin(tmp_path):
    """Declared SD 1.0 against one published run: 1.6449 x 1.0 + 0.005 = 1.65 > 1, undecidable. One seed 4 points
    low: its interval at the declared SD, -4 +- (1.6449 x 1.0 x sqrt(2) + 0.005) = [-6.33, -1.67], lies wholly
    below -1: not reproduced, and the gate fails. 0.1 points off it stays undecidable and passes."""
    table = pd.DataFrame([_published_row("ConSERT-base", -4.0), _published_row("ConSERT-large", 0.1)])
    comparison = compare(COMPARED, _results(tmp_path, table), PUBLISHED, seed_noise={"consert": 1.0})
    low = _primary(comparison, "ConSERT-base")
    assert low.verdict == "not reproduced" and "shown not equivalent" in low.reason
    assert abs(low.diff_high - (-4 + 1.6449 * np.sqrt(2) + 0.005)) < 1e-3
    assert _primary(comparison, "ConSERT-large").verdict == "undecidable at its margin"
    assert gate(comparison)[0] == 1


def test_seeds_that_do_not_spread_fail_the_gate(tmp_path):
    """A seed never applied gives identical seeds (spread 0): ``seeds identical``. The lower tail: 4 df s^2 /
    (0.5 x 0.3)^2 below chi^2(4)'s 0.0005 point, 0.0639 (a chi-square table), i.e. s < 0.15 sqrt(0.0639 / 4) =
    0.019: 0.015 is ``too tight``, 0.025 passes (each row is its own pool: one row a size)."""
    identical = compare(COMPARED, _results(tmp_path / "same", _seeded(0.0, 0.0, std=0.0, n=3)), PUBLISHED)
    cell = _primary(identical, "ConSERT-base")
    assert cell.verdict == "not reproduced" and cell.reason.startswith("seeds identical")
    assert gate(identical)[0] == 1
    tight = _primary(
        compare(COMPARED, _results(tmp_path / "tight", _seeded(0.0, 0.0, std=0.015)), PUBLISHED), "ConSERT-base"
    )
    assert tight.verdict == "not reproduced" and tight.reason.startswith("too tight")
    fine = _primary(
        compare(COMPARED, _results(tmp_path / "fine", _seeded(0.0, 0.0, std=0.025)), PUBLISHED), "ConSERT-base"
    )
    assert fine.verdict == "reproduced" and not fine.reason


def test_a_table_that_lists_a_seed_twice_is_refused_where_it_is_read(tmp_path):
    """``seeds`` "1;1;2": three runs counted, two distinct seeds. The comparison and the claims refuse the file in one
    line naming its line (the header is line 1, ConSERT-base's row line 2), never deciding on it."""
    table = _seeded(0.0, 0.0, n=3).assign(seeds=["1;1;2", "1;2;3"])
    results = _results(tmp_path, table)
    with pytest.raises(ValueError, match=r"table2_unsup.csv:2: seed 1 is listed twice \(seeds 1;1;2\)"):
        compare(COMPARED, results, PUBLISHED)
    decision = load_decision(PUBLISHED)
    tables = Tables(results, decision, {"table2": "table2_unsup.csv"})
    with pytest.raises(ValueError, match="seed 1 is listed twice"):
        tables("table2")
    table.assign(seeds=["1;2;3", "1;2;3"]).to_csv(results / "table2_unsup.csv", index=False)
    assert _primary(compare(COMPARED, results, PUBLISHED), "ConSERT-base").status == "compared"


def test_a_nan_cell_of_a_table_whose_every_set_is_primary_is_missing(tmp_path):
    """BERT-whitening's Table 1: every published set is a primary cell (rule "*"). One NaN cell: one missing row."""
    whitening = pd.read_csv(PUBLISHED / "bert_whitening_table1.csv")
    rows = [_published_row("ConSERT-base"), _published_row("ConSERT-large")]
    for _, published in whitening.iterrows():
        scores = {c: published[c] for c in ("STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R")}
        scores |= {f"{c}_wmean": scores.get(c, np.nan) for c in MULTI_SUBSET}
        rows.append({"method": f"{published['method']} ({published['pooling']})", "size": "base", **scores, **PAPER})
    rows[2]["STSb"] = np.nan
    comparison = compare(COMPARED, _results(tmp_path, pd.DataFrame(rows)), PUBLISHED)
    missing = comparison[(comparison.artifact == "whitening_table1") & (comparison.status == "missing")]
    assert missing.column.tolist() == ["STSb"] and "no value for its primary cell (STSb)" in missing.reason.item()
    cells = comparison[(comparison.artifact == "whitening_table1") & (comparison.status == "compared")]
    assert len(cells) == 7 * len(whitening) - 1 and (cells.verdict == "reproduced").all()
    assert gate(comparison)[0] == 1


def test_a_missing_family_file_is_missing_when_the_config_trains_the_family(tmp_path):
    results = _results(tmp_path, _seeded(0.0, 0.0, n=3))
    family = lambda frame: frame[frame.artifact == "family"]  # noqa: E731
    assert family(compare(COMPARED, results, PUBLISHED)).empty  # not trained: optional, nothing to say
    trained = family(compare(COMPARED, results, PUBLISHED, seeds={"family:simcse": 3}))
    assert trained.status.tolist() == ["missing"] and "contrastive_family.csv not found" in trained.reason.item()


def test_rows_of_another_setting_are_counted_in_the_gates_summary(tmp_path):
    """ConSERT-large 5 points low on unverified data: not comparable, outside the verdicts, but counted."""
    table = pd.DataFrame([_published_row("ConSERT-base", 0.0), _published_row("ConSERT-large", -5.0,
                                                                             data_verified=False)])  # fmt: skip
    not_run = ["table2:BERT*", "table2:Avg*", "table[34]*", "whitening*", "sgopt*", "figure*"]
    comparison = compare(COMPARED, _results(tmp_path, table), PUBLISHED, not_run=not_run)
    large = _primary(comparison, "ConSERT-large")
    assert not large.comparable and "data_verified = False" in large.reason
    code, reason = gate(comparison)
    assert code == 0 and "1 not comparable (counted)" in reason


def test_the_claims_use_the_gates_noise_kinds():
    """Table 3's "BERT-base-flow (NLI)" is a flow on a per-seed BERT-NLI (``flow_nli``, yardsticks.csv), not a
    flow fitted on a fixed BERT (``flow``), which its name alone would say."""
    kinds = RowKinds(PUBLISHED)
    assert noise_kind({"artifact": "table3", "method": "BERT-base-flow (NLI)"}, kinds) == "flow_nli"
    assert noise_kind({"artifact": "table2", "method": "BERT-base-flow"}, kinds) == "flow"
    assert noise_kind({"artifact": "table2", "method": "BERT-base-SG-OPT"}, kinds) == "sgopt"  # no rule: its name
    assert noise_kind({"artifact": "table2", "method": "BERT-base (mean:-2,-1)"}, kinds) == "none"
