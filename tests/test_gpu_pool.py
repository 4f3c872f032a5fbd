"""The GPU pool: concurrent jobs on fake device ids never share a whole card, and a killed job's card returns."""

from __future__ import annotations

import fcntl
import itertools
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from consert.gpu_pool import GpuPool, device_from_pool, idle_cards, pool_folder, visible_ids
from tests.conftest import ROOT

#: A job of the workflow: claims a card, notes when it held which, holds it a while.
JOB = textwrap.dedent(
    """
    import os, sys, time
    from consert.gpu_pool import GpuPool
    folder, log, ids, hold = sys.argv[1], sys.argv[2], sys.argv[3].split(","), float(sys.argv[4])
    with GpuPool(folder, ids).claim("whole", timeout=60) as device:
        with open(log, "a") as out:
            out.write(f"start {device} {os.getpid()} {time.monotonic()}\\n")
        time.sleep(hold)
        with open(log, "a") as out:
            out.write(f"end {device} {os.getpid()} {time.monotonic()}\\n")
    """
)


def _events(log: Path) -> list[tuple[str, str, int, float]]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [(kind, device, int(pid), float(at)) for kind, device, pid, at in (line.split() for line in lines)]


def test_concurrent_jobs_never_hold_one_card_twice_and_a_killed_job_loses_no_card(tmp_path):
    """Eight whole-card jobs on three fake ids, one killed with SIGKILL while it holds its card: every card is
    held by one job at a time, the other seven all run (the killed job's card went back to the pool), and
    afterwards all three cards are free at once."""
    folder, log, ids = tmp_path / "pool", tmp_path / "events.log", ["a", "b", "c"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    jobs = [
        subprocess.Popen([sys.executable, "-c", JOB, str(folder), str(log), ",".join(ids), "0.6"], env=env)
        for _ in range(8)
    ]
    deadline = time.monotonic() + 60
    while not _events(log) and time.monotonic() < deadline:
        time.sleep(0.02)
    _, victim_device, victim_pid, _ = _events(log)[0]
    os.kill(victim_pid, signal.SIGKILL)
    killed_at = time.monotonic()
    for job in jobs:
        job.wait(timeout=120)
    events = _events(log)
    starts = {pid: (device, at) for kind, device, pid, at in events if kind == "start"}
    ends = {pid: at for kind, _, pid, at in events if kind == "end"}
    held = {pid: (device, start, ends.get(pid, killed_at)) for pid, (device, start) in starts.items()}
    assert len(held) == 8 and sum(kind == "end" for kind, *_ in events) == 7
    assert held[victim_pid][0] == victim_device
    for device in ids:
        spans = sorted((start, end) for d, start, end in held.values() if d == device)
        assert all(end <= next_start for (_, end), (next_start, _) in itertools.pairwise(spans)), (device, spans)
    assert {device for device, _, _ in held.values()} == set(ids)
    pool = GpuPool(folder, ids)
    claims = [pool.try_claim("whole") for _ in ids]
    assert sorted(device for device, _ in claims) == ids and pool.try_claim("whole") is None
    for _, descriptor in claims:
        os.close(descriptor)


def test_shared_jobs_share_a_card_that_a_whole_card_job_then_waits_for(tmp_path):
    pool = GpuPool(tmp_path / "pool", ["0"])
    first, second = pool.try_claim("shared"), pool.try_claim("shared")
    assert first and second and first[0] == second[0] == "0"
    assert pool.try_claim("whole") is None
    with pytest.raises(TimeoutError, match="no GPU of"):
        with pool.claim("whole", timeout=0.3):
            pass
    os.close(first[1])
    os.close(second[1])
    with pool.claim("whole", timeout=1) as device:
        assert device == "0" and pool.try_claim("shared") is None


def _training_job_waiting(pool: GpuPool) -> tuple[threading.Thread, list[str]]:
    """A whole-card job started in a thread, returned once new shared jobs are kept off (a shared job that gets
    in before the mark ends at once) and it still waits: the thread, and the ids it claims."""
    claimed: list[str] = []

    def training_job() -> None:
        with pool.claim("whole", timeout=30) as device:
            claimed.append(device)

    job = threading.Thread(target=training_job)
    job.start()
    deadline = time.monotonic() + 10
    while (joined := pool.try_claim("shared")) is not None and time.monotonic() < deadline:
        os.close(joined[1])
        time.sleep(0.05)
    assert joined is None and job.is_alive() and not claimed
    return job, claimed


def test_a_whole_card_job_waiting_for_a_shared_card_keeps_new_shared_jobs_off_it(tmp_path):
    """Without the mark, shared jobs that come and go keep a card shared for as long as they overlap, and the
    training job waits all that time: while it waits, no new shared job gets the card; the one already there
    finishes, the whole-card job gets the card, and once it is done shared jobs start there again."""
    pool = GpuPool(tmp_path / "pool", ["0"])
    running = pool.try_claim("shared")
    another = pool.try_claim("shared")  # before any whole-card job waits, shared jobs join
    assert running and another
    os.close(another[1])
    job, claimed = _training_job_waiting(pool)
    os.close(running[1])
    job.join(timeout=10)
    assert claimed == ["0"]
    after = pool.try_claim("shared")
    assert after is not None  # the mark went with the whole-card job
    os.close(after[1])


def test_the_mark_goes_on_a_card_that_shared_jobs_hold_not_on_one_a_training_job_holds(tmp_path):
    """Card a trains whole, card b runs shared jobs: a second training job marks b (marking a would keep no shared
    job off anything), gets b once its shared job ends, and no new shared job started on b meanwhile."""
    pool = GpuPool(tmp_path / "pool", ["a", "b"])
    training, shared = pool.try_claim("whole"), pool.try_claim("shared")
    assert training[0] == "a" and shared[0] == "b"
    mark = pool.mark_waited_for(None)
    assert mark is not None and mark[0] == "b" and pool.try_claim("shared") is None
    os.close(mark[1])
    job, claimed = _training_job_waiting(pool)
    os.close(shared[1])
    job.join(timeout=10)
    assert claimed == ["b"]
    os.close(training[1])


def test_a_mark_moves_when_a_training_job_takes_its_card_and_goes_when_every_card_trains(tmp_path):
    """The marked card is taken whole by another training job: the mark moves to the card shared jobs hold, and
    is let go when that one too is taken whole."""
    pool = GpuPool(tmp_path / "pool", ["a", "b"])
    mark = pool.mark_waited_for(None)
    assert mark[0] == "a"  # every card free: the first
    first = pool.try_claim("whole")
    shared = pool.try_claim("shared")
    assert first[0] == "a" and shared[0] == "b"
    mark = pool.mark_waited_for(mark)
    assert mark[0] == "b"
    os.close(shared[1])
    second = pool.try_claim("whole")
    assert second[0] == "b" and pool.mark_waited_for(mark) is None
    released = os.open(tmp_path / "pool" / "b.waiting", os.O_RDWR)
    fcntl.flock(released, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if the mark on b were still held
    os.close(released)
    os.close(first[1])
    os.close(second[1])


def test_the_job_sees_only_its_card_and_the_pool_stands_aside_under_the_slurm_executor_or_without_gpus(tmp_path):
    environ = {"CONSERT_GPU_POOL": str(tmp_path / "pool"), "CUDA_VISIBLE_DEVICES": "3,5"}
    with device_from_pool(environ) as device:
        assert device == "3" and environ["CUDA_VISIBLE_DEVICES"] == "3"
        other = {"CONSERT_GPU_POOL": str(tmp_path / "pool"), "CUDA_VISIBLE_DEVICES": "3,5"}
        with device_from_pool(other) as second:
            assert second == "5"
    slurm = {"CUDA_VISIBLE_DEVICES": "7", "SLURM_JOB_ID": "12"}  # a job the SLURM executor submitted
    slurm["CONSERT_GPU_POOL"] = pool_folder(str(tmp_path / "pool"), submitted_by_slurm=True, environ=slurm)
    with device_from_pool(slurm) as device:
        assert device is None and slurm["CUDA_VISIBLE_DEVICES"] == "7"
    with device_from_pool({"CUDA_VISIBLE_DEVICES": "3,5"}) as device:  # not a workflow job
        assert device is None
    with device_from_pool({"CONSERT_GPU_POOL": str(tmp_path / "pool"), "CUDA_VISIBLE_DEVICES": ""}) as device:
        assert device is None  # no GPU: the job runs on the CPU


#: A workflow job inside an allocation: claims a card from the pool, says which, holds it until all four have one.
ALLOCATED_JOB = textwrap.dedent(
    """
    import os, sys, time
    from consert.gpu_pool import device_from_pool
    folder = sys.argv[1]
    with device_from_pool() as device:
        (__import__("pathlib").Path(folder) / f"{os.getpid()}.card").write_text(os.environ["CUDA_VISIBLE_DEVICES"])
        deadline = time.monotonic() + 60
        while len(list(__import__("pathlib").Path(folder).glob("*.card"))) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
    """
)


def test_inside_an_allocation_its_cards_go_one_to_a_job_from_a_node_local_pool(tmp_path):
    """snakemake inside `salloc --gpus=4` (a fake allocation: $SLURM_JOB_ID and $SLURM_JOB_GPUS, no
    $CUDA_VISIBLE_DEVICES): the pool's folder is node-local and the allocation's own; four jobs hold four different
    cards at once (each waits until all four hold one)."""
    allocation = {"SLURM_JOB_ID": f"9{os.getpid()}", "SLURM_JOB_GPUS": "4,5,6,7"}
    folder = pool_folder(".snakemake/gpu-pool", submitted_by_slurm=False, environ=allocation)
    assert Path(folder).name == f"consert-gpu-pool-{allocation['SLURM_JOB_ID']}" and Path(folder).is_absolute()
    env = {key: value for key, value in os.environ.items() if key != "CUDA_VISIBLE_DEVICES"}
    env.update(allocation, PYTHONPATH=str(ROOT), CONSERT_GPU_POOL=folder, CONSERT_GPU_SHARE="whole")
    try:
        jobs = [subprocess.Popen([sys.executable, "-c", ALLOCATED_JOB, str(tmp_path)], env=env) for _ in range(4)]
        assert [job.wait(timeout=120) for job in jobs] == [0] * 4
    finally:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    assert sorted(path.read_text() for path in tmp_path.glob("*.card")) == ["4", "5", "6", "7"]
    assert pool_folder(".snakemake/gpu-pool", submitted_by_slurm=False, environ={}) == ".snakemake/gpu-pool"


def test_idle_cards_are_named_with_what_to_pass():
    """At most min(gpu resource, cores // threads) whole-card jobs at once: the rest of the cards stay idle."""
    assert idle_cards(8, 8, 4, 1).startswith("8 GPUs are here, but at most 4 training jobs run at once")
    assert idle_cards(8, 8, 4, 1).endswith("4 cards stay idle; pass --resources gpu=8 --cores 8")
    assert idle_cards(8, 2, 64, 8).endswith("6 cards stay idle; pass --resources gpu=8 --cores 64")
    assert idle_cards(4, 4, 32, 8) == "" == idle_cards(0, 1, 8, 8)


@pytest.mark.slow
def test_the_workflow_inside_an_allocation_gives_its_jobs_the_allocations_pool_and_names_idle_cards(tmp_path):
    """The paper config's dry run in a fake allocation of 8 cards with --cores 4: one line names the 4 idle cards,
    and a training job's command claims from the allocation's node-local pool."""
    env = {key: value for key, value in os.environ.items() if key != "CUDA_VISIBLE_DEVICES"}
    env.update(
        SLURM_JOB_ID="424242",
        SLURM_JOB_GPUS="0,1,2,3,4,5,6,7",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
    )
    command = [sys.executable, "-m", "snakemake", "-n", "-p", "results/evals/consert/base-unsup-seed1.csv",
               "--directory", str(tmp_path), "--configfile", str(ROOT / "config" / "config.yaml"),
               "--cores", "4", "--resources", "gpu=8"]  # fmt: skip
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    text = result.stdout + result.stderr
    assert result.returncode == 0, text[-3000:]
    assert "8 GPUs are here, but at most 4 training jobs run at once" in text and "4 cards stay idle" in text
    pool = Path(__import__("tempfile").gettempdir()) / "consert-gpu-pool-424242"
    assert f"CONSERT_GPU_POOL={pool} CONSERT_GPU_SHARE=whole" in text


def test_the_ids_are_the_visible_devices_else_the_drivers_gpus(tmp_path):
    driver = tmp_path / "gpus"
    for address in ("0000:17:00.0", "0000:65:00.0"):
        (driver / address).mkdir(parents=True)
    assert visible_ids({}, driver) == ["0", "1"]
    assert visible_ids({"CUDA_VISIBLE_DEVICES": "GPU-1a2b, GPU-3c4d"}, driver) == ["GPU-1a2b", "GPU-3c4d"]
    assert visible_ids({"CUDA_VISIBLE_DEVICES": "-1"}, driver) == []
    assert visible_ids({}, tmp_path / "no-driver") == []


#: As another user: open a card's lock file read-only and take a shared lock on it (what held a card at 03ef47f).
INTRUDER = textwrap.dedent(
    """
    import fcntl, os, sys
    os.setgid(65534); os.setuid(65534)  # nobody
    try:
        descriptor = os.open(sys.argv[1], os.O_RDONLY)
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as err:
        print(type(err).__name__)
    else:
        print("held")
    """
)


@pytest.fixture()
def shared_folder():
    """A folder every user may pass through (as /tmp is): only the pool's own modes then keep others out. Removed
    after the test."""
    import shutil
    import tempfile

    if os.geteuid() != 0:
        pytest.skip("needs root, to act as a second user (nobody); CI runs as root")
    folder = Path(tempfile.mkdtemp(prefix="consert-pool-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def test_another_user_can_neither_enter_the_pool_nor_hold_a_cards_lock(shared_folder):
    """At 03ef47f the lock files were made readable by all (0666 under the umask): another user could open one, hold
    its lock, and a job's claim waited forever. The pool's folder is 0700 and its lock files 0600."""
    pool = GpuPool(shared_folder / "gpu-pool", ["0"])
    with pool.claim("shared"):
        lock = shared_folder / "gpu-pool" / "0.lock"
        assert (lock.parent.stat().st_mode & 0o777, lock.stat().st_mode & 0o777) == (0o700, 0o600)
        intruder = [sys.executable, "-c", INTRUDER, str(lock)]
        assert subprocess.run(intruder, capture_output=True, text=True).stdout.strip() == "PermissionError"
        lock.parent.chmod(0o711)  # even with a folder others may pass through, the file keeps them out
        assert subprocess.run(intruder, capture_output=True, text=True).stdout.strip() == "PermissionError"
    with pool.claim("whole"):
        assert lock.parent.stat().st_mode & 0o777 == 0o700  # made private again on its next use


def test_a_wait_names_the_holders_and_ends_in_one_line_after_its_bound(tmp_path, capsys):
    """The card's lock file holds its holder's pid, user and share; the waiting job names them, and stops after
    ``$CONSERT_GPU_WAIT`` seconds (the workflow's gpu_wait_minutes)."""
    import getpass

    pool = GpuPool(tmp_path / "pool", ["0"])
    with pool.claim("whole"):
        assert (tmp_path / "pool" / "0.lock").read_text() == f"{os.getpid()} {getpass.getuser()} whole\n"
        environ = {"CONSERT_GPU_POOL": str(tmp_path / "pool"), "CUDA_VISIBLE_DEVICES": "0",
                   "CONSERT_GPU_SHARE": "whole", "CONSERT_GPU_WAIT": "0.5"}  # fmt: skip
        started = time.monotonic()
        with pytest.raises(
            TimeoutError, match=rf"after 0.5 s \(held: 0 by pid {os.getpid()} \({getpass.getuser()}, whole\)"
        ):
            with device_from_pool(environ):
                pass
        assert time.monotonic() - started < 5
    assert f"waiting for a GPU of ['0'] (whole job; held: 0 by pid {os.getpid()}" in capsys.readouterr().err
