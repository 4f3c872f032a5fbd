"""AugCSE's sentence-level augmentations: the rule-based ones of the authors' STS list, written anew.

AugCSE (Tang et al. 2022; PootieT/AugCSE ``experiments/run_train_exp.py``) draws one augmentation per
training sentence from a list of twelve NL-Augmenter transformations. The ones that need no neural
model are here, each a function of a spaCy ``Doc`` and a seeded ``random.Random`` that returns the
augmented text (the original text when the rule does not apply). spaCy's blank English pipeline
(tokenizer + rule-based sentencizer) is enough for the first five; the parser-based ones need a
spaCy model with a tagger and a dependency parser (``en_core_web_sm``, as the authors), which is not
installable offline here (no spaCy 3 English model on PyPI or in Debian): with only the blank
pipeline they are reported unavailable, never silently skipped. Their logic is tested on hand-built
parsed ``Doc`` objects. ``LEFT_OUT`` lists the authors' augmentations not implemented, with why.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, partial

from consert.data.inputs import ExternalInput, find_wordnet, spacy_pipeline_input, wordnet_input

#: The authors' STS list, in their order (the discriminator's class index follows a run's own list).
AUTHORS_STS_LIST = (
    "ContractionExpansions",
    "DiverseParaphrase",
    "Casual2Formal",
    "SentenceAuxiliaryNegationRemoval",
    "TenseTransformation",
    "DiscourseMarkerSubstitution",
    "SentenceSubjectObjectSwitch",
    "RandomSwap",
    "CityNamesTransformation",
    "SentenceAdjectivesAntonymsSwitch",
    "YodaPerturbation",
    "SentenceReordering",
)

#: The authors' augmentations that are not implemented, and why.
LEFT_OUT = {
    "DiverseParaphrase": "back-translation with FSMT wmt19 en-de/de-en and DiPS selection: neural models from "
    "the Hugging Face hub, not installable offline",
    "Casual2Formal": "T5 style transfer (prithivida/informal_to_formal_styletransfer) with a BART adequacy "
    "scorer: neural models from the Hugging Face hub, not installable offline",
    "TenseTransformation": "needs pattern.en's verb conjugation (a git fork; pattern is not installable for "
    "Python 3.11 from PyPI) and a spaCy tagger",
    "CityNamesTransformation": "needs spaCy NER and NL-Augmenter's city gazetteers (Eng_Pop.txt, Eng_Scarce.txt), "
    "which are not packaged on PyPI or in Debian",
}

#: Negation-bearing auxiliaries whose "not"/"n't" is dropped (NL-Augmenter's auxiliary negation removal).
NEGATED_AUXILIARIES = frozenset(
    "am are can could had has have is may might must shall should was were will would".split()
)

#: Contractions and their expansions (ours; the authors use checklist's table of about 90).
CONTRACTIONS = {
    "aren't": "are not",
    "can't": "cannot",
    "couldn't": "could not",
    "didn't": "did not",
    "doesn't": "does not",
    "don't": "do not",
    "hadn't": "had not",
    "hasn't": "has not",
    "haven't": "have not",
    "he's": "he is",
    "he'll": "he will",
    "he'd": "he would",
    "i'm": "i am",
    "i've": "i have",
    "i'll": "i will",
    "i'd": "i would",
    "isn't": "is not",
    "it's": "it is",
    "it'll": "it will",
    "let's": "let us",
    "mustn't": "must not",
    "shouldn't": "should not",
    "she's": "she is",
    "she'll": "she will",
    "she'd": "she would",
    "that's": "that is",
    "there's": "there is",
    "they're": "they are",
    "they've": "they have",
    "they'll": "they will",
    "they'd": "they would",
    "wasn't": "was not",
    "we're": "we are",
    "we've": "we have",
    "we'll": "we will",
    "weren't": "were not",
    "what's": "what is",
    "won't": "will not",
    "wouldn't": "would not",
    "you're": "you are",
    "you've": "you have",
    "you'll": "you will",
    "you'd": "you would",
}

#: Single-word discourse markers grouped by PDTB sense (ours; the authors use NL-Augmenter's table).
#: Words that are often not markers ("as", "next", "still", "while", "since") or would flip the meaning
#: ("if" -> "unless") are left out.
DISCOURSE_MARKERS = {
    "contrast": ("however", "but", "yet", "nevertheless", "nonetheless"),
    "concession": ("although", "though", "whereas"),
    "result": ("therefore", "thus", "hence", "consequently", "accordingly"),
    "addition": ("also", "moreover", "furthermore", "additionally", "besides"),
    "succession": ("afterwards", "subsequently", "thereafter"),
    "synchrony": ("meanwhile", "simultaneously"),
    "instantiation": ("specifically", "notably"),
    "alternative": ("alternatively", "instead", "otherwise"),
}
_MARKER_SENSE = {marker: sense for sense, markers in DISCOURSE_MARKERS.items() for marker in markers}


def _with_case_of(word: str, model: str) -> str:
    """``word`` capitalised like ``model``'s first letter."""
    return word[:1].upper() + word[1:] if model[:1].isupper() else word


