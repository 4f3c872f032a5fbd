"""Which GPU a workflow job trains on, on a box with several: a pool of device ids, one lock file each.

``snakemake --resources gpu=4`` lets four jobs run at once, but nothing tells them apart: each would train on
``cuda:0``. So a job of the workflow claims a card before CUDA starts: it takes a lock on one id's file
under the pool folder (``.snakemake/gpu-pool``) and sets ``CUDA_VISIBLE_DEVICES`` to that id. A whole-card
job takes an exclusive lock, a job that shares a card a shared one (several shared jobs on one card, never
beside a whole-card job). A whole-card job that finds every card taken marks one that shared jobs hold as
waited for (an exclusive lock on the id's ``.waiting`` file), moving the mark if a whole-card job takes that
card: no new shared job starts on the marked card, so a stream of short shared jobs cannot keep it from a
training job. The locks are the kernel's (``flock``): they end with the process,
whether the job finished, failed or was killed, so no id is held twice and none is lost.

The pool's folder and lock files are the user's own (0700 and 0600): another user cannot open a lock file, so
cannot hold a card's lock. A lock file holds its last holder's pid, user and share, which a waiting job names; a job
waits at most ``$CONSERT_GPU_WAIT`` seconds (the workflow's ``gpu_wait_minutes``), then stops in one line naming the
holders.

The ids are ``$CUDA_VISIBLE_DEVICES``'s entries where it is set, else a SLURM allocation's cards
(``$SLURM_STEP_GPUS``, ``$SLURM_JOB_GPUS``), else one per GPU the NVIDIA driver lists. The workflow turns the pool on
per job with ``$CONSERT_GPU_POOL`` (the folder, :func:`pool_folder`) and ``$CONSERT_GPU_SHARE`` (``whole`` or
``shared``): a job the SLURM executor submitted has an allocation of its own, whose card the scheduler assigned, and
gets no pool; inside an allocation snakemake itself runs in (``salloc --gpus=8``, then snakemake with its local
executor), the pool hands out the allocation's cards, from a node-local folder keyed by the allocation's id.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

POOL_ENV, SHARE_ENV, WAIT_ENV = "CONSERT_GPU_POOL", "CONSERT_GPU_SHARE", "CONSERT_GPU_WAIT"
SHARES = ("whole", "shared")
#: Where the NVIDIA driver lists one folder per GPU.
NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")
#: Seconds between two tries while every card is taken.
RETRY_SECONDS = 0.2


#: Where a SLURM allocation lists its cards, in the order they are read: the step's, then the job's.
ALLOCATION_ENV = ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS")


def visible_ids(environ: dict[str, str] | None = None, driver: Path = NVIDIA_GPUS) -> list[str]:
    """The ids a pool hands out: ``$CUDA_VISIBLE_DEVICES``'s entries, else a SLURM allocation's cards
    (:data:`ALLOCATION_ENV`), else ``0..n-1`` for the driver's GPUs."""
    environ = os.environ if environ is None else environ
    for name in ("CUDA_VISIBLE_DEVICES", *ALLOCATION_ENV):
        listed = environ.get(name)
        if listed is not None:
            return [entry.strip() for entry in listed.split(",") if entry.strip() and entry.strip() != "-1"]
    count = len(list(driver.iterdir())) if driver.is_dir() else 0
    return [str(index) for index in range(count)]


def pool_folder(default: str, submitted_by_slurm: bool, environ: dict[str, str] | None = None) -> str:
    """The pool's folder for a workflow's jobs: "" (no pool) for a job the SLURM executor submitted (an allocation of
    its own: the scheduler assigned its card); inside an allocation snakemake runs in with its local executor, a
    node-local folder keyed by the allocation (``$TMPDIR`` or /tmp, ``consert-gpu-pool-$SLURM_JOB_ID``: two
    allocations on one node never share one); else ``default`` (the checkout's ``.snakemake/gpu-pool``)."""
    import tempfile

    environ = os.environ if environ is None else environ
    if submitted_by_slurm:
        return ""
    if environ.get("SLURM_JOB_ID"):
        return str(Path(tempfile.gettempdir()) / f"consert-gpu-pool-{environ['SLURM_JOB_ID']}")
    return default


