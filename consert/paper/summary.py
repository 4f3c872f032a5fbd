"""What a reviewer reads first: the verdict counts, the claims that did not hold, the tables rendered,
the curves, the diagnostics and each artifact's cost, as one HTML page (``results/summary.html``) and
as the few lines the workflow prints when it ends.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
from pathlib import Path

import pandas as pd

from consert.paper.claims import FAILS, HOLDS, UNDECIDED
from consert.paper.compare import PRIMARY, verdict_counts

#: The tables the summary renders, with the columns shown (all others stay in the CSV).
RENDERED_TABLES = {
    "table2_unsup": "Table 2: unsupervised",
    "table3_sup": "Table 3: supervised",
    "table4_batch_size": "Table 4: batch size",
    "table_contrastive_family": "The contrastive family (SimCSE, AugCSE)",
    "figure5_heatmap": "Figure 5: augmentation pairs",
    "figure6_fewshot": "Figure 6: few-shot",
    "figure7_temperature": "Figure 7: temperature",
}
SHOWN = ("method", "size", "mode", "batch_size", "view1", "view2", "n_texts", "temperature", "STS12", "STS13",
         "STS14", "STS15", "STS16", "STSb", "SICK-R", "Avg", "best_step", "published_Avg", "published_steps",
         "n_seeds")  # fmt: skip
FIGURES = (
    ("comparison_forest", "Reproduced minus published, every compared cell"),
    ("training_curves", "Training curves"),
    ("diagnostics", "Representation diagnostics"),
)
DIAGNOSTICS_SHOWN = ("method", "pooling", "anisotropy", "bert_anisotropy", "anisotropy_minus_bert", "alignment",
                     "uniformity", "n_seeds")  # fmt: skip


def _read(path: Path) -> pd.DataFrame | None:
    return pd.read_csv(path, keep_default_na=False, na_values=[""]) if path.is_file() else None


def primary_summary(comparison: pd.DataFrame) -> dict[str, int]:
    """Verdict counts of the comparable primary cells, and how many primary cells were compared but are
    not comparable (another setting: the stand-in, a rehearsal, other NLI data)."""
    counts = verdict_counts(comparison)
    primary = comparison[(comparison.status == "compared") & (comparison.role == PRIMARY)]
    counts["not comparable"] = int((~primary.comparable.astype(bool)).sum())
    return counts


def headline(results: str | Path = "results") -> list[str]:
    """The lines the workflow prints when it ends: the verdict counts, the claims that did not hold, and
    where the summary, the comparison and the full report are."""
    folder = Path(results)
    comparison, claims = _read(folder / "comparison.csv"), _read(folder / "claims.csv")
    if comparison is None:
        return [f"no {folder / 'comparison.csv'} yet: run `snakemake all` for the verdicts"]
    setting = "; ".join(sorted({str(s) for s in comparison.setting.dropna() if str(s)})) or "unknown setting"
    counts = primary_summary(comparison)
    lines = [
        f"Verdicts ({setting}): primary cells of the paper: {counts['reproduced']} reproduced, "
        f"{counts['not reproduced']} not reproduced, {counts['inconclusive']} inconclusive; "
        f"{counts['not comparable']} not comparable (another setting than the paper's)",
    ]
    if claims is not None:
        tally = claims.verdict.value_counts()
        held, failed, undecided = (int(tally.get(v, 0)) for v in (HOLDS, FAILS, UNDECIDED))
        lines.append(
            f"Claims: {held} hold, {failed} do not hold, {undecided} not decided, "
            f"{len(claims) - held - failed - undecided} not run or not comparable"
        )
        for claim in claims[claims.verdict == FAILS].itertuples():
            lines.append(f"  does not hold: {claim.id} ({claim.size}): {claim.quote}")
    summary = folder / "summary.html"
    lines.append(
        f"Summary: {summary if summary.is_file() else '(not built: snakemake summary)'}; every cell: "
        f"{folder / 'comparison.csv'}; claims: {folder / 'claims.csv'}; full report: snakemake --report report.html"
    )
    return lines


def failure_lines(log: str | Path | list | None) -> list[str]:
    """From Snakemake's log of a failed run (its ``onerror`` argument: a path, or a list of them): each
    failed job's rule and log file."""
    if isinstance(log, list | tuple):
        log = next((path for path in log if Path(path).is_file()), None)
    if not log or not Path(log).is_file():
        return ["the run failed; see Snakemake's output above"]
    lines, current = [], None
    for line in Path(log).read_text(errors="replace").splitlines():
        stripped = line.strip()
        if stripped.startswith("Error in rule "):
            current = stripped.removeprefix("Error in rule ").rstrip(":")
            lines.append(f"failed job: rule {current}")
        elif current and stripped.startswith("log:"):
            lines[-1] += f"; its log: {stripped.removeprefix('log:').strip().split(' (')[0]}"
            current = None
    return lines or [f"the run failed; Snakemake's log: {log}"]


