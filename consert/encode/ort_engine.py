"""An ONNX Runtime forward pass for fp32 inference on CPUs.

Where ``auto``'s probe measures fp32 faster than bf16 (typically a CPU without native bf16), the
evaluation runs in fp32, and there ONNX Runtime's kernels (fused attention, LayerNorm and GELU, its own
GEMMs) encode the 7 STS sets about 1.7x faster than PyTorch's eager fp32 path (MiniLM, 2 threads on an
AMD EPYC with AVX-512: 33-37 s against 60 s), with hidden states within 1e-4 and every set-level
Spearman within 0.004 (that AMD EPYC) or 0.006 (an Intel Xeon with AMX) of PyTorch fp32 (tests check
1e-4 and 0.03, the comparison's precision allowance). The Hugging Face model is exported in memory (the
TorchScript-based exporter, a few seconds) with every hidden state as an output, so each pooling and
the top-k statistics read the layers they need exactly as from PyTorch.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import torch


def onnxruntime_available() -> bool:
    """True when ``onnxruntime`` imports (it is a dependency; a broken install falls back to PyTorch)."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


class _AllHiddenStates(torch.nn.Module):
    """The encoder with every hidden state (embedding output first) as its outputs."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(
            self.model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True).hidden_states
        )


class OrtEncoderSession:
    """ONNX Runtime session over an fp32 CPU encoder; ``run`` returns hidden states like the PyTorch model.

    Args:
        model: a Hugging Face encoder (``AutoModel``), fp32, on the CPU; it is exported in eval mode.
        threads: intra-op threads (default: PyTorch's thread count, which follows ``OMP_NUM_THREADS``).
    """

    def __init__(self, model: torch.nn.Module, threads: int | None = None):
        import onnxruntime as ort

        if next(model.parameters()).dtype != torch.float32 or next(model.parameters()).device.type != "cpu":
            raise ValueError("the ONNX Runtime engine serves fp32 models on the CPU only")
        layers = model.config.num_hidden_layers + 1
        self.output_names = [f"hidden_{i}" for i in range(layers)]
        was_training = model.training
        model.eval()
        # padded example, so that the traced graph keeps the attention mask's arithmetic
        ids = torch.full((2, 8), 101, dtype=torch.long)
        mask = torch.ones(2, 8, dtype=torch.long)
        mask[1, 5:] = 0
        buffer = io.BytesIO()
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    _AllHiddenStates(model),
                    (ids, mask),
                    buffer,
                    input_names=["input_ids", "attention_mask"],
                    output_names=self.output_names,
                    dynamic_axes={
                        "input_ids": {0: "batch", 1: "length"},
                        "attention_mask": {0: "batch", 1: "length"},
                        **{name: {0: "batch", 1: "length"} for name in self.output_names},
                    },
                    opset_version=17,
                    dynamo=False,
                )
        finally:
            model.train(was_training)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # no busy-waiting between runs: spinning workers took the cores from the PyTorch work that follows
        # (and from the precision probe's other candidates: PyTorch timed 3x slower beside them, 2 threads)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(buffer.getvalue(), options, providers=["CPUExecutionProvider"])

    def run(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, all_hidden_states: bool = True):
        """Hidden states (all of them, or only the last) as CPU tensors, each B x L x d."""
        names = self.output_names if all_hidden_states else self.output_names[-1:]
        feeds = {
            "input_ids": input_ids.numpy().astype(np.int64, copy=False),
            "attention_mask": attention_mask.numpy().astype(np.int64, copy=False),
        }
        return tuple(torch.from_numpy(array) for array in self.session.run(names, feeds))
