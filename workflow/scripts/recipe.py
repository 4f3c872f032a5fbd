"""Snakemake script: the recipe card of the workflow's config (thin wrapper around consert.paper.card)."""

import sys

from consert.io import write_csv
from consert.paper.card import recipe_card, unexplained

with open(snakemake.log[0], "w") as log:  # noqa: F821 - injected by Snakemake
    sys.stderr = log
    card = recipe_card(snakemake.config)  # noqa: F821
    write_csv(card, snakemake.output[0])  # noqa: F821
    for problem in unexplained(card):
        print(f"unexplained difference from the authors' recipe: {problem}", file=log)
