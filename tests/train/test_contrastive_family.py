"""SimCSE and AugCSE: their recipes, views, losses, gradient reversal and text augmentations."""

from __future__ import annotations

import math
import random
import re

import pytest
import torch
from torch import nn

from consert.data.inputs import DEBIAN_WORDNET
from consert.train.augcse_heads import AugmentationDiscriminator, discriminator_loss, reverse_gradient
from consert.train.config import TrainConfig
from consert.train.losses import infonce, infonce_symmetric
from consert.train.text_augment import (
    AUTHORS_STS_LIST,
    LEFT_OUT,
    TEXT_AUGMENTATIONS,
    adjectives_antonyms_switch,
    augment_corpus,
    auxiliary_negation_removal,
    contraction_expansions,
    discourse_marker_substitution,
    missing_components,
    random_swap,
    sentence_reordering,
    spacy_pipeline,
    subject_object_switch,
    wordnet_adjective_antonyms,
    yoda_perturbation,
)


@pytest.fixture(scope="module")
def nlp():
    return spacy_pipeline()


def _parsed(nlp, words, pos, deps, heads, lemmas=None):
    """A hand-parsed spaCy Doc (what en_core_web_sm would give), for the parser-based augmentations."""
    from spacy.tokens import Doc

    spaces = [i + 1 < len(words) and words[i + 1] not in (".", ",") for i in range(len(words))]
    return Doc(nlp.vocab, words=words, spaces=spaces, pos=pos, deps=deps, heads=heads, lemmas=lemmas)


# ---- recipes -------------------------------------------------------------------------------------


def test_simcse_recipe_is_the_authors_unsupervised_bert_base_run():
    config = TrainConfig(mode="simcse")
    # run_unsup_example.sh and the paper's Table A.1: batch 64, lr 3e-5, temperature 0.05, 32 tokens, 1 epoch
    assert (config.batch_size, config.lr, config.temperature, config.max_length, config.epochs) == (
        64,
        3e-5,
        0.05,
        32,
        1,
    )
    assert config.views == ("none", "none") and not config.remove_dropout  # two dropout passes are the views
    assert (config.train_pooling, config.dev_pooling, config.eval_pooling) == ("cls", "cls", "cls")
    assert (config.projection, config.loss, config.contrastive_weight) == ("mlp", "infonce", 1.0)
    assert config.augcse.discriminator_weight == 0  # no discriminator
    # SimCSE's SentEval batcher pads to the longest sentence and truncates nothing; ConSERT evaluates at 64
    assert config.evaluation_max_length == 512 and TrainConfig(mode="unsup").evaluation_max_length == 64


def test_augcse_recipe_adds_the_discriminator_and_keeps_consert_untouched():
    config = TrainConfig(mode="augcse")
    assert config.augcse.discriminator_weight == 0.005  # lambda of the authors' STS recipe
    assert (config.batch_size, config.lr, config.epochs, config.temperature) == (128, 2e-5, 4, 0.05)
    # the implemented augmentations plus the left-out ones are exactly the authors' 12
    implemented = {TEXT_AUGMENTATIONS[name].authors_name for name in config.augcse.text_augmentations}
    assert implemented | set(LEFT_OUT) == set(AUTHORS_STS_LIST) and not implemented & set(LEFT_OUT)
    consert = TrainConfig(mode="unsup")
    assert (consert.temperature, consert.loss, consert.projection, consert.max_length) == (0.1, "nt_xent", "none", 64)


def test_the_discriminator_belongs_to_augcse_only():
    with pytest.raises(ValueError, match="needs objective 'augcse', not 'contrastive'"):
        TrainConfig(mode="unsup", augcse={"discriminator_weight": 0.005, "text_augmentations": ["random_swap"]})


