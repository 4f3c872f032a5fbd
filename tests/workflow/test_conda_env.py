"""`snakemake --use-conda` installs this checkout into the workflow's environment with any --conda-prefix: a fake
`conda` on PATH records the environment file snakemake hands it (its copy in the prefix), the folder it runs in and
what the pip section's editable line resolves to as conda's pip would read it (environment variables expanded, a
relative path from the file's folder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

FAKE_CONDA = """#!{python}
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
if args == ["--version"]:
    print("conda 24.7.1")
elif args[:2] == ["info", "--json"]:
    print(json.dumps({{"conda_prefix": "/nonexistent/conda", "platform": "linux-64"}}))
elif args[:2] == ["config", "--get"]:
    print(json.dumps({{"get": {{"channel_priority": "strict"}}}}))
elif args[:2] == ["env", "create"]:
    file, prefix = (args[args.index(flag) + 1].strip('"') for flag in ("--file", "--prefix"))
    given = [line.strip() for line in Path(file).read_text().splitlines()]
    lines = [line[len("- -e "):] for line in given if line.startswith("- -e ")]
    resolved = [str((Path(file).parent / os.path.expandvars(line)).resolve()) for line in lines]
    with open(os.environ["FAKE_CONDA_RECORD"], "a") as out:
        out.write(json.dumps({{"file": file, "cwd": os.getcwd(), "editable": lines, "resolved": resolved}}) + "\\n")
    Path(prefix, "conda-meta").mkdir(parents=True, exist_ok=True)
"""


@pytest.mark.slow
def test_the_workflow_environment_installs_this_checkout_with_any_conda_prefix(tmp_path, tiny_tree):
    bin_dir, record = tmp_path / "bin", tmp_path / "conda.jsonl"
    bin_dir.mkdir()
    (bin_dir / "conda").write_text(FAKE_CONDA.format(python=sys.executable))
    (bin_dir / "conda").chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, "PATH": path, "FAKE_CONDA_RECORD": str(record)}
    prefix, workdir = tmp_path / "cluster-scratch" / "conda", tmp_path / "work"
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory", str(workdir),
               "--use-conda", "--conda-create-envs-only", "--conda-prefix", str(prefix), "--cores", "1",
               "--configfile", str(ROOT / "config" / "test.yaml"), "--config", f"data_dir={tiny_tree}"]  # fmt: skip
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    (created,) = [json.loads(line) for line in record.read_text().splitlines()]
    assert Path(created["file"]).parent == prefix  # snakemake's copy, in the prefix: a relative path would be lost
    assert created["resolved"] == [str(ROOT.resolve())]
