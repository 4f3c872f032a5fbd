"""The baselines' rows of the recipe card: what each baseline is fitted or trained on, how, and which
aggregate its published numbers used, next to the reference implementation that produced them.

The defaults of :class:`baselines.flow_settings.FlowSettings` and :class:`baselines.sgopt.SgOptConfig` are the
authors' settings; a config value that differs from one is listed in ``differs_from_authors`` with
its reason (``UNEXPLAINED`` when no rule explains it).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from baselines import TABLED, baseline_spec
from baselines.flow_settings import FlowSettings
from baselines.sgopt import SgOptConfig
from consert.configs import Settings
from consert.encode.pooling import PAPER_POOLING
from consert.planner.plan import flow_nli_run
from consert.train.modes import SGOPT
from consert.train.notes import GRAPHED_DROPOUT_NOTE

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig

UNEXPLAINED = "UNEXPLAINED"
#: The GloVe row's mode: no transformer encodes its sentences.
GLOVE_MODE = "Avg. GloVe"

TASK_CORPUS = (
    "one fit per task on that task's scored pairs, both sides, no dedup: STS-B train+dev+test (17,256), "
    "SICK-R train+trial+test (19,854), every scored pair of each STS12-16 year"
)
FLOW_SOURCE = (
    "bohanli/BERT-flow: run_siamese.py (--use_full_for_training, avg-last-2 = layers 1 and 12), "
    "optimization_bert_flow.py, flow/config/config_l3_d3_w32.json"
)
WHITENING_SOURCE = "bojone/BERT-whitening: eng/eval.py (target: per-task kernel), eng/utils.py (first_last_avg)"
#: How ``dtype: auto`` picks a training precision, for the card's precision differences.
MEASURED_PRECISION = (
    "measured on the machine when run: the fastest of bf16, fp16 + gradient scaler and fp32 on a GPU (bf16 and fp32 "
    "where the step runs as CUDA graphs), of bf16 and fp32 on a CPU"
)
#: How every reference evaluates, in fp32 (ConSERT's eval.py, BERT-flow's, BERT-whitening's, SG-BERT's, SentEval's
#: examples).
AUTHORS_TEST_PRECISION = "a freshly loaded model encodes the test sets"
#: How ``dtype: auto`` picks the test sets' precision, and what it is held to.
MEASURED_TEST_PRECISION = (
    "here the encoding's precision and engine are measured on the machine when run: bf16, or fp32 through PyTorch "
    "or ONNX Runtime; every set-level Spearman of each path it picks stays within 0.03 of PyTorch fp32, a test on "
    "the real data: docs, Performance"
)


def fp32_difference(what: str, dtype: str, authors: str, how: str) -> str:
    """The card's difference ``WHAT: DTYPE (authors fp32: AUTHORS; HOW)`` of a precision the authors ran in fp32,
    or "" where ``dtype`` is fp32."""
    return "" if dtype == "fp32" else f"{what}: {dtype} (authors fp32: {authors}; {how})"


def test_precision_difference(dtype: str) -> str:
    """The test sets' encoding precision (the workflow's ``dtype``) against the authors', or "" in fp32."""
    return fp32_difference("test precision", dtype, AUTHORS_TEST_PRECISION, MEASURED_TEST_PRECISION)


