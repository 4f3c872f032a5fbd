"""Snakemake script: build one paper artifact (thin wrapper around consert.paper.artifacts.write_artifact)."""

import sys

from consert.paper.artifacts import write_artifact
from consert.paper.workflow_config import load_workflow_config

with open(snakemake.log[0], "w") as log:  # noqa: F821 - injected by Snakemake
    sys.stderr = log
    outputs = snakemake.output  # noqa: F821
    figures = [outputs.png, outputs.pdf] if hasattr(outputs, "png") else None
    published = snakemake.params.get("published")  # noqa: F821
    write_artifact(snakemake.params.artifact, load_workflow_config(snakemake.config), outputs[0], figures, published)  # noqa: F821
