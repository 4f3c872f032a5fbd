"""The paper's claims checked on fixture artifacts whose verdicts are known by construction.

Each claim quotes the paper's sentence; a test reads that sentence at its line of the paper. Every claim
is shown to hold on a fixture built so that it does (3 seeds of SD 0.2 on every trained row), to fail on
one built so that it does not, and to stay undecided where the seeds cannot decide it.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from consert.data.senteval import DATASETS
from consert.paper.catalogue import CSV_FILES
from consert.planner.load import read_workflow_config
from consert.verdict.claims import CLAIMS_FILE, evaluate_claims, load_claims
from tests.conftest import PAPERS, PUBLISHED, ROOT

PAPER = {"setting": "paper setting (model as named)", "nli": ""}
SETS = [*DATASETS, "Avg"]
CLAIMS = load_claims(PUBLISHED / CLAIMS_FILE)
SEEDS = {"n_seeds": 3, **{f"{c}_std": 0.2 for c in SETS}}


def _row(method, score, size="base", **extra):
    return {"method": method, "size": size, **{c: score for c in SETS}, **PAPER, "base_model": f"bert-{size}-uncased",
            **SEEDS, **extra}  # fmt: skip


def _write(results, name, rows):
    pd.DataFrame(rows).to_csv(results / name, index=False)


def _results(tmp_path, **changes):
    """Artifacts on which every claim holds; ``changes`` alter one table."""
    results = tmp_path / "results"
    results.mkdir(parents=True)
    scores = {"ConSERT-base": 72.0, "BERT-base-flow": 69.0, "BERT-large-flow": 70.8, **changes.get("table2", {})}
    table2 = [
        _row("ConSERT-base", scores["ConSERT-base"]),
        _row("BERT-base-flow", scores["BERT-base-flow"]),
        _row("Avg. GloVe embeddings", 61.3, size="-"),
        _row("BERT-base (mean:-2,-1)", 53.0),
        _row("ConSERT-large", 76.0, size="large", **changes.get("consert_large", {})),
        _row("BERT-large-flow", scores["BERT-large-flow"], size="large"),
        _row("BERT-large (mean:-2,-1)", 51.5, size="large"),
    ]
    _write(results, "table2_unsup.csv", table2)
    table3 = []
    for size, shift in (("base", 0.0), ("large", 2.0)):
        for mode, score in (("sup", 74.0), ("joint", 77.0), ("sup-unsup", 75.0), ("joint-unsup", 79.0)):
            row = _row(f"ConSERT-{size} {mode}", score + shift, size=size, mode=mode)
            if mode == "sup" and "sup_sick" in changes:
                row["SICK-R"] = changes["sup_sick"]
            table3.append(row)
        table3.append(_row(f"BERT-{size}-flow (NLI)", 77.5 + shift, size=size, mode="flow on sup"))
    _write(results, "table3_sup.csv", table3)
    cells = [("none", "none", 64.0), ("shuffle", "none", 71.0), ("token_cutoff", "none", 70.5)]
    cells += [
        ("feature_cutoff", "none", changes.get("fc_none", 68.0)),
        ("dropout", "none", changes.get("dropout_none", 67.9)),
    ]
    cells += [("shuffle", "feature_cutoff", changes.get("best", 72.7)), ("feature_cutoff", "shuffle", 72.0)]
    heat = [{"size": "base", "view1": a, "view2": b, "trained_as": f"{a}+{b}", "Avg": v, **PAPER, **SEEDS}
            for a, b, v in cells]  # fmt: skip
    _write(results, "figure5_heatmap.csv", heat)
    temps = changes.get("temperatures", [(0.05, 70.0), (0.1, 72.7), (0.5, 60.0)])
    _write(results, "figure7_temperature.csv",
           [{"size": "base", "temperature": t, "Avg": v, **PAPER, **SEEDS} for t, v in temps])  # fmt: skip
    shots = [("unsup", "100", 65.0), ("unsup", "1000", changes.get("unsup_1000", 71.6)), ("unsup", "all", 72.0)]
    shots += [("joint-unsup", "100", 79.5), ("joint-unsup", "1000", 80.0), ("joint-unsup", "all", 79.4)]
    _write(results, "figure6_fewshot.csv",
           [{"size": "base", "mode": v, "n_texts": n, "Avg": a, **PAPER, **SEEDS} for v, n, a in shots])  # fmt: skip
    batches = changes.get("batches", [(16, 72.63, 6175), (96, 72.74, 1530), (288, 73.2, 620)])
    table4 = [{"size": "base", "batch_size": b, "Avg": a, "best_step": s, **PAPER, **SEEDS} for b, a, s in batches]
    _write(results, "table4_batch_size.csv", table4)
    curve = [("BERT-base", 0, 53.86), ("BERT-base", 35, changes.get("bert_k34", 61.66)), ("ConSERT-base", 0, 72.74)]
    curve += [("ConSERT-base", 6, 72.74 + changes.get("consert_topk_gain", 0.16)), ("ConSERT-base", 35, 73.5)]
    _write(
        results, "figure4_topk.csv", [{"model": m, "k": k, "Avg": v, "setting": PAPER["setting"]} for m, k, v in curve]
    )
    return results


def _config():
    return read_workflow_config(ROOT / "config" / "config.yaml")


def _evaluate(results) -> pd.DataFrame:
    return evaluate_claims(CLAIMS, results, _config(), CSV_FILES, PUBLISHED).set_index(["id", "size"])


def _verdicts(tmp_path, **changes) -> pd.DataFrame:
    return _evaluate(_results(tmp_path, **changes))


def _normalised_paper_lines() -> list[str]:
    """The paper's lines with its subscript markup (``BERTbasebase{}_{\\text{base}}``) read as ``BERT-base``."""
    text = (PAPERS / "consert.txt").read_text(encoding="utf-8")
    text = re.sub(r"(base|large)\1\{\}_\{\\text\{\1\}\}", r"-\1", text).replace("’", "'")
    return text.splitlines()


