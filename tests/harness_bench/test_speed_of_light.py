"""A step's work counted against the arithmetic of its layers, and the cards' peaks."""

from __future__ import annotations

import math

import pytest
from transformers import AutoTokenizer

from consert.data.senteval import load_senteval
from consert.train.config import TrainConfig
from harness_bench.speed_of_light import peak_tflops, step_work


def test_a_steps_work_is_its_layers_products_on_real_tokens_forward_and_backward(tiny_model_dir, tiny_tree, tmp_path):
    """One unsupervised step over six texts of other lengths (one batch: its order does not matter), two identical
    views of T real tokens in all, by hand: each layer's weights (Q, K, V, output: 4 d^2; the feed-forward:
    2 d f) 2 T (4 d^2 + 2 d f) forward; attention 2 x 2 l^2 d a text; the loss's similarities of the 2B vectors
    2 (2B)^2 d; the backward twice each forward. Counting the padding, or the forward alone, misses."""
    texts = ["a man plays a guitar .", "two dogs run", "the cat sleeps on a warm mat in the afternoon sun .",
             "rain", "a woman is slicing an onion with a very sharp knife", "kids play football"]  # fmt: skip
    corpus = tmp_path / "texts.txt"
    corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
    config = TrainConfig.from_dict(
        {"model": tiny_model_dir, "device": "cpu", "data": str(tiny_tree), "mode": "unsup", "remove_dropout": True,
         "views": ["none", "none"], "batch_size": 6, "output_dir": "unused", "train_texts": str(corpus)}
    )  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    lengths = [len(tokenizer(text)["input_ids"]) for text in texts]  # [CLS] and [SEP] included
    d, f, layers, rows = 32, 64, 2, 2 * len(texts)  # TINY_SHAPE, two views
    linear = 2 * (2 * sum(lengths)) * (4 * d * d + 2 * d * f) * layers
    attention = 2 * 2 * 2 * d * layers * sum(n * n for n in lengths)  # two views, two products, 2 per multiply-add
    loss = 2 * rows * rows * d
    work = step_work(config, load_senteval(tiny_tree), batches=1)
    assert work.flops == 3 * (linear + attention + loss) and work.kernels is None
    assert max(lengths) > 2 * min(lengths)  # the padded batch is mostly padding, which is not counted


@pytest.mark.parametrize(
    "name, dtype, peak",
    [
        ("NVIDIA H100 80GB HBM3", "bf16", 989.4),  # H100 SXM5
        ("NVIDIA H100 PCIe", "bf16", 756.5),
        ("NVIDIA H200", "fp32", 494.7),  # TF32
        ("NVIDIA A100-SXM4-80GB", "bf16", 312.0),
    ],
)
def test_the_cards_dense_peaks(name, dtype, peak):
    assert peak_tflops(name, dtype) == peak


def test_a_card_or_precision_not_listed_has_no_peak():
    assert math.isnan(peak_tflops("cpu", "bf16")) and math.isnan(peak_tflops("NVIDIA L4", "bf16"))
    assert math.isnan(peak_tflops("NVIDIA H100 80GB HBM3", ""))
