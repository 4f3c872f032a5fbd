"""The trainable modes' records are the one list of them (:mod:`consert.train.modes`): no hand-written list of the
contrastive family's methods in the project's code, configs, schema and templates, no literal of two or more mode
names in its Python, and what the records derive (the command line's choices, the config schema's stage names, the
docs' table of modes, the model card's training data) is what the records say. The docs' prose names a method where
it states a fact of that method (its recipe, a measured time); their list of what trains is the generated table."""

from __future__ import annotations

import ast
import re
import subprocess

import yaml

from consert.train.modes import METHOD_KEYS_BLOCK, MODES, STAGE_KEYS_BLOCK, modes_of
from tests.conftest import ROOT

#: Files that may name the modes together: their records and recipes, and the published tables (data).
RECORD_FILES = {"consert/train/modes.py", "consert/train/methods.py"}
#: Python literals of several mode names that are a paper artifact's own layout, not a list of the modes: each
#: with why (file, the names it holds).
PAPER_LAYOUTS = {
    ("consert/sweeps.py", ("unsup", "joint-unsup")): "Figure 6's two curves: few-shot from BERT and from joint",
}


def _tracked_text_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    suffixes = (".py", ".smk", ".yaml", ".yml", ".rst", ".sh", ".toml", ".cfg", ".html", ".j2")
    return [
        name
        for name in listed
        if (name.endswith(suffixes) or name == "Snakefile")
        and not name.startswith(("tests/", "results/"))
        and name not in RECORD_FILES
        and (ROOT / name).is_file()
    ]


def _family_list() -> re.Pattern[str]:
    """Two of the family's methods (by name or label) side by side as a list writes them: ``A, B``, ``A and B``,
    ``A or B``, ``A/B``, each maybe quoted or possessive."""
    words = {word for mode in modes_of(METHOD_KEYS_BLOCK).values() for word in (mode.name, mode.label)}
    word = "(?:" + "|".join(map(re.escape, sorted(words, key=len, reverse=True))) + ")"
    quoted = rf"[`'\"]?{word}(?:'s)?[`'\")]?"
    return re.compile(rf"(?<![\w-]){quoted}\s*(?:,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+|/)\s*{quoted}(?![\w-])")


def test_no_line_of_the_project_lists_the_contrastive_familys_methods_by_hand():
    """A line listing two methods of the family (by name or label) is a list that goes stale when a method is added:
    the records are the one list. A config's ``methods:`` value is the user's choice of methods, not a list of them."""
    assert len(modes_of(METHOD_KEYS_BLOCK)) >= 2  # else the test could not fail
    assert _family_list().search("the methods (simcse, `augcse`)") and _family_list().search("SimCSE's and AugCSE's")
    assert _family_list().search("SimCSE (simcse) or AugCSE (augcse)")
    assert not _family_list().search("AugCSE's additions to SimCSE")
    pattern, found = _family_list(), []
    for name in _tracked_text_files():
        for number, line in enumerate((ROOT / name).read_text(encoding="utf-8").splitlines(), 1):
            if name.startswith("config/") and re.match(r"\s*methods:\s*\[[^\]]*\]\s*(#.*)?$", line):
                line = line.partition("#")[2]  # the value is a choice; its comment is prose
            if pattern.search(line):
                found.append(f"{name}:{number}: {line.strip()[:100]}")
    assert found == [], "derive these from consert.train.modes.MODES:\n" + "\n".join(found)


def _literals_of_mode_names(tree: ast.AST) -> list[tuple[str, ...]]:
    out = []
    for node in ast.walk(tree):
        items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
        if not isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Dict) or items is None:
            continue
        names = tuple(item.value for item in items if isinstance(item, ast.Constant) and item.value in MODES)
        if len(names) >= 2:
            out.append(names)
    return out


def test_no_python_literal_holds_several_mode_names_but_a_paper_artifacts_layout():
    """A tuple, list, set or dict of two or more mode names in the project's Python is a registry beside the records
    (the branches `mode in FIRST_STAGE`, `TRAINING_DATA[mode]` were such); a paper artifact's layout that names its
    rows' modes is allowed where :data:`PAPER_LAYOUTS` says why."""
    found, allowed = [], []
    for name in _tracked_text_files():
        if not name.endswith(".py"):
            continue
        for names in _literals_of_mode_names(ast.parse((ROOT / name).read_text(encoding="utf-8"))):
            (allowed if (name, names) in PAPER_LAYOUTS else found).append((name, names))
    assert found == [], found
    assert set(allowed) == set(PAPER_LAYOUTS), "a layout no longer in the code: drop it from PAPER_LAYOUTS"
    # the check sees a registry of modes where there is one: the records' own module holds literals of names
    assert _literals_of_mode_names(ast.parse('FIRST = {"sup-unsup": "sup", "joint-unsup": "joint"}'))


def test_the_docs_table_of_modes_is_written_from_the_records():
    import importlib.util

    spec = importlib.util.spec_from_file_location("config_keys_hook", ROOT / "docs" / "hooks" / "config_keys.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    assert hook.MODES_MARKER in page
    rows = hook.on_page_markdown(hook.MODES_MARKER).splitlines()[2:]
    assert [row.split("`")[1] for row in rows] == list(MODES)
    assert "| `sup-unsup` | ConSERT | `consert train` | `sup`'s model | `contrastive` |" in "\n".join(rows)


def test_the_choices_the_records_derive_are_the_records():
    from consert.planner.load import config_schema
    from consert.train.config import TrainConfig
    from consert.train.model_card import model_card

    stages = list(modes_of(STAGE_KEYS_BLOCK))
    assert stages == ["unsup", "sup", "joint", "sup-unsup", "joint-unsup"]  # the paper's five settings, in order
    assert config_schema()["properties"]["stages"]["propertyNames"]["enum"] == stages
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    assert schema["properties"]["stages"]["propertyNames"]["enum"] == stages
    help_text = TrainConfig.model_fields["mode"].description
    assert all(name in help_text for name in MODES if MODES[name].trained_by == "train") and "sgopt" not in help_text
    card = model_card({"method": "sg-opt", "config": {"output_dir": "runs/x/model"}})
    assert "- Training data: unlabeled texts" in card  # SG-OPT's export, known by the name it records
    assert "- Training data: NLI pairs; NLI: snli+mnli" in model_card(
        {"mode": "bertflow-nli", "nli": "snli+mnli", "config": {"objective": "nli"}}
    )
