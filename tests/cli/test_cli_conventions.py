"""The conventions a command-line tool keeps: ``--version``, ``--threads`` with a default that does not
oversubscribe a shared machine, and progress bars that stay readable in a log file."""

from __future__ import annotations

import math

import pytest
import torch
from tqdm import tqdm

import consert
from consert.cli import main
from consert.cli.process import LogProgress, _physical_cores, default_threads


def test_version_prints_the_packages_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0 and capsys.readouterr().out == f"consert {consert.__version__}\n"


@pytest.mark.parametrize(
    ("settings", "threads"),
    [
        ({"environ": {"OMP_NUM_THREADS": "3"}}, 3),  # the caller's choice (a workflow job, a batch script)
        ({"environ": {"OMP_NUM_THREADS": "0"}}, 4),  # not a thread count: ignored
        ({}, 4),  # every physical core this process may use
        ({"physical": 2}, 2),  # 4 logical CPUs, 2 cores with 2 SMT threads each
        ({"quota": 2.5}, 2),  # a container's cgroup grants 2.5 CPUs of 4
        ({"quota": 0.5}, 1),  # never fewer than one
    ],
)
def test_the_default_threads_take_the_physical_cores_the_process_may_use(settings, threads):
    values = {"environ": {}, "cpus": {0, 1, 2, 3}, "physical": 4, "quota": math.inf}
    assert default_threads(**(values | settings)) == threads


def test_physical_cores_count_smt_siblings_once(tmp_path):
    for cpu, (package, core) in enumerate([(0, 0), (0, 0), (0, 1), (1, 0)]):
        topology = tmp_path / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text(f"{package}\n")
        (topology / "core_id").write_text(f"{core}\n")
    assert _physical_cores({0, 1, 2, 3}, tmp_path) == 3 and _physical_cores({0, 1}, tmp_path) == 1
    assert _physical_cores({0, 7}, tmp_path) == 2  # no topology for cpu7: the logical count


@pytest.mark.parametrize("command", ["evaluate", "train"])
def test_threads_is_what_the_command_computes_with_and_is_restored_after(command, monkeypatch, capsys):
    import importlib

    module = importlib.import_module(f"consert.cli.{command}")
    seen = []
    monkeypatch.setattr(module, "run", lambda args: seen.append(torch.get_num_threads()) or 0)
    before = torch.get_num_threads()
    model = ["model-id"] if command == "evaluate" else []
    assert main([command, *model, "--threads", "3"]) == 0
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # no --threads: the caller's OMP_NUM_THREADS
    assert main([command, *model]) == 0
    assert seen == [3, 2] and torch.get_num_threads() == before


def _bar(stream, clock, steps: int = 100) -> None:
    """A tqdm bar redrawn at every step, one fake second a step."""
    with tqdm(total=steps, file=stream, mininterval=0, miniters=1, desc="encode") as bar:
        for step in range(steps):
            clock.now = float(step)
            bar.update(1)
    clock.now = float(steps)


class _Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_progress_bar_in_a_log_file_is_one_line_per_interval(tmp_path):
    clock = _Clock()
    with open(tmp_path / "log", "w") as log:
        stream = LogProgress(log, interval=30, clock=clock)
        stream.write("loading the model\n")
        _bar(stream, clock)
        stream.write("wrote results.csv\n")
    text = (tmp_path / "log").read_text()
    lines = text.splitlines()
    assert "\r" not in text and lines[0] == "loading the model" and lines[-1] == "wrote results.csv"
    bars = lines[1:-1]
    # the first redraw at once, then one a 30 s interval (steps 31, 61, 91 of 100), and the bar's last state
    assert [line.split("|")[0].split(":")[1].strip() for line in bars] == ["0%", "31%", "61%", "91%", "100%"]
    assert all(line.startswith("encode:") for line in bars) and "100/100" in bars[-1]


def test_commands_write_progress_bars_to_a_log_as_lines(monkeypatch, capsys):
    """main() wraps a stderr that is no terminal (here pytest's capture): a bar written there is lines, not one
    line of carriage returns; other stderr output passes as it was."""
    from consert.cli import train

    def fake_run(args):
        import sys

        for _ in tqdm(range(500), mininterval=0, miniters=1, desc="step"):
            pass
        print("done", file=sys.stderr)
        return 0

    monkeypatch.setattr(train, "run", fake_run)
    assert main(["train"]) == 0
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert "\r" not in err and lines[-1] == "done" and 2 <= len(lines) <= 4, lines
    assert "500/500" in lines[-2]
