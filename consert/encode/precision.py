"""Numeric precision and inference engine, chosen by measuring them on this machine.

CPU flags say what a CPU can decode, not what is fast on it: an Intel Xeon that reports
``avx512_bf16`` without AMX tiles encodes bf16 1.5x slower than fp32 ONNX Runtime, while one with
AMX encodes bf16 2.6x faster, and an AVX2-only CPU emulates bf16 8x slower. So ``dtype: auto``
(and ``engine: auto``) time a short probe of every candidate on the model at hand, once per machine,
and keep the fastest, as FFTW's wisdom or cuDNN's benchmark mode do:

* inference, CPU: bf16 autocast (PyTorch), fp32 ONNX Runtime, fp32 PyTorch;
* training, CPU: bf16 autocast, fp32;
* CUDA (both): bf16 autocast (where supported), fp16 autocast (a gradient scaler in training), fp32.

The winner is cached in ``precision.json`` (``$CONSERT_CACHE_DIR``, else ``~/.cache/consert``), keyed by
the CPU or GPU model, torch and onnxruntime versions, the model's shape, what the choice is for, and the
environment variables that change kernel dispatch. One (model, device, purpose) has one choice in every
process: the probe runs under fixed :data:`MEASUREMENT_POLICY` conditions (one thread, TF32 on CUDA, the
library defaults for the rest), whatever the process has set (the trainer turns TF32 on; a workflow job
runs on one thread, an interactive command on all), so a vector cache written under ``auto`` is read under
``auto`` by every reader. The probe keeps the global RNG state and those settings as it found them, so
results do not depend on whether the cache was warm. A candidate within 5%
of the fastest wins if it comes first in the device's order of preference (CPU: the exact fp32
paths first; CUDA: bf16, which needs no loss scaling).

What overrides the measurement, strongest first: an explicit ``dtype``/``engine`` (command line or
config), then ``$CONSERT_DTYPE``/``$CONSERT_ENGINE``. This module is the one place that resolves
``auto``: :func:`inference_precision` and :func:`training_precision`; everything downstream receives
a resolved :class:`Precision`.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from consert.hardware import cuda_card_paths, hardware_summary
from consert.io import cache_dir

#: What a config or command line may ask for.
DTYPE_CHOICES = ("auto", "fp32", "bf16", "fp16")
#: What ``auto`` resolves to, and what results record.
RESOLVED_DTYPES = ("fp32", "bf16", "fp16")
ENGINES = ("auto", "torch", "onnxruntime")
TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
#: Environment overrides of ``auto`` (an explicit argument still wins).
DTYPE_ENV, ENGINE_ENV = "CONSERT_DTYPE", "CONSERT_ENGINE"
#: The cache key's name of the graphed training probe; a new name when what it replays changes (the linear layers
#: cast once a step in bf16), so that no measurement of the old step is reused.
GRAPHED_PROBE = "cuda graphs, cast once"
#: Environment variables that change which kernels run, hence part of the cache key.
DISPATCH_ENV = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")
#: A candidate this close to the fastest wins if it comes first in the order of preference.
TIE = 0.05
#: The conditions every probe runs under, whatever the process has set; part of the cache key. fp32 on CUDA
#: means TF32 matmuls in every process (:func:`configure_cuda_matmul`: the trainer and the encoder set it).
MEASUREMENT_POLICY = "probe: 1 thread; fp32 matmuls TF32 on CUDA, full fp32 on CPU; cuDNN benchmark off"
PURPOSES = ("inference", "training")


@dataclass(frozen=True)
class Precision:
    """A resolved precision: ``dtype`` (fp32/bf16/fp16), ``engine`` (torch/onnxruntime), how it was chosen
    (``requested``, ``environment``, ``measured``, ``measured (cached)``) and the probe's seconds per candidate."""

    dtype: str
    engine: str = "torch"
    how: str = "requested"
    timings: dict[str, float] = field(default_factory=dict)
    #: how the candidates ran when they were timed, where not all alike (``fp16 eager, fp32 as CUDA graphs``)
    probed_as: str = ""

    def __post_init__(self):
        if self.dtype not in RESOLVED_DTYPES or self.engine not in ENGINES[1:]:
            raise ValueError(f"not a resolved precision: dtype {self.dtype!r}, engine {self.engine!r}")

    @property
    def label(self) -> str:
        return f"{self.dtype}/{self.engine}"

    def describe(self) -> str:
        """One line for provenance: ``bf16/torch (measured: bf16/torch 0.21 s, fp32/onnxruntime 0.52 s)``."""
        if not self.timings:
            return f"{self.label} ({self.how})"
        figures = ", ".join(f"{label} {seconds:.3g} s" for label, seconds in self.timings.items())
        return f"{self.label} ({self.how}{f' as {self.probed_as}' if self.probed_as else ''}: {figures})"


