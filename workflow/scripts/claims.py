"""Snakemake script: the paper's claims checked on this run's artifacts (thin wrapper around consert.verdict.claims)."""

import sys
from pathlib import Path

from consert.io import write_csv
from consert.paper.catalogue import CSV_FILES
from consert.verdict.claims import CLAIMS_FILE, evaluate_claims, load_claims

with open(snakemake.log[0], "w") as log:  # noqa: F821 - injected by Snakemake
    sys.stderr = log
    published = Path(snakemake.params.published)  # noqa: F821
    claims = load_claims(published / CLAIMS_FILE)
    config = snakemake.params.config  # noqa: F821 - typed at the workflow's start
    table = evaluate_claims(claims, Path("results"), config, CSV_FILES, published)
    write_csv(table, snakemake.output[0])  # noqa: F821
    print(table[["id", "size", "verdict", "p_value", "comparable"]].to_string(index=False), file=log)