def test_augcses_own_settings_are_a_sub_config_over_its_recipe():
    """A config file's ``augcse:`` mapping is laid over the stage's values (the offline run's five augmentations
    keep the authors' lambda); a wrong key or value in it is one line naming ``augcse``."""
    from consert.configs import ConfigError

    offline = TrainConfig.from_dict(
        {"mode": "augcse", "augcse": {"spacy_model": None, "text_augmentations": ["random_swap"]}}
    )
    assert (offline.augcse.discriminator_weight, offline.augcse.spacy_model) == (0.005, None)
    assert offline.augcse.text_augmentations == ("random_swap",)
    assert TrainConfig.from_dict(offline.to_dict()) == offline  # the run config's mapping reads back the same
    assert offline.flat()["text_augmentations"] == ("random_swap",) and "augcse" not in offline.flat()
    for given, message in (
        ({"lambda": 1.0}, "augcse: unknown key `lambda`"),
        ({"discriminator_weight": -1.0}, "augcse.discriminator_weight: expected a number >= 0"),
        ({"discriminator_dropout": 1.0}, "augcse.discriminator_dropout: expected a number in [0, 1), got 1.0"),
        (
            0.005,
            "augcse: expected a mapping of discriminator_weight, text_augmentations, spacy_model, "
            "discriminator_dropout, wordnet",
        ),
    ):
        with pytest.raises(ConfigError, match=re.escape(message)):
            TrainConfig.from_dict({"mode": "augcse", "augcse": given})


def test_each_recipe_names_its_objective_and_the_name_alone_picks_it():
    """The authors' stages and the family each name an objective (no rule on other keys picks it): a two-stage
    mode's first stage is the NLI one, SimCSE is contrastive, AugCSE is AugCSE even with its lambda at 0, and an
    unknown name fails in one line before anything loads."""
    from consert.configs import ConfigError
    from consert.train.objectives import AugCSE, Contrastive, JointNli, NliClassification, objective_for

    expected = {
        **dict.fromkeys(("unsup", "sup-unsup", "joint-unsup", "simcse"), Contrastive),
        **dict.fromkeys(("sup", "bertflow-nli"), NliClassification),
        "joint": JointNli,
        "augcse": AugCSE,
    }
    assert {mode: objective_for(TrainConfig(mode=mode)) for mode in expected} == expected
    assert objective_for(TrainConfig(mode="joint-unsup").first_stage()) is JointNli
    assert objective_for(TrainConfig(mode="augcse", augcse={"discriminator_weight": 0.0})) is AugCSE
    with pytest.raises(ConfigError, match="objective: expected one of augcse, contrastive, joint_nli, nli, got 'x'"):
        objective_for(TrainConfig(objective="x"))


def test_a_left_out_augmentation_is_refused_with_its_reason():
    with pytest.raises(ValueError, match="neural models"):
        TrainConfig(mode="augcse", augcse={"text_augmentations": ["random_swap", "DiverseParaphrase"]})


# ---- views and losses ----------------------------------------------------------------------------


def test_simcse_views_differ_by_dropout_only():
    from consert.encode.models import STAND_IN_MODEL, resolve_model
    from consert.encode.pooling import Pooling
    from consert.train.augment import AugmentationRatios
    from consert.train.trained_encoder import load_trainable
    from consert.train.views import two_view_forward

    resolved = resolve_model(STAND_IN_MODEL)
    texts = ["A man is playing a guitar.", "Two dogs run on the beach."]
    for remove_dropout, expect_equal in ((False, False), (True, True)):
        tokenizer, model = load_trainable(resolved, "cpu", remove_dropout=remove_dropout)
        model.train()
        batch = tokenizer(texts, padding=True, return_tensors="pt")
        torch.manual_seed(0)
        with torch.no_grad():
            view1, view2 = two_view_forward(
                model,
                batch["input_ids"],
                batch["attention_mask"],
                ("none", "none"),
                Pooling.parse("cls"),
                AugmentationRatios(),
            )
        assert torch.allclose(view1, view2, atol=1e-6) is expect_equal


