"""Table 1 regenerated from the real data equals the published table exactly."""

from __future__ import annotations

from consert.cli import main
from tests.conftest import PUBLISHED


def test_table1_matches_published_byte_for_byte(real_data_dir, tmp_path):
    out = tmp_path / "table1_datasets.csv"
    assert main(["table1", "--data", str(real_data_dir), "--output", str(out)]) == 0
    assert out.read_text() == (PUBLISHED / "consert_table1_datasets.csv").read_text()
