"""The per-token chain compiled (consert.train.fused) computes what the model's own layers compute, compiles once for
every layer and batch, and a later process loads it from the cache folder instead of compiling again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch._inductor.runtime.cache_dir_utils import default_cache_dir

from consert.io import CACHE_ENV
from consert.train.fused import INDUCTOR_CACHE_ENV, compiled_layer_tail, fused_encoder, use_compile_cache
from consert.train.packed import Packing, packed_encoder
from tests import fixtures

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _own_compile_cache(monkeypatch, tmp_path):
    """Each test's Inductor cache in its own folder, the variable restored after it (compiling sets it)."""
    monkeypatch.setenv(INDUCTOR_CACHE_ENV, str(tmp_path / "inductor"))


def _tiny_bert(layers: int = 3):
    """float64, dropout on (hidden 0.1, attention 0.1), training: the chain's every operation at work."""
    _, model = fixtures.tiny_bert(
        vocab_size=500, hidden_size=32, layers=layers, heads=4, intermediate_size=64, dropout=True
    )
    return model.double().train()


def _packing(lengths: list[int]) -> tuple[torch.Tensor, Packing]:
    ids, mask = fixtures.padded_batch(lengths, vocab=500)
    return ids, Packing.of(mask)


def _step(model, encoder, ids: torch.Tensor, packing: Packing, seed: int = 7):
    """The last layer's packed tokens and every reached parameter's gradient, the dropout draws seeded."""
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    hidden = encoder(model, model.embeddings(input_ids=ids), packing)
    (hidden * torch.linspace(-1, 1, hidden.shape[1], dtype=hidden.dtype)).sum().backward()
    return hidden.detach(), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def test_the_compiled_chain_equals_the_model_layers_in_float64_values_and_gradients_with_dropout():
    """The compiled region's graph (AOTAutograd's forward and backward, without Inductor's code generation: the
    slow test below generates it) draws the dropout masks eager draws, so both passes agree to the bit; the eager
    packed pass equals the Hugging Face forward (tests/train/test_packed.py)."""
    model = _tiny_bert()
    ids, packing = _packing([9, 3, 14, 6])
    eager, eager_grads = _step(model, packed_encoder, ids, packing)
    compiled, compiled_grads = _step(model, fused_encoder("aot_eager"), ids, packing)
    assert (eager != _step(model, packed_encoder, ids, packing, seed=8)[0]).any()  # dropout is on
    torch.testing.assert_close(compiled, eager, rtol=0, atol=1e-12)
    assert compiled_grads.keys() == eager_grads.keys()
    for name, gradient in eager_grads.items():
        torch.testing.assert_close(compiled_grads[name], gradient, rtol=0, atol=1e-12, msg=name)


def test_one_compilation_serves_every_layer_and_token_count():
    """Three layers and batches of 32, 19 and 40 real tokens: one graph compiled (a region compiled per layer, or
    the token count compiled as a constant, would make several). The first count equals the hidden size, 32: by
    default torch would give both one symbol and compile the count as the constant the hidden size is."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    model = _tiny_bert(layers=3)
    encoder = fused_encoder("aot_eager")
    for lengths in ([9, 3, 14, 6], [5, 14], [16, 12, 4, 8]):
        _step(model, encoder, *_packing(lengths))
    assert counters["stats"]["unique_graphs"] == 1, dict(counters["stats"])
    assert compiled_layer_tail("aot_eager") is compiled_layer_tail("aot_eager")  # one wrapper a process


def test_the_compile_cache_lives_in_the_harness_cache_folder_unless_the_user_placed_it(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(INDUCTOR_CACHE_ENV)
    assert use_compile_cache() == tmp_path / "cache" / "inductor"
    assert os.environ[INDUCTOR_CACHE_ENV] == str(tmp_path / "cache" / "inductor")  # what Inductor and child jobs read
    monkeypatch.setenv(INDUCTOR_CACHE_ENV, default_cache_dir())  # what Inductor writes there once it has looked
    assert use_compile_cache() == tmp_path / "cache" / "inductor"
    monkeypatch.setenv(INDUCTOR_CACHE_ENV, str(tmp_path / "mine"))
    assert use_compile_cache() == tmp_path / "mine"


#: One process: the chain compiled by Inductor (its generated code), masks drawn as eager draws them
#: (``fallback_random``: the production setting draws its own), against the eager pass; then Inductor's cache counters.
_COMPILE_ONCE = """
import json, sys, time
import torch
import torch._inductor.config
from torch._dynamo.utils import counters
from tests.train.test_fused import _packing, _step, _tiny_bert
from consert.train.fused import fused_encoder
from consert.train.packed import packed_encoder

torch._inductor.config.fallback_random = True
model = _tiny_bert()
ids, packing = _packing([9, 3, 14, 6])
eager, eager_grads = _step(model, packed_encoder, ids, packing)
started = time.perf_counter()
compiled, compiled_grads = _step(model, fused_encoder(), ids, packing)
seconds = time.perf_counter() - started
print(json.dumps({
    "values": (compiled - eager).abs().max().item(),
    "gradients": max((compiled_grads[n] - g).abs().max().item() for n, g in eager_grads.items()),
    "same_parameters": sorted(compiled_grads) == sorted(eager_grads),
    "hits": counters["inductor"]["fxgraph_cache_hit"],
    "misses": counters["inductor"]["fxgraph_cache_miss"],
    "seconds": seconds,
}))
"""


@pytest.mark.slow
def test_inductors_fused_chain_equals_the_layers_and_a_second_process_loads_it_from_the_cache(tmp_path):
    """Two processes compile the chain with an empty cache folder: the first generates it (cache misses), the
    second loads it (hits, no miss), both equal to the eager layers in float64, values and gradients."""
    env = {**os.environ, CACHE_ENV: str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop(INDUCTOR_CACHE_ENV, None)
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", _COMPILE_ONCE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
        )
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    first, second = runs
    for run in runs:
        assert run["same_parameters"] and run["values"] < 1e-12 and run["gradients"] < 1e-12, run
    assert first["misses"] >= 1 and first["hits"] == 0, first  # compiled: forward and backward
    assert second["misses"] == 0 and second["hits"] == first["misses"], second  # loaded, nothing compiled
    assert any((tmp_path / "inductor").rglob("*")), "Inductor wrote nothing in the harness's cache folder"
    print(f"compile {first['seconds']:.1f} s, from the cache {second['seconds']:.1f} s")
