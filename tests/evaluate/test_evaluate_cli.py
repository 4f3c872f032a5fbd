"""``consert evaluate`` for everyday use: task subsets, the dev split, the model's own modules, and the
formats other tools read (SimCSE's summary line, JSON, mteb's result files)."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from consert.cli import main as cli_main
from consert.encode.models import STAND_IN_MODEL, resolve_model
from consert.evaluate.formats import summary_line


def test_select_keeps_the_tasks_and_swaps_in_the_dev_splits(real_data):
    dev = real_data.select(["STSb", "SICK-R"], "dev")
    assert list(dev.sets) == ["STSb", "SICK-R"]
    # SentEval's files: STS-B dev has 1,500 pairs, SICK's trial (dev) split 500
    assert [len(pairs) for pairs in dev.sets["STSb"].eval_groups.values()] == [1500]
    assert [len(pairs) for pairs in dev.sets["SICK-R"].eval_groups.values()] == [500]
    assert len(real_data.sets["STSb"].eval_groups["test"]) == 1379  # the full data is untouched
    with pytest.raises(ValueError, match="no dev split for STS12"):
        real_data.select(["STS12", "STSb"], "dev")
    with pytest.raises(ValueError, match="unknown task"):
        real_data.select(["STS17"])


def test_the_summary_line_reads_as_simcse_prints_it_with_intervals():
    frame = pd.DataFrame(
        {
            "dataset": ["STS12", "STS12", "STSb", "Avg"],
            "subset": ["all", "MSRpar", "all", "all"],
            "spearman": [70.123, 60.0, 80.0, 75.06],
            "spearman_ci_low": [69.0, np.nan, 79.5, np.nan],
            "spearman_ci_high": [71.25, np.nan, 80.5, np.nan],
        }
    )
    assert summary_line(frame) == "STS12 70.12 [69.00, 71.25] | STSb 80.00 [79.50, 80.50] | Avg. 75.06"
    without_avg = frame[frame.dataset != "Avg"]
    assert summary_line(without_avg).endswith("| Avg. of these 2 75.06")


def test_mteb_files_of_the_models_own_modules_hold_the_cosine_spearman_of_its_vectors(real_data_dir, tmp_path, capsys):
    """The acceptance command; mteb loads the files, and their main scores equal the harness's table and a
    Spearman computed here from ``SentenceTransformer.encode`` with scipy."""
    from mteb.results import TaskResult
    from sentence_transformers import SentenceTransformer

    from consert.data.senteval import load_senteval

    output = tmp_path / "mteb"
    common = [STAND_IN_MODEL, "--pooling", "model", "--tasks", "STS12", "STSb", "--data", str(real_data_dir)]
    assert cli_main(["evaluate", *common, "--format", "mteb", "--output", str(output)]) == 0
    printed = capsys.readouterr().out
    files = sorted(output.rglob("*.json"))
    assert [path.name for path in files] == ["STS12.json", "STSBenchmark.json"]
    scores = {TaskResult.from_disk(path).task_name: TaskResult.from_disk(path).get_score() for path in files}
    rows = [line.split() for line in printed.splitlines() if line.strip().startswith("STS")]
    table = {words[0]: float(words[2]) for words in rows if words[1].isdigit()}  # dataset n_pairs all mean wmean
    assert scores["STS12"] * 100 == pytest.approx(table["STS12"], abs=0.005)
    assert scores["STSBenchmark"] * 100 == pytest.approx(table["STSb"], abs=0.005)
    pairs = load_senteval(real_data_dir).sets["STSb"].groups["test"]
    model = SentenceTransformer(str(resolve_model(STAND_IN_MODEL).path), device="cpu")  # the installed files
    a, b = (model.encode([getattr(p, side) for p in pairs], batch_size=64) for side in ("sent1", "sent2"))
    cosine = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert scores["STSBenchmark"] == pytest.approx(spearmanr(cosine, [p.score for p in pairs])[0], abs=1e-4)


def test_json_and_csv_carry_the_scores_and_the_provenance(real_data_dir, tmp_path, capsys):
    common = [STAND_IN_MODEL, "--tasks", "STSb", "SICK-R", "--split", "dev", "--data", str(real_data_dir)]
    assert (
        cli_main(["evaluate", *common, "--dtype", "fp32", "--format", "json", "--output", str(tmp_path / "r.json")])
        == 0
    )
    blocks = json.loads((tmp_path / "r.json").read_text())
    assert [block["pooling"] for block in blocks] == ["mean:-2,-1"]
    assert set(blocks[0]["scores"]) == {"STSb", "SICK-R"} and blocks[0]["scores"]["STSb"]["n_pairs"] == 1500
    assert "offline stand-in" in blocks[0]["setting"] and blocks[0]["summary"].startswith("STSb ")
    capsys.readouterr()
    assert cli_main(["evaluate", *common, "--dtype", "fp32", "--format", "csv"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    rows = frame[frame.subset == "all"].set_index("dataset")
    assert rows.loc["STSb", "spearman"] == pytest.approx(blocks[0]["scores"]["STSb"]["spearman"], abs=1e-9)


def test_a_task_without_a_dev_split_is_refused_in_one_line(real_data_dir, capsys):
    status = cli_main(["evaluate", STAND_IN_MODEL, "--tasks", "STS12", "--split", "dev", "--data", str(real_data_dir)])
    assert status == 2 and capsys.readouterr().err.strip().count("\n") == 0
