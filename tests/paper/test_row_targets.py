"""One published row on its own: each row the config reproduces has a target, named from the published row."""

from __future__ import annotations

from pathlib import Path

from consert.paper.row_targets import row_slug, row_targets
from consert.planner.load import read_workflow_config
from tests.conftest import PUBLISHED, ROOT


def test_every_reproduced_published_row_has_a_target_named_from_it():
    """The paper config: Table 2's 7 rows it reproduces (GloVe, and per size BERT, BERT-flow, ConSERT), whitening's
    2, SG-OPT's 3, Table 3's 5 per size, Table 4's 5 batch sizes, the family's 2: 29 targets, each named as the page
    says; the test config (base only, no GloVe 840B) has no large row."""
    targets = row_targets(read_workflow_config(ROOT / "config" / "config.yaml"), Path(PUBLISHED))
    by_artifact = {}
    for artifact, _ in targets.values():
        by_artifact[artifact] = by_artifact.get(artifact, 0) + 1
    assert by_artifact == {"table2": 7, "whitening_table1": 2, "sgopt_table1": 3, "table3": 10, "table4": 5,
                           "family": 2}  # fmt: skip
    sbert = targets["results/rows/table3/SBERT-base-NLI_re-impl._nli.csv"]
    assert sbert == ("table3", "SBERT-base-NLI (re-impl.) | nli")
    page = (ROOT / "docs" / "your-model.md").read_text()
    for slug in ("ConSERT-base", "ConSERT-base_joint_nli", "SBERT-base-NLI_re-impl._nli", "96"):
        assert f"`{slug}`" in page and any(Path(target).stem == slug for target in targets)
    assert row_slug("BERT-base + contrastive (SG-OPT) | cls") == "BERT-base_+_contrastive_SG-OPT_cls"
    test = row_targets(read_workflow_config(ROOT / "config" / "test.yaml"), Path(PUBLISHED))
    assert test and not any("large" in row for _, row in test.values())
