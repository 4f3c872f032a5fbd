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


@pytest.mark.slow  # 30 s on 2 cores: the default suite keeps the JSON/CSV test of the same command
def test_mteb_files_load_in_mteb_and_hold_the_cosine_spearman_of_the_vectors(real_data_dir, tmp_path, capsys):
    """mteb's own ``ResultCache`` loads the files of two evaluations of one model side by side: the model's
    own modules (the default pooling of ``--format mteb``) and a pooling of the harness (an experiment keyed by
    its pooling and max length). Their main scores equal the printed table, and the first a Spearman computed
    here from ``SentenceTransformer.encode`` with scipy; the Pearson is scipy's of the same cosines."""
    from mteb.cache import ResultCache
    from scipy.stats import pearsonr
    from sentence_transformers import SentenceTransformer

    from consert.data.senteval import load_senteval

    output = tmp_path  # mteb's cache folder: the files go under its results/
    common = [STAND_IN_MODEL, "--tasks", "STSBenchmark", "--data", str(real_data_dir), "--format", "mteb"]
    printed = {}
    for pooling in ([], ["--pooling", "avg_top2"]):  # SimCSE's name of the paper's mean:-2,-1
        assert cli_main(["evaluate", *common, *pooling, "--output", str(output)]) == 0
        rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip().startswith("STSb ")]
        printed[bool(pooling)] = float(rows[0][2])  # dataset n_pairs all mean wmean
    results = ResultCache(cache_path=tmp_path).load_results(
        models=[STAND_IN_MODEL], include_remote=False, load_experiments="match_name"
    )
    by_experiment = {m.experiment_name: m.task_results for m in results.model_results}
    assert set(by_experiment) == {None, "max_length_64__pooling_mean_-2,-1"}
    own, harness = by_experiment[None][0], by_experiment["max_length_64__pooling_mean_-2,-1"][0]
    assert own.task_name == harness.task_name == "STSBenchmark"
    assert own.get_score() * 100 == pytest.approx(printed[False], abs=0.005)
    assert harness.get_score() * 100 == pytest.approx(printed[True], abs=0.005)
    assert own.mteb_version and own.evaluation_time > 0
    meta = json.loads(next(output.rglob("experiments/*/model_meta.json")).read_text())
    assert meta["name"] == STAND_IN_MODEL and meta["experiment_kwargs"] == {"max_length": 64, "pooling": "mean:-2,-1"}
    pairs = load_senteval(real_data_dir).sets["STSb"].groups["test"]
    model = SentenceTransformer(str(resolve_model(STAND_IN_MODEL).path), device="cpu")  # the installed files
    a, b = (model.encode([getattr(p, side) for p in pairs], batch_size=64) for side in ("sent1", "sent2"))
    cosine = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    gold = [p.score for p in pairs]
    assert own.get_score() == pytest.approx(spearmanr(cosine, gold)[0], abs=1e-4)
    test_scores = own.scores["test"][0]
    assert test_scores["cosine_pearson"] == pytest.approx(pearsonr(cosine, gold)[0], abs=1e-4)


def test_json_and_csv_carry_the_scores_and_the_provenance(real_data_dir, tiny_model_dir, tmp_path, capsys):
    """The formats, not the model: a tiny random BERT on the real dev splits (STS-B's 1,500 pairs, SICK-R's trial)."""
    common = [tiny_model_dir, "--tasks", "STSb", "SICK-R", "--split", "dev", "--data", str(real_data_dir)]
    assert (
        cli_main(["evaluate", *common, "--dtype", "fp32", "--format", "json", "--output", str(tmp_path / "r.json")])
        == 0
    )
    blocks = json.loads((tmp_path / "r.json").read_text())
    assert [block["pooling"] for block in blocks] == ["mean:-2,-1"]
    assert set(blocks[0]["scores"]) == {"STSb", "SICK-R"} and blocks[0]["scores"]["STSb"]["n_pairs"] == 1500
    assert blocks[0]["model"] == tiny_model_dir and blocks[0]["setting"] and blocks[0]["summary"].startswith("STSb ")
    capsys.readouterr()
    assert cli_main(["evaluate", *common, "--dtype", "fp32", "--format", "csv"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    rows = frame[frame.subset == "all"].set_index("dataset")
    assert rows.loc["STSb", "spearman"] == pytest.approx(blocks[0]["scores"]["STSb"]["spearman"], abs=1e-9)
    assert rows.loc["SICK-R", "n_pairs"] == 500 and (frame.model == tiny_model_dir).all()


def test_a_task_without_a_dev_split_is_refused_in_one_line(real_data_dir, capsys):
    status = cli_main(["evaluate", STAND_IN_MODEL, "--tasks", "STS12", "--split", "dev", "--data", str(real_data_dir)])
    assert status == 2 and capsys.readouterr().err.strip().count("\n") == 0
