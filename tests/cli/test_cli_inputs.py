"""Bad command-line numbers and paths: a one-line error and a non-zero exit before any work, or a run
that does what was asked (issue: honest gates, strict inputs)."""

from __future__ import annotations

import pytest

from consert.cli import main
from consert.encode.models import STAND_IN_MODEL


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["evaluate", STAND_IN_MODEL, "--max-length", "0"], "--max-length: must be at least 8, got 0"),
        (["evaluate", STAND_IN_MODEL, "--max-length", "2"], "--max-length: must be at least 8, got 2"),
        (["evaluate", STAND_IN_MODEL, "--max-length", "-1"], "--max-length: must be at least 8, got -1"),
        (["evaluate", STAND_IN_MODEL, "--batch-size", "0"], "--batch-size: must be at least 1, got 0"),
        (["evaluate", STAND_IN_MODEL, "--max-length", "1.5"], "--max-length: expected an integer, got '1.5'"),
        (["baseline", "whitening", "--k", "0"], "--k: must be at least 1"),
        (["baseline", "flow", "--flow-levels", "0"], "--flow-levels: must be at least 1"),
        (["evaluate", STAND_IN_MODEL, "--pooling", "max"], "--pooling: unknown pooling 'max'"),
        (
            ["evaluate", STAND_IN_MODEL, "--format", "mteb", "--pooling", "cls", "--pooling", "mean"],
            "--format mteb: mteb's files hold one score per model and task",
        ),
        (
            ["evaluate", STAND_IN_MODEL, "--pooling", "model", "--max-length", "32", "--dtype", "bf16"],
            "it would ignore --max-length, --dtype",
        ),
        (["evaluate", STAND_IN_MODEL, "--format", "mteb", "--engine", "onnxruntime"], "--pooling model encodes"),
        (["evaluate", STAND_IN_MODEL, "--tasks", "STS17"], "unknown task 'STS17': expected one of STS12"),
    ],
)
def test_numbers_out_of_range_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("given", "pooling"),
    [("avg", "mean"), ("avg_top2", "mean:-2,-1"), ("avg_first_last", "mean:1,-1"), ("cls_before_pooler", "cls")],
)
def test_simcse_pooler_names_are_the_same_poolings_here(given, pooling):
    """SimCSE's evaluation.py: avg = the last layer's masked mean, avg_top2 = hidden states -2 and -1,
    avg_first_last = hidden states 1 and -1, cls_before_pooler = the last layer's [CLS] vector."""
    from consert.cli import build_parser
    from consert.cli import evaluate as command

    parser = build_parser()
    args = parser.parse_args(
        ["evaluate", STAND_IN_MODEL, "--pooling", given, "--tasks", "STSBenchmark", "SICKRelatedness"]
    )
    command.check_arguments(parser, args)
    assert args.pooling == [pooling] and args.tasks == ["STSb", "SICK-R"]


def test_a_max_length_beyond_the_models_limit_is_refused(tiny_tree, capsys):
    # all-MiniLM-L6-v2 has 512 positions
    assert main(["evaluate", STAND_IN_MODEL, "--max-length", "513", "--data", str(tiny_tree)]) == 2
    assert "max_length 513 exceeds the model's limit of 512 positions" in capsys.readouterr().err


