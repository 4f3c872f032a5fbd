"""A figure's stamp: when and on which hardware its numbers were computed, by which commit, and when it was drawn.

The numbers' part is read from the files the figure is built from (their ``hardware``, ``harness_commit``
and ``timestamp`` columns, every row, so every seed); the drawing's part is this process's commit and clock.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from consert.provenance import git_commit, utc_timestamp

#: The columns of a result file that say where and when it was computed.
STAMP_COLUMNS = ("hardware", "harness_commit", "timestamp")
#: A stamp's lines are wrapped at this many characters: about 6 inches at 6 pt, the width of the narrowest
#: figures (Figures 4 and 7).
STAMP_WIDTH = 130


def short_commit(commit: str) -> str:
    """A commit as its first 12 hex digits, ``-dirty`` kept (``unknown`` as it is)."""
    sha, dirty, _ = commit.partition("-dirty")
    return sha[:12] + ("-dirty" if dirty else "")


def _date_span(timestamps: Iterable[str]) -> str:
    days = sorted({stamp[:10] for stamp in timestamps})
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"


def figure_stamp(sources: Iterable[str | Path], drawn_at: str | None = None, drawn_by: str | None = None) -> str:
    """The stamp of a figure built from the result files ``sources``: one line for its numbers (the dates they
    were computed, each hardware, each commit), one saying how many of the files record none of this (when any),
    and one for the drawing (``drawn_at``, a UTC ISO timestamp, and ``drawn_by``, a commit: now and this checkout
    when not given)."""
    values: dict[str, set[str]] = {column: set() for column in STAMP_COLUMNS}
    files = unrecorded = 0
    for path in dict.fromkeys(str(source) for source in sources):
        files += 1
        frame = pd.read_csv(path, usecols=lambda column: column in STAMP_COLUMNS, dtype=str, keep_default_na=False)
        if frame.empty:  # none of the columns, or no rows
            unrecorded += 1
            continue
        for column in frame.columns:
            values[column] |= {value for value in frame[column] if value}
    lines = []
    if any(values.values()):
        when = _date_span(values["timestamp"]) if values["timestamp"] else "on an unrecorded date"
        where = " + ".join(sorted(values["hardware"])) or "unrecorded hardware"
        commits = ", ".join(sorted(short_commit(commit) for commit in values["harness_commit"])) or "unrecorded"
        lines.append(f"numbers computed {when} by harness {commits} on {where}")
    if unrecorded:
        lines.append(f"{unrecorded} of its {files} input files record no hardware, commit or date")
    drawn_at = drawn_at or utc_timestamp()
    lines.append(f"drawn {drawn_at[:10]} {drawn_at[11:16]} UTC by harness {short_commit(drawn_by or git_commit())}")
    wrapper = textwrap.TextWrapper(STAMP_WIDTH, subsequent_indent="    ", break_on_hyphens=False)
    return "\n".join(wrapper.fill(line) for line in lines)
