"""The whole Snakemake DAG, end to end, with the CI config on a tiny generated SentEval tree."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from consert.cli import main as cli_main
from consert.configs import read_yaml
from consert.data.inputs import find_wordnet
from consert.data.senteval import DATASETS
from consert.paper.summary import primary_summary
from consert.planner import paths
from tests.conftest import PUBLISHED, ROOT
from tests.fixtures import write_senteval_tree
from tests.workflow.dag import job_counts, snakemake, snakemake_command

ARTIFACTS = [
    "table1_datasets",
    "table2_unsup",
    "table3_sup",
    "table4_batch_size",
    "table_contrastive_family",
    "figure1_scatter",
    "figure4_topk",
    "figure5_heatmap",
    "figure6_fewshot",
    "figure7_temperature",
    "comparison",
]
FIGURES = ["figure1_scatter", "figure4_topk", "figure5_heatmap", "figure6_fewshot", "figure7_temperature"]


YOUR_PAGE = ROOT / "docs" / "your-model.md"


@pytest.mark.slow
def test_a_model_of_yours_is_a_row_with_its_paired_differences_and_outside_every_verdict(dag_run, tmp_path):
    """The test config's model of yours (the stand-in under its own modules): a row of Table 2 labelled as yours,
    evaluated with its own modules; comparison.csv's rows of yours, its Avg and its paired difference from the
    ConSERT row of Table 2 over both its seeds, no verdict, not among the primary cells the headline counts; the
    summary's section and the forest's input hold them. A second model added to the finished run plans only the
    jobs the page names, as many as it says."""
    workdir, data = dag_run
    table = pd.read_csv(workdir / "results" / "table2_unsup.csv")
    row = table[table.method == "minilm-own (yours)"].iloc[0]
    assert row["size"] == "yours" and str(row.pooling).startswith("model (Transformer + Pooling")
    comparison = pd.read_csv(workdir / "results" / "comparison.csv")
    yours = comparison[comparison.status == "yours"]
    assert len(yours) == 2 and set(yours.role) == {"yours"} and yours.verdict.isna().all()
    own, paired = yours.iloc[0], yours.iloc[1]
    assert own.reproduced == pytest.approx(row.Avg, abs=1e-4) and pd.isna(own.delta)
    consert = table[table.method == "ConSERT-base"].iloc[0]
    assert paired.against == "ConSERT-base" and paired.n_seeds == consert.n_seeds == 2
    assert paired.delta == pytest.approx(row.Avg - consert.Avg, abs=2e-4)
    assert paired.diff_low <= paired.delta <= paired.diff_high
    assert "yours" not in set(comparison[comparison.role == "primary"].status)
    assert 'id="yours"' in (workdir / "results" / "summary.html").read_text()
    from consert.paper.figures import comparison_forest

    figure = comparison_forest(comparison, [tmp_path / "forest.png"])  # as the rule draws it, from comparison.csv
    labels = [label.get_text() for label in figure.axes[0].get_yticklabels()]
    assert "table2: minilm-own (yours) - ConSERT-base" in labels
    result = _run_page_command([*_page_command("yours=[", workdir), "--quiet", "rules"])  # as the page writes it
    jobs = job_counts(result.stdout)
    assert jobs == {"evaluate_yours": 1, "diagnostic_figure": 1, "paper_table": 1, "yours_paired": 1, "claims": 1,
                    "comparison": 1, "cost": 1, "comparison_forest": 1, "summary": 1, "all": 1}  # fmt: skip
    page = YOUR_PAGE.read_text()
    assert f"a second one plans {sum(jobs.values())} jobs" in page
    assert all(f"`{rule}`" in page for rule in jobs)


ROW_TARGET, ROW_SEEDS = "results/rows/table2/ConSERT-base.csv", "row_seeds={ConSERT-base: [1, 2, 3]}"


def _page_command(marker: str, workdir: Path) -> list[str]:
    """The "Your model beside the paper" page's snakemake command on the test config that holds ``marker``, as
    written (``<workdir>`` filled in), to run from the checkout in ``workdir``."""
    from tests.workflow.test_readme_commands import RUN_IN_THE_DAG_TESTS, _runnable

    (command,) = [c for c in RUN_IN_THE_DAG_TESTS if marker in c]
    return [sys.executable, "-m", *_runnable(command, workdir), "--directory", str(workdir)]


def _run_page_command(words: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(words, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    return result


@pytest.mark.slow
def test_one_row_in_a_finished_run_is_its_verdict_and_a_third_seed_plans_only_what_shows_it(dag_run):
    """Table 2's ConSERT row as a target of its own in the finished shared run: its verdict alone; a third seed for
    the row plans only the jobs that show it, as many as the page says."""
    workdir, data = dag_run
    page = YOUR_PAGE.read_text()
    finished = snakemake(workdir, ROW_TARGET, "-n", "--quiet", "rules", "--config", f"data_dir={data}")
    assert job_counts(finished.stdout) == {"published_row": 1} and "run, 1 job (the verdict" in page
    added = job_counts(snakemake(workdir, "-n", "--quiet", "rules", "--config", f"data_dir={data}", ROW_SEEDS).stdout)
    assert added["consert_train"] == 1 and added["paper_table"] == 2 and added["run_config"] == 1
    assert f"{sum(added.values())} jobs added to a finished run" in page


@pytest.mark.slow  # 40-60 s on 2 cores: the row's three training runs; the default suite keeps the dry runs above
def test_the_pages_row_with_a_third_seed_runs_only_its_jobs_and_ends_with_its_verdict(tmp_path):
    """The page's command for Table 2's ConSERT row with a third seed, run (not dry) in an empty folder: the jobs the
    page counts, and the row's verdict over its 3 seeds, labelled provisional; no table was built."""
    write_senteval_tree(tmp_path / "senteval", pairs_per_file=12)
    words = [w for w in _page_command(ROW_SEEDS, tmp_path) if w != "-n"]
    result = _run_page_command([*words, "--cores", "2", "--resources", "gpu=2"])
    output = result.stdout + result.stderr  # a run prints its job table where its log goes
    jobs = job_counts(output)
    assert jobs["consert_train"] + jobs["consert_train_keeping_vectors"] == 3 and jobs["published_row"] == 1
    assert f"plans {sum(jobs.values())} jobs for that row's target" in YOUR_PAGE.read_text()
    cells = pd.read_csv(tmp_path / ROW_TARGET)
    primary = cells[cells.role == "primary"].iloc[0]
    assert primary.row == "ConSERT-base" and primary.n_seeds == 3 and primary.verdict == "not comparable"
    assert cells.provisional.iloc[0].startswith("provisional: rows of ")
    assert f"table2 ConSERT-base Avg: not comparable: reproduced {primary.reproduced:.2f} over 3 seeds" in output
    assert not (tmp_path / "results" / "table2_unsup.csv").exists()  # no other row, no table ran


@pytest.mark.slow
def test_the_paper_layout_holds_the_comparisons_numbers(dag_run):
    """results/paper_tables.csv, read back against comparison.csv: every cell's ours, SD, published, difference,
    interval and verdict are the comparison's, and every published row of its tables is one row of it, a row not run
    (the test config trains no large model) with the paper's numbers (Table 2: ConSERT-large's Avg 76.45)."""
    from consert.verdict.layout import CELL_PARTS

    laid_out = ("table2", "whitening_table1", "sgopt_table1", "table3", "family")  # the tables of the 7 sets and Avg

    workdir, _ = dag_run
    comparison = pd.read_csv(workdir / "results" / "comparison.csv")
    layout = pd.read_csv(workdir / "results" / "paper_tables.csv")
    rows = comparison[comparison.artifact.isin(laid_out) & (comparison.status != "yours")]
    assert len(layout) == len(rows.groupby(["artifact", "row"])) > 20
    large = layout.set_index(["artifact", "row"]).loc[("table2", "ConSERT-large")]
    assert (large.status, large["Avg published"]) == ("not run", 76.45) and pd.isna(large["Avg ours"])
    cells = rows[rows.column.isin([*DATASETS, "Avg"])]
    by_row = layout.set_index(["artifact", "row"])
    for cell in cells.itertuples():
        for part, source in CELL_PARTS.items():
            ours, theirs = by_row.loc[(cell.artifact, cell.row), f"{cell.column} {part}"], getattr(cell, source)
            assert (pd.isna(ours) and pd.isna(theirs)) or ours == theirs, (cell.artifact, cell.row, part)


@pytest.mark.slow
def test_the_summary_captions_each_figure_with_a_link_to_its_numbers_and_quotes_no_excerpt(dag_run):
    """Each figure of the summary has its caption and a link to its CSV beside the page; no CSV excerpt stands in the
    page (a figure's data is linked, not shown)."""
    workdir, _ = dag_run
    page = (workdir / "results" / "summary.html").read_text()
    for stem in FIGURES:
        assert f'<a href="{stem}.csv">{stem}.csv</a>' in page and (workdir / "results" / f"{stem}.csv").is_file()
    assert "<figcaption>" in page and 'id="figure1_scatter"' not in page and "First 40 of" not in page


