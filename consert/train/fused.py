"""BERT's per-token chain compiled into fused kernels, once a machine.

After attention, every operation of a BERT layer is per token (:func:`consert.train.packed.layer_tail`): the
output projection's bias, dropout, the residual and LayerNorm, then the feed-forward block's bias and GELU, its
projection, dropout, the residual and LayerNorm. Eager, each is a kernel of its own over the T x d residual
stream. ``torch.compile`` (Inductor) fuses each chain between two matrix products into one kernel and leaves the
matrix products to the BLAS. The compiled region is one layer's tail with the token count a dynamic dimension, so
one compilation serves every layer of every BERT of one shape and every batch (PyTorch's regional compilation):
the CUDA graphs of the packed step record it for every shape bucket (``compile: on``).

Compiling takes tens of seconds, and 105 runs must not each pay it. Inductor keeps what it compiles on disk (its
FX graph and AOTAutograd caches, both on by default), keyed by the graph, its shapes' rules, the device and the
versions of torch and Triton, and written atomically, so processes share it. :func:`use_compile_cache` puts
that folder in the harness's cache folder (kept across runs and reboots, unlike Inductor's default under
``/tmp``): each machine compiles the region once, and every later process loads it. A user's own
``TORCHINDUCTOR_CACHE_DIR`` wins, unless it names Inductor's default folder.

Dropout inside a fused kernel draws its masks from Inductor's own generator, so a compiled run equals an eager
one in distribution, not mask for mask (the recipe card says so).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

import torch

from consert.io import cache_dir
from consert.train.packed import LayerTail, layer_tail, packed_encoder

#: Inductor's own variable for its cache folder (a user's setting wins over :func:`use_compile_cache`).
INDUCTOR_CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"


def use_compile_cache() -> Path:
    """Inductor's caches in ``inductor/`` of the harness's cache folder (:func:`consert.io.cache_dir`), unless
    ``TORCHINDUCTOR_CACHE_DIR`` names another folder than Inductor's default; the folder in use. Inductor reads
    the variable at each compilation, and the processes a job starts inherit it."""
    # Inductor writes its default into the variable once it has looked the folder up (at import, too), so only
    # a value other than the default can be the user's.
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    current = os.environ.get(INDUCTOR_CACHE_ENV)
    if current is None or os.path.abspath(current) == os.path.abspath(default_cache_dir()):
        os.environ[INDUCTOR_CACHE_ENV] = str(cache_dir() / "inductor")
    return Path(os.environ[INDUCTOR_CACHE_ENV])


@functools.cache
def compiled_layer_tail(backend: str = "inductor") -> LayerTail:
    """:func:`consert.train.packed.layer_tail` compiled by ``backend`` (Inductor; the tests also use
    ``aot_eager``, its graph without code generation), the token count dynamic: one compilation for every
    layer and batch of a model shape and precision. One wrapper a process."""
    use_compile_cache()
    compiled = torch.compile(layer_tail, dynamic=True, backend=backend)
    # Without duck shaping: by default a token count equal to the hidden size (768 = 6 buckets of 128) or the
    # feed-forward size would share their symbol, and as they are constants it would be compiled as one too.
    return torch.fx.experimental._config.patch(use_duck_shape=False)(compiled)


def fused_encoder(backend: str = "inductor") -> Callable[..., torch.Tensor]:
    """:func:`consert.train.packed.packed_encoder` with each layer's per-token chain compiled
    (:func:`compiled_layer_tail`); attention runs as it does uncompiled."""
    return functools.partial(packed_encoder, tail=compiled_layer_tail(backend))
