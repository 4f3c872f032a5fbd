"""Short real training runs of the stand-in encoder on the real STS texts (CPU)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from consert.encode.models import STAND_IN_MODEL
from consert.train.config import TrainConfig
from consert.train.trainer import train
from tests.fixtures import first_pairs


def short_config(tmp_path, **changes) -> TrainConfig:
    values = dict(
        output_dir=str(tmp_path / "model"),
        batch_size=16,
        max_steps=30,
        eval_every=10,
        dev_max_pairs=200,
        lr=5e-5,
        eval_at_start=False,
    )
    values.update(changes)
    if values.get("mode") in ("sup-unsup", "joint-unsup"):
        values["stage1"] = {"batch_size": 8, "max_steps": 4}
    return TrainConfig(**values)


@pytest.fixture(scope="module")
def unsup_run(real_data, tmp_path_factory):
    return train(short_config(tmp_path_factory.mktemp("unsup")), real_data, progress=False)


def test_loss_decreases_and_dev_is_logged_at_each_evaluation(unsup_run):
    losses = [entry["loss"] for entry in unsup_run.log if "loss" in entry]
    assert len(losses) == 30
    assert np.mean(losses[-10:]) < np.mean(losses[:10])
    evaluated = [entry["step"] for entry in unsup_run.log if "dev_spearman" in entry]
    assert evaluated == [10, 20, 30]


def test_best_checkpoint_is_the_highest_dev_score_and_is_what_was_exported(unsup_run, real_data):
    from consert.encode.encoder import SentenceEncoder
    from consert.evaluate.protocol import encode_and_score, spearman_x100

    scores = {e["step"]: e["dev_spearman"] for e in unsup_run.log if "dev_spearman" in e}
    assert unsup_run.best_step == max(scores, key=scores.get)
    assert unsup_run.best_dev_spearman == max(scores.values())
    # re-evaluate the exported folder from disk: it must be that best checkpoint
    dev = real_data.sets["STSb"].groups["dev"][:200]
    encoder = SentenceEncoder.load(str(unsup_run.output_dir), device="cpu")
    # selection by the dev pooling (the model's own last-layer mean, as the authors), same batching
    rescored = spearman_x100(*encode_and_score(encoder, dev, "mean"))
    assert rescored == pytest.approx(unsup_run.best_dev_spearman, abs=1e-3)


def test_export_reloads_through_sentence_transformers_with_its_evaluation_pooling(unsup_run, real_data):
    """``SentenceTransformer(folder)`` gives the vectors of the reported numbers (ConSERT's last-two-layer
    mean), not sentence-transformers' default last-layer mean."""
    from sentence_transformers import SentenceTransformer

    from consert.encode.encoder import SentenceEncoder

    sentences = real_data.unlabeled_texts()[:64]
    reloaded = SentenceTransformer(str(unsup_run.output_dir), device="cpu").encode(sentences, batch_size=16)
    in_memory = SentenceEncoder(unsup_run.tokenizer, unsup_run.model, dtype="fp32")
    np.testing.assert_allclose(reloaded, in_memory.encode(sentences, "mean:-2,-1", progress=False), atol=1e-5)
    assert not np.allclose(reloaded, in_memory.encode(sentences, "mean", progress=False), atol=1e-3)
    record = json.loads((unsup_run.output_dir / "consert_training.json").read_text())
    assert "offline stand-in" in record["setting"] and record["best_step"] == unsup_run.best_step
    assert (unsup_run.output_dir / "training_log.json").is_file()
    card = (unsup_run.output_dir / "README.md").read_text()
    assert record["base_model"] in card and record["setting"] in card and "yan-etal-2021-consert" in card
    assert "Mode: `unsup`" in card and "`mean:-2,-1`" in card and "Not evaluated yet" in card


