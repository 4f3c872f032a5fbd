"""``consert baseline``: evaluate a baseline: pooling, whitening, flow, glove."""

from __future__ import annotations

import argparse

from baselines import BASELINES, baseline_spec
from baselines.flow_settings import FlowSettings
from consert.cli.arguments import add_encoder_arguments, add_repeatable_argument, add_vectors_argument, at_least
from consert.cli.common import load_cache, load_encoder
from consert.encode.pooling import PAPER_POOLING

NAME = "baseline"
HELP = f"evaluate a baseline: {', '.join(BASELINES)}"
#: ``--glove``'s name for the PyPI stand-in, glove.6B 50d (the workflow's ``baselines.glove: null``).
OFFLINE_GLOVE = "offline"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert baseline``."""
    parser.add_argument("name", choices=BASELINES)
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2", help="encoder (not for glove)")
    parser.add_argument("--pooling", default=PAPER_POOLING, metavar="P")
    parser.add_argument(
        "--k", type=whitening_k, default=None, metavar="K", help="whitening: keep k dimensions, or all (the default)"
    )
    parser.add_argument(
        "--fit-on",
        choices=("task", "sts", "nli"),
        default=None,  # the baseline's own default: the first of its BaselineSpec.fit_on
        help="what whitening/flow is fitted on: each task's own pairs (the authors'; default), the 89,192 "
        "STS texts (flow), or NLI sentences (whitening: the --nli-file jsonl files, else SICK-E offline)",
    )
    add_repeatable_argument(
        parser,
        "--nli-file",
        "FILE.jsonl",
        "--fit-on nli: an SNLI/MultiNLI jsonl release file (repeatable; without one, SICK-E stands in)",
    )
    parser.add_argument(
        "--glove",
        type=glove_file,
        default=None,
        metavar="FILE",
        help=f"GloVe text file, or {OFFLINE_GLOVE} (the default: glove.6B 50d from PyPI, a stand-in)",
    )
    parser.add_argument("--output", default=None, metavar="FILE.csv")
    add_vectors_argument(parser)
    parser.add_argument(
        "--flow-config",
        default=None,
        metavar="FLOW.yaml",
        help="flow: its settings as one YAML file (the workflow's results/flow_config.yaml); --flow-KEY overrides",
    )
    for name, setting in FlowSettings.model_fields.items():  # one flag per setting, with the setting's own help
        flag, help_text = f"--flow-{name.replace('_', '-')}", f"flow: {setting.description}"
        if setting.annotation is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        else:
            parse = at_least(1) if setting.annotation is int else float
            parser.add_argument(flag, type=parse, default=None, help=help_text)
    add_encoder_arguments(parser)


def glove_file(text: str) -> str | None:
    """An argparse type: a GloVe text file, or ``offline`` (None: the PyPI stand-in)."""
    return None if text == OFFLINE_GLOVE else text


def whitening_k(text: str) -> int | None:
    """An argparse type: ``all`` (None: every dimension) or an integer of at least 1."""
    return None if text == "all" else at_least(1)(text)


def flow_settings(args: argparse.Namespace) -> FlowSettings:
    """The flow's settings: ``--flow-config``'s file (else the authors' defaults), then each ``--flow-KEY`` flag."""
    settings = FlowSettings.read(args.flow_config) if args.flow_config else FlowSettings()
    flags = {name: getattr(args, f"flow_{name}") for name in FlowSettings.model_fields}
    return settings.replace(**{name: value for name, value in flags.items() if value is not None})


def run(args: argparse.Namespace) -> int:
    """Run ``consert baseline`` on parsed ``args``; return its exit status."""
    from baselines.run import build_baseline, evaluate_baseline, fit_corpora
    from consert.data.nli import SICK_E_LABEL
    from consert.data.senteval import load_senteval
    from consert.evaluate.protocol import summary_table
    from consert.io import write_csv

    spec = baseline_spec(args.name)
    # a wrong flow setting stops before any work; a baseline that takes none ignores the flags
    flow = flow_settings(args) if "flow" in spec.reads else None
    data = load_senteval(args.data)
    encoder = load_encoder(args) if spec.needs_encoder else None
    embedder = build_baseline(
        args.name,
        encoder,
        pooling=args.pooling,
        whitening_k=args.k,
        glove_path=args.glove,
        cache=load_cache(args.vectors, encoder, data) if args.vectors else None,
        flow=flow,
    )
    fit_on = (args.fit_on or spec.fit_on[0]) if spec.fit_on else ""  # a method without parameters fits on nothing
    corpora = fit_corpora(args.name, data, fit_on, args.nli_file)
    label = fit_on
    if fit_on == "nli":  # say which NLI data the fit saw
        label = "nli (snli+mnli: " + ", ".join(args.nli_file) + ")" if args.nli_file else f"nli ({SICK_E_LABEL})"
    frame = evaluate_baseline(embedder, data, corpora, fit_on=label)
    print(f"\n{embedder.name}  ({frame.setting.iloc[0]})")
    print(summary_table(frame).to_string(index=False, float_format=lambda v: f"{v:6.2f}"))
    if args.output:
        print(f"\nwrote {write_csv(frame, args.output)}")
    return 0
