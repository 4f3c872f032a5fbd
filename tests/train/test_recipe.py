"""Recipe parity: ConSERT trains as the authors' code did (values from their scripts and the paper)."""

from __future__ import annotations

import contextlib
import math

import pandas as pd
import pytest
import torch
import yaml

from consert.paper.recipe_card import UNEXPLAINED, recipe_card, unexplained
from consert.planner.keys import WorkflowConfig
from consert.planner.load import load_workflow_config
from consert.train.config import TrainConfig
from consert.train.loop import LoopSettings, capture_ahead, evaluation_grid, run_loop
from consert.train.losses import NliHead, TwoViewContrastiveLoss, nt_xent
from tests.conftest import PUBLISHED, ROOT

#: Unlabeled STS texts (Table 1): the authors' unsupervised training set.
N_TEXTS = 89_192


def _authors_settings(batch_size: int, grid: str = "epoch") -> LoopSettings:
    """The authors' unsupervised schedule (scripts/unsup-consert-base.sh) at ``batch_size``."""
    return LoopSettings(
        lr=5e-7,
        batch_size=batch_size,
        epochs=10,
        max_steps=None,
        warmup_ratio=0.1,
        weight_decay=0.01,
        adam_eps=1e-6,
        max_grad_norm=1.0,
        eval_every=200,
        patience=10,
        eval_at_start=False,
        seed=1,
        dtype="fp32",
        eval_grid=grid,
    )


@pytest.mark.parametrize("row", pd.read_csv(PUBLISHED / "consert_table4_batch_size.csv").to_dict("records"))
def test_every_published_table4_step_lies_on_the_authors_evaluation_grid(row):
    """Table 4's steps (1530 at batch 96, 6175 at 16, ...) are evaluations within an epoch or at its end."""
    grid = evaluation_grid(N_TEXTS, _authors_settings(row["batch_size"]))
    assert row["steps"] in grid
    # multiples of 200 counted globally (our old grid) hit none of them
    assert row["steps"] not in evaluation_grid(N_TEXTS, _authors_settings(row["batch_size"], "global"))


def test_epoch_grid_counts_within_epochs_and_scores_each_epoch_end():
    settings = _authors_settings(96)
    grid = evaluation_grid(N_TEXTS, settings)
    per_epoch = math.ceil(N_TEXTS / 96)
    assert per_epoch == 930
    assert sorted(grid)[:6] == [200, 400, 600, 800, 930, 1130]
    assert sum(grid.values()) == 10 * 5  # 4 within + 1 at the end of each of 10 epochs
    # an epoch that is a multiple of eval_every ends with two evaluations (both count for patience)
    small = LoopSettings(**{**settings.__dict__, "batch_size": 100, "eval_every": 4, "epochs": 2})
    assert dict(evaluation_grid(800, small)) == {4: 1, 8: 2, 12: 1, 16: 2}


def test_patience_counts_the_repeated_epoch_end_evaluation():
    """8 items in batches of 4 (2 steps an epoch), eval_every 2: evaluations 2, 2, 4, 4, ... with a flat dev score."""
    model = torch.nn.Linear(2, 1)
    settings = LoopSettings(**{**_authors_settings(4).__dict__, "eval_every": 2, "patience": 2, "epochs": 5})
    scores = iter([1.0] + [0.5] * 20)

    def loss_fn(batch):
        return model(torch.ones(len(batch), 2)).pow(2).mean()

    result = run_loop(
        model, list(model.named_parameters()), list(range(8)), loss_fn, lambda: next(scores), settings, "cpu"
    )
    # step 2: the best (1.0), then its repeat is a miss; step 4: 0.5 is the second miss -> stop
    assert result.steps == 4 and result.best_step == 2
    assert [e["step"] for e in result.log if "dev_spearman" in e] == [2, 2, 4]


