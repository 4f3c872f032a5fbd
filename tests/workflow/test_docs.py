"""The README and the docs site: short README, a site that builds strictly, and pages that say what is
true now (no history of the project: that belongs in git)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", ROOT / "config" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Words of the project's history rather than its use (who reviewed what, whose report, which lease).
HISTORY = re.compile(
    r"review helper|a review found|after review|review fix|complaint|an issue's|\bleases?\b|earlier session"
    r"|this session|previous session",
    re.IGNORECASE,
)


def test_the_readme_is_short():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_tells_the_projects_history(page):
    found = [m.group(0) for m in HISTORY.finditer(page.read_text(encoding="utf-8"))]
    assert found == [], f"{page.relative_to(ROOT)}: {found}"


def test_the_history_check_finds_history():
    assert HISTORY.search("measured on another H100 lease") and HISTORY.search("as the complaint's Xeon showed")
    assert not HISTORY.search("please release the lock; we reviewed the margins")


def test_every_page_is_in_the_site_and_it_builds_strictly(tmp_path):
    import yaml

    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.Loader)  # noqa: S506 - mkdocs' own tags
    listed = {next(iter(entry.values())) for entry in config["nav"]}
    assert listed == {p.name for p in (ROOT / "docs").glob("*.md")}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert "locate_senteval" in api and "evaluate_sentence_transformer" in api  # the docstrings are rendered
    assert Path(tmp_path / "site" / "evaluation" / "index.html").is_file()
    import html

    from consert.train.config import TrainConfig
    from consert.train.methods import AugCseSettings

    training = html.unescape((tmp_path / "site" / "training" / "index.html").read_text(encoding="utf-8"))
    for key, field in TrainConfig.model_fields.items():  # every training key in the table, with its one help text
        assert f"<code>{key}</code>" in training and field.description.replace("|", "/") in training, key
    for key, field in AugCseSettings.model_fields.items():  # and every key of a sub-config, under its name
        assert f"<code>augcse.{key}</code>" in training and field.description in training, key
    from baselines.flow_settings import FlowSettings
    from baselines.sgopt import SgOptConfig
    from consert.planner.comparison import ComparisonConfig

    for page, config_class in (("baselines", FlowSettings), ("baselines", SgOptConfig), ("verdicts", ComparisonConfig)):
        text = html.unescape((tmp_path / "site" / page / "index.html").read_text(encoding="utf-8"))
        for key, field in config_class.model_fields.items():  # each key of the other configs, with its help
            assert f"<code>{key}</code>" in text and field.description.replace("|", "/") in text, key
    architecture = (tmp_path / "site" / "architecture" / "index.html").read_text(encoding="utf-8")
    assert '<figure class="rule-graph"><svg' in architecture and "unpkg" not in architecture  # drawn offline


# Docs that contradict the code: each quote below is checked against what the code does or prints now.


def _order(text: str, marks: dict[str, str]) -> list[str]:
    """The names of ``marks`` (name: regex) in the order ``text`` first mentions them; each must be there."""
    text = " ".join(text.split())
    found = {name: re.search(pattern, text) for name, pattern in marks.items()}
    assert all(found.values()), (text, [name for name, match in found.items() if not match])
    return sorted(found, key=lambda name: found[name].start())


#: How the docs name each place the STS data is looked for.
DATA_PLACES = {
    "env": r"CONSERT_DATA",
    "default": r"(?<![\w/.])(\./)?data/senteval|\belse this\b",
    "beside": r"beside the working directory",
    "download": r"download",
}


def _code_lookup_order(tmp_path, monkeypatch) -> list[str]:
    """The order in which the code takes the data folders, found by offering all of them and removing the one
    taken, each time (the workflow downloads when none is left)."""
    from consert.data import senteval

    work = tmp_path / "machine" / "work"
    places = {
        "env": tmp_path / "env",
        "default": work / "data" / "senteval",
        "beside": tmp_path / "machine" / "SentEval" / "data",
    }
    for folder in places.values():
        (folder / "STS").mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("CONSERT_DATA", str(places["env"]))
    order = []
    while (found := senteval.find_data_dir(checkout=tmp_path / "elsewhere")) is not None:
        (name,) = [name for name, folder in places.items() if found.resolve() == folder.resolve()]
        order.append(name)
        if name == "env":
            monkeypatch.delenv("CONSERT_DATA")
        else:
            (places[name] / "STS").rmdir()
    return order


def test_the_data_lookup_order_the_docs_quote_is_the_codes(tmp_path, monkeypatch):
    from consert.cli import build_parser

    order = _code_lookup_order(tmp_path, monkeypatch)
    assert order == ["env", "default", "beside"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    workflow = (ROOT / "docs" / "workflow.md").read_text(encoding="utf-8")
    offline = (ROOT / "config" / "offline.yaml").read_text(encoding="utf-8")
    quotes = {  # the workflow downloads when none is found; a command never does
        "README": (readme.split("finds the STS\ndata by itself:")[1].split(";")[0], True),
        "docs/workflow.md": (workflow.split("for the default one,")[1].split("does not")[0], True),
        "config/offline.yaml": (re.search(r"^data_dir: .*#(.*)$", offline, re.M).group(1), True),
        "--data's help": (build_parser().commands["evaluate"]._option_string_actions["--data"].help, False),
    }
    for where, (quote, downloads) in quotes.items():
        marks = DATA_PLACES if downloads else {k: v for k, v in DATA_PLACES.items() if k != "download"}
        assert _order(quote, marks) == order + (["download"] if downloads else []), where


def test_the_lookup_order_check_finds_a_swapped_order():
    quote = " data/senteval  # else $CONSERT_DATA, a SentEval data folder beside the working directory, or a download"
    assert _order(quote, DATA_PLACES) == ["default", "env", "beside", "download"]


def _run_counts(configfile: str) -> dict[str, int]:
    """The training runs a workflow config plans, by kind (ConSERT's own stages, SimCSE and AugCSE, BERT-flow's
    BERT-NLI), all seeds and seed 1."""
    from consert.planner.load import read_workflow_config
    from consert.planner.plan import plan_runs, unique_runs

    runs = unique_runs(plan_runs(read_workflow_config(ROOT / configfile)))
    flow = {run_id for run_id in runs if "bertflow-nli" in run_id}
    family = {run_id for run_id, run in runs.items() if run.mode in ("simcse", "augcse")}
    consert = set(runs) - flow - family
    return {
        "consert": len(consert),
        "consert seed 1": sum(runs[run_id].seed == 1 for run_id in consert),
        "family": len(family),
        "flow": len(flow),
    }


def test_the_run_counts_the_docs_quote_are_the_plans():
    offline, paper = _run_counts("config/offline.yaml"), _run_counts("config/config.yaml")
    workflow = " ".join((ROOT / "docs" / "workflow.md").read_text(encoding="utf-8").split())
    quoted = re.search(
        r"That is (\d+) ConSERT runs and one each of SimCSE, AugCSE, BERT-flow's BERT-NLI and SG-OPT, against the "
        r"paper config's (\d+) ConSERT runs \((\d+) on seed 1, the primary rows' on seeds 2 and 3\), (\d+) of "
        r"SimCSE and AugCSE, (\d+) of BERT-NLI",
        workflow,
    )
    assert quoted, "docs/workflow.md no longer states the offline and paper run counts"
    assert [int(n) for n in quoted.groups()] == [
        offline["consert"],
        paper["consert"],
        paper["consert seed 1"],
        paper["family"],
        paper["flow"],
    ]
    assert (offline["family"], offline["flow"]) == (2, 1)
    assert f"The plan holds {offline['consert'] + 4} of them ({offline['consert']} ConSERT runs" in workflow
    comment = re.search(r"# Trimmed to (\d+) ConSERT runs instead of the paper config's (\d+)",
                        (ROOT / "config" / "offline.yaml").read_text(encoding="utf-8"))  # fmt: skip
    assert comment and [int(n) for n in comment.groups()] == [offline["consert"], paper["consert"]]


def test_every_page_quotes_the_same_smoke_run():
    """The smoke run's command and its time, wherever a page shows it: one command, one time."""
    shown = {}
    for page in PAGES:
        for line in page.read_text(encoding="utf-8").splitlines():
            if re.match(
                r"consert (train --config config/train/stand_in_smoke\.yaml|evaluate runs/stand-in-smoke)", line
            ):
                shown.setdefault(line.split("#")[0].split()[1], set()).add(" ".join(line.split()))
    assert set(shown) == {"train", "evaluate"}
    assert all(len(lines) == 1 for lines in shown.values()), shown
    assert all(re.search(r"# .*\d+ s$", next(iter(lines))) for lines in shown.values()), shown


