"""Compare two result trees CSV by CSV: which files are byte-identical, which differ and in which columns.

    python scripts/compare_results.py BEFORE_DIR AFTER_DIR

Both directories are workflow working directories (their ``results/`` is compared, ``results/published`` excepted);
the plan files of a snapshot (``scripts/snapshot_plans.py``: ``plan.txt``, the settings files ``results/*.yaml``,
each run's ``runs/RUN/train.yaml``) are compared byte for byte. Columns that name when, where and how long a run
took (the commit, timestamps, seconds, memory) change from run to run by nature and are compared only when
``--strict`` asks; everything else must be equal for a file to count as the same. Exit status 0 when every file is
the same, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

#: Columns that record the run itself rather than its results: when, how long, which commit and packages, the
#: folder the data was read from (its sha256 is compared), and how the precision was chosen (measured now or
#: read from the cache; the chosen ``dtype`` and ``engine`` are compared).
VOLATILE = frozenset(
    {"harness_commit", "timestamp", "seconds", "wall_s", "cpu_s", "peak_rss_mb", "packages", "data_dir", "precision"}
)


def result_files(root: Path) -> dict[str, Path]:
    """Every CSV under ``root/results`` but the published tables, by path relative to ``results``."""
    results = root / "results"
    return {
        str(path.relative_to(results)): path
        for path in sorted(results.rglob("*.csv"))
        if path.relative_to(results).parts[0] != "published"
    }


def plan_files(root: Path) -> dict[str, Path]:
    """The plan's text files of a working directory: ``plan.txt``, ``results/*.yaml`` and ``runs/*/train.yaml``."""
    found = [root / "plan.txt", *sorted((root / "results").glob("*.yaml")), *sorted(root.glob("runs/*/train.yaml"))]
    return {str(path.relative_to(root)): path for path in found if path.is_file()}


def differing_columns(before: Path, after: Path, ignore: frozenset[str]) -> list[str] | None:
    """None when the two CSVs are the same apart from ``ignore``d columns; else the columns that differ (or a
    word on the shape)."""
    if before.read_bytes() == after.read_bytes():
        return None
    old, new = pd.read_csv(before, dtype=str), pd.read_csv(after, dtype=str)
    if list(old.columns) != list(new.columns):
        gone, added = sorted(set(old.columns) - set(new.columns)), sorted(set(new.columns) - set(old.columns))
        return [f"columns: -{gone} +{added}"]
    if len(old) != len(new):
        return [f"rows: {len(old)} -> {len(new)}"]
    changed = [c for c in old.columns if c not in ignore and not old[c].fillna("").equals(new[c].fillna(""))]
    return changed or None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--strict", action="store_true", help="compare the volatile columns too")
    args = parser.parse_args(argv)
    ignore = frozenset() if args.strict else VOLATILE
    before, after = result_files(args.before), result_files(args.after)
    same, different = 0, 0
    old_plan, new_plan = plan_files(args.before), plan_files(args.after)
    for name in sorted(old_plan.keys() | new_plan.keys()):
        if name not in old_plan or name not in new_plan:
            print(f"{'only before' if name in old_plan else 'only after'}: {name}")
            different += 1
        elif old_plan[name].read_bytes() == new_plan[name].read_bytes():
            same += 1
        else:
            old, new = old_plan[name].read_text().splitlines(), new_plan[name].read_text().splitlines()
            print(f"differs: {name}: {len(set(old) ^ set(new))} lines not in both")
            different += 1
    for name in sorted(before.keys() | after.keys()):
        if name not in after or name not in before:
            print(f"{'only before' if name in before else 'only after'}: {name}")
            different += 1
            continue
        columns = differing_columns(before[name], after[name], ignore)
        if columns is None:
            same += 1
        else:
            different += 1
            print(f"differs: {name}: {', '.join(columns)}")
    volatile = "" if args.strict else f" (ignoring {', '.join(sorted(VOLATILE))})"
    print(f"{same} of {same + different} result CSVs and plan files the same{volatile}")
    return 0 if different == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