def _render(tokens, texts: Sequence[str] | None = None) -> str:
    """Tokens joined with their own trailing whitespace (``texts`` replaces their text)."""
    texts = texts if texts is not None else [token.text for token in tokens]
    return "".join(text + token.whitespace_ for token, text in zip(tokens, texts, strict=True)).strip()


# ---- augmentations that need only a tokenizer and the sentencizer --------------------------------


def contraction_expansions(doc, rng: random.Random) -> str:
    """Expand every contraction (``isn't`` -> ``is not``); without one, contract expanded forms instead."""
    text = doc.text
    expanded = re.sub(
        r"\b(" + "|".join(re.escape(c) for c in CONTRACTIONS) + r")\b",
        lambda m: _with_case_of(CONTRACTIONS[m.group(0).lower()], m.group(0)),
        text,
        flags=re.IGNORECASE,
    )
    if expanded != text:
        return expanded
    inverse = {expansion: contraction for contraction, expansion in CONTRACTIONS.items() if expansion != "cannot"}
    return re.sub(
        r"\b(" + "|".join(re.escape(e) for e in inverse) + r")\b",
        lambda m: _with_case_of(inverse[m.group(0).lower()], m.group(0)),
        text,
        flags=re.IGNORECASE,
    )


def random_swap(doc, rng: random.Random, ratio: float = 0.1, most: int = 30) -> str:
    """Swap ``ceil(ratio * n)`` (1 to ``most``) randomly chosen tokens with a neighbour, as nlpaug's
    ``RandomWordAug(action="swap", aug_p=0.1)`` that the authors use; punctuation counts as a token."""
    texts = [token.text for token in doc]
    if len(texts) < 2:
        return doc.text
    count = min(most, max(1, math.ceil(len(texts) * ratio)))
    for position in rng.sample(range(len(texts)), count):
        if position == 0:
            neighbour = 1
        elif position == len(texts) - 1:
            neighbour = position - 1
        else:
            neighbour = position + rng.choice((-1, 1))
        texts[position], texts[neighbour] = texts[neighbour], texts[position]
    return doc.text if texts == [token.text for token in doc] else " ".join(texts)


#: The auxiliary left when "n't" is dropped from a contraction spaCy splits irregularly (can't -> ca + n't).
CONTRACTED_AUXILIARIES = {"ca": "can", "wo": "will", "sha": "shall"}


def auxiliary_negation_removal(doc, rng: random.Random) -> str:
    """Drop "not"/"n't" after a negatable auxiliary (``is not`` -> ``is``, ``can't`` -> ``can``) and "do not"
    altogether; like the authors' rule, "does"/"did" are left alone."""
    drop: set[int] = set()
    for token in doc:
        if token.i == 0 or token.lower_ not in ("not", "n't"):
            continue
        previous = doc[token.i - 1].lower_
        if previous in NEGATED_AUXILIARIES or (token.lower_ == "n't" and previous in CONTRACTED_AUXILIARIES):
            drop.add(token.i)
        elif previous == "do":
            drop |= {token.i - 1, token.i}
    if not drop:
        return doc.text
    words = []
    for token in doc:
        if token.i in drop:
            continue
        spelled = CONTRACTED_AUXILIARIES.get(token.lower_) if token.i + 1 in drop else None
        words.append(_with_case_of(spelled, token.text) if spelled else token.text)
    return _join(words)


