"""Each baseline is fitted and compared as its reference implementation did (issue: baselines as their
authors ran them). Expected values come from the references and the papers, not from this code."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from torch import nn

from baselines.flow import FlowBaseline
from baselines.glove import GloveBaseline, load_glove_text
from baselines.run import evaluate_baseline, fit_corpora
from baselines.sgopt import SgOptConfig, SgOptProjection, SgOptTrainer
from consert.paper.catalogue import COMPARED
from consert.paper.recipe_card import recipe_card, unexplained
from consert.paper.tables import topk_table
from consert.train.loop import LoopSettings, run_loop
from consert.verdict.compare import compare
from consert.verdict.decision import authors_topk_k
from tests.conftest import PUBLISHED, ROOT

PAPER = {"setting": "paper setting (model as named)", "nli": "", "base_model": "bert-base-uncased"}


def _table1() -> pd.DataFrame:
    return pd.read_csv(PUBLISHED / "consert_table1_datasets.csv").set_index("statistic")


def test_per_task_fit_corpora_have_the_references_sizes(real_data):
    # BERT-whitening eng/eval.py: both sides of every scored pair of the task, no dedup; STS-B
    # train+dev+test, SICK-R train+trial+test. Sizes from ConSERT's Table 1 (pairs x 2; for STS-B and
    # SICK-R every pair is scored, so they equal the unlabeled-text counts).
    table1 = _table1()
    whitening = fit_corpora("whitening", real_data)
    assert len(whitening["STSb"]) == int(table1.loc["unlabeled_texts", "STSb"]) == 17256
    assert len(whitening["SICK-R"]) == int(table1.loc["unlabeled_texts", "SICK-R"]) == 19854
    for year in ("STS12", "STS13", "STS14", "STS15", "STS16"):
        assert len(whitening[year]) == 2 * int(table1.loc["test_samples", year])
    # BERT-flow: STS12-16's full.txt is train, dev and test at once, so each year is fitted on 3 times
    flow = fit_corpora("flow", real_data)
    assert len(flow["STS16"]) == 3 * 2 * 1186 and len(flow["STSb"]) == 17256
    assert fit_corpora("flow", real_data, "sts") == {"*": real_data.unlabeled_texts()}
    with pytest.raises(ValueError, match="fit_on must be one of"):
        fit_corpora("whitening", real_data, "sts")


class _CentringEmbedder:
    """A real (if trivial) fitted method: hash vectors minus the mean of the fit texts' vectors."""

    name = "centring"

    def __init__(self):
        self.fits: list[int] = []

    @staticmethod
    def _raw(sentences):
        return np.stack([np.random.default_rng(abs(hash(s)) % 2**32).normal(size=8) for s in sentences])

    def fit(self, texts):
        self.fits.append(len(texts))
        self.mean = self._raw(texts).mean(0)
        return self

    def encode(self, sentences):
        return self._raw(sentences) - self.mean

    def describe(self):
        return {"engine": "numpy", "setting": "test"}


def test_a_per_task_fit_fits_once_per_task_and_records_each_fit_size(tiny_tree):
    from consert.data.senteval import load_senteval

    data = load_senteval(tiny_tree)
    corpora = fit_corpora("whitening", data)
    embedder = _CentringEmbedder()
    frame = evaluate_baseline(embedder, data, corpora, fit_on="task")
    assert embedder.fits == [len(corpora[task]) for task in data.sets]
    per_set = frame[frame.subset == "all"].set_index("dataset")
    for task in data.sets:
        assert per_set.loc[task, "fit_texts"] == len(corpora[task]) == len(data.sets[task].scored_texts())
    assert per_set.loc["Avg", "fit_texts"] == sum(map(len, corpora.values())) and set(frame.fit_on) == {"task"}


def test_flow_defaults_are_the_authors():
    # optimization_bert_flow.py / run_siamese.py / config_l3_d3_w32.json
    flow = FlowBaseline(SimpleNamespace(pooling="mean:1,-1"), progress=False).settings.model_dump()
    assert flow == {
        "levels": 3,
        "depth": 3,
        "width": 32,
        "lr": 1e-3,
        "weight_decay": 0.01,
        "max_grad_norm": 1.0,
        "epochs": 1,
        "batch_size": 64,  # train_batch_size 32 pairs = 64 sentences
        "encoder_dropout": True,
    }


