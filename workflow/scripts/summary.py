"""Snakemake script: results/summary.html (thin wrapper around consert.paper.summary.write_summary)."""

import sys

from consert.hardware import hardware_summary
from consert.paper.summary import write_summary
from consert.provenance import git_commit

with open(snakemake.log[0], "w") as log:  # noqa: F821 - injected by Snakemake
    sys.stderr = log
    write_summary("results", "figures", snakemake.output[0], git_commit(), hardware_summary(with_threads=False))  # noqa: F821
