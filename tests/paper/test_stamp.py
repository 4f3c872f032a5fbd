"""A figure names when, on which hardware and by which commit its numbers were computed, and when it was drawn:
the stamp read from hand-made result files, and where the figure puts it (below every other text, and in the
PNG's and PDF's metadata)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from PIL import Image

from consert.paper import figures
from consert.paper.stamp import figure_stamp
from tests.paper.text_extents import drawn_texts

SHA_A, SHA_B = "a" * 40, "b" * 40
CPU, GPU = "Some CPU; torch capability AVX2; bf16 units: none; 2 threads", "NVIDIA H100 (CUDA 12.8)"


def _result(path, rows: list[tuple[str, str, str]]) -> str:
    frame = pd.DataFrame(rows, columns=["hardware", "harness_commit", "timestamp"]).assign(spearman=70.0)
    frame.to_csv(path, index=False)
    return str(path)


def test_the_stamp_names_every_seeds_hardware_commit_and_day_and_counts_files_that_record_none(tmp_path):
    # seed 1 on the GPU on the 1st, seed 2 (the file's second row) on a CPU on the 3rd by a dirty checkout:
    # a stamp read from first rows only, or from one file, would miss the CPU, the 3rd and the second commit
    seeds = _result(
        tmp_path / "seeds.csv",
        [(GPU, SHA_A, "2026-11-01T09:00:00+00:00"), (CPU, SHA_B + "-dirty", "2026-11-03T10:00:00+00:00")],
    )
    other = _result(tmp_path / "other.csv", [(GPU, SHA_A, "2026-11-02T23:59:59+00:00")])
    pd.DataFrame({"k": [0, 1], "spearman": [60.0, 61.0]}).to_csv(tmp_path / "bare.csv", index=False)
    stamp = figure_stamp([seeds, other, tmp_path / "bare.csv", seeds], "2026-11-04T08:30:12+00:00", SHA_B)
    lines = stamp.replace("\n    ", " ").splitlines()
    assert lines == [
        f"numbers computed 2026-11-01 to 2026-11-03 by harness aaaaaaaaaaaa, bbbbbbbbbbbb-dirty on {GPU} + {CPU}",
        "1 of its 3 input files record no hardware, commit or date",  # the repeated file counted once
        "drawn 2026-11-04 08:30 UTC by harness bbbbbbbbbbbb",
    ]


def test_a_stamp_of_one_day_one_machine_and_a_long_line_wrapped(tmp_path):
    machine = "Intel(R) Xeon(R) Processor; torch capability AVX512; bf16 units: AVX-512 BF16, AMX; 1 threads"
    one = _result(tmp_path / "one.csv", [(machine, SHA_A, "2026-11-28T15:15:36+00:00")] * 2)
    stamp = figure_stamp([one], "2026-11-28T15:24:00+00:00", "unknown")
    assert stamp.count("2026-11-28") == 2 and " to " not in stamp and "record no" not in stamp
    assert stamp.endswith("drawn 2026-11-28 15:24 UTC by harness unknown")
    assert max(len(line) for line in stamp.splitlines()) <= 130 and stamp.count("\n    ") == 1  # wrapped once
    # at a space (a hyphen break would lose it on rejoining), indented under its line
    assert (
        stamp.replace("\n    ", " ").splitlines()[0]
        == f"numbers computed 2026-11-28 by harness aaaaaaaaaaaa on {machine}"
    )


def test_a_figure_draws_its_stamp_below_every_other_text_and_keeps_it_in_its_files(tmp_path):
    table = pd.DataFrame({"temperature": [0.05, 0.1, 0.5], "Avg": np.array([60.0, 65.0, 62.0]), "setting": "test"})
    stamp = "numbers computed 2026-11-28 by harness aaaaaaaaaaaa on Some CPU\ndrawn 2026-11-28 15:24 UTC by harness a"
    figure = figures.figure7(table, [tmp_path / "f7.png", tmp_path / "f7.pdf"], stamp=stamp)
    texts = drawn_texts(figure)
    (box,) = [extent for text, extent in texts if text == stamp]
    others = [extent for text, extent in texts if text != stamp]
    assert box.y1 < min(extent.y0 for extent in others)  # below the x label and the tick labels
    assert box.x0 <= min(extent.x0 for extent in others) + 1  # at the left edge of what is drawn
    assert Image.open(tmp_path / "f7.png").info["Description"] == stamp
    assert b"/Subject (numbers computed 2026-11-28" in (tmp_path / "f7.pdf").read_bytes()
    unstamped = figures.figure7(table, [tmp_path / "plain.png"])
    assert stamp not in [text for text, _ in drawn_texts(unstamped)]
    assert "Description" not in Image.open(tmp_path / "plain.png").info