def discourse_marker_substitution(doc, rng: random.Random) -> str:
    """Replace each single-word discourse marker by another of the same sense, keeping its case."""
    texts = []
    changed = False
    for token in doc:
        sense = _MARKER_SENSE.get(token.lower_)
        if sense is None:
            texts.append(token.text)
            continue
        others = [m for m in DISCOURSE_MARKERS[sense] if m != token.lower_]
        if not others:
            texts.append(token.text)
            continue
        choice = rng.choice(others)
        texts.append(_with_case_of(choice, token.text))
        changed = True
    return _render(doc, texts) if changed else doc.text


def sentence_reordering(doc, rng: random.Random) -> str:
    """Shuffle the order of the text's sentences (a single sentence is left as it is)."""
    sentences = [span.text.strip() for span in doc.sents]
    if len(sentences) < 2:
        return doc.text
    order = list(range(len(sentences)))
    while order == sorted(order):
        rng.shuffle(order)
    return " ".join(sentences[i] for i in order)


# ---- augmentations that need a tagger and a dependency parser --------------------------------------


def _join(words: Sequence[str]) -> str:
    """Words joined by spaces, with no space before punctuation and clitics (``n't``, ``'s``)."""
    text = re.sub(r" (?=[,.;:?!]|n't\b|'(?:s|re|ve|ll|d|m)\b)", "", " ".join(w for w in words if w))
    return text[:1].upper() + text[1:]


def _lowered(token) -> str:
    """A token's text in sentence-medial case (proper nouns and "I" keep theirs)."""
    return token.text if token.pos_ == "PROPN" or token.text == "I" else token.text.lower()


def subject_object_switch(doc, rng: random.Random) -> str:
    """Swap the subject phrase nearest before the first sentence's root with the object phrase nearest after it."""
    sentence = next(iter(doc.sents))
    root = sentence.root
    chunks = [
        (token.left_edge.i, token.right_edge.i + 1)
        for token in sentence
        if ("subj" in token.dep_ or "obj" in token.dep_) and token.head.i == root.i
    ]
    before = [c for c in chunks if c[1] <= root.i]
    after = [c for c in chunks if c[0] > root.i]
    if not before or not after:
        return doc.text
    (s_start, s_end), (o_start, o_end) = max(before), min(after)
    words = [_lowered(t) if t.i == 0 else t.text for t in doc]
    order = [*range(s_start), *range(o_start, o_end), *range(s_end, o_start), *range(s_start, s_end)]
    return _join([words[i] for i in order + list(range(o_end, len(doc)))])


def yoda_perturbation(doc, rng: random.Random) -> str:
    """Yoda speech: in each clause (split at coordinating conjunctions and , . ; ? !), the words after
    its first root or auxiliary move in front, followed by a comma and the clause's head part."""
    clauses: list[list] = [[]]
    boundaries: list[str] = []
    for token in doc:
        if token.dep_ == "cc" or token.text in (",", ".", ";", "?", "!"):
            boundaries.append(token.text)
            clauses.append([])
        else:
            clauses[-1].append(token)
    pieces = []
    changed = False
    for index, clause in enumerate(clauses):
        pivot = next((i for i, t in enumerate(clause) if t.dep_ in ("ROOT", "aux")), None)
        if pivot is None or pivot == len(clause) - 1:
            words = [t.text for t in clause]
        else:
            tail, head = clause[pivot + 1 :], clause[: pivot + 1]
            words = [t.text for t in tail] + [","] + [_lowered(t) for t in head]
            changed = True
        if words:
            pieces.append(" ".join(words))
        if index < len(boundaries):
            pieces.append(boundaries[index])
    if not changed:
        return doc.text
    return _join(pieces).replace(",,", ",")