@pytest.mark.slow
def test_the_summary_prints_each_compared_table_as_the_paper_does(dag_run):
    """The summary of the test DAG, read as a structure: each table of paper_tables.csv is one section with one
    setting line, a (ours, paper) column pair per set, and in its cells the file's published numbers and ours; the
    rows of another setting apart from those not run; no setting, no CSV excerpt in any row (issue 81)."""
    from consert.paper.summary_tables import row_group
    from tests.summary_page import SummaryPage

    workdir, _ = dag_run
    page = SummaryPage((workdir / "results" / "summary.html").read_text())
    layout = pd.read_csv(workdir / "results" / "paper_tables.csv", keep_default_na=False, na_values=[""])
    settings = set(pd.read_csv(workdir / "results" / "comparison.csv").setting.dropna())
    assert set(layout.artifact) >= {"table2", "table3", "whitening_table1", "sgopt_table1", "family"}
    for artifact, rows in layout.groupby("artifact", sort=False):
        table_id = {"table2": "table2_unsup", "table3": "table3_sup", "family": "table_contrastive_family"}.get(
            artifact, artifact
        )
        assert len(page.settings[f"paper-{table_id}"]) == 1, artifact  # the setting said once, above the table
        table = page.tables[table_id]
        sets = [cell.text for cell in table.head[0][1:]]
        assert [cell.text for cell in table.head[1]] == ["ours ± SD", "paper"] * len(sets), artifact
        shown = {cells[0].text: (group, cells) for group, cells in table.body if cells[0].classes == "row"}
        for _, row in rows.iterrows():
            group, cells = shown[row.row]
            assert group == row_group(row).replace(" ", "-"), (artifact, row.row)
            for index, column in enumerate(sets):
                ours, paper = cells[1 + 2 * index].text, cells[2 + 2 * index].text
                published, value = row[f"{column} published"], row[f"{column} ours"]
                assert paper == ("" if pd.isna(published) else f"{published:.2f}"), (artifact, row.row, column)
                assert ours.split(" ")[0] == ("" if pd.isna(value) else f"{value:.2f}"), (artifact, row.row, column)
        assert {group for group, _ in table.body} >= {"other", "not-run"} or artifact == "family", artifact
        texts = [cell.text for _, cells in table.body for cell in cells]
        assert not any(setting in text for setting in settings for text in texts), artifact
    assert "First 40 of" not in (workdir / "results" / "summary.html").read_text()


@pytest.mark.slow
def test_every_consert_job_of_the_run_started_from_the_job_server(dag_run):
    """The test config asks for the job server: each of the run's `consert` jobs was forked from it (none declined
    for its environment, which snakemake sets per job). They are the jobs with a benchmark file, every one a
    `consert` command, and the two that have none (`consert table1`, `consert compare`)."""
    workdir, _ = dag_run
    stdout = (workdir / "snakemake.stdout").read_text()
    found = re.search(r"^job server: (\d+) jobs started from it, (\d+) declined", stdout, re.M)
    assert found, stdout[-3000:]
    benchmarked = len(list((workdir / paths.BENCHMARKS).rglob("*.tsv")))
    assert (int(found.group(1)), int(found.group(2))) == (benchmarked + 2, 0)


@pytest.mark.slow
def test_the_run_ends_with_its_verdict_counts_and_where_to_read_more(dag_run):
    """Snakemake's onsuccess: the last lines lead with the banner (nothing of the paper is comparable in the
    test setting), count the published rows by verdict as comparison.csv has them (not run and missing
    included), keep the stand-in's anchor apart, split the claims, and say where the summary and comparison
    are and how to build the report of this config. The summary page leads with the same banner."""
    workdir, _ = dag_run
    lines = [line for line in (workdir / "snakemake.stdout").read_text().splitlines() if line.strip()][-14:]
    comparison = pd.read_csv(workdir / "results" / "comparison.csv")
    counts = primary_summary(comparison)
    assert any(line.startswith("NOTHING OF THE PAPER IS COMPARABLE: 0 cells") for line in lines)
    rows = next(line for line in lines if line.startswith("Published rows of the paper: "))
    assert (
        f"0 reproduced, 0 not reproduced, 0 inconclusive in the paper's setting; {counts['not comparable']} "
        f"not comparable (run in another setting); {counts['not run']} not run (declared); 0 missing"
    ) in rows
    assert counts["not comparable"] > 0  # the stand-in: every primary cell compared is another setting
    claims = pd.read_csv(workdir / "results" / "claims.csv")
    not_run = (claims.verdict == "not run").sum()
    claim_line = next(line for line in lines if line.startswith("Claims of the paper on comparable rows: "))
    assert claim_line.endswith(f"{len(claims) - not_run} checked on rows of another setting (not comparable); "
                               f"{not_run} not run")  # fmt: skip
    assert lines[-1].startswith("Summary: results/summary.html") and "results/comparison.csv" in lines[-1]
    assert lines[-1].endswith(f"--configfile {ROOT / 'config' / 'test.yaml'} --report report.html")
    page = (workdir / "results" / "summary.html").read_text()
    assert 'id="banner">NOTHING OF THE PAPER IS COMPARABLE' in page
    assert len(page.encode()) * 4 / 3 < 1.8e6  # the report shows it through a data URL: Chromium's cap is 2 MB


@pytest.mark.slow
def test_no_figure_of_the_run_draws_text_over_text(dag_run, tmp_path):
    """Every figure the run drew, redrawn from its table as the workflow draws it: no title, tick label,
    legend entry or annotation lands on another (tests/paper/text_extents.py)."""
    from consert.paper import figures
    from consert.paper.catalogue import BY_KEY
    from consert.paper.marks import PublishedMarks
    from tests.paper.text_extents import overlapping_texts

    workdir, _ = dag_run
    results, marks = workdir / "results", PublishedMarks.load(ROOT / "results" / "published")
    drawn = {"figure1_scatter": "figure1", "figure4_topk": "figure4", "figure5_heatmap": "figure5",
             "figure6_fewshot": "figure6", "figure7_temperature": "figure7", "diagnostics": "diagnostics",
             "training_curves": "curves"}  # fmt: skip
    assert {path.stem for path in (workdir / "figures").glob("*.png")} == {*drawn, "comparison_forest"}
    for stem, key in drawn.items():
        table = pd.read_csv(results / f"{stem}.csv", keep_default_na=False, na_values=[""])
        figure = BY_KEY[key].draw(table, [tmp_path / f"{stem}.png"], marks, stamp=_stamp_of(workdir, stem))
        assert overlapping_texts(figure) == [], stem
    comparison = pd.read_csv(results / "comparison.csv", keep_default_na=False, na_values=[""])
    forest = figures.comparison_forest(
        comparison, [tmp_path / "forest.png"], stamp=_stamp_of(workdir, "comparison_forest")
    )
    assert overlapping_texts(forest) == []


def _stamp_of(workdir: Path, stem: str) -> str:
    """The stamp the run wrote into a figure's PNG (its ``Description``)."""
    from PIL import Image

    return Image.open(workdir / "figures" / f"{stem}.png").info["Description"]


@pytest.mark.slow
def test_every_figure_names_when_where_and_by_which_commit_its_numbers_were_computed(dag_run):
    """Each figure's stamp, as the run wrote it into the PNG and the PDF: the day, hardware and commit its result
    files record (every one records them: evaluations, top-k curves, pair predictions, training curves), and
    when it was drawn by which commit."""
    workdir, _ = dag_run
    files = [*(workdir / "results" / "evals").rglob("*.csv"), *(workdir / "results" / "curves").glob("*.csv")]
    made = pd.concat([pd.read_csv(path, dtype=str).assign(file=str(path)) for path in files], ignore_index=True)
    assert made.groupby("file")[["hardware", "harness_commit", "timestamp"]].count().min().min() > 0
    days, machines = set(made.timestamp.str[:10]), set(made.hardware)
    commit = made.harness_commit.iloc[0]
    assert set(made.harness_commit) == {commit}
    stems = {path.stem for path in (workdir / "figures").glob("*.png")}
    assert len(stems) == 8
    for stem in stems:
        lines = _stamp_of(workdir, stem).replace("\n    ", " ").splitlines()
        assert len(lines) == 2, (stem, lines)  # no input file without a record
        computed = re.fullmatch(r"numbers computed (\S+)(?: to (\S+))? by harness (\S+) on (.+)", lines[0])
        assert computed and {d for d in computed.group(1, 2) if d} <= days, (stem, lines[0])
        assert computed.group(3) == commit[:12] + ("-dirty" if commit.endswith("-dirty") else "")
        assert set(computed.group(4).split(" + ")) <= machines, (stem, lines[0])
        assert re.fullmatch(r"drawn \d{4}-\d\d-\d\d \d\d:\d\d UTC by harness \S+", lines[1]), (stem, lines[1])
        assert b"/Subject (numbers computed " in (workdir / "figures" / f"{stem}.pdf").read_bytes(), stem


