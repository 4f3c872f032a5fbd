"""The paper's figures drawn from the artifact tables (seaborn/matplotlib), saved as PNG and PDF.

Every title names the setting, so a figure made with the offline stand-in says so on its face; below it, the
stamp the workflow passes (:mod:`consert.paper.stamp`) names when, on which hardware and by which commit its
numbers were computed, and when it was drawn (also in the PNG's ``Description`` and the PDF's ``Subject``). Each
function returns the (closed) figure, whose artists hold the plotted data (tests read them back).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from consert.data.senteval import DATASETS, FIGURE_TASK  # noqa: E402
from consert.io import atomic_path  # noqa: E402
from consert.paper.marks import PublishedMarks
from consert.paper.tables import heatmap_matrix
from consert.row_labels import YOURS
from consert.sweeps import AUGMENTATION_LABELS

#: Inches between a figure's lowest text and its stamp.
STAMP_GAP = 0.08


def _setting_line(table: pd.DataFrame) -> str:
    settings = sorted({str(s) for s in table.get("setting", pd.Series(dtype=str)).dropna() if str(s)})
    return "; ".join(settings) if settings else "setting unknown"


def _save(figure: plt.Figure, paths: Sequence[str | Path], stamp: str = "") -> None:
    """Save ``figure`` to each of ``paths`` (the format by suffix) and close it; a ``stamp``
    (:func:`consert.paper.stamp.figure_stamp`) is drawn below everything else and kept in the file's metadata."""
    if stamp:
        figure.draw_without_rendering()  # lay the figure out, so that its extent is final
        box = figure.get_tightbbox()  # inches
        below = (box.y0 - STAMP_GAP) / figure.get_figheight()
        figure.text(box.x0 / figure.get_figwidth(), below, stamp, ha="left", va="top", fontsize=6, color="0.35",
                    gid="stamp")  # fmt: skip
    for path in paths:
        kind = Path(path).suffix.lstrip(".")
        metadata = {"png": {"Description": stamp}, "pdf": {"Subject": stamp}}.get(kind) if stamp else None
        with atomic_path(path) as temporary:
            figure.savefig(temporary, format=kind, bbox_inches="tight", dpi=150, metadata=metadata)
    plt.close(figure)


#: How published marks look, and the legend entry that says they are published.
PUBLISHED_STYLE = {"color": "black", "marker": "X", "markersize": 8, "linestyle": "none"}


def _seed_band(axis: plt.Axes, table: pd.DataFrame, x: str, colour: str | None = None) -> None:
    """Shade the seeds' interval of the mean Avg (``Avg_seed_ci_low``/``_high``) where several seeds ran."""
    if "Avg_seed_ci_low" not in table or "n_seeds" not in table:
        return
    several = table[(table.n_seeds > 1) & table.Avg_seed_ci_low.notna()].sort_values(x)
    if len(several):
        axis.fill_between(several[x], several.Avg_seed_ci_low, several.Avg_seed_ci_high, alpha=0.2,
                          color=colour, linewidth=0, label="interval over seeds", gid="seed band")  # fmt: skip


#: Tick labels of a log axis closer than this (inches) are turned upright, so that none overlaps another.
LABEL_INCHES = 0.4


def _log_ticks(axis: plt.Axes, ticks: Sequence[float], labels: Sequence[str] | None = None) -> None:
    """A log x axis labelled at the plotted values only (no minor labels), the labels turned upright where
    two values sit closer than :data:`LABEL_INCHES`."""
    axis.set_xscale("log")
    axis.set_xticks(ticks, labels if labels is not None else [f"{t:g}" for t in ticks])
    axis.minorticks_off()
    if len(ticks) > 1:
        inches = axis.get_position().width * axis.figure.get_figwidth() / np.log10(max(ticks) / min(ticks))
        if np.diff(np.log10(ticks)).min() * inches < LABEL_INCHES:
            axis.tick_params(axis="x", labelrotation=90)


def figure1(
    table: pd.DataFrame, paths: Sequence[str | Path], marks: PublishedMarks | None = None, *, stamp: str = ""
) -> plt.Figure:
    """Gold score vs predicted cosine on STS-B test, one panel per model."""
    models = list(dict.fromkeys(table.model))
    figure, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 4.2), sharey=True, squeeze=False)
    for axis, model in zip(axes[0], models, strict=True):
        part = table[table.model == model]
        sns.scatterplot(data=part, x="gold", y="cosine", s=6, alpha=0.4, linewidth=0, ax=axis)
        axis.set(title=model, xlabel="gold similarity (STS-B test)", ylabel="cosine similarity")
    figure.suptitle(f"Figure 1: gold vs cosine\n{_setting_line(table)}", fontsize=9, y=1.04)
    _save(figure, paths, stamp)
    return figure


