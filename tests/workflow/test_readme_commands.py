"""Every `snakemake` and `consert` command of the README's, config/README.md's and the docs' code blocks, run as
written: snakemake ones as a
dry run (`-n`) in an empty folder, consert ones with `--help` appended (placeholders filled, optional
`[...]` parts left out). A command that cannot be parsed, such as `snakemake --cores 8 --resources gpu=1
all` (`--resources` takes every word after it, `all` included), fails here.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.fixtures import write_senteval_tree

README = ROOT / "README.md"
#: The pages whose commands users copy: the README, the config's README and every page of the docs site.
PAGES = [README, ROOT / "config" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def readme_commands(text: str) -> list[str]:
    """The snakemake and consert commands of the fenced shell blocks, continuation lines joined, comments
    and the commands they are chained to (``&&``, ``;``, ``|``) split off."""
    commands = []
    for language, block in re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):  # fences paired, in order
        if language not in ("", "bash", "sh", "console"):
            continue
        for line in block.replace("\\\n", " ").splitlines():
            line = re.split(r"\s#\s|^#", line)[0]
            for part in re.split(r"&&|;|\|", line):
                part = part.strip()
                if part.startswith(("snakemake ", "consert ")) or part == "snakemake":
                    commands.append(part)
    return commands


def _runnable(command: str, workdir: Path) -> list[str]:
    """The command's words with placeholders filled and optional parts left out."""
    command = re.sub(r"\[-[^\]]*\]?", "", command)  # optional flags of a synopsis (not a YAML list's brackets)
    command = command.replace("<repo>", str(ROOT)).replace("<workdir>", str(workdir))
    return shlex.split(command)


def _run(words: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env or {}), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(words, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _with_spacy_pipeline(folder: Path) -> dict[str, str]:
    """An environment where spaCy's ``en_core_web_sm`` counts as installed: an empty package of its name on the
    path. The paper config's DAG stops before any job without it (no job installs it; offline nothing can), and
    these dry runs plan jobs only, which never load it."""
    (folder / "site" / "en_core_web_sm").mkdir(parents=True)
    (folder / "site" / "en_core_web_sm" / "__init__.py").write_text('"""Planning only: not spaCy\'s pipeline."""\n')
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(folder / "site"), os.environ.get("PYTHONPATH")]))}


COMMANDS = list(dict.fromkeys(c for page in PAGES for c in readme_commands(page.read_text(encoding="utf-8"))))
YOUR_MODEL = ROOT / "docs" / "your-model.md"
#: The "Your model beside the paper" page's commands on the test config: tests/workflow/test_workflow.py runs each as
#: written, with the job counts the page gives (in the finished test DAG, and in an empty folder: a slow test).
RUN_IN_THE_DAG_TESTS = [c for c in readme_commands(YOUR_MODEL.read_text(encoding="utf-8")) if "config/test.yaml" in c]


def test_the_readme_shows_commands_and_the_extraction_finds_a_broken_one():
    readme = readme_commands(README.read_text(encoding="utf-8"))
    snakemake, consert = (sum(c.startswith(tool) for c in readme) for tool in ("snakemake", "consert"))
    assert snakemake >= 4 and consert >= 4 and len(COMMANDS) > len(readme)
    broken = "```bash\nsnakemake --cores 8 --resources gpu=1 all   # the paper\n```\n"
    assert readme_commands(broken) == ["snakemake --cores 8 --resources gpu=1 all"]


DRY_RUN_HERE = [c for c in COMMANDS if c.startswith("snakemake") and c not in RUN_IN_THE_DAG_TESTS]


