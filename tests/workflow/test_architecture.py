"""The house rules of the code: stages import only downwards, no package has an import cycle, no function
is longer than 120 lines, no class of the trainer's package longer than 150 (docs/architecture.md).

The import rules are import-linter's contracts in ``pyproject.toml``; these tests run them on the tree, and
on a copy of it with one upward import or one cycle planted, to show the contracts catch each.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The issue's bound on a function's length, in source lines (decorators and docstring included).
MAX_FUNCTION_LINES = 120
PYTHON_TREES = ("consert", "baselines", "harness_bench", "workflow/scripts", "tests")
#: A class of ``consert/train`` does one job: the objectives, the step's execution and the loop are apart.
MAX_TRAIN_CLASS_LINES = 150


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` with the contracts of ``root/pyproject.toml``, importing the packages under ``root``
    (run through this interpreter: pip may put the console script off its directory)."""
    environment = {**os.environ, "PYTHONPATH": str(root)}
    command = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    return subprocess.run(
        [sys.executable, "-c", command, "--no-cache"],
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _copy_of_the_tree(tmp_path: Path) -> Path:
    copy = tmp_path / "tree"
    copy.mkdir()
    shutil.copy(ROOT / "pyproject.toml", copy)
    for package in ("consert", "baselines", "harness_bench"):
        shutil.copytree(ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _plant(path: Path, line: str) -> None:
    path.write_text(path.read_text() + f"\n{line}  # noqa: E402\n")


def test_the_import_contracts_hold():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # data is the lowest stage: it may not read the paper's plan
        ("consert/data/nli.py", "from consert.planner import plan", "Stages import only downwards"),
        # a lazy import counts as much as a top-level one
        ("consert/encode/pooling.py", "def _f():\n    import consert.train.losses", "Stages import only downwards"),
        # the trainer imports the loop; the loop importing the trainer closes a cycle inside one stage
        ("consert/train/loop.py", "from consert.train import trainer", "No import cycles"),
    ],
)
def test_the_contracts_catch_a_planted_violation(tmp_path, module, line, broken):
    copy = _copy_of_the_tree(tmp_path)
    _plant(copy / module, line)
    result = _lint_imports(copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert broken in result.stdout.split("Broken contracts", 1)[1]


def _long_definitions(root: Path, trees, kinds, limit: int) -> list[str]:
    """Every definition of ``kinds`` under ``trees`` longer than ``limit`` lines (decorators included)."""
    found = []
    for tree in trees:
        for path in sorted((root / tree).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, kinds):
                    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    length = node.end_lineno - first + 1
                    if length > limit:
                        found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({length} lines)")
    return found


def _long_functions(root: Path) -> list[str]:
    return _long_definitions(root, PYTHON_TREES, ast.FunctionDef | ast.AsyncFunctionDef, MAX_FUNCTION_LINES)


def test_no_class_of_the_trainers_package_is_longer_than_150_lines(tmp_path):
    assert _long_definitions(ROOT, ["consert/train"], ast.ClassDef, MAX_TRAIN_CLASS_LINES) == []
    (tmp_path / "consert" / "train").mkdir(parents=True)
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_TRAIN_CLASS_LINES))
    (tmp_path / "consert" / "train" / "big.py").write_text(f"class Big:\n{body}\n")
    assert _long_definitions(tmp_path, ["consert/train"], ast.ClassDef, MAX_TRAIN_CLASS_LINES) == [
        "consert/train/big.py:1 Big (151 lines)"
    ]


def test_the_trainer_names_no_objective():
    """The trainer is handed its objective: no mode string and no objective's loss is named in it."""
    source = (ROOT / "consert" / "train" / "trainer.py").read_text()
    for name in ('"sup"', '"joint"', '"unsup"', '"augcse"', '"simcse"', "discriminator", "NliHead", "nt_xent"):
        assert name not in source, name


def test_no_function_is_longer_than_120_lines():
    assert _long_functions(ROOT) == []


def test_the_length_rule_sees_a_long_function(tmp_path):
    (tmp_path / "consert").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "consert" / "long.py").write_text(f"def long():\n{body}\n")
    for tree in PYTHON_TREES[1:]:
        (tmp_path / tree).mkdir(parents=True)
    assert _long_functions(tmp_path) == ["consert/long.py:1 long (121 lines)"]


def _contract_layers() -> list[str]:
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [contract["layers"] for contract in contracts if contract["type"] == "layers"]
    return layers


def test_the_architecture_page_states_the_import_layers_the_contract_checks():
    """The page's layer line is the contract's layers, top to bottom, each module of a shared layer named."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    (line,) = [line for line in page.splitlines() if line.startswith("**Import layers, top to bottom:**")]
    stated = [" | ".join(part.strip("` ") for part in layer.split(",")) for layer in line.split(":**")[1].split(" > ")]
    assert stated == _contract_layers()


def test_the_architecture_page_names_every_module_of_the_packages():
    """Each module of ``consert/``, ``baselines/`` and ``harness_bench/`` is named on the page (by its file name), so
    a reader finds where every idea lives; a new module without a word there fails."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    modules = [
        path for package in ("consert", "baselines", "harness_bench") for path in sorted((ROOT / package).rglob("*.py"))
    ]
    unnamed = [
        str(path.relative_to(ROOT))
        for path in modules
        if path.name != "__init__.py" and f"`{path.name}`" not in page and f"{path.parent.name}/{path.name}" not in page
    ]
    assert unnamed == []
