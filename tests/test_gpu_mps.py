"""The workflow's MPS daemon, with a stand-in control program that records how it was called (no GPU here)."""

from __future__ import annotations

import os
import stat

from consert import gpu_mps

#: A stand-in for nvidia-cuda-mps-control: each call appends its arguments, its stdin and its pipe folder.
FAKE_CONTROL = """#!/bin/sh
printf '%s|%s|%s\\n' "$*" "$(cat)" "$CUDA_MPS_PIPE_DIRECTORY" >> "{log}"
exit {status}
"""


def _control(folder, status: int = 0):
    """A PATH holding a stand-in control program, and the file it records its calls in."""
    bin_dir, log = folder / "bin", folder / "calls.txt"
    bin_dir.mkdir()
    control = bin_dir / gpu_mps.CONTROL
    control.write_text(FAKE_CONTROL.format(log=log, status=status))
    control.chmod(control.stat().st_mode | stat.S_IEXEC)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}", log  # the shell's own tools after it


def test_the_daemon_is_started_for_the_jobs_and_stopped_by_the_workflow_that_started_it(tmp_path):
    path, log = _control(tmp_path)
    environ = {"PATH": path, "CUDA_VISIBLE_DEVICES": "0"}
    line = gpu_mps.start(tmp_path / "mps", environ)
    pipes = str((tmp_path / "mps" / "pipe").resolve())
    assert line.startswith("MPS: started") and environ[gpu_mps.PIPE_ENV] == pipes  # the jobs inherit it
    assert environ[gpu_mps.LOG_ENV] == str((tmp_path / "mps" / "log").resolve())
    assert gpu_mps.stop(tmp_path / "mps", environ) == "MPS: stopped" and gpu_mps.PIPE_ENV not in environ
    assert log.read_text().splitlines() == [f"-d||{pipes}", f"|quit|{pipes}"]  # daemon, then quit on its pipe
    assert gpu_mps.stop(tmp_path / "mps", environ) is None  # stopped once; a daemon it did not start: never


def test_without_the_program_a_gpu_or_a_start_one_line_and_no_daemon(tmp_path):
    no_gpu = tmp_path / "no-driver"  # the driver lists no GPU and CUDA_VISIBLE_DEVICES is unset
    assert gpu_mps.start(tmp_path / "a", {"PATH": str(tmp_path)}, driver=no_gpu) is None
    environ = {"PATH": str(tmp_path), "CUDA_VISIBLE_DEVICES": "0"}
    assert gpu_mps.start(tmp_path / "b", environ) == (
        "MPS: nvidia-cuda-mps-control is not installed; jobs sharing a card time-slice"
    )
    path, log = _control(tmp_path, status=1)
    environ = {"PATH": path, "CUDA_VISIBLE_DEVICES": "0"}
    line = gpu_mps.start(tmp_path / "c", environ)
    assert line.startswith("MPS: nvidia-cuda-mps-control -d failed") and gpu_mps.PIPE_ENV not in environ
    assert gpu_mps.stop(tmp_path / "c", environ) is None and len(log.read_text().splitlines()) == 1
    assert not any(name.startswith("CUDA_MPS") for name in os.environ)  # this process's environment untouched
