"""The job server (consert/job_server.py): a command forked from it is the command run in its own process: the same
output files, streams, exit status and one-line errors; a job it cannot serve as a fresh interpreter would run
starts cold and still runs; a signal to the launcher reaches the job; a killed launcher leaves no job behind; only
``consert-job`` asks it (``consert`` never does); it serves its own user only, answers a malformed request with an
error and serves on, lets no silent client stall another, and its next start removes a killed server's folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from consert import job_server
from consert.encode.models import STAND_IN_MODEL


@pytest.fixture(scope="module")
def server():
    """A job server owned by this process, stopped after the module's tests; yields the environment its jobs
    carry (``$CONSERT_JOB_SERVER``), as the workflow's jobs inherit it."""
    saved = os.environ.get(job_server.SERVER_ENV)
    path = job_server.start()
    assert path and os.environ[job_server.SERVER_ENV] == path
    environment = dict(os.environ)
    os.environ.pop(job_server.SERVER_ENV)  # this process's own commands stay cold
    yield environment
    os.environ[job_server.SERVER_ENV] = path
    job_server.stop()
    assert job_server.SERVER_ENV not in os.environ and not Path(path).parent.exists()
    if saved is not None:
        os.environ[job_server.SERVER_ENV] = saved


def consert_job(*argv: str, env: dict[str, str], cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    """``consert-job ARGV`` as a workflow job of a config with the job server runs it: the installed command, its
    streams files of its own."""
    out, err = cwd / "stdout.txt", cwd / "stderr.txt"
    with out.open("w") as stdout, err.open("w") as stderr:
        result = subprocess.run(
            [str(Path(sys.executable).parent / "consert-job"), *argv],
            env=env,
            cwd=cwd,
            stdout=stdout,
            stderr=stderr,
            timeout=300,
            **kwargs,
        )
    result.stdout, result.stderr = out.read_text(), err.read_text()
    return result


def _without_server(environment: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in environment.items() if k != job_server.SERVER_ENV}


def test_a_job_from_the_server_writes_what_its_own_process_writes(server, tiny_model_dir, tiny_tree, tmp_path):
    """An evaluation of a tiny BERT, run cold and then from the server, in the job's folder with a relative output
    path and its own thread count: the same scores to the bit, the same table on stdout, exit 0; then a usage error
    through the server is the same one line and exit 2."""
    outputs = {}
    for how, env in (("cold", _without_server(server)), ("server", server)):
        folder = tmp_path / how
        folder.mkdir()
        env = {**env, "OMP_NUM_THREADS": "1"}
        arguments = ("evaluate", tiny_model_dir, "--data", str(tiny_tree), "--dtype", "fp32", "--engine", "torch")
        result = consert_job(*arguments, "--output", "scores.csv", env=env, cwd=folder)
        assert result.returncode == 0, result.stderr
        frame = (folder / "scores.csv").read_text().splitlines()
        outputs[how] = (result.stdout, [line.split(",")[:12] for line in frame])  # the scores, not the timestamps
        assert "threads" not in result.stderr
    assert outputs["cold"] == outputs["server"]
    usage = consert_job("evaluate", "--pooling", "nonsense", env=server, cwd=tmp_path)
    assert usage.returncode == 2 and len(usage.stderr.strip().splitlines()) == 1, usage.stderr
    assert usage.stderr.startswith("consert evaluate: error:")


def test_a_job_that_differs_at_import_time_starts_cold_and_still_runs(server, tmp_path):
    """A variable read when modules are imported (here HF_HUB_OFFLINE, which huggingface_hub reads on import) set
    otherwise than the server's: the command runs in its own process, and the server counts it as declined."""
    changed = {**server, "HF_HUB_OFFLINE": "0" if server.get("HF_HUB_OFFLINE") == "1" else "1"}
    assert job_server.Server._declines(_FakeServer(server), {"python": job_server._python(), "env": changed})
    assert not job_server.Server._declines(_FakeServer(server), {"python": job_server._python(), "env": server})
    other_python = {"python": ["/usr/bin/python3"], "env": server}
    assert job_server.Server._declines(_FakeServer(server), other_python) == "another Python"
    result = consert_job("--version", env=changed, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("consert "), result.stderr


def test_a_job_run_by_the_shell_of_an_activated_virtual_environment_is_served(server):
    """A virtual environment's `activate` exports PS1; bash, which snakemake starts each job's command in, unsets PS1
    and PS2 in a shell that is not interactive. The README's main job, run where a virtual environment was activated
    in a script, once had all 32 of its `consert` jobs declined for it."""
    from snakemake.shell import shell

    activated = {**server, "PS1": "(venv) $ ", "PS2": "> "}
    listed = shell.check_output("env -0", env=activated).decode()  # as snakemake runs a job's command
    job = dict(item.split("=", 1) for item in listed.split("\0") if "=" in item)
    assert "PS1" not in job and "PS2" not in job  # what the shell does, not what the server assumes
    assert job_server.Server._declines(_FakeServer(activated), {"python": job_server._python(), "env": job}) == ""


def test_on_a_machine_with_an_nvidia_gpu_a_job_that_may_use_it_starts_cold(server, tmp_path, monkeypatch):
    """CUDA does not start in a process forked after its driver was loaded: where the machine shows an NVIDIA device,
    only a job told to compute on the CPU is served."""
    monkeypatch.setattr(job_server, "NVIDIA_DEVICE", tmp_path / "nvidiactl")
    fake, python = _FakeServer(server), job_server._python()
    for device in ("auto", "cuda", "cpu"):
        assert not job_server.Server._declines(fake, {"python": python, "env": {**server, "CONSERT_DEVICE": device}})
    (tmp_path / "nvidiactl").touch()
    for device, reason in (("auto", "may compute on a GPU"), ("cuda", "may compute on a GPU"), ("cpu", "")):
        assert (
            job_server.Server._declines(fake, {"python": python, "env": {**server, "CONSERT_DEVICE": device}}) == reason
        )


class _FakeServer:
    """What :meth:`Server._declines` reads of a server: the environment it started in."""

    def __init__(self, environment: dict[str, str]):
        self.environment = {k: v for k, v in environment.items() if k != job_server.SERVER_ENV}


def test_ctrl_c_to_the_launcher_reaches_the_job(server, real_data_dir, tmp_path):
    """SIGINT to the launcher mid-evaluation: the job says it was interrupted in one line, writes nothing, and the
    launcher exits 130, as the command in its own process does (tests/cli/test_cli_inputs.py)."""
    output = tmp_path / "scores.csv"
    argv = ["evaluate", STAND_IN_MODEL, "--tasks", "STS12", "--dtype", "fp32", "--engine", "torch"]
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "consert-job"),
            *argv,
            "--data",
            str(real_data_dir),
            "--output",
            str(output),
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**server, "OMP_NUM_THREADS": "1"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    _wait_for_a_job(server)
    time.sleep(4)  # the model is loaded and STS12 is being encoded
    assert process.poll() is None, "the evaluation ended before it could be interrupted"
    process.send_signal(signal.SIGINT)
    stderr = process.communicate(timeout=60)[1]
    assert process.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "consert evaluate: interrupted; nothing written"
    assert not output.exists()


def test_a_killed_launcher_leaves_no_job_running(server, real_data_dir, tmp_path):
    """SIGKILL to the launcher (it cannot forward anything): its job stops too, as a killed process's work would."""
    argv = ["evaluate", STAND_IN_MODEL, "--dtype", "fp32", "--engine", "torch", "--data"]  # the 7 sets: a minute
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "consert-job"),
            *argv,
            str(real_data_dir),
            "--output",
            str(tmp_path / "x.csv"),
        ],
        stderr=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        env={**server, "OMP_NUM_THREADS": "1"},
    )
    jobs = _wait_for_a_job(server)
    time.sleep(2)
    process.kill()
    process.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in jobs):
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in jobs)


