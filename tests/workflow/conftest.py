"""The workflow tests' shared DAG: the test config run end to end once a session, for every module that reads it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fixtures import write_senteval_tree
from tests.workflow.dag import snakemake


@pytest.fixture(scope="session")
def dag_run(tmp_path_factory):
    """The test config's DAG, once a session; under ``$CONSERT_TEST_DAG`` (a folder: CI names one for both of
    its pytest runs) once for all of them: a later session finds every output up to date and snakemake
    reruns nothing, which it checks itself. The stdout kept is the run's that did the work; a later session that
    redoes jobs leaves its output in ``snakemake.rerun.stdout`` (``.ci/run`` prints its reasons)."""
    shared = os.environ.get("CONSERT_TEST_DAG")
    workdir = Path(shared) if shared else tmp_path_factory.mktemp("dag")
    data = workdir / "senteval"
    if not data.exists():  # written once: a new tree would be newer than every output
        write_senteval_tree(data, pairs_per_file=12)
    result = snakemake(workdir, "--config", f"data_dir={data}")
    stdout = workdir / "snakemake.stdout"
    if not stdout.exists():
        stdout.write_text(result.stdout)
    elif "Nothing to be done" not in result.stdout + result.stderr:
        (workdir / "snakemake.rerun.stdout").write_text(result.stdout + result.stderr)
    return workdir, data