@pytest.mark.slow
def test_every_trained_run_keeps_its_curve_and_the_curves_figure_draws_each(dag_run):
    workdir, _ = dag_run
    trained = {p.stem for p in (workdir / "results" / "evals" / "consert").glob("*.csv")}
    trained |= {p.stem for p in (workdir / "results" / "evals" / "sgopt").glob("*.csv")}
    trained |= {"base-bertflow-nli-seed1", "base-bertflow-nli-seed2"}  # BERT-flow (NLI)'s encoders, not evaluated alone
    curves = {p.stem for p in (workdir / "results" / "curves").glob("*.csv")}
    assert curves == trained
    for path in (workdir / "results" / "curves").glob("*.csv"):
        curve = pd.read_csv(path)
        assert curve.selected.sum() == 1 and curve.dev_spearman.notna().any() and curve.loss.notna().any(), path
    table = pd.read_csv(workdir / "results" / "training_curves.csv")
    assert set(table.run) == curves and {"Table 2", "Table 3", "SG-OPT", "Figure 7"} <= set(table.group)
    assert (workdir / "figures" / "training_curves.png").stat().st_size > 1000


@pytest.mark.slow
def test_every_trained_run_has_its_resolved_config_and_two_sweep_points_differ_in_their_key(dag_run):
    """runs/<run>/train.yaml: every key the run trained with; a reviewer diffs two runs' files."""
    from consert.train.config import load_train_config

    workdir, _ = dag_run
    configs = {path.parent.name: read_yaml(path) for path in (workdir / "runs").glob("*/train.yaml")}
    assert set(configs) == {path.stem for path in (workdir / "results" / "curves").glob("*.csv")}

    def differing(a: str, b: str) -> set[str]:  # the folder each run is written to is named after it
        return {key for key in configs[a] if configs[a][key] != configs[b][key]} - {"output_dir"}

    assert differing("base-unsup-seed1", "base-unsup-tau0.5-seed1") == {"temperature"}
    assert differing("base-unsup-seed1", "base-unsup-bs4-seed1") == {"batch_size"}
    assert differing("base-unsup-seed1", "base-unsup-seed2") == {"seed"}
    assert differing("base-unsup-seed1", "base-unsup-none+shuffle-seed1") == {"views"}
    assert load_train_config(workdir / "runs" / "base-unsup-tau0.5-seed1" / "train.yaml").temperature == 0.5
    assert configs["sgopt-base-seed1"]["projection_dim"] == 64 and configs["sgopt-base-seed1"]["seed"] == 1
    recipe = pd.read_csv(workdir / "results" / "recipe.csv")
    assert set(recipe.run) >= {run for run in configs if not run.startswith("sgopt-")}


@pytest.mark.slow
def test_diagnostics_set_every_model_beside_untrained_berts_anisotropy(dag_run):
    """BERT's anisotropy on the stand-in is reported and each trained run is compared with it."""
    workdir, _ = dag_run
    table = pd.read_csv(workdir / "results" / "diagnostics.csv")
    average = table[table.dataset == "Avg"].set_index("method")
    bert = average.loc["BERT-base (mean:-2,-1)"]
    assert 0 < bert.anisotropy < 1 and bert.anisotropy_minus_bert == 0
    consert = average.loc["ConSERT-base"]
    assert consert.bert_anisotropy == bert.anisotropy and consert.n_seeds == 2
    assert consert.anisotropy_minus_bert == pytest.approx(consert.anisotropy - bert.anisotropy)
    trained = table[table.method.str.startswith("ConSERT-base ")]  # Table 3's and the sweeps' runs
    assert len(trained) and trained.bert_anisotropy.notna().all()
    assert {"Avg. GloVe embeddings", "BERT-base-flow", "BERT-base-SG-OPT", "SimCSE-base"} <= set(average.index)
    assert (workdir / "figures" / "diagnostics.png").stat().st_size > 1000


@pytest.mark.slow
def test_cost_sums_every_benchmark_under_each_artifact_and_names_the_hardware(dag_run):
    workdir, _ = dag_run
    cost = pd.read_csv(workdir / "results" / "cost.csv").set_index("artifact")
    assert (cost.missing_benchmarks == 0).all(), cost
    assert (cost.wall_s > 0).all() and cost.hardware.str.contains("threads").all()
    benchmarks = list((workdir / "benchmarks").rglob("*.tsv"))
    assert cost.loc["all", "jobs"] == len(benchmarks)  # every job once
    total = sum(pd.read_csv(p, sep="\t")["s"].sum() for p in benchmarks)
    assert cost.loc["all", "wall_s"] == pytest.approx(total, abs=0.1 * len(benchmarks))
    # Table 4's runs are the sweep's 2 batch sizes x the sweeps' one seed (the tables' second seed is not
    # theirs); Figure 1 needs the encoding and the Table 2 run
    assert cost.loc["table4_batch_size", "jobs"] == 2
    assert cost.loc["figure1_scatter", "jobs"] == 4  # 2 predictions, BERT's encoding, the Table 2 run


@pytest.mark.slow
def test_every_artifact_is_produced_and_labelled(dag_run):
    workdir, _ = dag_run
    for name in ARTIFACTS:
        frame = pd.read_csv(workdir / "results" / f"{name}.csv")
        assert len(frame), name
        if name not in ("table1_datasets", "comparison"):
            assert frame.setting.astype(str).str.contains("offline stand-in").all(), name
    for name in FIGURES:  # real images: a PNG and a PDF file by their signatures, with content
        png, pdf = ((workdir / "figures" / f"{name}.{ext}").read_bytes() for ext in ("png", "pdf"))
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000, name
        assert pdf[:5] == b"%PDF-" and b"%%EOF" in pdf[-64:], name


@pytest.mark.slow
def test_the_recipe_card_lists_every_trained_run_with_nothing_unexplained(dag_run):
    workdir, _ = dag_run
    card = pd.read_csv(workdir / "results" / "recipe.csv", keep_default_na=False)
    assert not card.differs_from_authors.str.contains("UNEXPLAINED").any()
    baselines = card[card.run.str.startswith(("baseline-", "analysis-"))]
    assert {"BERT-flow", "BERT-whitening", "SG-OPT", "Avg. GloVe", "Figure 4 top-k"} == set(baselines["mode"])
    card = card.drop(baselines.index)
    trained = {path.stem for path in (workdir / "results" / "evals" / "consert").glob("*.csv")}
    assert set(card.run) == trained
    family = card["mode"].isin(["simcse", "augcse"])
    assert set(card[~family].optimizer) == {"AdamW (no bias correction)"}  # ConSERT's transformers.AdamW
    assert set(card[family].optimizer) == {"AdamW"}  # the HF Trainer's, with bias correction


@pytest.mark.slow
def test_exported_models_are_deleted_once_read_and_kept_vectors_stay(dag_run):
    """keep_models: false (the test config): no model folder outlives the rules that read it."""
    workdir, _ = dag_run
    assert not list((workdir / "runs").glob("*/model")), "exported models left behind"
    kept = {path.parent.name for path in (workdir / "runs").glob("*/vectors.npz")}
    assert kept == {"base-unsup-seed1", "base-bertflow-nli-seed1", "base-bertflow-nli-seed2"}  # flow (NLI) reuses
    evaluation = pd.read_csv(workdir / "results" / "evals" / "consert" / "base-unsup-seed1.csv")
    assert set(evaluation.engine) <= {"torch", "onnxruntime"} and evaluation.hardware.str.contains("threads").all()


@pytest.mark.slow
def test_tables_have_seed_statistics_and_expected_rows(dag_run):
    workdir, _ = dag_run
    table2 = pd.read_csv(workdir / "results" / "table2_unsup.csv")
    consert = table2[table2.method == "ConSERT-base"].iloc[0]
    assert consert.n_seeds == 2 and consert.seeds == "1;2" and consert.Avg_std >= 0
    assert {
        "Avg. GloVe embeddings",
        "BERT-base (mean:-2,-1)",
        "BERT-base-flow",
        "BERT-base-SG-OPT",
        "BERT-base-whitening (mean:1,-1)",
        "BERT-base-whitening-16 (mean:1,-1)",
        "BERT-base-whitening (mean:-2,-1)",
    } <= set(table2.method)
    # SentEval's aggregates ride along for the comparison with BERT-flow's/whitening's wmean numbers
    assert table2[["STS12_wmean", "STS12_mean", "Avg_wmean"]].notna().all().all()
    table3 = pd.read_csv(workdir / "results" / "table3_sup.csv")
    assert {"sup", "joint", "sup-unsup", "joint-unsup", "flow on li"} <= set(table3["mode"])
    assert table3.nli.astype(str).str.contains("sick-e").any()
    heat = pd.read_csv(workdir / "results" / "figure5_heatmap.csv")
    assert len(heat) == 4 and set(heat.view1) == {"none", "shuffle"}
    assert (heat.trained_as == heat.view1 + "+" + heat.view2).all()  # the test config trains ordered pairs
    table4 = pd.read_csv(workdir / "results" / "table4_batch_size.csv")
    assert sorted(table4.batch_size) == [4, 8] and table4.best_step.notna().all()
    fewshot = pd.read_csv(workdir / "results" / "figure6_fewshot.csv")
    assert set(fewshot.n_texts.astype(str)) == {"4", "all"} and set(fewshot["mode"]) == {"unsup", "joint-unsup"}


