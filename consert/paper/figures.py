"""The paper's figures drawn from the artifact tables (seaborn/matplotlib), saved as PNG and PDF.

Every title names the setting, so a figure made with the offline stand-in says so on its face. Each
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

from consert.io import atomic_path  # noqa: E402
from consert.paper.plan import AUGMENTATION_LABELS  # noqa: E402
from consert.paper.tables import heatmap_matrix  # noqa: E402


def _setting_line(table: pd.DataFrame) -> str:
    settings = sorted({str(s) for s in table.get("setting", pd.Series(dtype=str)).dropna() if str(s)})
    return "; ".join(settings) if settings else "setting unknown"


def _save(figure: plt.Figure, paths: Sequence[str | Path]) -> None:
    for path in paths:
        with atomic_path(path) as temporary:
            figure.savefig(temporary, format=Path(path).suffix.lstrip("."), bbox_inches="tight", dpi=150)
    plt.close(figure)


def figure1(table: pd.DataFrame, paths: Sequence[str | Path]) -> plt.Figure:
    """Gold score vs predicted cosine on STS-B test, one panel per model."""
    models = list(dict.fromkeys(table.model))
    figure, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 4.2), sharey=True, squeeze=False)
    for axis, model in zip(axes[0], models, strict=True):
        part = table[table.model == model]
        sns.scatterplot(data=part, x="gold", y="cosine", s=6, alpha=0.4, linewidth=0, ax=axis)
        axis.set(title=model, xlabel="gold similarity (STS-B test)", ylabel="cosine similarity")
    figure.suptitle(f"Figure 1: gold vs cosine\n{_setting_line(table)}", fontsize=9, y=1.04)
    _save(figure, paths)
    return figure


def figure4(table: pd.DataFrame, paths: Sequence[str | Path]) -> plt.Figure:
    """Average Spearman vs number of most frequent tokens removed from the average."""
    figure, axis = plt.subplots(figsize=(6, 4))
    sns.lineplot(data=table, x="k", y="Avg", hue="model", marker="o", markersize=3, ax=axis)
    axis.set(
        xlabel="k most frequent tokens removed (STS-B test frequencies; the authors' script's k is this - 1)",
        ylabel="avg Spearman x 100",
    )
    axis.set_title(f"Figure 4: top-k frequency masking\n{_setting_line(table)}", fontsize=9)
    _save(figure, paths)
    return figure


def figure5(table: pd.DataFrame, paths: Sequence[str | Path]) -> plt.Figure:
    """5 x 5 heatmap of average Spearman: row = first view's augmentation, column = second's."""
    order = [a for a in AUGMENTATION_LABELS if a in set(table.view1) | set(table.view2)]
    matrix = heatmap_matrix(table, order).rename(index=AUGMENTATION_LABELS, columns=AUGMENTATION_LABELS)
    figure, axis = plt.subplots(figsize=(6.5, 5))
    sns.heatmap(matrix, annot=True, fmt=".2f", cmap="viridis", ax=axis, cbar_kws={"label": "avg Spearman x 100"})
    axis.set(xlabel="second augmentation", ylabel="first augmentation")
    mirrored = (table.trained_as != table.view1 + "+" + table.view2).any() if "trained_as" in table else False
    note = "; each unordered pair trained once, shown in both cells" if mirrored else ""
    axis.set_title(f"Figure 5: augmentation pairs{note}\n{_setting_line(table)}", fontsize=9)
    _save(figure, paths)
    return figure


def figure6(table: pd.DataFrame, paths: Sequence[str | Path]) -> plt.Figure:
    """Average Spearman vs number of unlabeled training texts, unsupervised and supervised."""
    data = table.copy()
    full = data.n_texts.astype(str) == "all"
    sizes = pd.to_numeric(data.n_texts.where(~full), errors="coerce")
    data["texts"] = sizes.fillna(sizes.max() * 10 if sizes.notna().any() else 1)
    figure, axis = plt.subplots(figsize=(6, 4))
    sns.lineplot(data=data.sort_values("texts"), x="texts", y="Avg", hue="variant", marker="o", ax=axis)
    axis.set_xscale("log")
    all_position = data.texts[full].max() if full.any() else None
    ticks = sorted(set(data.texts))
    axis.set_xticks(ticks, ["all" if t == all_position else f"{t:g}" for t in ticks])
    axis.minorticks_off()
    axis.set(xlabel="unlabeled texts", ylabel="avg Spearman x 100")
    axis.set_title(f"Figure 6: few-shot\n{_setting_line(table)}", fontsize=9)
    _save(figure, paths)
    return figure


def figure7(table: pd.DataFrame, paths: Sequence[str | Path]) -> plt.Figure:
    """Average Spearman vs NT-Xent temperature."""
    figure, axis = plt.subplots(figsize=(6, 4))
    sns.lineplot(data=table.sort_values("temperature"), x="temperature", y="Avg", marker="o", ax=axis)
    axis.set_xscale("log")
    axis.set(xlabel="temperature tau", ylabel="avg Spearman x 100")
    axis.set_title(f"Figure 7: temperature\n{_setting_line(table)}", fontsize=9)
    _save(figure, paths)
    return figure


DRAW = {"figure1": figure1, "figure4": figure4, "figure5": figure5, "figure6": figure6, "figure7": figure7}


#: The forest plot's panels: the primary cells (and the shared shift), then the seven sets as diagnostics.
FOREST_PANELS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R")
FOREST_COLOURS = {"reproduced": "tab:green", "not reproduced": "tab:red", "inconclusive": "tab:orange",
                  "not comparable": "0.6"}  # fmt: skip


def comparison_forest(comparison: pd.DataFrame, paths: Sequence[str | Path]) -> plt.Figure:
    """Every compared Spearman cell as reproduced - published with the interval that decided it.

    The first panel holds the primary cells (one per published row, and the shared shift of the trained
    rows): the decision interval as a bar, the margin +-delta as a shaded band on the cell's row; the
    other panels hold each STS set's cell, diagnostics outside the gate. Comparable cells are coloured by
    verdict, the others grey. (Table 4's step counts and Figure 4's best k are counts, not Spearman: they
    stay in the CSV only.)"""
    counts = (comparison.column == "steps") | comparison.row.astype(str).str.startswith("best k")  # not Spearman
    cells = comparison[(comparison.status == "compared") & ~counts].copy()
    cells["panel"] = np.where(cells.role.isin(["primary", "shared shift"]), "primary", cells.column)
    cells["label"] = cells.artifact + ": " + cells.row.astype(str)
    rows = list(dict.fromkeys(cells.label))
    panels = ["primary"] + [panel for panel in FOREST_PANELS if panel in set(cells.panel)]
    figure, axes = plt.subplots(
        1, len(panels), sharey=True, squeeze=False, figsize=(3.2 + 1.6 * len(panels), max(2.5, 0.3 * len(rows) + 1.6))
    )
    for axis, panel in zip(axes[0], panels, strict=True):
        for cell in cells[cells.panel == panel].itertuples():
            y = rows.index(cell.label)
            colour = FOREST_COLOURS.get(cell.verdict if cell.comparable else "not comparable", "0.6")
            if panel == "primary" and pd.notna(cell.margin):
                axis.fill_betweenx([y - 0.4, y + 0.4], -cell.margin, cell.margin, color="0.85", linewidth=0)
            if pd.notna(cell.diff_low) and pd.notna(cell.diff_high):
                axis.plot([cell.diff_low, cell.diff_high], [y, y], color=colour, linewidth=1.2)
            axis.plot([cell.delta], [y], "o", color=colour, markersize=3.5)
        axis.axvline(0, color="black", linewidth=0.8)
        title = "primary cells (band: +- margin)" if panel == "primary" else f"{panel} (diagnostic)"
        axis.set_title(title, fontsize=9)
        axis.tick_params(axis="x", labelsize=7)
        axis.grid(axis="y", color="0.92", linewidth=0.6)
    axes[0][0].set_yticks(range(len(rows)), rows, fontsize=8)
    axes[0][0].set_ylim(len(rows) - 0.5, -0.5)
    figure.supxlabel("reproduced - published (Spearman x 100; bar: the 90 % decision interval)", fontsize=8)
    handles = [
        plt.Line2D([], [], marker="o", linestyle="-", color=colour, label=verdict)
        for verdict, colour in FOREST_COLOURS.items()
        if verdict in set(cells.verdict)
    ]
    figure.legend(handles=handles, loc="upper right", fontsize=7, frameon=False, ncols=len(handles) or 1)
    figure.suptitle(f"Comparison with the published numbers\n{_setting_line(cells)}", fontsize=9, x=0.02, ha="left")
    figure.tight_layout()
    _save(figure, paths)
    return figure
