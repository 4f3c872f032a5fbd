"""Training curves (consert.train.curves): the loop's log as one row per step, the exported step marked."""

from __future__ import annotations

import json
import math

import pandas as pd

from consert.train.curves import CURVE_COLUMNS, training_curve, write_curve
from consert.train.export import TRAINING_LOG, TRAINING_RECORD

LOG = [
    {"step": 0, "dev_spearman": 50.0, "seconds": 0.5},
    {"step": 1, "loss": 2.0, "lr": 1e-5, "seconds": 1.0},
    {"step": 2, "loss": 1.5, "lr": 2e-5, "seconds": 2.0},
    {"step": 2, "dev_spearman": 61.0, "seconds": 2.5},
    {"step": 3, "loss": 1.25, "lr": 1e-5, "seconds": 3.0},
    {"step": 4, "loss": 1.0, "lr": 0.0, "seconds": 4.0},
    {"step": 4, "dev_spearman": 58.0, "seconds": 4.5},
]


def test_a_curve_has_one_row_per_step_with_dev_scores_where_evaluated():
    curve = training_curve(LOG, exported_step=2)
    assert list(curve.columns) == list(CURVE_COLUMNS)
    assert curve.step.tolist() == [0, 1, 2, 3, 4]
    assert curve.loss.tolist()[1:] == [2.0, 1.5, 1.25, 1.0] and math.isnan(curve.loss[0])
    assert curve.dev_spearman.dropna().tolist() == [50.0, 61.0, 58.0]
    assert curve.set_index("step").dev_spearman.dropna().index.tolist() == [0, 2, 4]
    assert curve.selected.tolist() == [False, False, True, False, False]
    assert curve.seconds.tolist() == [0.5, 1.0, 2.5, 3.0, 4.5]  # a step's last record


def test_write_curve_reads_the_export_and_marks_its_exported_step(tmp_path):
    (tmp_path / TRAINING_LOG).write_text(json.dumps(LOG))
    record = {"best_step": 2, "exported_step": 4, "setting": "stand-in", "hardware": "A CPU; 2 threads",
              "harness_commit": "c0ffee"}  # fmt: skip
    (tmp_path / TRAINING_RECORD).write_text(json.dumps(record))
    curve = pd.read_csv(write_curve(tmp_path, tmp_path / "curves" / "run.csv"))
    assert curve[curve.selected].step.tolist() == [4]  # final_state "last": the exported state, not the best
    assert set(curve.setting) == {"stand-in"}
    # where the run trained (its seconds were timed there) and when the curve was written: a figure's stamp
    assert set(curve.hardware) == {"A CPU; 2 threads"} and set(curve.harness_commit) == {"c0ffee"}
    assert curve.timestamp.nunique() == 1 and curve.timestamp[0].endswith("+00:00")