def test_infonce_of_a_three_sentence_batch_by_hand():
    view1 = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    view2 = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    r = 1 / math.sqrt(2)  # cosine of 45 degrees
    # rows of cos(view1_i, view2_j); the partner of i is j = i
    rows = [([1, r, 0], 0), ([0, r, 1], 1), ([r, 1, r], 2)]
    tau = 0.5
    forward = sum(-math.log(math.exp(s[i] / tau) / sum(math.exp(x / tau) for x in s)) for s, i in rows) / 3
    assert infonce(view1, view2, tau).item() == pytest.approx(forward, rel=1e-6)
    # the other direction: columns of the same matrix
    columns = [([1, 0, r], 0), ([r, r, 1], 1), ([0, 1, r], 2)]
    backward = sum(-math.log(math.exp(s[i] / tau) / sum(math.exp(x / tau) for x in s)) for s, i in columns) / 3
    assert infonce_symmetric(view1, view2, tau).item() == pytest.approx((forward + backward) / 2, rel=1e-6)


def test_an_untrained_discriminator_costs_log_2_per_class():
    discriminator = AugmentationDiscriminator(dim=3, classes=4).eval()
    for parameter in discriminator.parameters():
        nn.init.zeros_(parameter)
    original, augmented = torch.randn(5, 3), torch.randn(5, 3)
    loss = discriminator_loss(discriminator, original, augmented, torch.tensor([0, 1, 2, 3, 3]))
    assert loss.item() == pytest.approx(math.log(2))  # tanh(0) = 0: BCE of logit 0 is log 2 for 0 and 1 targets


def test_the_discriminator_is_two_tanh_layers_on_the_concatenated_pair():
    discriminator = AugmentationDiscriminator(dim=5, classes=4).eval()
    linears = [m for m in discriminator.modules() if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(10, 20), (20, 4)]  # 2d -> 4d -> A + 1
    with torch.no_grad():
        for linear in linears:
            linear.weight.fill_(3.0)  # large weights: only a final tanh keeps the scores within [-1, 1]
        scores = discriminator(torch.ones(2, 5), torch.ones(2, 5))
    assert scores.shape == (2, 4) and scores.abs().max() <= 1.0 and scores.min() > 0.99


def test_gradient_reversal_flips_the_discriminators_gradient_into_the_encoder():
    torch.manual_seed(0)
    encoder = nn.Linear(4, 3)
    discriminator = AugmentationDiscriminator(dim=3, classes=3).eval()  # no dropout: a deterministic pass
    inputs, augmented_inputs = torch.randn(6, 4), torch.randn(6, 4)
    labels = torch.tensor([0, 1, 2, 0, 1, 2])

    def gradients(reversal: bool):
        encoder.zero_grad()
        discriminator.zero_grad()
        original, augmented = encoder(inputs), encoder(augmented_inputs)
        if reversal:
            loss = discriminator_loss(discriminator, original, augmented, labels)
        else:
            scores = discriminator(original, augmented)
            loss = nn.functional.binary_cross_entropy_with_logits(scores, nn.functional.one_hot(labels, 3).float())
        loss.backward()
        return encoder.weight.grad.clone(), discriminator.layers[1].weight.grad.clone()

    encoder_reversed, discriminator_reversed = gradients(True)
    encoder_plain, discriminator_plain = gradients(False)
    assert encoder_plain.abs().sum() > 0
    assert torch.allclose(encoder_reversed, -encoder_plain)  # the encoder works against the discriminator
    assert torch.allclose(discriminator_reversed, discriminator_plain)  # the discriminator still learns
    x = torch.randn(3, requires_grad=True)
    reverse_gradient(x, 2.5).sum().backward()
    assert torch.equal(x.grad, torch.full((3,), -2.5))


# ---- text augmentations --------------------------------------------------------------------------


def test_contraction_expansions(nlp):
    rng = random.Random(0)
    assert contraction_expansions(nlp("He isn't sure they're right."), rng) == "He is not sure they are right."
    assert contraction_expansions(nlp("Don't go."), rng) == "Do not go."
    assert contraction_expansions(nlp("It is what it was."), rng) == "It's what it was."  # none: contract
    assert contraction_expansions(nlp("A man plays."), rng) == "A man plays."


def test_random_swap_moves_tokens_without_losing_any(nlp):
    text = "a b c d e f g h i j k l"
    swapped = random_swap(nlp(text), random.Random(3))
    assert swapped != text and sorted(swapped.split()) == sorted(text.split())
    # ceil(0.1 x 12) = 2 positions swapped with a neighbour: at most 4 tokens leave their place
    assert 0 < sum(a != b for a, b in zip(swapped.split(), text.split(), strict=True)) <= 4
    assert random_swap(nlp("alone"), random.Random(0)) == "alone"


