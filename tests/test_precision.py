"""Precision from the hardware, the inference engine it implies, and ONNX Runtime against PyTorch."""

from __future__ import annotations

import pytest
import torch

from consert import precision
from consert.encode import SentenceEncoder, choose_engine
from consert.models import STAND_IN_MODEL
from consert.precision import NATIVE_BF16_ENV, cpu_native_bf16, hardware_summary, resolve_dtype


@pytest.fixture()
def cpu_bf16(monkeypatch):
    """Set what the CPU's native-bf16 detection answers: ``cpu_bf16(True)`` / ``cpu_bf16(False)``."""

    def set_native(native: bool) -> None:
        monkeypatch.setenv(NATIVE_BF16_ENV, "1" if native else "0")
        cpu_native_bf16.cache_clear()

    yield set_native
    cpu_native_bf16.cache_clear()


@pytest.mark.parametrize(("native", "expected"), [(True, "bf16"), (False, "fp32")])
def test_auto_picks_bf16_on_a_cpu_only_where_it_is_native(cpu_bf16, native, expected):
    cpu_bf16(native)
    assert resolve_dtype("auto", "cpu") == expected


def test_explicit_precisions_are_honoured_whatever_the_cpu(cpu_bf16):
    cpu_bf16(False)
    assert resolve_dtype("bf16", "cpu") == "bf16"
    cpu_bf16(True)
    assert resolve_dtype("fp32", "cpu") == "fp32"


def test_fp16_is_refused_on_a_cpu_and_unknown_names_everywhere():
    with pytest.raises(ValueError, match="CUDA devices only"):
        resolve_dtype("fp16", "cpu")
    with pytest.raises(ValueError, match="unknown dtype 'half'"):
        resolve_dtype("half", "cpu")


@pytest.mark.parametrize(
    ("flags", "expected"),
    [({"avx2", "avx512f", "avx512_bf16"}, True), ({"avx2", "amx_tile", "amx_bf16"}, True), ({"avx2", "fma"}, False)],
)
def test_cpu_flags_decide_when_torch_cannot_tell(monkeypatch, flags, expected):
    monkeypatch.delenv(NATIVE_BF16_ENV, raising=False)
    for probe in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        monkeypatch.setattr(torch.cpu, probe, lambda: False, raising=False)
    monkeypatch.setattr(precision, "_cpuinfo_flags", lambda: flags)
    cpu_native_bf16.cache_clear()
    try:
        assert cpu_native_bf16() is expected
    finally:
        cpu_native_bf16.cache_clear()


def test_hardware_summary_names_the_capability_bf16_and_threads(cpu_bf16):
    cpu_bf16(False)
    summary = hardware_summary("cpu")
    assert f"torch capability {torch.backends.cpu.get_cpu_capability()}" in summary
    assert "native bf16: no (emulated)" in summary
    assert summary.endswith(f"{torch.get_num_threads()} threads")


def test_onnxruntime_serves_fp32_on_a_cpu_and_pytorch_everything_else(cpu_bf16):
    cpu_bf16(False)
    assert choose_engine("auto", "cpu", "auto") == "onnxruntime"
    assert choose_engine("auto", "cpu", "bf16") == "torch"
    assert choose_engine("auto", "cuda", "fp32") == "torch"
    assert choose_engine("torch", "cpu", "fp32") == "torch"
    cpu_bf16(True)
    assert choose_engine("auto", "cpu", "auto") == "torch"
    with pytest.raises(ValueError, match="unknown engine"):
        choose_engine("tensorrt", "cpu", "fp32")


def test_onnxruntime_hidden_states_match_pytorch_on_padded_batches_of_any_length():
    """Every hidden state, at real (unpadded) positions, for batch shapes the export never saw."""
    torch_encoder = SentenceEncoder.load(STAND_IN_MODEL, dtype="fp32", engine="torch", device="cpu")
    ort_encoder = SentenceEncoder(torch_encoder.tokenizer, torch_encoder.model, dtype="fp32", engine="onnxruntime")
    sentences = [
        "A man is playing a guitar.",
        "Two dogs run through the snow while their owner watches from a distance.",
        "Hi.",
        "The quick brown fox jumps over the lazy dog " * 8,  # truncated at max_length
        "Stocks fell sharply on Monday.",
    ]
    for batch_size in (2, 5):
        torch_encoder.batch_size = ort_encoder.batch_size = batch_size
        reference = list(torch_encoder.forward_batches(sentences, progress=False))
        candidate = list(ort_encoder.forward_batches(sentences, progress=False))
        for (rows, hidden, batch), (ort_rows, ort_hidden, _) in zip(reference, candidate, strict=True):
            assert list(rows) == list(ort_rows) and len(hidden) == len(ort_hidden) == 7
            real = batch["attention_mask"].bool()
            assert not real.all() or batch_size == 2  # the 5-sentence batch is padded
            for layer, ort_layer in zip(hidden, ort_hidden, strict=True):
                assert torch.allclose(layer[real], ort_layer[real], atol=1e-4)
    vectors = ort_encoder.encode(sentences, "mean:-2,-1", progress=False)
    expected = torch_encoder.encode(sentences, "mean:-2,-1", progress=False)
    assert abs(vectors - expected).max() < 1e-4
