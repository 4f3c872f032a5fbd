"""The downloads' tests share one fixture: the official archives served on 127.0.0.1 (tests/mirror.py)."""

from __future__ import annotations

import pytest

from consert.data.download import MIRROR_ENV, TEST_EXPECTED_ENV
from tests.data.test_download import build_official_archives, write_test_manifest
from tests.mirror import serving


@pytest.fixture()
def mirror(tmp_path, monkeypatch, real_data_dir):
    """The official archives served on 127.0.0.1, the harness pointed at them and at the tests' own manifest, the
    working directory a fresh one."""
    with serving(tmp_path / "www") as served:
        served.expected = build_official_archives(served, real_data_dir)
        monkeypatch.setenv(MIRROR_ENV, served.url)
        monkeypatch.setenv(TEST_EXPECTED_ENV, str(write_test_manifest(served, tmp_path / "manifest.json")))
        (tmp_path / "work").mkdir()
        monkeypatch.chdir(tmp_path / "work")
        yield served