@cache
def wordnet_adjective_antonyms(root: str | None = None) -> dict[str, str]:
    """``{adjective: antonym}`` from WordNet 3.0's database files (``index.adj``, ``data.adj``) in ``root`` (a
    database folder or an NLTK data folder; ``None``: the first found, :func:`consert.data.inputs.find_wordnet`): the
    first head-adjective sense of the lemma, the first antonym of that sense's first word (as the authors)."""
    directory = find_wordnet(root)
    if directory is None:
        raise FileNotFoundError(f"WordNet 3.0: {wordnet_input(root).line()}")
    index_file, data_file = directory / "index.adj", directory / "data.adj"
    synsets: dict[str, tuple[str, list[str], list[tuple[str, int]]]] = {}
    for line in data_file.read_text(encoding="utf-8").splitlines():
        if line.startswith(" "):
            continue
        fields = line.split(" | ")[0].split()
        offset, kind, count = fields[0], fields[2], int(fields[3], 16)
        words = [fields[4 + 2 * i].split("(")[0].lower() for i in range(count)]
        position = 4 + 2 * count
        pointers = []
        for i in range(int(fields[position])):
            symbol, target, _, source_target = fields[position + 1 + 4 * i : position + 5 + 4 * i]
            if symbol == "!" and int(source_target[:2], 16) == 1:
                pointers.append((target, int(source_target[2:], 16)))
        synsets[offset] = (kind, words, pointers)
    antonyms: dict[str, str] = {}
    for line in index_file.read_text(encoding="utf-8").splitlines():
        if line.startswith(" "):
            continue
        fields = line.split()
        lemma, sense_count = fields[0], int(fields[2])
        heads = [o for o in fields[-sense_count:] if synsets.get(o, ("s",))[0] == "a"]
        if not heads:
            continue
        _, _, pointers = synsets[heads[0]]
        if pointers:
            target, word = pointers[0]
            antonyms[lemma] = synsets[target][1][word - 1].replace("_", " ")
    return antonyms


def adjectives_antonyms_switch(doc, rng: random.Random, antonyms: Callable[[], dict[str, str]] | None = None) -> str:
    """Replace every adjective that has a WordNet antonym by it (``good`` -> ``bad``)."""
    table = (antonyms or wordnet_adjective_antonyms)()
    texts = []
    changed = False
    for token in doc:
        antonym = table.get(token.lemma_.lower() or token.lower_) if token.pos_ == "ADJ" else None
        texts.append(_with_case_of(antonym, token.text) if antonym else token.text)
        changed |= bool(antonym)
    return _render(doc, texts) if changed else doc.text


@dataclass(frozen=True)
class TextAugmentation:
    """One augmentation: its function, what it needs from the spaCy pipeline, and the authors' name."""

    name: str
    apply: Callable
    needs: tuple[str, ...]  # pipeline components: "parser" and/or "tagger" (blank + sentencizer: nothing)
    authors_name: str
    reads_wordnet: bool = False  # its ``apply`` takes ``antonyms``, a table read from WordNet 3.0


TEXT_AUGMENTATIONS = {
    a.name: a
    for a in (
        TextAugmentation("contraction_expansions", contraction_expansions, (), "ContractionExpansions"),
        TextAugmentation(
            "auxiliary_negation_removal", auxiliary_negation_removal, (), "SentenceAuxiliaryNegationRemoval"
        ),
        TextAugmentation(
            "discourse_marker_substitution", discourse_marker_substitution, (), "DiscourseMarkerSubstitution"
        ),
        TextAugmentation("subject_object_switch", subject_object_switch, ("parser",), "SentenceSubjectObjectSwitch"),
        TextAugmentation("random_swap", random_swap, (), "RandomSwap"),
        TextAugmentation(
            "adjectives_antonyms_switch",
            adjectives_antonyms_switch,
            ("tagger",),
            "SentenceAdjectivesAntonymsSwitch",
            reads_wordnet=True,
        ),
        TextAugmentation("yoda_perturbation", yoda_perturbation, ("parser",), "YodaPerturbation"),
        TextAugmentation("sentence_reordering", sentence_reordering, (), "SentenceReordering"),
    )
}
#: The implemented augmentations of the authors' list that need no parser (the offline run's list).
WITHOUT_PARSER = tuple(name for name, a in TEXT_AUGMENTATIONS.items() if not a.needs)


