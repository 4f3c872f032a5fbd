"""The baselines' registry: every record builds an embedder of its declared class, and what it declares (an
encoder, what it is fitted on, BERT-flow's passes over the year sets) is what building and fitting do."""

from __future__ import annotations

import subprocess
import sys
import zlib
from types import SimpleNamespace

import numpy as np
import pytest

from baselines import BASELINE_SPECS, BASELINES, baseline_spec
from baselines.base import SentenceEmbedder
from baselines.flow_settings import FlowSettings
from baselines.glove import GloveSettings
from baselines.run import EVERY_TASK, build_baseline, fit_corpora
from baselines.whitening import WhiteningSettings
from tests.conftest import ROOT

#: Pooled vectors of the fake encoder: 8 dimensions (a two-level flow halves them once).
DIM = 8
#: A flow small enough for 40 texts: 10 steps of 4.
TINY_FLOW = FlowSettings(levels=2, depth=1, width=8, batch_size=4, encoder_dropout=False)
TEXTS = [f"a man plays guitar {i}" for i in range(20)] + [f"the cat sleeps {i}" for i in range(20)]


class _FakeEncoder:
    """A :class:`~consert.encode.encoder.SentenceEncoder` stand-in: hash vectors, no model to load."""

    model = SimpleNamespace(config=SimpleNamespace(hidden_size=DIM))
    resolved, max_length, dtype, engine, device = None, 32, "fp32", "fake", "cpu"
    precision = SimpleNamespace(describe=lambda: "fp32")

    def encode(self, sentences, pooling, progress=True, dropout=False):
        return np.stack([np.random.default_rng(zlib.crc32(s.encode())).normal(size=DIM) for s in sentences])


