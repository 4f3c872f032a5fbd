"""Atomic file output: a result either exists completely or not at all."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only if the block succeeds."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(handle)
    try:
        yield Path(temporary)
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def write_csv(frame: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write ``frame`` to ``path`` as CSV atomically; return the path.

    An evaluation frame with bootstrap replicates (:func:`consert.bootstrap.replicate_arrays`) also
    gets them beside it, in ``<path>.replicates.npz`` (for paired comparisons of two rows later).
    """
    import numpy as np

    from .bootstrap import REPLICATES_SUFFIX, replicate_arrays

    arrays = replicate_arrays(frame)
    if arrays:
        with atomic_path(str(path) + REPLICATES_SUFFIX) as temporary, open(temporary, "wb") as handle:
            np.savez_compressed(handle, **arrays)
    with atomic_path(path) as temporary:
        frame.to_csv(temporary, index=False, float_format="%.4f")
    return Path(path)
