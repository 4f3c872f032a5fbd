"""The README and the docs site: short README, a site that builds strictly, and pages that say what is
true now (no history of the project: that belongs in git)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", ROOT / "config" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Words of the project's history rather than its use (who reviewed what, whose report, which lease).
HISTORY = re.compile(
    r"review helper|a review found|after review|review fix|complaint|an issue's|\bleases?\b|earlier session"
    r"|this session|previous session",
    re.IGNORECASE,
)


def test_the_readme_is_short():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_tells_the_projects_history(page):
    found = [m.group(0) for m in HISTORY.finditer(page.read_text(encoding="utf-8"))]
    assert found == [], f"{page.relative_to(ROOT)}: {found}"


def test_the_history_check_finds_history():
    assert HISTORY.search("measured on another H100 lease") and HISTORY.search("as the complaint's Xeon showed")
    assert not HISTORY.search("please release the lock; we reviewed the margins")


def test_every_page_is_in_the_site_and_it_builds_strictly(tmp_path):
    import yaml

    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.Loader)  # noqa: S506 - mkdocs' own tags
    listed = {next(iter(entry.values())) for entry in config["nav"]}
    assert listed == {p.name for p in (ROOT / "docs").glob("*.md")}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert "locate_senteval" in api and "evaluate_sentence_transformer" in api  # the docstrings are rendered
    assert Path(tmp_path / "site" / "evaluation" / "index.html").is_file()
    import dataclasses
    import html

    from consert.train.augcse import AugCseSettings
    from consert.train.config import TrainConfig

    training = html.unescape((tmp_path / "site" / "training" / "index.html").read_text(encoding="utf-8"))
    for key in dataclasses.fields(TrainConfig):  # every training key in the table, with its one help text
        assert f"<code>{key.name}</code>" in training and key.metadata["help"].replace("|", "/") in training, key.name
    for key in dataclasses.fields(AugCseSettings):  # and every key of a sub-config, under its name
        assert f"<code>augcse.{key.name}</code>" in training and key.metadata["help"] in training, key.name
    from baselines.flow_settings import FlowSettings
    from baselines.sgopt import SgOptConfig
    from consert.paper.comparison_config import ComparisonConfig

    for page, config_class in (("baselines", FlowSettings), ("baselines", SgOptConfig), ("verdicts", ComparisonConfig)):
        text = html.unescape((tmp_path / "site" / page / "index.html").read_text(encoding="utf-8"))
        for key in dataclasses.fields(config_class):  # each key of the other configs, with its help, on its page
            assert f"<code>{key.name}</code>" in text and key.metadata["help"].replace("|", "/") in text, key.name
    architecture = (tmp_path / "site" / "architecture" / "index.html").read_text(encoding="utf-8")
    assert '<figure class="rule-graph"><svg' in architecture and "unpkg" not in architecture  # drawn offline
