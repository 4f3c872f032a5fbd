"""Bad inputs refused in one line, before the model loads wherever they can be checked before (issue 77): at 03ef47f
each of these was a traceback, a line that named no file, or came only after the model had loaded (14-28 s)."""

from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest
import torch

from consert.cli import main
from consert.data.senteval import DataFormatError, load_senteval
from consert.encode.models import STAND_IN_MODEL
from tests.fixtures import tiny_bert


def _last_line(capsys) -> str:
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.fixture()
def cache_file(tiny_tree, tmp_path, encoder):
    from consert.encode.cache import VectorCache

    data = load_senteval(tiny_tree)
    cache = VectorCache.build(encoder, data.unlabeled_texts(), ["mean"], data.fingerprint, progress=False)
    return cache.save(tmp_path / "cache.npz")


def _evaluate(tiny_tree, vectors, *extra) -> list[str]:
    return ["evaluate", STAND_IN_MODEL, "--pooling", "mean", "--data", str(tiny_tree), "--dtype", "fp32",
            "--engine", "torch", "--vectors", str(vectors), *extra]  # fmt: skip


@pytest.mark.parametrize("damage", ["truncated", "empty", "short"])
def test_a_broken_vector_cache_is_one_line_naming_the_file_before_the_model_loads(tiny_tree, cache_file, capsys,
                                                                                    damage, monkeypatch):  # fmt: skip
    """At 03ef47f: BadZipFile, EOFError, IndexError (the row count never checked)."""
    from consert.encode import encoder

    data = cache_file.read_bytes()
    if damage == "truncated":
        cache_file.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        cache_file.write_bytes(b"")
    else:  # every pooling's matrix a row short of its sentences
        with np.load(cache_file) as archive:
            arrays = {name: archive[name] for name in archive.files}
        arrays["pooling:mean"] = arrays["pooling:mean"][:-1]
        np.savez(cache_file, **arrays)
    monkeypatch.setattr(encoder.SentenceEncoder, "load", lambda *a, **k: pytest.fail("the model was loaded"))
    assert main(_evaluate(tiny_tree, cache_file)) == 2
    line = _last_line(capsys)
    assert line.startswith(f"consert evaluate: error: {cache_file}: ")
    assert ("holds" in line and "vectors" in line) if damage == "short" else "not a readable vector cache" in line


def test_a_missing_cache_and_a_layer_the_model_lacks_are_refused_before_it_loads(tiny_tree, tmp_path, capsys,
                                                                                  monkeypatch):  # fmt: skip
    from consert.encode import encoder

    monkeypatch.setattr(encoder.SentenceEncoder, "load", lambda *a, **k: pytest.fail("the model was loaded"))
    assert main(_evaluate(tiny_tree, tmp_path / "none.npz")) == 2
    assert f"{tmp_path / 'none.npz'}: no such vector cache" in _last_line(capsys)
    argv = ["evaluate", STAND_IN_MODEL, "--pooling", "mean:99", "--data", str(tiny_tree)]
    assert main(argv) == 2
    assert "pooling mean:99: hidden-state index 99 out of range for a model with 7 hidden states" in _last_line(capsys)


@pytest.mark.parametrize(("field", "value"), [("sentence1", 3), ("gold_label", None), ("sentence2", ["a"])])
def test_an_nli_line_whose_field_is_not_a_string_names_the_file_and_line(tmp_path, field, value):
    from consert.data.nli import load_nli_jsonl

    path = tmp_path / "snli_1.0_train.jsonl"
    good = {"gold_label": "neutral", "sentence1": "a b", "sentence2": "c d"}
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, field: value}) + "\n")
    with pytest.raises(DataFormatError, match=rf"snli_1.0_train.jsonl:2: {field}: expected a string, found"):
        load_nli_jsonl(path)
    path.write_bytes(json.dumps(good).encode() + b"\n" + "caf\xe9".encode("latin-1") + b"\n")
    with pytest.raises(DataFormatError, match=r"snli_1.0_train.jsonl:2: not UTF-8 text"):
        load_nli_jsonl(path)


def test_weights_holding_a_pickle_are_one_line_and_never_run(tmp_path, capsys):
    """A pytorch_model.bin holding Python objects: torch's weights_only refuses it (at 03ef47f a 44-65-line
    UnpicklingError); nothing it holds runs."""
    config, _ = tiny_bert(100, 32, 1, 4, 64)
    folder = tmp_path / "model"
    config.save_pretrained(folder)
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    torch.save({"embeddings.word_embeddings.weight": Payload()}, folder / "pytorch_model.bin", pickle_module=pickle)
    assert main(["train", "--set", f"model={folder}", "--set", f"output_dir={tmp_path / 'out'}"]) == 2
    line = _last_line(capsys)
    assert "its weights file holds Python objects besides tensors, which torch does not load" in line
    assert not marker.exists()


@pytest.mark.parametrize("char", ["\u2028", "\x0c", "\x85"])
def test_a_line_break_of_another_kind_names_the_file_and_line(tiny_tree, char):
    """SentEval's reader splits lines at these too: at 03ef47f, a wrong line count and no line number."""
    path = tiny_tree / "downstream" / "STS" / "STS12-en-test" / "STS.input.MSRvid.txt"
    rows = path.read_text().split("\n")
    rows[2] = rows[2].replace(" ", f" {char}", 1)
    path.write_text("\n".join(rows))
    with pytest.raises(DataFormatError) as err:
        load_senteval(tiny_tree)
    assert (err.value.path, err.value.line) == (path, 3) and "a line break to Python's and SentEval's readers" in str(
        err.value
    )


def test_a_training_corpus_not_utf8_or_empty_names_the_file(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"one text\n" + "caf\xe9 au lait\n".encode("latin-1"))
    argv = [
        "train",
        "--set",
        f"train_texts={corpus}",
        "--set",
        f"output_dir={tmp_path / 'out'}",
        "--set",
        "max_steps=1",
    ]
    assert main(argv) == 2
    assert f"train_texts: {corpus}:2: not UTF-8 text (byte 12); expected UTF-8" in _last_line(capsys)
    corpus.write_text("\n  \n")
    assert main(argv) == 2
    assert f"train_texts: {corpus} holds no text" in _last_line(capsys)  # at 03ef47f: "no dev evaluation was run"


def test_a_redirect_loop_is_one_line(tmp_path, capsys, monkeypatch):
    """urllib's text for a redirect loop spans three lines; the download's fault is one."""
    import http.server
    import threading

    from consert.data.download import MIRROR_ENV, SOURCES

    class Loop(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(302)
            self.send_header("Location", self.path)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Loop)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv(MIRROR_ENV, f"http://127.0.0.1:{server.server_address[1]}")
        monkeypatch.chdir(tmp_path)
        assert main(["download-data", "--wiki1m"]) == 2
    finally:
        server.shutdown()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "redirect error that would lead to an infinite loop" in err[0]
    assert SOURCES["wiki1m"].url in err[0] and not list(tmp_path.rglob("*.partial"))
