"""What a workflow config's DAG costs: every run planned as the authors' scripts plan it, the projection's
arithmetic, and the command end to end on tiny random BERTs."""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

import pytest

from consert.bench import execution_settings
from consert.bench.dag_cost import (
    KindRate,
    PlannedJob,
    compilation_once,
    planned_jobs,
    projection,
    stop_after_peak,
    timed_config,
)
from consert.cli import main as cli_main
from consert.planner.load import read_workflow_config
from tests.conftest import ROOT
from tests.fixtures import write_senteval_tree


@pytest.fixture(scope="module")
def paper_plan(real_data):
    workflow = read_workflow_config(ROOT / "config" / "config.yaml")
    workflow = workflow.model_copy(update={"data_dir": str(real_data.root)})
    jobs, kinds = planned_jobs(workflow, real_data)
    return {job.run: job for job in jobs}, kinds


def test_every_run_of_the_paper_is_planned_as_the_authors_scripts_plan_it(paper_plan):
    jobs, kinds = paper_plan
    assert len(jobs) == 105  # the paper config's run configs (its dry run lists as many run_config jobs)
    # unsup-consert-base.sh: 89,192 STS texts, batch 96, 10 epochs
    assert jobs["base-unsup-seed1"].steps == 10 * math.ceil(89_192 / 96)
    # BERT-flow's run_siamese.py: the 942,069 SNLI + MultiNLI pairs, batch 16, one epoch, no early stop
    flow_nli = jobs["base-bertflow-nli-seed1"]
    assert flow_nli.steps == math.ceil(942_069 / 16) and flow_nli.stopping == "full length"
    # SG-OPT: STS-B's 8,628 scored pairs (Table 1: 5,749 + 1,500 + 1,379), both texts, batch 16
    assert jobs["sgopt-base-seed1"].steps == math.ceil(2 * 8_628 / 16)
    # SimCSE's 1,000,000 Wikipedia sentences, batch 64, one epoch
    assert jobs["base-simcse-seed1"].steps == math.ceil(1_000_000 / 64)
    assert jobs["large-sup-unsup-seed1"].after == "large-sup-seed1"  # a two-stage run follows its NLI run
    assert jobs["base-unsup-seed1"].stopping.startswith("patience 10")
    assert {job.kind for job in jobs.values()} == set(kinds)


def test_a_run_that_peaks_where_table4_says_stops_ten_evaluations_later(paper_plan):
    """unsup-consert-base.sh at batch 96: 930 steps an epoch, scored at 200, 400, 600, 800 and 930 of each. Table 4's
    best step 1530 is the 8th evaluation; the 10 after it end at 3390 (epoch 4's 3rd): 18 evaluations in all."""
    jobs, _ = paper_plan
    assert jobs["base-unsup-seed1"].expected == (3390, 18)
    assert jobs["base-unsup-bs16-seed1"].expected_steps == 6175 + 10 * 200  # 5,575 steps an epoch: no epoch end
    for run in ("large-unsup-seed1", "base-joint-unsup-seed1", "base-sup-seed1", "base-simcse-seed1"):
        assert jobs[run].expected is None and jobs[run].expected_steps == jobs[run].steps  # the paper gives no peak
    few_shot = [job for run, job in jobs.items() if re.fullmatch(r"base-unsup-n\d+-seed1", run)]
    assert len(few_shot) == 5 and all(job.expected is None for job in few_shot)  # another item count
    assert jobs["base-unsup-dropout+shuffle-seed1"].expected == (3390, 18)  # assumed: Table 4 has one recipe


def test_stopping_after_a_peak_counts_an_epoch_end_scored_twice_as_two_evaluations():
    grid = Counter({4: 1, 8: 2, 12: 1, 16: 2})  # evaluations at 4, 8, 8, 12, 16, 16
    assert stop_after_peak(grid, 8, patience=2) == (12, 3)  # the second score at 8 is the first miss: 3 dev passes
    assert stop_after_peak(grid, 12, patience=3) == (16, 4)  # patience outlasts the grid: the planned end
    with pytest.raises(ValueError, match="not on the run's evaluation grid"):
        stop_after_peak(grid, 10, patience=2)


