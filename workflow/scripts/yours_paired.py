"""Snakemake script: the rows of yours of comparison.csv (thin wrapper around consert.paper.yours.paired_rows)."""

import sys

from consert.io import write_csv
from consert.paper.yours import paired_rows

with open(snakemake.log[0], "w") as log:  # noqa: F821 - injected by Snakemake
    sys.stderr = log
    write_csv(paired_rows(snakemake.params.config), snakemake.output[0])  # noqa: F821