def test_auxiliary_negation_removal(nlp):
    rng = random.Random(0)
    assert auxiliary_negation_removal(nlp("The cat isn't happy."), rng) == "The cat is happy."
    assert auxiliary_negation_removal(nlp("She could not come."), rng) == "She could come."
    assert auxiliary_negation_removal(nlp("I do not know."), rng) == "I know."
    assert auxiliary_negation_removal(nlp("I can't swim."), rng) == "I can swim."  # spaCy: ca + n't
    assert auxiliary_negation_removal(nlp("I don't."), rng) == "I."
    assert auxiliary_negation_removal(nlp("Not now."), rng) == "Not now."  # no auxiliary before it


def test_discourse_marker_substitution_keeps_the_sense(nlp):
    out = discourse_marker_substitution(nlp("It rained. However, we played."), random.Random(0))
    marker = out.split(". ")[1].split(",")[0]
    assert marker != "However" and marker[0].isupper()
    assert marker.lower() in ("but", "yet", "nevertheless", "nonetheless", "still")  # contrast, like "however"
    assert discourse_marker_substitution(nlp("A dog runs."), random.Random(0)) == "A dog runs."


def test_sentence_reordering(nlp):
    assert sentence_reordering(nlp("It rained. We stayed in."), random.Random(0)) == "We stayed in. It rained."
    assert sentence_reordering(nlp("A single sentence."), random.Random(0)) == "A single sentence."


def test_subject_object_switch_on_a_parsed_sentence(nlp):
    doc = _parsed(
        nlp,
        ["The", "cat", "chased", "the", "dog", "."],
        ["DET", "NOUN", "VERB", "DET", "NOUN", "PUNCT"],
        ["det", "nsubj", "ROOT", "det", "dobj", "punct"],
        [1, 2, 2, 4, 2, 2],
    )
    assert subject_object_switch(doc, random.Random(0)) == "The dog chased the cat."
    intransitive = _parsed(
        nlp, ["Birds", "sing", "."], ["NOUN", "VERB", "PUNCT"], ["nsubj", "ROOT", "punct"], [1, 1, 1]
    )
    assert subject_object_switch(intransitive, random.Random(0)) == intransitive.text


def test_yoda_perturbation_on_a_parsed_sentence(nlp):
    doc = _parsed(
        nlp,
        ["You", "must", "learn", "patience", "."],
        ["PRON", "AUX", "VERB", "NOUN", "PUNCT"],
        ["nsubj", "aux", "ROOT", "dobj", "punct"],
        [2, 2, 2, 2, 2],
    )
    assert yoda_perturbation(doc, random.Random(0)) == "Learn patience, you must."


def test_adjective_antonyms_from_a_table_and_only_on_adjectives(nlp):
    doc = _parsed(
        nlp,
        ["A", "good", "film", "with", "a", "good", "end", "."],
        ["DET", "ADJ", "NOUN", "ADP", "DET", "ADJ", "NOUN", "PUNCT"],
        ["det", "amod", "ROOT", "prep", "det", "amod", "pobj", "punct"],
        [2, 2, 2, 2, 6, 6, 3, 2],
        lemmas=["a", "good", "film", "with", "a", "good", "end", "."],
    )
    table = {"good": "bad", "film": "not-an-adjective"}
    assert adjectives_antonyms_switch(doc, random.Random(0), lambda: table) == "A bad film with a bad end."