def test_each_claim_quotes_its_line_of_the_paper():
    lines = _normalised_paper_lines()
    for claim in CLAIMS:
        number = int(re.search(r"consert\.txt line (\d+)", claim["where"]).group(1))
        assert claim["quote"] and claim["quote"] in lines[number - 1], claim["id"]


def test_every_claim_holds_on_artifacts_built_to_hold(tmp_path):
    claims = _verdicts(tmp_path)
    for (claim, size), row in claims.iterrows():
        assert row.verdict == "holds", (claim, size, row.detail, row.low, row.high)
    assert set(claims.index.get_level_values("id")) == {claim["id"] for claim in CLAIMS}
    # a claim the paper makes of BERT-large only is checked for large only
    for claim in ("joint_unsup_beats_flow_large", "joint_unsup_beats_joint", "unsup_large_best_on_six_sets"):
        assert list(claims.loc[claim].index) == ["large"], claim
    assert list(claims.loc["joint_beats_sbert"].index) == ["base", "large"]
    assert claims.comparable.all() and (claims.noise != "").all()


def test_less_than_is_one_sided_and_a_trend_reads_every_batch_size(tmp_path):
    """ "a small improvement of less than 0.3": a 0.5-point loss is less than 0.3 too (the two-sided test failed
    it). "A larger batch size does achieve better performance": the slope over every batch size run, so a
    dip in the middle counts, where the two ends alone would hide it."""
    loss = _verdicts(tmp_path / "loss", consert_topk_gain=-0.5).loc[("topk_small_for_consert", "base")]
    assert loss.verdict == "holds" and loss.test == "below"
    batches = [(16, 72.0, 6175), (48, 74.0, 3000), (96, 71.0, 1530), (192, 71.2, 900), (288, 72.1, 620)]
    dip = _verdicts(tmp_path / "dip", batches=batches).loc[("larger_batch_better", "base")]
    assert dip.verdict != "holds" and "over [16, 48, 96, 192, 288]" in dip.detail  # 288 beats 16, the trend does not


def test_a_near_best_claim_within_the_seed_noise_is_not_contradicted_never_holds(tmp_path):
    """The peak observed outside [0.08, 0.12] but within the noise of a difference of two runs: the claim is
    not shown wrong, nor shown right; once it was reported as holding beside "peak at 0.5"."""
    row = _verdicts(tmp_path, temperatures=[(0.05, 60.0), (0.1, 72.7), (0.5, 72.9)]).loc[("temperature_peak", "base")]
    assert row.verdict == "not contradicted" and row.low < 0 < row.high
    assert "the observed peak, 0.5 (72.90), lies outside [0.08, 0.12]" in row.detail


