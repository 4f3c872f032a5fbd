"""What each artifact cost: the wall time, CPU time and peak memory of every job under it, from
Snakemake's benchmark files, with the hardware the jobs ran on (named by their evaluation CSVs). Under the job
server (``job_server: true``) a benchmark measures the job's launcher, not the process that computed: the CPU time
and peak memory are left empty, the wall time kept.

A job that several artifacts need (BERT's corpus encoding, the Table 2 run Figures 1 and 4 show) is
counted in each of them; the ``all`` row counts every job once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from consert.paper import artifacts, catalogue
from consert.planner import paths
from consert.planner.plan import flow_nli_run, plan_runs

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig

COST_COLUMNS = ("artifact", "jobs", "wall_s", "cpu_s", "peak_rss_mb", "hardware", "missing_benchmarks")


def _upstream(evaluation: str, config: WorkflowConfig) -> list[str]:
    """The evaluation files whose jobs ``evaluation``'s job needs first (a first NLI stage, BERT-flow's NLI
    run, the figure model's run), ``evaluation`` itself included, and the corpus encodings as ``encode``."""
    path = Path(evaluation)
    found = [evaluation]
    runs = {spec.run_id: spec for p in plan_runs(config) for spec in (p.spec, p.spec.stage1) if spec is not None}
    if path.parent.name == "consert" and path.stem in runs and runs[path.stem].stage1 is not None:
        found += _upstream(paths.consert_eval(runs[path.stem].stage1.run_id), config)
    if path.parent.parent.name == "baselines" and path.stem != "glove":
        size = path.parent.name
        found.append(str(paths.BENCHMARKS / "baselines" / size / "encode.tsv"))
        if path.stem.startswith("flow-nli-seed"):
            run = flow_nli_run(config, size, int(path.stem.removeprefix("flow-nli-seed"))).run_id
            found += _upstream(paths.consert_eval(run), config)
    if path.parent.name in ("topk", "predictions"):
        size, _, which = path.stem.rpartition("-")
        if which == "bert":
            found.append(str(paths.BENCHMARKS / "baselines" / size / "encode.tsv"))
        else:
            found += _upstream(paths.consert_eval(artifacts.table2_consert_run(config, size)), config)
    return found


def artifact_jobs(artifact: str, config: WorkflowConfig) -> dict[str, str]:
    """``{benchmark file: evaluation file or ''}`` of every job ``artifact`` needs."""
    jobs: dict[str, str] = {}
    for evaluation in catalogue.inputs(artifact, config):
        for path in _upstream(evaluation, config):
            if path.endswith(".tsv"):
                jobs.setdefault(path, "")
            else:
                jobs.setdefault(paths.benchmark(path), path)
    return jobs


def _job_cost(jobs: dict[str, str], root: Path, launcher_measured: bool = False) -> dict[str, Any]:
    found = [root / path for path in jobs if (root / path).is_file()]
    bench = pd.concat([pd.read_csv(p, sep="\t") for p in found], ignore_index=True) if found else pd.DataFrame()
    hardware: set[str] = set()
    for evaluation in jobs.values():
        if evaluation and (root / evaluation).is_file():
            frame = pd.read_csv(root / evaluation, usecols=lambda c: c in ("hardware", "device"))
            hardware |= {str(h) for h in frame.get("hardware", frame.get("device", pd.Series(dtype=str))).dropna()}
    measured = len(bench) and not launcher_measured
    return {
        "jobs": len(jobs),
        "wall_s": round(float(bench["s"].sum()), 1) if len(bench) else float("nan"),
        "cpu_s": round(float(pd.to_numeric(bench["cpu_time"], errors="coerce").sum()), 1) if measured else float("nan"),
        "peak_rss_mb": round(float(pd.to_numeric(bench["max_rss"], errors="coerce").max()), 1)
        if measured
        else float("nan"),
        "hardware": " | ".join(sorted(hardware)),
        "missing_benchmarks": len(jobs) - len(found),
    }


def cost_table(config: WorkflowConfig, root: str | Path = ".") -> pd.DataFrame:
    """One row per costed artifact of ``config`` (:attr:`consert.registry.Artifact.costed`, named by file stem)
    and an ``all`` row (each job once)."""
    root = Path(root)
    costed = [artifact for artifact in catalogue.ARTIFACTS if artifact.costed and artifact.runs_in(config)]
    rows, every = [], {}
    for artifact in costed:
        jobs = artifact_jobs(artifact.key, config)
        every.update(jobs)
        rows.append({"artifact": artifact.stem, **_job_cost(jobs, root, config.job_server)})
    rows.append({"artifact": "all", **_job_cost(every, root, config.job_server)})
    return pd.DataFrame(rows, columns=list(COST_COLUMNS))