GLOVE_SOURCE = (
    "SBERT's Table 1 (Reimers & Gurevych 2019), which ConSERT's row equals: sentence-transformers' "
    "average_word_embeddings_glove.840B.300d (WordEmbeddings.from_text_file, WhitespaceTokenizer, mean pooling)"
)
#: What remains different in the BERT-flow fit, each with its reason (the flow itself is the reference's).
FLOW_DIFFERENCES = (
    "batches: 64 sentences drawn at random (the authors: 32 (a, b) pairs, a and b sides through one flow; the "
    "loss, twice the mean over the 64, is their mean_a + mean_b)",
    "order: torch.randperm with the run's seed (the authors: random.shuffle with seed 1234, then a TF shuffle "
    "buffer of 1,000)",
    "weight decay: applied after the Adam update to the updated weights (transformers.AdamW; theirs adds "
    "0.01 x the pre-update weights to the update: a difference of order lr^2 x 0.01)",
    "STS12-16 corpus: each year's scored pairs stand in for their full.txt, which their code reads but does not "
    "ship; fitted on 3 times, as their full.txt is train, dev and test at once",
    "encoder: Hugging Face PyTorch BERT (the authors: Google's TensorFlow BERT; the same weights)",
)
TOPK_SOURCE = "yym6472/ConSERT analysis_rep_space.py (filter_freq_rank_leq_than: ranks 0..k dropped)"
WMEAN = "wmean (SentEval's subset-size weighted mean; the tables also carry the merged 'all')"
WHITENING_SPLIT_NOTE = (
    "STS-B and SICK-R: the test split's Spearman, what their Table 1 published (eng/eval.py also prints a w-avg "
    "over train, dev and test: not the published number; the co-author's PyTorch port scores the test split "
    "only, and its whitening-256 STS-B, 71.43, is the published value digit for digit); STS12-16: wmean"
)


def _defaults(callable_or_settings: Any) -> dict[str, Any]:
    if isinstance(callable_or_settings, type) and issubclass(callable_or_settings, Settings):
        return {name: f.default for name, f in callable_or_settings.model_fields.items() if not f.is_required()}
    parameters = inspect.signature(callable_or_settings).parameters.values()
    return {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}


def _differences(overrides: dict[str, Any], authors: dict[str, Any], setting: str, reasons: dict[str, str]) -> str:
    short = any(word in setting for word in ("offline", "test"))
    out = []
    for key, value in overrides.items():
        if key in authors and value != authors[key]:
            reason = reasons.get(key) or ("short CPU runs of the offline/test config" if short else UNEXPLAINED)
            out.append(f"{key}: {value} (authors {authors[key]}; {reason})")
    return "; ".join(out)


def baseline_card_rows(config: WorkflowConfig) -> list[dict[str, Any]]:
    """One recipe-card row per baseline fit of a workflow ``config``; each that encodes with a transformer says its
    test precision where it is not the authors' fp32."""
    rows = []
    for size in config.models:
        rows.append(_flow_row(config, size))
        rows.extend(_whitening_rows(config, size))
        rows.extend(_tabled_row(config, size, name) for name in TABLED)
    rows = [*rows, _sgopt_row(config), _glove_row(config), _topk_row()]
    precision = test_precision_difference(config.dtype)
    for row in rows:
        if row["mode"] != GLOVE_MODE:
            row["differs_from_authors"] = "; ".join(filter(None, [row["differs_from_authors"], precision]))
    return rows


def _flow_row(config: WorkflowConfig, size: str) -> dict[str, Any]:
    """BERT-flow's row for the encoder of ``size``, fitted as Table 2 does and on Table 3's BERT-NLI."""
    flow_authors = _defaults(FlowSettings)
    flow = FlowSettings.of_workflow(config).model_dump()
    flow_pooling = config.baselines.flow_pooling
    nli_model = {
        "li": "BERT-flow's own BERT-NLI, trained here by its authors' recipe (run {run}; the reference)",
        "sbert": "ConSERT's SBERT-NLI re-implementation (run {run}; the reference fits on BERT-flow's own BERT-NLI)",
    }[config.baselines.flow_nli.base]
    seed = config.seeds[0]
    flow_base = f"{config.models[size]} (Table 2's BERT-flow rows); Table 3's BERT-flow (NLI) row: " + nli_model.format(
        run=flow_nli_run(config, size, seed).run_id
    )
    return {
        "run": f"baseline-flow-{size}",
        "mode": "BERT-flow",
        "fit_corpus": f"{TASK_CORPUS}; STS12-16 fitted on 3 times (the authors' full.txt is train, dev, test)",
        "pooling": flow_pooling,
        "optimizer": (
            f"AdamWeightDecay (no bias correction), lr {flow['lr']} constant, weight decay "
            f"{flow['weight_decay']} on every flow variable, inside the update (the reference excludes names "
            f"matching LayerNorm|layer_norm|bias; the flow's are b, W, logs), eps 1e-6, clip {flow['max_grad_norm']}, "
            f"{flow['batch_size']} sentences a step, {flow['epochs']} epoch(s)"
        ),
        "method_settings": (
            f"{flow['levels']} levels x depth {flow['depth']}, width {flow['width']}, additive coupling, "
            "reverse permutation, bits per dimension, "
            f"encoder dropout {'on' if flow['encoder_dropout'] else 'off'}"
        ),
        "aggregate": WMEAN,
        "authors_source": FLOW_SOURCE,
        "differs_from_authors": "; ".join(
            filter(
                None,
                [
                    _differences(
                        {**config.baselines.flow, "pooling": flow_pooling},
                        {**flow_authors, "pooling": "mean:1,-1"},
                        config.setting,
                        {"encoder_dropout": "fitted on cached vectors: dropout would re-encode every fitted text"},
                    ),
                    *FLOW_DIFFERENCES,
                ],
            )
        ),
        "notes": "the Glow of bohanli/BERT-flow written from its equations (baselines/flow.py): ActNorm "
        "without data-dependent init (Glorot-uniform b, s; their GlowInitHook is never attached), the "
        "transformed half leaves at each split, bits per dimension. With encoder dropout, a sentence "
        "twice in one batch gets one dropout draw (the batch is encoded once per distinct text). "
        f"Fitted on {flow_base}",
    }