@pytest.fixture()
def glove_file(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text("man 1 0 0\nguitar 0 2 0\ncat 0 0 4\n")
    return path


#: What each baseline's own settings show in its provenance, as ``build_baseline`` is given them below.
SHOWN = {"whitening": {"whitening_k": 4}, "flow": {"flow_levels": 2, "flow_depth": 1}, "glove": {"model": "glove.txt"}}


@pytest.mark.parametrize("name", BASELINES)
def test_every_record_builds_an_embedder_of_its_class_that_fits_and_encodes(name, glove_file):
    spec = BASELINE_SPECS[name]
    settings = {"whitening": WhiteningSettings(k=4), "flow": TINY_FLOW, "glove": GloveSettings(path=str(glove_file))}
    embedder = build_baseline(name, _FakeEncoder(), pooling="mean", progress=False, settings=settings.get(name))
    assert type(embedder) is spec.resolve() and isinstance(embedder, SentenceEmbedder)
    assert (getattr(embedder, "vectors", None) is not None) == spec.needs_encoder  # glove's are word vectors
    vectors = embedder.fit(TEXTS).encode(["a man plays guitar 3", "the cat sleeps 5", "nothing known"])
    assert len(vectors) == 3 and np.isfinite(vectors).all()
    described = embedder.describe()
    shown = {key: described[key] if key != "model" else described[key].split("/")[-1] for key in SHOWN.get(name, {})}
    assert shown == SHOWN.get(name, {}), "a setting the record says it reads did not reach the embedder"


def test_records_are_consistent():
    assert set(SHOWN) == {name for name, spec in BASELINE_SPECS.items() if spec.settings}
    for name, spec in BASELINE_SPECS.items():
        assert spec.name == name, name
        assert set(spec.fit_on) <= {"task", "sts", "nli"} and spec.year_passes >= 1, name
        assert callable(getattr(spec.resolve(), "build", None)), name
    assert {name: spec.resolve().__name__ for name, spec in BASELINE_SPECS.items()} == {
        "pooling": "PoolingBaseline",
        "whitening": "WhiteningBaseline",
        "flow": "FlowBaseline",
        "glove": "GloveBaseline",
    }
    # BERT-flow fits STS12-16's full.txt as train, dev and test; every other baseline sees each text once
    assert {name: spec.year_passes for name, spec in BASELINE_SPECS.items()} == {
        "pooling": 1,
        "whitening": 1,
        "flow": 3,
        "glove": 1,
    }


def test_an_unknown_baseline_fails_in_one_line_and_an_encoder_is_required_where_declared():
    with pytest.raises(ValueError) as raised:
        build_baseline("sgopt")
    assert str(raised.value) == (
        "unknown baseline 'sgopt'; choose from ('pooling', 'whitening', 'flow', 'glove') "
        "(SG-OPT trains: `consert sgopt`)"
    )
    with pytest.raises(ValueError, match="^unknown baseline 'nope'"):
        baseline_spec("nope")
    for name in (name for name, spec in BASELINE_SPECS.items() if spec.needs_encoder):
        with pytest.raises(ValueError, match=f"^baseline '{name}' needs an encoder$"):
            build_baseline(name)


def test_fit_corpora_follow_the_records(tiny_tree):
    from consert.data.senteval import load_senteval

    data = load_senteval(tiny_tree)
    for name, spec in BASELINE_SPECS.items():
        corpora = fit_corpora(name, data)
        if not spec.fit_on:
            assert corpora == {}, name
            continue
        assert corpora == fit_corpora(name, data, spec.fit_on[0]), name  # the first is the default
        if "task" in spec.fit_on:
            per_task = fit_corpora(name, data, "task")
            assert len(per_task["STS12"]) == spec.year_passes * len(data.sets["STS12"].scored_texts()), name
            assert per_task["STSb"] == data.sets["STSb"].scored_texts(), name
        if "sts" in spec.fit_on:
            assert fit_corpora(name, data, "sts") == {EVERY_TASK: data.unlabeled_texts()}, name
        outside = next(corpus for corpus in ("task", "sts", "nli") if corpus not in spec.fit_on)
        with pytest.raises(ValueError, match=f"^{name}: fit_on must be one of"):
            fit_corpora(name, data, outside)


def test_importing_the_registry_and_the_settings_classes_imports_no_torch():
    """``consert baseline`` offers ``BASELINES`` at startup and the workflow checks each settings block at its start:
    the records name their classes, they do not import them, and a settings class's module imports no torch."""
    code = (
        "import sys, baselines; baselines.baseline_spec('flow'); assert 'torch' not in sys.modules, 'torch'; "
        "[spec.settings_class() for spec in baselines.BASELINE_SPECS.values()]; assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_settings_reach_only_the_baseline_whose_class_they_are():
    """A record's own settings are an instance of its settings class; another class's, or any for a baseline
    without one, is refused in one line (a flow's settings handed to whitening would be silently ignored)."""
    assert BASELINE_SPECS["flow"].settings_class() is FlowSettings
    assert BASELINE_SPECS["pooling"].settings_class() is None
    with pytest.raises(ValueError, match="^baseline 'pooling' takes no settings, got FlowSettings$"):
        build_baseline("pooling", _FakeEncoder(), settings=TINY_FLOW)
    embedder = build_baseline("flow", _FakeEncoder(), progress=False)
    assert embedder.settings == FlowSettings()  # none given: its class's defaults, the authors'


def test_a_baseline_of_a_table_is_declared_with_its_label_and_reads_the_encoders_vectors():
    """The workflow's ``eval_baseline`` rule reads a model's vector cache and names its row by the record's label: a
    record of a table without either is refused when it is declared."""
    from baselines import BaselineSpec

    with pytest.raises(ValueError, match="^baseline 'x': a table's baseline has a label and reads the encoder's"):
        BaselineSpec("x", "baselines.pooling:PoolingBaseline", table="table2")
    with pytest.raises(ValueError, match="^baseline 'x': a table's baseline has a label"):
        BaselineSpec("x", "baselines.glove:GloveBaseline", needs_encoder=False, table="table2", label="X")
    # the workflow's eval_baseline passes no NLI files: a per-default NLI fit would silently fit on SICK-E
    with pytest.raises(ValueError, match="^baseline 'x': a table's baseline is fitted on a task's pairs or the STS"):
        BaselineSpec("x", "baselines.whitening:WhiteningBaseline", fit_on=("nli", "task"), table="table2", label="X")