def test_nt_xent_is_the_sum_of_both_directions_on_a_3_sentence_batch_by_hand():
    a = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    b = torch.tensor([[1.0, 0.2], [-0.3, 1.0], [0.5, 1.0]])
    tau = 0.1

    def cos(x, y):
        return float(x @ y / (x.norm() * y.norm()))

    def direction(first, second):
        terms = []
        for i in range(3):
            candidates = [cos(first[i], second[j]) for j in range(3)] + [
                cos(first[i], first[j]) for j in range(3) if j != i
            ]
            denominator = sum(math.exp(c / tau) for c in candidates)
            terms.append(-math.log(math.exp(cos(first[i], second[i]) / tau) / denominator))
        return sum(terms) / 3

    expected = direction(a, b) + direction(b, a)  # AdvCLSoftmaxLoss: loss = loss_a + loss_b
    assert nt_xent(a, b, tau).item() == pytest.approx(expected, rel=1e-5)


def test_joint_contrastive_loss_never_pits_a_premise_against_its_own_hypothesis():
    torch.manual_seed(0)
    premises1, premises2 = torch.randn(4, 8), torch.randn(4, 8)
    gradients = []
    for _ in range(2):  # two different hypothesis batches
        hypotheses1, hypotheses2 = torch.randn(4, 8), torch.randn(4, 8)
        view1 = torch.cat([premises1, hypotheses1]).requires_grad_()
        view2 = torch.cat([premises2, hypotheses2])
        loss = TwoViewContrastiveLoss("nt_xent", 0.1)(view1, view2, first=4)
        (gradient,) = torch.autograd.grad(loss, view1)
        gradients.append(gradient[:4])
        separate = nt_xent(premises1, premises2, 0.1) + nt_xent(hypotheses1, hypotheses2, 0.1)
        assert loss.item() == pytest.approx(separate.item(), rel=1e-6)
    # the premises' gradient does not depend on the hypotheses: they are never each other's negatives
    assert torch.allclose(gradients[0], gradients[1])


@pytest.mark.parametrize("wrong", ["zeros", "signed_difference", "product"])
def test_authors_classifier_reads_u_v_abs_difference_and_max_squared(wrong):
    torch.manual_seed(0)
    head = NliHead(3, features=("u", "v", "abs_diff", "max_square"))
    u, v = torch.randn(5, 3), torch.randn(5, 3)
    expected = torch.cat([u, v, (u - v).abs(), torch.maximum(u, v) ** 2], dim=1) @ head.linear.weight.T
    assert torch.allclose(head(u, v), expected + head.linear.bias, atol=1e-6)
    third = {"zeros": torch.zeros_like(u), "signed_difference": u - v, "product": u * v}[wrong]
    impostor = torch.cat([u, v, third, torch.maximum(u, v) ** 2], dim=1) @ head.linear.weight.T
    assert not torch.allclose(head(u, v), impostor + head.linear.bias, atol=1e-3)


def test_each_stage_defaults_to_the_authors_script():
    unsup = TrainConfig()
    assert (unsup.lr, unsup.batch_size, unsup.epochs, unsup.patience) == (5e-7, 96, 10, 10)
    assert set(unsup.views) == {"shuffle", "feature_cutoff"} and unsup.feature_cutoff == 0.2 and unsup.remove_dropout
    assert not unsup.adam_bias_correction and unsup.eval_grid == "epoch"
    assert (unsup.dev_pooling, unsup.eval_pooling, unsup.contrastive_weight) == ("mean", "mean:-2,-1", 0.15)
    sup = TrainConfig(mode="sup")  # scripts/sup-sbert-base.sh (+ main.py defaults: lr 2e-5, 1 epoch, no patience)
    assert (sup.lr, sup.batch_size, sup.epochs, sup.patience, sup.remove_dropout) == (2e-5, 96, 1, None, False)
    assert sup.classifier_features == ("u", "v", "abs_diff", "max_square")
    joint = TrainConfig(mode="joint")  # --data_augmentation_strategy cutoff --cutoff_direction row --cutoff_rate 0.1
    assert joint.views == ("none", "token_cutoff") and joint.token_cutoff == 0.1 and not joint.remove_dropout
    second = TrainConfig(mode="sup-unsup")  # 25 epochs, lr 5e-7, cutoff column 0.1, dropout on
    assert (second.lr, second.epochs, second.views, second.feature_cutoff) == (
        5e-7,
        25,
        ("none", "feature_cutoff"),
        0.1,
    )
    assert not second.remove_dropout
    assert TrainConfig(mode="joint-unsup").views == ("none", "shuffle")
    assert TrainConfig(mode="sup", lr=1e-5).lr == 1e-5  # an explicit value wins


