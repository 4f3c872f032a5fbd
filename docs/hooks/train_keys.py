"""MkDocs hook: the table of every training key (its value for an unsupervised run and its help text) written
into the page at ``<!-- training keys -->`` from the keys' one home, ``consert.train.config.TrainConfig``."""

from __future__ import annotations

MARKER = "<!-- training keys -->"


def on_page_markdown(markdown: str, **_) -> str:
    """Replace the marker with the table (``consert train --list-keys`` prints the same)."""
    if MARKER not in markdown:
        return markdown
    from consert.train.config import key_help

    rows = ["| key | value for `unsup` | what it sets |", "|---|---|---|"]
    rows += [f"| `{key}` | `{value!s}` | {text.replace('|', '/')} |" for key, value, text in key_help("unsup")]
    return markdown.replace(MARKER, "\n".join(rows))
