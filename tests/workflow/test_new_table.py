"""A table added the way a contributor adds one, from runs that exist, in a copy of the project: a toy "Table 5" of
ConSERT-base's Table 2 runs beside its own published CSV, its rows judged as its compared block declares (one
aggregate, one seed-noise kind) by its margin in ``decision.yaml``. The addition touches at most 2 files (the
catalogue and the margin) plus the published CSV; the test counts them. With nothing else edited, Snakemake run on
the finished test DAG's working folder (a copy) builds the toy's table and nothing but the jobs that read it, the
comparison finds its row, the summary shows it as the paper's tables are shown, and a fabricated paper-setting row
is ``reproduced`` inside the margin and ``not reproduced`` outside it. A table that needed a hand-written list
updated elsewhere (a rule pattern, a target, the comparison's blocks, the summary's tables) fails here. The
Architecture page's "How to add" names these files.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from tests.workflow.dag import job_counts
from tests.workflow.extension import added_in_a_copy, in_copy, on_finished_dag, replace_once

#: The toy's published row (invented numbers: a fixture of the tests, not a paper's), Avg the mean of the 7 sets.
PUBLISHED_CSV = (
    "method,source,STS12,STS13,STS14,STS15,STS16,STSb,SICK-R,Avg\n"
    'ConSERT-base,"a toy of the tests",64.00,78.00,69.00,79.00,73.00,74.00,70.00,72.43\n'
)
IMPORTS = """from consert import row_labels
from consert.verdict.compare import ComparedRows
from consert.verdict.decision import Judged
"""
DECLARATION = '''
TOY = Artifact("toy_table", "table5_toy", "table", "Table 5 (a toy of the tests): ConSERT-base", ("method", "size"))


def toy_sources(config: WorkflowConfig) -> list[ArtifactSource]:
    """Table 2's ConSERT-base runs: runs that exist."""
    return [source for source in artifacts.table2_sources(config) if source[0]["method"] == row_labels.consert("base")]


'''
RECORD = """    PaperArtifact(
        TOY,
        toy_sources,
        compared=(
            ComparedRows(
                TOY.key,
                "toy_table5.csv",
                TOY.csv,
                lambda published: published.method,
                lambda _: [("ConSERT-base", row_labels.consert("base"), "base")],
                judged=Judged("all", "consert", "a toy of the tests: one ConSERT-base run, each year's subsets merged"),
            ),
        ),
    ),
"""
MARGIN = """  toy_table:
    margin: 1.0
    reason: "1 point of Avg, as Table 2 (a toy of the tests)"
"""


def add_the_toy(copy: Path) -> None:
    """The toy's addition, as a contributor writes it: one code file, the margin, and the published CSV."""
    catalogue = copy / "consert" / "paper" / "catalogue.py"
    replace_once(catalogue, "from consert.verdict.compare import ComparedBlock\n",
                 "from consert.verdict.compare import ComparedBlock\n" + IMPORTS)  # fmt: skip
    replace_once(
        catalogue,
        "\n#: The artifacts with records of their own",
        DECLARATION + "#: The artifacts with records of their own",
    )
    replace_once(catalogue, "    PaperArtifact(FIGURE1,", RECORD + "    PaperArtifact(FIGURE1,")
    published = copy / "results" / "published"
    replace_once(
        published / "decision.yaml",
        "\n# A bias shared by every trained row",
        MARGIN + "\n# A bias shared by every trained row",
    )
    (published / "toy_table5.csv").write_text(PUBLISHED_CSV, encoding="utf-8")


#: What runs in the copy after Snakemake: the toy's table judged again with a fabricated row in the paper's setting.
JUDGE = """
import json, sys
from pathlib import Path

import pandas as pd

from tests.workflow.extension import fabricated_verdicts

table, published = pd.read_csv(sys.argv[1]), Path(sys.argv[2])
toy = pd.read_csv(published / "toy_table5.csv").set_index("method").loc["ConSERT-base"]
rows = table[table.method == "ConSERT-base"]
print(json.dumps(fabricated_verdicts(rows, toy, "table5_toy.csv", "toy_table", "ConSERT-base", published)))
"""


@pytest.fixture(scope="module")
def toy_project(tmp_path_factory) -> tuple[Path, list[str]]:
    """A copy of the project with the toy table added, and the files the addition touched."""
    return added_in_a_copy(tmp_path_factory.mktemp("project"), add_the_toy)


def test_a_table_from_runs_that_exist_takes_two_files_and_its_published_csv(toy_project):
    _, files = toy_project
    assert files == ["consert/paper/catalogue.py", "results/published/decision.yaml",
                     "results/published/toy_table5.csv"]  # fmt: skip


@pytest.mark.slow
def test_the_added_table_is_built_from_the_finished_dag_compared_shown_and_judged(toy_project, dag_run, tmp_path):
    copy, _ = toy_project
    finished, result = on_finished_dag(copy, dag_run, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "results/table5_toy.csv" in result.stdout + result.stderr
    assert job_counts(result.stdout + result.stderr) == {  # its table, and the jobs that read every table; no training
        "paper_table": 1, "claims": 1, "comparison": 1, "cost": 1, "comparison_forest": 1, "summary": 1, "all": 1,
    }  # fmt: skip
    table = pd.read_csv(finished / "results" / "table5_toy.csv")
    source = pd.read_csv(finished / "results" / "table2_unsup.csv").set_index("method").loc["ConSERT-base"]
    (row,) = table.itertuples()
    assert (row.method, row.Avg, row.n_seeds) == ("ConSERT-base", source.Avg, source.n_seeds)  # Table 2's runs
    comparison = pd.read_csv(finished / "results" / "comparison.csv")
    cell = comparison[(comparison.artifact == "toy_table") & (comparison.role == "primary")].iloc[0]
    assert (cell.row, cell.column, cell.status, cell.noise, cell["aggregate"]) == (
        "ConSERT-base", "Avg", "compared", "consert", "all")  # fmt: skip
    assert cell.published == 72.43 and cell.margin == 1.0 and "a toy of the tests" in cell.margin_source
    assert cell.verdict == "not comparable"  # the test DAG's encoder is not the paper's
    layout = pd.read_csv(finished / "results" / "paper_tables.csv")
    assert "ConSERT-base" in set(layout[layout.artifact == "toy_table"].row)
    assert "Table 5 (a toy of the tests): ConSERT-base" in (finished / "results" / "summary.html").read_text()
    script = tmp_path / "judge.py"
    script.write_text(textwrap.dedent(JUDGE))
    judged = in_copy(copy, sys.executable, str(script), str(finished / "results" / "table5_toy.csv"),
                     str(copy / "results" / "published"), cwd=tmp_path)  # fmt: skip
    assert judged.returncode == 0, judged.stderr[-3000:]
    out = json.loads(judged.stdout.strip().splitlines()[-1])
    # one seed, the block's declared noise kind (consert: 0.3): 1.645 x 0.3 x sqrt(2) = 0.70 inside the margin of 1
    assert out["inside"]["verdict"] == "reproduced" and "declared (consert" in out["inside"]["sigma_source"]
    assert out["outside"]["verdict"] == "not reproduced" and out["outside"]["aggregate"] == "all"
