"""`scripts/gpu_checks.sh`, the CUDA checks of a GPU box, on what can run anywhere: how it finds its data."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def test_the_gpu_checks_find_the_sts_data_where_download_data_puts_it(tmp_path):
    """`bash scripts/gpu_checks.sh OUT` on a box where `consert download-data` filled data/senteval (no
    $CONSERT_DATA, no SentEval folder beside it): it reads that folder, as every command does."""
    from tests.fixtures import write_senteval_tree

    box = tmp_path / "box"
    write_senteval_tree(box / "data" / "senteval")
    env = {key: value for key, value in os.environ.items() if key != "CONSERT_DATA"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    result = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_checks.sh"), str(tmp_path / "out")], cwd=box, env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    machine = (tmp_path / "out" / "machine.txt").read_text()
    assert f"data {(box / 'data' / 'senteval' / 'downstream').resolve()}" in machine.splitlines()