def _candidates(device: str, purpose: str) -> list[tuple[str, str]]:
    """(dtype, engine) candidates in the device's order of preference."""
    if torch.device(device).type == "cuda":  # the card's own: no bf16 where it only emulates it
        return [(dtype, "torch") for dtype in cuda_card_paths(device).dtypes]
    from consert.encode.ort_engine import onnxruntime_available

    found = [("fp32", "onnxruntime")] if purpose == "inference" and onnxruntime_available() else []
    return [*found, ("fp32", "torch"), ("bf16", "torch")]


def _requested(value: str, choices: tuple[str, ...], env: str, what: str) -> tuple[str, str]:
    """(the value asked for, where it came from): the argument, else the environment, else ``auto``."""
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; expected one of {choices}")
    if value != "auto":
        return value, "requested"
    from_env = os.environ.get(env, "").strip()
    if from_env:
        if from_env not in choices:
            raise ValueError(f"${env}={from_env!r}: expected one of {choices}")
        return from_env, "environment"
    return "auto", ""


def _choose(
    dtype: str,
    engine: str,
    device: str,
    purpose: str,
    model: torch.nn.Module,
    probe: Callable | None = None,
    exclude: tuple[str, ...] = (),
    variant: str = "",
) -> Precision:
    """The requested precision, or under ``auto`` the fastest measured candidate (less ``exclude``);
    ``variant`` names a probe other than the default one in the cache key."""
    dtype, dtype_from = _requested(dtype, DTYPE_CHOICES, DTYPE_ENV, "dtype")
    engine, engine_from = _requested(engine, ENGINES, ENGINE_ENV, "engine")
    kind = torch.device(device).type
    if dtype == "fp16" and kind != "cuda":
        raise ValueError("dtype fp16 is for CUDA devices only; use auto, fp32 or bf16 on a CPU")
    if engine == "onnxruntime" and (kind != "cpu" or purpose == "training"):
        raise ValueError("the onnxruntime engine serves inference on a CPU only")
    candidates = [
        (d, e)
        for d, e in _candidates(device, purpose)
        if (dtype == "auto" and d not in exclude or d == dtype) and (engine == "auto" or e == engine)
    ]
    if not candidates:
        offered = ", ".join(f"{d}/{e}" for d, e in _candidates(device, purpose))
        raise ValueError(
            f"dtype {dtype} with engine {engine} cannot run {purpose} on {kind} (the choices here: {offered}; "
            "onnxruntime serves fp32 only, bf16 needs a GPU or CPU that supports it)"
        )
    if len(candidates) == 1:  # how names the precision's provenance: `auto` with one candidate left is not requested
        return Precision(*candidates[0], how=dtype_from or "only candidate")
    return _measured(candidates, device, purpose, model, probe or _probe, variant)


#: The cache key's name of the probe before Ampere: fp16 (its gradient scaler reads the host) timed eagerly, fp32 as
#: CUDA graphs; the faster wins, and fp16 then runs without graphs.
EAGER_FP16_PROBE = "fp16 eager, fp32 as cuda graphs"


# ---- the measurement and its cache -------------------------------------------------------------------


def cache_path() -> Path:
    """``precision.json`` in the harness's cache folder (:func:`consert.io.cache_dir`)."""
    return cache_dir() / "precision.json"