def test_an_output_under_a_file_fails_before_any_work(tiny_tree, tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    assert main(["evaluate", STAND_IN_MODEL, "--data", str(tiny_tree), "--output", str(blocker / "r.csv")]) == 2
    err = capsys.readouterr().err
    assert f"{blocker} is a file, not a directory" in err and len(err.strip().splitlines()) == 1
    assert main(["evaluate", STAND_IN_MODEL, "--data", str(tiny_tree), "--output", str(tmp_path)]) == 2
    assert "is a directory; expected a file path" in capsys.readouterr().err


def test_an_output_on_a_filesystem_that_takes_no_files_fails_before_any_work(tmp_path, capsys):
    """/proc takes no new files: the output is refused before the data is even looked for (the data folder
    named here does not exist, and its error would come first were the output checked after)."""
    missing_data = tmp_path / "no-data"
    assert main(["evaluate", STAND_IN_MODEL, "--data", str(missing_data), "--output", "/proc/x/out.csv"]) == 2
    err = capsys.readouterr().err
    assert "--output /proc/x/out.csv: cannot be written there" in err and len(err.strip().splitlines()) == 1
    # a writable output leaves no probe file behind
    out = tmp_path / "deep" / "er" / "r.csv"
    assert main(["evaluate", STAND_IN_MODEL, "--data", str(missing_data), "--output", str(out)]) == 2
    assert str(missing_data) in capsys.readouterr().err and list(out.parent.iterdir()) == []


def test_local_model_paths_get_a_local_message(tmp_path, tiny_tree, capsys):
    missing = tmp_path / "no" / "such" / "model"
    assert main(["evaluate", str(missing), "--data", str(tiny_tree)]) == 2
    err = capsys.readouterr().err
    assert f"model directory {missing} does not exist" in err and "hf download" not in err
    empty = tmp_path / "empty_model"
    empty.mkdir()
    assert main(["evaluate", str(empty), "--data", str(tiny_tree)]) == 2
    assert "has no config.json" in capsys.readouterr().err


def test_a_hub_model_that_cannot_be_fetched_is_one_line_that_says_why(tmp_path, tiny_tree):
    """Not offline, not cached, and the hub unreachable (its endpoint a closed local port): the hub's own message
    spans two lines; the error is one, says the download failed and does not blame HF_HUB_OFFLINE, which
    huggingface_hub reads as false when it is ``no``. With the hub offline (``TRANSFORMERS_OFFLINE=yes`` is read as
    true), the error says so, names the variable, and does not try."""
    import os
    import subprocess
    import sys

    hub = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE")
    env = {k: v for k, v in os.environ.items() if k not in hub and k != "HF_TOKEN"}
    env |= {"HF_HOME": str(tmp_path / "hf"), "HF_ENDPOINT": "http://127.0.0.1:9"}
    argv = [sys.executable, "-m", "consert", "evaluate", "bert-base-uncased", "--data", str(tiny_tree)]
    online = subprocess.run(argv, env=env | {"HF_HUB_OFFLINE": "no"}, capture_output=True, text=True, timeout=120)
    line = _one_line(online.stderr)
    assert online.returncode == 2 and "downloading it failed (" in line and "OFFLINE" not in line, line
    offline = subprocess.run(
        argv, env=env | {"TRANSFORMERS_OFFLINE": "yes"}, capture_output=True, text=True, timeout=120
    )
    line = _one_line(offline.stderr)
    assert offline.returncode == 2 and "the hub is offline (TRANSFORMERS_OFFLINE=yes)" in line, line
    assert "downloading" not in line, line


def test_debug_shows_the_traceback(tmp_path, tiny_tree):
    with pytest.raises(Exception, match="does not exist"):
        main(["--debug", "evaluate", str(tmp_path / "nothing" / "here"), "--data", str(tiny_tree)])


@pytest.mark.slow
def test_ctrl_c_exits_130_in_one_line_and_leaves_no_output(real_data_dir, tmp_path):
    """SIGINT mid-evaluation (the model loaded, vectors being computed): exit 130, one line, no traceback,
    and the output file not written (every output is renamed into place only when complete)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    output = tmp_path / "scores.csv"
    argv = ["evaluate", STAND_IN_MODEL, "--tasks", "STS12", "STSb", "--dtype", "fp32", "--engine", "torch"]
    process = subprocess.Popen(
        [sys.executable, "-m", "consert", *argv, "--data", str(real_data_dir), "--output", str(output)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        # Ctrl-C as a terminal sends it: a suite started in the background (`nohup pytest &`) hands its children
        # SIGINT ignored, and Python then never raises KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(12)  # past the imports and the model's loading: STS12's 3,108 pairs take longer than this
    assert process.poll() is None, "the evaluation ended before it could be interrupted"
    process.send_signal(signal.SIGINT)
    stderr = process.communicate(timeout=60)[1]
    assert process.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "consert evaluate: interrupted; nothing written"
    assert "Traceback" not in stderr and not output.exists()
    assert not list(tmp_path.iterdir())  # no partial file beside it either


def test_list_keys_prints_every_training_key_with_the_modes_value_and_its_help(capsys):
    """The supervised recipe (scripts/sup-sbert-base.sh: lr 2e-5) and the unsupervised one (lr 5e-7):
    each key once, with its help text, and nothing trained."""

    from consert.train.config import TrainConfig
    from consert.train.methods import AugCseSettings

    for mode, lr in (("sup", "2e-05"), ("unsup", "5e-07")):
        assert main(["train", "--list-keys", "--set", f"mode={mode}"]) == 0
        lines = {line.split()[0]: line.split(maxsplit=2)[1:] for line in capsys.readouterr().out.splitlines()}
        augcse = {f"augcse.{name}" for name in AugCseSettings.model_fields}  # its sub-config's keys too
        assert set(lines) == set(TrainConfig.model_fields) | augcse
        assert lines["lr"][0] == lr and lines["mode"][0] == mode and "one text a line" in lines["train_texts"][1]


@pytest.mark.parametrize(
    ("command", "config_class"),
    [("compare", "consert.planner.comparison:ComparisonConfig"), ("sgopt", "baselines.sgopt:SgOptConfig")],
)
def test_a_commands_help_lists_the_keys_of_its_config_file_with_their_help(capsys, command, config_class):
    import importlib

    module, name = config_class.split(":")
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps nothing in an epilog, but be safe
    for key, field in getattr(importlib.import_module(module), name).model_fields.items():
        assert f" {key} " in text and " ".join(field.description.split()) in text, key


# Issue: no input accepted silently. Each bad input is one line that names the flag or key and what was expected,
# before any work: exit 2 (1 for the workflow).


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_training_key_set_twice_is_refused_before_any_training(capsys):
    """The last --set once won silently; with no --config it then started the authors' 10-epoch recipe."""
    assert main(["train", "--set", "lr=1e-5", "--set", "max_steps=3", "--set", "lr=2e-5"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("consert train: error: --set lr: given twice (lr=1e-5, lr=2e-5); expected each key once")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--results", "/nonexistent"],
            "--results /nonexistent: does not exist; expected the folder of the reproduced artifacts",
        ),
        (["--published", "/nonexistent"], "--published /nonexistent: does not exist; expected the folder of the"),
        (["--not-run", "table2"], "argument --not-run: expected ARTIFACT:ROW (a glob, e.g. 'table2:*large*'), got"),
        (["--not-run", "tabel2:*"], "argument --not-run: 'tabel2:*': no compared artifact is 'tabel2'; expected one"),
        (["--margin", "table2=abc"], "argument --margin: expected ARTIFACT=NUMBER (e.g. table2=1.0), got 'table2=abc'"),
        (["--seed-noise", "consert"], "argument --seed-noise: expected KIND=NUMBER"),
        (["--seeds", "table2=3"], "argument --seeds: expected ARTIFACT:KIND=N with N at least 1"),
        (["--margin", "table2=1", "--margin", "table2=2"], "--margin table2: given twice (table2=1, table2=2)"),
        (["--config", "/nonexistent.yaml"], "--config /nonexistent.yaml: no such file; expected the comparison's"),
    ],
)
def test_compare_refuses_bad_flags_in_one_line_naming_the_flag(flags, message, tmp_path, capsys):
    results = tmp_path / "results"
    results.mkdir()
    output = tmp_path / "comparison.csv"
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", "--results", str(results), "--output", str(output), *flags])
    assert exit_info.value.code == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("consert compare: error: ") and message in line, line
    assert not output.exists()  # nothing written


