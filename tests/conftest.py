"""Shared fixtures: the real SentEval data beside the project and tiny generated SentEval trees."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.fixtures import write_senteval_tree

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
REAL_DATA = Path(os.environ.get("CONSERT_DATA", SHARED / "data" / "senteval"))
#: The papers' texts: ../shared/papers, else beside the data directory ($CONSERT_DATA = <shared>/data/senteval)
PAPERS = SHARED / "papers" if (SHARED / "papers").is_dir() else REAL_DATA.parents[1] / "papers"
PUBLISHED = ROOT / "results" / "published"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# generated fixture trees are not SentEval's files: allow them (tests of the check unset this)
os.environ.setdefault("CONSERT_ALLOW_UNVERIFIED_DATA", "1")
# the measured precision choices of this session go to a fresh folder (the probe runs for real once per
# model shape, and the suite leaves the user's ~/.cache/consert alone)
os.environ.setdefault("CONSERT_CACHE_DIR", tempfile.mkdtemp(prefix="consert-precision-"))


@pytest.fixture(scope="session")
def real_data_dir() -> Path:
    """The real STS data (../shared/data/senteval or $CONSERT_DATA); these tests need it."""
    if not (REAL_DATA / "downstream" / "STS").is_dir() and not (REAL_DATA / "STS").is_dir():
        pytest.fail(f"real SentEval data not found at {REAL_DATA}; set CONSERT_DATA")
    return REAL_DATA


@pytest.fixture(scope="session")
def real_data(real_data_dir):
    from consert.data.senteval import load_senteval

    return load_senteval(real_data_dir)


@pytest.fixture()
def tiny_tree(tmp_path) -> Path:
    """A complete, tiny SentEval tree written fresh for each test."""
    return write_senteval_tree(tmp_path / "senteval")


@pytest.fixture(scope="session")
def encoder():
    """The stand-in in fp32 PyTorch: vectors of different batch compositions agree to float rounding (bf16 only
    to its own)."""
    from consert.encode.encoder import SentenceEncoder
    from consert.encode.models import STAND_IN_MODEL

    return SentenceEncoder.load(STAND_IN_MODEL, device="cpu", dtype="fp32", engine="torch")
