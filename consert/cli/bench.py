"""``consert bench --config FILE``: what a workflow config's DAG costs on the device at hand (the paper's cost plan,
:mod:`consert.bench.dag_cost`). The harness's benchmarks of itself (against sentence-transformers and a plain loop, a
step against the card's limit, jobs sharing a card) are not the user's command: ``python -m harness_bench``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from consert.bench import COMPARED_EXECUTIONS
from consert.cli.arguments import add_choice_argument, add_data_argument, at_least

if TYPE_CHECKING:
    from consert.bench.dag_cost import KindMeasure
    from consert.data.senteval import SentEvalData
    from consert.planner.keys import WorkflowConfig

NAME = "bench"
HELP = "what a workflow config's DAG costs on this device, job kind by job kind (the paper's: config/config.yaml)"
#: The ``--compare`` executions that run on CUDA only, and why.
CUDA_EXECUTIONS = {
    "compiled": "torch.compile on a CPU takes minutes",
    "graphs": "CUDA graphs",
    "fused": "CUDA graphs over compiled kernels",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert bench``."""
    add_timing_arguments(parser)
    parser.add_argument("--gpus", type=at_least(1), default=1, help="the cards of --resources gpu=N")
    parser.add_argument(
        "--compare",
        nargs="+",
        choices=tuple(COMPARED_EXECUTIONS),
        default=(),
        help="also time each kind without CUDA graphs or compilation (eager), with its forward compiled "
        "(compiled; cuda only), replayed as CUDA graphs where it can be (graphs; cuda only) and so with its layers' "
        "per-token chain fused (fused; cuda only), in the same run",
    )
    parser.add_argument(
        "--rate-from",
        default=None,
        metavar="MODEL_DIR",
        help="instead of timing, each table's planned training steps at the steady rate of the run exported "
        "to MODEL_DIR (the box check's), every step costed as one of that run's kind: a first estimate",
    )
    parser.add_argument("--output", default=None, metavar="FILE.csv", help="the cost table as CSV")


def add_timing_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments that say which config's job kinds are timed, where and how long (``consert bench`` and the
    harness's own benchmarks of those kinds, ``python -m harness_bench``)."""
    parser.add_argument(
        "--config",
        required=True,
        metavar="FILE.yaml",
        help="a workflow config (config/config.yaml: the paper): time each of its job kinds on --device and "
        "project its DAG's GPU-hours and wall time, kind by kind",
    )
    add_choice_argument(parser, "--device", ("cpu", "cuda"), "where the kinds are timed")
    parser.add_argument("--steps", type=at_least(6), default=300, help="training steps timed per kind")
    add_choice_argument(
        parser,
        "--shape",
        ("hub", "tiny"),
        "random BERTs of the hub configs' shapes (hub), or 2-layer ones to try the command (tiny)",
    )
    add_data_argument(parser)


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Combinations refused before any work."""
    if args.rate_from and args.compare:
        parser.error(
            "--rate-from projects the config's tables at a run's rate instead of timing them: pass it without --compare"
        )
    for execution, why in CUDA_EXECUTIONS.items():
        if execution in args.compare and args.device != "cuda":
            parser.error(f"--compare {execution} needs --device cuda ({why})")


def run(args: argparse.Namespace) -> int:
    """Run ``consert bench`` on parsed ``args``; return its exit status."""
    return cost_table(args)


def timing_setup(args: argparse.Namespace) -> tuple[WorkflowConfig, SentEvalData]:
    """The workflow config of ``--config`` on the STS data of ``--data``, as the kinds are timed on."""
    from consert.data.senteval import load_senteval
    from consert.planner.load import read_workflow_config

    data = load_senteval(args.data)
    return read_workflow_config(args.config).model_copy(update={"data_dir": str(data.root)}), data


def cost_table(args: argparse.Namespace, also: KindMeasure | None = None) -> int:
    """The workflow config's job kinds timed here and its DAG's cost projected (``also``: a measurement of each
    timed kind besides, its values more columns: :func:`consert.bench.dag_cost.run`)."""
    from consert.bench import dag_cost
    from consert.hardware import hardware_summary
    from consert.io import write_csv

    workflow, data = timing_setup(args)
    if args.rate_from:
        return _at_run_rate(args, workflow, data)
    table, totals = dag_cost.run(
        workflow, data, args.device, args.steps, args.gpus, args.shape, tuple(args.compare), also
    )
    table = table.assign(gpus=args.gpus, **{f"total_{name}": value for name, value in totals.items()})
    if args.output:
        table = table.assign(hardware=hardware_summary(args.device), shape=args.shape)
        print(f"wrote {write_csv(table, args.output)}")
    return 0


def _at_run_rate(args: argparse.Namespace, workflow: WorkflowConfig, data: SentEvalData) -> int:
    """``--rate-from``: each table's planned training steps at the steady rate of one exported run."""
    import math

    from consert.bench import dag_cost
    from consert.bench.steady_rate import exported_run_rate
    from consert.io import write_csv

    folder = Path(args.rate_from)
    try:
        rate, record = exported_run_rate(folder)
    except ValueError as error:
        raise SystemExit(f"--rate-from {error}") from None
    rate, steps, hardware = rate or float("nan"), record.get("steps_run"), record.get("hardware")
    jobs, _ = dag_cost.planned_jobs(workflow, data)
    table = dag_cost.rate_projection(workflow, jobs, rate).assign(hardware=hardware)
    if math.isnan(rate):  # the hours stay empty: no rate is made up
        print(f"{folder}'s {steps} steps were too few to time: each table's planned training steps, no hours:")
    else:
        print(
            f"at {rate:.3g} steps/s (the steady rate of {folder}'s {steps} steps on {hardware}), every step costed as "
            f"one of its kind, training only:"
        )
    print(table[["artifact", "runs", "steps", "gpu_hours"]].to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    if args.output:
        print(f"wrote {write_csv(table, args.output)}")
    return 0
