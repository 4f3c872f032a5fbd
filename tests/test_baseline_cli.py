"""Every baseline goes through the same CLI and writes the same tidy CSV with provenance."""

from __future__ import annotations

import pandas as pd
import pytest

from consert.cli import main

PROVENANCE = ("model", "setting", "pooling", "data_sha256", "harness_commit", "packages", "timestamp")


@pytest.mark.parametrize(
    "argv",
    [
        ["baseline", "pooling", "--pooling", "cls"],
        ["baseline", "whitening", "--k", "32"],
        ["baseline", "whitening", "--fit-on", "nli"],
        ["baseline", "glove"],
    ],
    ids=["pooling-cls", "whitening-k32", "whitening-nli", "glove"],
)
def test_baselines_write_tidy_csv_on_a_fixture_tree(tiny_tree, tmp_path, argv):
    out = tmp_path / "result.csv"
    assert main([*argv, "--data", str(tiny_tree), "--output", str(out)]) == 0
    frame = pd.read_csv(out)
    per_set = frame[frame.subset == "all"]
    assert list(per_set.dataset) == ["STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R", "Avg"]
    assert per_set.spearman.between(-100, 100).all()
    for column in PROVENANCE:
        assert frame[column].notna().all(), column
    assert frame.setting.str.contains("offline stand-in").all()


def test_topk_cli_writes_a_curve(tiny_tree, tmp_path):
    out = tmp_path / "topk.csv"
    assert (
        main(
            [
                "topk",
                "sentence-transformers/all-MiniLM-L6-v2",
                "--max-k",
                "3",
                "--data",
                str(tiny_tree),
                "--output",
                str(out),
            ]
        )
        == 0
    )
    curve = pd.read_csv(out)
    assert sorted(curve[curve.dataset == "Avg"].k) == [0, 1, 2, 3]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["pooling", "whitening", "flow", "glove"])
def test_baselines_on_the_real_sts_sets(real_data_dir, tmp_path, name):
    out = tmp_path / f"{name}.csv"
    assert main(["baseline", name, "--data", str(real_data_dir), "--output", str(out)]) == 0
    frame = pd.read_csv(out)
    average = frame[(frame.dataset == "Avg")].spearman.item()
    # the stand-in is a strong encoder: every encoder-based baseline stays in its range; GloVe-50d is weaker
    assert 70 < average < 85 if name != "glove" else 35 < average < 60