def _finish(
    figure: plt.Figure,
    axis: plt.Axes,
    table: pd.DataFrame,
    paths: Sequence[str | Path],
    stamp: str,
    *,
    xlabel: str,
    title: str,
) -> plt.Figure:
    """A figure finished: a curve of the average Spearman's axis labels (where ``xlabel`` names its x), its title
    over the table's setting; saved."""
    if xlabel:
        axis.set(xlabel=xlabel, ylabel="avg Spearman x 100")
    axis.set_title(f"{title}\n{_setting_line(table)}", fontsize=9)
    _save(figure, paths, stamp)
    return figure


def figure4(
    table: pd.DataFrame, paths: Sequence[str | Path], marks: PublishedMarks | None = None, *, stamp: str = ""
) -> plt.Figure:
    """Average Spearman vs number of most frequent tokens removed from the average; the paper's stated
    BERT-base points (nothing removed; its best k) as published marks."""
    figure, axis = plt.subplots(figsize=(6, 4))
    sns.lineplot(data=table, x="k", y="Avg", hue="model", marker="o", markersize=3, ax=axis)
    for index, mark in enumerate(marks.figure4 if marks else ()):
        label = "published (BERT-base, the paper's text)" if index == 0 else None
        axis.plot([mark.x], [mark.y], **PUBLISHED_STYLE, label=label, gid=f"published:{mark.quantity}")
    axis.legend(fontsize=7)
    xlabel = "k most frequent tokens removed (STS-B test frequencies; the authors' script's k is this - 1)"
    return _finish(figure, axis, table, paths, stamp, xlabel=xlabel, title="Figure 4: top-k frequency masking")


def figure5(
    table: pd.DataFrame, paths: Sequence[str | Path], marks: PublishedMarks | None = None, *, stamp: str = ""
) -> plt.Figure:
    """5 x 5 heatmap of average Spearman: row = first view's augmentation, column = second's; the
    paper's None-None and best cells outlined, with their published values."""
    order = [a for a in AUGMENTATION_LABELS if a in set(table.view1) | set(table.view2)]
    matrix = heatmap_matrix(table, order).rename(index=AUGMENTATION_LABELS, columns=AUGMENTATION_LABELS)
    figure, axis = plt.subplots(figsize=(6.5, 5))
    low, high = float(np.nanmin(matrix.to_numpy())), float(np.nanmax(matrix.to_numpy()))
    # the colours stretch over these cells' own range: the label says how narrow it is
    label = f"avg Spearman x 100: colours span {low:.2f} to {high:.2f}\n(a spread of {high - low:.2f} points)"
    sns.heatmap(matrix, annot=True, fmt=".2f", cmap="viridis", ax=axis, cbar_kws={"label": label})
    axis.set(xlabel="second augmentation", ylabel="first augmentation")
    for mark in marks.figure5 if marks else ():
        if mark.x in order and mark.y in order:
            row, column = order.index(mark.x), order.index(mark.y)
            box = plt.Rectangle(
                (column, row), 1, 1, fill=False, edgecolor="red", linewidth=2, gid=f"published:{mark.quantity}"
            )
            axis.add_patch(box)
            axis.text(column + 0.5, row + 0.85, f"published {mark.value:.2f}", ha="center", fontsize=6, color="red",
                      gid=f"published:{mark.quantity}")  # fmt: skip
    if marks:
        axis.legend(handles=[plt.Rectangle((0, 0), 1, 1, fill=False, edgecolor="red", label="published cell (text)")],
                    fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.12), frameon=False)  # fmt: skip
    mirrored = (table.trained_as != table.view1 + "+" + table.view2).any() if "trained_as" in table else False
    note = "; each unordered pair trained once, shown in both cells" if mirrored else ""
    return _finish(figure, axis, table, paths, stamp, xlabel="", title=f"Figure 5: augmentation pairs{note}")


