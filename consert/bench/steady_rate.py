"""A training loop's steady rate, from its log: the steps per second once warm and what a run pays once; the
rate of a run exported by ``consert train`` (``consert bench --rate-from``, ``consert train``'s own report)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import NamedTuple

from consert.train.loop import read_interval


class SteadyRate(NamedTuple):
    """A training loop's rate once warm, and what it was measured on."""

    steps_per_s: float
    #: mean seconds of one dev evaluation (NaN when none was timed)
    evaluation_s: float
    evaluations: int
    #: the steps whose durations make the rate
    timed_steps: int
    #: seconds the logged steps took beyond their number at the steady rate: warm-up, compilation, graph captures
    #: (0 where they took no longer)
    one_time_s: float = math.nan
    #: windows of steps after the warm-up left out of the rate because one of their steps captured a CUDA graph
    capture_windows: int = 0
    #: every window after the warm-up captured a graph, so the rate counts captures (a lower bound)
    counts_captures: bool = False


def steady_rate(log: list[dict], skip: int, window: int = 1) -> SteadyRate:
    """The training steps per second and the mean seconds of one dev evaluation, from a loop log.

    Per-step durations come from the steps' timestamps (the last step before each read-back stamped once the device
    has finished it: :func:`~consert.train.loop.run_loop`, every ``window`` steps); the first ``skip`` steps
    (warm-up, compilation), rounded up to a whole window so that none of their device time is timed, are left
    out, and so is every step whose interval contains a dev evaluation, whose cost is reported on its own
    (that interval minus the median step). A window of ``window`` steps in which a step captured a CUDA graph
    (the log's ``captures``) is left out whole: the capture waits for the device to finish the window's queued
    steps, so leaving out the capturing step alone would drop their time; nor is a step after an evaluation in such
    a window counted as evaluation time. Captures happen once a run, each batch shape's at its first sight: they
    are counted, with the warm-up, in ``one_time_s`` (but for one in a step after an evaluation). The first step
    is timed from the loop's start, or from the end of an evaluation before it."""
    skip = -(-skip // window) * window
    steps = [entry for entry in log if "loss" in entry]
    evaluated = {entry["step"] for entry in log if "dev_spearman" in entry}
    durations = {b["step"]: b["seconds"] - a["seconds"] for a, b in zip(steps, steps[1:], strict=False)}
    if steps and steps[0]["step"] == 1:  # from the loop's start, or from the end of an evaluation at the start
        begun = max((entry["seconds"] for entry in log if entry["step"] == 0 and "dev_spearman" in entry), default=0)
        durations = {1: steps[0]["seconds"] - begun, **durations}
        evaluated.discard(0)
    capturing = {(entry["step"] - 1) // window for entry in steps if entry.get("captures")}
    clean = {step for step in durations if (step - 1) // window not in capturing}
    timed = {step: d for step, d in durations.items() if step > max(skip, 1) and step - 1 not in evaluated}
    plain = [d for step, d in timed.items() if step in clean]
    counts_captures = bool(timed) and not plain
    if counts_captures:
        plain = list(timed.values())
    if not plain:
        raise ValueError(f"the run is too short to time: {len(steps)} steps, {skip} skipped as warm-up")
    median = statistics.median(plain)
    evaluations = [
        d - median
        for step, d in durations.items()
        if step - 1 in evaluated and step > max(skip, 1) and step in clean  # a capture there is no evaluation time
    ]
    evaluation = statistics.mean(evaluations) if evaluations else float("nan")
    rate = len(plain) / sum(plain)
    stepping = [d for step, d in durations.items() if step - 1 not in evaluated]
    one_time = max(0.0, sum(stepping) - len(stepping) / rate)  # 0 where the warm-up was no slower than the rest
    excluded = 0 if counts_captures else len({(step - 1) // window for step in timed} & capturing)
    return SteadyRate(rate, evaluation, len(evaluations), len(plain), one_time, excluded, counts_captures)


def exported_run_rate(folder: str | Path) -> tuple[float | None, dict]:
    """The steady steps per second of the run exported to ``folder`` (:func:`steady_rate` of its training log: its
    first quarter, at most 20 steps, left out as warm-up; the loss read back every
    :func:`~consert.train.loop.read_interval` steps of the device its record names), or None for a run too short to
    time; and its training record. A folder without them is a one-line :class:`ValueError`."""
    from consert.train.export import TRAINING_LOG, TRAINING_RECORD

    try:
        record = json.loads((Path(folder) / TRAINING_RECORD).read_text(encoding="utf-8"))
        log = json.loads((Path(folder) / TRAINING_LOG).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"{folder}: no readable training record and log there ({error})") from None
    steps = sum("loss" in entry for entry in log)
    window = read_interval(record.get("device", "cpu"))
    try:
        return steady_rate(log, skip=min(20, steps // 4), window=window).steps_per_s, record
    except ValueError:
        return None, record
