"""Snakemake script: build one paper artifact (thin wrapper around consert.paper.catalogue.write_artifact)."""

import sys

from consert.paper.catalogue import write_artifact

with open(snakemake.log[0], "w") as log:  # noqa: F821 - injected by Snakemake
    sys.stderr = log
    outputs = snakemake.output  # noqa: F821
    figures = [outputs.png, outputs.pdf] if hasattr(outputs, "png") else None
    published = snakemake.params.get("published")  # noqa: F821
    config = snakemake.params.config  # noqa: F821 - typed at the workflow's start
    write_artifact(snakemake.params.artifact, config, outputs[0], figures, published)  # noqa: F821