#: The first two of the README's snakemake commands are dry-run in the default suite, the rest in the slow one (about
#: 12 s each on a 2-core Zen 3 EPYC).
@pytest.mark.parametrize(
    "command", [*DRY_RUN_HERE[:2], *(pytest.param(command, marks=pytest.mark.slow) for command in DRY_RUN_HERE[2:])]
)
def test_each_snakemake_command_of_the_readme_parses_and_dry_runs(command, tmp_path):
    words = _runnable(command, tmp_path)
    if "<workdir>/senteval" in command:  # a command run on the generated fixture data (the SLURM test's)
        write_senteval_tree(tmp_path / "senteval", pairs_per_file=4)
    if "--report" in words:  # a report needs a finished run: the slow browser test makes one; here the rest parses
        at = words.index("--report")
        words = words[:at] + words[at + 2 :]
    if "--directory" not in words:
        words += ["--directory", str(tmp_path)]  # outputs of a user's run in the checkout change nothing
    if "-n" not in words:
        words.append("-n")
    result = _run([*words, "--quiet", "rules"], ROOT, _with_spacy_pipeline(tmp_path))
    assert result.returncode == 0, (command, (result.stdout + result.stderr)[-2000:])


def test_the_dry_run_catches_a_target_swallowed_by_resources(tmp_path):
    words = ["snakemake", "--cores", "8", "--resources", "gpu=1", "all", "-n", "--directory", str(tmp_path)]
    result = _run(words, ROOT)
    assert result.returncode != 0 and "dictionary update sequence" in result.stderr


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.startswith("consert")])
def test_each_consert_command_of_the_readme_parses(command, tmp_path, capsys):
    """Parsed by the CLI's own parser, every flag and value checked (``--help`` would exit before a
    misspelled flag that follows it is reported)."""
    from consert.cli import build_parser

    build_parser().parse_args(_runnable(command, tmp_path)[1:])
    assert capsys.readouterr().err == ""


def test_the_consert_check_catches_a_misspelled_flag(tmp_path):
    from consert.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(_runnable("consert evaluate MODEL --pooling-typo mean", tmp_path)[1:])


NOT_REPRODUCED = ROOT / "docs" / "not-reproduced.md"
#: Commands of that page that need what cannot be had here: the authors' released checkpoint (parsed above only).
NEEDS_A_DOWNLOAD = ("consert evaluate unsup-consert-base/0_Transformer",)


@pytest.mark.slow
def test_the_not_reproduced_pages_commands_run_here(tmp_path):
    """Every command of the "A row is not reproduced" page that can run here runs to its end: the snakemake ones as
    the dry runs they are written as (above), the consert ones as written, in a fresh folder."""
    commands = readme_commands(NOT_REPRODUCED.read_text(encoding="utf-8"))
    assert sum(c.startswith("snakemake") and " -n" in c for c in commands) >= 2  # dry runs, run above
    runnable = [c for c in commands if c.startswith("consert") and not c.startswith(NEEDS_A_DOWNLOAD)]
    assert len(runnable) >= 2 and len(runnable) + len(NEEDS_A_DOWNLOAD) == sum(
        c.startswith("consert") for c in commands
    )
    for command in runnable:
        words = [
            w.replace("config/config.yaml", str(ROOT / "config" / "config.yaml")) for w in _runnable(command, tmp_path)
        ]
        result = _run(words, tmp_path)
        assert result.returncode == 0 and "Traceback" not in result.stderr, (command, result.stderr[-2000:])
    assert (tmp_path / "recipe-card.csv").stat().st_size > 1000


@pytest.mark.slow  # 50 s on 2 cores: the stand-in on the 7 real sets; its snakemake commands are dry runs above
def test_the_your_model_pages_commands_run_here(tmp_path):
    """The "Your model beside the paper" page's consert command runs as written, in a fresh folder, on the real STS
    sets: the stand-in among the published rows, marked as yours (its snakemake commands are the dry runs above)."""
    commands = readme_commands(YOUR_MODEL.read_text(encoding="utf-8"))
    runnable = [c for c in commands if c.startswith("consert")]
    assert runnable == ["consert evaluate sentence-transformers/all-MiniLM-L6-v2 --beside-paper"]
    assert sum(c.startswith("snakemake") and " -n" in c for c in commands) == 3 and len(RUN_IN_THE_DAG_TESTS) == 2
    result = _run(_runnable(runnable[0], tmp_path), tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.count("<- yours") == 2 and "not compared as a reproduction" in result.stdout