def test_a_workflow_config_resolves_the_flow_settings_over_the_authors():
    """The offline config turns the encoder's dropout off (its flows fit on cached vectors) and keeps every other
    setting the authors'; the paper's config keeps all of them. The resolved file reads back as written."""
    from baselines.flow_settings import FlowSettings
    from consert.planner.load import read_workflow_config

    offline = FlowSettings.of_workflow(read_workflow_config(ROOT / "config" / "offline.yaml"))
    assert offline == FlowSettings(encoder_dropout=False)
    assert FlowSettings.of_workflow(read_workflow_config(ROOT / "config" / "config.yaml")) == FlowSettings()
    assert yaml.safe_load(offline.to_yaml()) == offline.model_dump()


def test_sgopt_trains_on_the_17256_stsb_texts_with_the_codes_settings(real_data):
    config = SgOptConfig(model="m", output_dir="o")
    texts = SgOptTrainer.training_texts(SimpleNamespace(config=config, data=real_data))
    assert len(texts) == 17256  # 8,628 STS-B pairs x 2 (paper footnote 7; SG-BERT training.py)
    assert len(set(texts)) < len(texts)  # duplicates stay, as in the reference
    assert (config.view_pooling, config.guide_dropout, config.final_state, config.patience) == (
        "mean",
        True,
        "last",
        10,
    )
    assert (config.weight_decay, config.betas, config.max_length) == (0.01, (0.9, 0.9), 128)


def test_sgopt_projection_head_is_initialised_like_bert():
    torch.manual_seed(0)
    head = SgOptProjection(64, 512)
    linears = [m for m in head if isinstance(m, nn.Linear)]
    assert len(linears) == 2
    for layer in linears:
        assert abs(layer.weight.std().item() - 0.02) < 0.002 and abs(layer.weight.mean().item()) < 0.002
        assert torch.count_nonzero(layer.bias) == 0


def _loop(dev_scores, **settings):
    torch.manual_seed(0)
    model = nn.Linear(2, 1)
    scores = iter(dev_scores)
    base = dict(
        lr=0.1,
        batch_size=1,
        epochs=1,
        max_steps=None,
        warmup_ratio=0.0,
        weight_decay=0.0,
        adam_eps=1e-6,
        max_grad_norm=1.0,
        eval_every=1,
        patience=2,
        eval_at_start=False,
        seed=1,
        dtype="fp32",
    )
    result = run_loop(
        model,
        list(model.named_parameters()),
        list(range(len(dev_scores))),
        lambda batch: model(torch.ones(1, 2)).sum(),
        lambda: next(scores),
        LoopSettings(**{**base, **settings}),
        "cpu",
        progress=False,
    )
    return model, result


def test_sgopt_patience_counts_declines_and_keeps_the_last_state():
    # SG-BERT modules.py: +1 whenever a dev score is below the previous one, never reset; stop at 2
    scores = [5, 4, 6, 5, 7, 6, 1, 1]
    _, since_best = _loop(scores)
    assert since_best.steps == 7  # ConSERT's rule: 2 evaluations in a row without a new best (7 after 6 at 5)
    last_model, last = _loop(scores, patience_counts="declines", final_state="last")
    assert last.steps == 4 and last.best_step == 3  # 4 < 5 and 5 < 6 are the two declines
    best_model, best = _loop(scores, patience_counts="declines")
    assert best.best_step == 3 and best.steps == 4
    # the loss pushes the output down each step: the last state (4 updates) sits below the best (3)
    x = torch.ones(1, 2)
    assert last_model(x).item() < best_model(x).item()


def test_glove_is_tokenized_and_read_as_sentence_transformers_did(tmp_path):
    """SBERT's avg-GloVe (ConSERT's row): WhitespaceTokenizer defaults (stop words dropped, case kept; each
    token as is, punctuation-stripped, lowercased) and from_text_file (first field the word; a line of
    another dimension, such as glove.840B's words with spaces, skipped). Expected values by hand."""
    path = tmp_path / "glove.fixture.txt"
    path.write_text("The 1 0 0\ncat 0 2 0\nat the 9 9 9\nsat 0 0 4\nmat 2 2 2\nthe 5 5 5\non 7 7 7\n")
    index, matrix, skipped = load_glove_text(path)
    assert skipped == 1 and "at the" not in index and "at" not in index
    glove = GloveBaseline(path)
    # "The" is no stop word (the list is lowercase), "on", "the" and "." are: The + cat + sat + mat
    np.testing.assert_allclose(glove.encode(["The cat sat on the mat ."])[0], [0.75, 1.0, 1.5])
    np.testing.assert_allclose(glove.encode(["Cat!"])[0], [0, 2, 0])  # "Cat!" -> "Cat" -> "cat"
    np.testing.assert_array_equal(glove.encode(["THE ON"])[0], [0, 0, 0])  # lowercased: stop words
    assert glove.empty_sentences == 1 and glove.describe()["skipped_lines"] == 1


