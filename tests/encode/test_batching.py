"""Token ids cached once per text give the batches one padded tokenizer call gives."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from consert.encode.models import STAND_IN_MODEL, resolve_model

    return AutoTokenizer.from_pretrained(resolve_model(STAND_IN_MODEL).path)


@pytest.mark.parametrize("max_length", [8, 12])
def test_cached_batches_equal_the_tokenizers_padded_call(tokenizer, real_data, max_length):
    """On real STS-B sentences, some longer than ``max_length``: the ids and the mask of ``TokenCache.batch``
    are those of ``tokenizer(texts, padding=True, truncation=True, max_length=...)``, whichever texts were
    tokenized first (a repeated text, texts cached by an earlier batch)."""
    from consert.encode.batching import TokenCache

    pairs = real_data.sets["STSb"].groups["test"][:40]
    texts = [pair.sent1 for pair in pairs] + [pair.sent2 for pair in pairs[:10]]
    cache = TokenCache(tokenizer, max_length)
    cache.ids(texts[5:15])  # some texts cached ahead
    ids, mask = cache.batch([*texts, texts[0]])
    expected = tokenizer([*texts, texts[0]], padding=True, truncation=True, max_length=max_length, return_tensors="np")
    lengths = expected["attention_mask"].sum(1)
    assert (lengths == max_length).any() and (lengths < max_length).any()  # some truncated, some padded
    np.testing.assert_array_equal(ids.numpy(), expected["input_ids"])
    np.testing.assert_array_equal(mask.numpy(), expected["attention_mask"])
    assert len(cache) == len(set(texts))


def test_batches_round_up_to_the_multiple_with_padding_masked_out(tokenizer):
    from consert.encode.batching import TokenCache

    ids, mask = TokenCache(tokenizer, 64).batch(["a cat.", "a man is playing a guitar."], multiple=16)
    assert ids.shape == mask.shape == (2, 16)
    assert mask.sum(1).tolist() == [5, 9]  # [CLS] a cat . [SEP]; [CLS] a man is playing a guitar . [SEP]
    assert (ids.numpy()[mask.numpy() == 0] == tokenizer.pad_token_id).all()
