"""Precision and engine chosen by measurement (and overridden as documented); ONNX Runtime against PyTorch."""

from __future__ import annotations

import json

import pytest
import torch

from consert.encode import precision
from consert.encode.encoder import SentenceEncoder
from consert.encode.models import STAND_IN_MODEL
from consert.encode.precision import (
    DTYPE_ENV,
    ENGINE_ENV,
    Precision,
    cache_path,
    fastest,
    inference_precision,
    training_precision,
)
from consert.hardware import cpu_model_name, hardware_summary
from consert.io import CACHE_ENV
from tests import fixtures


@pytest.fixture()
def fresh_cache(tmp_path, monkeypatch):
    """An empty precision cache, and no environment override."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(DTYPE_ENV, raising=False)
    monkeypatch.delenv(ENGINE_ENV, raising=False)
    return tmp_path / "cache" / "precision.json"


@pytest.fixture(scope="module")
def tiny_model():
    _, model = fixtures.tiny_bert(
        vocab_size=2000, hidden_size=32, layers=2, heads=2, intermediate_size=64, dropout=True
    )
    return model.eval()


class CountingProbe:
    """Stands in for the timing only (the choice, the cache and the overrides are the real code):
    returns the given seconds per candidate and counts how often it was asked."""

    def __init__(self, seconds: dict[tuple[str, str], float]):
        self.seconds, self.calls = seconds, 0

    def __call__(self, candidates, device, purpose, model):
        self.calls += 1
        return {c: self.seconds[c] for c in candidates}


def test_the_fastest_candidate_wins_unless_a_preferred_one_ties():
    order = [("fp32", "onnxruntime"), ("fp32", "torch"), ("bf16", "torch")]
    assert fastest({order[0]: 7.5, order[1]: 8.3, order[2]: 11.7}, order) == ("fp32", "onnxruntime")  # Xeon, no AMX
    assert fastest({order[0]: 6.5, order[1]: 6.5, order[2]: 2.5}, order) == ("bf16", "torch")  # Xeon with AMX
    assert fastest({order[0]: 1.04, order[1]: 2.0, order[2]: 1.0}, order) == ("fp32", "onnxruntime")  # 4% tie


def test_a_measured_choice_is_cached_per_machine_and_model(fresh_cache, tiny_model):
    probe = CountingProbe({("fp32", "onnxruntime"): 7.5, ("fp32", "torch"): 8.3, ("bf16", "torch"): 11.7})
    chosen = precision._choose("auto", "auto", "cpu", "inference", tiny_model, probe)
    assert (chosen.dtype, chosen.engine, chosen.how) == ("fp32", "onnxruntime", "measured") and probe.calls == 1
    again = precision._choose("auto", "auto", "cpu", "inference", tiny_model, probe)
    assert (again.label, again.how, probe.calls) == ("fp32/onnxruntime", "measured (cached)", 1)
    assert again.timings == {"fp32/onnxruntime": 7.5, "fp32/torch": 8.3, "bf16/torch": 11.7}
    stored = json.loads(fresh_cache.read_text())
    (key,) = stored
    assert f"torch={torch.__version__}" in key and cpu_model_name() in key
    assert "BertModel:2x32x2x64" in key and "inference" in key
    bigger = fixtures.tiny_bert(vocab_size=2000, hidden_size=48, layers=2, heads=2, intermediate_size=64)[1]
    precision._choose("auto", "auto", "cpu", "inference", bigger, probe)  # another shape: measured again
    assert probe.calls == 2 and len(json.loads(fresh_cache.read_text())) == 2


#: The measurement policy's settings on a CPU (MEASUREMENT_POLICY), as kernel_settings() reads them.
CPU_POLICY = (1, "ieee", "tf32", "tf32", "ieee", "ieee", False, False)


class ConditionProbe:
    """Times as the process settings would make it: fp32 wins under the measurement policy, bf16 under
    anything else; records the settings each call saw."""

    def __init__(self):
        self.seen: list[tuple] = []

    def __call__(self, candidates, device, purpose, model):
        self.seen.append(precision.kernel_settings())
        policy = self.seen[-1] == CPU_POLICY
        return {c: (1.0 if (c[0] == "fp32") == policy else 2.0) for c in candidates}


def _restore_precisions(saved: tuple, matmul_precision: str) -> None:
    """Give the process back its fp32 precisions: torch's global one (which sets every backend's), then each
    backend's as ``saved`` (:func:`precision.kernel_settings`) has it."""
    torch.set_float32_matmul_precision(matmul_precision)
    for (namespace, name, _, _), value in zip(precision._kernel_knobs(), saved[1:-1], strict=True):
        setattr(namespace, name, value)