def _whitening_rows(config: WorkflowConfig, size: str) -> list[dict[str, Any]]:
    """BERT-whitening's rows for the encoder of ``size``: one per pooling and k."""
    rows = []
    for pooling in config.baselines.whitening_poolings:
        for k in config.baselines.whitening_k:
            rows.append(
                {
                    "run": f"baseline-whitening-{size}-{pooling}-k{k or 'all'}",
                    "mode": "BERT-whitening",
                    "fit_corpus": TASK_CORPUS,
                    "pooling": pooling,
                    "optimizer": "closed form: mu and W = U diag(1/sqrt(s)) of the covariance's SVD",
                    "method_settings": f"k = {k or 'all'}",
                    "aggregate": WMEAN,
                    "authors_source": WHITENING_SOURCE,
                    "differs_from_authors": ""
                    if pooling == "mean:1,-1"
                    else f"pooling: {pooling} (authors mean:1,-1; ConSERT's pooling, a second row)",
                    "notes": WHITENING_SPLIT_NOTE,
                }
            )
    return rows


#: What a baseline of a table is fitted on, by its record's first ``fit_on`` (never ``nli``: its record refuses it).
FIT_CORPORA = {"task": TASK_CORPUS, "sts": "the 89,192 unlabeled STS texts, once"}


def _tabled_row(config: WorkflowConfig, size: str, name: str) -> dict[str, Any]:
    """The row of a baseline of a table (its record names one) on the encoder of ``size``: its settings, its config
    block's differences from their defaults (a settings class's defaults are its authors'), its class's summary."""
    spec = baseline_spec(name)
    own = spec.settings_class()
    block = config.baselines.own_blocks().get(name, {})
    settings = own.from_dict(block, source=f"baselines.{name}").model_dump() if own else {}
    summary = (inspect.getdoc(spec.resolve()) or "").split("\n\n")[0].replace("\n", " ")
    return {
        "run": f"baseline-{name}-{size}",
        "mode": spec.label,
        "fit_corpus": FIT_CORPORA[spec.fit_on[0]] if spec.fit_on else "",
        "pooling": PAPER_POOLING,  # the workflow's eval_baseline passes it
        "method_settings": ", ".join(f"{key} = {value}" for key, value in settings.items()),
        "aggregate": WMEAN,
        "authors_source": spec.embedder,
        "differs_from_authors": _differences(block, _defaults(own), config.setting, {}) if own else "",
        "notes": summary,
    }


