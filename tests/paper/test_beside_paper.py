"""Your model beside the paper without the workflow: ``consert evaluate MODEL --beside-paper`` sets the model's 7
sets and Avg among the published rows of Tables 2 and 3, by Avg, the published values as printed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from consert.cli import main as cli_main
from consert.data.senteval import DATASETS
from consert.paper.beside import PUBLISHED, beside_paper

TABLE2 = pd.read_csv(PUBLISHED / "consert_table2_unsup.csv")
TABLE3 = pd.read_csv(PUBLISHED / "consert_table3_sup.csv")


def _evaluation(avg_all: float, avg_wmean: float, pooling: str = "mean:-2,-1") -> pd.DataFrame:
    """An evaluation frame as ``consert evaluate`` writes it: the "all" row of each set and the Avg, the merged
    Spearman and SentEval's weighted mean, with the Avg's bootstrap interval."""
    rows = [
        {"dataset": name, "subset": "all", "spearman": 60.0 + i, "spearman_wmean": 61.0 + i}
        for i, name in enumerate(DATASETS)
    ]
    rows.append({"dataset": "Avg", "subset": "all", "spearman": avg_all, "spearman_wmean": avg_wmean})
    frame = pd.DataFrame(rows).assign(
        spearman_ci_low=np.nan, spearman_ci_high=np.nan, spearman_wmean_ci_low=np.nan, spearman_wmean_ci_high=np.nan
    )
    frame.loc[frame.dataset == "Avg", ["spearman_ci_low", "spearman_ci_high"]] = [avg_all - 1, avg_all + 1]
    frame.loc[frame.dataset == "Avg", ["spearman_wmean_ci_low", "spearman_wmean_ci_high"]] = [avg_wmean - 2, avg_wmean]
    return frame.assign(pooling=pooling, model="my-model", setting="paper setting")


def test_the_model_ranks_among_the_published_rows_by_avg_under_each_aggregate_they_use():
    """74.50 (all) lands between SBERT-base-NLI's re-implementation (74.24) and SBERT-base-NLI (74.89) of Table 3;
    70.00 (wmean) between BERT-large-flow (70.76) and BERT-base-flow (69.57) of Table 2; every published row is
    there with the paper's numbers, its source and its aggregate; the four CT rows without STS-B and SICK-R last."""
    table = beside_paper(_evaluation(74.5, 70.0), PUBLISHED)
    published = table[table.kind == "published"]
    assert len(published) == len(TABLE2) + len(TABLE3) == 27  # 11 rows of Table 2, 16 of Table 3
    order = list(table.row)
    yours_all = order.index("my-model (mean:-2,-1)")  # the first of yours is the higher (all, 74.50)
    assert table.loc[yours_all, "aggregate"] == "all" and table.loc[yours_all, "Avg"] == 74.5
    assert order[yours_all - 1] == "SBERT-base-NLI | nli" and order[yours_all + 1] == "SBERT-base-NLI (re-impl.) | nli"
    yours_wmean = table.index[(table.kind == "yours") & (table["aggregate"] == "wmean")][0]
    assert table.loc[yours_wmean, "Avg"] == 70.0 and table.loc[yours_wmean, "STS12"] == 61.0
    assert order[yours_wmean - 1] == "BERT-large-flow" and order[yours_wmean + 1] == "BERT-base-flow"
    assert table.loc[yours_wmean, ["Avg_ci_low", "Avg_ci_high"]].tolist() == [68.0, 70.0]
    assert list(table["rank"]) == list(range(1, 30))
    assert table.Avg.iloc[:-4].is_monotonic_decreasing and table.Avg.iloc[-4:].isna().all()
    assert sorted(table.row.iloc[-4:]) == ["BERT-base-CT", "BERT-base-CT | nli", "BERT-large-CT", "BERT-large-CT | nli"]
    consert = published.set_index("row").loc["ConSERT-base"]
    paper = TABLE2.set_index("method").loc["ConSERT-base", [*DATASETS, "Avg"]]
    assert consert[[*DATASETS, "Avg"]].tolist() == paper.tolist()
    assert consert.source == "reimplemented" and consert["aggregate"] == "all"
    assert published.set_index("row").loc["BERT-base-flow", "aggregate"] == "wmean"  # aggregates.csv: Li et al.'s wmean
    assert published.set_index("row").loc["CLEAR-base", "aggregate"] == "unknown"  # no record: not invented


def test_the_command_prints_writes_and_refuses_before_any_work(tiny_model_dir, tmp_path, capsys):
    """On a generated SentEval tree and a tiny random BERT: the printed table marks yours and says the published
    values are set beside, not compared; CSV and JSON hold the same rows; a split, task subset or format that is
    not the paper's table is refused in one line before the model loads."""
    from tests.fixtures import write_senteval_tree

    data = str(write_senteval_tree(tmp_path / "senteval") / "downstream")
    common = [tiny_model_dir, "--data", data, "--beside-paper"]
    assert cli_main(["evaluate", *common]) == 0
    printed = capsys.readouterr().out
    assert "<- yours" in printed and "not compared as a reproduction" in printed
    assert cli_main(["evaluate", *common, "--format", "csv", "--output", str(tmp_path / "beside.csv")]) == 0
    table = pd.read_csv(tmp_path / "beside.csv")
    assert (table.kind == "yours").sum() == 2 and (table.kind == "published").sum() == 27
    assert cli_main(["evaluate", *common, "--format", "json", "--output", str(tmp_path / "beside.json")]) == 0
    records = json.loads(Path(tmp_path / "beside.json").read_text())
    assert [r["row"] for r in records] == list(table.row)
    capsys.readouterr()
    for extra, says in (
        (["--split", "dev"], "drop --split dev"),
        (["--tasks", "STSb"], "drop --tasks STSb"),
        (["--format", "mteb"], "drop --format mteb"),
        (["--published", str(tmp_path)], f"--published {tmp_path}: "),
    ):
        with pytest.raises(SystemExit) as stopped:
            cli_main(["evaluate", *common, *extra])
        assert stopped.value.code == 2
        error = capsys.readouterr().err
        assert says in error and "Loading" not in error
