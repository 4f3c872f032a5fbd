"""MkDocs hook: each ```mermaid flowchart of a page drawn as an inline SVG when the site is built, so the
picture shows with no network (Material for MkDocs would load Mermaid from a CDN). Nodes are placed in
columns by their depth in the graph (networkx's topological generations), coloured by their subgraph; the
flowchart's text stays below the picture, folded."""

from __future__ import annotations

import io
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402

FENCE = re.compile(r"```mermaid\n(.*?)```", re.S)


def _graph(text: str) -> tuple[nx.DiGraph, dict[str, str]]:
    """The flowchart's edges (self-loops left out: they do not change the picture's order) and each node's
    subgraph title."""
    graph, group, current = nx.DiGraph(), {}, ""
    for line in text.splitlines():
        line = line.strip()
        if match := re.match(r'subgraph \w+\["(.*)"\]', line):
            current = match.group(1)
        elif line == "end":
            current = ""
        elif match := re.match(r"^(\w+) --> (\w+)$", line):
            if match.group(1) != match.group(2):
                graph.add_edge(match.group(1), match.group(2))
        elif re.match(r"^\w+$", line) and current:
            graph.add_node(line)
            group[line] = current
    return graph, group


def _svg(graph: nx.DiGraph, group: dict[str, str]) -> str:
    layers = list(nx.topological_generations(graph))
    position = {node: (x, -y) for x, layer in enumerate(layers) for y, node in enumerate(sorted(layer))}
    titles = list(dict.fromkeys(group[node] for node in graph if node in group))
    colours = {title: plt.get_cmap("tab10")(i % 10) for i, title in enumerate(titles)}
    height = max(len(layer) for layer in layers)
    figure, axis = plt.subplots(figsize=(2.3 * len(layers), 0.8 * height + 1))
    nx.draw_networkx_edges(graph, position, ax=axis, edge_color="0.6", arrowsize=8, node_size=2000, width=0.7)
    for node, (x, y) in position.items():
        axis.text(x, y, node, ha="center", va="center", fontsize=7,
                  bbox={"boxstyle": "round,pad=0.3", "facecolor": colours.get(group.get(node), "white"),
                        "alpha": 0.35, "edgecolor": "0.4"})  # fmt: skip
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour, alpha=0.35, label=title) for title, colour in colours.items()]
    axis.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    axis.set_axis_off()
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue().split("<svg", 1)[1].join(["<svg", ""])


def on_page_markdown(markdown: str, **_) -> str:
    """Put each flowchart's SVG before its (folded) text."""

    def draw(match: re.Match) -> str:
        graph, group = _graph(match.group(1))
        if not graph:
            return match.group(0)
        text = match.group(1).replace("<", "&lt;")
        return (
            f'<figure class="rule-graph">{_svg(graph, group)}</figure>\n\n'
            f"<details><summary>the same graph as text</summary><pre><code>{text}</code></pre></details>\n"
        )

    return FENCE.sub(draw, markdown)
