"""``consert sgopt``: train the SG-OPT baseline (Kim et al., 2021)."""

from __future__ import annotations

import argparse

from consert.cli.arguments import add_training_arguments
from consert.cli.common import write_run_outputs

NAME = "sgopt"
HELP = "train the SG-OPT baseline (Kim et al., 2021)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``consert sgopt``; its ``--help`` lists the keys of ``--config`` and ``--set``."""
    from baselines.sgopt import SgOptConfig
    from consert.configs import keys_epilog

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = keys_epilog(SgOptConfig, "keys of --config FILE.yaml and --set KEY=VALUE (data: the STS folder)")
    add_training_arguments(parser, "SG-OPT's settings: the keys below", "e.g. --set model=bert-base-uncased")


def run(args: argparse.Namespace) -> int:
    """Run ``consert sgopt`` on parsed ``args``; return its exit status."""
    from baselines.sgopt import SgOptConfig, train_sgopt
    from consert.configs import read_settings
    from consert.data.senteval import load_senteval
    from consert.train.export import check_export_target

    config, taken = read_settings(SgOptConfig, args.config, args.set, pop=("data",))
    data_dir = taken.get("data")
    check_export_target(config.output_dir, args.overwrite)
    data = load_senteval(data_dir, flag="--set data=DIR")
    result = train_sgopt(config, data)
    print(
        f"best STS-B dev Spearman {result.loop.best_dev:.2f} at step {result.loop.best_step}; "
        f"model exported to {result.output_dir} (evaluate with --pooling cls)"
    )
    write_run_outputs(
        result.output_dir,
        "cls",
        data,
        args,
        config.max_length,
        config.device,
        config.seed,
        method="sg-opt",
        started_from=config.model,
    )
    return 0
