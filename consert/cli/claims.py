"""``consert claims``: check the paper's qualitative claims on the reproduced artifacts."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "claims"
HELP = "check the paper's qualitative claims on the reproduced artifacts"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert claims``."""
    parser.add_argument("--configfile", default="config/config.yaml", metavar="FILE.yaml", help="workflow config")
    parser.add_argument("--results", default="results")
    parser.add_argument("--published", default="results/published")
    parser.add_argument("--output", default="results/claims.csv", metavar="FILE.csv")


def run(args: argparse.Namespace) -> int:
    """Run ``consert claims`` on parsed ``args``; return its exit status."""
    from consert.io import write_csv
    from consert.paper.catalogue import CSV_FILES
    from consert.planner.load import read_workflow_config
    from consert.verdict.claims import CLAIMS_FILE, evaluate_claims, load_claims

    claims = load_claims(Path(args.published) / CLAIMS_FILE)
    config = read_workflow_config(args.configfile)
    table = evaluate_claims(claims, Path(args.results), config, CSV_FILES, Path(args.published))
    print(table[["id", "size", "test", "verdict", "p_adjusted", "comparable", "detail"]].to_string(index=False))
    print(f"wrote {write_csv(table, args.output)} ({len(table)} claims)")
    return 0