def _flip(name: str):
    """Set one process-level setting the trainer or a job flips; return the function that undoes it."""
    if name == "threads":
        threads = torch.get_num_threads()
        torch.set_num_threads(threads + 1)
        return lambda: torch.set_num_threads(threads)
    saved, matmul_precision = precision.kernel_settings(), torch.get_float32_matmul_precision()
    if name == "tf32":  # what the trainer and a CUDA encoder set; settable without a GPU
        precision.configure_cuda_matmul()
        return lambda: _restore_precisions(saved, matmul_precision)
    if name == "matmul precision":  # the global switch (bf16 matmuls in oneDNN on a CPU)
        torch.set_float32_matmul_precision("medium")
        return lambda: _restore_precisions(saved, matmul_precision)
    if name == "cudnn benchmark":
        torch.backends.cudnn.benchmark = True
        return lambda: setattr(torch.backends.cudnn, "benchmark", False)
    torch.use_deterministic_algorithms(True)
    return lambda: torch.use_deterministic_algorithms(False)


@pytest.mark.parametrize("setting", ["threads", "tf32", "matmul precision", "cudnn benchmark", "deterministic"])
def test_one_choice_per_model_device_and_purpose_whatever_the_process_has_set(fresh_cache, tiny_model, setting):
    """The class of the CUDA vector-cache refusal: a training job measured with TF32 on and cached fp32 vectors;
    a reader measured in a fresh process without it, chose bf16 and refused the cache. With each process-level
    setting flipped: the key is the same, the probe runs under the policy's settings, the choice is the same,
    and the process keeps its own setting."""
    candidates = [("fp32", "torch"), ("bf16", "torch")]
    reference_key = precision.cache_key("cpu", "inference", tiny_model, candidates)
    reference_probe = ConditionProbe()
    reference = precision._choose("auto", "torch", "cpu", "inference", tiny_model, reference_probe)
    fresh_cache.unlink()
    own = precision.kernel_settings()
    undo = _flip(setting)
    try:
        flipped = precision.kernel_settings()
        key = precision.cache_key("cpu", "inference", tiny_model, candidates)
        probe = ConditionProbe()
        chosen = precision._choose("auto", "torch", "cpu", "inference", tiny_model, probe)
        after = precision.kernel_settings()
    finally:
        undo()
    assert flipped != own and after == flipped  # the flip was in force, and is again after the probe
    assert key == reference_key
    assert probe.seen == reference_probe.seen == [CPU_POLICY]
    assert chosen.label == reference.label == "fp32/torch"


def test_tf32_as_the_trainer_sets_it_reads_the_same_through_both_of_torchs_interfaces():
    """``torch.compile`` reads ``torch.get_float32_matmul_precision()``, which raises when TF32 was set through the
    per-backend ``fp32_precision`` alone. Set as the trainer sets it, then under the probe's conditions and
    back, TF32 reads as torch documents it everywhere: precision "high", ``allow_tf32``, ``fp32_precision`` tf32."""
    saved, matmul_precision = precision.kernel_settings(), torch.get_float32_matmul_precision()
    try:
        precision.configure_cuda_matmul()
        for device in ("cuda", "cpu"):
            with precision.measurement_conditions(device):
                pass
            assert torch.get_float32_matmul_precision() == "high"
            assert torch.backends.cuda.matmul.allow_tf32
            assert getattr(torch.backends.cuda.matmul, "fp32_precision", "tf32") == "tf32"  # torch 2.9 and newer
    finally:
        _restore_precisions(saved, matmul_precision)
    assert precision.kernel_settings() == saved and torch.get_float32_matmul_precision() == matmul_precision


