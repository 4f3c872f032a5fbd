"""The pooling grammar on hand-computable tensors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from consert.encode.pooling import Pooling, masked_mean

# 3 hidden states (embedding output + 2 layers), batch of 2, length 3, d = 2
H0 = torch.tensor([[[1.0, 1.0], [2.0, 2.0], [9.0, 9.0]], [[0.0, 0.0], [4.0, 4.0], [8.0, 8.0]]])
H1 = H0 * 10
H2 = H0 + 100
HIDDEN = (H0, H1, H2)
MASK = torch.tensor([[1, 1, 0], [1, 1, 1]])  # the first sentence has one padding position


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("cls", [[101.0, 101.0], [100.0, 100.0]]),
        ("mean", [[101.5, 101.5], [104.0, 104.0]]),  # last layer, padding excluded
        ("mean:0", [[1.5, 1.5], [4.0, 4.0]]),
        ("mean:-2,-1", [[(15 + 101.5) / 2] * 2, [(40 + 104) / 2] * 2]),
        ("mean:0,-1", [[(1.5 + 101.5) / 2] * 2, [(4 + 104) / 2] * 2]),
        ("mean:1,2", [[(15 + 101.5) / 2] * 2, [(40 + 104) / 2] * 2]),
    ],
)
def test_poolings_by_hidden_state_index(spec, expected):
    assert torch.allclose(Pooling.parse(spec)(HIDDEN, MASK), torch.tensor(expected))


def test_round_trip_names():
    for spec in ("cls", "mean", "mean:-2,-1", "mean:0,-1"):
        assert str(Pooling.parse(spec)) == spec
    assert str(Pooling.parse("mean:-1")) == "mean"
    assert not Pooling.parse("mean").needs_all_hidden_states
    assert Pooling.parse("mean:0,-1").needs_all_hidden_states


@pytest.mark.parametrize("bad", ["max", "mean:", "mean:a,b", "first-last", ""])
def test_bad_specs_raise(bad):
    with pytest.raises(ValueError, match="unknown pooling"):
        Pooling.parse(bad)


def test_layer_out_of_range():
    with pytest.raises(ValueError, match="index 3 out of range"):
        Pooling.parse("mean:3")(HIDDEN, MASK)


def test_fully_masked_row_is_zero_not_nan():
    out = masked_mean(H0, torch.zeros(2, 3))
    assert torch.equal(out, torch.zeros(2, 2))


@pytest.mark.parametrize("engine", ["torch", "onnxruntime"])
def test_cls_pooler_is_the_models_pooler_output_as_simcse_scores_it(engine):
    """SimCSE's ``cls``: Hugging Face's ``pooler_output`` (BERT's dense + tanh over the last layer's [CLS]),
    for each sentence of a padded batch, whichever engine ran the encoder."""
    from transformers import AutoTokenizer

    from consert.encode.encoder import SentenceEncoder
    from consert.encode.models import STAND_IN_MODEL, resolve_model
    from tests import fixtures

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(STAND_IN_MODEL).path)
    _, model = fixtures.tiny_bert(
        vocab_size=tokenizer.vocab_size, hidden_size=32, layers=2, heads=2, intermediate_size=64
    )
    sentences = ["A man plays a guitar.", "Two dogs run in a field of tall grass near a river.", "Hi."]
    encoder = SentenceEncoder(tokenizer, model.eval(), max_length=32, dtype="fp32", engine=engine)
    vectors = encoder.encode(sentences, "cls_pooler", progress=False)
    with torch.inference_mode():
        expected = model(**tokenizer(sentences, padding=True, truncation=True, max_length=32, return_tensors="pt"))
    np_expected = expected.pooler_output.numpy()
    assert vectors.shape == (3, 32) and abs(vectors - np_expected).max() < 1e-5
    assert not np.allclose(vectors, encoder.encode(sentences, "cls", progress=False))  # the pooler did act


def test_simcse_names_and_the_pooler_round_trip():
    assert str(Pooling.parse("cls_pooler")) == "cls_pooler" and str(Pooling.parse("avg_first_last")) == "mean:1,-1"
    with pytest.raises(ValueError, match="the model has no pooler"):
        Pooling.parse("cls_pooler")(HIDDEN, MASK)


def test_a_label_names_the_pooling_as_typed_and_what_it_is_here():
    """SimCSE's evaluation.py: cls_before_pooler = the [CLS] vector, cls = through the pooler (our cls_pooler),
    avg_first_last = hidden states 1 and -1."""
    from consert.encode.pooling import pooling_label

    assert pooling_label("avg_first_last") == "avg_first_last (mean:1,-1 here)"
    assert pooling_label("cls_before_pooler") == "cls_before_pooler (cls here)"
    assert pooling_label("mean:-2,-1") == "mean:-2,-1" and pooling_label("model (Pooling)") == "model (Pooling)"
    assert pooling_label("cls_pooler") == "cls_pooler (SimCSE's cls)"
    cls = pooling_label("cls")
    assert cls.startswith("cls (") and "SimCSE's cls_before_pooler" in cls and "SimCSE's cls is cls_pooler" in cls
