"""``consert compare``: compare reproduced artifacts with the published numbers (and gate on them)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "compare"
HELP = "compare reproduced artifacts with the published numbers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert compare``; its ``--help`` lists the keys of ``--config`` with their help."""
    from consert.configs import keys_epilog
    from consert.paper.comparison_config import ComparisonConfig

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = keys_epilog(ComparisonConfig, "keys of --config FILE.yaml")
    parser.add_argument("--results", default="results")
    parser.add_argument("--published", default="results/published")
    parser.add_argument("--output", default="results/comparison.csv", metavar="FILE.csv")
    parser.add_argument(
        "--config",
        default=None,
        metavar="FILE.yaml",
        help="the comparison's settings (margins, seed_noise, seeds, not_run, inconclusive, allow_stand_in: "
        "the workflow writes results/comparison_config.yaml); the flags below add to them",
    )
    parser.add_argument(
        "--margin",
        action="append",
        default=[],
        metavar="ARTIFACT=VALUE",
        help="override a declared margin of results/published/decision.yaml, e.g. table2=1.0 table4_steps=300",
    )
    parser.add_argument(
        "--seed-noise",
        action="append",
        default=[],
        metavar="KIND=SD",
        help="override a declared seed SD of one run's Avg (kinds consert, flow, flow_nli, sgopt, simcse: "
        "results/published/decision.yaml)",
    )
    parser.add_argument(
        "--seeds",
        action="append",
        default=[],
        metavar="ARTIFACT:KIND=N",
        help="the seeds the config's design gives a kind of trained row (repeatable), e.g. table2:consert=3: a row "
        "that ran fewer is missing (the workflow passes its config's design)",
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
        help="exit 1 when a comparable primary cell or the shared shift is not reproduced, a published row is "
        "missing, or nothing was compared; exit 3 when no cell of the paper is comparable (stand-in results)",
    )
    parser.add_argument(
        "--inconclusive",
        choices=("pass", "fail"),
        default=None,
        help="what --check does with an inconclusive primary cell (its interval straddles the margin); default "
        "pass: listed as not shown equivalent",
    )
    parser.add_argument(
        "--allow-stand-in",
        action="store_true",
        help="let --check pass when no cell of the paper is comparable (an offline stand-in run); comparison.csv "
        "says so",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``consert compare`` on parsed ``args``; return its exit status."""
    import pandas as pd

    from consert.configs import parse_overrides
    from consert.io import write_csv
    from consert.paper.comparison_config import ComparisonConfig
    from consert.verdict.compare import compare
    from consert.verdict.decision import load_decision
    from consert.verdict.gate import STAND_IN_ALLOWED, comparable_cells, gate, stand_in_allowed_row
    from consert.verdict.gate_rates import design_of, design_power

    settings = ComparisonConfig.read(args.config) if args.config else ComparisonConfig()
    margins = {**settings.margins, **{key: float(value) for key, value in parse_overrides(args.margin).items()}}
    noise = {**settings.seed_noise, **{key: float(value) for key, value in parse_overrides(args.seed_noise).items()}}
    seeds = {**settings.seeds, **{key: int(value) for key, value in parse_overrides(args.seeds).items()}}
    allow_stand_in = args.allow_stand_in or settings.allow_stand_in
    inconclusive = args.inconclusive or settings.inconclusive
    results = Path(args.results)
    if args.check and not results.is_dir():
        print(f"error: --check: results directory {results} does not exist: nothing to check", file=sys.stderr)
        return 1
    table = compare(results, Path(args.published), [*settings.not_run, *args.not_run], margins, noise, seeds)
    decision = load_decision(Path(args.published), margins, noise)
    if design := design_of(table, decision):
        print(design_power(design, decision))
    code, reason = gate(table, allow_stand_in, inconclusive)
    allowed = allow_stand_in and code == 0 and comparable_cells(table).empty
    if allowed:
        table = pd.concat([table, pd.DataFrame([stand_in_allowed_row(table)])], ignore_index=True)
    write_csv(table, args.output)
    _print_comparison(table)
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


def _print_comparison(table) -> None:
    """What the comparison found: the primary cells' verdicts, the shared shift, what decided each."""
    from consert.verdict.decision import SHIFT
    from consert.verdict.gate import comparable_cells, gaps, primary_cells, verdict_counts

    compared = table[(table.status == "compared") & (table.role != SHIFT)]
    missing, not_run = gaps(table), table[table.status == "not run"]
    counts = verdict_counts(table)
    print(
        f"{len(compared)} cells compared; {len(primary_cells(table))} comparable primary cells decide the rows: "
        + ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
        + f"; {len(comparable_cells(table))} comparable cells of the paper; {len(not_run)} published rows "
        f"declared not run; {len(missing)} missing"
    )
    for _, row in table[table.role == SHIFT].iterrows():
        print(
            f"  shared shift: mean delta {row.delta:+.2f} [{row.diff_low:+.2f}, {row.diff_high:+.2f}] over "
            f"{int(row.n_seeds)} trained primary cells, margin {row.margin:g}: {row.verdict} ({row.reason})"
        )
    for _, row in not_run.iterrows():
        print(f"  not run: {row.artifact} {row.row} ({row.reason})")
    for _, row in missing.iterrows():
        print(f"  MISSING: {row.artifact} {row.row} ({row.reason})")
    if comparable_cells(table).empty and len(compared):
        print("no cell of the paper is comparable (offline stand-in, other encoder or other NLI data)")
    for _, row in primary_cells(table).iterrows():
        if row.verdict == "reproduced":
            continue
        print(
            f"  {row.verdict.upper()}: {row.artifact} {row.row} {row.column}: published {row.published:.2f}, "
            f"reproduced {row.reproduced:.2f}, delta {row.delta:+.2f} in [{row.diff_low:+.2f}, {row.diff_high:+.2f}] "
            f"against margin {row.margin:g} ("
            + (f"sigma {row.sigma:.2f}: {row.sigma_source})" if row.sigma_source else f"{row.margin_source})")
        )