@pytest.mark.slow
def test_the_contrastive_family_table_has_every_method_over_seeds(dag_run):
    workdir, _ = dag_run
    family = pd.read_csv(workdir / "results" / "table_contrastive_family.csv")
    assert set(family.method) == {"BERT-base (cls)", "ConSERT-base", "SimCSE-base", "AugCSE-base"}
    trained = family[family.method != "BERT-base (cls)"].set_index("method")
    assert (trained.n_seeds == 2).all()
    for method in ("SimCSE-base", "AugCSE-base"):  # runs of their own, not the ConSERT run again
        assert trained.loc[method, "Avg"] != trained.loc["ConSERT-base", "Avg"], method
    consert = pd.read_csv(workdir / "results" / "table2_unsup.csv").set_index("method").loc["ConSERT-base"]
    assert family.set_index("method").loc["ConSERT-base", "Avg"] == pytest.approx(consert.Avg)  # the same runs
    augcse = pd.read_csv(workdir / "results" / "evals" / "consert" / "base-augcse-seed1.csv")
    rates = dict(item.split("=") for item in augcse.augmentation_rates.iloc[0].split(";"))
    assert set(rates) == {
        "contraction_expansions",
        "auxiliary_negation_removal",
        "discourse_marker_substitution",
        "random_swap",
        "sentence_reordering",
    }
    assert float(rates["random_swap"]) > 0.5  # swaps apply to any text of two tokens or more
    comparison = pd.read_csv(workdir / "results" / "comparison.csv")
    simcse = comparison[(comparison.artifact == "family") & (comparison.row == "SimCSE-BERT-base")]
    assert simcse.set_index("column").loc["Avg", "published"] == 76.25  # SimCSE Table 5
    augcse_row = comparison[(comparison.artifact == "family") & (comparison.row == "AugCSE-BERT-base")]
    assert augcse_row.status.tolist() == ["no published value"]


@pytest.mark.slow
def test_comparison_marks_the_stand_in_not_comparable(dag_run):
    workdir, _ = dag_run
    comparison = pd.read_csv(workdir / "results" / "comparison.csv")
    compared = comparison[comparison.status == "compared"]
    assert len(compared) > 0 and not comparison.comparable.any()
    paper = compared[compared.artifact != "stand_in_mteb"]
    assert paper.reason.str.contains("offline stand-in").all()
    # the test config pools no plain mean, so nothing is checked against the stand-in's MTEB scores
    assert compared[compared.artifact == "stand_in_mteb"].empty
    # what the trimmed test config does not reproduce is listed as declared, nothing is missing
    # AugCSE: not found; the test config lets its stand-in-only run pass the gate, and the CSV says so
    assert set(comparison.status) == {"compared", "not run", "no published value", "stand-in allowed", "yours"}
    assert "table4" in set(comparison[comparison.status == "not run"].artifact)
    # every compared cell states what decided it: untrained rows 0.035, trained ones the seed SD pooled
    # over their kind (the test config runs seeds 1 and 2) and a declared margin with its reason
    bert = compared[compared.row == "BERT-base"]
    assert (bert.margin == 0.035).all() and bert.margin_source.str.startswith("untrained").all()
    assert (bert.diff_low == bert.delta).all()
    consert = compared[compared.row == "ConSERT-base"].set_index("column")
    assert consert.sigma_source.str.startswith("pooled over").all() and (consert.sigma_df >= 1).all()
    assert consert.loc["Avg", "role"] == "primary" and consert.loc["Avg", "margin"] == 1.0


@pytest.mark.slow
def test_the_published_number_gate_runs_on_the_dag_output(dag_run, capsys):
    workdir, data = dag_run
    result = snakemake(workdir, "check_published", "--config", f"data_dir={data}")
    log = (workdir / "logs" / "check_published.log").read_text()
    assert result.returncode == 0 and "cells compared" in log and "declared not run" in log
    assert "STAND-IN ALLOWED" in log  # the config's gate.allow_stand_in, visibly
    # the CLI on its own reads the design the workflow wrote beside the results, its allowance included
    published, output = str(ROOT / "results" / "published"), str(workdir / "logs" / "strict.csv")
    argv = ["compare", "--results", str(workdir / "results"), "--published", published, "--output", output]
    assert cli_main([*argv, "--check"]) == 0 and "STAND-IN ALLOWED" in capsys.readouterr().out
    # the same design without the allowance: nothing is comparable, and the gate says so with exit 3
    design = read_yaml(workdir / "results" / "comparison_config.yaml")
    strict = workdir / "logs" / "strict_design.yaml"
    strict.write_text(yaml.safe_dump({**design, "allow_stand_in": False}))
    assert cli_main([*argv, "--config", str(strict), "--check"]) == 3
    assert "nothing to gate on" in capsys.readouterr().err


@pytest.mark.slow
def test_second_run_has_nothing_to_do(dag_run):
    workdir, data = dag_run
    result = snakemake(workdir, "--config", f"data_dir={data}", "-n")
    assert "Nothing to be done" in result.stdout + result.stderr


def _wait_for(predicate, process: subprocess.Popen, timeout: float = 600) -> None:
    start = time.time()
    while not predicate():
        if process.poll() is not None:
            raise AssertionError("snakemake ended before the awaited job started")
        if time.time() - start > timeout:
            raise AssertionError("timed out waiting for a job to start")
        time.sleep(0.2)


#: The targets of the end-to-end runs after the whole DAG's (resumed after kills, on SLURM): Table 2's part of the
#: DAG and a two-stage run, 23 of its 88 jobs: ConSERT's one- and two-stage training (the stage-1 model a temp folder
#: the second job reads), SG-OPT's, the corpus encoding, the whitening, flow, pooling and GloVe evaluations and the
#: table, at about a third of the whole's time. Not among them: BERT-flow on NLI runs, top-k, predictions, figures.
SUB_DAG = ("results/table2_unsup.csv", paths.consert_eval("base-sup-unsup-seed1"))
#: Table 2's ConSERT runs, scheduled first in the resumed test's first run: both of its slots train when it is
#: killed, so that its second run has every evaluation still to do.
TABLE2_TRAINING = (paths.consert_eval("base-unsup-seed1"), paths.consert_eval("base-unsup-seed2"))


def _interrupt_when(workdir: Path, data: Path, running, *options: str) -> None:
    """Start the DAG up to :data:`SUB_DAG` (with snakemake ``options``), send SIGTERM to its process group once
    ``running(workdir, started)`` is true, wait. ``started``: when this run began (a log written before it is a
    killed run's)."""
    started = time.time()
    command, env = snakemake_command(workdir, *SUB_DAG, *options, "--config", f"data_dir={data}")
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        _wait_for(lambda: running(workdir, started), process)
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)


def _assert_sub_dag_equal(workdir: Path, reference: Path) -> None:
    """:data:`SUB_DAG`'s results in ``workdir`` equal the whole DAG's run (same seeds, one thread per job): the table
    byte for byte, the two-stage run's correlations (its CSV's provenance columns differ)."""
    table, two_stage = SUB_DAG
    assert (workdir / table).read_text() == (reference / table).read_text()
    columns = ["dataset", "subset", "spearman", "pearson"]
    pd.testing.assert_frame_equal(
        pd.read_csv(workdir / two_stage)[columns], pd.read_csv(reference / two_stage)[columns]
    )


def _started_unfinished(logs: Path, pattern: str, outputs: Path, since: float) -> bool:
    """A job whose log (``logs``/``pattern``) was opened since ``since`` and whose CSV (in ``outputs``) is not there."""
    return logs.is_dir() and any(
        log.stat().st_mtime >= since and not (outputs / f"{log.stem}.csv").exists() for log in logs.glob(pattern)
    )


def _training_running(workdir: Path, since: float) -> bool:
    return _started_unfinished(workdir / "logs" / "consert", "*.log", workdir / "results" / "evals" / "consert", since)


def _evaluation_running(workdir: Path, since: float) -> bool:
    return _started_unfinished(
        workdir / "logs" / "baselines" / "base",
        "whitening-*.log",
        workdir / "results" / "evals" / "baselines" / "base",
        since,
    )