def test_every_stage_sets_every_stage_dependent_key():
    from consert.train.modes import loop_modes, stage_defaults, stage_keys
    from consert.train.recipes import COMMON

    for stage in loop_modes():
        assert set(stage_defaults(stage)) == set(stage_keys()) | set(COMMON), stage
    assert TrainConfig(views=("none", "token_cutoff")).token_cutoff == 0.15  # the paper's rate for the sweeps


def test_a_two_stage_run_trains_its_first_stage_with_the_nli_recipe_and_its_overrides():
    config = TrainConfig(mode="joint-unsup", output_dir="runs/x", seed=3, stage1={"max_steps": 4, "batch_size": 8})
    first = config.first_stage()
    assert (first.mode, first.lr, first.epochs, first.views) == ("joint", 2e-5, 1, ("none", "token_cutoff"))
    assert (first.max_steps, first.batch_size, first.seed, first.output_dir) == (4, 8, 3, "runs/x.stage1")


def _workflow_config(name: str, **changes) -> WorkflowConfig:
    """config/<name> as the workflow reads it, with ``changes`` laid over its top-level keys first."""
    return load_workflow_config({**yaml.safe_load((ROOT / "config" / name).read_text()), **changes})


def _training_runs(card):
    """The card's training-run rows (the baseline rows are tested in test_baseline_protocols.py)."""
    return card[~card.run.str.startswith(("baseline-", "analysis-"))]


def test_the_paper_config_recipe_card_matches_the_authors_with_every_difference_explained():
    card = recipe_card(_workflow_config("config.yaml"))
    assert unexplained(card) == []
    card = _training_runs(card)
    card = card[~card["mode"].isin(["simcse", "augcse", "bertflow-nli"])]  # their own recipes (tested on their own)
    main = card[~card.artifacts.str.contains("table4") | card.run.str.contains("seed1$")]
    sweep_batches = card[card.differs_from_authors.str.contains("Table 4 batch size")]
    assert set(card.batch_size.drop(sweep_batches.index)) == {"96"}
    assert set(card[card["mode"] != "unsup"].bert_dropout) == {"on"}  # every supervised or second stage
    base_unsup = card[(card["mode"] == "unsup") & card.run.str.startswith("base")]
    assert set(base_unsup.bert_dropout) == {"off"}  # --no_dropout: only the unsupervised base run
    second_stages = card[card["mode"].isin(["sup-unsup", "joint-unsup"])]
    assert set(second_stages[second_stages.run.str.startswith("base")].epochs) == {"25"}  # *-base.sh
    assert set(second_stages[second_stages.run.str.startswith("large")].epochs) == {"10"}  # *-large.sh
    large = card.set_index("run").loc["large-unsup-seed1"]  # scripts/unsup-consert-large.sh
    assert (large.views, large.bert_dropout, large.epochs, large.eval_every) == ("none+shuffle", "on", "25", "100")
    # the authors' joint-large scripts pass 40, a retrain after the paper (their README): the paper's 64 is compared
    large_joint = card.set_index("run").loc["large-joint-seed1"]
    assert large_joint.max_length == "64" and "a later retrain" in large_joint.notes
    assert "issue #28" in large_joint.notes and "line 138" in large_joint.notes  # the dropout sources
    # attention dropout inside the variable-length kernel: said where BERT's dropout is on, and only there
    in_distribution = card.notes.str.contains("in distribution, not mask for mask")
    assert (in_distribution == (card.bert_dropout == "on")).all() and in_distribution.any()
    # each run's warm-up against the authors' ceil(0.1 x items x epochs / batch), from its own numbers:
    # NLI ceil(942,069 / 96) = 9,814 steps -> 981 against ceil(981.3) = 982; BERT-large unsup 930 x 25 = 23,250
    # -> 2,325 against ceil(2,322.7) = 2,323; joint-unsup on 10,000 texts (80,000 upsampled) 834 x 25 -> 2,085
    # against ceil(2,083.3) = 2,084; Table 2's base run 930 x 10 -> 930 against ceil(929.1) = 930
    notes = card.set_index("run").notes
    assert "942,069 items at batch 96 over 1 epochs: 981 against 982" in large_joint.notes
    assert "89,192 items at batch 96 over 25 epochs: 2325 against 2323" in notes["large-unsup-seed1"]
    assert "80,000 items at batch 96 over 25 epochs: 2085 against 2084" in notes["base-joint-unsup-n10000-seed1"]
    assert "89,192 items at batch 96 over 10 epochs: equal" in notes["base-unsup-seed1"]
    assert set(card.optimizer) == {"AdamW (no bias correction)"} and set(card.eval_grid) == {"epoch"}
    assert set(card.dev_pooling) == {"mean"} and set(card.eval_pooling) == {"mean:-2,-1"}
    assert len(main) and set(card["mode"]) == {"unsup", "sup", "joint", "sup-unsup", "joint-unsup"}


