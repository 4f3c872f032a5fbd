"""The checkout's own outputs are the user's: no test may write into them (a pytest plugin; ``tests/conftest.py`` loads
it). The README's main job writes ``results/``, ``figures/``, ``runs/``, ``logs/``, ``benchmarks/`` and
``.snakemake/`` in the checkout, and its test command runs next in the same checkout: every test works in folders of
its own. The session records what those folders hold when it starts (each file's size and modification time) and
fails, naming the paths, where anything there was added, changed or removed when it ends. ``.ci/run`` runs the main
job before the tests, so a test that needs those folders absent fails there too.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: The folders of the checkout the workflow writes (the user's results and everything that made them).
GUARDED = ("results", "figures", "runs", "logs", "benchmarks", ".snakemake")
#: The checkout whose folders are guarded: this project's, unless a test of the guard names another.
ROOT_ENV = "CONSERT_GUARDED_CHECKOUT"
#: The first words of the failure's headline in the log.
HEADLINE = "tests changed the checkout's own outputs"

_before: dict[str, tuple[int, int]] = {}


def guarded_root() -> Path:
    return Path(os.environ.get(ROOT_ENV) or Path(__file__).resolve().parents[1])


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under the guarded folders of ``root``: its size and modification time, by path."""
    found: dict[str, tuple[int, int]] = {}
    for name in GUARDED:
        top = root / name
        if not top.exists():
            continue
        for folder, _, files in os.walk(top):
            base = Path(folder)
            found[str(base.relative_to(root)) + "/"] = (0, 0)
            for file in files:
                try:
                    status = (base / file).lstat()
                except FileNotFoundError:  # removed while walked: the next snapshot names it
                    continue
                found[str((base / file).relative_to(root))] = (status.st_size, status.st_mtime_ns)
    return found


def differences(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """``added PATH``, ``changed PATH``, ``removed PATH`` for each path that differs, in path order."""
    out = []
    for path in sorted(set(before) | set(after)):
        if path not in before:
            out.append(f"added {path}")
        elif path not in after:
            out.append(f"removed {path}")
        elif before[path] != after[path] and not path.endswith("/"):
            out.append(f"changed {path}")
    return out


def pytest_sessionstart(session):
    _before.clear()
    _before.update(snapshot(guarded_root()))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    changed = differences(_before, snapshot(guarded_root()))
    if changed:
        session.config._checkout_changes = changed  # for the summary
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    changed = getattr(config, "_checkout_changes", None)
    if changed:
        root = guarded_root()
        terminalreporter.section(f"{HEADLINE} ({root})", red=True)
        for line in changed[:20]:
            terminalreporter.line(line)
        if len(changed) > 20:
            terminalreporter.line(f"... and {len(changed) - 20} more")
