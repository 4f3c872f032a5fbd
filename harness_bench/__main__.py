"""``python -m harness_bench``: the harness's benchmarks of itself (see the package's docstring)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from consert.cli import bench
from consert.cli.arguments import add_choice_argument, add_data_argument, at_least


def build_parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per benchmark, with the arguments of ``consert bench`` where it times a
    workflow config's job kinds."""
    parser = argparse.ArgumentParser(prog="python -m harness_bench", description=__doc__)
    parser.add_argument(
        "--parse-only",
        action="store_true",
        help="check the arguments and stop: what scripts/gpu_checks.sh's CPU test runs",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    references = commands.add_parser("references", help="the harness against its references, in one run")
    add_choice_argument(
        references,
        "--device",
        ("cpu", "cuda"),
        "cpu: against sentence-transformers; cuda: the paper-scale trainer, a plain loop, the compiled ceiling",
    )
    references.add_argument("--repeats", type=at_least(1), default=3, help="alternating repeats (cpu)")
    references.add_argument("--json", default=None, metavar="FILE.json", help="also write the raw numbers")
    add_data_argument(references)
    limits = commands.add_parser(
        "limits", help="consert bench's cost table with each kind's step against the card's limit"
    )
    bench.add_arguments(limits)
    share = commands.add_parser("share", help="whether jobs of some kinds run together raise the throughput")
    bench.add_timing_arguments(share)
    share.add_argument("kinds", nargs="+", metavar="KIND", help="job kinds of the config, as globs ('base sgopt*')")
    share.add_argument("--copies", type=at_least(1), nargs="+", default=(1, 2, 3), help="how many jobs at once")
    share.add_argument(
        "--mps",
        action="store_true",
        help="run the jobs under NVIDIA's Multi-Process Service (its daemon started and stopped here), as the "
        "workflow runs jobs that share a card",
    )
    share.add_argument("--output", default=None, metavar="FILE.csv", help="the table as CSV")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv``, run the benchmark; its exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "limits":
        bench.check_arguments(parser, args)
        if args.rate_from:
            parser.error("limits times the kinds: --rate-from belongs to consert bench")
    if args.parse_only:
        print(f"harness_bench {args.command}: arguments accepted")
        return 0
    if args.command == "references":
        return _references(args)
    if args.command == "limits":
        from harness_bench.speed_of_light import speed_of_light

        return bench.cost_table(args, also=speed_of_light)
    return _share(args)


def _references(args: argparse.Namespace) -> int:
    from consert.data.senteval import load_senteval

    data = load_senteval(args.data)
    if args.device == "cuda":
        from harness_bench import references_cuda

        report = references_cuda.run(data)
    else:
        from harness_bench import references_cpu

        report = references_cpu.run(data, repeats=args.repeats)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


def _share(args: argparse.Namespace) -> int:
    """Jobs of the matching kinds run 1, 2, 3 (``--copies``) at once, timed whole."""
    from consert import gpu_mps
    from consert.bench import dag_cost
    from consert.hardware import hardware_summary
    from consert.io import write_csv
    from harness_bench import sharing

    workflow, data = bench.timing_setup(args)
    jobs, kinds = dag_cost.planned_jobs(workflow, data)
    try:
        chosen = sharing.matching_kinds(kinds, args.kinds)
    except ValueError as error:
        print(f"python -m harness_bench share: error: {error}", file=sys.stderr)
        return 2
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
    if args.output:
        table = table.assign(hardware=hardware_summary(args.device), shape=args.shape)
        print(f"wrote {write_csv(table, args.output)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
