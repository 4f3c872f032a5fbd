"""What the extension tests share: a copy of the project, an edit made the way a contributor makes it, the files
the edit touched, and a command run against the copy's code."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

#: The checkout the tests run from (the copies' original); not tests.conftest's, since the scripts run in a copy import
#: this module without pytest, and conftest sets the test session's environment when imported.
ROOT = Path(__file__).resolve().parents[2]


def replace_once(path: Path, old: str, new: str) -> None:
    """``path`` with the one occurrence of ``old`` replaced by ``new``."""
    source = path.read_text(encoding="utf-8")
    assert source.count(old) == 1, f"{path}: {old!r} occurs {source.count(old)} times"
    path.write_text(source.replace(old, new), encoding="utf-8")


def project_copy(destination: Path) -> Path:
    """The project's files (tracked and untracked, not ignored), copied to ``destination``."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\n")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, destination / name)
    return destination


def touched(original: Path, copy: Path) -> list[str]:
    """The files of ``copy`` that are new or differ from ``original``'s."""
    return sorted(
        str(path.relative_to(copy))
        for path in copy.rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and (
            not (original / path.relative_to(copy)).is_file()
            or (original / path.relative_to(copy)).read_bytes() != path.read_bytes()
        )
    )


def in_copy(copy: Path, *command: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``command`` run in ``cwd`` with the copy's packages first on the path, offline (``env``: the environment to
    start from, the process's own by default)."""
    env = {**(env or os.environ), "PYTHONPATH": str(copy), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def added_in_a_copy(destination: Path, add: Callable[[Path], None]) -> tuple[Path, list[str]]:
    """A copy of the project in ``destination`` with ``add`` applied to it, and the files the addition touched."""
    copy = project_copy(destination)
    add(copy)
    return copy, touched(ROOT, copy)


def copy_snakemake(copy: Path, workdir: Path, *args: str, config: Path | None = None) -> tuple[list[str], dict]:
    """The test config's Snakemake command in ``workdir`` (:func:`tests.workflow.dag.snakemake_command`) with the
    copy's Snakefile and config (``config``: another file in its place), and its environment."""
    from tests.workflow.dag import snakemake_command  # here: the scripts run in a copy import this module alone

    command, env = snakemake_command(workdir, *args)
    command[command.index(str(ROOT / "Snakefile"))] = str(copy / "Snakefile")
    command[command.index(str(ROOT / "config" / "test.yaml"))] = str(config or copy / "config" / "test.yaml")
    return command, env


def on_finished_dag(
    copy: Path, dag_run: tuple[Path, Path], tmp_path: Path, removed: tuple[str, ...] = ()
) -> tuple[Path, subprocess.CompletedProcess]:
    """Snakemake run with the copy's code on a copy of the finished test DAG (``dag_run``'s; the shared one is left
    as it was), each of its ``results/`` files named in ``removed`` deleted first; the copy's folder and the run.
    The copy's checkout lives elsewhere, so the paths among its jobs' inputs differ from the finished DAG's: only the
    files' times decide what reruns. ``removed`` stands for what a checkout's default triggers (changed inputs,
    params) would rerun that times alone do not."""
    workdir, data = dag_run
    finished = tmp_path / "dag"
    shutil.copytree(workdir, finished, symlinks=True)
    for name in removed:
        (finished / "results" / name).unlink()
    command, env = copy_snakemake(copy, finished, "--rerun-triggers", "mtime", "--config", f"data_dir={data}")
    return finished, in_copy(copy, *command, cwd=tmp_path, env=env)


def fabricated_verdicts(rows, published_row, csv: str, artifact: str, row: str, published: Path) -> dict[str, dict]:
    """The primary verdict of ``artifact``'s published ``row`` when the reproduced ``rows`` (a frame, as the toy's
    table holds them) are rewritten as one run on the paper's encoder with the published scores (``inside``) and 3
    points below them (``outside``), each written to ``<name>/results/<csv>`` and compared by the running code's
    blocks. Run inside a copy (its ``consert`` is the copy's)."""
    from consert.encode.models import PAPER_ENCODERS
    from consert.paper.catalogue import COMPARED
    from consert.verdict.compare import compare

    out = {}
    for name, delta in (("inside", 0.0), ("outside", -3.0)):
        fabricated = rows[[column for column in rows.columns if not column.endswith("_std")]].copy()
        for column in ("STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R", "Avg"):
            fabricated[column] = float(published_row[column]) + delta
        fabricated = fabricated.assign(
            n_seeds=1,
            seeds="1",
            setting="paper setting (model as named)",
            model="bert-base-uncased",
            nli="",
            base_model="bert-base-uncased",
            base_weights=PAPER_ENCODERS["base"],
            base_weights_evidence="a fabricated row of the test",
            data_verified=True,
        )
        folder = Path(name) / "results"
        folder.mkdir(parents=True)
        fabricated.to_csv(folder / csv, index=False)
        judged = compare(COMPARED, folder, published)
        cell = judged[(judged.artifact == artifact) & (judged.row == row) & (judged.role == "primary")].iloc[0]
        out[name] = {"verdict": cell.verdict, "sigma_source": cell.sigma_source, "margin": float(cell.margin),
                     "aggregate": cell["aggregate"]}  # fmt: skip
    return out