def test_a_changed_recipe_value_shows_up_unexplained():
    stages = yaml.safe_load((ROOT / "config" / "config.yaml").read_text()).get("stages", {})
    config = _workflow_config("config.yaml", stages={**stages, "sup": {**stages.get("sup", {}), "lr": 3e-5}})
    problems = unexplained(recipe_card(config))
    assert problems and all("lr: 3e-05 (authors 2e-05; " + UNEXPLAINED in p for p in problems)


def test_the_offline_card_explains_its_short_runs():
    card = recipe_card(_workflow_config("offline.yaml"))
    assert unexplained(card) == []
    card = _training_runs(card)
    assert card.differs_from_authors.str.contains("short CPU runs").all()
    assert card.differs_from_authors.str.contains("dev_max_pairs: 300 (authors none", regex=False).all()


def test_a_second_seed_is_listed_and_explained():
    card = recipe_card(_workflow_config("test.yaml"))  # seeds [1, 2]
    second = card[card.run.str.endswith("seed2")]
    family = second["mode"].isin(["simcse", "augcse"])
    assert (
        len(second[~family])
        and second[~family].differs_from_authors.str.contains("seed: 2 (authors 1; a further seed", regex=False).all()
    )
    # SimCSE's and AugCSE's authors ran seed 42: every seed of the config differs, with that reason
    first_family = card[card["mode"].isin(["simcse", "augcse"])]
    assert (
        len(first_family) == 4
        and first_family.differs_from_authors.str.contains("(authors 42; the config's seeds list", regex=False).all()
    )
    assert unexplained(card) == []


def test_consert_runs_compare_the_rates_of_their_augmentations():
    from consert.paper.recipe_card import _used_keys
    from consert.train.config import TrainConfig

    # the authors' unsupervised views are feature cutoff + shuffle: its rate is part of the recipe
    assert "feature_cutoff" in _used_keys(TrainConfig(mode="unsup"))
    assert "token_cutoff" in _used_keys(TrainConfig(mode="joint"))  # none + token cutoff
    assert not {"token_cutoff", "feature_cutoff"} & _used_keys(TrainConfig(mode="simcse"))  # dropout views only


def test_a_loss_fn_that_writes_its_own_gradients_trains_exactly_as_the_loops_backward():
    """``computes_gradients`` (the CUDA-graph step): the loop skips its backward and leaves ``.grad``
    in place; a loss_fn that zeroes and back-propagates itself must give the same parameters."""
    settings = LoopSettings(
        **{**_authors_settings(4).__dict__, "eval_every": 3, "epochs": 2, "lr": 1e-2, "final_state": "last"}
    )
    data = torch.randn(12, 3, generator=torch.Generator().manual_seed(0))
    initial, finals = None, []
    for computes in (False, True):
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 2)
        initial = torch.cat([p.detach().flatten() for p in model.parameters()])
        buffers = [torch.zeros_like(p) for p in model.parameters()]
        if computes:
            for parameter, buffer in zip(model.parameters(), buffers, strict=True):
                parameter.grad = buffer

        def loss_fn(batch, model=model, computes=computes, buffers=buffers):
            loss = model(data[batch]).pow(2).mean()
            if computes:  # as consert.train.graphs: gradients overwritten in buffers the loop must leave in place
                for parameter, buffer in zip(model.parameters(), buffers, strict=True):
                    assert parameter.grad is buffer  # not set to None, not replaced
                    buffer.zero_()
                loss.backward()
                return loss.detach()
            return loss

        result = run_loop(
            model, list(model.named_parameters()), list(range(12)), loss_fn, lambda: 0.0, settings, "cpu",
            progress=False, computes_gradients=computes,
        )  # fmt: skip
        assert result.steps == 6 and result.final_step == 6
        finals.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    assert (finals[0] - initial).abs().max() > 1e-3  # six steps moved the parameters
    assert torch.equal(finals[0], finals[1])