@pytest.mark.parametrize("pooling", ["mean:1,-1", "cls", "mean"])
def test_every_pooling_exports_as_sentence_transformers_modules(real_data, tmp_path, pooling):
    """First-last average, [CLS] and last-layer mean: sentence-transformers alone encodes as the harness does."""
    from sentence_transformers import SentenceTransformer

    from consert.encode.encoder import SentenceEncoder

    config = short_config(tmp_path, eval_pooling=pooling, max_steps=1, eval_every=1, dev_max_pairs=20)
    run = train(config, real_data, progress=False)
    sentences = real_data.unlabeled_texts()[:32]
    reloaded = SentenceTransformer(str(run.output_dir), device="cpu").encode(sentences, batch_size=16)
    harness = SentenceEncoder.load(str(run.output_dir), dtype="fp32", device="cpu", engine="torch")
    np.testing.assert_allclose(reloaded, harness.encode(sentences, pooling, progress=False), atol=1e-5)


@pytest.mark.slow
def test_same_seed_gives_identical_loss_trace(real_data, tmp_path):
    runs = [
        train(short_config(tmp_path / str(i), max_steps=5, eval_every=5, dev_max_pairs=20), real_data, progress=False)
        for i in range(2)
    ]
    traces = [[e["loss"] for e in run.log if "loss" in e] for run in runs]
    assert traces[0] == traces[1]
    other = train(
        short_config(tmp_path / "2", max_steps=5, eval_every=5, dev_max_pairs=20, seed=2), real_data, progress=False
    )
    assert [e["loss"] for e in other.log if "loss" in e] != traces[0]


@pytest.mark.parametrize(
    ("mode", "views"),
    [
        ("sup", ("shuffle", "feature_cutoff")),
        ("joint", ("shuffle", "feature_cutoff")),
        ("joint", ("adversarial", "token_cutoff")),
        pytest.param("sup-unsup", ("shuffle", "feature_cutoff"), marks=pytest.mark.slow),  # two stages: 11-14 s each
        pytest.param("joint-unsup", ("dropout", "shuffle"), marks=pytest.mark.slow),
    ],
)
def test_supervised_settings_run_end_to_end_on_sick_e(real_data, tmp_path, mode, views):
    config = short_config(tmp_path, mode=mode, views=views, max_steps=3, eval_every=2, dev_max_pairs=50, batch_size=8)
    result = train(config, real_data, progress=False)
    record = json.loads((result.output_dir / "consert_training.json").read_text())
    losses = [e["loss"] for e in result.log if "loss" in e]
    assert losses and all(np.isfinite(losses))
    if mode in ("sup", "joint"):
        assert record["mode"] == mode and "sick-e" in record["nli"] and len(losses) == 3
    else:
        stage1 = json.loads((tmp_path / "model.stage1" / "consert_training.json").read_text())
        assert stage1["mode"] == mode.split("-")[0] and "offline stand-in" in stage1["nli"]
        assert record["mode"] == mode and record["started_from"].endswith("model.stage1")
        assert "offline stand-in" in record["setting"]


def test_joint_reuses_the_classifiers_clean_pass_as_its_first_view(real_data, tmp_path):
    """The authors' joint loss contrasts rep_a (the classifier's pass) with its cutoff view: 2 passes, not 3."""
    import torch

    from consert.data.nli import load_nli
    from consert.train.execution import StepExecution
    from consert.train.objectives import JointNli, objective_for
    from consert.train.trained_encoder import TrainedEncoder

    config = short_config(tmp_path, mode="joint", batch_size=4, dtype="fp32")
    assert config.views == ("none", "token_cutoff") and objective_for(config) is JointNli
    encoder = TrainedEncoder(config, real_data)
    objective = JointNli(config, encoder, StepExecution(encoder))
    rows: list[int] = []
    encoder.model.register_forward_pre_hook(
        lambda _m, _a, kwargs: rows.append(len(kwargs["input_ids"])), with_kwargs=True
    )
    pairs = load_nli("sick-e", real_data)[:4]
    loss = objective.loss(pairs)
    assert rows == [8, 8]  # premises + hypotheses once for the classifier, once augmented
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in encoder.model.parameters() if p.grad is not None)


def test_cuda_graphs_on_where_they_cannot_apply_is_refused_with_the_reason(real_data, tmp_path):
    with pytest.raises(ValueError, match="cuda_graphs: on, but device cpu is not CUDA"):
        train(short_config(tmp_path, device="cpu", cuda_graphs="on", max_steps=2), real_data, progress=False)


