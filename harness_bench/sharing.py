"""``python -m harness_bench share --config FILE KIND ...``: whether small jobs run together raise a card's throughput.

A job kind of the config (as :mod:`consert.bench.dag_cost` groups them) is run as whole jobs: ``copies``
processes started together, each training ``steps`` steps of the kind from its own start (imports, the
model, the precision choice, graph captures: what a job of the DAG does besides its evaluation; the step
executed as the kind's full run executes it), and the wall
time until the last one ends is measured, for each number of copies, in one run. Two ratios, above 1 when
``n`` such jobs at once get more done per second than one at a time (the card idles between one job's
kernels; a declared GPU share for the kind pays), at or below 1 when they only wait for each other:

- ``ratio``, ``n x wall(1) / wall(n)``: whole jobs, their starts included (imports and captures overlap on a
  many-core host, so short timing runs favour sharing);
- ``steady_ratio``, the sum of the ``n`` jobs' steady steps/s over one job's: the training steps alone, each
  job's rate after a third of its steps (the jobs start together, so their steady windows overlap when the
  steps are many against the start's spread).
"""

from __future__ import annotations

import fnmatch
import multiprocessing
import time
from collections.abc import Sequence
from typing import Any

import pandas as pd


def matching_kinds(kinds: dict[str, Any], patterns: Sequence[str]) -> dict[str, Any]:
    """The kinds whose names match one of the glob ``patterns``; a pattern that matches none is an error that
    lists the kinds."""
    chosen = {}
    for pattern in patterns:
        found = {kind: config for kind, config in kinds.items() if fnmatch.fnmatchcase(kind, pattern)}
        if not found:
            raise ValueError(f"{pattern!r} matches no job kind of the config; its kinds: {', '.join(kinds)}")
        chosen.update(found)
    return chosen


def _job(kind: str, config, model: str, data_root: str, steps: int, device: str, run_steps: int, rates) -> None:
    """One job of the kind, in a process of its own: its data read, ``steps`` steps trained, executed as a run
    of ``run_steps`` steps is (CUDA graphs or compilation where its full run takes them); its steady steps/s
    put on the ``rates`` queue."""
    from consert.bench.dag_cost import measure_kind
    from consert.data.senteval import load_senteval

    rates.put(measure_kind(kind, config, model, load_senteval(data_root), steps, device, run_steps).steps_per_s)


def run_jobs_together(
    kind: str, config, model: str, data_root: str, steps: int, device: str, run_steps: int, copies: int
) -> tuple[float, list[float]]:
    """Seconds from starting ``copies`` jobs of ``kind`` together until the last one ends, and each job's
    steady steps/s."""
    context = multiprocessing.get_context("spawn")  # a fresh process each, as a job of the DAG
    rates = context.Queue()
    arguments = (kind, config, model, data_root, steps, device, run_steps, rates)
    processes = [context.Process(target=_job, args=arguments) for _ in range(copies)]
    started = time.perf_counter()
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    seconds = time.perf_counter() - started
    failed = [process.exitcode for process in processes if process.exitcode != 0]
    if failed:
        raise RuntimeError(f"{kind}: {len(failed)} of {copies} jobs run together failed (exit codes {failed})")
    return seconds, [rates.get(timeout=10) for _ in processes]


def sharing_table(
    kinds: dict[str, Any],
    models: dict[str, str],
    data_root: str,
    steps: int,
    device: str,
    run_steps: dict[str, int],
    copies: Sequence[int] = (1, 2, 3),
) -> pd.DataFrame:
    """Per kind and number of copies: the wall seconds, the summed steady steps/s, and both throughput ratios
    against one job at a time. ``run_steps``: each kind's planned run length
    (:func:`consert.bench.dag_cost.kind_run_steps`)."""
    rows = []
    for kind, config in kinds.items():
        walls, rates = {}, {}
        model = models[kind.split()[0]]
        for count in sorted(set(copies) | {1}):
            walls[count], each = run_jobs_together(
                kind, config, model, data_root, steps, device, run_steps[kind], count
            )
            rates[count] = sum(each)
            ratio, steady_ratio = count * walls[1] / walls[count], rates[count] / rates[1]
            rows.append(
                {
                    "kind": kind,
                    "copies": count,
                    "steps_each": steps,
                    "wall_s": walls[count],
                    "ratio": ratio,
                    "steady_steps_per_s": rates[count],
                    "steady_ratio": steady_ratio,
                }
            )
            print(
                f"  {kind}: {count} at once in {walls[count]:.1f} s, throughput x{ratio:.2f}; "
                f"steady {rates[count]:.1f} steps/s in all, x{steady_ratio:.2f}",
                flush=True,
            )
    return pd.DataFrame(rows)
