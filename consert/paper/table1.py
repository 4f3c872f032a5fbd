"""The paper's Table 1: sample counts per split and unlabeled-text counts of the seven STS sets."""

from __future__ import annotations

import pandas as pd

from consert.data.senteval import DATASETS, TASKS, SentEvalData


def dataset_statistics(data: SentEvalData) -> pd.DataFrame:
    """Table 1 as a frame laid out like ``published/consert_table1_datasets.csv``.

    STS12-16 have only test pairs (scored pairs); unlabeled texts count every input sentence,
    unscored pairs included, without dedup. ``Total`` is given for the unlabeled texts only.
    """
    counts: dict[str, dict[str, int]] = {}
    for name in DATASETS:
        sts = data.sets[name]
        dev = TASKS[name].dev_split  # a set with a dev split has train, dev and test groups
        if dev is not None:
            train, valid, test = (len(sts.groups[s]) for s in ("train", dev, "test"))
        else:
            train, valid, test = 0, 0, sum(len(p) for p in sts.eval_groups.values())
        counts[name] = {
            "train_samples": train,
            "valid_samples": valid,
            "test_samples": test,
            "unlabeled_texts": len(sts.texts),
        }
    frame = pd.DataFrame(counts).astype("Int64")
    frame["Total"] = pd.array([pd.NA, pd.NA, pd.NA, frame.loc["unlabeled_texts"].sum()], dtype="Int64")
    return frame.rename_axis("statistic").reset_index()
