"""MkDocs hook: the tables of config keys, each key with its value and its one help text, written into the pages
from the keys' own homes.

* ``<!-- training keys -->``: every training key (``consert.train.config.TrainConfig``, its sub-configs' keys as
  ``NAME.KEY``) with its value for an unsupervised run (``consert train --list-keys`` prints the same);
* ``<!-- keys: MODULE:CLASS -->``: the keys of another settings class with their defaults (``FlowSettings``,
  ``SgOptConfig``, ``ComparisonConfig``, ``EncodingSettings``; their commands' ``--help`` lists the same);
* ``<!-- workflow keys -->``: every key of the workflow config (``consert.planner.keys.WorkflowConfig``), a block's
  keys as ``block.key``, with its default as YAML writes it;
* ``<!-- trainable modes -->``: every trainable mode's record (``consert.train.modes.MODES``): what trains it, what
  it starts from, its objective, its config block, the table it reproduces and its authors' source;
* ``<!-- trained architectures -->``: every encoder architecture the trainer trains
  (``consert.train.architectures.ARCHITECTURES``), its views and the fast paths proven on it;
* ``<!-- card table -->``: each card's compute capability, the build of the pinned torch that runs it and its
  install line, the precisions measured on it and the packed step's attention (``consert.hardware.card_table``).
"""

from __future__ import annotations

import importlib
import json
import re

MARKER = "<!-- training keys -->"
WORKFLOW_MARKER = "<!-- workflow keys -->"
MODES_MARKER = "<!-- trainable modes -->"
ARCHITECTURES_MARKER = "<!-- trained architectures -->"
CARDS_MARKER = "<!-- card table -->"
CLASS_MARKER = re.compile(r"<!-- keys: ([\w.]+):(\w+) -->")


def _table(header: str, rows) -> str:
    lines = [f"| key | {header} | what it sets |", "|---|---|---|"]
    cells = [(key, value, text.replace("|", "/").replace("*", "\\*")) for key, value, text in rows]  # as written
    return "\n".join(lines + [f"| `{key}` | `{value!s}` | {text} |" for key, value, text in cells])


def _class_table(match: re.Match) -> str:
    from consert.configs import key_rows

    return _table("default", key_rows(getattr(importlib.import_module(match[1]), match[2])))


def on_page_markdown(markdown: str, **_) -> str:
    """Replace each marker with its table."""
    if MARKER in markdown:
        from consert.train.config import key_help

        markdown = markdown.replace(MARKER, _table("value for `unsup`", key_help("unsup")))
    if WORKFLOW_MARKER in markdown:
        from consert.planner.keys import key_rows

        rows = [
            (key, value if isinstance(value, str) and value else json.dumps(value), text)
            for key, value, text in key_rows()
        ]
        markdown = markdown.replace(WORKFLOW_MARKER, _table("default", rows))
    if MODES_MARKER in markdown:
        markdown = markdown.replace(MODES_MARKER, modes_table())
    if ARCHITECTURES_MARKER in markdown:
        from consert.train.architectures import architecture_table

        markdown = markdown.replace(ARCHITECTURES_MARKER, architecture_table())
    if CARDS_MARKER in markdown:
        from consert.hardware import card_table

        markdown = markdown.replace(CARDS_MARKER, card_table())
    return CLASS_MARKER.sub(_class_table, markdown)


def modes_table() -> str:
    """One row per trainable mode, from its record: the table of the Training page."""
    from consert.train import modes

    blocks = {modes.STAGE_KEYS_BLOCK: "`train`, `stages`", modes.METHOD_KEYS_BLOCK: "`family`",
              modes.FLOW_NLI_BLOCK: "`baselines.flow_nli`", modes.SGOPT_BLOCK: "`baselines.sgopt`"}  # fmt: skip
    lines = [
        "| mode | label | trained by | starts from | objective | config block | reproduces | authors' recipe |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode in modes.MODES.values():
        start = f"`{mode.first_stage}`'s model" if mode.first_stage else "the base model"
        objective = f"`{mode.recipe['objective']}`" if "objective" in mode.recipe else "its own loss"
        block, source = blocks[mode.workflow_block], mode.recipe["source"].replace("|", "/")
        cells = (f"`{mode.name}`", mode.label, f"`consert {mode.trained_by}`", start, objective, block,
                 mode.published_in or "-", source)  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
