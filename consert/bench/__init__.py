"""Benchmarks, each measured against its reference in the same run: :mod:`.cpu` (evaluation and a
training step against sentence-transformers) and :mod:`.cuda` (the paper-scale trainer on a GPU)."""