def check_text_augmentations(names: Sequence[str]) -> None:
    """Raise ValueError unless ``names`` is a non-empty list of distinct implemented augmentations."""
    if not names:
        raise ValueError("AugCSE needs at least one text augmentation")
    unknown = [n for n in names if n not in TEXT_AUGMENTATIONS]
    if unknown:
        left_out = [n for n in unknown if n in LEFT_OUT]
        hint = f" ({', '.join(f'{n}: {LEFT_OUT[n]}' for n in left_out)})" if left_out else ""
        raise ValueError(f"unknown augmentation(s) {unknown}{hint}; implemented: {sorted(TEXT_AUGMENTATIONS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"augmentations listed twice: {list(names)}")


def spacy_pipeline(model: str | None = None):
    """``spacy.load(model)`` (a model with tagger and parser), or the blank English tokenizer plus
    the rule-based sentencizer when ``model`` is None."""
    import spacy

    if model is None:
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        return nlp
    try:
        return spacy.load(model)
    except OSError as err:
        raise OSError(
            f"spaCy model {model!r} is not installed ({err}); `python -m spacy download {model}` fetches it, "
            "or leave the parser-based augmentations out of text_augmentations"
        ) from None


def augmentation_inputs(
    names: Sequence[str], spacy_model: str | None, wordnet_folder: str | None
) -> list[ExternalInput]:
    """What the augmentations ``names`` read beyond the texts: the spaCy pipeline where one needs a parser or
    tagger, WordNet 3.0 where one reads it."""
    augmentations = [TEXT_AUGMENTATIONS[name] for name in names if name in TEXT_AUGMENTATIONS]
    needed = [spacy_pipeline_input(spacy_model)] if spacy_model and any(a.needs for a in augmentations) else []
    return needed + ([wordnet_input(wordnet_folder)] if any(a.reads_wordnet for a in augmentations) else [])


def missing_components(names: Sequence[str], nlp) -> dict[str, tuple[str, ...]]:
    """``{augmentation: pipeline components it needs that nlp lacks}`` for those that cannot run."""
    have = set(nlp.pipe_names) | ({"tagger"} if {"morphologizer", "tagger"} & set(nlp.pipe_names) else set())
    return {n: missing for n in names if (missing := tuple(c for c in TEXT_AUGMENTATIONS[n].needs if c not in have))}


@dataclass
class AugmentedText:
    """A training text, its augmented form, and the augmentation's class (``len(names)``: unchanged)."""

    text: str
    augmented: str
    label: int


def augment_corpus(
    texts: Sequence[str],
    names: Sequence[str],
    seed: int,
    nlp=None,
    progress: bool = True,
    wordnet_folder: str | None = None,
) -> tuple[list[AugmentedText], dict[str, dict[str, float]]]:
    """One augmentation per text, drawn uniformly from ``names`` with ``seed`` and fixed for the run (as
    the authors), applied; a text the rule leaves unchanged (or empties) gets the "no augmentation"
    class ``len(names)``. Returns the items and per augmentation how often it was drawn and applied.
    ``wordnet_folder``: WordNet 3.0's, for the antonym switch (``None``: the first found)."""
    from tqdm.auto import tqdm

    check_text_augmentations(names)
    nlp = nlp if nlp is not None else spacy_pipeline()
    missing = missing_components(names, nlp)
    if missing:
        raise ValueError(
            "these augmentations need spaCy components the pipeline lacks: "
            + ", ".join(f"{n} ({'+'.join(c)})" for n, c in missing.items())
            + "; configure a spaCy model with a parser (augcse spacy_model) or leave them out"
        )
    functions = {
        name: partial(a.apply, antonyms=partial(wordnet_adjective_antonyms, wordnet_folder))
        if a.reads_wordnet
        else a.apply
        for name, a in ((name, TEXT_AUGMENTATIONS[name]) for name in names)
    }
    if any(TEXT_AUGMENTATIONS[name].reads_wordnet for name in names):
        wordnet_adjective_antonyms(wordnet_folder)  # read before the corpus is augmented: a missing one fails now
    rng = random.Random(seed)
    choices = [rng.randrange(len(names)) for _ in texts]
    counts = {name: {"drawn": 0, "applied": 0} for name in names}
    items = []
    docs = nlp.pipe(texts, batch_size=256)
    for text, choice, doc in tqdm(
        zip(texts, choices, docs, strict=True), total=len(texts), desc="augment", disable=not progress
    ):
        name = names[choice]
        augmented = functions[name](doc, rng).strip()
        changed = bool(augmented) and augmented != text
        counts[name]["drawn"] += 1
        counts[name]["applied"] += changed
        items.append(AugmentedText(text, augmented or text, choice if changed else len(names)))
    rates = {name: {**c, "rate": c["applied"] / c["drawn"] if c["drawn"] else 0.0} for name, c in counts.items()}
    return items, rates