def idle_cards(cards: int, gpus: int, cores: int, threads: int) -> str:
    """One line where ``--resources gpu=N`` (``gpus``) or ``--cores`` leave some of ``cards`` without a whole-card
    job: at most min(gpus, cores // threads) such jobs run at once; "" where every card can be busy."""
    at_once = min(gpus, cores // max(threads, 1))
    if cards <= at_once:
        return ""
    return (
        f"{cards} GPUs are here, but at most {at_once} training jobs run at once (--resources gpu={gpus}, --cores "
        f"{cores}, {threads} threads a job): {cards - at_once} cards stay idle; pass --resources gpu={cards} "
        f"--cores {cards * max(threads, 1)}"
    )


class GpuPool:
    """Device ids, each with a lock file under ``folder``."""

    def __init__(self, folder: str | os.PathLike, ids: Sequence[str]):
        if not ids:
            raise ValueError("a GPU pool needs at least one device id")
        self.folder, self.ids = Path(folder), list(ids)

    def _open(self, device: str, suffix: str) -> int:
        """The id's lock (or mark) file, opened: the folder and the file the user's own, no one else's."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        folder = self.folder.stat()
        if folder.st_uid != os.getuid():
            raise PermissionError(f"GPU pool {self.folder}: belongs to uid {folder.st_uid}, not this user; remove it")
        if folder.st_mode & 0o077:  # a pool folder made before it was private: made so
            self.folder.chmod(0o700)
        path = self.folder / f"{device}.{suffix}"
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        if os.fstat(descriptor).st_uid != os.getuid():
            os.close(descriptor)
            raise PermissionError(f"GPU pool lock {path}: belongs to another user; remove it")
        os.fchmod(descriptor, 0o600)
        return descriptor

    def holders(self) -> str:
        """Who holds each id, as its lock file last said (``0 by pid 123 (alice, whole)``; ``free`` where none)."""
        described = []
        for device in self.ids:
            path = self.folder / f"{device}.lock"
            try:
                pid, user, share = path.read_text().split()[:3]
                held = self.held_whole(device) or share == "shared"
            except (OSError, ValueError):
                described.append(f"{device} free")
                continue
            described.append(f"{device} by pid {pid} ({user}, {share})" if held else f"{device} free")
        return ", ".join(described)

    def try_claim(self, share: str) -> tuple[str, int] | None:
        """``(id, open file descriptor holding its lock)`` of an id free for ``share``, else ``None``: the first
        free one for a whole-card job; for a shared job, the ids are tried from one that depends on the process
        id, so that shared jobs spread over the cards, and a card a whole-card job waits for is passed over."""
        if share not in SHARES:
            raise ValueError(f"unknown GPU share {share!r}; expected one of {SHARES}")
        mode = fcntl.LOCK_EX if share == "whole" else fcntl.LOCK_SH
        first = 0 if share == "whole" else os.getpid() % len(self.ids)
        for device in self.ids[first:] + self.ids[:first]:
            waiting = self._open(device, "waiting") if share == "shared" else None
            try:
                if waiting is not None and not _locked(waiting, fcntl.LOCK_SH):
                    continue
                descriptor = self._open(device, "lock")
                try:
                    locked = _locked(descriptor, mode)
                except BaseException:
                    os.close(descriptor)
                    raise
                if locked:
                    _sign(descriptor, share)
                    return device, descriptor
                os.close(descriptor)
            finally:
                if waiting is not None:
                    os.close(waiting)
        return None

    def held_whole(self, device: str) -> bool:
        """Whether a whole-card job holds ``device`` (a shared lock cannot be had; one that can is let go at once)."""
        descriptor = self._open(device, "lock")
        try:
            return not _locked(descriptor, fcntl.LOCK_SH)
        finally:
            os.close(descriptor)

    def mark_waited_for(self, mark: tuple[str, int] | None) -> tuple[str, int] | None:
        """A waiting whole-card job's mark, kept or moved: on a card that shared jobs hold (or a free one) and that no
        other whole-card job marks, so that no new shared job starts there and the card drains. ``(id, open file
        descriptor holding the mark)``, closing it ends the mark; ``None`` where every card is held whole (no shared
        job can start anyway) or marked."""
        if mark is not None:
            if not self.held_whole(mark[0]):
                return mark
            os.close(mark[1])  # a whole-card job took the marked card: mark one that drains
        for device in self.ids:
            if self.held_whole(device):
                continue
            waiting = self._open(device, "waiting")
            if _locked(waiting, fcntl.LOCK_EX):
                return device, waiting
            os.close(waiting)
        return None

    @contextlib.contextmanager
    def claim(self, share: str, timeout: float | None = None) -> Iterator[str]:
        """Hold one id for ``share`` while the block runs, waiting for one to be free (``timeout`` seconds at
        most: then a ``TimeoutError``); a whole-card job marks one card as waited for meanwhile."""
        start, told, mark = time.monotonic(), False, None
        try:
            while (claimed := self.try_claim(share)) is None:
                if timeout is not None and time.monotonic() - start > timeout:
                    raise TimeoutError(
                        f"no GPU of {self.ids} free for a {share} job after {timeout:g} s (held: {self.holders()}); "
                        "raise gpu_wait_minutes, or end what holds them"
                    )
                if share == "whole":
                    mark = self.mark_waited_for(mark)
                if not told:
                    print(
                        f"waiting for a GPU of {self.ids} ({share} job; held: {self.holders()})",
                        file=sys.stderr,
                        flush=True,
                    )
                    told = True
                time.sleep(RETRY_SECONDS)
        finally:
            if mark is not None:
                os.close(mark[1])
        device, descriptor = claimed
        try:
            yield device
        finally:
            os.close(descriptor)  # closing the last descriptor releases the lock


def _sign(descriptor: int, share: str) -> None:
    """Write this holder's pid, user and share into the lock file it holds (what a waiting job names)."""
    import getpass

    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, f"{os.getpid()} {getpass.getuser()} {share}\n".encode(), 0)


def _locked(descriptor: int, mode: int) -> bool:
    """Whether ``descriptor``'s file could be locked in ``mode`` at once (then it is)."""
    try:
        fcntl.flock(descriptor, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextlib.contextmanager
def device_from_pool(environ: dict[str, str] | None = None) -> Iterator[str | None]:
    """Claim a card for this process as the workflow asked (``$CONSERT_GPU_POOL``, ``$CONSERT_GPU_SHARE``) and
    make it the only one CUDA sees; hold it until the block ends. ``None`` where no pool applies: not asked
    for (a job the SLURM executor submitted, :func:`pool_folder`), or no GPU. Call before anything starts CUDA."""
    environ = os.environ if environ is None else environ
    folder, ids = environ.get(POOL_ENV), visible_ids(environ)
    if not folder or not ids:
        yield None
        return
    wait = float(environ[WAIT_ENV]) if environ.get(WAIT_ENV) else None
    with GpuPool(folder, ids).claim(environ.get(SHARE_ENV, "whole"), timeout=wait) as device:
        environ["CUDA_VISIBLE_DEVICES"] = device
        yield device
