"""Every baseline goes through the same CLI and writes the same tidy CSV with provenance."""

from __future__ import annotations

import pandas as pd
import pytest

from baselines.flow_settings import FlowSettings
from consert.cli import main

PROVENANCE = ("model", "setting", "pooling", "data_sha256", "harness_commit", "packages", "timestamp")


@pytest.mark.parametrize(
    "argv",
    [
        ["baseline", "pooling", "--pooling", "cls"],
        ["baseline", "whitening", "--k", "32"],
        ["baseline", "whitening", "--fit-on", "nli"],
        ["baseline", "glove"],
    ],
    ids=["pooling-cls", "whitening-k32", "whitening-nli", "glove"],
)
def test_baselines_write_tidy_csv_on_a_fixture_tree(tiny_tree, tmp_path, argv):
    out = tmp_path / "result.csv"
    assert main([*argv, "--data", str(tiny_tree), "--output", str(out)]) == 0
    frame = pd.read_csv(out)
    per_set = frame[frame.subset == "all"]
    assert list(per_set.dataset) == ["STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R", "Avg"]
    assert per_set.spearman.between(-100, 100).all()
    for column in PROVENANCE:
        assert frame[column].notna().all(), column
    assert frame.setting.str.contains("offline stand-in").all()


def test_topk_cli_writes_a_curve(tiny_tree, tmp_path):
    out = tmp_path / "topk.csv"
    assert (
        main(
            [
                "topk",
                "sentence-transformers/all-MiniLM-L6-v2",
                "--max-k",
                "3",
                "--data",
                str(tiny_tree),
                "--output",
                str(out),
            ]
        )
        == 0
    )
    curve = pd.read_csv(out)
    assert sorted(curve[curve.dataset == "Avg"].k) == [0, 1, 2, 3]


#: Avg Spearman (merged STS12-16) of each baseline on the real STS sets with the stand-in, pooling
#: mean:-2,-1, fp32, measured once: pooling and whitening on an AMD EPYC at commit 21fc76d; BERT-flow (its
#: reference Glow, fitted on cached vectors, seed 1) and GloVe (sentence-transformers' tokenizer) on an Intel
#: Xeon at commit f01e200, where the pooling and whitening pins also held. Regression pins, not reference
#: values (GloVe's reference is a fast test against sentence-transformers' own modules): pooling, whitening
#: and GloVe are closed-form, +-0.1; the flow is 1,753 optimiser steps whose rounding depends on the CPU's
#: vector instructions, +-0.5. The pins were measured with each baseline encoding the sets itself; the test
#: reads one `consert encode` cache of the same encoder in fp32, as the workflow's baseline jobs do (batched
#: over more texts, so its vectors equal those up to fp32 rounding; the pins held, 2026-11-29, Zen 4 EPYC).
PINNED_AVG = {"pooling": (77.08, 0.1), "whitening": (72.47, 0.1), "flow": (72.94, 0.5), "glove": (58.84, 0.1)}


@pytest.fixture(scope="module")
def stand_in_vectors(real_data_dir, tmp_path_factory) -> str:
    """The real sets' distinct texts encoded once by ``consert encode`` (fp32, the paper's pooling), the vector cache
    the workflow's baseline jobs read: the baselines with an encoder read it instead of each encoding the sets."""
    cache = tmp_path_factory.mktemp("vectors") / "stand-in.npz"
    argv = ["encode", "sentence-transformers/all-MiniLM-L6-v2", "--dtype", "fp32", "--data", str(real_data_dir)]
    assert main([*argv, "--output", str(cache)]) == 0
    return str(cache)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PINNED_AVG))
def test_baselines_on_the_real_sts_sets(real_data_dir, tmp_path, request, name):
    out = tmp_path / f"{name}.csv"
    extra = ["--no-flow-encoder-dropout"] if name == "flow" else []
    if name != "glove":  # GloVe has no encoder
        extra += ["--vectors", request.getfixturevalue("stand_in_vectors")]
    assert main(["baseline", name, *extra, "--dtype", "fp32", "--data", str(real_data_dir), "--output", str(out)]) == 0
    frame = pd.read_csv(out)
    expected, tolerance = PINNED_AVG[name]
    assert frame[frame.dataset == "Avg"].spearman.item() == pytest.approx(expected, abs=tolerance)
    if name in ("whitening", "flow"):  # fitted per task: each row says how many texts its fit saw
        fits = frame[frame.subset == "all"].set_index("dataset").fit_texts
        assert fits["STSb"] == 17256 and fits["SICK-R"] == 19854