def _quoted_messages() -> dict[str, str]:
    """Messages docs/troubleshooting.md quotes, each as the code prints it now (X: the path at hand)."""
    import tempfile

    from consert.configs import ConfigError, parse_overrides, read_yaml
    from consert.encode.models import ModelNotAvailableError, resolve_model
    from consert.planner.load import load_workflow_config
    from consert.train.config import TrainConfig

    def error(call, *args) -> str:
        try:
            call(*args)
        except (ConfigError, ModelNotAvailableError) as err:
            return str(err)
        raise AssertionError(f"{call.__name__}{args} raised nothing")

    def workflow(**values) -> str:
        import yaml

        return error(load_workflow_config, yaml.safe_load((ROOT / "config" / "offline.yaml").read_text()) | values)

    folder = Path(tempfile.mkdtemp())
    (folder / "config.yaml").write_text("mode: unsup\nlr: 1e-5\nlr: 2e-5\n")
    (folder / "bad" / "config.yaml").parent.mkdir()
    (folder / "bad" / "config.yaml").write_text("lr: 1e-5\n mode: unsup\n")
    missing = folder / "X"
    return {
        "config.yaml:3: duplicate key 'lr'": error(read_yaml, folder / "config.yaml"),
        "unknown key `temprature` (did you mean `temperature`?)": error(TrainConfig.from_dict, {"temprature": 0.1}),
        "lr: expected a number": error(TrainConfig.from_dict, {"lr": "abc"}),
        "--set lr: given twice (lr=1e-5, lr=2e-5)": error(parse_overrides, ["lr=1e-5", "lr=2e-5"]),
        "config.yaml:2: not valid YAML: mapping values are not allowed here": error(
            read_yaml, folder / "bad" / "config.yaml"
        ),
        "--set 'views=[shuffle': the value is not valid YAML (": error(parse_overrides, ["views=[shuffle"]),
        "remove_dropout: expected true or false (unquoted), got 'false' (str)": error(
            TrainConfig.from_dict, {"remove_dropout": "false"}
        ),
        "seed: expected an integer, got 1.9": error(TrainConfig.from_dict, {"seed": 1.9}),
        "config: unknown key `seedz` (did you mean `seeds`?)": workflow(seedz=[1]),
        "config key `dtype`: 'fp8' is not one of": workflow(dtype="fp8"),
        "config, run base-unsup-seed1: train keys: lr: ": workflow(train={"lr": "abc"}),
        "model directory X does not exist": error(resolve_model, str(missing)).replace(str(missing), "X"),
    }


def test_the_messages_troubleshooting_quotes_are_what_the_code_prints():
    page = (ROOT / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    messages = _quoted_messages()
    for quote, printed in messages.items():
        assert quote in page, f"troubleshooting.md no longer quotes {quote!r}"
        assert quote in printed, (quote, printed)
    # every "did you mean" hint the page quotes is one of those checked
    hints = set(re.findall(r"unknown key `\w+` \(did you mean `\w+`\?\)", page))
    assert hints and hints <= {hint for quote in messages for hint in re.findall(r"unknown key .*\?\)", quote)}