def test_the_projection_adds_steps_evaluations_and_chains_by_hand():
    jobs = [
        PlannedJob("a", "base k1", steps=3600, dev_evaluations=10, stopping="full length"),
        PlannedJob("b", "base k1", steps=1800, dev_evaluations=0, stopping="full length"),
        PlannedJob("c", "large k2", steps=720, dev_evaluations=2, stopping="full length", after="a"),
    ]
    rates, dev, test = {"base k1": 2.0, "large k2": 0.5}, {"base": 0.5, "large": 3.0}, {"base": 20.0, "large": 90.0}
    once = {"base k1": 7.0, "large k2": 30.0}  # each run pays its kind's warm-up and captures once
    table, totals = projection(jobs, rates, dev, test, gpus=2, one_time=once)
    seconds = {"a": 1800 + 7 + 5 + 20, "b": 900 + 7 + 20, "c": 1440 + 30 + 6 + 90}
    by_kind = table.set_index("kind")
    assert by_kind.loc["base k1", "gpu_hours"] == pytest.approx((seconds["a"] + seconds["b"]) / 3600)
    assert by_kind.loc["large k2", "gpu_hours"] == pytest.approx(seconds["c"] / 3600)
    assert list(table.kind) == ["base k1", "large k2"]  # the costliest kind first
    assert totals["gpu_hours"] == pytest.approx(sum(seconds.values()) / 3600)
    chain = (seconds["a"] + seconds["c"]) / 3600  # c starts from a's export
    assert totals["longest_chain_hours"] == pytest.approx(chain)
    assert totals["wall_hours"] == pytest.approx(max(sum(seconds.values()) / 3600 / 2, chain))
    assert totals["expected_gpu_hours"] == pytest.approx(totals["gpu_hours"])  # no run has a published peak
    _, one_card = projection(jobs, rates, dev, test, gpus=1, one_time=once)
    assert one_card["wall_hours"] == pytest.approx(sum(seconds.values()) / 3600)
    assert by_kind.loc["large k2", "one_time_s"] == 30.0
    _, with_compilation = projection(jobs, rates, dev, test, gpus=1, one_time=once, once_s=360.0)
    assert with_compilation["gpu_hours"] == pytest.approx(one_card["gpu_hours"] + 0.1)  # once, not once a run
    assert with_compilation["compile_once_s"] == 360.0


def test_compilation_is_charged_once_a_model_shape_and_precision_not_once_a_run():
    """A BERT-base bf16 kind compiled (40 s, Inductor's cache missed), another only loaded (6 s): each of their
    runs pays the 6 s load, the other 34 s once. A kind that compiled with no load of its size and precision seen
    (BERT-base fp32) keeps its compilation per run; a kind that compiled nothing is unchanged."""
    rates = [
        KindRate("base unsup b96 L64", 40.0, 200, "", one_time_s=50.0, dtype="bf16", compile_s=40.0, compiled=True),
        KindRate("base sup b96 L64", 30.0, 200, "", one_time_s=15.0, dtype="bf16", compile_s=6.0),
        KindRate("base joint b96 L64", 20.0, 200, "", one_time_s=30.0, dtype="fp32", compile_s=25.0, compiled=True),
        KindRate("large unsup b96 L64", 10.0, 200, "", one_time_s=5.0, dtype="bf16"),
    ]
    one_time, once = compilation_once({rate.kind: rate for rate in rates})
    assert one_time == {
        "base unsup b96 L64": 16.0,
        "base sup b96 L64": 15.0,
        "base joint b96 L64": 30.0,
        "large unsup b96 L64": 5.0,
    }
    assert once == 34.0


def test_a_kind_not_timed_is_left_out_of_the_totals_and_the_chains():
    jobs = [
        PlannedJob("a", "base k1", steps=3600, dev_evaluations=0, stopping="full length"),
        PlannedJob("b", "base k2", steps=3600, dev_evaluations=0, stopping="full length"),
    ]
    table, totals = projection(jobs, {"base k1": 2.0, "base k2": math.nan}, {"base": 0.0}, {"base": 0.0}, gpus=1)
    assert math.isnan(table.set_index("kind").loc["base k2", "gpu_hours"])
    assert totals["gpu_hours"] == pytest.approx(0.5) and totals["longest_chain_hours"] == pytest.approx(0.5)


