"""Snakemake script: the comparison's forest plot (thin wrapper around consert.paper.figures.comparison_forest)."""

import sys

import pandas as pd

from consert.paper.figures import comparison_forest
from consert.paper.stamp import figure_stamp

with open(snakemake.log[0], "w") as log:  # noqa: F821 - injected by Snakemake
    sys.stderr = log
    inputs = snakemake.input  # noqa: F821
    stamp = figure_stamp(inputs.evaluations)
    comparison_forest(pd.read_csv(inputs.comparison), list(snakemake.output), stamp=stamp)  # noqa: F821