@pytest.mark.parametrize(
    ("change", "claim", "detail"),
    [
        ({"sup_sick": 80.0}, "joint_beats_sbert", "not ahead on SICK-R"),
        ({"consert_topk_gain": 0.4}, "topk_small_for_consert", "largest gain +0.40"),
        (
            {"temperatures": [(0.05, 75.0), (0.1, 72.7), (0.5, 60.0)]},
            "temperature_peak",
            "peak, 0.05 (75.00), lies outside",
        ),
        (
            {"temperatures": [(0.05, 72.0), (0.1, 72.7), (0.5, 60.0)]},
            "temperature_sensitive_at_both_ends",
            "drop to 0.05: +0.70",
        ),
        ({"unsup_1000": 68.0}, "thousand_texts_match_the_full_set_unsup", "difference -4.00"),
        ({"unsup_1000": 68.0}, "thousand_texts_gain_35_percent", "relative gain +28.30 %"),
        (
            {"batches": [(16, 73.5, 6175), (96, 72.8, 1530), (288, 72.0, 620)]},
            "larger_batch_better",
            "Avg per doubling of batch_size over [16, 96, 288]",
        ),
        ({"batches": [(16, 70.0, 6175), (288, 73.2, 620)]}, "batch_size_gain_small", "difference +3.20"),
        ({"batches": [(16, 72.6, 600), (288, 73.2, 620)]}, "larger_batch_fewer_steps", "difference -20.00"),
        ({"best": 70.0}, "best_augmentation_pair", "best other run feature_cutoff+shuffle at 72.00"),
        ({"fc_none": 66.0}, "feature_cutoff_about_four_over_none_none", "difference +2.00"),
        ({"table2": {"BERT-base-flow": 50.0}}, "flow_and_consert_beat_glove_and_bert", "winning margin -11.30"),
        ({"bert_k34": 50.0}, "topk_raises_bert", "gain -3.86"),
        ({"dropout_none": 72.0}, "shuffle_token_cutoff_beat_feature_cutoff_dropout", "winning margin -1.50"),
        ({"table2": {"BERT-large-flow": 80.0}}, "unsup_large_best_on_six_sets", "ahead on 0 of 7 sets"),
    ],
)
def test_each_claim_fails_on_artifacts_built_to_fail(tmp_path, change, claim, detail):
    size = "large" if claim == "unsup_large_best_on_six_sets" else "base"
    row = _verdicts(tmp_path, **change).loc[(claim, size)]
    assert row.verdict == "does not hold" and detail in row.detail, (row.verdict, row.detail)


def test_a_roughly_stated_gain_is_decided_even_from_one_seed(tmp_path):
    """Feature Cutoff 4.0 over None-None from single runs: the declared SD 0.3 of a run gives the interval
    4.0 +- 1.6449 x 0.3 x sqrt(2) = [3.30, 4.70], inside 4 +- 1."""
    results = _results(tmp_path)
    heat = pd.read_csv(results / "figure5_heatmap.csv").assign(n_seeds=1)
    heat.to_csv(results / "figure5_heatmap.csv", index=False)
    row = _evaluate(results).loc[("feature_cutoff_about_four_over_none_none", "base")]
    half = 1.6449 * 0.3 * np.sqrt(2)
    assert (row.low, row.high) == pytest.approx((4 - half, 4 + half), abs=1e-3) and row.noise == "declared seed SD"
    assert row.verdict == "holds"


def test_a_direction_that_the_seeds_cannot_tell_is_not_decided(tmp_path):
    # Shuffle 0.5 over Token Cutoff from one seed each: 0.5 +- 0.70 straddles 0
    results = _results(tmp_path)
    heat = pd.read_csv(results / "figure5_heatmap.csv").assign(n_seeds=1)
    heat.to_csv(results / "figure5_heatmap.csv", index=False)
    row = _evaluate(results).loc[("shuffle_beats_token_cutoff", "base")]
    assert row.verdict == "not decided" and row.low < 0 < row.high


