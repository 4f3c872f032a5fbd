"""Baselines: whitening, flow, GloVe and top-k masking on small cases with known answers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from baselines.flow import Glow
from baselines.glove import GloveBaseline, load_glove_text
from baselines.topk import frequency_ranking
from baselines.whitening import WhiteningTransform
from consert.data.senteval import DataFormatError


def test_whitening_gives_zero_mean_identity_covariance_on_its_fit_set():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 6)) @ rng.normal(size=(6, 6)) + 3.0
    y = WhiteningTransform.fit(x).transform(x)
    np.testing.assert_allclose(y.mean(0), 0, atol=1e-10)
    np.testing.assert_allclose(np.cov(y, rowvar=False), np.eye(6), atol=1e-8)


def test_whitening_k_keeps_the_top_principal_directions():
    rng = np.random.default_rng(1)
    # variance 100 along e0 and 25 along e1, 1 elsewhere
    x = rng.normal(size=(2000, 5)) * np.array([10.0, 5.0, 1.0, 1.0, 1.0])
    transform = WhiteningTransform.fit(x, k=2)
    assert transform.W.shape == (5, 2)
    directions = transform.W / np.linalg.norm(transform.W, axis=0)
    assert abs(directions[0, 0]) > 0.99 and abs(directions[1, 1]) > 0.99
    np.testing.assert_allclose(np.cov(transform.transform(x), rowvar=False), np.eye(2), atol=1e-8)


def test_whitening_falls_back_to_qr_iteration_where_divide_and_conquer_does_not_converge(monkeypatch):
    """LAPACK's gesdd (numpy's SVD) failed to converge on a rank-59 covariance of a 384-d stand-in on a small task
    (the CI config's DAG, 2026-11-29): the fit then takes gesvd's factors, whose cosines are the same."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 12)) @ rng.normal(size=(12, 30))  # 30-d vectors of rank 12: a rank-deficient covariance
    expected = WhiteningTransform.fit(x, k=8)

    def diverging(*args, **kwargs):
        raise np.linalg.LinAlgError("SVD did not converge")

    monkeypatch.setattr(np.linalg, "svd", diverging)
    fallback = WhiteningTransform.fit(x, k=8)
    np.testing.assert_allclose(np.abs(fallback.W), np.abs(expected.W), atol=1e-6)  # a column may change its sign
    y, z = fallback.transform(x[:5]), expected.transform(x[:5])
    cosines = (y / np.linalg.norm(y, axis=1, keepdims=True)) @ (y / np.linalg.norm(y, axis=1, keepdims=True)).T
    reference = (z / np.linalg.norm(z, axis=1, keepdims=True)) @ (z / np.linalg.norm(z, axis=1, keepdims=True)).T
    np.testing.assert_allclose(cosines, reference, atol=1e-8)


def test_flow_is_invertible_and_its_log_det_matches_autograd():
    torch.manual_seed(0)
    flow = Glow(dim=8, levels=3, depth=2, width=8).double()
    x = torch.randn(16, 8, dtype=torch.float64)
    with torch.no_grad():  # make the couplings non-trivial (they start at zero, as in Glow)
        for p in flow.parameters():
            p.add_(0.1 * torch.randn_like(p))
    z, log_det = flow(x)
    assert torch.allclose(flow.inverse(z), x, atol=1e-8)
    for row in range(3):
        jacobian = torch.autograd.functional.jacobian(lambda v: flow(v.unsqueeze(0))[0][0], x[row])
        assert log_det[row].item() == pytest.approx(torch.logdet(jacobian).item(), abs=1e-6)


def test_flow_fit_lowers_the_bits_per_dimension(monkeypatch):
    from baselines.flow import FlowBaseline
    from baselines.flow_settings import FlowSettings

    rng = np.random.default_rng(0)
    table = {f"s{i}": v for i, v in enumerate(rng.normal(size=(2048, 16)) @ rng.normal(size=(16, 16)) + 2)}

    class FakeVectors:  # pooled vectors given directly: the flow is what is tested here
        pooling = "mean"

        def __call__(self, sentences):
            return np.stack([table[s] for s in sentences])

        def describe(self):
            return {}

    settings = FlowSettings(levels=2, depth=2, width=16, batch_size=32, encoder_dropout=False)
    flow = FlowBaseline(FakeVectors(), settings, progress=False).fit(list(table))
    assert flow.history[-1] < flow.history[0] - 0.1  # bits per dimension (the reference's objective)
    assert flow.encode(["s0", "s1"]).shape == (2, 16)


def test_glove_skips_oov_and_reports_empty_sentences(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text("the 1 0 0\ncat 0 2 0\nsat 0 0 4\n")
    glove = GloveBaseline(path)
    vectors = glove.encode(["The CAT zzz", "sat", "qqq www", ""])
    np.testing.assert_allclose(vectors[0], [0.0, 2.0, 0.0])  # "The" -> "the": a stop word; "CAT" -> "cat"
    np.testing.assert_allclose(vectors[1], [0, 0, 4])
    np.testing.assert_array_equal(vectors[2:], 0)
    assert glove.empty_sentences == 2 and glove.describe()["empty_sentences"] == 2


def test_glove_bad_file_names_the_line(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text("the 1 0 0\ncat 0 x 2\n")
    with pytest.raises(DataFormatError, match=r"glove\.txt:2: expected 3 numbers after the word"):
        load_glove_text(path)


def test_offline_glove_is_the_real_6b_50d_and_labelled():
    glove = GloveBaseline()
    assert glove.matrix.shape == (400000, 50) and glove.index["the"] == 0
    assert "offline stand-in" in glove.describe()["setting"]


class _Tokenizer:
    def __call__(self, sentences, truncation=True, max_length=64):
        vocab = {"[CLS]": 0, "[SEP]": 1, "a": 2, "b": 3, "c": 4}
        return {"input_ids": [[0, *(vocab[w] for w in s.split()), 1] for s in sentences]}


def test_frequency_ranking_on_a_fixture():
    # a: 3, b: 1, c: 2, [CLS]/[SEP]: 3 each -> ties broken by id
    assert frequency_ranking(_Tokenizer(), ["a c", "a b", "a c"]) == [0, 1, 2, 4, 3]


@pytest.fixture(scope="module")
def stand_in_encoder():
    from consert.encode.encoder import SentenceEncoder
    from consert.encode.models import STAND_IN_MODEL

    return SentenceEncoder.load(STAND_IN_MODEL, device="cpu", batch_size=8, engine="torch")  # hooks count its passes


def test_topk_k0_is_plain_mean_pooling_and_one_pass_serves_every_k(stand_in_encoder, real_data):
    from baselines.topk import stsb_test_ranking
    from consert.encode.pooling import masked_mean
    from consert.encode.rank_sums import collect_rank_sums

    ranking = stsb_test_ranking(stand_in_encoder, real_data)
    tokenizer = stand_in_encoder.tokenizer
    assert set(tokenizer.convert_ids_to_tokens(ranking[:2])) == {"[CLS]", "[SEP]"}
    sentences = real_data.unlabeled_texts()[:20]
    calls = []
    handle = stand_in_encoder.model.register_forward_hook(lambda *args: calls.append(1))
    try:
        sums = collect_rank_sums(stand_in_encoder, sentences, ranking[:10], progress=False)
    finally:
        handle.remove()
    assert len(calls) == 3  # 20 sentences in batches of 8: one encoding pass, whatever the number of k
    curves = dict(sums.masked_means(range(0, 11)))
    plain = stand_in_encoder.encode(sentences, "mean:-2,-1", progress=False)
    np.testing.assert_array_equal(curves[0], plain)
    # every k against masking the token vectors directly
    rank_of = {token: rank for rank, token in enumerate(ranking)}
    for rows, hidden, batch in stand_in_encoder.forward_batches(sentences, progress=False):
        tokens = (hidden[-2].float() + hidden[-1].float()) / 2
        ranks = torch.tensor([[rank_of.get(t, 10**6) for t in ids] for ids in batch["input_ids"].tolist()])
        for k in (1, 2, 5, 10):
            direct = masked_mean(tokens, batch["attention_mask"].bool() & (ranks >= k)).numpy()
            np.testing.assert_allclose(curves[k][rows], direct, atol=2e-5)
    assert not np.allclose(curves[2], plain)
    with pytest.raises(ValueError, match="k must be in \\[0, 10\\]"):
        list(sums.masked_means([11]))


def test_glove_equals_sentence_transformers_own_average_word_embeddings(real_data):
    """The reference pipeline built from sentence-transformers' own modules (WordEmbeddings with its
    WhitespaceTokenizer defaults, then mean pooling: how SBERT's avg-GloVe model is made) on the real
    glove.6B vectors gives the baseline's vectors, on real STS sentences."""
    from sentence_transformers import SentenceTransformer

    try:  # sentence-transformers 6 moved the modules
        from sentence_transformers.sentence_transformer.modules import Pooling, WordEmbeddings
        from sentence_transformers.sentence_transformer.modules.tokenizer import (
            ENGLISH_STOP_WORDS,
            WhitespaceTokenizer,
        )
    except ImportError:
        from sentence_transformers.models import Pooling, WordEmbeddings
        from sentence_transformers.models.tokenizer import ENGLISH_STOP_WORDS, WhitespaceTokenizer

    glove = GloveBaseline()
    words = list(glove.index)
    matrix = glove.matrix[[glove.index[w] for w in words]]
    # from_text_file's layout: a zero padding vector first, the words after it
    tokenizer = WhitespaceTokenizer(vocab=["PADDING_TOKEN", *words], stop_words=ENGLISH_STOP_WORDS, do_lower_case=False)
    embedding = WordEmbeddings(tokenizer, np.vstack([np.zeros((1, matrix.shape[1])), matrix]).astype(np.float32))
    reference = SentenceTransformer(modules=[embedding, Pooling(matrix.shape[1], "mean")], device="cpu")
    sentences = real_data.sets["STSb"].eval_sentences()[:300] + ["", "the of and ."]  # and two empty ones
    expected = reference.encode(sentences, batch_size=64, convert_to_numpy=True)
    np.testing.assert_allclose(glove.encode(sentences), expected, atol=1e-5)
