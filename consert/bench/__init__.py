"""Benchmarks, each measured against its reference in the same run: :mod:`.cpu` (evaluation and a
training step against sentence-transformers), :mod:`.cuda` (the paper-scale trainer on a GPU) and
:mod:`.paper_cost` (what a workflow config's DAG costs, job kind by job kind)."""

#: The executions ``--compare`` times each ConSERT-trainer kind in besides its own (``auto``): the trainer's step
#: without CUDA graphs or compilation, and with its training forward compiled (CUDA only: no graphs).
COMPARED_EXECUTIONS: dict[str, dict[str, str]] = {
    "eager": {"cuda_graphs": "off", "compile": "off"},
    "compiled": {"cuda_graphs": "off", "compile": "on"},
}
