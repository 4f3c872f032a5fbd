"""Files of results: atomic output (a result exists completely or not at all), the bootstrap replicates
kept beside an evaluation CSV, and the harness's cache folder."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only if the block succeeds. The file
    gets the permissions an ordinary file gets under the user's umask (``mkstemp`` makes it 0600)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.fchmod(handle, 0o666 & ~current_umask())
    os.close(handle)
    try:
        yield Path(temporary)
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


#: The variable that moves the harness's cache folder (:func:`cache_dir`).
CACHE_ENV = "CONSERT_CACHE_DIR"


def cache_dir() -> Path:
    """The harness's cache folder, kept across runs (the precision measurements, the compiled kernels):
    ``$CONSERT_CACHE_DIR``, else ``$XDG_CACHE_HOME/consert``, else ``~/.cache/consert``."""
    base = os.environ.get(CACHE_ENV) or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "consert"
    return Path(base)


def current_umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_csv(frame: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write ``frame`` to ``path`` as CSV atomically; return the path.

    An evaluation frame with bootstrap replicates (:func:`replicate_arrays`) also
    gets them beside it, in ``<path>.replicates.npz`` (for paired comparisons of two rows later).
    """
    arrays = replicate_arrays(frame)
    if arrays:
        with atomic_path(str(path) + REPLICATES_SUFFIX) as temporary, open(temporary, "wb") as handle:
            np.savez_compressed(handle, **arrays)
    with atomic_path(path) as temporary:
        frame.to_csv(temporary, index=False, float_format="%.4f")
    return Path(path)


def write_text(text: str, path: str | os.PathLike) -> Path:
    """Write ``text`` to ``path`` (UTF-8) atomically; return the path."""
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return Path(path)


#: Suffix of the file that keeps an evaluation CSV's bootstrap replicates beside it.
REPLICATES_SUFFIX = ".replicates.npz"


def text_column(frame: pd.DataFrame, column: str) -> pd.Series:
    """A text column of a results frame as ``str``, ``""`` where a row has no value or the frame no such column.
    pandas reads a CSV column with no value at all as float64 NaN, and filling float64 with ``""`` is deprecated
    (it will raise), so the column goes through ``object`` first."""
    if column not in frame:
        return pd.Series("", index=frame.index, dtype=object)
    return frame[column].astype(object).fillna("").astype(str)


def replicate_arrays(frame) -> dict[str, np.ndarray]:
    """``{"pooling|dataset|aggregate": B replicates}`` of an evaluation frame (empty without bootstrap).

    A frame of one pooling keeps ``attrs["replicates"]`` (``{dataset: {aggregate: B}}``, from
    :func:`consert.evaluate.protocol.evaluate_task_vectors`); one of several keeps ``attrs["replicates_by_pooling"]``.
    """
    by_pooling = frame.attrs.get("replicates_by_pooling")
    if by_pooling is None and frame.attrs.get("replicates"):
        pooling = str(frame["pooling"].iloc[0]) if "pooling" in frame.columns and len(frame) else ""
        by_pooling = {pooling: frame.attrs["replicates"]}
    return {
        f"{pooling}|{dataset}|{key}": values
        for pooling, datasets in (by_pooling or {}).items()
        for dataset, aggregates in datasets.items()
        for key, values in aggregates.items()
    }


def load_replicates(csv_path, pooling: str | None = None) -> dict[tuple[str, str], np.ndarray]:
    """``{(dataset, aggregate): B replicates}`` kept beside an evaluation CSV (of ``pooling``, or its only one);
    empty when the file is missing."""
    path = Path(str(csv_path) + REPLICATES_SUFFIX)
    if not path.is_file():
        return {}
    with np.load(path) as stored:
        keys = [key.split("|") for key in stored.files]
        poolings = sorted({p for p, _, _ in keys})
        chosen = pooling if pooling is not None else (poolings[0] if len(poolings) == 1 else None)
        return {(d, a): stored[f"{p}|{d}|{a}"] for p, d, a in keys if p == chosen}
