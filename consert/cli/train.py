"""``consert train``: train a mode of ConSERT's loop (``--set mode=NAME``): one of the records of
:mod:`consert.train.modes` (``--list-keys`` names them)."""

from __future__ import annotations

import argparse

from consert.cli.arguments import add_threads_argument, add_training_arguments, at_least
from consert.cli.common import write_run_outputs

NAME = "train"
HELP = "train ConSERT's stages, the contrastive family's methods or BERT-flow's NLI encoder (--list-keys: the modes)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert train``."""
    add_training_arguments(
        parser,
        "training config: a YAML mapping of keys (--list-keys)",
        "override a config key (repeatable), e.g. --set mode=joint --set max_steps=30",
        list_keys_help="print every key with its value for the mode (--set mode=M; default unsup) and its help, "
        "then exit",
    )
    parser.add_argument(
        "--execution-steps",
        type=at_least(1),
        default=None,
        metavar="N",
        help="choose how a step runs (packing, CUDA graphs, compilation, under auto) as for a run of N steps, as a "
        "full run takes them (the box check trains a few hundred steps on a full run's path)",
    )
    add_threads_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Run ``consert train`` on parsed ``args``; return its exit status."""
    from consert.configs import ConfigError
    from consert.data.inputs import missing_message
    from consert.data.senteval import load_senteval
    from consert.train.config import load_train_config
    from consert.train.export import check_export_target
    from consert.train.objectives import check_objective, run_inputs
    from consert.train.trainer import train

    if args.list_keys:
        from consert.configs import parse_overrides
        from consert.train.config import key_help

        mode = parse_overrides(args.set).get("mode", "unsup")
        for key, value, text in key_help(mode):
            print(f"{key:22} {value!s:30} {text}")
        return 0
    config = load_train_config(args.config, args.set)
    check_objective(config)
    inputs = run_inputs(config)
    if any(not item.present for item in inputs):  # every missing input named, before any work
        raise ConfigError(missing_message(inputs))
    for stage in (config.first_stage(),) if config.two_stage and not config.stage1_model else ():
        check_export_target(stage.output_dir, args.overwrite)
    check_export_target(config.output_dir, args.overwrite)
    data = load_senteval(config.data, flag="--set data=DIR")
    result = train(config, data, execution_steps=args.execution_steps)
    from consert.bench.steady_rate import exported_run_rate

    steps_per_s, _ = exported_run_rate(result.output_dir)
    rate = f", {steps_per_s:.3g} steps/s" if steps_per_s else ""
    print(
        f"best STS-B dev Spearman {result.best_dev_spearman:.2f} at step {result.best_step} "
        f"({result.steps} steps run{rate}); model exported to {result.output_dir}"
    )
    rates = result.augmentation_rates
    for name, count in rates.items():
        print(f"augmentation {name}: applied to {count['applied']} of {count['drawn']} texts ({count['rate']:.1%})")
    write_run_outputs(
        result.output_dir,
        config.eval_pooling,
        data,
        args,
        config.evaluation_max_length,
        config.device,
        config.seed,
        mode=config.mode,
        views="+".join(config.views),
        temperature=config.temperature,
        batch_size=config.batch_size,
        n_texts=config.n_texts or "all",
        started_from=config.model,
        augmentation_rates=";".join(f"{name}={count['rate']:.4f}" for name, count in rates.items()),
    )
    return 0
