"""Write config/README.md's table of the workflow config's keys from the schema (each key's ``title``).

    python scripts/config_keys.py

The schema (``workflow/schemas/config.schema.yaml``) is the one description of the keys; the table sits between
the README's two ``keys`` markers, and a test fails when it differs from the schema's.
"""

from __future__ import annotations

from pathlib import Path

from consert.io import write_text
from consert.paper.workflow_config import keys_table

README = Path(__file__).resolve().parents[1] / "config" / "README.md"
START, END = "<!-- keys: generated from the schema by scripts/config_keys.py -->\n", "<!-- /keys -->\n"


def with_table(text: str) -> str:
    """``text`` with the block between the markers replaced by the schema's table."""
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}{keys_table()}{END}{tail}"


if __name__ == "__main__":
    print(f"wrote {write_text(with_table(README.read_text(encoding='utf-8')), README)}")