@pytest.mark.slow
def test_interrupted_runs_resume_and_match_an_uninterrupted_run(dag_run, tmp_path):
    reference, _ = dag_run
    data = write_senteval_tree(tmp_path / "senteval", pairs_per_file=12)
    results = tmp_path / "results"

    def outputs() -> dict[Path, int]:
        """Every result CSV and corpus cache the run has written (declared outputs), with its modification time."""
        written = [*results.rglob("*.csv"), *(results / "cache").glob("*.npz")]
        return {path: path.stat().st_mtime_ns for path in written}

    def unchanged(finished: dict[Path, int]) -> None:  # finished jobs were not redone
        for path, mtime in finished.items():
            assert path.stat().st_mtime_ns == mtime, path

    _interrupt_when(tmp_path, data, _training_running, "--prioritize", *TABLE2_TRAINING)
    finished = outputs()
    # nothing half-written: no partial model folders or CSVs left in place of outputs
    assert not list((tmp_path / "runs").glob("*/.model.*")) and not list(results.rglob("*.tmp"))
    _interrupt_when(tmp_path, data, _evaluation_running)
    unchanged(finished)
    finished = outputs()
    assert results / "cache" / "base.npz" in finished  # what the killed whitening job read
    snakemake(tmp_path, *SUB_DAG, "--config", f"data_dir={data}")
    unchanged(finished)
    _assert_sub_dag_equal(tmp_path, reference)


#: Layered over the paper's config: AugCSE's augmentations that need no spaCy parser (none installs offline, and a
#: missing one stops the paper config's DAG before any job), as the rehearsal runs them.
WITHOUT_PARSER = """
family:
  augcse:
    augcse:
      spacy_model: null
      text_augmentations: [contraction_expansions, auxiliary_negation_removal, discourse_marker_substitution,
                           random_swap, sentence_reordering]
"""


def _without_parser(folder: Path) -> str:
    """:data:`WITHOUT_PARSER` as a config file in ``folder``."""
    path = folder / "without-parser.yaml"
    path.write_text(WITHOUT_PARSER)
    return str(path)


def _snakemake_in_root(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env or {}), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


#: The paper's config, named as the default profile names it: for runs in a folder of their own (``--directory``), where
#: the profile's relative path would not reach it.
PAPER_CONFIG = ("--configfile", str(ROOT / "config" / "config.yaml"))


def test_a_bad_config_key_costs_the_user_at_most_three_lines(tmp_path):
    """`snakemake -n --config foo=1` once printed the schema and the whole config (771 lines)."""
    for override, cause in (("foo=1", "unknown key `foo`"), ("train={lr: abc}", "lr: expected a number, got 'abc'")):
        result = _snakemake_in_root("-n", "--directory", str(tmp_path), *PAPER_CONFIG, "--config", override)
        lines = (result.stdout + result.stderr).strip().splitlines()
        assert result.returncode != 0 and len(lines) <= 3 and cause in lines[-1], lines


def _job_count(workdir: Path, *configfiles: str, env: dict[str, str] | None = None) -> int:
    """The jobs `snakemake -n` plans in ``workdir`` (its own folder: a checkout where the README's main job has run
    has nothing left to do)."""
    result = _snakemake_in_root("-n", "--directory", str(workdir), "--configfile", *configfiles, env=env)
    found = re.search(r"^total\s+(\d+)$", result.stdout, re.MULTILINE)
    assert found, (result.stdout + result.stderr)[-3000:]
    return int(found.group(1))


@pytest.mark.slow
def test_the_job_counts_the_docs_state_are_the_dry_runs(tmp_path, real_data_dir):
    """The docs name the offline DAG's and the rehearsal's job counts; each is what `snakemake -n` counts now, in a
    fresh folder (the rehearsal's with its generated NLI, wiki1m and GloVe files and its tiny BERTs in the hub's
    cache under the paper's ids: nothing to download)."""
    from tests.rehearsal import data_files, hub_cache

    workflow_page = (ROOT / "docs" / "workflow.md").read_text()
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    (offline,) = re.findall(r"The offline config's DAG is \*\*(\d+) jobs\*\*", workflow_page)
    (rehearsal,) = re.findall(r"the rehearsal runs the paper config's (\d+) jobs", architecture)
    assert int(offline) == _job_count(tmp_path / "offline", "config/offline.yaml")
    data_files(tmp_path / "rehearsal", real_data_dir)
    cached = {"HF_HUB_CACHE": str(hub_cache(tmp_path / "rehearsal"))}
    configs = ("config/config.yaml", "config/rehearsal.yaml")
    assert int(rehearsal) == _job_count(tmp_path / "rehearsal", *configs, env=cached)
    measured = re.findall(r"`snakemake --configfile config/offline.yaml` \| (\d+) \|", workflow_page)
    assert measured and set(measured) == {offline}  # every timing in the table is of today's DAG


def _dry_run_jobs(workdir: Path, *configfiles: str) -> list[dict]:
    """Each job `snakemake -n` plans in ``workdir``: its rule, wildcards, inputs, outputs, whether it has a
    benchmark file (the jobs that compute) and its priority."""
    result = _snakemake_in_root("-n", "--directory", str(workdir), "--configfile", *configfiles)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", result.stdout):
        rule = re.match(r"(?:local)?rule (\w+):", block)
        if rule is None:
            continue
        field = {key: value.strip() for key, value in re.findall(r"^ {4}(\w+): (.*)$", block, re.MULTILINE)}
        items = {key: [item.strip() for item in field.get(key, "").split(",") if item.strip()] for key in field}
        jobs.append(
            {
                "job": (rule.group(1), field.get("wildcards", "")),
                "input": items.get("input", []),
                "output": items.get("output", []),
                "computes": "benchmark" in field,
                "priority": int(field.get("priority", 0)),
            }
        )
    return jobs


@pytest.mark.slow
def test_the_jobs_other_computing_jobs_wait_for_start_first(tmp_path):
    """On two cores the README's main job once trained a first stage late, and the second stage then ran alone at
    the end. Every computing job (one with a `benchmark:` file) whose output another computing job reads has the
    higher priority, and no other job has it: worked out here from the dry run's own inputs and outputs."""
    jobs = _dry_run_jobs(tmp_path, "config/offline.yaml")
    computing = [job for job in jobs if job["computes"]]
    read = {path for job in computing for path in job["input"]}
    waited_for = {
        job["job"]
        for job in computing
        if any(path == output or path.startswith(output.rstrip("/") + "/") for output in job["output"] for path in read)
    }
    prioritised = {job["job"] for job in jobs if job["priority"] > 0}
    # the corpus encoding, both first stages (joint, sup) and both runs whose vectors are kept (the NLI run for
    # BERT-flow, the Table 2 run for the top-k curve): the offline config's five
    assert len(waited_for) == 5 and ("encode_corpus", "size=base") in waited_for
    assert prioritised == waited_for


def test_lint_is_clean(tmp_path):
    result = _snakemake_in_root("--lint", "--directory", str(tmp_path), *PAPER_CONFIG)
    assert "Congratulations, your workflow is in a good condition!" in result.stdout + result.stderr


def _mermaid_edges(text: str, names: dict[str, str] | None = None) -> set[tuple[str, str]]:
    edges = re.findall(r"^\s*(\w+) --> (\w+)\s*$", text, re.M)
    return {(names.get(a, a), names.get(b, b)) if names else (a, b) for a, b in edges}


@pytest.mark.slow
def test_the_documented_rule_graph_is_the_workflows(tmp_path):
    # the Architecture page's picture, edge for edge, against what snakemake derives from the rules
    # in an empty folder with an empty hub cache: the inputs beyond the STS sets and the models are missing, so the
    # download rules are in it
    configs = ("--configfile", "config/config.yaml", _without_parser(tmp_path))
    empty = {"HF_HUB_CACHE": str(tmp_path / "empty-hub-cache")}
    result = _snakemake_in_root("--rulegraph", "mermaid-js", "--directory", str(tmp_path), *configs, env=empty)
    assert result.returncode == 0, result.stderr[-3000:]
    names = dict(re.findall(r"^\s*(id\d+)\[(\w+)\]", result.stdout, re.M))
    workflow = _mermaid_edges(result.stdout, names)
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    picture = architecture.split("```mermaid", 1)[1].split("```", 1)[0]
    assert len(workflow) > 20 and _mermaid_edges(picture) == workflow
    drawn = set(re.findall(r"^\s{8}(\w+)$", picture, re.M)) | {"all"}
    assert drawn == set(names.values())


