"""Snakemake script: write one training run's resolved config (thin wrapper around consert.paper.run_configs)."""

from consert.paper.run_configs import write_run_config

write_run_config(snakemake.params.values, snakemake.output[0])  # noqa: F821 - injected by Snakemake