def test_topk_k_is_the_authors_rank_convention(real_data):
    # analysis_rep_space.py drops ranks 0..k: their k = 0 already removes [CLS], the most frequent
    from baselines.topk import stsb_test_ranking
    from consert.encode.encoder import SentenceEncoder

    assert [authors_topk_k(n) for n in (0, 1, 35)] == [None, 0, 34]
    encoder = SentenceEncoder.load("sentence-transformers/all-MiniLM-L6-v2", engine="torch")
    ranking = stsb_test_ranking(encoder, real_data)
    assert encoder.tokenizer.convert_ids_to_tokens(ranking[:2]) == ["[CLS]", "[SEP]"]  # Figure 4 caption
    from consert.paper.tables import SCORE_COLUMNS

    curve = pd.DataFrame(
        [{"k": k, "dataset": name, "spearman": 50.0 + k, "setting": "x"} for k in (0, 1) for name in SCORE_COLUMNS]
    )
    table = topk_table([("BERT-base", curve)])
    assert table.authors_k.isna().tolist() == [True, False] and table.authors_k.iloc[1] == 0


def _table(rows):
    columns = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R", "Avg"]
    out = []
    for row in rows:
        merged, wmean = row.pop("all"), row.pop("wmean")
        cells = {c: merged for c in columns}
        cells.update({f"{c}_wmean": wmean for c in ("STS12", "STS13", "STS14", "STS15", "STS16", "Avg")})
        out.append({**cells, **row})
    return pd.DataFrame(out)