def test_paper_dry_run_lists_every_job_offline(tmp_path):
    # the paper's config via the workflow profile; an empty working directory, so that outputs
    # already in the checkout (from a user's own run) do not change the job counts
    configs = ("--configfile", "config/config.yaml", _without_parser(tmp_path))
    result = _snakemake_in_root("-n", "--quiet", "rules", "--directory", str(tmp_path), *configs)
    text = result.stdout + result.stderr
    assert result.returncode == 0, text[-3000:]
    counts = {
        line.split()[0]: int(line.split()[1])
        for line in text.splitlines()
        if len(line.split()) == 2 and line.split()[1].isdigit()
    }
    # seed 1: 57 ConSERT runs (Figure 6's N = 1 upsampled, as the authors' main.py), SimCSE, AugCSE, and
    # BERT-flow's own BERT-NLI for each size (Table 3's flow rows fit on it); seeds 2 and 3 of the primary
    # rows: per size Table 2's run, Table 3's four and BERT-flow's BERT-NLI, and SimCSE and AugCSE on base
    assert counts["consert_train"] + counts["consert_train_keeping_vectors"] == 57 + 2 + 2 + 2 * (2 * 6 + 2)
    assert counts["consert_train_keeping_vectors"] == 1 + 2 * 3  # the figures' run, the NLI encoders flow reuses
    assert counts["train_sgopt"] == 2 * 8 and counts["encode_corpus"] == 2  # SG-OPT's 8 seeds per size
    assert counts["paper_figure"] == 5 and counts["paper_table"] == 4  # Tables 2-4 and the contrastive family


def _bare_clone(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The workflow's files in a folder with no SentEval data beside it, and an environment without $CONSERT_DATA."""
    clone = tmp_path / "machine" / "repo"
    for part in ("Snakefile", "workflow", "config", "profiles", "results/published"):
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, clone / part)
        else:
            clone.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, clone / part)
    env = {key: value for key, value in os.environ.items() if key != "CONSERT_DATA"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return clone, env


@pytest.mark.slow
def test_a_dry_run_names_every_missing_input_with_its_download_job_or_what_to_run(tmp_path):
    """The paper's config in a fresh clone with none of its inputs: one message names each missing input the run
    reads, with the job that downloads it or, for spaCy's pipeline, which no job installs, the command. A dry run
    says it and lists every job all the same (exit 0; at 03ef47f it stopped); a run stops before any job. Neither
    touches the network or the disk."""
    clone, env = _bare_clone(tmp_path)
    command = [sys.executable, "-m", "snakemake", "all", "--configfile", "config/config.yaml"]
    run = subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and "Stopped before any job: " in run.stderr and "Job stats" not in run.stdout
    result = subprocess.run([*command, "-n"], cwd=clone, env=env, capture_output=True, text=True, timeout=300)
    text = result.stdout + result.stderr
    message = text[text.index("A run would stop before any job") :].splitlines()
    assert result.returncode == 0 and "Job stats" in text and re.search(r"^total\s+\d+", text, re.M), text[-3000:]
    message = message[: next(i for i, line in enumerate(message) if line.startswith("Get those")) + 1]
    from consert.encode.models import hub_cache_folder

    wordnet = find_wordnet() is not None  # Debian's wordnet-base, NLTK's data: no job to download it
    expected = {
        "MultiNLI 1.0 (data/nli/multinli_1.0/multinli_1.0_train.jsonl)": "job multinli_data downloads it",
        "SNLI 1.0 (data/nli/snli_1.0/snli_1.0_train.jsonl, data/nli/snli_1.0/snli_1.0_dev.jsonl, "
        "data/nli/snli_1.0/snli_1.0_test.jsonl)": "job snli_data downloads it",
        "SimCSE's 1M Wikipedia sentences (data/wiki1m_for_simcse.txt)": "job wiki1m_data downloads it",
        "GloVe 840B (300d) (data/glove/glove.840B.300d.txt)": "job glove_data downloads it",
        "spaCy pipeline en_core_web_sm (en_core_web_sm)": "run `consert download-data --spacy en_core_web_sm`",
        **({} if wordnet else {"WordNet 3.0 (data/wordnet)": "job wordnet_data downloads it"}),
        **{  # the paper's encoders, where the hub's cache here lacks them: the job hub_model fetches them
            f"models.{size} ({name})": "job hub_model downloads it"
            for size, name in (("base", "bert-base-uncased"), ("large", "bert-large-uncased"))
            if hub_cache_folder(name) is None
        },
    }
    named = {line.strip().split("): missing: ")[0] + ")": line.split("): missing: ")[1] for line in message[1:-1]}
    assert {what: how for what, how in named.items() if what in expected} == {
        what: next(h for h in [named.get(what, "")] if h.startswith(how)) for what, how in expected.items()
    }
    assert set(named) == set(expected) and message[0].endswith("no job of this run downloads 1 of them:")
    assert not (clone / "data").exists() and not (clone / "runs").exists()


@pytest.mark.slow
def test_a_dry_run_needs_no_data_and_lists_the_downloads_as_jobs(tmp_path):
    """With AugCSE's parser-based augmentations left out, every missing input has its download job: the dry run
    lists them, the STS sets' among them, and touches neither the network nor the disk."""
    clone, env = _bare_clone(tmp_path)
    command = [sys.executable, "-m", "snakemake", "-n", "--quiet", "rules", "--configfile", "config/config.yaml",
               _without_parser(tmp_path)]  # fmt: skip
    result = subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True, timeout=300)
    text = result.stdout + result.stderr
    assert result.returncode == 0, text[-3000:]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)\s*$", text, re.M))
    downloads = ("senteval_data", "snli_data", "multinli_data", "glove_data", "wiki1m_data")
    assert all(counts[rule] == "1" for rule in downloads) and counts["run_config"] == "105"
    assert int(counts["consert_train"]) > 80
    assert not (clone / "data").exists() and not (clone / "runs").exists()


@pytest.mark.slow
def test_table1_counts_the_fixture_by_its_construction(dag_run):
    """12 pairs a file: STS years have 5/3/6/5/5 subsets, STS15/16 leave every other pair unscored."""
    workdir, _ = dag_run
    table1 = pd.read_csv(workdir / "results" / "table1_datasets.csv").set_index("statistic")
    subsets = {"STS12": 5, "STS13": 3, "STS14": 6, "STS15": 5, "STS16": 5}
    for year, n in subsets.items():
        scored = 12 * n // (2 if year in ("STS15", "STS16") else 1)
        assert table1.loc["test_samples", year] == scored and table1.loc["unlabeled_texts", year] == 24 * n
    for name in ("STSb", "SICK-R"):
        assert [table1.loc[s, name] for s in ("train_samples", "valid_samples", "test_samples")] == [12, 12, 12]
        assert table1.loc["unlabeled_texts", name] == 72
    assert table1.loc["unlabeled_texts", "Total"] == 24 * 24 + 72 + 72


@pytest.mark.slow
def test_comparison_rows_carry_the_published_value_and_its_arithmetic(dag_run):
    workdir, _ = dag_run
    comparison = pd.read_csv(workdir / "results" / "comparison.csv")
    published = pd.read_csv(ROOT / "results" / "published" / "consert_table2_unsup.csv").set_index("method")
    table2 = pd.read_csv(workdir / "results" / "table2_unsup.csv").set_index("method")
    cells = comparison[(comparison.artifact == "table2") & (comparison.status == "compared")]
    assert len(cells)
    for cell in cells.itertuples():
        assert cell.published == published.loc[cell.row, cell.column]
        assert cell.delta == pytest.approx(cell.reproduced - cell.published, abs=1e-9)
    flow = cells[cells.row == "BERT-base-flow"].set_index("column")
    # BERT-flow's published numbers are wmean: the reproduced cell is the table's wmean column
    assert flow.loc["STS12", "aggregate"] == "wmean"
    assert flow.loc["STS12", "reproduced"] == pytest.approx(table2.loc["BERT-base-flow", "STS12_wmean"])
    assert flow.loc["STSb", "aggregate"] == "test split"


@pytest.mark.slow
def test_each_figure_plots_the_data_of_its_csv(dag_run, tmp_path):
    """Redraw each figure from its CSV and read the plotted data back from the figure's artists."""
    import numpy as np

    from consert.paper.catalogue import BY_KEY
    from consert.paper.tables import heatmap_matrix
    from consert.sweeps import AUGMENTATION_LABELS

    workdir, _ = dag_run
    results = workdir / "results"

    def draw(name: str):
        table = pd.read_csv(results / f"{name}.csv")
        return table, BY_KEY[name.split("_")[0]].draw(table, [tmp_path / f"{name}.png"])

    table, figure = draw("figure4_topk")
    for line, (_, curve) in zip(figure.axes[0].lines, table.groupby("model", sort=False), strict=False):
        np.testing.assert_allclose(line.get_ydata(), curve.sort_values("k").Avg)
    table, figure = draw("figure5_heatmap")
    order = [a for a in AUGMENTATION_LABELS if a in set(table.view1)]
    np.testing.assert_allclose(
        figure.axes[0].collections[0].get_array().reshape(len(order), -1), heatmap_matrix(table, order)
    )
    table, figure = draw("figure7_temperature")
    np.testing.assert_allclose(figure.axes[0].lines[0].get_ydata(), table.sort_values("temperature").Avg)
    table, figure = draw("figure1_scatter")
    points = np.vstack([axis.collections[0].get_offsets() for axis in figure.axes[: table.model.nunique()]])
    np.testing.assert_allclose(np.sort(points[:, 1]), np.sort(table.cosine))


