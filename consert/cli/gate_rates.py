"""``consert gate-rates``: the gate's error rates under a workflow config's design, by simulation."""

from __future__ import annotations

import argparse
from pathlib import Path

from consert.cli.arguments import at_least

NAME = "gate-rates"
HELP = "simulate the gate's error rates under a workflow config's design (seeds, rows, declared seed SDs)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert gate-rates``."""
    parser.add_argument("--configfile", default="config/config.yaml", metavar="FILE.yaml", help="workflow config")
    parser.add_argument("--published", default="results/published")
    parser.add_argument("--replicates", type=at_least(100), default=4000, help="simulated runs per scenario")
    parser.add_argument("--output", default=None, metavar="FILE.csv", help="also write the rates as CSV")
    parser.add_argument("--sweep-seeds", default=None, metavar="A-B", help="also: a -1 error in every sweep row "
                        "caught, with A to B seeds a sweep row (the config's design otherwise)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Run ``consert gate-rates`` on parsed ``args``; return its exit status."""
    from consert.io import write_csv
    from consert.planner.design import paper_design
    from consert.planner.load import read_workflow_config
    from consert.verdict.decision import load_decision
    from consert.verdict.gate_rates import error_rates

    config = read_workflow_config(args.configfile)
    decision = load_decision(Path(args.published))
    rates = error_rates(paper_design(config, decision), decision, replicates=args.replicates)
    shown = rates.assign(rate=rates.rate.round(3), mc_se=rates.mc_se.round(4),
                         reproduced_share=rates.reproduced_share.round(3))  # fmt: skip
    columns = ["scenario", "row", "what", "rate", "mc_se", "reproduced_share", "kind", "n", "m", "sigma"]
    print(f"{args.configfile}: seeds {config.seeds}, {args.replicates} simulated runs per scenario")
    print(shown[columns].to_string(index=False))
    if args.sweep_seeds:
        from consert.planner.design import sweep_block_caught

        low, _, high = args.sweep_seeds.partition("-")
        counts = list(range(int(low), int(high or low) + 1))
        for count, rate in sweep_block_caught(config, decision, counts, args.replicates).items():
            print(f"sweeps -1 (every Table 4 and Figure 5 row), {count} seeds a sweep row: caught {rate:.3f}")
    if args.output:
        print(f"wrote {write_csv(rates, args.output)}")
    return 0
