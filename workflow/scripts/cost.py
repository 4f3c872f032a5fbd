"""Snakemake script: results/cost.csv (thin wrapper around consert.paper.job_costs.cost_table)."""

import sys

from consert.io import write_csv
from consert.paper.job_costs import cost_table

with open(snakemake.log[0], "w") as log:  # noqa: F821 - injected by Snakemake
    sys.stderr = log
    table = cost_table(snakemake.params.config)  # noqa: F821
    write_csv(table, snakemake.output[0])  # noqa: F821
    print(table.to_string(index=False), file=log)
