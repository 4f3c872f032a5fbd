"""What every shipped config plans, written to a folder so that two commits can be compared file by file.

    python scripts/snapshot_plans.py OUT_DIR [--config NAME ...]
    python scripts/compare_results.py BEFORE_DIR/NAME AFTER_DIR/NAME

For each config of ``config/`` (or each ``--config NAME``), ``OUT_DIR/NAME`` is a workflow working directory in
which Snakemake built only what the config plans, not what it trains: every training run's resolved config
(``runs/RUN/train.yaml``), the recipe card (``results/recipe.csv``), the resolved settings files (encoding,
BERT-flow, the comparison and its design's seeds, the workflow config itself) and ``plan.txt``, every job of the
DAG as its dry run prints it in an empty folder (rule, inputs, outputs, log, benchmark, wildcards, priority,
resources and shell command; not its job id, reason or time), sorted, with the folder and the checkout written
``WORKDIR`` and ``CHECKOUT``. A refactor that
changes none of these plans the same runs with the same settings. Needs the STS data (``$CONSERT_DATA`` or
``--data``) and nothing from the network: a hub model is named, never fetched, by these jobs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The files each snapshot builds besides the run configs the recipe card reads.
TARGETS = (
    "results/recipe.csv",
    "results/encoding_config.yaml",
    "results/flow_config.yaml",
    "results/comparison_config.yaml",
    "results/workflow_config.yaml",
)
#: The configs layered over another (``--configfile BASE LAYER``), by stem: the rest stand alone.
LAYERED_OVER = {"rehearsal": "config"}
#: The fields of a dry run's job that say what it does (not its job id, why it runs, or when the run was made).
PLAN_FIELDS = ("input", "output", "log", "benchmark", "wildcards", "priority", "resources", "Shell command")


def config_files(config: Path) -> list[str]:
    """The ``--configfile`` files of a shipped config: itself, after the config it is layered over."""
    base = LAYERED_OVER.get(config.stem)
    return [str(config.with_name(f"{base}.yaml")), str(config)] if base else [str(config)]


def snakemake(config: Path, workdir: Path, data: str, *arguments: str) -> str:
    """Run Snakemake on ``config`` in ``workdir`` (its data folder ``data``); its stdout, or exit with its error.
    ``--config`` goes last: it takes every word after it, as ``--quiet`` does."""
    snakemake = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile")]
    command = [*snakemake, "--configfile", *config_files(config), "--directory", str(workdir), *arguments]
    command += ["--config", f"data_dir={data}"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"snapshot of {config.name}: snakemake failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def plan_text(dry_run: str, workdir: Path) -> str:
    """A dry run's jobs (``--printshellcmds``), each as its rule and :data:`PLAN_FIELDS`, sorted."""
    jobs, job = [], None
    for line in dry_run.splitlines():
        if line.startswith(("rule ", "localrule ")) and line.endswith(":"):
            job = [line.split()[1].rstrip(":")]
            jobs.append(job)
        elif job is not None and line.strip().split(":")[0] in PLAN_FIELDS:
            job.append(line.strip())
        elif not line.strip():
            job = None
    text = "\n\n".join(sorted("\n".join(lines) for lines in jobs)) + "\n"
    return text.replace(str(workdir.resolve()), "WORKDIR").replace(str(ROOT), "CHECKOUT")


def snapshot(config: Path, out: Path, data: str) -> Path:
    """Write ``config``'s plan, run configs, recipe card and settings files under ``out/<config's stem>``."""
    workdir = out / config.stem
    workdir.mkdir(parents=True, exist_ok=False)
    dry_run = snakemake(config, workdir, data, "--dry-run", "--printshellcmds")
    snakemake(config, workdir, data, *TARGETS, "--cores", "1", "--quiet", "all")
    (workdir / "plan.txt").write_text(plan_text(dry_run, workdir))
    for folder in (".snakemake", "logs"):  # Snakemake's own state and the jobs' logs: not the plan
        shutil.rmtree(workdir / folder, ignore_errors=True)
    return workdir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="a folder that does not exist yet")
    parser.add_argument(
        "--config",
        action="append",
        default=None,
        metavar="NAME",
        help="a config of config/ by its stem (test, offline, rehearsal, config); default: all",
    )
    parser.add_argument("--data", default=os.environ.get("CONSERT_DATA"), help="the STS data (default $CONSERT_DATA)")
    args = parser.parse_args(argv)
    if not args.data:
        parser.error("--data: not given and $CONSERT_DATA is not set; expected the SentEval data folder")
    if args.out.exists():
        parser.error(f"{args.out}: exists; expected a new folder (a snapshot is never written over another)")
    configs = sorted((ROOT / "config").glob("*.yaml"))
    if args.config:
        unknown = sorted(set(args.config) - {path.stem for path in configs})
        if unknown:
            parser.error(f"--config {' '.join(unknown)}: not in config/ ({', '.join(p.stem for p in configs)})")
        configs = [path for path in configs if path.stem in args.config]
    for config in configs:
        print(f"{config.name}: {snapshot(config, args.out, str(Path(args.data).resolve()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
