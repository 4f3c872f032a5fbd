"""Write what is generated from the workflow config's keys (``consert/planner/keys.py``, the one description of
them): the JSON schema ``workflow/schemas/config.schema.yaml`` and ``config/README.md``'s table of keys.

    python scripts/config_keys.py

The table sits between the README's two ``keys`` markers; a test fails when either file differs from the keys.
"""

from __future__ import annotations

from pathlib import Path

from consert.io import write_text
from consert.planner.keys import keys_table, schema_text
from consert.planner.load import config_schema

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "config" / "README.md"
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
START, END = "<!-- keys: generated from consert/planner/keys.py by scripts/config_keys.py -->\n", "<!-- /keys -->\n"


def with_table(text: str) -> str:
    """``text`` with the block between the markers replaced by the keys' table."""
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}{keys_table()}{END}{tail}"


if __name__ == "__main__":
    print(f"wrote {write_text(schema_text(config_schema()), SCHEMA)}")
    print(f"wrote {write_text(with_table(README.read_text(encoding='utf-8')), README)}")
