"""``consert recipe``: write the recipe card: every planned training run of a workflow config next to the authors'."""

from __future__ import annotations

import argparse
import sys

NAME = "recipe"
HELP = "write the recipe card: every planned training run of a workflow config next to the authors'"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert recipe``."""
    parser.add_argument("--configfile", default="config/config.yaml", metavar="FILE.yaml", help="workflow config")
    parser.add_argument("--output", default="results/recipe.csv", metavar="FILE.csv")
    parser.add_argument("--check", action="store_true", help="exit 1 when a difference is unexplained")


def run(args: argparse.Namespace) -> int:
    """Run ``consert recipe`` on parsed ``args``; return its exit status."""
    from consert.io import write_csv
    from consert.paper.recipe_card import recipe_card, unexplained
    from consert.planner.load import read_workflow_config

    card = recipe_card(read_workflow_config(args.configfile))
    shown = ["run", "mode", "batch_size", "lr", "epochs", "views", "bert_dropout", "patience"]
    print(card[shown].to_string(index=False))
    print(f"wrote {write_csv(card, args.output)} ({len(card)} runs)")
    problems = unexplained(card)
    for problem in problems:
        print(f"unexplained difference from the authors' recipe: {problem}", file=sys.stderr)
    return 1 if problems and args.check else 0