def test_compare_reads_the_design_beside_the_results_and_says_when_there_is_none(tmp_path, capsys):
    """The workflow writes results/comparison_config.yaml; compare reads it unless --config names another. Without
    it, --check says in one line that missing seeds cannot be seen."""
    import pandas as pd

    from consert.planner.comparison import ComparisonConfig

    results, output = tmp_path / "results", tmp_path / "comparison.csv"
    results.mkdir()
    argv = ["compare", "--results", str(results), "--output", str(output), "--check"]
    assert main(argv) == 1  # nothing reproduced: the gate fails
    err = capsys.readouterr().err.strip().splitlines()
    warnings = [line for line in err if "design" in line]
    assert warnings == [
        f"consert compare: warning: --check: no design ({results / 'comparison_config.yaml'}, --config or --seeds): "
        "the seeds each row should have cannot be checked, so a missing seed goes unseen"
    ]
    assert set(pd.read_csv(output).status) == {"missing"}
    (results / "comparison_config.yaml").write_text(
        ComparisonConfig(not_run=["table2:*"], seeds={"table2:x": 3}).to_yaml()
    )
    assert main(argv) == 1
    assert "design" not in capsys.readouterr().err
    table = pd.read_csv(output)
    assert table.set_index("artifact").status["table2"] == "not run"  # the design's not_run was read
    other = tmp_path / "other.yaml"  # --config names the design: the one beside the results is not read
    other.write_text(ComparisonConfig(seeds={"table2:x": 3}).to_yaml())
    assert main([*argv, "--config", str(other)]) == 1
    assert pd.read_csv(output).set_index("artifact").status["table2"] == "missing"


