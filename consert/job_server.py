"""The job server: one process imports the harness once, and each workflow job's ``consert`` command runs in a
process forked from it, instead of a fresh interpreter importing torch, transformers and the harness again.

A tiny-model job of the test config spends about 8 of its 11 seconds importing and setting up (Zen 4, 2026-11-29);
forked from a process that has done it, the job starts computing at once. The workflow starts the server at its
start where the config asks for it (``job_server: true``) and the jobs run on this machine, and stops it at its end
(:mod:`consert.workflow_hooks`); the rules of such a config run their commands as ``consert-job`` (:func:`main`),
which finds the server through ``$CONSERT_JOB_SERVER`` (the socket's path). The ``consert`` command itself is
:func:`consert.cli.main` and never asks a server.

The server serves its own user only (the peer's uid, ``SO_PEERCRED``); it reads every request as it arrives, so a
client that connects and sends nothing, or half a request, stalls no other (it is answered with an error after
:data:`REQUEST_S`), and a malformed request is answered with an error while the server serves on. A server killed
with its workflow (``kill -9``) leaves its folder behind; the next start removes every such folder of its user
whose server is gone.

What a job sees is what a fresh process would: the job's own arguments, working directory, environment and
standard streams (their file descriptors are passed over the socket, so its log is its log), signals forwarded
(Ctrl-C, snakemake's SIGTERM), its exit status returned as the command's. Where a fresh interpreter would start
otherwise, the server declines and the command runs in its own process as before (a *cold* start): another Python
(a conda environment of the workflow), an environment that differs in anything read at import time (anything
but :data:`PER_JOB_ENV`: a job's threads, device and card, its temporary folder), or a job that may compute on a
GPU of this machine (CUDA does not start in a forked process where the parent has loaded its driver). The server
keeps count and says, when stopped, how many jobs it started and why it declined the others.

What it cannot give: snakemake's ``benchmark:`` files measure the process snakemake started, here the launcher,
so their CPU time and peak memory are not the job's (their wall time is); the cost table leaves those columns
empty for a run with the job server (:mod:`consert.paper.job_costs`).

``consert-job`` is :func:`main` here: it asks the server when ``$CONSERT_JOB_SERVER`` names one, and otherwise (or
when declined) runs :func:`consert.cli.main` in its own process. This module imports no more than the standard
library until it runs a command.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The variable that names the server's socket to the jobs.
SERVER_ENV = "CONSERT_JOB_SERVER"
#: The thread counts snakemake gives each job (``threads:``) for OpenMP and the BLAS libraries. The libraries read
#: them when loaded, so the server loads them at one thread each, and a job's counts are applied to the loaded
#: libraries when it starts (threadpoolctl; torch's by :func:`consert.cli.process.set_threads`).
THREAD_ENV = ("OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")  # fmt: skip
#: Variables a job may set differently from the server: each is read when a command runs, not when a module is
#: imported (the thread counts, the device, card and wait by :mod:`consert.gpu_pool` before CUDA starts, whether
#: models must be on disk by :func:`consert.encode.models.resolve_model`, the temporary folder by :mod:`tempfile`,
#: reset in the job), or set by a library on itself (polars writes its allocator's
#: settings into ``_RJEM_MALLOC_CONF`` when snakemake imports it: they matter to polars alone, loaded or not), or
#: dropped by the shell a job runs in (the prompts ``PS1`` and ``PS2``: a virtual environment's ``activate`` exports
#: ``PS1``, and bash, which snakemake runs each job's command in, unsets both when not interactive).
PER_JOB_ENV = frozenset(
    {*THREAD_ENV, "CONSERT_DEVICE", "CONSERT_GPU_POOL", "CONSERT_GPU_SHARE", "CONSERT_GPU_WAIT", "CUDA_VISIBLE_DEVICES",
     "CONSERT_MODELS_ON_DISK", "TMPDIR", "TEMP", "TMP", "TEMPDIR", "_", "SHLVL", "PWD", "OLDPWD", "PS1", "PS2",
     "_RJEM_MALLOC_CONF", SERVER_ENV}
)  # fmt: skip
#: What the server imports before it serves: every command, and what the commands import when they run.
PRELOAD = (
    "consert.cli",
    "consert.train.trainer",
    "consert.train.export",
    "consert.evaluate.protocol",
    "consert.encode.ort_engine",
    "baselines.sgopt",
    "baselines.flow",
    "baselines.whitening",
    "sentence_transformers",
    "transformers.models.bert.modeling_bert",
    "transformers.models.bert.tokenization_bert",
)
#: Where a machine with an NVIDIA GPU shows it: there a job that may compute on a GPU starts its own process.
NVIDIA_DEVICE = Path("/dev/nvidiactl")
#: Seconds the server waits between checks for finished jobs and for its owner.
POLL_S = 0.2
#: A header: the request's length in bytes, sent with the three file descriptors.
HEADER = 16
#: The largest request read (its arguments and environment: kilobytes); a header promising more is malformed, not a
#: buffer of that size.
MAX_REQUEST = 16 * 1024 * 1024
#: Seconds a connected client has to send its whole request before it is answered with an error and dropped.
REQUEST_S = 10.0
#: The prefix of a server's folder in the temporary folder, and the files a server writes there.
FOLDER_PREFIX = "consert-jobs-"
FOLDER_FILES = frozenset({"socket", "pid", "server.log"})


# --- the command: ask the server, else run here ------------------------------------------------------------------


def main() -> int:
    """``consert-job``, the ``consert`` command of a workflow job: run by the job server where
    ``$CONSERT_JOB_SERVER`` names one that takes it, else in this process."""
    path = os.environ.get(SERVER_ENV, "")
    if path:
        status = _run_on_server(path, sys.argv)
        if status is not None:
            return status
    from consert.cli import main as run_here

    return run_here()


def _run_on_server(path: str, argv: list[str]) -> int | None:
    """The exit status of ``argv`` run by the server at ``path``; None where it is not there or declines."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(path)
        request = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "python": _python()}).encode()
        socket.send_fds(client, [str(len(request)).encode().ljust(HEADER)], [0, 1, 2])
        client.sendall(request)
        reply = client.makefile("r", encoding="utf-8")
        first = reply.readline().split()
    except OSError:
        client.close()
        return None
    if not first or first[0] != "started":
        client.close()
        if first and first[0] == "error":  # not a job it declines: a fault, said once, and the job runs here
            print(f"consert: the job server at {path} refused the job ({' '.join(first[1:])})", file=sys.stderr)
        return None
    pid = int(first[1])

    def forward(signum, _frame):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    last = reply.readline().split()
    client.close()
    if len(last) == 2 and last[0] == "exit":
        return int(last[1])
    print(f"consert: the job server lost job {pid} ({SERVER_ENV}={path})", file=sys.stderr)
    return 1