#: A WordNet 3.0 database in Debian's layout, written by hand: its lines hold what wordnet_adjective_antonyms reads
#: (offset, lexicographer file, synset type, hexadecimal word count, words with lex ids, pointers with their
#: source/target word numbers, gloss), and the index lists each lemma's senses, the most frequent first.
WORDNET_DATA = """  1 This software and database is being provided to you, the LICENSEE, by Princeton University
00000100 00 a 01 good 0 002 ! 00000200 a 0101 & 00000400 a 0000 | having desirable qualities
00000200 00 a 01 bad 0 001 ! 00000100 a 0101 | having undesirable qualities
00000300 00 s 01 good 1 001 & 00000100 a 0000 | a satellite sense of good (listed first in the index)
00000400 00 s 01 fine 0 000 | a satellite with no head sense of its own
00000500 00 a 02 hot 0 torrid 0 002 ! 00000600 a 0201 ! 00000700 a 0101 | of high temperature
00000600 00 a 01 cool 0 001 ! 00000500 a 0102 | the antonym of torrid, word 2 of its synset
00000700 00 a 02 cold 0 frigid 0 001 ! 00000500 a 0101 | of low temperature
"""
WORDNET_INDEX = """  1 This software and database is being provided to you, the LICENSEE, by Princeton University
bad a 1 1 ! 1 0 00000200
cold a 1 1 ! 1 0 00000700
fine a 1 1 & 1 0 00000400
good a 2 2 ! & 2 0 00000300 00000100
hot a 1 1 ! 1 0 00000500
"""


def test_wordnet_antonyms_from_a_database_in_wordnets_layout(tmp_path):
    """The first head-adjective sense of each lemma (a satellite sense listed first is passed over), the first
    antonym pointer from that sense's first word (one from its second word is not), the target word it names;
    a lemma with satellite senses only has none. Debian's own database: the slow test below."""
    (tmp_path / "data.adj").write_text(WORDNET_DATA)
    (tmp_path / "index.adj").write_text(WORDNET_INDEX)
    antonyms = wordnet_adjective_antonyms(str(tmp_path))
    assert antonyms == {"bad": "good", "cold": "hot", "good": "bad", "hot": "cold"}


@pytest.mark.slow
def test_wordnet_antonyms_from_debians_database():
    """On Debian's wordnet-base (CI installs it: ``.ci/run``; elsewhere ``apt-get install wordnet-base`` or
    ``consert download-data --wordnet``), WordNet 3.0's own antonyms."""
    if not (DEBIAN_WORDNET / "data.adj").is_file():
        pytest.skip("Debian's wordnet-base is not installed: apt-get install wordnet-base")
    antonyms = wordnet_adjective_antonyms()
    # WordNet 3.0: good.a.01 <-> bad, hot.a.01 <-> cold, happy.a.01 <-> unhappy
    assert (antonyms["good"], antonyms["hot"], antonyms["happy"]) == ("bad", "cold", "unhappy")


def test_the_blank_pipeline_reports_what_it_cannot_run(nlp):
    needs = missing_components(["random_swap", "yoda_perturbation", "adjectives_antonyms_switch"], nlp)
    assert needs == {"yoda_perturbation": ("parser",), "adjectives_antonyms_switch": ("tagger",)}
    with pytest.raises(ValueError, match="yoda_perturbation"):
        augment_corpus(["A text."], ["yoda_perturbation"], seed=1, nlp=nlp, progress=False)


def test_augment_corpus_draws_one_augmentation_per_text_and_counts_how_often_it_applies(nlp):
    texts = ["He isn't here.", "A dog runs.", "It rained. We left.", "She can't swim."] * 25
    names = ["contraction_expansions", "sentence_reordering"]
    items, rates = augment_corpus(texts, names, seed=7, nlp=nlp, progress=False)
    assert len(items) == 100 and sum(r["drawn"] for r in rates.values()) == 100
    for item in items:
        assert (item.label == len(names)) == (item.augmented == item.text)  # unchanged: "no augmentation"
    # contractions apply to 2 of the 4 texts, reordering to 1 of 4: the counts follow from the draws
    drawn = {
        name: [i.text for i, n in zip(items, _draws(100, 2, 7), strict=True) if names[n] == name] for name in names
    }
    expected_applied = {
        "contraction_expansions": sum(
            t in ("He isn't here.", "She can't swim.") for t in drawn["contraction_expansions"]
        ),
        "sentence_reordering": sum(t == "It rained. We left." for t in drawn["sentence_reordering"]),
    }
    assert {name: rates[name]["applied"] for name in names} == expected_applied
    assert items == augment_corpus(texts, names, seed=7, nlp=nlp, progress=False)[0]  # fixed by the seed


def _draws(n: int, choices: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(choices) for _ in range(n)]