class _RecordedGraphs:
    """A stand-in for :class:`consert.train.graphs.GraphedStep` on a CPU: each new batch shape (sum // 40) is a
    capture, ``capturing_only()`` captures without a step, and a step back-propagates itself as a replay does."""

    def __init__(self):
        torch.manual_seed(0)
        self.model, self.shapes, self.capturing, self.calls = torch.nn.Linear(2, 1), set(), False, []

    def capture_count(self) -> int:
        return len(self.shapes)

    @contextlib.contextmanager
    def capturing_only(self):
        self.capturing = True
        yield
        self.capturing = False

    def __call__(self, batch: list[int]) -> torch.Tensor:
        self.shapes.add(sum(batch) // 40)
        self.calls.append((self.capturing, tuple(batch)))
        loss = self.model(torch.ones(len(batch), 2)).pow(2).mean()
        if not self.capturing:
            loss.backward()
        return loss.detach()


def test_a_graphed_step_runs_as_capture_ahead_then_the_loop_with_its_gradients_and_captures():
    """``graphed`` and ``capture_steps`` (the trainers' CUDA graphs): the same batches, log and parameters as
    :func:`capture_ahead` followed by the loop with ``computes_gradients`` and the graphs' ``capture_count``."""
    settings = LoopSettings(
        **{**_authors_settings(4).__dict__, "eval_every": 10, "epochs": 2, "max_steps": 30, "lr": 1e-1}
    )
    items, runs = list(range(200)), []
    for as_graphed in (False, True):
        step = _RecordedGraphs()
        ahead = 0.0 if as_graphed else capture_ahead(items, step, settings, "cpu", 12, step.capturing_only)
        graph_options = (
            {"graphed": step, "capture_steps": 12}
            if as_graphed
            else {"computes_gradients": True, "capture_count": step.capture_count}
        )
        result = run_loop(
            step.model, list(step.model.named_parameters()), items, step, lambda: 0.5, settings, "cpu",
            progress=False, **graph_options,
        )  # fmt: skip
        log = [{key: value for key, value in entry.items() if key != "seconds"} for entry in result.log]
        runs.append((step.calls, log, torch.cat([p.detach().flatten() for p in step.model.parameters()])))
        assert (result.captured_ahead_s > 0) == as_graphed and ahead >= 0
    (calls, log, weights), (graphed_calls, graphed_log, graphed_weights) = runs
    assert graphed_calls == calls and graphed_log == log and torch.equal(graphed_weights, weights)
    assert sum(captured for captured, _ in calls) == 12 and any("captures" in entry for entry in log)


def test_a_stage_with_fused_kernels_says_its_dropout_masks_are_equal_in_distribution_only():
    """compile: on fuses the per-token chain under CUDA graphs (consert.train.fused): where BERT's dropout is on,
    the card says a run equals an uncompiled one in distribution; without dropout, or uncompiled, it says nothing."""
    from consert.paper.recipe_card import consert_notes
    from consert.train.notes import FUSED_DROPOUT_NOTE

    supervised = TrainConfig(mode="sup")  # BERT's dropout on
    assert FUSED_DROPOUT_NOTE in consert_notes(supervised.replace(compile="on"), "base")
    assert FUSED_DROPOUT_NOTE not in consert_notes(supervised, "base")  # auto: the graphs stay uncompiled
    assert FUSED_DROPOUT_NOTE not in consert_notes(TrainConfig(compile="on"), "base")  # unsup: dropout removed
