"""Snakemake script: one published row decided on its own (thin wrapper around
consert.paper.row_targets.write_row_verdict)."""

import sys
from pathlib import Path

from consert.paper.row_targets import write_row_verdict
from consert.planner.comparison import ComparisonConfig

with open(snakemake.log[0], "w") as log:  # noqa: F821 - injected by Snakemake
    sys.stderr = log
    params = snakemake.params  # noqa: F821
    settings = ComparisonConfig.read(snakemake.input.settings)  # noqa: F821
    lines = write_row_verdict(params.artifact, params.row, params.config, Path(params.published), settings,
                              snakemake.output[0])  # noqa: F821  # fmt: skip
    print("\n".join(lines), file=log)
