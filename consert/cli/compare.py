"""``consert compare``: compare reproduced artifacts with the published numbers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from consert.cli.arguments import probability

NAME = "compare"
HELP = "compare reproduced artifacts with the published numbers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert compare``."""
    parser.add_argument("--results", default="results")
    parser.add_argument("--published", default="results/published")
    parser.add_argument("--output", default="results/comparison.csv", metavar="FILE.csv")
    parser.add_argument(
        "--tolerance",
        action="append",
        default=[],
        metavar="ARTIFACT=POINTS",
        help="e.g. table2=1.0 table4_steps=300 (defaults in consert/paper/compare.py)",
    )
    parser.add_argument(
        "--not-run",
        action="append",
        default=[],
        metavar="ARTIFACT:ROW",
        help="a published row this run deliberately does not reproduce (glob, repeatable), e.g. 'table2:*large*'",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when a comparable cell is off its yardstick, a published row is missing, or nothing was "
        "compared; exit 3 when no cell is comparable (stand-in results)",
    )
    parser.add_argument(
        "--allow-stand-in",
        action="store_true",
        help="let --check pass when no cell is comparable (an offline stand-in run); comparison.csv says so",
    )
    parser.add_argument(
        "--alpha",
        type=probability,
        default=0.05,
        help="family-wise error rate of the cells judged by seed prediction intervals (Holm); default 0.05",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``consert compare`` on parsed ``args``; return its exit status."""
    import pandas as pd

    from consert.io import write_csv
    from consert.paper.compare import STAND_IN_ALLOWED, comparable_cells, compare, gate, stand_in_allowed_row
    from consert.train.config import parse_overrides

    tolerances = {key: float(value) for key, value in parse_overrides(args.tolerance).items()}
    results = Path(args.results)
    if args.check and not results.is_dir():
        print(f"error: --check: results directory {results} does not exist: nothing to check", file=sys.stderr)
        return 1
    table = compare(results, Path(args.published), tolerances, args.not_run, alpha=args.alpha)
    code, reason = gate(table, args.allow_stand_in)
    allowed = args.allow_stand_in and code == 0 and comparable_cells(table).empty
    if allowed:
        table = pd.concat([table, pd.DataFrame([stand_in_allowed_row(table)])], ignore_index=True)
    write_csv(table, args.output)
    _print_comparison(table, args.alpha)
    print(f"wrote {args.output}")
    if not args.check:
        return 0
    if allowed:
        print(f"gate: {STAND_IN_ALLOWED.upper()}: {reason}")
    elif code:
        print(f"error: --check: {reason}", file=sys.stderr)
    else:
        print(f"gate: passed: {reason}")
    return code


def _print_comparison(table, alpha: float) -> None:
    """What the comparison found, the yardsticks it used and its family-wise error."""
    from consert.paper.compare import comparable_cells, failures, gaps

    compared, comparable = table[table.status == "compared"], comparable_cells(table)
    failed, missing, not_run = failures(table), gaps(table), table[table.status == "not run"]
    reproduced = comparable[comparable.verdict == "reproduced"]
    print(
        f"{len(compared)} cells compared; {len(comparable)} comparable: {len(reproduced)} reproduced, {len(failed)} "
        f"higher or lower than published beyond their yardstick; {len(not_run)} published rows "
        f"declared not run; {len(missing)} missing"
    )
    tested = comparable[comparable.decision == "holm"]
    fixed = comparable[comparable.decision == "fixed"]
    if len(comparable):
        print(
            f"  {len(tested)} cells judged by seed prediction intervals, Holm-adjusted: family-wise error <= {alpha:g} "
            f"(unadjusted, {len(tested)} x {alpha:g} = {len(tested) * alpha:.1f} false alarms would be expected "
            f"if all were reproduced); {len(fixed)} by a fixed tolerance "
            f"({(fixed.tolerance_source.str.startswith('untrained')).sum()} untrained rows: rounding + precision; "
            f"{(fixed.tolerance_source.str.startswith('declared')).sum()} one-seed rows: declared, no error rate)"
        )
    for _, row in not_run.iterrows():
        print(f"  not run: {row.artifact} {row.row} ({row.reason})")
    for _, row in missing.iterrows():
        print(f"  MISSING: {row.artifact} {row.row} ({row.reason})")
    if len(comparable) == 0 and len(compared):
        print("no cell is comparable (offline stand-in, other encoder or other NLI data): nothing to gate on")
    for _, row in failed.iterrows():
        judged = f"p_adjusted {row.p_adjusted:.3g}" if row.decision == "holm" else f"tolerance {row.tolerance:.3g}"
        print(
            f"  {row.verdict.upper()}: {row.artifact} {row.row} {row.column}: published {row.published:.2f}, "
            f"reproduced {row.reproduced:.2f} (delta {row.delta:+.2f}; {judged}: {row.tolerance_source})"
        )
