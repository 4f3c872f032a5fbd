"""The paper's model known by what it is: a run is comparable when its weights are bert-base-uncased's or
bert-large-uncased's (by a hub id that names them, a hub-cache copy's path, or a published sha256 of the weights),
whatever the folder is called; a local folder with other weights is not, and its rows say why."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from consert.encode import models
from consert.encode.models import identify_encoder, resolve_model
from consert.verdict.decision import not_comparable_reason

REVISION = "86b5e0934494bd15c9632b12f734a8a67f723594"


def _row(resolved) -> pd.Series:
    """An evaluation row of ``resolved``'s, with the columns a run writes."""
    return pd.Series({"model": resolved.name, "base_model": resolved.base_model, "setting": resolved.setting,
                      **resolved.identity.columns()})  # fmt: skip


def test_the_paper_encoders_hub_ids_name_them():
    for name, size in (("bert-base-uncased", "base"), ("google-bert/bert-base-uncased", "base"),
                       ("google-bert/bert-large-uncased", "large")):  # fmt: skip
        identity = identify_encoder(name, None)
        assert identity.weights == models.PAPER_ENCODERS[size] and identity.evidence == f"hub id {name}"
    assert identify_encoder("bert-base-cased", None).weights == ""


def test_a_hub_cache_copy_is_the_paper_encoder_and_a_renamed_folder_of_other_weights_is_not(tiny_model_dir, tmp_path):
    cached = tmp_path / "hub" / "models--google-bert--bert-base-uncased" / "snapshots" / REVISION
    shutil.copytree(tiny_model_dir, cached)
    local = tmp_path / "models" / "bert-base-uncased"  # named as the paper's, but other weights
    shutil.copytree(tiny_model_dir, local)
    from_cache, renamed = resolve_model(str(cached)), resolve_model(str(local))
    assert from_cache.identity.weights == "bert-base-uncased"
    assert from_cache.identity.evidence == f"a hub-cache copy of google-bert/bert-base-uncased at revision {REVISION}"
    assert not_comparable_reason(_row(from_cache), "base") == ""
    assert renamed.identity.weights == ""
    reason = not_comparable_reason(_row(renamed), "base")
    digest = renamed.weights_sha256
    assert reason == (
        f"encoder {str(local)!r} is not the paper's 'bert-base-uncased' (weights sha256 {digest[:12]}... are no "
        "published bert-base-uncased or bert-large-uncased)"
    )
    # a copy of the paper's size but of the other encoder is not comparable at this size either
    assert "is not the paper's 'bert-large-uncased'" in not_comparable_reason(_row(from_cache), "large")


def test_a_local_folder_is_known_by_its_weights_sha256(tiny_model_dir, tmp_path, monkeypatch):
    """The published hashes are 440 MB files' (bert-base-uncased's pytorch_model.bin and model.safetensors): here the
    tiny model's hash stands in their table, and the folder's name says nothing."""
    local = Path(shutil.copytree(tiny_model_dir, tmp_path / "my-encoder"))
    digest = resolve_model(str(local)).weights_sha256
    monkeypatch.setitem(models.PAPER_WEIGHTS, digest, ("bert-base-uncased", "its published file"))
    identity = identify_encoder(str(local), local)
    assert (
        identity.weights == "bert-base-uncased"
        and identity.evidence == f"sha256 {digest[:12]}... of its published file"
    )
    assert len(models.PAPER_WEIGHTS) == 3 and {w for w, _ in models.PAPER_WEIGHTS.values()} == {"bert-base-uncased"}


def test_a_row_written_before_encoders_were_identified_is_judged_by_its_hub_id():
    old = pd.Series({"model": "x", "base_model": "google-bert/bert-base-uncased", "setting": "paper setting"})
    assert not_comparable_reason(old, "base") == ""
    other = pd.Series({"model": "x", "base_model": "/data/bert-base-uncased", "setting": "paper setting"})
    assert "is not the paper's 'bert-base-uncased' (its name)" in not_comparable_reason(other, "base")


def test_a_trained_model_carries_its_base_encoders_identity(tiny_model_dir, tiny_tree, tmp_path):
    """Its export records which paper encoder it started from, so its own evaluation (its weights are new) and a
    second stage trained from it stay comparable."""
    from consert.data.senteval import load_senteval
    from consert.train.config import TrainConfig
    from consert.train.trainer import train

    cached = tmp_path / "hub" / "models--bert-base-uncased" / "snapshots" / REVISION
    shutil.copytree(tiny_model_dir, cached)
    config = TrainConfig(model=str(cached), output_dir=str(tmp_path / "run"), batch_size=4, max_steps=1,
                         eval_every=1, dev_max_pairs=8, device="cpu", dtype="fp32")  # fmt: skip
    result = train(config, load_senteval(tiny_tree), progress=False)
    trained = resolve_model(str(result.output_dir))
    assert trained.weights_sha256 != resolve_model(str(cached)).weights_sha256
    assert trained.identity == resolve_model(str(cached)).identity
    assert trained.identity.evidence == f"a hub-cache copy of bert-base-uncased at revision {REVISION}"
    assert not_comparable_reason(_row(trained), "base") == ""