def _python() -> list[str]:
    """What makes two Pythons the same for a job: the interpreter and where its packages are."""
    return [os.path.realpath(sys.executable), sys.prefix, *sys.path[1:]]


# --- the server ----------------------------------------------------------------------------------------------------


class _Request:
    """A request as it arrives on a connection: its header, the file descriptors sent with it, its payload."""

    def __init__(self) -> None:
        self.since = time.monotonic()
        self.header, self.payload, self.fds = b"", b"", []

    def read(self, connection: socket.socket) -> dict | None:
        """Read what has arrived (the connection does not block); the request once whole, else None. A malformed
        or cut-off request raises ValueError with what was wrong."""
        if len(self.header) < HEADER:
            data, fds, _, _ = socket.recv_fds(connection, HEADER - len(self.header), 3)
            self.fds += fds
            if not data:
                raise ValueError("the request ended before its header")
            self.header += data
            if len(self.header) < HEADER:
                return None
            if len(self.fds) != 3 or not self.header.strip().isdigit():
                raise ValueError("expected a 16-byte length with the three standard streams")
        length = int(self.header)
        if length > MAX_REQUEST:
            raise ValueError(f"a request of {length} bytes; expected at most {MAX_REQUEST}")
        data = connection.recv(min(length - len(self.payload), 65536))
        if not data:
            raise ValueError("the request ended early")
        self.payload += data
        if len(self.payload) < length:
            return None
        request = json.loads(self.payload)
        if not isinstance(request, dict) or not isinstance(request.get("argv"), list):
            raise ValueError("expected a JSON object with argv, cwd, env and python")
        return request

    def close_fds(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = []


class Server:
    """Serves jobs on a Unix socket at ``path``: each accepted request is forked off and run as a command; the
    server stops when asked (SIGTERM) or when its ``owner`` process is gone."""

    def __init__(self, path: str, owner: int):
        self.path, self.owner, self.uid = path, owner, os.getuid()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(64)  # jobs that come while the imports run wait here
        self.environment = dict(os.environ)
        self.running: dict[int, socket.socket] = {}
        self.arriving: dict[socket.socket, _Request] = {}
        self.selector = selectors.DefaultSelector()
        self.started, self.declined, self.refused = 0, {}, 0
        self.stopping = False

    def serve(self) -> None:
        for module in PRELOAD:
            with contextlib.suppress(ImportError):
                __import__(module)
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))
        self.selector.register(self.listener, selectors.EVENT_READ)
        while not self.stopping and os.getppid() == self.owner:
            for key, _ in self.selector.select(POLL_S):
                if key.fileobj is self.listener:
                    self._accept()
                else:
                    self._read(key.fileobj)
            self._drop_late()
            self._reap()
        self.listener.close()
        for connection in list(self.arriving):
            self._refuse(connection, "the server is stopping")
        while self.running:  # jobs still running report their own status; the server only waits for them
            self._reap()
            time.sleep(POLL_S)
        print(self.summary(), flush=True)
        if os.getppid() != self.owner:  # the workflow is gone (killed) and cannot remove what it made: the server does
            shutil.rmtree(Path(self.path).parent, ignore_errors=True)

    def summary(self) -> str:
        declined = sum(self.declined.values())
        why = "; ".join(f"{reason}: {count}" for reason, count in sorted(self.declined.items()))
        refused = f", {self.refused} refused" if self.refused else ""
        return f"job server: {self.started} jobs started from it, {declined} declined{refused}" + (
            f" ({why})" if why else ""
        )

    def peer_fault(self, connection: socket.socket) -> str:
        """Why the process at the other end may not be served (another user's), or ''."""
        credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _, uid, _ = struct.unpack("3i", credentials)
        return "" if uid == self.uid else f"uid {uid} is not the server's user"

    def _accept(self) -> None:
        connection, _ = self.listener.accept()
        if fault := self.peer_fault(connection):
            self.refused += 1
            with contextlib.suppress(OSError):
                connection.sendall(f"error {fault}\n".encode())
            connection.close()
            return
        connection.setblocking(False)
        self.arriving[connection] = _Request()
        self.selector.register(connection, selectors.EVENT_READ)

    def _read(self, connection: socket.socket) -> None:
        arriving = self.arriving[connection]
        try:
            request = arriving.read(connection)
        except BlockingIOError:
            return
        except (OSError, ValueError) as error:  # malformed or cut off: answered, and the server serves on
            self._refuse(connection, f"malformed request: {error}")
            return
        if request is None:
            return
        self.selector.unregister(connection)
        del self.arriving[connection]
        connection.setblocking(True)
        self._take(connection, request, arriving.fds)

    def _drop_late(self) -> None:
        now = time.monotonic()
        for connection, arriving in list(self.arriving.items()):
            if now - arriving.since > REQUEST_S:
                self._refuse(connection, f"no whole request within {REQUEST_S:g} s")

    def _refuse(self, connection: socket.socket, reason: str) -> None:
        self.refused += 1
        self.selector.unregister(connection)
        self.arriving.pop(connection).close_fds()
        with contextlib.suppress(OSError):
            connection.setblocking(True)
            connection.settimeout(1)
            connection.sendall(f"error {reason}\n".encode())
        connection.close()

    def _take(self, connection: socket.socket, request: dict, fds: list[int]) -> None:
        reason = self._declines(request)
        if reason:
            self.declined[reason] = self.declined.get(reason, 0) + 1
            connection.sendall(f"declined {reason}\n".encode())
            connection.close()
            for fd in fds:
                os.close(fd)
            return
        pid = os.fork()
        if pid == 0:
            for other in (
                self.listener,
                *self.running.values(),
                *self.arriving,
            ):  # another job's launcher sees its own job end
                other.close()
            os._exit(_run_job(request, fds, connection))
        for fd in fds:
            os.close(fd)
        self.started += 1
        self.running[pid] = connection
        connection.sendall(f"started {pid}\n".encode())

    def _declines(self, request: dict) -> str:
        """Why a job must start cold, or ''."""
        if request.get("python") != _python():
            return "another Python"
        theirs, ours = request.get("env", {}), self.environment
        if theirs.get("CONSERT_DEVICE", "auto") != "cpu" and NVIDIA_DEVICE.exists():
            return "may compute on a GPU"  # CUDA cannot start in a forked process once its driver has been loaded
        differ = sorted(k for k in set(theirs) | set(ours) if k not in PER_JOB_ENV and theirs.get(k) != ours.get(k))
        return f"environment differs in {', '.join(differ[:3])}" if differ else ""

    def _reap(self) -> None:
        while self.running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            connection = self.running.pop(pid, None)
            if connection is None:
                continue
            if os.WIFSIGNALED(status):  # a job that exits writes its own status; a killed one cannot
                with contextlib.suppress(OSError):
                    connection.sendall(f"exit {128 + os.WTERMSIG(status)}\n".encode())
            connection.close()


