"""MkDocs hook: the tables of config keys, each key with its value and its one help text, written into the pages
from the keys' own homes.

* ``<!-- training keys -->``: every training key (``consert.train.config.TrainConfig``, its sub-configs' keys as
  ``NAME.KEY``) with its value for an unsupervised run (``consert train --list-keys`` prints the same);
* ``<!-- keys: MODULE:CLASS -->``: the keys of another config dataclass with their defaults (``FlowSettings``,
  ``SgOptConfig``, ``ComparisonConfig``, ``EncodingSettings``; their commands' ``--help`` lists the same);
* ``<!-- workflow keys -->``: every key of the workflow config (``consert.workflow_keys.WorkflowConfig``), a block's
  keys as ``block.key``, with its default as YAML writes it.
"""

from __future__ import annotations

import importlib
import json
import re

MARKER = "<!-- training keys -->"
WORKFLOW_MARKER = "<!-- workflow keys -->"
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
        from consert.workflow_keys import key_rows

        rows = [
            (key, value if isinstance(value, str) and value else json.dumps(value), text)
            for key, value, text in key_rows()
        ]
        markdown = markdown.replace(WORKFLOW_MARKER, _table("default", rows))
    return CLASS_MARKER.sub(_class_table, markdown)