def test_significance_is_a_one_sided_p_over_seeds_with_the_gates_sd_holm_adjusted(tmp_path):
    """Every row ran 3 seeds with SD 0.2. ConSERT's rows pool to 0.2, under the declared 0.3: the declared SD,
    as known. The BERT-flow rows of a size pool to 0.2 over 4 df, above the declared 0.1: 0.2. A difference
    with a declared side is judged with the normal."""
    claims = _verdicts(tmp_path)
    flow = claims.loc[("unsup_beats_flow_large", "large")]
    assert flow.p_value == pytest.approx(stats.norm.sf(5.2 / np.sqrt(0.3**2 / 3 + 0.2**2 / 3)), rel=1e-6)
    # every pair of Shuffle/Token Cutoff against Feature Cutoff/Dropout: the largest p (70.5 vs 68.0)
    strategies = claims.loc[("shuffle_token_cutoff_beat_feature_cutoff_dropout", "base")]
    largest = stats.norm.sf(2.5 / np.sqrt(2 * 0.3**2 / 3))
    assert strategies.p_value == pytest.approx(largest, rel=1e-6)
    # Holm over the two: the smaller times 2, then the larger (monotone)
    ordered = sorted([flow.p_value, strategies.p_value])
    adjusted = [2 * ordered[0], max(2 * ordered[0], ordered[1])]
    assert sorted([flow.p_adjusted, strategies.p_adjusted]) == pytest.approx(adjusted)
    # a direction claim is outside the family
    assert np.isnan(claims.loc[("unsup_beats_flow_base", "base"), "p_adjusted"])


def test_significance_takes_the_declared_sd_of_a_one_seed_row_and_a_p_value_below_alpha(tmp_path):
    """One rule for one-seed rows in every test: the declared SD of its kind, as known. ConSERT-large's one seed
    (declared 0.3) leads BERT-large-flow by 5.2: z far beyond any Holm threshold."""
    one_seed = _verdicts(tmp_path / "one", consert_large={"n_seeds": 1}).loc[("unsup_beats_flow_large", "large")]
    assert one_seed.verdict == "holds" and one_seed.noise == "declared seed SD" and one_seed.p_adjusted < 0.05
    # a 0.2-point lead: the direction may hold, but not significantly (the declared 0.3 on ConSERT's side)
    row = _verdicts(tmp_path / "close", consert_large={"Avg": 71.0}).loc[("unsup_beats_flow_large", "large")]
    assert row.verdict == "not significant" and row.p_adjusted >= 0.05


def test_missing_artifacts_are_not_run_and_the_stand_in_is_not_comparable(tmp_path):
    results = _results(tmp_path)
    (results / "figure7_temperature.csv").unlink()
    table2 = pd.read_csv(results / "table2_unsup.csv").assign(setting="offline stand-in (x)")
    table2.to_csv(results / "table2_unsup.csv", index=False)
    claims = _evaluate(results)
    peak = claims.loc[("temperature_peak", "base")]
    assert peak.verdict == "not run" and not peak.comparable
    flow = claims.loc[("unsup_beats_flow_base", "base")]
    assert flow.verdict == "holds" and not flow.comparable and "offline stand-in" in flow.reason
    significant = claims.loc[("unsup_beats_flow_large", "large")]
    assert significant.verdict == "not decided" and np.isnan(significant.p_adjusted)  # no test outside the paper


def test_the_temperature_claim_needs_temperatures_on_both_sides_of_its_range(tmp_path):
    row = _verdicts(tmp_path, temperatures=[(0.05, 70.0), (0.1, 72.7)]).loc[("temperature_peak", "base")]
    assert row.verdict == "not run" and "one on each side" in row.detail


def test_the_mirrored_cell_of_an_unordered_heatmap_is_not_a_rival(tmp_path):
    results = _results(tmp_path)
    heat = pd.read_csv(results / "figure5_heatmap.csv")
    mirrored = (heat.view1 == "feature_cutoff") & (heat.view2 == "shuffle")
    heat.loc[mirrored, ["trained_as", "Avg"]] = ["shuffle+feature_cutoff", 72.7]  # the same run, shown twice
    heat.to_csv(results / "figure5_heatmap.csv", index=False)
    row = _evaluate(results).loc[("best_augmentation_pair", "base")]
    assert row.verdict == "holds" and "best other run shuffle+none at 71.00" in row.detail