def test_auto_and_on_take_graphs_where_an_objective_allows_them(tmp_path):
    """The graph decision for a (pretended) CUDA encoder of a long run: ``auto`` and ``on`` graph the contrastive
    step and AugCSE's; an objective without a graph-safe loss is refused, saying why."""
    from types import SimpleNamespace

    from consert.encode.pooling import Pooling
    from consert.train.execution import StepExecution
    from consert.train.objectives.augcse import AugCSE
    from consert.train.objectives.base import Objective
    from consert.train.objectives.contrastive import Contrastive

    def blocker(cuda_graphs: str, objective, model_type: str = "bert") -> str | None:
        config = short_config(tmp_path, mode="augcse", cuda_graphs=cuda_graphs)
        model = SimpleNamespace(config=SimpleNamespace(model_type=model_type))
        encoder = SimpleNamespace(config=config, device="cuda:0", model=model, train_pooling=Pooling.parse("mean"))
        return StepExecution(encoder).graphs_blocker(objective, planned_steps=10_000)

    assert blocker("auto", Contrastive) is None
    assert blocker("auto", AugCSE) is None
    assert blocker("on", AugCSE) is None
    assert blocker("on", Objective) == Objective.graphs_blocker
    # the packed step the graphs replay is BERT's layers: another architecture's runs eagerly, saying why
    assert blocker("auto", Contrastive, "modernbert") == (
        "ModernBERT's cuda_graphs step is not proven equal to its eager forward (BERT's layers only)"
    )
    assert blocker("auto", Contrastive, "roberta") is None


@pytest.mark.slow
@pytest.mark.parametrize("pooling", ["mean:-2,-1", "mean:1,-1"])
def test_an_export_gives_the_harness_seven_set_numbers_through_sentence_transformers_alone(
    real_data, tmp_path, pooling
):
    """The 7 STS sets scored from ``SentenceTransformer(folder).encode`` equal ``consert evaluate``'s numbers
    (fp32) within the comparison's precision allowance. On the first 50 pairs of each evaluated subset or
    split (1,300 pairs): the point is that two paths agree, and with fewer pairs a difference in the vectors
    shows more."""
    from sentence_transformers import SentenceTransformer

    from consert.evaluate.protocol import evaluate_embedder, evaluate_model
    from consert.verdict.yardstick import PRECISION_ALLOWANCE

    data = first_pairs(real_data, 50)
    run = train(short_config(tmp_path, eval_pooling=pooling, max_steps=2, eval_every=2), data, progress=False)
    model = SentenceTransformer(str(run.output_dir), device="cpu")
    alone = evaluate_embedder(data, lambda sentences: model.encode(sentences, batch_size=64), resamples=0)
    evaluated = evaluate_model(str(run.output_dir), [pooling], data=data, dtype="fp32", engine="torch", progress=False)
    alone, harness = (frame[frame.subset == "all"].set_index("dataset") for frame in (alone, evaluated))
    assert list(alone.index) == list(harness.index) and len(alone) == 8  # the 7 sets and Avg
    np.testing.assert_allclose(alone.spearman, harness.spearman, atol=PRECISION_ALLOWANCE)
    from consert.train.export import write_model_card

    card = write_model_card(run.output_dir, evaluated).read_text()  # the card, once evaluated, has the scores
    assert f"| {harness.spearman['STS12']:.2f} |" in card and f" {harness.spearman['Avg']:.2f} |" in card
    import yaml  # the Hub's metadata: read back as the Hub reads it (the YAML between the first two ---)

    meta = yaml.safe_load(card.split("---")[1])
    assert meta["pipeline_tag"] == "sentence-similarity" and meta["library_name"] == "sentence-transformers"
    assert meta["base_model"] == STAND_IN_MODEL
    (index,) = meta["model-index"]
    assert index["name"] == run.output_dir.parent.name and f"# {run.output_dir.parent.name} " in card  # <run>/model
    values = {r["dataset"]["name"]: r["metrics"][0]["value"] for r in index["results"]}
    assert values == {name: round(float(harness.spearman[name]), 2) for name in harness.index if name != "Avg"}