def cache_key(
    device: str, purpose: str, model: torch.nn.Module, candidates: list[tuple[str, str]], variant: str = ""
) -> str:
    """What the fastest candidate depends on: hardware, library versions, model shape, dispatch, and how the
    work runs (``variant``: e.g. ``cuda graphs``); never a setting of the process (threads, TF32), which the
    probe fixes (:func:`measurement_conditions`)."""
    config = getattr(model, "config", None)
    shape = "x".join(
        str(getattr(config, name, "?"))
        for name in ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size")
    )
    try:
        from importlib.metadata import version

        ort = version("onnxruntime")
    except Exception:  # noqa: BLE001 - not installed
        ort = "absent"
    dispatch = ",".join(f"{name}={os.environ[name]}" for name in DISPATCH_ENV if os.environ.get(name))
    parts = [
        hardware_summary(device, with_threads=False),
        MEASUREMENT_POLICY,
        f"torch={torch.__version__}",
        f"onnxruntime={ort}",
        f"model={type(model).__name__}:{shape}",
        f"{purpose} ({variant})" if variant else purpose,
        "candidates=" + ",".join(f"{d}/{e}" for d, e in candidates),
        dispatch,
    ]
    return " | ".join(part for part in parts if part)


def _kernel_knobs() -> list[tuple[object, str, object, object]]:
    """The process-level settings that change which kernels run, as ``(namespace, attribute, policy on a CPU,
    policy on CUDA)``: the per-backend fp32 precisions where this torch has them (2.9 and newer), else the
    TF32 switches; cuDNN's benchmark mode."""
    backends = torch.backends
    if hasattr(backends.cuda.matmul, "fp32_precision"):
        knobs = [
            (backends.cuda.matmul, "fp32_precision", "ieee", "tf32"),
            (backends.cudnn.conv, "fp32_precision", "tf32", "tf32"),
            (backends.cudnn.rnn, "fp32_precision", "tf32", "tf32"),
            (backends.mkldnn.matmul, "fp32_precision", "ieee", "ieee"),
            (backends.mkldnn.conv, "fp32_precision", "ieee", "ieee"),
        ]
    else:
        knobs = [(backends.cuda.matmul, "allow_tf32", False, True), (backends.cudnn, "allow_tf32", True, True)]
    return [*knobs, (backends.cudnn, "benchmark", False, False)]


def kernel_settings() -> tuple:
    """This process's values of the settings :func:`measurement_conditions` fixes (threads, fp32 precisions,
    cuDNN benchmark, deterministic algorithms)."""
    knobs = tuple(getattr(namespace, name) for namespace, name, _, _ in _kernel_knobs())
    return (torch.get_num_threads(), *knobs, torch.are_deterministic_algorithms_enabled())


