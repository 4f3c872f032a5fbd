"""How a command behaves as a process among others: how many threads it computes with (``--threads``, by default
the physical cores it may run on) and progress bars that stay readable in a log file."""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path

#: Seconds between two progress lines when stderr is a file or a pipe, not a terminal.
LOG_PROGRESS_INTERVAL = 30.0
_SYSFS_CPU = Path("/sys/devices/system/cpu")
_CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def _allowed_cpus() -> set[int]:
    """The logical CPUs this process may run on (its affinity; every CPU where the OS has no affinity)."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def _physical_cores(cpus: set[int], sysfs: Path = _SYSFS_CPU) -> int:
    """How many physical cores ``cpus`` span (SMT siblings counted once; the logical count if sysfs says nothing)."""
    cores = set()
    for cpu in cpus:
        topology = sysfs / f"cpu{cpu}" / "topology"
        try:
            cores.add(tuple((topology / name).read_text().strip() for name in ("physical_package_id", "core_id")))
        except OSError:
            return len(cpus)
    return len(cores) or len(cpus)


def _cgroup_cpus(path: Path = _CGROUP_CPU_MAX) -> float:
    """The CPUs a cgroup v2 quota grants (``cpu.max``: quota and period in microseconds); inf when unlimited."""
    try:
        quota, period = path.read_text().split()[:2]
        return math.inf if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        return math.inf


def default_threads(
    environ: Mapping[str, str] | None = None,
    cpus: set[int] | None = None,
    physical: int | None = None,
    quota: float | None = None,
) -> int:
    """The threads a command computes with when ``--threads`` is not given: ``$OMP_NUM_THREADS`` when the caller
    set it (a workflow job, a batch script), else the physical cores this process may run on (its affinity and
    its cgroup's quota; SMT siblings once), at least 1. Every argument defaults to this machine's value. The load
    is not counted: a run's arithmetic would then follow what else the machine did in the last minute (its own
    earlier work included); on a machine others use, ``--threads N`` says how many."""
    environ = os.environ if environ is None else environ
    given = environ.get("OMP_NUM_THREADS", "").strip()
    if re.fullmatch(r"[1-9]\d*", given):
        return int(given)
    cpus = _allowed_cpus() if cpus is None else cpus
    physical = _physical_cores(cpus) if physical is None else physical
    quota = _cgroup_cpus() if quota is None else quota
    return max(1, min(physical, math.floor(quota) if quota != math.inf else physical))


def set_threads(threads: int | None) -> int:
    """Compute with ``threads`` threads (PyTorch's intra-op pool, which ONNX Runtime's follows), or the
    :func:`default_threads`; returns the number there was before."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads or default_threads())
    return before


class LogProgress:
    """A text stream over ``stream`` (stderr written to a file or a pipe) that turns progress bars into lines.

    A bar redraws itself in place with carriage returns: in a log file that is one endless line. Here each redraw
    replaces the pending one, and a pending redraw is written as a line of its own at most once per ``interval``
    seconds (the first at once), and when the bar ends. Other text passes through unchanged."""

    def __init__(self, stream, interval: float = LOG_PROGRESS_INTERVAL, clock: Callable[[], float] = time.monotonic):
        self.stream, self.interval, self.clock = stream, interval, clock
        self.pending = ""
        self.last: float | None = None

    def write(self, text: str) -> int:
        head, *redraws = text.split("\r")
        if head:
            self._pass(head)
        for redraw in redraws:
            line, newline, rest = redraw.partition("\n")
            if line.strip():
                self.pending = line.rstrip()
            if newline:  # the bar ends (or text follows it): its last state, then the rest as it is
                self._emit()
                if rest:
                    self._pass(rest)
            elif self.pending and (self.last is None or self.clock() - self.last >= self.interval):
                self._emit()
        return len(text)

    def _pass(self, text: str) -> None:
        if self.pending and text.startswith("\n"):  # the newline that closes a bar
            self._emit()
            text = text[1:]
        elif self.pending:
            self._emit()
        self.stream.write(text)

    def _emit(self) -> None:
        if self.pending:
            self.stream.write(self.pending + "\n")
            self.last, self.pending = self.clock(), ""

    def flush(self) -> None:
        self.stream.flush()

    def close_bar(self) -> None:
        """Write a redraw still pending (the state a bar was left in)."""
        self._emit()
        self.stream.flush()

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str):  # fileno, encoding, errors...: the underlying stream's
        return getattr(self.stream, name)
