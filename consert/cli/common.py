"""What several commands do alike: load the encoder their encoder arguments name, read or build a vector
cache, and evaluate a model a command has just exported."""

from __future__ import annotations

import argparse
from pathlib import Path


def load_encoder(args: argparse.Namespace):
    """The encoder ``args.model`` with the options of :func:`~consert.cli.arguments.add_encoder_arguments`."""
    from consert.encode.encoder import SentenceEncoder

    return SentenceEncoder.load(
        args.model, max_length=args.max_length, dtype=args.dtype, device=args.device, engine=args.engine
    )


def load_cache(path, encoder, data, rank_sums: bool = False, poolings=None):
    """The vector cache at ``path``, checked to belong to ``encoder`` and ``data``."""
    from consert.encode.cache import VectorCache, cache_key

    return VectorCache.load(path, cache_key(encoder, data.fingerprint), rank_sums=rank_sums, poolings=poolings)


def encode_cache(encoder, sentences, poolings, data, topk_max: int, progress: bool = True):
    """One pass over ``sentences``: every pooling, plus the top-k statistics when ``topk_max`` > 0."""
    from consert.encode.cache import VectorCache

    collector = None
    if topk_max:
        from baselines.topk import topk_collector

        collector = topk_collector(encoder, data, topk_max)
    return VectorCache.build(encoder, sentences, poolings, data.fingerprint, progress=progress, rank_sums=collector)


def write_run_outputs(output_dir, pooling, data, args, max_length, device, seed, **labels) -> None:
    """What ``train`` and ``sgopt`` write after the export: the training curve (``--curve``) and the
    evaluation (``--evaluate``)."""
    if args.curve:
        from consert.train.curves import write_curve

        print(f"wrote {write_curve(output_dir, args.curve)}")
    if args.evaluate:
        evaluate_export(output_dir, pooling, data, args, max_length, device, seed, **labels)


def evaluate_export(output_dir, pooling, data, args, max_length, device, seed, **labels) -> None:
    """Evaluate a freshly exported model and write the CSV with its training record's key facts."""
    import json

    from consert.encode.encoder import SentenceEncoder
    from consert.evaluate.protocol import evaluate_model, evaluation_sentences, summary_table
    from consert.io import write_csv
    from consert.train.export import TRAINING_RECORD, write_model_card

    record = json.loads((Path(output_dir) / TRAINING_RECORD).read_text())
    encoder = SentenceEncoder.load(
        str(output_dir), max_length=max_length, dtype=args.eval_dtype, device=device, engine=args.engine
    )
    poolings = list(dict.fromkeys([pooling, *(args.save_pooling or [])]))
    cache = encode_cache(encoder, evaluation_sentences(data), poolings, data, args.topk_max, progress=False)
    if args.save_vectors:
        print(f"wrote {cache.save(args.save_vectors)}")
    frame = evaluate_model(
        str(output_dir),
        [pooling],
        data,
        max_length=max_length,
        dtype=args.eval_dtype,
        device=device,
        seed=seed,
        vectors=cache,
        encoder=encoder,
    )
    frame = frame.assign(
        best_step=record["best_step"],
        best_dev_spearman=record["best_dev_spearman"],
        steps_run=record.get("steps_run", ""),
        nli=record.get("nli") or "",
        **labels,
    )
    print(summary_table(frame).to_string(index=False, float_format=lambda v: f"{v:6.2f}"))
    print(f"wrote {write_csv(frame, args.evaluate)}")
    print(f"wrote {write_model_card(output_dir, frame)}")
