"""Every artifact is declared once (``consert/registry.py``): its key and file stem are spelled in at most two
code files of ``consert/`` and ``workflow/`` (the registry, and where it is drawn or computed); each is one record of
the catalogue (``consert/paper/catalogue.py``) owning its other facets, and every part of the harness that lists
artifacts lists the catalogue's.

A literal counts when it is the key or the stem (with ``.csv``, ``.png`` or ``.pdf``) as a whole string. Not
counted, because they name something else spelled alike: a config section read by subscript or ``.get``
(``config["family"]``) and a folder joined by ``/`` (``RESULTS / "curves"``, the per-run curve files).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pandas as pd
import pytest

from consert import registry
from consert.paper import catalogue
from consert.paper.catalogue import CSV_FILES
from consert.paper.job_costs import cost_table
from consert.planner.keys import FamilyKeys
from consert.planner.load import read_workflow_config

ROOT = Path(__file__).resolve().parents[2]
#: The bound of the issue: the registry, and where the artifact is drawn or computed.
MAX_FILES = 2


def _spellings(artifact: registry.Artifact) -> set[str]:
    return {name + suffix for name in (artifact.key, artifact.stem) for suffix in ("", ".csv", ".png", ".pdf")}


def _python_literals(source: str) -> list[str]:
    """The string constants of a Python module, less config keys read by subscript or ``.get`` and folder names
    joined by ``/``."""
    tree = ast.parse(source)
    other: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            other.add(id(node.slice))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            other.update(id(arg) for arg in node.args[:1])
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            other.update((id(node.left), id(node.right)))
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in other
    ]


def _snakemake_literals(source: str) -> list[str]:
    """The quoted strings of a Snakemake file (not Python: its literals are read as text)."""
    return [match[1] for match in re.findall(r"""(["'])([^"'\n]*)\1""", source)]


def _code_files() -> list[Path]:
    files = [*sorted((ROOT / "consert").rglob("*.py")), *sorted((ROOT / "workflow").rglob("*.py"))]
    return [*files, *sorted((ROOT / "workflow").rglob("*.smk")), ROOT / "Snakefile"]


@functools.cache
def _literals(path: Path) -> frozenset[str]:
    source = path.read_text()
    return frozenset(_python_literals(source) if path.suffix == ".py" else _snakemake_literals(source))


def files_spelling(artifact: registry.Artifact, files: list[Path], root: Path = ROOT) -> list[str]:
    """The files among ``files`` (named relative to ``root``) whose literals spell ``artifact``'s key or stem."""
    spellings = _spellings(artifact)
    return [str(path.relative_to(root)) for path in files if spellings & _literals(path)]


@pytest.mark.parametrize("artifact", catalogue.ARTIFACTS, ids=lambda artifact: artifact.key)
def test_an_artifacts_key_is_spelled_in_at_most_two_code_files(artifact):
    found = files_spelling(artifact, _code_files())
    assert "consert/registry.py" in found
    assert len(found) <= MAX_FILES, found


def test_the_count_sees_a_key_spelled_in_a_third_file(tmp_path):
    """A module that keys an artifact by its literal name (the drift the rule forbids) is counted, in Python and
    in a rule file; a config section of the same name is not."""
    planted = tmp_path / "planted.py"
    planted.write_text('COSTED = {"figure5_heatmap": 1}\nmethods = config["family"]["methods"]\n')
    rule = tmp_path / "planted.smk"
    rule.write_text('rule x:\n    output: "results/x.csv", expand("{n}", n=["table4_batch_size"])\n')
    assert files_spelling(registry.FIGURE5, [planted], tmp_path) == ["planted.py"]
    assert files_spelling(registry.TABLE4, [rule], tmp_path) == ["planted.smk"]
    assert files_spelling(registry.FAMILY, [planted], tmp_path) == []


def test_every_record_has_its_sources_its_drawing_when_drawn_and_compared_blocks_reading_its_own_csv():
    """Each record of the catalogue: sources unless it is counted from the data (Table 1), a drawing exactly when its
    kind is drawn, compared blocks that read its own CSV (so a missing CSV is a gap of its own artifacts); every
    registry constant is one record's declaration, and the comparison's blocks are the records' in their order."""
    for record in catalogue.CATALOGUE:
        assert (record.sources is None) == (record.declared.kind == "data"), record.key
        assert (record.draw is not None) == record.declared.drawn, record.key
        assert all(block.reproduced_file == record.declared.csv for block in record.compared), record.key
    constants = {value for value in vars(registry).values() if isinstance(value, registry.Artifact)}
    assert constants == set(catalogue.ARTIFACTS)
    assert [b.artifact for b in catalogue.COMPARED] == [
        "table2", "whitening_table1", "sgopt_table1", "stand_in_mteb", "table3", "table4", "table4", "family",
        "figure4_topk", "figure5_heatmap",
    ]  # fmt: skip
    assert CSV_FILES[registry.TABLE2.key] == "table2_unsup.csv"  # the paper's table's file, as the docs name it
    assert len({artifact.stem for artifact in catalogue.ARTIFACTS}) == len(catalogue.ARTIFACTS)


def test_the_config_decides_which_artifacts_are_built():
    """The contrastive family's table only when the config trains the family; the summary keeps the paper's
    order (Table 1, Figure 1, Tables 2 and 3, Figures 4 to 7, Table 4, the family)."""
    config = read_workflow_config(ROOT / "config" / "test.yaml")
    without = config.model_copy(update={"family": FamilyKeys(methods=[])})
    with_family = config.model_copy(update={"family": FamilyKeys(methods=["simcse"])})
    assert list(catalogue.stems("table", without)) == ["table2_unsup", "table3_sup", "table4_batch_size"]
    assert list(catalogue.stems("table", with_family))[-1] == "table_contrastive_family"
    assert [a.key for a in catalogue.in_summary()] == [
        "table1", "figure1", "table2", "table3", "figure4", "figure5", "figure6", "figure7", "table4", "family",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="unknown artifact kind"):
        catalogue.of_kind("tables", without)


def test_the_cost_table_has_a_row_per_costed_artifact_of_the_config(tmp_path):
    config = read_workflow_config(ROOT / "config" / "test.yaml")
    table = cost_table(config, tmp_path)  # no benchmark files: every job counted missing
    expected = [a.stem for a in catalogue.ARTIFACTS if a.costed and a.runs_in(config)] + ["all"]
    assert table.artifact.tolist() == expected
    assert (table.missing_benchmarks == table.jobs).all()


def test_the_cost_table_leaves_cpu_and_memory_empty_where_the_job_server_ran_the_jobs(tmp_path):
    """A benchmark file of one job (snakemake's columns), read once as measured by the job's own process and once under
    the job server, where it measured the launcher: the wall time counts in both, CPU time and memory only in the
    first."""
    from consert.planner import paths

    config = read_workflow_config(ROOT / "config" / "test.yaml")
    encode = tmp_path / paths.BENCHMARKS / "baselines" / "base" / "encode.tsv"
    encode.parent.mkdir(parents=True)
    encode.write_text("s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
                      "12.5\t0:00:12\t812.0\t900\t700\t750\t0\t1\t95\t11.5\n")  # fmt: skip
    own, launcher = (cost_table(config.model_copy(update={"job_server": flag}), tmp_path) for flag in (False, True))
    poolings = own.set_index("artifact").loc["all"]
    assert (poolings.wall_s, poolings.cpu_s, poolings.peak_rss_mb) == (12.5, 11.5, 812.0)
    under_server = launcher.set_index("artifact").loc["all"]
    assert under_server.wall_s == 12.5 and pd.isna(under_server.cpu_s) and pd.isna(under_server.peak_rss_mb)


def test_each_kinds_rule_pattern_matches_exactly_its_declared_stems(monkeypatch):
    """The workflow's rules for tables, figures and diagnostics take their wildcard constraint from the catalogue:
    every declared stem of a kind matches its kind's pattern whole and no other kind's; other outputs (the forest
    plot, the comparison) match none; a stem declared later needs no new pattern."""
    patterns = {kind: re.compile(catalogue.stem_pattern(kind)) for kind in ("table", "figure", "diagnostic")}
    for artifact in catalogue.ARTIFACTS:
        matched = {kind for kind, pattern in patterns.items() if pattern.fullmatch(artifact.stem)}
        assert matched == ({artifact.kind} & set(patterns)), artifact.stem
    for other in ("comparison_forest", "comparison", "claims", "table2_unsup_extra", "figure7"):
        assert not any(pattern.fullmatch(other) for pattern in patterns.values()), other
    monkeypatch.setattr(
        catalogue, "ARTIFACTS", (*catalogue.ARTIFACTS, registry.Artifact("t5", "table5_dropout", "table", ""))
    )
    assert re.fullmatch(catalogue.stem_pattern("table"), "table5_dropout")
    with pytest.raises(ValueError, match="unknown artifact kind"):
        catalogue.stem_pattern("tables")


def test_a_baseline_naming_a_table_that_is_not_a_score_table_is_refused():
    """A baseline record's ``table`` is checked when the catalogue loads: a mistyped key (or a figure's) would leave the
    baseline unplanned, its rows nowhere, without a fault."""
    from baselines import BaselineSpec
    from consert.paper.catalogue import check_baseline_tables

    abtt = {"embedder": "baselines.pooling:PoolingBaseline", "label": "ABTT"}
    check_baseline_tables([BaselineSpec("abtt", table="table2", **abtt), BaselineSpec("pooling", "x:Y")])
    for table in ("tabel2", "figure7_temperature", "diagnostics"):
        with pytest.raises(ValueError, match=f"^baseline 'abtt': table '{table}' is not a score table \\(family, "):
            check_baseline_tables([BaselineSpec("abtt", table=table, **abtt)])
