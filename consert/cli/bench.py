"""``consert bench``: benchmark evaluation and training against their references."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from consert.bench import COMPARED_EXECUTIONS
from consert.cli.arguments import add_choice_argument, add_data_argument, at_least

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig

NAME = "bench"
HELP = "benchmark evaluation and training against their references; --config: what a workflow config's DAG costs"
#: The ``--compare`` executions that run on CUDA only, and why.
CUDA_EXECUTIONS = {
    "compiled": "torch.compile on a CPU takes minutes",
    "graphs": "CUDA graphs",
    "fused": "CUDA graphs over compiled kernels",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert bench``."""
    parser.add_argument("--repeats", type=at_least(1), default=3, help="alternating repeats (cpu)")
    add_choice_argument(
        parser,
        "--device",
        ("cpu", "cuda"),
        "cpu: against sentence-transformers; cuda: the paper-scale trainer, a plain loop, the compiled ceiling",
    )
    parser.add_argument("--json", default=None, metavar="FILE.json", help="also write the raw numbers")
    parser.add_argument(
        "--config",
        default=None,
        metavar="FILE.yaml",
        help="a workflow config (config/config.yaml: the paper): time each of its job kinds on --device and "
        "project its DAG's GPU-hours and wall time, kind by kind",
    )
    parser.add_argument("--steps", type=at_least(6), default=300, help="--config: training steps timed per kind")
    parser.add_argument("--gpus", type=at_least(1), default=1, help="--config: the cards of --resources gpu=N")
    add_choice_argument(
        parser,
        "--shape",
        ("hub", "tiny"),
        "--config: random BERTs of the hub configs' shapes (hub), or 2-layer ones to try the command (tiny)",
    )
    parser.add_argument(
        "--compare",
        nargs="+",
        choices=tuple(COMPARED_EXECUTIONS),
        default=(),
        help="--config: also time each kind without CUDA graphs or compilation (eager), with its forward compiled "
        "(compiled; cuda only), replayed as CUDA graphs where it can be (graphs; cuda only) and so with its layers' "
        "per-token chain fused (fused; cuda only), in the same run",
    )
    parser.add_argument(
        "--speed-of-light",
        action="store_true",
        help="--config: also each kind's step against the card's limit: its GFLOP a step (counted on eager "
        "step), the TFLOP/s its rate achieves, their fraction of the card's dense peak, kernels a step (cuda)",
    )
    parser.add_argument(
        "--share",
        nargs="+",
        default=(),
        metavar="KIND",
        help="--config: instead of the cost table, run jobs of each matching kind (a glob, e.g. 'base sgopt*') "
        "1, 2 and 3 at once (--copies) and report whether running them together raises the throughput",
    )
    parser.add_argument(
        "--copies", type=at_least(1), nargs="+", default=(1, 2, 3), help="--share: how many jobs at once"
    )
    parser.add_argument(
        "--mps",
        action="store_true",
        help="--share: run the jobs under NVIDIA's Multi-Process Service (its daemon started and stopped here), "
        "as the workflow runs jobs that share a card",
    )
    parser.add_argument(
        "--rate-from",
        default=None,
        metavar="MODEL_DIR",
        help="--config: instead of timing, each table's planned training steps at the steady rate of the run exported "
        "to MODEL_DIR (the box check's), every step costed as one of that run's kind: a first estimate",
    )
    parser.add_argument(
        "--output", default=None, metavar="FILE.csv", help="--config: the cost table (or --share's) as CSV"
    )
    add_data_argument(parser)


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Combinations refused before any work."""
    if (args.compare or args.share) and not args.config:
        parser.error("--compare and --share time a workflow config's job kinds: pass --config FILE.yaml too")
    if args.mps and not args.share:
        parser.error("--mps runs --share's jobs under NVIDIA's MPS: pass --share KIND too")
    if args.speed_of_light and (not args.config or args.share):
        parser.error("--speed-of-light belongs to the cost table: pass --config FILE.yaml too")
    if args.rate_from and (not args.config or args.share or args.compare or args.speed_of_light):
        parser.error("--rate-from projects a workflow config's tables at a run's rate: pass --config alone with it")
    if args.compare and args.share:
        parser.error("--compare belongs to the cost table, --share replaces it: pass one of them")
    for execution, why in CUDA_EXECUTIONS.items():
        if execution in args.compare and args.device != "cuda":
            parser.error(f"--compare {execution} needs --device cuda ({why})")


def run(args: argparse.Namespace) -> int:
    """Run ``consert bench`` on parsed ``args``; return its exit status."""
    import json

    from consert.data.senteval import load_senteval

    data = load_senteval(args.data)
    if args.config:
        return _dag_cost(args, data)
    if args.device == "cuda":
        from consert.bench import cuda

        report = cuda.run(data)
    else:
        from consert.bench import cpu

        report = cpu.run(data, repeats=args.repeats)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


def _dag_cost(args: argparse.Namespace, data) -> int:
    """``--config``: the workflow config's job kinds timed here and its DAG's cost projected (or, with
    ``--share``, jobs of some kinds run together)."""
    from consert.bench import dag_cost
    from consert.hardware import hardware_summary
    from consert.io import write_csv
    from consert.planner.load import read_workflow_config

    workflow = read_workflow_config(args.config).model_copy(update={"data_dir": str(data.root)})
    if args.rate_from:
        return _at_run_rate(args, workflow, data)
    if args.share:
        table = _sharing(args, workflow, data)
    else:
        table, totals = dag_cost.run(
            workflow, data, args.device, args.steps, args.gpus, args.shape, tuple(args.compare), args.speed_of_light
        )
        table = table.assign(gpus=args.gpus, **{f"total_{name}": value for name, value in totals.items()})
    if args.output:
        table = table.assign(hardware=hardware_summary(args.device), shape=args.shape)
        print(f"wrote {write_csv(table, args.output)}")
    return 0


def _at_run_rate(args: argparse.Namespace, workflow: WorkflowConfig, data) -> int:
    """``--rate-from``: each table's planned training steps at the steady rate of one exported run."""
    import math

    from consert.bench import dag_cost
    from consert.bench.cuda import exported_run_rate
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


def _sharing(args: argparse.Namespace, workflow: WorkflowConfig, data):
    """``--share``: jobs of the matching kinds run 1, 2, 3 (``--copies``) at once, timed whole."""
    import tempfile

    from consert import gpu_mps
    from consert.bench import dag_cost, sharing
    from consert.hardware import hardware_summary

    jobs, kinds = dag_cost.planned_jobs(workflow, data)
    chosen = sharing.matching_kinds(kinds, args.share)
    run_steps = dag_cost.kind_run_steps(jobs)
    print(f"{len(chosen)} job kinds run 1 to {max(args.copies)} at once on {hardware_summary(args.device)}")
    with tempfile.TemporaryDirectory(prefix="consert-share-models-") as scratch:
        models = dag_cost.random_models({kind.split()[0] for kind in chosen}, Path(scratch), args.shape)
        mps = Path(scratch) / "mps"
        if args.mps:
            print(gpu_mps.start(mps) or "MPS: no NVIDIA GPU here; not started")
        under_mps = gpu_mps.PIPE_ENV in os.environ  # the jobs, started below, inherit it
        try:
            table = sharing.sharing_table(
                chosen, models, str(data.root), args.steps, args.device, run_steps, args.copies
            )
        finally:
            stopped = gpu_mps.stop(mps)
            if stopped:
                print(stopped)
    table = table.assign(mps=under_mps)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return table