def _require(tool: str, present: bool, variable: str) -> None:
    """CI sets ``variable``=1 and installs ``tool``: there a missing tool fails the test; elsewhere it skips."""
    if present:
        return
    if os.environ.get(variable) == "1":
        pytest.fail(f"{tool} is not installed but {variable}=1 asks for this test")
    pytest.skip(f"{tool} is not installed (set {variable}=1 to require it)")


#: Every report entry a reader must find: (path, category, what its caption must say).
REPORT_ENTRIES = [
    ("results/table1_datasets.csv", "Tables", "Table 1 of the paper"),
    ("results/table2_unsup.csv", "Tables", "Table 2 of the paper"),
    ("results/table3_sup.csv", "Tables", "Table 3 of the paper"),
    ("results/table4_batch_size.csv", "Tables", "Table 4 of the paper"),
    ("results/table_contrastive_family.csv", "Tables", "The contrastive family beside ConSERT"),
    ("figures/figure1_scatter.png", "Figures", "Figure 1 of the paper"),
    ("figures/figure4_topk.png", "Figures", "Figure 4 of the paper"),
    ("figures/figure5_heatmap.png", "Figures", "Figure 5 of the paper"),
    ("figures/figure6_fewshot.png", "Figures", "Figure 6 of the paper"),
    ("figures/figure7_temperature.png", "Figures", "Figure 7 of the paper"),
    ("results/comparison.csv", "Comparison", "next to its published value"),
    ("results/claims.csv", "Comparison", "qualitative claims"),
    ("figures/comparison_forest.png", "Comparison", "reproduced minus published"),
    ("results/recipe.csv", "Recipe", "The recipe card"),
    ("results/summary.html", "Summary", "Start here"),
    ("results/cost.csv", "Summary", "What each artifact cost"),
    ("figures/training_curves.png", "Diagnostics", "Training curves"),
    ("figures/diagnostics.png", "Diagnostics", "Representation diagnostics"),
]


