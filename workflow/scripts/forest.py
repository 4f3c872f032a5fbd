"""Snakemake script: the comparison's forest plot (thin wrapper around consert.paper.figures.comparison_forest)."""

import sys

import pandas as pd

from consert.paper.figures import comparison_forest

with open(snakemake.log[0], "w") as log:  # noqa: F821 - injected by Snakemake
    sys.stderr = log
    comparison_forest(pd.read_csv(snakemake.input[0]), list(snakemake.output))  # noqa: F821
