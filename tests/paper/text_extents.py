"""Where a figure's texts land once drawn: every visible title, label, tick label, legend entry and annotation,
and the pairs of them that overlap (what makes a figure unreadable at a glance)."""

from __future__ import annotations

from itertools import combinations

import matplotlib.pyplot as plt
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text


def drawn_texts(figure: plt.Figure) -> list[tuple[str, object]]:
    """``(text, window extent)`` of every text the figure draws: tick labels only of the ticks inside each
    axis's view (matplotlib keeps labels of ticks outside it, undrawn)."""
    canvas = FigureCanvasAgg(figure)  # the harness closes its figures: draw this one on a canvas of its own
    canvas.draw()
    renderer = canvas.get_renderer()
    tick_labels, texts = set(), []
    for axes in figure.axes:
        for axis in (axes.xaxis, axes.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                tick_labels.update({id(tick.label1), id(tick.label2)})
            if axes.get_visible():
                for tick in axis._update_ticks():  # the ticks drawn: inside the view interval
                    texts += [label for label in (tick.label1, tick.label2) if label.get_visible()]
    texts += [t for t in figure.findobj(Text) if id(t) not in tick_labels and t.get_visible()]
    drawn = []
    for text in texts:
        parent = text.axes
        if text.get_text().strip() and (parent is None or parent.get_visible()):
            drawn.append((text.get_text(), text.get_window_extent(renderer)))
    return drawn


def overlapping_texts(figure: plt.Figure, tolerance: float = 1.0) -> list[tuple[str, str]]:
    """Pairs of drawn texts whose boxes overlap by more than ``tolerance`` pixels each way."""
    pairs = []
    for (first, a), (second, b) in combinations(drawn_texts(figure), 2):
        width = min(a.x1, b.x1) - max(a.x0, b.x0)
        height = min(a.y1, b.y1) - max(a.y0, b.y0)
        if width > tolerance and height > tolerance:
            pairs.append((first, second))
    return pairs