def _wait_for_a_job(server: dict[str, str]) -> list[int]:
    """The job the server has forked, once it has (the server may still be importing what jobs need)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        jobs = _children_of_server(server[job_server.SERVER_ENV])
        if jobs:
            return jobs
        time.sleep(0.1)
    raise AssertionError("no job was forked from the server")


def _children_of_server(socket_path: str) -> list[int]:
    """The processes the server at ``socket_path`` has forked and not reaped."""
    server_pid = int((Path(socket_path).parent / "pid").read_text())
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == server_pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
def test_a_server_whose_workflow_was_killed_stops_and_removes_its_folder(tmp_path):
    """snakemake killed with SIGKILL cannot stop the server: the server sees its owner gone, stops, and removes its
    socket's folder."""
    owner = subprocess.Popen(
        [sys.executable, "-c", "from consert import job_server; import time; print(job_server.start(), flush=True); "
         "time.sleep(600)"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    folder = Path(owner.stdout.readline().strip()).parent
    server_pid = int((folder / "pid").read_text())
    assert _alive(server_pid)
    owner.kill()
    owner.wait()
    deadline = time.monotonic() + 120  # the server notices once it has imported what jobs need
    while time.monotonic() < deadline and (folder.exists() or _alive(server_pid)):
        time.sleep(0.2)
    assert not folder.exists() and not _alive(server_pid)


def _listening(path: Path):
    """A bare listening socket at ``path``, and a function saying whether anything connected within some seconds."""
    import socket

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)

    def connected(seconds: float) -> bool:
        listener.settimeout(seconds)
        try:
            listener.accept()[0].close()
        except TimeoutError:
            return False
        return True

    return listener, connected


def test_only_consert_job_asks_a_server_the_consert_command_never_does(tmp_path):
    """`$CONSERT_JOB_SERVER` names a socket: `consert` runs in its own process without connecting to it (the user's
    command enters through the command line); `consert-job`, the workflow's command, connects."""
    listener, connected = _listening(tmp_path / "socket")
    env = {**os.environ, job_server.SERVER_ENV: str(tmp_path / "socket")}
    bin_dir = Path(sys.executable).parent
    with listener:
        ran = subprocess.run([str(bin_dir / "consert"), "--version"], env=env, capture_output=True, text=True)
        assert ran.returncode == 0 and ran.stdout.startswith("consert "), ran.stderr
        assert not connected(0.5)  # `consert` has finished: a connection of its would be waiting
        job = subprocess.Popen([str(bin_dir / "consert-job"), "--version"], env=env, stdout=subprocess.PIPE)
        assert connected(60)  # accepted and closed unanswered: the launcher then runs the command itself
        assert job.wait(timeout=120) == 0 and job.stdout.read().startswith(b"consert ")


def test_a_malformed_request_is_answered_with_an_error_and_the_server_serves_on(server, tmp_path):
    """Garbage in place of the header, then a header promising a payload that never comes and a connection closed:
    each answered `error ...` (or dropped), and the next job is served as before."""
    import socket

    path = server[job_server.SERVER_ENV]
    huge = str(10**15).encode().ljust(job_server.HEADER)  # a length the server must not allocate
    for garbage in (b"not a number....", b"12".ljust(job_server.HEADER), huge):
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(path)
        socket.send_fds(client, [garbage], [0, 1, 2])
        if garbage.startswith(b"12 "):
            client.shutdown(socket.SHUT_WR)  # the request ends before its 12 bytes
        reply = client.makefile("r").readline()
        client.close()
        assert reply.startswith("error malformed request:"), reply
    result = consert_job("--version", env=server, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("consert "), result.stderr


def test_a_client_that_sends_nothing_stalls_no_other(server, tmp_path):
    """A client connects and sends nothing (a launcher stopped mid-request): a job asked meanwhile is served at once,
    not after the silent one's REQUEST_S (the server used to read a request to its end before taking the next)."""
    import socket

    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(server[job_server.SERVER_ENV])
    time.sleep(0.5)  # the server has accepted it
    started = time.monotonic()
    result = consert_job("--version", env=server, cwd=tmp_path)
    took = time.monotonic() - started
    assert result.returncode == 0 and result.stdout.startswith("consert "), result.stderr
    assert took < job_server.REQUEST_S / 2, f"{took:.1f} s: served after the silent client"
    silent.settimeout(job_server.REQUEST_S + 5)
    assert silent.makefile("r").readline().startswith("error no whole request within")
    silent.close()


def test_a_client_of_another_user_is_refused():
    """The peer's uid, as the kernel gives it (SO_PEERCRED): the server's own user is served, any other refused."""
    import socket

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours, theirs:
        server = _FakeServer({})
        server.uid = os.getuid()
        assert job_server.Server.peer_fault(server, ours) == ""
        server.uid = os.getuid() + 1
        assert job_server.Server.peer_fault(server, ours) == f"uid {os.getuid()} is not the server's user"


def test_the_next_start_removes_the_folders_of_killed_servers_and_nothing_else(tmp_path):
    """Folders as a server leaves them: one whose server is gone is removed; a live server's, one still starting
    (no pid yet), one holding a file the server never writes, and a folder of another name stay."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid, live_pid = gone.stdout.strip(), str(os.getpid())
    folders = {}
    for name, pid, extra in (("dead", dead_pid, None), ("live", live_pid, None), ("starting", None, None),
                             ("foreign", dead_pid, "notes.txt")):  # fmt: skip
        folder = folders[name] = tmp_path / f"{job_server.FOLDER_PREFIX}{name}"
        folder.mkdir()
        (folder / "server.log").write_text("")
        (folder / "socket").write_text("")
        if pid:
            (folder / "pid").write_text(pid)
        if extra:
            (folder / extra).write_text("mine")
    other = tmp_path / "consert-other"
    other.mkdir()
    (other / "pid").write_text(dead_pid)
    assert job_server.remove_dead_folders(tmp_path) == [folders["dead"]]
    assert not folders["dead"].exists()
    assert all(folders[name].exists() for name in ("live", "starting", "foreign")) and other.exists()
    assert (folders["foreign"] / "notes.txt").read_text() == "mine"
