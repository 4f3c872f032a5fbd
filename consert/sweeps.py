"""The sweeps, each declared once: the artifact it fills, the config's list of its values and their default, the
training key each value sets, and how a run of it is named.

The planner plans every axis from its record (:func:`consert.planner.plan.plan_runs`), the config's ``sweeps:``
block takes one list per axis under the record's ``key`` (:class:`consert.planner.keys.SweepKeys`, with the record's
default where a config lists none), and the catalogue gives an axis without a record of its own a table of its
runs, drawn as a curve over its values when it is a figure (:mod:`consert.paper.catalogue`). Adding a sweep that
needs new runs takes this file alone when it sets a training key that exists (the config's schema is then
regenerated: ``python scripts/config_keys.py``); ``tests/workflow/test_new_sweep.py`` adds one that way.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from consert.configs import AtLeastOne, Temperature
from consert.registry import FAMILY, FIGURE5, FIGURE6, FIGURE7, TABLE2, TABLE3, TABLE4, Artifact

#: Figure 5's augmentations, by the names the training config takes, with the paper's labels of them.
AUGMENTATION_LABELS = {
    "none": "None",
    "shuffle": "Shuffle",
    "token_cutoff": "Token Cutoff",
    "feature_cutoff": "Feature Cutoff",
    "dropout": "Dropout",
}
#: One augmentation of Figure 5.
Augmentation = Literal[tuple(AUGMENTATION_LABELS)]


@dataclass(frozen=True)
class SweepAxis:
    """One sweep: each value of the config's list ``sweeps.<key>`` is a training run (per mode and model size of
    ``sweeps.sizes``) that differs from the unsupervised run in the training key ``field`` alone.

    A value's row of the artifact is labelled by its size, its mode where the artifact has a ``mode`` column, and
    the value under the artifact's last label column (``unset`` where the value is null: the mode's own).
    """

    declared: Artifact  # the table or figure its runs fill
    key: str  # its list under the config's ``sweeps:`` ("temperatures")
    field: str  # the training config key (``consert train --list-keys``) each value sets ("temperature")
    value_type: Any  # what one value of the list is (a pydantic type: checked when the config is read)
    default: tuple[Any, ...]  # its values where a config lists none
    description: str  # the config key's help
    tag: str  # its part of a run's id, a format of the value ("tau{:g}": base-unsup-tau0.05-seed1)
    setting: str  # a run's name in the diagnostics table, a format of its row's labels ("tau={temperature:g}")
    modes: tuple[str, ...] = ("unsup",)  # the training modes each value runs in
    unset: str = "default"  # the label of a null value (the mode's own: Figure 6's "all" texts)
    pairs: bool = False  # every ordered pair of the values is a run (Figure 5's views; ``sweeps.heatmap``)
    point: str = ""  # what one run is, where the recipe card says why a key differs from the authors' ("Figure 5
    # augmentation pair (a sweep point)"); by default its artifact's title without the colon

    @property
    def column(self) -> str:
        """The label column that holds a row's value (for pairs: the views trained, ``trained_as``)."""
        return self.declared.label_columns[-1]

    def __post_init__(self) -> None:
        if not self.point:  # "Table 4: batch size" -> "Table 4 batch size"
            object.__setattr__(self, "point", self.declared.title.replace(": ", " "))

    @property
    def panel(self) -> str:
        """Its panel of the training curves: its artifact's title before the colon ("Figure 7")."""
        return self.declared.title.partition(":")[0]

    def override(self, value: Any) -> tuple[tuple[str, Any], ...]:
        """A run's overrides for ``value``: ``((field, value),)``, none for a null value (the mode's own)."""
        return () if value is None else ((self.field, value),)

    def points(self, values: Sequence[Any], heatmap: str = "ordered") -> Iterator[tuple[str, dict[str, Any], Any]]:
        """``(mode, labels, value)`` of each run of ``values``: each value in each mode, or each pair's cell."""
        if self.pairs:
            for first, second, views in heatmap_cells(list(values), heatmap):
                yield "unsup", {"view1": first, "view2": second, "trained_as": "+".join(views)}, views
            return
        for value in values:
            for mode in self.modes:
                labels = {"mode": mode} if "mode" in self.declared.label_columns else {}
                yield mode, {**labels, self.column: self.unset if value is None else value}, value