@pytest.mark.slow
def test_the_html_report_shows_every_artifact_with_its_caption_in_a_browser(dag_run, tmp_path):
    """`snakemake --report` opened in headless Chromium: every table and figure, the comparison and
    the claims, each in its category with its caption, read from the DOM; nothing leaves the machine."""
    from tests.report_browser import CHROMIUM, read_report

    _require("Debian's chromium", CHROMIUM.is_file(), "CONSERT_BROWSER_TESTS")
    _require("playwright", importlib.util.find_spec("playwright") is not None, "CONSERT_BROWSER_TESTS")
    workdir, data = dag_run
    snakemake(workdir, "--report", "report.html", "--config", f"data_dir={data}")
    shots = Path(os.environ.get("CONSERT_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    view = read_report(workdir / "report.html", screenshot_dir=shots)
    assert "not comparable" in view.description and "test (offline stand-in" in view.description
    for path, category, caption in REPORT_ENTRIES:
        assert path in view.entries, f"{path} is not in the report ({sorted(view.entries)})"
        assert view.entries[path]["category"] == category, path
        assert caption in view.entries[path]["caption"], (path, view.entries[path]["caption"])
        assert "{{" not in view.entries[path]["caption"] and "``" not in view.entries[path]["caption"], path
    assert view.blocked == [] and view.errors == []
    assert view.requests and all(url.startswith(("file:", "data:", "blob:", "about:")) for url in view.requests)
    assert (shots / "report_landing.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the summary page, shown inside the report: its verdict counts and Table 2 rendered as an HTML table
    counts = pd.read_csv(workdir / "results" / "comparison.csv")
    assert "Published rows of the paper" in view.summary_verdicts
    assert "not comparable" in view.summary_verdicts and "reproduced" in view.summary_verdicts
    counted = [cells for table, *cells in view.summary_first_screen if table == "counts"]
    assert dict(zip(*counted, strict=True))["not comparable"] == str(primary_summary(counts)["not comparable"])
    layout = pd.read_csv(workdir / "results" / "paper_tables.csv")
    table2 = layout[layout.artifact == "table2"]
    assert view.summary_table_header[:3] == ["row", "STS12", "STS13"] and "Avg" in view.summary_table_header
    rows = [row for row in view.summary_table_rows if len(row) > 1]  # a group's heading is one cell
    assert [row[0] for row in rows] == [*table2.row, "minilm-own (yours)"]  # the test config's model of yours last
    first = table2.iloc[0]  # the test config's rows are the stand-in's: its Avg marked not comparable
    assert rows[0][-2] == f"{first['Avg ours']:.2f} not comparable" and rows[0][-1] == f"{first['Avg published']:.2f}"
    _assert_no_stand_in_number_reads_as_reproduced(view.summary_first_screen)


def _assert_no_stand_in_number_reads_as_reproduced(screen: list[list[str]]) -> None:
    """The summary as a reader first sees it: the verdict counts lead, and nothing on the first screen calls a
    stand-in number "reproduced" (its one "reproduced", the counts' label, counts 0: nothing of the paper is
    comparable in the test setting; a row's mark says "not comparable")."""
    counts = [cells for table, *cells in screen if table == "counts"]
    assert len(counts) == 2, screen  # the labels, then the numbers
    assert dict(zip(*counts, strict=True))["reproduced"] == "0", counts
    for table, *cells in screen:
        if table == "table2_unsup":
            assert not any(re.search(r"(?<!not )reproduced", cell) for cell in cells), cells


@pytest.mark.slow
def test_the_summarys_first_screen_holds_the_counts_and_table_2_in_chromium(dag_run, tmp_path):
    """The test DAG's summary opened on its own in headless Chromium at 1280 x 800 (its screenshot's path printed):
    the first screen holds the verdict counts and Table 2's header, whole (its Avg column too), and its first rows;
    no CSV excerpt and no row saying its setting remain in the page (issue 81, item 5)."""
    from tests.report_browser import CHROMIUM, read_summary

    _require("Debian's chromium", CHROMIUM.is_file(), "CONSERT_BROWSER_TESTS")
    _require("playwright", importlib.util.find_spec("playwright") is not None, "CONSERT_BROWSER_TESTS")
    workdir, _ = dag_run
    shots = Path(os.environ.get("CONSERT_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    screenshot = shots / "summary_first_screen.png"
    view = read_summary(workdir / "results" / "summary.html", screenshot)
    print(f"the summary's first screen at 1280 x 800: {screenshot}")
    width, height = view.viewport
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and view.errors == []
    _assert_no_stand_in_number_reads_as_reproduced(view.first_screen)
    assert 0 < view.table2_header["bottom"] < height and view.table2_header["right"] <= width, view.table2_header
    body = [row for row in view.table2_rows if row["bottom"] <= height]
    assert len(body) >= 3, view.table2_rows  # a group's heading and at least two rows of Table 2
    assert sum(1 for table, *_ in view.first_screen if table == "table2_unsup") >= 5
    assert "First 40 of" not in view.text and not re.search(r"of \d+ rows: \w+\.csv", view.text)
    settings = set(pd.read_csv(workdir / "results" / "comparison.csv").setting.dropna())
    assert settings and not any(setting in cell for setting in settings for cell in view.cells)
    assert not any(cell in ("offline stand-in", "rehearsal", "paper setting") for cell in view.cells)


SLURM_SCRIPT = ROOT / "tests" / "slurm" / "local-cluster.sh"
SLURM_PROFILE = ROOT / "tests" / "slurm" / "profile"


def _profile(path: Path) -> dict:
    return yaml.safe_load((path / "config.yaml").read_text())


def test_the_slurm_test_profile_differs_from_the_real_one_only_in_sizes_and_account():
    real, test = _profile(ROOT / "profiles" / "slurm"), _profile(SLURM_PROFILE)
    sized = {"slurm_account", "runtime", "mem_mb", "cpus_per_task"}
    for key in set(real) | set(test):
        if key in ("default-resources", "set-resources"):
            continue
        if key not in ("configfile", "slurm-init-seconds-before-status-checks"):  # which config; check latency
            assert real.get(key) == test.get(key), key
    assert set(real["set-resources"]) == set(test["set-resources"])
    for rule, resources in real["set-resources"].items():
        assert {k: v for k, v in resources.items() if k not in sized} == {
            k: v for k, v in test["set-resources"][rule].items() if k not in sized
        }, rule
    assert set(real["default-resources"]) == set(test["default-resources"])
    assert real["default-resources"]["slurm_partition"] == test["default-resources"]["slurm_partition"]


@pytest.fixture(scope="module")
def slurm_cluster():
    """A one-node SLURM cluster on this machine (Debian's packages; tests/slurm/local-cluster.sh)."""
    # opt-in only: the script installs packages and starts daemons as root (never on a real cluster node)
    _require(
        "a throwaway machine for a local SLURM cluster",
        os.environ.get("CONSERT_SLURM_TESTS") == "1",
        "CONSERT_SLURM_TESTS",
    )
    started = subprocess.run([str(SLURM_SCRIPT), "start"], capture_output=True, text=True, timeout=900)
    if started.returncode != 0:
        pytest.fail(f"the local SLURM cluster did not start:\n{started.stdout[-3000:]}\n{started.stderr[-3000:]}")
    env = {**os.environ, "SLURM_CONF": started.stdout.strip().splitlines()[-1]}
    try:
        yield env
    finally:
        subprocess.run([str(SLURM_SCRIPT), "stop"], capture_output=True, text=True, timeout=300)


def _slurm_jobs(env: dict, *args: str) -> list[dict[str, str]]:
    """sacct's job records (no steps): id, name, state, comment."""
    fields = ["JobID", "JobName", "State", "Comment"]
    result = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-S", "now-1days", f"--format={','.join(fields)}", *args],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return [dict(zip(fields, line.split("|"), strict=True)) for line in result.stdout.splitlines() if line]


def _training_jobs(env: dict) -> dict[str, str]:
    """The training jobs in SLURM's queue now: ``{job id: state}``."""
    listed = subprocess.run(
        ["squeue", "-h", "-o", "%i|%k|%T"], env=env, capture_output=True, text=True
    ).stdout.splitlines()
    return {line.split("|")[0]: line.split("|")[2] for line in listed if "consert_train" in line}


@pytest.mark.slow
def test_the_test_dag_runs_on_a_real_slurm_cluster_and_survives_a_scancel(dag_run, slurm_cluster, tmp_path):
    """:data:`SUB_DAG` of the test config's DAG through `snakemake --profile profiles/slurm` on the local cluster, each
    training job taking a whole GPU (`share_gpu: false`, the paper's) and no `--resources` given, as a user runs it:
    the training jobs are in SLURM's queue side by side (the workflow's own profile, loaded beside the SLURM one, sets
    no GPU count that would submit them one at a time), every job but the localrules goes through sbatch (the tables'
    stay local), a training job killed with scancel is reported and resubmitted, and the results equal the local
    run's."""
    reference, _ = dag_run
    env = slurm_cluster
    before = {job["JobID"] for job in _slurm_jobs(env)}
    data = write_senteval_tree(tmp_path / "senteval", pairs_per_file=12)
    command, run_env = snakemake_command(
        tmp_path, *SUB_DAG, "--profile", str(SLURM_PROFILE), "--config", f"data_dir={data}", "share_gpu=False",
        resources=(),
    )  # fmt: skip
    log = tmp_path / "snakemake-slurm.log"
    with log.open("w") as out:
        process = subprocess.Popen(  # the run's PATH (the venv first), the cluster's SLURM_CONF
            command, env={**run_env, "SLURM_CONF": env["SLURM_CONF"]}, stdout=out, stderr=subprocess.STDOUT
        )
        try:
            cancelled, queued_at_once = None, 0
            deadline = time.time() + 2400
            while process.poll() is None and time.time() < deadline:
                training = _training_jobs(env)
                queued_at_once = max(queued_at_once, len(training))
                running = next((job for job, state in training.items() if state == "RUNNING"), None)
                if cancelled is None and running:
                    time.sleep(3)  # let it get going, then kill it
                    subprocess.run(["scancel", running], env=env, check=True)
                    cancelled = running
                time.sleep(1)
            assert cancelled, "no training job was seen running under SLURM"
            process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
    assert queued_at_once >= 2, "the training jobs went to SLURM one at a time"
    text = log.read_text()
    assert process.returncode == 0, text[-5000:]
    jobs = [job for job in _slurm_jobs(env) if job["JobID"] not in before]
    # snakemake logs "Job <its id> has been submitted with SLURM jobid <id>" for every submission
    submissions = re.findall(r"Job (\d+) has been submitted with SLURM jobid (\d+)", text)
    print("SLURM jobs of this run (sacct):")
    for job in jobs:
        print(f"  {job['JobID']:>6} {job['State']}")
    assert submissions and {slurm for _, slurm in submissions} == {job["JobID"] for job in jobs}  # all via sbatch
    states = {job["JobID"]: job["State"] for job in jobs}
    assert states[cancelled].startswith("CANCELLED")
    assert all(state == "COMPLETED" for job_id, state in states.items() if job_id != cancelled)
    snakemake_job = next(job for job, slurm in submissions if slurm == cancelled)
    resubmitted = [slurm for job, slurm in submissions if job == snakemake_job and slurm != cancelled]
    assert len(resubmitted) == 1 and states[resubmitted[0]] == "COMPLETED"  # resubmitted once, not lost
    assert f"SLURM-job '{cancelled}' failed, SLURM status is: 'CANCELLED'" in text  # and reported
    assert "localrule paper_table:" in text  # the table was built where snakemake runs
    _assert_sub_dag_equal(tmp_path, reference)


@pytest.mark.slow
def test_the_box_check_trains_one_run_and_evaluates_it_apart_from_the_paper(tmp_path):
    """`snakemake check_box`: Table 2's first ConSERT run for a few hundred steps (the test config's cap: 2), then
    its 7 sets, into results/check/, which no table reads; its model is deleted once evaluated. It prints its rate
    and each table's planned steps at it: every run of the test config is capped at 2 steps."""
    data = write_senteval_tree(tmp_path / "senteval", pairs_per_file=12)
    result = snakemake(tmp_path, "check_box", "--config", f"data_dir={data}")
    printed = result.stdout + result.stderr
    projection = pd.read_csv(tmp_path / "results" / "check" / "projection.csv").set_index("artifact")
    assert (projection.steps == 2 * projection.runs).all() and projection.loc["all", "runs"] >= projection.runs.max()
    hours = projection.steps / projection.steps_per_s / 3600
    assert projection.gpu_hours.to_numpy() == pytest.approx(hours, abs=5e-5)  # the CSV keeps 4 decimals
    assert "steps run, " in printed and "steps/s" in printed and "every step costed as one of its kind" in printed
    evaluation = pd.read_csv(tmp_path / "results" / "check" / "consert-base.csv")
    sets = {"STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R", "Avg"}
    assert set(evaluation[evaluation.subset == "all"].dataset) == sets
    curve = pd.read_csv(tmp_path / "results" / "check" / "consert-base-curve.csv")
    assert curve.step.max() == 2 and not (tmp_path / "runs" / "check-box").exists()
    assert not (tmp_path / "results" / "table2_unsup.csv").exists() and not (tmp_path / "results" / "evals").exists()


@pytest.mark.slow
def test_one_table_decides_its_rows_as_all_does_and_says_provisional_when_others_did_not_run(dag_run, tmp_path):
    """Table 2's rows decided from the rows at hand: with every artifact present, exactly comparison.csv's Table 2
    rows and verdicts, not provisional; with only Table 2's file (the others not run), its rows still decided,
    labelled provisional, naming what did not run."""
    from consert.paper.catalogue import COMPARED
    from consert.planner.comparison import ComparisonConfig
    from consert.verdict.compare import compare
    from consert.verdict.gate import rows_at_hand

    workdir, _ = dag_run
    results = workdir / "results"
    settings = ComparisonConfig.read(results / "comparison_config.yaml")

    def table2(folder: Path) -> tuple[pd.DataFrame, str]:
        table = compare(
            COMPARED, folder, PUBLISHED, settings.not_run, settings.margins, settings.seed_noise, settings.seeds
        )
        return rows_at_hand(table, ["table2:*"])

    rows, why = table2(results)
    whole = pd.read_csv(results / "comparison.csv")
    whole = whole[whole.status != "yours"]  # the rows of yours, appended after the gate, are no published rows
    assert why == "" and len(rows) == len(whole[whole.artifact == "table2"]) > 0
    assert list(rows.verdict.astype(str)) == list(whole[whole.artifact == "table2"].verdict.astype(str))
    alone = tmp_path / "results"
    alone.mkdir()
    for name in ("table2_unsup.csv", "comparison_config.yaml"):
        shutil.copy(results / name, alone / name)
    rows, why = table2(alone)
    assert len(rows) == len(whole[whole.artifact == "table2"]) and why.startswith("provisional: rows of ")
    assert "table3" in why and "`snakemake all` decides every row" in why


@pytest.mark.slow
def test_one_table_as_a_target_ends_with_its_own_verdict_counts(tmp_path):
    """`snakemake results/table2_unsup.csv` alone: the run ends with Table 2's published rows by verdict (not "run
    snakemake all"), labelled provisional since the other tables did not run."""
    data = write_senteval_tree(tmp_path / "senteval", pairs_per_file=12)
    result = snakemake(tmp_path, "results/table2_unsup.csv", "--config", f"data_dir={data}")
    assert "Published rows of Table 2: unsupervised: " in result.stdout, result.stdout[-3000:]
    assert "provisional: rows of " in result.stdout and "no results/comparison.csv yet" not in result.stdout
