"""Snakemake script: the recipe card of the workflow's runs, from their train.yaml (thin wrapper around
consert.paper.recipe_card)."""

import sys
from pathlib import Path

from consert.io import write_csv
from consert.paper.recipe_card import recipe_card, unexplained
from consert.train.config import load_train_config

with open(snakemake.log[0], "w") as log:  # noqa: F821 - injected by Snakemake
    sys.stderr = log
    run_configs = {Path(path).parent.name: load_train_config(path) for path in snakemake.input}  # noqa: F821
    card = recipe_card(snakemake.params.config, run_configs)  # noqa: F821
    write_csv(card, snakemake.output[0])  # noqa: F821
    for problem in unexplained(card):
        print(f"unexplained difference from the authors' recipe: {problem}", file=log)