def test_explicit_values_and_the_environment_override_the_measurement(fresh_cache, tiny_model, monkeypatch):
    probe = CountingProbe({("fp32", "onnxruntime"): 1.0, ("fp32", "torch"): 2.0, ("bf16", "torch"): 3.0})
    chosen = precision._choose("bf16", "auto", "cpu", "inference", tiny_model, probe)
    assert (chosen.label, chosen.how, probe.calls) == ("bf16/torch", "requested", 0)
    # an explicit fp32 still measures which engine serves it best
    assert precision._choose("fp32", "auto", "cpu", "inference", tiny_model, probe).engine == "onnxruntime"
    monkeypatch.setenv(DTYPE_ENV, "bf16")
    assert precision._choose("auto", "auto", "cpu", "inference", tiny_model, probe).how == "environment"
    assert precision._choose("fp32", "torch", "cpu", "inference", tiny_model, probe).label == "fp32/torch"
    monkeypatch.setenv(DTYPE_ENV, "half")
    with pytest.raises(ValueError, match=r"\$CONSERT_DTYPE='half'"):
        precision._choose("auto", "auto", "cpu", "inference", tiny_model, probe)


def test_impossible_requests_are_refused(fresh_cache, tiny_model):
    with pytest.raises(ValueError, match="CUDA devices only"):
        inference_precision("fp16", "auto", "cpu", tiny_model)
    with pytest.raises(ValueError, match="unknown dtype 'half'"):
        training_precision("half", "cpu", tiny_model)
    with pytest.raises(ValueError, match="unknown engine"):
        inference_precision("auto", "tensorrt", "cpu", tiny_model)
    with pytest.raises(ValueError, match="not a resolved precision"):
        Precision("auto")
    with pytest.raises(ValueError, match="onnxruntime serves fp32 only"):  # not silently recorded as bf16
        inference_precision("bf16", "onnxruntime", "cpu", tiny_model)


def test_the_real_probe_times_every_candidate_and_leaves_the_rng_alone(fresh_cache, tiny_model):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    chosen = training_precision("auto", "cpu", tiny_model)
    assert torch.equal(torch.rand(3), expected)  # dropout in the probe drew from a forked generator
    assert chosen.how == "measured" and set(chosen.timings) == {"fp32/torch", "bf16/torch"}
    assert all(seconds > 0 for seconds in chosen.timings.values())
    assert all(p.grad is None for p in tiny_model.parameters())  # the probe's backward left nothing behind
    encoder = SentenceEncoder(None, tiny_model, dtype="auto", engine="auto")
    assert set(encoder.precision.timings) == {"fp32/onnxruntime", "fp32/torch", "bf16/torch"}
    assert encoder.precision.label in encoder.precision.timings
    assert encoder.precision.describe().startswith(f"{encoder.precision.label} (measured: ")
    assert cache_path() == fresh_cache and fresh_cache.is_file()


