"""Figures readable at a glance: no text drawn over another text (titles, tick labels, legends,
annotations), on the paper's own sweep values and on a comparison with a far outlier. The workflow's
figures are checked the same way on the test DAG's outputs (tests/workflow/test_workflow.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from consert.paper import figures
from consert.paper.marks import PublishedMarks
from tests.paper.text_extents import overlapping_texts

ROOT = Path(__file__).resolve().parents[2]
SETTING = "test (offline stand-in)"


def test_figure7_on_the_papers_ten_temperatures_has_no_label_over_another(tmp_path):
    """The paper's config sweeps 0.01 ... 1.0, with 0.08, 0.1, 0.12 and 0.15 a few hundredths of a decade
    apart: a log axis's default labels (and its minor ones) overlapped there."""
    temperatures = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["sweeps"]["temperatures"]
    assert len(temperatures) == 10
    table = pd.DataFrame(
        {"temperature": temperatures, "Avg": np.linspace(60, 70, len(temperatures)), "setting": SETTING}
    )
    figure = figures.figure7(table, [tmp_path / "f7.png"], PublishedMarks.load(ROOT / "results" / "published"))
    assert overlapping_texts(figure) == []
    labels = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert labels == [f"{t:g}" for t in temperatures]  # every value labelled, and only these


def _cell(row: str, delta: float, margin: float = 1.0, panel: str = "Avg") -> dict:
    return {"artifact": "table2", "row": row, "column": panel, "status": "compared",
            "role": "primary" if panel == "Avg" else "diagnostic", "delta": delta, "diff_low": delta - 0.5,
            "diff_high": delta + 0.5, "margin": margin, "verdict": "reproduced" if abs(delta) < 0.5 else
            "not reproduced", "comparable": True, "setting": SETTING}  # fmt: skip


def test_the_forest_plot_is_scaled_by_the_margins_and_marks_an_outlier_at_its_edge(tmp_path):
    """A 53-point outlier once set the scale, hiding every +-1 band: the axis now spans 4 margins each way and
    the outlier is an arrow at the edge with its value written beside it."""
    comparison = pd.DataFrame([_cell("near", 0.3), _cell("off", -1.8), _cell("outlier", 53.2),
                               _cell("near", 0.1, panel="STS12"), _cell("outlier", 40.0, panel="STS12")])  # fmt: skip
    figure = figures.comparison_forest(comparison, [tmp_path / "forest.png"])
    primary, sts12 = figure.axes[:2]
    assert primary.get_xlim() == pytest.approx((-4.6, 4.6)) and sts12.get_xlim() == pytest.approx((-4.6, 4.6))
    arrows = [line for line in primary.lines if line.get_gid() == "outlier"]
    assert len(arrows) == 1 and arrows[0].get_xdata()[0] == pytest.approx(4.0)
    assert [t.get_text() for t in primary.texts if t.get_gid() == "outlier"] == ["+53.2"]
    (point,) = [line for line in primary.lines if line.get_marker() == "o" and line.get_ydata()[0] == 1]  # "off"
    assert point.get_xdata()[0] == pytest.approx(-1.8)
    assert overlapping_texts(figure) == []


def test_the_training_curves_are_a_grid_of_readable_panels(tmp_path):
    """Eight groups of runs (the paper's config) once made one row 32 inches wide: now 3 groups a row."""
    rows = [{"group": f"group {g}", "run": f"run-{g}-{r}", "step": step, "loss": 1.0 / step,
             "dev_spearman": 60 + step if step % 2 == 0 else np.nan, "selected": step == 8, "setting": SETTING}
            for g in range(8) for r in range(3) for step in range(1, 9)]  # fmt: skip
    figure = figures.training_curves(pd.DataFrame(rows), [tmp_path / "curves.png"])
    assert figure.get_figwidth() <= 15 and len([a for a in figure.axes if a.get_visible()]) == 16
    assert overlapping_texts(figure) == []