def test_a_timing_run_swaps_only_what_its_stage_reads(paper_plan, tmp_path):
    """The paper's NLI files and Wikipedia texts are not here: an NLI kind is timed on pairs of SNLI's and
    MultiNLI's stated lengths (written in the timing run's folder, read as the real files are), SimCSE on the STS
    texts, and an unsupervised kind (which reads neither) says it ran as configured."""
    from consert.bench.nli_lengths import lengths_note
    from consert.data.senteval import load_senteval

    data = load_senteval(write_senteval_tree(tmp_path / "senteval", pairs_per_file=12))
    _, kinds = paper_plan
    timed = {kind: timed_config(kinds[kind], "model", 6, "cpu", tmp_path / "run", data) for kind in kinds}
    notes = {kind: swapped for kind, (_, swapped) in timed.items()}
    assert notes["base unsup b96 L64"] == [] and notes["base sup-unsup b96 L64"] == []
    assert notes["base sup b96 L64"] == [f"for the missing NLI files, {lengths_note()}"]
    supervised = timed["base sup b96 L64"][0]
    assert supervised.nli_source == "snli+mnli" and len(supervised.nli_files) == 2
    assert all(Path(path).is_file() for path in supervised.nli_files)
    assert notes["base simcse b64 L32"] == ["STS texts for the missing data/wiki1m_for_simcse.txt"]


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--config", "CONFIG", "--compare", "compiled"], "--compare compiled needs --device cuda"),
        (["--config", "CONFIG", "--compare", "graphs"], "--compare graphs needs --device cuda"),
        (["--config", "CONFIG", "--compare", "fused"], "--compare fused needs --device cuda"),
        (["--compare", "eager"], "the following arguments are required: --config"),
        (["--config", "CONFIG", "--rate-from", "runs/x", "--compare", "eager"], "pass it without --compare"),
        (["--config", "CONFIG", "--speed-of-light"], "unrecognized arguments: --speed-of-light"),
        (["--config", "CONFIG", "--share", "base sgopt*"], "unrecognized arguments: --share"),
    ],
)
def test_a_bench_combination_that_cannot_run_is_refused_in_one_line_before_any_work(
    tmp_path, capsys, arguments, message
):
    arguments = [str(ROOT / "config" / "test.yaml") if a == "CONFIG" else a for a in arguments]
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["bench", *arguments, "--data", str(tmp_path / "absent")])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_an_execution_sets_what_the_config_has_and_applies_where_it_turns_nothing_missing_on(paper_plan):
    """SG-OPT has no compiled or fused execution (it never compiles) but an eager and a graphed one; the trainer all
    four."""
    _, kinds = paper_plan
    trainer, sgopt = kinds["base unsup b96 L64"], kinds["base sgopt b16 L128"]
    assert execution_settings(trainer, "eager") == {"cuda_graphs": "off", "compile": "off"}
    assert execution_settings(trainer, "compiled") == {"cuda_graphs": "off", "compile": "on"}
    assert execution_settings(trainer, "graphs") == {"cuda_graphs": "on", "compile": "off"}
    assert execution_settings(trainer, "fused") == {"cuda_graphs": "on", "compile": "on"}
    assert execution_settings(sgopt, "eager") == {"cuda_graphs": "off"}
    assert execution_settings(sgopt, "compiled") is None and execution_settings(sgopt, "fused") is None
    assert execution_settings(sgopt, "graphs") == {"cuda_graphs": "on"}


def test_a_kind_whose_step_cannot_run_as_graphs_is_left_untimed_with_the_reason(tmp_path):
    """``graphs`` where no graph can run (here: every kind, on a CPU) leaves the column empty and says why in the
    kind's ``timed_as``, for the trainer's kinds and SG-OPT's alike; the cost table itself is still made."""
    from consert.bench.dag_cost import run
    from consert.data.senteval import load_senteval

    data = load_senteval(write_senteval_tree(tmp_path / "senteval", pairs_per_file=12))
    workflow = read_workflow_config(ROOT / "config" / "test.yaml").model_copy(update={"data_dir": str(data.root)})
    table, _ = run(workflow, data, "cpu", steps=4, gpus=1, shape="tiny", compare=("graphs",))
    assert (table.steps_per_s > 0).all() and table.graphs_steps_per_s.isna().all()
    sgopt = table.kind.str.contains(" sgopt ")
    assert sgopt.any() and (~sgopt).any()
    reason = "graphs: not timed ({}cuda_graphs: on, but device cpu is not CUDA)"
    assert all(reason.format("SG-OPT ") in note for note in table.timed_as[sgopt])
    assert all(reason.format("") in note for note in table.timed_as[~sgopt])