def test_a_graphed_step_is_timed_by_its_own_runner_and_cached_apart(fresh_cache, tiny_model):
    """The runner decides (here bf16 is made 5x cheaper than fp32, against whatever the eager pass says), the
    cache keeps the graphed choice under its own key, and fp16 is never a candidate."""
    import time

    built = []

    def runner(candidate, device, purpose, model, ids, mask):
        built.append(candidate)
        return lambda: time.sleep(0.002 if candidate[0] == "bf16" else 0.01)

    chosen = training_precision("auto", "cpu", tiny_model, graphed_runner=runner)
    assert (chosen.label, chosen.how) == ("bf16/torch", "measured")
    assert set(built) == {("fp32", "torch"), ("bf16", "torch")}
    assert chosen.timings["fp32/torch"] > 3 * chosen.timings["bf16/torch"]
    (key,) = json.loads(fresh_cache.read_text())
    assert f"training ({precision.GRAPHED_PROBE})" in key
    eager = training_precision("auto", "cpu", tiny_model)  # the eager probe is another entry, measured anew
    assert eager.how == "measured" and len(json.loads(fresh_cache.read_text())) == 2


def test_on_a_cpu_a_candidate_whose_warm_up_is_4x_slower_runs_only_once(tiny_model, monkeypatch):
    """Emulated bf16 costs seconds a pass: the warm-up already rules it out, so it is not timed again; the
    others, each within 4x of the fastest, are warmed up and timed every round (3 on a CPU). The probe's clock
    is a fake one that each pass advances by its declared cost, so the test cannot depend on the machine."""
    from consert.encode import precision

    clock = [0.0]
    monkeypatch.setattr(precision.time, "perf_counter", lambda: clock[0])
    calls = {"fast": 0, "close": 0, "slow": 0}
    cost = {"fast": 1.0, "close": 1.5, "slow": 4.5}  # slow: 4.5x the fastest warm-up, close: within 4x

    def runner(candidate, device, purpose, model, ids, mask):
        def run():
            calls[candidate[0]] += 1
            clock[0] += cost[candidate[0]]

        return run

    candidates = [("fast", "torch"), ("close", "torch"), ("slow", "torch")]
    timings = precision._probe(candidates, "cpu", "inference", tiny_model, runner=runner)
    assert calls == {"fast": 4, "close": 4, "slow": 1}
    assert timings == {("fast", "torch"): 1.0, ("close", "torch"): 1.5, ("slow", "torch"): 4.5}


def test_hardware_summary_names_the_cpu_its_bf16_units_and_threads():
    summary = hardware_summary("cpu")
    assert summary.startswith(cpu_model_name())
    assert f"torch capability {torch.backends.cpu.get_cpu_capability()}" in summary and "bf16 units: " in summary
    assert summary.endswith(f"{torch.get_num_threads()} threads")


@pytest.mark.parametrize(
    ("flags", "cap", "expected"),
    [
        ({"avx512_bf16", "amx_bf16"}, None, ["AVX-512 BF16", "AMX"]),
        ({"avx512_bf16", "amx_bf16"}, "ALL", ["AVX-512 BF16", "AMX"]),
        ({"avx512_bf16", "amx_bf16"}, "AVX512_CORE_BF16", ["AVX-512 BF16"]),  # below AMX's level
        ({"avx512_bf16", "amx_bf16"}, "AVX512_CORE_AMX", ["AVX-512 BF16", "AMX"]),
        ({"avx512_bf16"}, "AVX2", []),  # the AVX2 emulation of an AVX-512 BF16 CPU: bf16 emulated
        ({"avx512_bf16"}, "AVX512_CORE_VNNI", []),
        ({"avx2"}, None, []),  # an AVX2-only CPU
    ],
)
def test_bf16_units_are_the_flags_less_what_a_onednn_cap_keeps_it_from(monkeypatch, flags, cap, expected):
    """oneDNN's documented levels: AVX-512 BF16 is used from ``avx512_core_bf16`` up, AMX from ``avx512_core_amx``."""
    from consert import hardware

    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset(flags))
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    if cap is None:
        monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    else:
        monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", cap)
    assert hardware.bf16_units() == expected
    summary = hardware.hardware_summary("cpu", with_threads=False)
    assert summary.endswith(
        f"bf16 units: {', '.join(expected) or 'none'}" + (f" (oneDNN capped at {cap})" if cap and cap != "ALL" else "")
    )


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