@contextlib.contextmanager
def measurement_conditions(device: str) -> Iterator[None]:
    """Run the probe under :data:`MEASUREMENT_POLICY`, then give the process its own settings back."""
    cuda = torch.device(device).type == "cuda"
    knobs = _kernel_knobs()
    saved = [getattr(namespace, name) for namespace, name, _, _ in knobs]
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    try:
        torch.set_num_threads(1)
        torch.use_deterministic_algorithms(False)
        for namespace, name, on_cpu, on_cuda in knobs:
            setattr(namespace, name, on_cuda if cuda else on_cpu)
        yield
    finally:
        for (namespace, name, _, _), value in zip(knobs, saved, strict=True):
            setattr(namespace, name, value)
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock beside ``path`` (parallel jobs of one DAG probe once, not at once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read_cache(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def _measured(
    candidates, device: str, purpose: str, model: torch.nn.Module, probe: Callable, variant: str = ""
) -> Precision:
    path, key = cache_path(), cache_key(device, purpose, model, candidates, variant)
    with _locked(path):
        cached = _read_cache(path).get(key)
        if cached:
            return Precision(cached["dtype"], cached["engine"], "measured (cached)", cached["timings"])
        cuda = torch.device(device).type == "cuda"
        with torch.random.fork_rng(devices=[torch.device(device).index or 0] if cuda else []):
            with measurement_conditions(device):
                timings = probe(candidates, device, purpose, model)
        dtype, engine = fastest(timings, candidates)
        labels = {f"{d}/{e}": timings[(d, e)] for d, e in candidates if (d, e) in timings}
        entries = _read_cache(path)
        entries[key] = {"dtype": dtype, "engine": engine, "timings": labels, "measured": time.strftime("%Y-%m-%d")}
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(entries, indent=1, sort_keys=True), encoding="utf-8")
        temporary.replace(path)
    return Precision(dtype, engine, "measured", labels)


def fastest(timings: dict[tuple[str, str], float], candidates: list[tuple[str, str]]) -> tuple[str, str]:
    """The fastest candidate, or an earlier one (in order of preference) within :data:`TIE` of it."""
    best = min(timings.values())
    return next(c for c in candidates if c in timings and timings[c] <= best * (1 + TIE))


#: A candidate this many times slower than the fastest is not timed again.
SLOWER = 4

#: The probe's workload, (sentences, tokens) by device type and purpose: the shapes the work has. A GPU
#: probed on a CPU-sized batch picks fp32 (bf16's casts cost more than its arithmetic saves there), so
#: on CUDA the training probe is a paper-scale step (96 sentences x 2 views, 48 tokens) and the
#: inference probe an evaluation batch.
PROBE_SHAPES = {
    ("cpu", "inference"): (64, 32),
    ("cpu", "training"): (32, 32),
    ("cuda", "inference"): (512, 32),
    ("cuda", "training"): (192, 48),
}


def _probe(
    candidates, device: str, purpose: str, model: torch.nn.Module, runner: Callable | None = None
) -> dict[tuple[str, str], float]:
    """Median seconds of each candidate on a fixed batch, candidates alternated round by round; a
    candidate more than :data:`SLOWER` times slower than the best after the first round is not timed again.
    On a CPU a candidate whose warm-up alone takes that much longer than an earlier one's is not timed at
    all (its warm-up is its timing): emulated bf16 (no bf16 units) costs seconds a pass, and the earlier
    candidates' warm-ups, one-time costs included, only raise the bar. On CUDA every candidate is timed:
    a first call there can cost many steps (library handles, kernel selection). ``runner`` (default
    :func:`_runner`, the eager pass) builds each candidate's timed call from
    ``(candidate, device, purpose, model, ids, mask)``, the ids and mask on the host."""
    runner = runner or _runner
    batch, length = PROBE_SHAPES[(torch.device(device).type, purpose)]
    vocab = int(getattr(getattr(model, "config", None), "vocab_size", 30522))
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(min(1000, vocab // 2), vocab, (batch, length), generator=generator)  # past the specials
    mask = torch.ones_like(ids)
    was_training = model.training
    runners = {c: runner(c, device, purpose, model, ids, mask) for c in candidates}
    cuda = torch.device(device).type == "cuda"
    rounds = 7 if cuda else 3
    seconds: dict[tuple[str, str], list[float]] = {c: [] for c in candidates}
    warm_up: dict[tuple[str, str], float] = {}
    try:
        for candidate, run in list(runners.items()):  # warm-up (allocations, the ONNX export, cuBLAS handles)
            start = time.perf_counter()
            run()
            warm_up[candidate] = time.perf_counter() - start
            if not cuda and warm_up[candidate] > SLOWER * min(warm_up.values()):
                seconds[candidate] = [warm_up[candidate]]
                del runners[candidate]
        for round_index in range(rounds):
            for candidate, run in runners.items():
                if round_index and seconds[candidate][0] > SLOWER * min(s[0] for s in seconds.values() if s):
                    continue
                if cuda:
                    torch.cuda.synchronize(device)
                start = time.perf_counter()
                run()
                if cuda:
                    torch.cuda.synchronize(device)
                seconds[candidate].append(time.perf_counter() - start)
    finally:
        model.train(was_training)
        if purpose == "training":
            model.zero_grad(set_to_none=True)
    return {c: statistics.median(s) for c, s in seconds.items()}


def _runner(candidate, device: str, purpose: str, model: torch.nn.Module, ids, mask) -> Callable[[], None]:
    dtype, engine = candidate
    ids, mask = ids.to(device), mask.to(device)
    if engine == "onnxruntime":
        from consert.encode.ort_engine import OrtEncoderSession

        session = OrtEncoderSession(model)
        return lambda: session.run(ids, mask, all_hidden_states=False)

    def run() -> None:
        context = torch.inference_mode() if purpose == "inference" else contextlib.nullcontext()
        model.train(purpose == "training")
        with context, autocast(device, dtype):
            out = model(input_ids=ids, attention_mask=mask).last_hidden_state
            if purpose == "training":
                out.float().mean().backward()
        if purpose == "training" and dtype == "fp16":  # the gradient scaler's check, read on the host every step
            gradients = [p.grad.norm() for p in model.parameters() if p.grad is not None]
            bool(torch.stack(gradients).isfinite().all()) if gradients else None

    return run


# ---- the public choices -------------------------------------------------------------------------------


def inference_precision(dtype: str, engine: str, device: str, model: torch.nn.Module) -> Precision:
    """The precision and engine to encode with on ``device`` for ``dtype``/``engine`` (``auto``: measured)."""
    return _choose(dtype, engine, device, "inference", model)


def training_precision(
    dtype: str, device: str, model: torch.nn.Module, graphed_runner: Callable | None = None
) -> Precision:
    """The precision to train with on ``device`` (``auto``: measured; the engine is always PyTorch).

    ``graphed_runner``: the step will run as CUDA graphs (:mod:`consert.train.graphs`), so ``auto`` measures
    only what a graph can take (bf16, fp32: fp16's gradient scaler reads the host every step), each
    timed by this runner (see :func:`_probe`), a replayed step: the eager probe is bound by launching
    kernels, where a cast costs as much as a matmul, and picked fp32 for a step that graphs run 1.4x
    faster in bf16 (H100). Before Ampere (a V100, a T4: fp16 tensor cores, no bf16) fp16 is timed eagerly, with
    its scaler, against fp32 as graphs (:data:`EAGER_FP16_PROBE`): the faster wins, and fp16 runs without graphs."""
    if graphed_runner is None:
        return _choose(dtype, "torch", device, "training", model)
    if torch.device(device).type == "cuda" and "bf16" not in cuda_card_paths(device).dtypes:
        # before Ampere (fp16 tensor cores, no bf16): fp16 measured eagerly, with its scaler, against graphed fp32
        runners = {"fp16": _runner, "fp32": graphed_runner}
        probe = functools.partial(_probe, runner=lambda candidate, *args: runners[candidate[0]](candidate, *args))
        chosen = _choose(dtype, "torch", device, "training", model, probe, variant=EAGER_FP16_PROBE)
        return replace(chosen, probed_as=EAGER_FP16_PROBE) if chosen.how.startswith("measured") else chosen
    probe = functools.partial(_probe, runner=graphed_runner)
    return _choose(dtype, "torch", device, "training", model, probe, exclude=("fp16",), variant=GRAPHED_PROBE)


def autocast(device: str, dtype: str, cache: bool = True):
    """Autocast to a resolved ``dtype`` (bf16, or fp16 on CUDA); fp32: a no-op. ``cache=False`` for a
    region captured as a CUDA graph (autocast's cast cache must not outlive the capture)."""
    if dtype not in RESOLVED_DTYPES:
        raise ValueError(f"autocast needs a resolved dtype ({RESOLVED_DTYPES}), got {dtype!r}")
    if dtype == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=TORCH_DTYPES[dtype], cache_enabled=cache)


def configure_cuda_matmul() -> None:
    """Let fp32 matmuls and convolutions use TF32 tensor cores on CUDA (Ampere and newer), as the precision
    probe measures them (:data:`MEASUREMENT_POLICY`). Through the switches every torch reads alike: setting only
    the per-backend ``fp32_precision`` (torch 2.9 and newer) leaves ``torch.get_float32_matmul_precision()``, which
    ``torch.compile`` reads, raising on a mix of the two interfaces."""
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
