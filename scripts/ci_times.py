"""Seconds per test file from pytest's JUnit XML reports, longest first: where CI's time goes.

    python scripts/ci_times.py REPORT.xml [REPORT.xml ...]

Each report is one pytest run (``.ci/run`` writes one for the default suite and one for the slow suite);
a file's time is the sum of its tests' (setup and teardown included, as pytest reports them).
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path


def file_seconds(report: Path) -> Counter[str]:
    """Seconds by test file of one JUnit XML report (classname ``tests.a.test_b.Class``: ``tests/a/test_b.py``)."""
    seconds: Counter[str] = Counter()
    for case in ElementTree.parse(report).iter("testcase"):
        parts = case.get("classname", "").split(".")
        modules = [i for i, part in enumerate(parts) if part.startswith("test_")]
        name = "/".join(parts[: modules[0] + 1]) + ".py" if modules else case.get("classname", "?")
        seconds[name] += float(case.get("time", 0))
    return seconds


def main(paths: list[str]) -> int:
    for path in paths:
        seconds = file_seconds(Path(path))
        print(f"{path}: {sum(seconds.values()) / 60:.1f} min in {len(seconds)} files")
        for name, value in seconds.most_common():
            print(f"  {value:8.1f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