def test_whitening_fitted_on_nli_reads_the_snli_mnli_files_it_is_given(tiny_tree, tmp_path):
    import json

    snli = tmp_path / "snli_1.0_train.jsonl"
    records = [
        {"sentence1": "A man plays a guitar.", "sentence2": "A man plays music.", "gold_label": "entailment"},
        {"sentence1": "A dog runs.", "sentence2": "A cat sleeps.", "gold_label": "contradiction"},
        {"sentence1": "Kids play.", "sentence2": "Kids sing.", "gold_label": "-"},  # no consensus: skipped
        {"sentence1": "A woman cooks.", "sentence2": "Someone makes food.", "gold_label": "entailment"},
    ]
    snli.write_text("".join(json.dumps(record) + "\n" for record in records))
    out = tmp_path / "whitening-nli.csv"
    argv = ["baseline", "whitening", "--fit-on", "nli", "--nli-file", str(snli), "--k", "4"]
    assert main([*argv, "--data", str(tiny_tree), "--output", str(out)]) == 0
    frame = pd.read_csv(out)
    assert set(frame.fit_on) == {f"nli (snli+mnli: {snli})"}
    assert set(frame[frame.subset == "all"].fit_texts) == {6}  # 3 labelled pairs, both sentences


def test_flow_reads_its_settings_from_one_file_and_a_flag_overrides_it(tiny_tree, tmp_path, capsys):
    """What the workflow hands a flow job (results/flow_config.yaml) is what the flow fits with, as its CSV's
    columns say; a ``--flow-KEY`` flag wins over the file; a wrong key in the file stops in one line."""
    settings = tmp_path / "flow.yaml"
    settings.write_text("levels: 2\ndepth: 1\nwidth: 8\nbatch_size: 4\nencoder_dropout: false\n")
    out = tmp_path / "flow.csv"
    argv = ["baseline", "flow", "--flow-config", str(settings), "--flow-depth", "2", "--data", str(tiny_tree)]
    assert main([*argv, "--set", "width=16", "--set", "depth=3", "--output", str(out)]) == 0
    row = pd.read_csv(out).iloc[0]
    # --set over the file, the flag over --set
    assert (row.flow_levels, row.flow_depth, row.flow_width, row.flow_batch_size) == (2, 2, 16, 4)
    assert not row.flow_encoder_dropout and row.flow_lr == 1e-3  # a key the file leaves out keeps the authors'
    settings.write_text("level: 2\n")
    capsys.readouterr()
    assert main([*argv, "--output", str(out)]) == 2
    error = capsys.readouterr().err
    assert "flow.yaml:1: unknown key `level` (did you mean `levels`?)" in error
    assert "Loading weights" not in error  # stopped before the model loads


def test_a_baseline_refuses_settings_it_does_not_take_and_lists_its_own(tiny_tree, capsys):
    """``--set``, ``--settings`` and BERT-flow's ``--flow-KEY`` reach only a baseline whose record has that settings
    class; given to another, each stops in one line before any work. ``--list-keys`` prints the record's keys."""
    for argv, fault in (
        (["pooling", "--set", "k=2"], "baseline pooling: takes no settings of its own (--settings, --set)"),
        (["whitening", "--flow-depth", "2"], "baseline whitening: --flow-depth is a setting of another baseline"),
        (["flow", "--k", "4"], "baseline flow: --k is a setting of another baseline"),
        (["flow", "--set", "levels=0"], "--set: levels: expected a positive integer, got 0"),
    ):
        capsys.readouterr()
        assert main(["baseline", *argv, "--data", str(tiny_tree)]) == 2, argv
        error = capsys.readouterr().err
        assert fault in error and len(error.strip().splitlines()) == 1 and "Loading weights" not in error, error
    assert main(["baseline", "flow", "--list-keys"]) == 0
    listed = capsys.readouterr().out
    assert listed.startswith("flow's settings (--set KEY=VALUE):")
    assert {line.split()[0] for line in listed.splitlines()[1:]} == set(FlowSettings.model_fields)
    assert main(["baseline", "pooling", "--list-keys"]) == 0
    assert capsys.readouterr().out.strip() == "pooling: no settings of its own"