def _run_job(request: dict, fds: list[int], connection: socket.socket) -> int:
    """In the forked process: become the job (its streams, folder, environment, arguments, signals), run the
    command, send its exit status; return it."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the job's own streams, as a new interpreter opens them
    sys.stdout = open(1, "w", closefd=False, buffering=1 if os.isatty(1) else -1)  # noqa: SIM115
    sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115
    sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # the job's $TMPDIR
    _apply_thread_counts(os.environ)
    sys.argv = list(request["argv"])
    finished = _watch_launcher(connection)
    try:
        from consert.cli import main as run_command

        status = run_command(sys.argv[1:])
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if not isinstance(stop.code, int | None):
            print(stop.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
        status = 1
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    finished.set()
    with contextlib.suppress(OSError):
        connection.sendall(f"exit {status}\n".encode())
    return status


def _apply_thread_counts(environ) -> None:
    """The BLAS and OpenMP libraries loaded in the server, at the job's thread count (its ``OMP_NUM_THREADS``,
    else its BLAS count, else the CPUs it may run on), as a process started with that environment loads them."""
    from threadpoolctl import threadpool_limits

    given = next((environ[name] for name in THREAD_ENV if environ.get(name, "").strip().isdigit()), "")
    threadpool_limits(limits=int(given) if given else len(os.sched_getaffinity(0)))


def _watch_launcher(connection: socket.socket):
    """Stop the job as a killed process stops (SIGTERM) when its launcher is gone before the job has finished
    (snakemake killed it); return the event the job sets when it has."""
    import threading

    finished = threading.Event()

    def watch():
        with contextlib.suppress(OSError):
            connection.recv(1)
        if not finished.is_set():
            os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True).start()
    return finished


# --- starting and stopping it (the workflow) -----------------------------------------------------------------------


#: The socket of the server this process started (:func:`start`), which :func:`stop` stops.
_started: list[str] = []


def start(owner: int | None = None) -> str:
    """Start a server owned by ``owner`` (this process), put its socket in ``$CONSERT_JOB_SERVER`` for the jobs this
    process starts, and return it ('' where it did not start). The server imports what the jobs need while the
    first ones wait on its socket. Folders of this user's servers that are gone are removed first
    (:func:`remove_dead_folders`)."""
    remove_dead_folders(Path(tempfile.gettempdir()))
    folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
    path = str(folder / "socket")
    environment = {**os.environ, **dict.fromkeys(THREAD_ENV, "1")}
    with (folder / "server.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "consert.job_server", path, str(owner or os.getpid())],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=environment,
            start_new_session=True,  # a Ctrl-C reaches the jobs through their launchers, not the server at once
        )
    (folder / "pid").write_text(str(process.pid))
    deadline = time.monotonic() + 30
    while not os.path.exists(path) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if not os.path.exists(path):  # the jobs start their own processes; nothing of the server is left behind
        process.kill()
        process.wait()
        shutil.rmtree(folder, ignore_errors=True)
        return ""
    os.environ[SERVER_ENV] = path
    _started.append(path)
    return path


def remove_dead_folders(root: Path) -> list[Path]:
    """Remove the folders a job server of this user left in ``root`` when it was killed (its ``pid`` names no
    process); return them. A folder is removed only if it is this user's, holds nothing but a server's own files
    (:data:`FOLDER_FILES`) and names a server that is gone: a live server's, another user's, a folder starting up
    (no ``pid`` yet) or one holding anything else is left as it is."""
    removed = []
    for folder in sorted(root.glob(f"{FOLDER_PREFIX}*")):
        try:
            if folder.is_symlink() or not folder.is_dir() or folder.stat().st_uid != os.getuid():
                continue
            names = {entry.name for entry in folder.iterdir()}
            pid = int((folder / "pid").read_text())
        except (OSError, ValueError):
            continue
        if not names <= FOLDER_FILES or _alive(pid):
            continue
        for name in names:
            with contextlib.suppress(OSError):
                (folder / name).unlink()
        with contextlib.suppress(OSError):
            folder.rmdir()
            removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a process of another user has that pid now: not ours to judge, so left
        return True
    return True


def stop() -> str:
    """Stop the server :func:`start` started once its jobs are done, remove its folder and return its summary line
    ('' where none was started)."""
    if not _started:
        return ""
    folder = Path(_started.pop()).parent
    os.environ.pop(SERVER_ENV, None)
    try:
        pid = int((folder / "pid").read_text())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return ""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0]:
                break
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 0)
            time.sleep(POLL_S)
            continue
        break
    lines = (folder / "server.log").read_text().splitlines()
    summary = next((line for line in reversed(lines) if line.startswith("job server:")), "")
    for name in ("socket", "pid", "server.log"):
        with contextlib.suppress(OSError):
            (folder / name).unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()
    return summary


if __name__ == "__main__":
    Server(sys.argv[1], int(sys.argv[2])).serve()
