"""``consert baseline``: evaluate a baseline: pooling, whitening, flow, glove."""

from __future__ import annotations

import argparse

from baselines import BASELINES, BaselineSpec, baseline_spec
from baselines.flow_settings import FlowSettings
from baselines.glove import GloveSettings
from baselines.whitening import WhiteningSettings
from consert.cli.arguments import add_encoder_arguments, add_repeatable_argument, add_vectors_argument, at_least
from consert.cli.common import load_cache, load_encoder
from consert.configs import ConfigError, Settings, keys_epilog, read_settings
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
        default=None,
        metavar="FILE",
        help=f"GloVe text file, or {OFFLINE_GLOVE} (the default: glove.6B 50d from PyPI, a stand-in)",
    )
    parser.add_argument("--output", default=None, metavar="FILE.csv")
    add_vectors_argument(parser)
    parser.add_argument(
        "--settings",
        "--flow-config",
        dest="settings_file",
        default=None,
        metavar="FILE.yaml",
        help="the baseline's own settings as one YAML file (flow: the workflow's results/flow_config.yaml); "
        "--set and --flow-KEY override it",
    )
    add_repeatable_argument(
        parser, "--set", "KEY=VALUE", "one of the baseline's own settings (repeatable; --list-keys lists them)"
    )
    parser.add_argument(
        "--list-keys", action="store_true", help="print the baseline's own settings with their defaults and help"
    )
    for name, setting in FlowSettings.model_fields.items():  # one flag per setting, with the setting's own help
        flag, help_text = f"--flow-{name.replace('_', '-')}", f"flow: {setting.description}"
        if setting.annotation is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        else:
            parse = at_least(1) if setting.annotation is int else float
            parser.add_argument(flag, type=parse, default=None, help=help_text)
    add_encoder_arguments(parser)


#: ``--k``'s word for every dimension (whitening's ``k: null``).
ALL_DIMENSIONS = "all"


def whitening_k(text: str) -> int | str:
    """An argparse type: ``all`` (every dimension) or an integer of at least 1."""
    return ALL_DIMENSIONS if text == ALL_DIMENSIONS else at_least(1)(text)


def setting_flags(args: argparse.Namespace) -> list[tuple[type[Settings], str, str, object]]:
    """Each flag given that sets one baseline's setting, as ``(its settings class, key, flag, value)``: ``--k``
    (whitening's k; ``all``: null), ``--glove`` (GloVe's file; ``offline``: null, the stand-in) and each
    ``--flow-KEY``."""
    given: list[tuple[type[Settings], str, str, object]] = []
    if args.k is not None:
        given.append((WhiteningSettings, "k", "--k", None if args.k == ALL_DIMENSIONS else args.k))
    if args.glove is not None:
        given.append((GloveSettings, "path", "--glove", None if args.glove == OFFLINE_GLOVE else args.glove))
    for name in FlowSettings.model_fields:
        if getattr(args, f"flow_{name}") is not None:
            given.append((FlowSettings, name, f"--flow-{name.replace('_', '-')}", getattr(args, f"flow_{name}")))
    return given


def own_settings(spec: BaselineSpec, args: argparse.Namespace) -> Settings | None:
    """The baseline's own settings (its record's class; None where it has none): ``--settings``' file (else the
    class's defaults), then each ``--set KEY=VALUE``, then each flag of one of its settings (:func:`setting_flags`).
    A file, ``--set`` or a flag given to a baseline that does not take it is a one-line :class:`ConfigError`."""
    own = spec.settings_class()
    if own is None and (args.settings_file or args.set):
        raise ConfigError(f"baseline {spec.name}: takes no settings of its own (--settings, --set)")
    flags = setting_flags(args)
    for owner, _, flag, _ in flags:
        if owner is not own:
            raise ConfigError(f"baseline {spec.name}: {flag} is a setting of another baseline")
    if own is None:
        return None
    settings, _ = read_settings(own, args.settings_file, args.set)
    return settings.replace(**{key: value for _, key, _, value in flags}) if flags else settings


def run(args: argparse.Namespace) -> int:
    """Run ``consert baseline`` on parsed ``args``; return its exit status."""
    from baselines.run import build_baseline, evaluate_baseline, fit_corpora
    from consert.data.nli import SICK_E_LABEL
    from consert.data.senteval import load_senteval
    from consert.evaluate.protocol import summary_table
    from consert.io import write_csv

    spec = baseline_spec(args.name)
    if args.list_keys:
        own = spec.settings_class()
        where = "--set KEY=VALUE" + (f"; a workflow config's baselines.{spec.name}" if spec.table else "")
        print(keys_epilog(own, f"{spec.name}'s settings ({where})") if own else f"{spec.name}: no settings of its own")
        return 0
    settings = own_settings(spec, args)  # a wrong setting stops before any work
    data = load_senteval(args.data)
    encoder = load_encoder(args) if spec.needs_encoder else None
    embedder = build_baseline(
        args.name,
        encoder,
        pooling=args.pooling,
        cache=load_cache(args.vectors, encoder, data) if args.vectors else None,
        settings=settings,
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