def figure6(
    table: pd.DataFrame, paths: Sequence[str | Path], marks: PublishedMarks | None = None, *, stamp: str = ""
) -> plt.Figure:
    """Average Spearman vs number of unlabeled training texts, unsupervised and supervised (the paper
    states no value of Figure 6 in its text: nothing published is drawn)."""
    data = table.copy()
    full = data.n_texts.astype(str) == "all"
    sizes = pd.to_numeric(data.n_texts.where(~full), errors="coerce")
    data["texts"] = sizes.fillna(sizes.max() * 10 if sizes.notna().any() else 1)
    figure, axis = plt.subplots(figsize=(6, 4))
    sns.lineplot(data=data.sort_values("texts"), x="texts", y="Avg", hue="mode", marker="o", ax=axis)
    for line, (_, part) in zip(axis.get_lines(), data.groupby("mode", sort=False), strict=False):
        _seed_band(axis, part, "texts", line.get_color())
    all_position = data.texts[full].max() if full.any() else None
    ticks = sorted(set(data.texts))
    _log_ticks(axis, ticks, ["all" if t == all_position else f"{t:g}" for t in ticks])
    return _finish(figure, axis, table, paths, stamp, xlabel="unlabeled texts", title="Figure 6: few-shot")


def figure7(
    table: pd.DataFrame, paths: Sequence[str | Path], marks: PublishedMarks | None = None, *, stamp: str = ""
) -> plt.Figure:
    """Average Spearman vs NT-Xent temperature; the paper's stated best range shaded."""
    figure, axis = plt.subplots(figsize=(6, 4))
    sns.lineplot(data=table.sort_values("temperature"), x="temperature", y="Avg", marker="o", ax=axis)
    _seed_band(axis, table, "temperature")
    if marks:
        low, high = marks.figure7_range
        axis.axvspan(low, high, color="tab:orange", alpha=0.2, label=f"published best range ({low:g}-{high:g})",
                     gid="published:best range")  # fmt: skip
        axis.legend(fontsize=7)
    _log_ticks(axis, sorted(set(table.temperature)))
    return _finish(figure, axis, table, paths, stamp, xlabel="temperature tau", title="Figure 7: temperature")


def sweep_curve(
    table: pd.DataFrame,
    paths: Sequence[str | Path],
    marks: PublishedMarks | None = None,
    *,
    stamp: str = "",
    x: str,
    title: str,
) -> plt.Figure:
    """Average Spearman vs a sweep's value ``x`` (a line per mode where the table has several): the drawing of a
    sweep declared without one of its own (:data:`consert.sweeps.AXES`; nothing published is drawn)."""
    hue = "mode" if "mode" in table and table["mode"].nunique() > 1 else None
    figure, axis = plt.subplots(figsize=(6, 4))
    sns.lineplot(data=table.sort_values(x), x=x, y="Avg", hue=hue, marker="o", ax=axis)
    if hue is None:
        _seed_band(axis, table, x)
    return _finish(figure, axis, table, paths, stamp, xlabel=x, title=title)


def diagnostics(
    table: pd.DataFrame, paths: Sequence[str | Path], marks: PublishedMarks | None = None, *, stamp: str = ""
) -> plt.Figure:
    """The collapse, measured: anisotropy per model (Avg over the sets), alignment against uniformity on
    STS-B test, and STS-B's cosine by gold bin for untrained BERT and the Table 2 ConSERT runs."""
    from consert.evaluate.diagnostics import GOLD_BINS

    average = table[table.dataset == "Avg"]
    stsb = table[table.dataset == FIGURE_TASK]
    figure, axes = plt.subplots(1, 3, figsize=(20, max(4.5, 0.22 * len(average) + 1.5)),
                                gridspec_kw={"width_ratios": [1.2, 1, 1]}, layout="constrained")  # fmt: skip
    untrained = average.method.str.match(r"^(BERT-\w+ \(|Avg. GloVe)")
    axes[0].barh(average.method, average.anisotropy, color=np.where(untrained, "0.6", "tab:blue"))
    axes[0].invert_yaxis()
    axes[0].tick_params(axis="y", labelsize=7)
    axes[0].set(xlabel="anisotropy: mean cosine of all sentence pairs (Avg of the 7 sets)",
                title="anisotropy (grey: untrained)")  # fmt: skip
    sns.scatterplot(data=stsb, x="uniformity", y="alignment", hue="method", style="method", s=40, ax=axes[1])
    axes[1].legend(fontsize=6, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0), ncols=1)
    axes[1].set(xlabel="uniformity (lower is better)", ylabel="alignment (lower is better)",
                title="STS-B test: alignment vs uniformity (Wang & Isola)")  # fmt: skip
    centres = [(lo + hi) / 2 for lo, hi in GOLD_BINS]
    shown = stsb[stsb.method.str.match(r"^(BERT-\w+ \(|ConSERT-\w+$)")]
    for row in shown.itertuples():
        means = [getattr(row, f"cosine_gold_{lo}_{hi}_mean") for lo, hi in GOLD_BINS]
        sds = [getattr(row, f"cosine_gold_{lo}_{hi}_sd") for lo, hi in GOLD_BINS]
        style = "--" if row.method.startswith("BERT-") else "-"
        axes[2].errorbar(centres, means, yerr=sds, linestyle=style, marker="o", markersize=3, capsize=2,
                         linewidth=1, label=row.method)  # fmt: skip
    axes[2].set(xlabel="gold score bin (STS-B test)", ylabel="cosine: mean +- sd of the bin's pairs",
                title="STS-B test: cosine by gold bin")  # fmt: skip
    axes[2].legend(fontsize=6, frameon=False)
    figure.suptitle(f"Representation diagnostics\n{_setting_line(table)}", fontsize=9)
    _save(figure, paths, stamp)
    return figure