def _table_html(frame: pd.DataFrame, table_id: str) -> str:
    return frame.to_html(index=False, table_id=table_id, classes="result", float_format=lambda v: f"{v:.2f}",
                         na_rep="", border=0)  # fmt: skip


def _image(path: Path, title: str) -> str:
    if not path.is_file():
        return f"<p>{html.escape(title)}: not drawn in this run</p>"
    data = base64.b64encode(path.read_bytes()).decode()
    caption = html.escape(title)
    return (
        f'<figure><img alt="{caption}" src="data:image/png;base64,{data}"><figcaption>{caption}</figcaption></figure>'
    )


STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1400px}table.result{border-collapse:collapse;
font-size:12px;margin-bottom:1.5em}table.result td,table.result th{padding:2px 6px;border-bottom:1px solid #ddd;
text-align:right}table.result th{background:#f3f3f3}img{max-width:100%}.counts td{font-size:16px;padding:4px 12px}"""


def write_summary(results: str | Path, figures: str | Path, output: str | Path, commit: str, hardware: str) -> Path:
    """Write the summary page (self-contained: figures inlined) to ``output``, atomically."""
    from consert.io import atomic_path

    folder, drawn = Path(results), Path(figures)
    comparison = _read(folder / "comparison.csv")
    parts = [f"<h1>ConSERT reproduction: summary</h1><p>Made {dt.date.today():%Y-%m-%d} on {html.escape(hardware)}, "
             f"harness commit {html.escape(commit)}.</p>"]  # fmt: skip
    if comparison is not None:
        counts = primary_summary(comparison)
        cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{v}</td></tr>" for k, v in counts.items())
        parts.append(
            f'<section id="verdicts"><h2>Verdicts of the primary cells</h2><table class="counts">{cells}</table>'
        )
        parts.append("".join(f"<p>{html.escape(line)}</p>" for line in headline(folder)[:-1]) + "</section>")
        primary = comparison[comparison.role == PRIMARY]
        columns = ["artifact", "row", "column", "published", "reproduced", "delta", "diff_low", "diff_high", "margin",
                   "verdict", "comparable", "reason"]  # fmt: skip
        parts.append("<h2>Primary cells</h2>" + _table_html(primary[columns], "primary-cells"))
    claims = _read(folder / "claims.csv")
    if claims is not None:
        shown = [c for c in ("id", "size", "quote", "verdict", "low", "high", "detail") if c in claims]
        parts.append("<h2>Claims</h2>" + _table_html(claims[shown], "claims"))
    for name, title in RENDERED_TABLES.items():
        table = _read(folder / f"{name}.csv")
        if table is not None:
            parts.append(f"<h2>{html.escape(title)}</h2>" + _table_html(table[[c for c in SHOWN if c in table]], name))
    for name, title in FIGURES:
        parts.append(f"<h2>{html.escape(title)}</h2>" + _image(drawn / f"{name}.png", title))
    diagnostics = _read(folder / "diagnostics.csv")
    if diagnostics is not None:
        average = diagnostics[diagnostics.dataset == "Avg"]
        parts.append("<h2>Representation diagnostics (Avg of the 7 sets)</h2>"
                     + _table_html(average[list(DIAGNOSTICS_SHOWN)], "diagnostics"))  # fmt: skip
    cost = _read(folder / "cost.csv")
    if cost is not None:
        parts.append("<h2>Cost per artifact</h2>" + _table_html(cost, "cost"))
    page = f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>ConSERT reproduction: summary</title>" \
           f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>"  # fmt: skip
    with atomic_path(output) as temporary:
        Path(temporary).write_text(page)
    return Path(output)