def test_comparison_uses_the_aggregate_each_published_row_used(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    _table(
        [
            {"method": "BERT-base-flow", "size": "base", "all": 10.0, "wmean": 63.48, **PAPER},
            {"method": "ConSERT-base", "size": "base", "all": 64.64, "wmean": 1.0, **PAPER},
            {"method": "BERT-base-SG-OPT", "size": "base", "all": 66.84, "wmean": 66.84, **PAPER},
        ]
    ).to_csv(results / "table2_unsup.csv", index=False)
    comparison = compare(COMPARED, results, PUBLISHED)
    flow = comparison[(comparison.artifact == "table2") & (comparison.row == "BERT-base-flow")].set_index("column")
    assert flow.loc["STS12", "aggregate"] == "wmean" and flow.loc["STS12", "reproduced"] == 63.48
    assert flow.loc["STSb", "aggregate"] == "test split" and flow.loc["STSb", "reproduced"] == 10.0
    consert = comparison[comparison.row == "ConSERT-base"].set_index("column")
    assert consert.loc["STS12", "aggregate"] == "all" and consert.loc["STS12", "delta"] == 0
    sgopt = comparison[comparison.artifact == "sgopt_table1"].set_index("column")
    assert not sgopt.loc["STS12", "comparable"] and "aggregate" in sgopt.loc["STS12", "reason"]
    assert sgopt.loc["STSb", "comparable"]  # one test split: every aggregate agrees


def test_the_baseline_card_rows_match_the_references():
    from consert.paper.recipe_card_baselines import test_precision_difference
    from consert.planner.load import read_workflow_config

    card = recipe_card(read_workflow_config(ROOT / "config" / "config.yaml")).set_index("run")
    assert unexplained(card.reset_index()) == []
    flow = card.loc["baseline-flow-base"]
    assert flow.pooling == "mean:1,-1" and "17,256" in flow.fit_corpus and "19,854" in flow.fit_corpus
    assert "lr 0.001 constant" in flow.optimizer and "clip 1.0" in flow.optimizer and "64 sentences" in flow.optimizer
    assert "reverse permutation" in flow.method_settings and "encoder dropout on" in flow.method_settings
    assert flow["aggregate"].startswith("wmean")
    # what remains different from bohanli/BERT-flow, each with its reason; the base model of each flow row
    for difference in ("batches: 64 sentences", "random.shuffle with seed 1234", "weight decay: applied after",
                       "full.txt", "Hugging Face PyTorch BERT"):  # fmt: skip
        assert difference in flow.differs_from_authors
    assert "bert-base-uncased (Table 2's BERT-flow rows)" in flow.notes
    assert "BERT-flow's own BERT-NLI" in flow.notes and "base-bertflow-nli-seed1" in flow.notes
    whitening = card.loc["baseline-whitening-base-mean:1,-1-kall"]
    # the paper config's dtype auto: the test sets' precision is measured, the references' fp32 (eng/eval.py)
    assert whitening.differs_from_authors.startswith("test precision: auto (authors fp32: a freshly loaded model")
    assert whitening.differs_from_authors == test_precision_difference("auto")  # nothing else differs
    assert "within 0.03 of PyTorch fp32" in whitening.differs_from_authors
    assert whitening["aggregate"].startswith("wmean")
    assert "test split's Spearman" in whitening.notes and "71.43" in whitening.notes
    sgopt = card.loc["baseline-sgopt"]
    assert "17,256" in sgopt.fit_corpus and sgopt["aggregate"].startswith("unknown")
    assert "endurance 10" in sgopt.notes and "1, 2, 3, 4, 1234, 2345, 3456, 7890" in sgopt.notes
    # SG-BERT's modules.py fit() defaults to use_amp=False and training.py passes none: the authors trained fp32
    assert sgopt.differs_from_authors.startswith("precision: auto (authors fp32")
    assert "CUDA graphs" in sgopt.notes and "dropout masks" in sgopt.notes
    glove = card.loc["baseline-glove"]
    assert "SBERT's Table 1" in glove.authors_source and "WhitespaceTokenizer" in glove.method_settings
    assert "test precision" not in glove.differs_from_authors  # no transformer encodes its sentences
    assert all(
        "test precision: auto" in card.loc[run].differs_from_authors for run in card.index if run != "baseline-glove"
    )
    fp32 = read_workflow_config(ROOT / "config" / "config.yaml").model_copy(update={"dtype": "fp32"})
    assert not recipe_card(fp32).differs_from_authors.str.contains("test precision").any()  # the authors' precision
    assert "authors_k = k - 1" in card.loc["analysis-topk"].method_settings


def test_the_paper_config_runs_sgopt_with_its_8_published_seeds():
    # SG-OPT Table 8 (sgopt.txt line 444-445): seeds 1, 2, 3, 4, 1234, 2345, 3456, 7890; line 143: "the average
    # of 8 separate runs"
    from consert.paper import catalogue
    from consert.planner.load import read_workflow_config

    config = read_workflow_config(ROOT / "config" / "config.yaml")
    sgopt = [p for p in catalogue.inputs("table2", config) if "/sgopt/" in p and "sgopt-base-" in p]
    assert sorted(int(p.split("seed")[-1].removesuffix(".csv")) for p in sgopt) == [1, 2, 3, 4, 1234, 2345, 3456, 7890]


def test_the_bertflow_nli_encoder_is_trained_by_its_authors_recipe():
    # bohanli/BERT-flow README (ALLNLI: 1 epoch, lr 2e-5, batch 16), run_siamese.py ([u, v, |u - v|], no bias,
    # "avg" pooling), optimization.py (AdamWeightDecay without bias correction, 10% warm-up)
    from consert.train.config import TrainConfig

    config = TrainConfig(mode="bertflow-nli")
    assert (config.batch_size, config.lr, config.epochs, config.max_length) == (16, 2e-5, 1, 64)
    assert config.classifier_features == ("u", "v", "abs_diff") and config.classifier_bias is False
    assert (config.train_pooling, config.final_state, config.remove_dropout) == ("mean", "last", False)
    assert (config.adam_bias_correction, config.adam_eps, config.warmup_ratio) == (False, 1e-6, 0.1)
    assert config.classifier_init_std == 0.02 and TrainConfig(mode="sup").classifier_init_std is None


def test_the_bertflow_nli_classifier_starts_from_tensorflows_truncated_normal():
    """run_siamese.py: W ~ truncated_normal_initializer(stddev=0.02), redrawn beyond 2 SD, no bias; the SD
    of a normal truncated at +-2 SD is 0.8796 x 0.02 = 0.01759 (the truncated normal's variance formula)."""
    import torch

    from consert.train.losses import NliHead

    torch.manual_seed(0)
    head = NliHead(768, features=("u", "v", "abs_diff"), bias=False, init_std=0.02)
    weight = head.linear.weight.detach()
    assert head.linear.bias is None and weight.shape == (3, 3 * 768)
    assert weight.abs().max() <= 0.04 and weight.std().item() == pytest.approx(0.01759, rel=0.03)
    default = NliHead(768, bias=False).linear.weight.detach()  # nn.Linear's uniform(+-1/sqrt(fan_in))
    bound = 1 / (3 * 768) ** 0.5
    assert default.abs().max() > 0.9 * bound and default.std().item() == pytest.approx(bound / 3**0.5, rel=0.05)
