"""A training run's curve: loss, learning rate and dev Spearman per step, kept outside the model folder.

The loop's log (:class:`consert.train.loop.LoopResult`) has one entry per optimiser step (``loss``,
``lr``) and one per dev evaluation (``dev_spearman``). The curve is that log as one tidy table, one row
per step, with the checkpoint the run exported marked (``selected``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

#: Columns of a curve file, in order.
CURVE_COLUMNS = ("step", "loss", "lr", "dev_spearman", "seconds", "selected")


def training_curve(log: Sequence[dict], exported_step: int) -> pd.DataFrame:
    """One row per step of ``log`` (a loop's log): the step's loss and learning rate, its dev Spearman
    where one was computed (the last, if a step was evaluated more than once), the seconds since the
    start, and ``selected`` on the step whose state was exported."""
    frame = pd.DataFrame(list(log), columns=["step", "loss", "lr", "dev_spearman", "seconds"])
    if frame.empty:
        return pd.DataFrame(columns=list(CURVE_COLUMNS))
    curve = frame.groupby("step", sort=True).agg(
        loss=("loss", "last"), lr=("lr", "last"), dev_spearman=("dev_spearman", "last"), seconds=("seconds", "max")
    )
    curve = curve.reset_index()
    curve["selected"] = curve.step == exported_step
    return curve[list(CURVE_COLUMNS)]


def write_curve(model_dir: str | Path, path: str | Path) -> Path:
    """Write the curve of the model exported to ``model_dir`` (its training log and record) to ``path``,
    with the run's ``setting`` (paper, rehearsal or stand-in), the ``hardware`` and ``harness_commit`` it
    trained on, and the ``timestamp`` of this writing (the end of its training job) on every row."""
    from consert.io import write_csv
    from consert.provenance import utc_timestamp
    from consert.train.export import TRAINING_LOG, TRAINING_RECORD

    folder = Path(model_dir)
    log = json.loads((folder / TRAINING_LOG).read_text())
    record = json.loads((folder / TRAINING_RECORD).read_text())
    exported = record.get("exported_step", record["best_step"])
    made = {key: record.get(key, "") for key in ("setting", "hardware", "harness_commit")}
    return write_csv(training_curve(log, exported).assign(**made, timestamp=utc_timestamp()), path)