def _sgopt_row(config: WorkflowConfig) -> dict[str, Any]:
    """SG-OPT's row: the authors' training.py defaults against the config's ``baselines.sgopt``."""
    sgopt_authors = _defaults(SgOptConfig)
    sgopt = {**sgopt_authors, **config.baselines.sgopt}
    return {
        "run": "baseline-sgopt",
        "mode": "SG-OPT",
        "fit_corpus": "STS-B train+dev+test, both sides, no dedup (17,256; paper footnote 7)"
        if sgopt["train_texts"] == "stsb"
        else sgopt["train_texts"],
        "pooling": f"cls (views: {sgopt['view_pooling']} pooling of every hidden state)",
        "optimizer": (
            f"AdamW betas {tuple(sgopt['betas'])}, lr {sgopt['lr']}, weight decay {sgopt['weight_decay']}, "
            f"warm-up {sgopt['warmup_ratio']}, batch {sgopt['batch_size']}, {sgopt['epochs']} epoch(s)"
        ),
        "method_settings": (
            f"tau {sgopt['temperature']}, lambda {sgopt['regularization']}, head normal(0, 0.02) + zero bias, "
            f"guide dropout {'on' if sgopt['guide_dropout'] else 'off'}, patience {sgopt['patience']} "
            f"(dev declines, never reset), result: {sgopt['final_state']} state"
        ),
        "aggregate": "unknown for STS12-16 (SG-BERT released no STS12-16 evaluation); STS-B/SICK-R test split",
        "authors_source": SGOPT.recipe["source"],
        "differs_from_authors": "; ".join(
            difference
            for difference in (
                _differences(  # its precision is compared below, against the authors' fp32
                    {key: value for key, value in config.baselines.sgopt.items() if key != "dtype"},
                    sgopt_authors,
                    config.setting,
                    {"view_pooling": "the paper's text says max; the authors' code ran mean"},
                ),
                _precision_difference(sgopt["dtype"]),
            )
            if difference
        ),
        "notes": "the paper's text says max pooling (the code's default mean ran, and is followed); its Table 8 "
        "lists 'early stopping endurance 10', which the code counts as dev scores below the previous one, "
        "never reset, and reports the state training stopped in (it saves the best dev model but does not "
        "evaluate it). Published numbers: the mean of 8 runs, seeds 1, 2, 3, 4, 1234, 2345, 3456, 7890 (Table "
        f"8); this config runs seeds {', '.join(map(str, config.sgopt_seeds))}; CUDA graphs: {GRAPHED_DROPOUT_NOTE}",
    }


def _precision_difference(dtype: str) -> str:
    """SG-OPT's precision against the authors' fp32 (modules.py's fit: use_amp=False), with fp32 similarities."""
    how = f"{MEASURED_PRECISION}; the similarities stay fp32 under autocast"
    return fp32_difference("precision", dtype, "modules.py's fit runs without AMP", how)


def _glove_row(config: WorkflowConfig) -> dict[str, Any]:
    """Avg. GloVe's row: SBERT's pipeline, with the stand-in's vectors where the config names none."""
    glove = config.baselines.glove
    return {
        "run": "baseline-glove",
        "mode": GLOVE_MODE,
        "fit_corpus": "",
        "pooling": "mean of word vectors",
        "method_settings": (
            "sentence-transformers' WhitespaceTokenizer with its defaults: stop words (318 English words and "
            "the punctuation tokens) dropped, case kept, each token as is, punctuation-stripped, then "
            "lowercased; unknown tokens dropped; from_text_file's parsing (a line of another dimension skipped)"
        ),
        "aggregate": "all (SBERT's numbers)",
        "authors_source": GLOVE_SOURCE,
        "differs_from_authors": ""
        if glove
        else "vectors: glove.6B 50d (authors glove.840B.300d; the offline stand-in)",
        "notes": "the published model's whitespacetokenizer_config.json could not be read offline: the "
        "library's defaults, which SBERT's example builds the model with, are used",
    }


def _topk_row() -> dict[str, Any]:
    """The top-k analysis (Figure 4): no fit, the authors' script's masking."""
    return {
        "run": "analysis-topk",
        "mode": "Figure 4 top-k",
        "fit_corpus": "token frequencies of the STS-B test split (both sides)",
        "pooling": "mean:-2,-1 over the tokens kept",
        "method_settings": "k = tokens removed; authors_k = k - 1 (their script drops ranks 0..k)",
        "aggregate": "all",
        "authors_source": TOPK_SOURCE,
        "differs_from_authors": "",
    }
