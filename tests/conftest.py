"""Shared fixtures: the real SentEval data beside the project and tiny generated SentEval trees."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# CI's deadline for slow tests, and a skipped test failing the run under CONSERT_CI_NO_SKIPS=1 (.ci/run sets both)
from tests.ci_skips import (  # noqa: F401 (hooks: pytest finds them here)
    pytest_runtest_logreport,
    pytest_runtest_setup,
    pytest_sessionfinish,
    pytest_terminal_summary,
)
from tests.fixtures import write_senteval_tree

#: The checkout's results, figures, runs and logs are the user's: a test that changes them fails the session.
pytest_plugins = ["tests.checkout_guard"]

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
if "CONSERT_CACHE_DIR" not in os.environ:  # removed when the session ends: the suite leaves nothing in /tmp
    os.environ["CONSERT_CACHE_DIR"] = tempfile.mkdtemp(prefix="consert-precision-")
    atexit.register(shutil.rmtree, os.environ["CONSERT_CACHE_DIR"], ignore_errors=True)


#: The end-to-end runs first, in this order (the paper rehearsed, the DAG resumed, on SLURM, in a browser): where CI's
#: time runs short (CONSERT_CI_DEADLINE), what is left out is the cheaper checks of single commands.
SLOW_ORDER = ("tests/workflow/test_rehearsal.py", "tests/workflow/test_workflow.py")


def pytest_collection_modifyitems(config, items):
    """Slow tests in :data:`SLOW_ORDER` (the rest after them, as collected); the default suite as collected."""

    def rank(item) -> int:
        path = item.nodeid.split("::")[0]
        return SLOW_ORDER.index(path) if item.get_closest_marker("slow") and path in SLOW_ORDER else len(SLOW_ORDER)

    items.sort(key=rank)


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


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory) -> str:
    """A tiny randomly initialised BERT (2 layers, the stand-in's vocabulary) saved as a model folder."""
    from consert.bench.dag_cost import TINY_SHAPE, random_bert

    return random_bert(tmp_path_factory.mktemp("tiny-bert"), TINY_SHAPE)


@pytest.fixture(scope="session")
def encoder():
    """The stand-in in fp32 PyTorch: vectors of different batch compositions agree to float rounding (bf16 only
    to its own)."""
    from consert.encode.encoder import SentenceEncoder
    from consert.encode.models import STAND_IN_MODEL

    return SentenceEncoder.load(STAND_IN_MODEL, device="cpu", dtype="fp32", engine="torch")
