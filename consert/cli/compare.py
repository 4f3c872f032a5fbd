"""``consert compare``: compare reproduced artifacts with the published numbers (and gate on them)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from consert.cli.arguments import add_repeatable_argument

NAME = "compare"
HELP = "compare reproduced artifacts with the published numbers"
#: The design and settings the workflow writes beside the results; read from ``--results`` unless ``--config``.
DESIGN_FILE = "comparison_config.yaml"


def _assignment(form: str, example: str, convert, key_form: str = ""):
    """An argparse type: ``KEY=VALUE`` whose value ``convert`` reads (and whose key holds ``key_form``, when
    given), kept as text; else a one-line error naming the form expected."""

    def parse(text: str) -> str:
        key, sep, value = text.partition("=")
        try:
            if not sep or not key.strip() or key_form not in key:
                raise ValueError(text)
            convert(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {form} (e.g. {example}), got {text!r}") from None
        return text

    return parse


def _count(text: str) -> int:
    if int(text) < 1:
        raise ValueError(text)
    return int(text)


def _published_rows(text: str) -> str:
    """An argparse type: ``ARTIFACT:ROW`` globs whose artifact part names a compared artifact."""
    from fnmatch import fnmatch

    from consert.paper.catalogue import COMPARED

    artifact, sep, row = text.partition(":")
    if not sep or not artifact or not row:
        raise argparse.ArgumentTypeError(f"expected ARTIFACT:ROW (a glob, e.g. 'table2:*large*'), got {text!r}")
    known = sorted({block.artifact for block in COMPARED})
    if not any(fnmatch(name, artifact) for name in known):
        raise argparse.ArgumentTypeError(
            f"{text!r}: no compared artifact is {artifact!r}; expected one of {', '.join(known)}"
        )
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert compare``; its ``--help`` lists the keys of ``--config`` with their help."""
    from consert.configs import keys_epilog
    from consert.planner.comparison import ComparisonConfig

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = keys_epilog(ComparisonConfig, "keys of --config FILE.yaml")
    parser.add_argument("--results", default="results")
    parser.add_argument("--published", default="results/published")
    parser.add_argument("--output", default="results/comparison.csv", metavar="FILE.csv")
    parser.add_argument(
        "--config",
        default=None,
        metavar="FILE.yaml",
        help="the comparison's settings (margins, seed_noise, seeds, not_run, inconclusive, allow_stand_in; "
        f"default: RESULTS/{DESIGN_FILE} when there, which the workflow writes); the flags below add to them",
    )
    add_repeatable_argument(
        parser,
        "--margin",
        "ARTIFACT=VALUE",
        "override a declared margin of results/published/decision.yaml, e.g. table2=1.0 table4_steps=300",
        parse=_assignment("ARTIFACT=NUMBER", "table2=1.0", float),
    )
    add_repeatable_argument(
        parser,
        "--seed-noise",
        "KIND=SD",
        "override a declared seed SD of one run's Avg (kinds consert, flow, flow_nli, sgopt, simcse: "
        "results/published/decision.yaml)",
        parse=_assignment("KIND=NUMBER", "consert=0.3", float),
    )
    add_repeatable_argument(
        parser,
        "--seeds",
        "ARTIFACT:KIND=N",
        "the seeds the config's design gives a kind of trained row (repeatable), e.g. table2:consert=3: a row "
        "that ran fewer is missing (the workflow passes its config's design)",
        parse=_assignment("ARTIFACT:KIND=N with N at least 1", "table2:consert=3", _count, key_form=":"),
    )
    add_repeatable_argument(
        parser,
        "--not-run",
        "ARTIFACT:ROW",
        "a published row this run deliberately does not reproduce (glob, repeatable), e.g. 'table2:*large*'",
        parse=_published_rows,
    )
    add_repeatable_argument(
        parser,
        "--only",
        "ARTIFACT:ROW",
        "decide these published rows only (glob, repeatable), e.g. 'table2:*' or 'table2:ConSERT*base*': with every "
        "row that ran, labelled provisional where rows of the others did not run",
        parse=_published_rows,
    )
    parser.add_argument(
        "--layout",
        default=None,
        metavar="FILE.csv",
        help="also write the compared tables in the paper's layout (a row per published row, each set's ours, SD, "
        "published, difference, interval and verdict side by side): the workflow's results/paper_tables.csv",
    )
    parser.add_argument(
        "--yours",
        default=None,
        metavar="FILE.csv",
        help="rows of your models (the workflow's results/yours.csv: each one's Avg and its paired difference from "
        "each ConSERT row of its tables), appended to the comparison after the gate: no verdict, never counted",
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


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, before any work, folders that are not there and a key given twice; take the design the workflow
    wrote beside the results (``RESULTS/comparison_config.yaml``) when no ``--config`` names one."""
    from consert.configs import ConfigError, parse_overrides

    for flag, folder, expected in (
        ("--results", args.results, "the folder of the reproduced artifacts (the workflow's results/)"),
        ("--published", args.published, "the folder of the published tables and decision.yaml (results/published)"),
    ):
        if not Path(folder).is_dir():
            found = "is not a directory" if Path(folder).exists() else "does not exist"
            parser.error(f"{flag} {folder}: {found}; expected {expected}")
    if args.yours is not None and not Path(args.yours).is_file():
        parser.error(f"--yours {args.yours}: no such file; expected the rows of your models (results/yours.csv)")
    if args.config is not None and not Path(args.config).is_file():
        parser.error(f"--config {args.config}: no such file; expected the comparison's settings (YAML)")
    for flag in ("margin", "seed_noise", "seeds"):
        try:
            parse_overrides(getattr(args, flag), flag=f"--{flag.replace('_', '-')}")
        except ConfigError as err:
            parser.error(str(err))
    if args.config is None and (Path(args.results) / DESIGN_FILE).is_file():
        args.config = str(Path(args.results) / DESIGN_FILE)


def run(args: argparse.Namespace) -> int:
    """Run ``consert compare`` on parsed ``args``; return its exit status."""
    import pandas as pd

    from consert.configs import parse_overrides
    from consert.io import write_csv
    from consert.paper.catalogue import COMPARED
    from consert.planner.comparison import ComparisonConfig
    from consert.verdict.compare import compare
    from consert.verdict.decision import load_decision
    from consert.verdict.gate import STAND_IN_ALLOWED, comparable_cells, gate, rows_at_hand, stand_in_allowed_row
    from consert.verdict.gate_rates import design_of, design_power

    settings = ComparisonConfig.read(args.config) if args.config else ComparisonConfig()
    if args.check and args.config is None and not args.seeds:
        print(
            f"consert compare: warning: --check: no design ({Path(args.results) / DESIGN_FILE}, --config or --seeds): "
            "the seeds each row should have cannot be checked, so a missing seed goes unseen",
            file=sys.stderr,
        )
    margins = {**settings.margins, **{key: float(value) for key, value in parse_overrides(args.margin).items()}}
    noise = {**settings.seed_noise, **{key: float(value) for key, value in parse_overrides(args.seed_noise).items()}}
    seeds = {**settings.seeds, **{key: int(value) for key, value in parse_overrides(args.seeds).items()}}
    allow_stand_in = args.allow_stand_in or settings.allow_stand_in
    inconclusive = args.inconclusive or settings.inconclusive
    results = Path(args.results)
    table = compare(COMPARED, results, Path(args.published), [*settings.not_run, *args.not_run], margins, noise, seeds)
    decision = load_decision(Path(args.published), margins, noise)
    if design := design_of(table, decision):
        print(design_power(design, decision))
    provisional = ""
    if args.only:
        table, provisional = rows_at_hand(table, args.only)
    code, reason = gate(table, allow_stand_in, inconclusive)
    allowed = allow_stand_in and code == 0 and comparable_cells(table).empty
    if allowed:
        table = pd.concat([table, pd.DataFrame([stand_in_allowed_row(table)])], ignore_index=True)
    if args.yours:  # after the gate: rows of yours are shown beside the verdicts, never among them
        table = pd.concat([table, pd.read_csv(args.yours)[list(table.columns)]], ignore_index=True)
    write_csv(table.assign(provisional=provisional) if args.only else table, args.output)
    if args.layout:
        from consert.verdict.layout import paper_layout

        write_csv(paper_layout(table, COMPARED, Path(args.published)), args.layout)
    _print_comparison(table)
    if provisional:
        print(provisional)
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
    """What the comparison found: the primary cells' verdicts, the shared shift, what decided each; the rows of yours
    beside them."""
    import pandas as pd

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
    for _, row in table[table.status == "yours"].iterrows():
        if pd.isna(row.delta):
            print(f"  yours: {row.artifact} {row.row}: Avg {row.reproduced:.2f} (no verdict)")
        else:
            print(f"  yours: {row.artifact} {row.row} - {row.against}: {row.delta:+.2f} [{row.diff_low:+.2f}, "
                  f"{row.diff_high:+.2f}] on the same test pairs")  # fmt: skip
    for _, row in primary_cells(table).iterrows():
        if row.verdict == "reproduced":
            continue
        print(
            f"  {row.verdict.upper()}: {row.artifact} {row.row} {row.column}: published {row.published:.2f}, "
            f"reproduced {row.reproduced:.2f}, delta {row.delta:+.2f} in [{row.diff_low:+.2f}, {row.diff_high:+.2f}] "
            f"against margin {row.margin:g} ("
            + (f"sigma {row.sigma:.2f}: {row.sigma_source})" if row.sigma_source else f"{row.margin_source})")
        )
