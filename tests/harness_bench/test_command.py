"""``python -m harness_bench``, the harness's benchmarks of itself: its arguments checked before any work, the
cost table with each kind's step against the card's limit, and jobs of a kind run together, on tiny random BERTs."""

from __future__ import annotations

import pandas as pd
import pytest

from consert.bench.dag_cost import planned_jobs
from consert.planner.load import read_workflow_config
from harness_bench.__main__ import main
from tests.conftest import ROOT
from tests.fixtures import write_senteval_tree


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["share", "--config", "CONFIG"], "the following arguments are required: KIND"),
        (["limits", "--config", "CONFIG", "--rate-from", "runs/x"], "--rate-from belongs to consert bench"),
        (["limits", "--config", "CONFIG", "--compare", "graphs"], "--compare graphs needs --device cuda"),
        (["references", "--device", "tpu"], "argument --device: invalid choice: 'tpu'"),
        (["limits"], "the following arguments are required: --config"),
    ],
)
def test_a_combination_that_cannot_run_is_refused_in_one_line_before_any_work(tmp_path, capsys, arguments, message):
    arguments = [str(ROOT / "config" / "test.yaml") if a == "CONFIG" else a for a in arguments]
    with pytest.raises(SystemExit) as exit_info:
        main([*arguments, "--data", str(tmp_path / "absent")])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_parse_only_accepts_each_command_and_does_no_work(tmp_path, capsys):
    """``--parse-only`` with the arguments scripts/gpu_checks.sh gives each command: accepted, nothing timed (no
    data is there to time on)."""
    config = str(ROOT / "config" / "config.yaml")
    for arguments in (
        ["references", "--device", "cuda", "--json", "bench.json"],
        ["limits", "--config", config, "--device", "cuda", "--steps", "150", "--compare", "eager", "graphs"],
        ["share", "--config", config, "--device", "cuda", "--mps", "base bertflow-nli*", "base sgopt*"],
    ):
        assert main(["--parse-only", *arguments, "--data", str(tmp_path / "absent")]) == 0
        assert capsys.readouterr().out == f"harness_bench {arguments[0]}: arguments accepted\n"


@pytest.mark.slow
def test_limits_times_every_kind_of_the_test_config_and_counts_each_trainer_steps_work(tmp_path, capsys):
    """``consert bench``'s cost table, every kind timed and projected, ``--compare eager`` timing each kind again in
    the same run; and each trainer kind's step counted against the card's limit, its columns beside."""
    data = write_senteval_tree(tmp_path / "senteval", pairs_per_file=12)
    output = tmp_path / "cost.csv"
    status = main(
        [
            "limits", "--config", str(ROOT / "config" / "test.yaml"), "--shape", "tiny", "--steps", "6",
            "--gpus", "2", "--data", str(data), "--output", str(output), "--compare", "eager",
        ]
    )  # fmt: skip
    assert status == 0
    table = pd.read_csv(output)
    workflow = read_workflow_config(ROOT / "config" / "test.yaml").model_copy(update={"data_dir": str(data)})
    from consert.data.senteval import load_senteval

    jobs, kinds = planned_jobs(workflow, load_senteval(data))
    assert set(table.kind) == set(kinds) and table.runs.sum() == len(jobs)
    assert (table.steps_per_s > 0).all() and (table.gpu_hours > 0).all() and (table.one_time_s >= 0).all()
    # each kind timed again eagerly, SG-OPT's too (a timing of its own, not its rate copied)
    assert table.kind.str.contains(" sgopt ").any() and (table.eager_steps_per_s > 0).all()
    assert (table.eager_steps_per_s != table.steps_per_s).any()  # copied rates: all equal
    assert table.total_gpu_hours.iloc[0] == pytest.approx(table.gpu_hours.sum(), abs=1e-3)  # 4 decimals a cell
    assert table.hardware.iloc[0] and set(table.gpus) == {2}
    # the step's work counted for the trainer's kinds (SG-OPT's own trainer is not), no card's peak on a CPU
    sgopt = table.kind.str.contains(" sgopt ")
    assert (table.gflop_per_step[~sgopt] > 0).all() and table.gflop_per_step[sgopt].isna().all()
    achieved = table.gflop_per_step[~sgopt] * table.steps_per_s[~sgopt] / 1000  # TFLOP/s, 4 decimals a cell
    assert (achieved - table.achieved_tflops[~sgopt]).abs().max() < 1e-3
    assert table.peak_fraction.isna().all() and table.kernels_per_step.isna().all()
    assert table.fused_kernels_per_step.isna().all()  # counted on CUDA only
    assert "GPU-hours; on 2 card(s)" in capsys.readouterr().out


@pytest.mark.slow
def test_jobs_of_a_kind_run_one_and_two_at_once_and_the_ratio_is_their_throughputs(tmp_path, capsys):
    """``share``: SG-OPT's kind run as whole jobs, alone and two at once; each row's ratio is n x wall(1) /
    wall(n) from its own walls, its steady ratio its jobs' summed steady rate over one job's; a pattern matching
    no kind is refused, naming the kinds."""
    data = write_senteval_tree(tmp_path / "senteval", pairs_per_file=12)
    output = tmp_path / "share.csv"
    config = str(ROOT / "config" / "test.yaml")
    common = ["share", "--config", config, "--shape", "tiny", "--steps", "6", "--data", str(data)]
    status = main([*common, "base sgopt*", "--copies", "2", "--output", str(output)])
    assert status == 0
    table = pd.read_csv(output)
    assert table.kind.str.startswith("base sgopt ").all() and list(table.copies) == [1, 2]
    alone = table.wall_s[table.copies == 1].iloc[0]
    assert (table.wall_s > 0).all()
    # the CSV keeps 4 decimals: a ratio read back is within 1e-4 of the one computed from its rounded parts
    rounding = {"rel": 1e-3, "abs": 1e-4}
    assert table.ratio.tolist() == pytest.approx([1.0, 2 * alone / table.wall_s.iloc[1]], **rounding)
    steady = table.steady_steps_per_s
    assert (steady > 0).all()
    assert table.steady_ratio.tolist() == pytest.approx([1.0, steady.iloc[1] / steady.iloc[0]], **rounding)
    assert main([*common, "large *"]) == 2
    assert "'large *' matches no job kind of the config; its kinds: base unsup" in capsys.readouterr().err