def heatmap_cells(augmentations: list[str], mode: str = "ordered") -> list[tuple[str, str, tuple[str, str]]]:
    """Figure 5's cells as ``(view1, view2, views trained)``.

    ``ordered`` trains every ordered pair (the paper's 5 x 5). ``unordered`` trains each pair once,
    (A, B) with A first in ``augmentations``, and shows that run in the (B, A) cell as well: NT-Xent
    treats its two views alike, so the two cells differ only by the random draw. It is the offline
    config's way to a full matrix with fewer runs; ``trained_as`` tells the cells apart.
    """
    if mode not in ("ordered", "unordered"):
        raise ValueError(f"sweeps.heatmap: expected 'ordered' or 'unordered', got {mode!r}")
    cells = []
    for i, first in enumerate(augmentations):
        for j, second in enumerate(augmentations):
            mirrored = mode == "unordered" and j < i
            cells.append((first, second, (second, first) if mirrored else (first, second)))
    return cells


#: Every sweep, in the order its runs are planned (the paper's values are each record's default).
AXES: tuple[SweepAxis, ...] = (
    SweepAxis(
        TABLE4,
        "batch_sizes",
        "batch_size",
        AtLeastOne,
        (16, 48, 96, 192, 288),
        "Table 4's batch sizes.",
        "bs{}",
        "batch {batch_size}",
    ),
    SweepAxis(
        FIGURE5,
        "augmentations",
        "views",
        Augmentation,
        tuple(AUGMENTATION_LABELS),
        "Figure 5's augmentations; every pair of them is a cell.",
        "{0[0]}+{0[1]}",
        "{view1}+{view2}",
        pairs=True,
        point="Figure 5 augmentation pair",
    ),
    SweepAxis(
        FIGURE6,
        "few_shot",
        "n_texts",
        AtLeastOne | None,
        (1, 10, 100, 1000, 10000, None),
        "Numbers of unlabeled texts; null = all.",
        "n{}",
        "{mode} n={n_texts}",
        modes=("unsup", "joint-unsup"),
        unset="all",
        point="Figure 6 few-shot size",
    ),
    SweepAxis(
        FIGURE7,
        "temperatures",
        "temperature",
        Temperature,
        (0.01, 0.03, 0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.5, 1.0),
        "Figure 7's temperatures.",
        "tau{:g}",
        "tau={temperature:g}",
    ),
)
#: Each axis by its artifact's key, and by the training key it sets (a run's overrides name it).
BY_ARTIFACT = {axis.declared.key: axis for axis in AXES}
BY_FIELD = {axis.field: axis for axis in AXES}
#: The artifacts whose rows are the sweeps' runs.
SWEEPS = tuple(axis.declared for axis in AXES)
#: The artifacts whose rows carry a seed spread: the score tables and every sweep.
SCORED = tuple(dict.fromkeys((TABLE2, TABLE3, TABLE4, FAMILY, *SWEEPS)))


def _check(axes: Sequence[SweepAxis]) -> None:
    """Each axis sets its own training key and names its own config list: two would plan one run under two names."""
    for facet in ("field", "key"):
        seen = [getattr(axis, facet) for axis in axes]
        repeated = sorted({name for name in seen if seen.count(name) > 1})
        if repeated:
            raise ValueError(f"sweep axes: {facet} {', '.join(repeated)} declared twice")
    for axis in axes:
        if axis.declared.label_columns[:1] != ("size",) or axis.column in ("size", "mode"):
            raise ValueError(f"sweep {axis.declared.key}: its label columns start with 'size' and end with its value")


_check(AXES)