def test_evaluate_names_a_file_given_as_the_model(tmp_path, capsys):
    afile = tmp_path / "afile.txt"
    afile.write_text("not a model")
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate", str(afile)])
    assert exit_info.value.code == 2
    line = _one_line(capsys.readouterr().err)
    assert f"consert evaluate: error: model {afile}: is a file; expected a model folder (config.json" in line
    assert "does not exist" not in line


@pytest.mark.parametrize(
    ("argv", "start"),
    [
        (["compare", "--bogus"], "consert compare: error: unrecognized arguments: --bogus"),
        (["evaluate"], "consert evaluate: error: the following arguments are required: model"),
        (["evaluate", STAND_IN_MODEL, "--split", "val"], "consert evaluate: error: argument --split: invalid choice"),
        (["train", "--threads", "0"], "consert train: error: argument --threads: must be at least 1, got 0"),
        (["nocommand"], "consert: error: argument command: invalid choice: 'nocommand'"),
        (["evaluate", STAND_IN_MODEL, "--pooling", "max"], "consert evaluate: error: --pooling: unknown pooling"),
    ],
)
def test_a_usage_error_is_one_line_with_the_commands_name(argv, start, capsys):
    """argparse printed the usage first (4-9 lines), some of it the top-level one for a subcommand's error."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(start) and "usage:" not in line, line


def test_the_workflow_stops_on_a_missing_local_model_and_leaves_a_hub_id_alone(tmp_path):
    """`--config "models={base: /nope}"` once planned every job (870 lines, exit 0). A hub id is not a path: not
    looked for on the disk (bert-base-uncased is in no folder here, and is not refused)."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    models = "models={base: bert-base-uncased, large: ./no/such/model}"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "--configfile",
            "config/offline.yaml",
            "--config",
            models,
            "--directory",
            str(tmp_path),
        ],
        cwd=ROOT,
        env={**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [
        line for line in (result.stdout + result.stderr).strip().splitlines() if "workflow specific profile" not in line
    ]
    assert result.returncode == 1 and len(lines) == 1, lines
    assert lines[0] == (
        "config models.large: local model path ./no/such/model does not exist; expected a model folder "
        "(config.json, the tokenizer and the weights) or a hub id such as bert-base-uncased"
    )
