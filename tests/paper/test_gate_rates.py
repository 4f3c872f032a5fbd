"""The gate's error rates under the paper config's design, measured by simulation (known truth).

The targets (issue: verdicts, second pass): a correct run passes >= 95 %, also when every kind's true seed SD
is 1.5x the declared one; a 1-point shift of every trained row is caught >= 99 %; a 1-point error in one block
(the 7 large rows; Table 3) >= 80 % (the sweeps, one seed each, cannot: their rate is stated in the docs); one
row 3 points off with seeds 5x noisier than declared >= 95 % (rows with seeds; a one-seed row shows no
spread); a 2-point error in one ConSERT row of Tables 2 and 3 >= 80 %; a missing seed always. 4,000 replicates
put the Monte Carlo standard error of a rate near 0.95 at 0.0035.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from consert.paper.design import paper_design
from consert.train.config import read_workflow_config
from consert.verdict.compare import decide
from consert.verdict.decision import COMPARISON_COLUMNS, load_decision
from consert.verdict.gate import failures
from consert.verdict.gate_rates import error_rates, simulate
from tests.conftest import PUBLISHED, ROOT

REPLICATES = 4000


@pytest.fixture(scope="module")
def paper_config():
    return read_workflow_config(ROOT / "config" / "config.yaml")


@pytest.fixture(scope="module")
def rates(paper_config):
    decision = load_decision(PUBLISHED)
    return error_rates(paper_design(paper_config, decision), decision, replicates=REPLICATES)


def _rate(rates: pd.DataFrame, scenario: str, row: str = "every row") -> pd.Series:
    return rates[(rates.scenario.str.startswith(scenario)) & (rates.row == row)].iloc[0]


def test_a_correct_run_passes_at_least_95_percent_of_the_time_also_when_seeds_are_noisier(rates):
    for scenario in ("correct", "correct, true seed SD 1.5x"):
        correct = _rate(rates, scenario)
        assert correct.mc_se < 0.01  # 95 % and 90 % lie more than five standard errors apart
        assert correct.rate - 3 * correct.mc_se >= 0.95, (scenario, correct.rate)


def test_a_one_point_shift_of_every_trained_row_is_caught_at_least_99_percent_of_the_time(rates):
    shift = _rate(rates, "shift")
    assert shift.rate >= 0.99, shift.rate


def test_a_one_point_error_in_one_block_is_caught_at_least_80_percent_of_the_time(rates):
    """The 7 BERT-large rows once were caught 33 % of the time, Table 3 40 %; the sweeps (one seed a row) are
    stated in the docs instead (tests/workflow/test_docs.py reads them back)."""
    for block in ("the large rows", "Table 3"):
        rate = _rate(rates, "block", block)
        assert rate.rate - 3 * rate.mc_se >= 0.80, (block, rate.rate)
    assert _rate(rates, "block", "the sweeps").rate < 0.80  # one seed: the docs say so, with what 3 seeds reach


def test_a_row_three_points_off_with_seeds_five_times_noisier_is_caught_at_least_95_percent_of_the_time(rates):
    """BERT-flow (NLI) and SimCSE rows like this once passed 72 % and 95 % of the time: noise bought a pass.
    Every row with seeds is caught now; SimCSE is undecidable at its margin and out of the gate (docs)."""
    rows = rates[rates.scenario.str.startswith("noisy row") & (rates.n >= 2)]
    assert len(rows) == 13 and "family SimCSE-base" not in set(rows.row)  # 10 ConSERT, 2 flow (NLI), SG-OPT
    assert (rows.rate >= 0.95).all() and (rows.rate - 3 * rows.mc_se >= 0.94).all(), rows[["row", "rate"]].to_string()


def test_a_two_point_error_in_one_row_of_tables_2_and_3_is_caught_at_least_80_percent_of_the_time(rates):
    rows = rates[rates.scenario.str.startswith("one row") & rates.row.str.match(r"table[23] ConSERT")]
    assert len(rows) == 10  # ConSERT's Table 2 row and four Table 3 rows, base and large
    assert (rows.rate - 3 * rows.mc_se >= 0.80).all(), rows[["row", "rate"]].to_string()


def test_a_missing_seed_fails_the_gate(rates):
    assert _rate(rates, "missing seed", "table2 ConSERT-base").rate == 1.0


def test_three_seeds_are_what_the_rates_need(paper_config):
    """With one seed, a 2-point error in a ConSERT row is caught only about 3 times in 4: the published run's
    own noise and ours together are too wide for the 1-point margin."""
    one_seed = {**paper_config, "seeds": [1]}
    decision = load_decision(PUBLISHED)
    rates = error_rates(paper_design(one_seed, decision), decision, replicates=REPLICATES)
    rows = rates[rates.scenario.str.startswith("one row") & rates.row.str.match(r"table[23] ConSERT")]
    assert (rows.rate + 3 * rows.mc_se < 0.80).all()
    assert paper_config["seeds"] == [1, 2, 3] and paper_config["sweeps"]["seeds"] == [1]


def test_the_simulation_applies_the_gates_own_rule(paper_config):
    """Replicates drawn by the simulation, handed to decide() as comparison rows: the same verdicts."""
    decision = load_decision(PUBLISHED)
    design = paper_design(paper_config, decision)
    truth = np.zeros(len(design))
    truth[0] = -1.3  # some rows inconclusive or not reproduced, not all reproduced
    truth[-4:-1] = -0.9  # and a block of the sweeps shifted: some replicates fail on the block alone
    drawn = simulate(design, decision, truth, 25, np.random.default_rng(5))
    for replicate in range(25):
        rows = []
        for index, row in enumerate(design):
            cell = dict.fromkeys(COMPARISON_COLUMNS, np.nan)
            column = "Avg" if row.scale == "avg" else "STSb"
            cell.update(artifact=row.artifact, row=row.label, size=row.size, column=column,
                        role="primary", noise=row.kind, n_seeds=row.n, seed_std=drawn["spread"][replicate, index],
                        published_runs=row.m, delta=drawn["delta"][replicate, index],
                        margin=decision.margin(row.artifact)[0], comparable=True, status="compared",
                        verdict="", sigma_source="")  # fmt: skip
            rows.append(cell)
        decided = decide(pd.DataFrame(rows), decision)
        cells = decided[decided.role == "primary"]
        assert cells.verdict.tolist() == drawn["verdicts"][replicate].tolist()
        assert decided[decided.role == "shared shift"].verdict.item() == drawn["shift"][replicate]
        assert bool(len(failures(decided))) == drawn["fails"][replicate]  # rows, blocks and shift together


def test_the_docs_state_the_simulated_rates(rates):
    """Each rate the Verdicts page states is the simulation's, within 4 Monte Carlo standard errors."""
    import re

    page = (ROOT / "docs" / "verdicts.md").read_text(encoding="utf-8")
    stated = dict(re.findall(r"^\| (.+?) \| gate (?:passes|fails) \| \*\*([0-9.–]+)\*\* \|$", page, re.M))
    expected = {
        "correct run (every row's expectation equals the published)": _rate(rates, "correct"),
        "correct run, every kind's true seed SD 1.5x its declared one": _rate(rates, "correct, true seed SD"),
        "every trained row 1 point low": _rate(rates, "shift"),
        "the 7 BERT-large rows 1 point low": _rate(rates, "block", "the large rows"),
        "Table 3's rows (base and large) 1 point low": _rate(rates, "block", "Table 3"),
        "the sweeps' rows (Table 4, Figure 5: one seed each) 1 point low": _rate(rates, "block", "the sweeps"),
    }
    for scenario, rate in expected.items():
        assert abs(float(stated[scenario]) - rate.rate) <= 4 * max(rate.mc_se, 0.002), (scenario, rate.rate)
    noisy = rates[rates.scenario.str.startswith("noisy row") & (rates.n >= 2)]
    low, high = (float(v) for v in stated[next(k for k in stated if k.startswith("one row with seeds 3"))].split("–"))
    assert abs(low - noisy.rate.min()) <= 0.02 and abs(high - noisy.rate.max()) <= 0.02