LAYOUT_FILES = {"table2": "table2_unsup.csv", "table3": "table3_sup.csv", "table4": "table4_batch_size.csv",
                "figure5": "figure5_heatmap.csv", "figure6": "figure6_fewshot.csv"}  # fmt: skip
TWO_CELL_CLAIMS = [c for c in CLAIMS if c["kind"] == "difference"]


def _edit(results, cell: dict, size: str, **values) -> None:
    """Set columns of the row a claim's cell names (labels compared as text, ``{size}`` filled in)."""
    path = results / LAYOUT_FILES[cell["artifact"]]
    table = pd.read_csv(path)
    chosen = pd.Series(True, index=table.index)
    for key, value in cell.items():
        if key not in ("artifact", "noise"):
            chosen &= table[key].astype(str) == str(value).format(size=size)
    assert chosen.sum() == 1, cell
    for column, value in values.items():
        table.loc[chosen, column] = value
    table.to_csv(path, index=False)


@pytest.mark.parametrize("claim", TWO_CELL_CLAIMS, ids=[c["id"] for c in TWO_CELL_CLAIMS])
def test_every_two_row_claim_fails_when_its_rows_say_otherwise(tmp_path, claim):
    """Row ``a`` moved far to the wrong side of what the sentence states, with the same seeds."""
    size = (claim.get("sizes") or ["base"])[0]
    results = _results(tmp_path)
    column = claim.get("column", "Avg")
    found = evaluate_claims([claim], results, _config(), CSV_FILES, PUBLISHED).set_index("size").loc[size]
    assert found.verdict == "holds"
    b = claim["b"]["value"] if "value" in claim["b"] else pd.read_csv(results / LAYOUT_FILES[claim["b"]["artifact"]])
    if isinstance(b, pd.DataFrame):
        row = b
        for key, value in claim["b"].items():
            if key not in ("artifact", "noise"):
                row = row[row[key].astype(str) == str(value).format(size=size)]
        b = float(row[column].iloc[0])
    wrong = {"direction": b - 10, "significant": b - 10, "noninferior": b - 10, "about": b, "within": b + 20}
    target = wrong[claim["test"]]
    if claim.get("relative") and claim["test"] == "about":
        target = b * (1 + (claim["target"] + 5 * claim["margin"]) / 100)
    elif claim["test"] == "about":
        target = b + claim["target"] + 5 * claim["margin"]
    _edit(results, claim["a"], size, **{column: target})
    found = evaluate_claims([claim], results, _config(), CSV_FILES, PUBLISHED).set_index("size").loc[size]
    assert found.verdict == "does not hold", (found.verdict, found.detail)


#: The two-row claims between cells with a seed spread: an exact count (Table 4's steps) has none to widen.
SEEDED_TWO_CELL_CLAIMS = [c for c in TWO_CELL_CLAIMS if c["a"].get("noise") != "none"]


@pytest.mark.parametrize("claim", SEEDED_TWO_CELL_CLAIMS, ids=[c["id"] for c in SEEDED_TWO_CELL_CLAIMS])
def test_every_two_row_claim_is_undecided_when_its_seeds_spread_widely(tmp_path, claim):
    """Every row's seeds spread 25 points, so every pool does: no interval decides; a significant claim is not
    significant. (One row alone spreading is diluted in its pool, as the gate pools, and tested there.)"""
    size = (claim.get("sizes") or ["base"])[0]
    results = _results(tmp_path)
    column = claim.get("column", "Avg")
    for path in results.glob("*.csv"):
        table = pd.read_csv(path)
        if f"{column}_std" in table:
            table.assign(**{f"{column}_std": 25.0}).to_csv(path, index=False)
    found = evaluate_claims([claim], results, _config(), CSV_FILES, PUBLISHED).set_index("size").loc[size]
    expected = "not significant" if claim["test"] == "significant" else "not decided"
    assert found.verdict == expected, (found.verdict, found.detail, found.low, found.high)