#: Groups of runs per row of the training-curves grid (each group: its dev curve above its loss).
CURVE_COLUMNS = 3


def training_curves(
    table: pd.DataFrame, paths: Sequence[str | Path], marks: PublishedMarks | None = None, *, stamp: str = ""
) -> plt.Figure:
    """Dev Spearman (top) and training loss (below it) against step, one panel pair per group of runs
    (Table 2, Table 3, each sweep, SG-OPT) in a grid :data:`CURVE_COLUMNS` wide, the exported checkpoint of
    each run starred."""
    groups = list(dict.fromkeys(table.group))
    columns = min(CURVE_COLUMNS, len(groups))
    rows = -(-len(groups) // columns)
    figure, axes = plt.subplots(
        2 * rows, columns, figsize=(5 * columns, 5.2 * rows), squeeze=False, layout="constrained"
    )
    for index, group in enumerate(groups):
        row, column = divmod(index, columns)
        top, bottom = axes[2 * row][column], axes[2 * row + 1][column]
        bottom.sharex(top)
        part = table[table.group == group]
        for run, curve in part.groupby("run", sort=False):
            dev = curve.dropna(subset=["dev_spearman"])
            (line,) = top.plot(dev.step, dev.dev_spearman, marker="o", markersize=2.5, linewidth=1, label=run)
            chosen = dev[dev.selected.astype(bool)]
            top.plot(chosen.step, chosen.dev_spearman, "*", markersize=9, color=line.get_color(), gid="selected")
            trained = curve.dropna(subset=["loss"])
            bottom.plot(trained.step, trained.loss, linewidth=0.8, color=line.get_color())
        top.set_title(group, fontsize=10)
        top.set(ylabel="STS-B dev Spearman x 100" if column == 0 else "")
        top.tick_params(labelbottom=False)
        bottom.set(xlabel="step", ylabel="training loss" if column == 0 else "")
        if part.run.nunique() <= 8:
            top.legend(fontsize=7, frameon=False)
    for index in range(len(groups), rows * columns):  # the grid's empty places
        row, column = divmod(index, columns)
        axes[2 * row][column].set_visible(False)
        axes[2 * row + 1][column].set_visible(False)
    figure.suptitle(f"Training curves (star: the exported checkpoint)\n{_setting_line(table)}", fontsize=10)
    _save(figure, paths, stamp)
    return figure


FOREST_COLOURS = {"reproduced": "tab:green", "not reproduced": "tab:red", "inconclusive": "tab:orange",
                  "not comparable": "0.6", YOURS: "tab:blue"}  # fmt: skip


#: The forest plot's x range, in margins: a cell further out is drawn at the edge as an arrow with its value.
FOREST_RANGE = 4.0


def comparison_forest(comparison: pd.DataFrame, paths: Sequence[str | Path], *, stamp: str = "") -> plt.Figure:
    """Every compared Spearman cell as reproduced - published with the interval that decided it.

    The first panel holds the primary cells (one per published row, and the shared shift of the trained
    rows): the decision interval as a bar, the margin +-delta as a shaded band on the cell's row; the
    other panels hold each STS set's cell, diagnostics outside the gate. Comparable cells are coloured by
    verdict, the others grey. Every panel spans :data:`FOREST_RANGE` times the largest trained margin each
    way, so that the bands and intervals stay readable; a cell beyond is an arrow at the edge, labelled
    with its value. (Table 4's step counts and Figure 4's best k are counts, not Spearman: they stay in the
    CSV only.)"""
    counts = (comparison.column == "steps") | comparison.row.astype(str).str.startswith("best k")  # not Spearman
    paired = (comparison.status == YOURS) & comparison.delta.notna()  # yours - a ConSERT row, on the same pairs
    cells = comparison[((comparison.status == "compared") & ~counts) | paired].copy()
    cells["panel"] = np.where(cells.role.isin(["primary", "shared shift", YOURS]), "primary", cells.column)
    against = cells.get("against", pd.Series("", index=cells.index)).fillna("").astype(str)
    cells["label"] = cells.artifact + ": " + cells.row.astype(str) + np.where(against != "", " - " + against, "")
    shared = (cells.panel == "primary") & cells.duplicated(["panel", "label"], keep=False)
    cells.loc[shared, "label"] += " " + cells.column[shared].astype(str)  # a row decided set by set (whitening)
    rows = list(dict.fromkeys(cells.label))
    # the primary cells (and the shared shift), then the seven sets as diagnostics
    panels = ["primary"] + [panel for panel in DATASETS if panel in set(cells.panel)]
    limit = FOREST_RANGE * float(np.nanmax([*pd.to_numeric(cells.margin, errors="coerce"), 1.0]))
    figure, axes = plt.subplots(
        1, len(panels), sharey=True, squeeze=False, figsize=(3.2 + 2.2 * len(panels), max(2.5, 0.3 * len(rows) + 1.8))
    )
    for axis, panel in zip(axes[0], panels, strict=True):
        for cell in cells[cells.panel == panel].itertuples():
            _forest_cell(axis, cell, rows.index(cell.label), limit, panel == "primary")
        axis.set_xlim(-limit * 1.15, limit * 1.15)
        axis.axvline(0, color="black", linewidth=0.8)
        axis.set_title("primary cells\n(band: +- margin)" if panel == "primary" else f"{panel}\n(diagnostic)",
                       fontsize=9)  # fmt: skip
        axis.tick_params(axis="x", labelsize=7)
        axis.grid(axis="y", color="0.92", linewidth=0.6)
    axes[0][0].set_yticks(range(len(rows)), rows, fontsize=8)
    axes[0][0].set_ylim(len(rows) - 0.5, -0.5)
    yours = " (yours: your model - a ConSERT row on the same pairs, bar: the 95 % paired interval over pairs)"
    figure.supxlabel(
        f"reproduced - published (Spearman x 100; bar: the 90 % decision interval; arrow: beyond +-{limit:g}, "
        f"its value beside it){yours if paired.any() else ''}",
        fontsize=8,
    )
    shown = {*cells.verdict, *([YOURS] if paired.any() else [])}
    handles = [
        plt.Line2D([], [], marker="o", linestyle="-", color=colour, label=verdict)
        for verdict, colour in FOREST_COLOURS.items()
        if verdict in shown
    ]
    figure.legend(handles=handles, loc="upper right", fontsize=7, frameon=False, ncols=len(handles) or 1)
    figure.suptitle(f"Comparison with the published numbers\n{_setting_line(cells)}", fontsize=9, x=0.02, ha="left")
    figure.tight_layout()
    _save(figure, paths, stamp)
    return figure


def _forest_cell(axis: plt.Axes, cell, y: int, limit: float, primary: bool) -> None:
    """One cell of the forest plot on row ``y``: its margin band (primary cells), interval and point, clipped
    to +-``limit`` with an arrow and the value where it lies beyond."""
    chosen = YOURS if cell.status == YOURS else cell.verdict if cell.comparable else "not comparable"
    colour = FOREST_COLOURS.get(chosen, "0.6")
    if primary and pd.notna(cell.margin):
        axis.fill_betweenx([y - 0.4, y + 0.4], -cell.margin, cell.margin, color="0.85", linewidth=0)
    if pd.notna(cell.diff_low) and pd.notna(cell.diff_high):
        axis.plot(np.clip([cell.diff_low, cell.diff_high], -limit, limit), [y, y], color=colour, linewidth=1.2)
    if abs(cell.delta) <= limit:
        axis.plot([cell.delta], [y], "o", color=colour, markersize=3.5)
        return
    side = np.sign(cell.delta)
    axis.plot([side * limit], [y], ">" if side > 0 else "<", color=colour, markersize=6, gid="outlier")
    axis.annotate(f"{cell.delta:+.1f}", (side * limit, y), xytext=(-4 * side, 5), textcoords="offset points",
                  ha="right" if side > 0 else "left", fontsize=6, color=colour, gid="outlier")  # fmt: skip
