"""What a reviewer reads first: the verdict counts, the claims that did not hold, the tables rendered,
the curves, the diagnostics and each artifact's cost, as one HTML page (``results/summary.html``) and
as the few lines the workflow prints when it ends.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import io
import re
from pathlib import Path

import pandas as pd

from consert import registry
from consert.data.senteval import DATASETS
from consert.io import text_column
from consert.paper import catalogue
from consert.paper.summary_tables import (
    PAPER_SETTING,
    number_text,
    paper_table_html,
    reasons_html,
    setting_line,
    yours_rows,
)
from consert.paper.summary_tables import STYLE as PAPER_TABLE_STYLE
from consert.row_labels import YOURS
from consert.verdict.claims import FAILS, HOLDS, NOT_CONTRADICTED, NOT_RUN, UNDECIDED
from consert.verdict.decision import PRIMARY, SHIFT
from consert.verdict.gate import STAND_IN_ALLOWED, comparable_cells, verdict_counts
from consert.verdict.gate_rates import sweep_power_line

SHOWN = ("statistic", "method", "size", "mode", "batch_size", "view1", "view2", "n_texts", "temperature", "k",
         "dataset", "n_pairs", *DATASETS, "Avg", "spearman", "best_step",
         "published_Avg", "published_steps", "n_seeds", "Total")  # fmt: skip
#: The figures shown after the paper's artifacts (each artifact with its title:
#: :func:`consert.paper.catalogue.in_summary`, rendered as the columns of :data:`SHOWN`, every figure drawn beside
#: its table).
FIGURES = (
    ("comparison_forest", "Ours minus published, every compared cell (reproduced only where its verdict says so)"),
    *((artifact.stem, artifact.title) for artifact in catalogue.ARTIFACTS if artifact.kind == "diagnostic"),
)
DIAGNOSTICS_SHOWN = ("method", "pooling", "anisotropy", "bert_anisotropy", "anisotropy_minus_bert", "alignment",
                     "uniformity", "n_seeds")  # fmt: skip


def _read(path: Path) -> pd.DataFrame | None:
    return pd.read_csv(path, keep_default_na=False, na_values=[""]) if path.is_file() else None


#: The stand-in's own anchor: the stand-in's scores against mteb's published ones (not cells of the paper).
ANCHOR = "stand_in_mteb"
#: The comparison in the paper's layout, written by the comparison job (:mod:`consert.verdict.layout`).
LAYOUT_FILE = "paper_tables.csv"


def primary_summary(comparison: pd.DataFrame) -> dict[str, int]:
    """The published rows of the paper, each counted once by its primary cell: the verdicts of those
    compared in the paper's setting, those compared in another setting (the stand-in, a rehearsal, other NLI
    data: not comparable), those not run (declared in the config) and those missing (not run, undeclared).
    The stand-in's anchor and the shared shift are not rows of the paper (:func:`anchor_summary`)."""
    paper = comparison[~comparison.artifact.isin([ANCHOR, SHIFT]) & (comparison.role == PRIMARY)]
    counts = verdict_counts(paper)
    compared = paper[paper.status == "compared"]
    counts["not comparable"] = int((~compared.comparable.astype(bool)).sum())
    counts["not run"] = int((paper.status == "not run").sum())
    counts["missing"] = int((paper.status == "missing").sum())
    return counts


def rows_line(what: str, counts: dict[str, int]) -> str:
    """One line of published rows by verdict (:func:`primary_summary`'s counts)."""
    return (
        f"{what}: {counts['reproduced']} reproduced, {counts['not reproduced']} not reproduced, "
        f"{counts['inconclusive']} inconclusive in the paper's setting; {counts['not comparable']} not comparable (run "
        f"in another setting); {counts['not run']} not run (declared); {counts['missing']} missing"
    )


def target_headline(
    results: str | Path, published: str | Path, settings, artifacts: list[registry.Artifact]
) -> list[str]:
    """What a run of some tables or figures (not ``all``) ends with: each one's published rows decided from the
    rows at hand (:func:`consert.verdict.gate.rows_at_hand`; ``settings``: the workflow's
    :class:`~consert.planner.comparison.ComparisonConfig`), labelled provisional where rows of the others did
    not run."""
    from consert.verdict.compare import compare
    from consert.verdict.gate import rows_at_hand

    table = compare(catalogue.COMPARED, Path(results), Path(published), settings.not_run, settings.margins,
                    settings.seed_noise, settings.seeds)  # fmt: skip
    lines, provisional = [], ""
    for artifact in artifacts:
        names = catalogue.compared_names(artifact)
        if not names:
            continue
        rows, provisional = rows_at_hand(table, [f"{name}:*" for name in names])
        lines.append(rows_line(f"Published rows of {artifact.title}", primary_summary(rows)))
    return lines + ([f"  {provisional}"] if provisional and lines else [])


def anchor_summary(comparison: pd.DataFrame) -> dict[str, int]:
    """Verdicts of the stand-in's anchor cells (its scores against mteb's published ones), apart from the paper."""
    return verdict_counts(comparison[comparison.artifact == ANCHOR])


def claim_summary(claims: pd.DataFrame) -> tuple[dict[str, int], int, int]:
    """The claims decided on comparable rows, by verdict; how many were checked on rows of another setting
    (not comparable: their verdicts say nothing of the paper); how many were not run."""
    comparable = claims[claims.comparable.astype(bool)]
    tally = comparable.verdict.value_counts()
    counts = {verdict: int(tally.get(verdict, 0)) for verdict in (HOLDS, FAILS, NOT_CONTRADICTED, UNDECIDED)}
    not_run = int((claims.verdict == NOT_RUN).sum())
    return counts, len(claims) - len(comparable) - not_run, not_run


def banner(comparison: pd.DataFrame) -> str | None:
    """The warning every first screen leads with when no cell of the paper is comparable, else ``None``."""
    if len(comparable_cells(comparison)):
        return None
    paper = comparison[~comparison.artifact.isin([ANCHOR, SHIFT])]
    settings = "; ".join(sorted({str(s) for s in paper.setting.dropna() if str(s)})) or "an unknown setting"
    return (
        "NOTHING OF THE PAPER IS COMPARABLE: 0 cells were produced in the paper's setting, so no published "
        f"number was tested. These results are of {settings}; they exercise the pipeline only."
    )


def headline(results: str | Path = "results", report_command: str = "snakemake --report report.html") -> list[str]:
    """The lines the workflow prints when it ends: the banner when nothing of the paper is comparable, the
    published rows by verdict (not run and missing counted), the stand-in's anchor apart, the claims split
    into comparable and not, and where the summary, the comparison and the full report are."""
    folder = Path(results)
    comparison, claims = _read(folder / "comparison.csv"), _read(folder / "claims.csv")
    if comparison is None:
        return [f"no {folder / 'comparison.csv'} yet: run `snakemake all` for the verdicts"]
    warning = banner(comparison)
    counts = primary_summary(comparison)
    lines = [warning] if warning else []
    lines.append(rows_line("Published rows of the paper", counts))
    compared = comparable_cells(comparison)  # a stand-in or rehearsal sweep is judged by no one: no line
    sweeps = compared[compared.artifact.isin([registry.TABLE4.key, registry.FIGURE5.stem])
                      & (compared.role == PRIMARY)].n_seeds  # fmt: skip
    power = sweep_power_line(int(sweeps.min())) if sweeps.notna().any() else None
    lines += [power] if power else []
    anchor = anchor_summary(comparison)
    if sum(anchor.values()):
        lines.append(
            f"The stand-in against its own published MTEB scores (not the paper): {anchor['reproduced']} "
            f"reproduced, {anchor['not reproduced']} not reproduced, {anchor['inconclusive']} inconclusive"
        )
    if claims is not None:
        decided, other, not_run = claim_summary(claims)
        lines.append(
            f"Claims of the paper on comparable rows: {decided[HOLDS]} hold, {decided[FAILS]} do not hold, "
            f"{decided[NOT_CONTRADICTED]} not contradicted, {decided[UNDECIDED]} not decided; {other} checked on "
            f"rows of another setting (not comparable); {not_run} not run"
        )
        for claim in claims[(claims.verdict == FAILS) & claims.comparable.astype(bool)].itertuples():
            lines.append(f"  does not hold: {claim.id} ({claim.size}): {claim.quote}")
    summary = folder / "summary.html"
    lines.append(
        f"Summary: {summary if summary.is_file() else '(not built: snakemake summary)'}; every cell: "
        f"{folder / 'comparison.csv'}; claims: {folder / 'claims.csv'}; full report: {report_command}"
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


def _table_html(frame: pd.DataFrame, table_id: str, caption: str | None = None) -> str:
    table = frame.to_html(index=False, table_id=table_id, classes="result", float_format=lambda v: f"{v:.2f}",
                          na_rep="", border=0)  # fmt: skip
    if not caption:
        return table
    opening = table.index(">") + 1  # the <table ...> tag: its caption is its first child
    return f"{table[:opening]}<caption>{html.escape(caption)}</caption>{table[opening:]}"


def _where(table: pd.DataFrame) -> pd.Series:
    """Each row's setting in full when it is not the paper's (else its NLI stand-in, else "")."""
    setting, nli = text_column(table, "setting"), text_column(table, "nli")
    other = (setting != "") & ~setting.str.startswith(PAPER_SETTING)
    return setting.where(other, nli.where(nli.str.contains("stand-in"), ""))


def setting_caption(table: pd.DataFrame) -> str | None:
    """The caption of a table with rows of another setting (which settings, how many rows), else ``None``: the
    setting said once, not in each row."""
    where = _where(table)
    if not (where != "").any():
        return None
    settings = "; ".join(dict.fromkeys(w for w in where if w))
    return (
        f"{int((where != '').sum())} of {len(table)} rows were run in another setting than the paper's: {settings}. "
        "Their numbers exercise the pipeline; they are not the paper's and reproduce nothing of it."
    )


def shown_table(table: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """A table of results not compared cell by cell in the paper's layout (Table 1, Table 4) as the summary shows
    it: the columns of :data:`SHOWN`, and the caption that names, once, the other settings its rows ran in."""
    return table[[c for c in SHOWN if c in table]], setting_caption(table)


#: The columns of a compared cell as the summary shows them, in words: our number is ``ours`` (``reproduced``
#: is a verdict).
CELL_COLUMNS = {"artifact": "artifact", "row": "row", "column": "column", "reproduced": "ours",
                "seed_std": "seed SD", "published": "published", "delta": "ours − published",
                "interval": "95% interval of the difference", "margin": "margin", "verdict": "verdict"}  # fmt: skip


def cells_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Compared cells as the summary lists them (:data:`CELL_COLUMNS`): the interval in words, a row of another
    setting's verdict ``not comparable``, one not compared its status (``not run``, ``missing``)."""
    low, high = cells.diff_low.map(number_text), cells.diff_high.map(number_text)
    interval = (low + " to " + high).where((low != "") & (high != ""), "")
    verdict = text_column(cells, "verdict").where(cells.status == "compared", cells.status)
    return cells.assign(interval=interval, verdict=verdict)[list(CELL_COLUMNS)].rename(columns=CELL_COLUMNS)


def _cells_section(cells: pd.DataFrame, table_id: str, title: str) -> str:
    """A list of compared cells with its heading, the setting its rows ran in said once above it, and the reasons
    of those not compared in the paper's setting grouped beneath it, each once."""
    named = cells.assign(row=cells.artifact + ": " + cells.row.astype(str))
    return (
        f'<h2>{html.escape(title)}</h2><p class="setting">{html.escape(setting_line(cells))}</p>'
        + _table_html(cells_table(cells), table_id)
        + reasons_html(named)
    )


#: The widest a figure is inlined in the summary (pixels; the PNG beside it keeps its full size). The Snakemake
#: report shows the summary through a data URL, which Chromium caps at 2 MB: every figure at full size passed it.
SUMMARY_IMAGE_WIDTH = 1200


def _image(path: Path, title: str, data: str | None = None) -> str:
    """A figure inlined with its caption, and a link to the CSV of its numbers (``data``, beside the page)."""
    if not path.is_file():
        return f"<p>{html.escape(title)}: not drawn in this run</p>"
    from PIL import Image

    with Image.open(path) as image:
        image.thumbnail((SUMMARY_IMAGE_WIDTH, SUMMARY_IMAGE_WIDTH * 4))
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", optimize=True)
    encoded = base64.b64encode(buffer.getvalue()).decode()
    caption = html.escape(title)
    link = f' (its numbers: <a href="{html.escape(data)}">{html.escape(data)}</a>)' if data else ""
    return (
        f'<figure><img alt="{caption}" src="data:image/png;base64,{encoded}"><figcaption>{caption}{link}'
        "</figcaption></figure>"
    )


STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1400px}table.result{border-collapse:collapse;
font-size:12px;margin-bottom:1.5em}table.result td,table.result th{padding:2px 6px;border-bottom:1px solid #ddd;
text-align:right}table.result th{background:#f3f3f3}img{max-width:100%}.counts td{font-size:16px;padding:4px 12px}
.banner{background:#fff3cd;border:2px solid #c9a227;padding:.8em 1em;font-weight:600;font-size:16px}"""


def write_summary(results: str | Path, figures: str | Path, output: str | Path, commit: str, hardware: str) -> Path:
    """Write the summary page (self-contained: figures inlined) to ``output``, atomically: the banner when
    nothing of the paper is comparable, the published rows by verdict, the stand-in's anchor apart, the claims
    (comparable first), every table and figure of the paper, the harness's own figures, diagnostics and cost."""
    from consert.io import atomic_path

    folder, drawn = Path(results), Path(figures)
    comparison = _read(folder / "comparison.csv")
    parts = [f"<h1>ConSERT reproduction: summary</h1><p>Made {dt.date.today():%Y-%m-%d} on {html.escape(hardware)}, "
             f"harness commit {html.escape(commit)}.</p>"]  # fmt: skip
    if comparison is not None:
        parts.append(_verdicts_html(comparison, folder))
    layout = _read(folder / LAYOUT_FILE)
    laid_out = set() if layout is None else set(layout.artifact)
    if layout is not None:  # the compared tables first, as the paper prints them: Table 2 on the first screen
        for artifact, rows in layout.groupby("artifact", sort=False):
            own = catalogue.declaration(artifact)
            yours = yours_rows(_read(folder / own.csv)) if own is not None else None
            parts.append(paper_table_html(artifact, rows, yours))
    claims = _read(folder / "claims.csv")
    if claims is not None:
        shown = [c for c in ("id", "size", "quote", "verdict", "low", "high", "detail") if c in claims]
        comparable = claims.comparable.astype(bool)
        parts.append(
            "<h2>Claims on comparable rows</h2>"
            + (_table_html(claims[comparable][shown], "claims") if comparable.any() else "<p>None in this run.</p>")
        )
        other = claims[~comparable]
        parts.append("<h2>Claims checked on rows of another setting (they say nothing of the paper)</h2>"
                     f'<p class="setting">{html.escape(_settings_named(other))}</p>'
                     + _table_html(other[shown], "claims-not-comparable"))  # fmt: skip
    for artifact in catalogue.in_summary():
        name, title = artifact.stem, artifact.title
        if artifact.key in laid_out:
            continue
        if artifact.drawn:  # a figure: drawn, captioned, its numbers linked (no excerpt of its CSV in the page)
            parts.append(f"<h2>{html.escape(title)}</h2>" + _image(drawn / f"{name}.png", title, artifact.csv))
            continue
        table = _read(folder / artifact.csv)
        if table is not None:
            shown, caption = shown_table(table)
            parts.append(f"<h2>{html.escape(title)}</h2>" + _table_html(shown, name, caption))
    if comparison is not None:
        parts.append(_other_cells_html(comparison, laid_out))
    for name, title in FIGURES:
        numbers = "comparison.csv" if name == "comparison_forest" else f"{name}.csv"
        parts.append(f"<h2>{html.escape(title)}</h2>" + _image(drawn / f"{name}.png", title, numbers))
    diagnostics = _read(folder / registry.DIAGNOSTICS.csv)
    if diagnostics is not None:
        average = diagnostics[diagnostics.dataset == "Avg"]
        parts.append("<h2>Representation diagnostics (Avg of the 7 sets)</h2>"
                     + _table_html(average[list(DIAGNOSTICS_SHOWN)], registry.DIAGNOSTICS.stem))  # fmt: skip
    cost = _read(folder / "cost.csv")
    if cost is not None:
        machines = cost.hardware.dropna().unique() if "hardware" in cost else []
        said = f"<p>Measured on {html.escape(str(machines[0]))}.</p>" if len(machines) == 1 else ""
        shown = cost.drop(columns="hardware") if said else cost  # one machine: said once
        parts.append("<h2>Cost per artifact</h2>" + said + _table_html(shown, "cost"))
    page = f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>ConSERT reproduction: summary</title>" \
           f"<style>{STYLE}{PAPER_TABLE_STYLE}</style></head><body>{''.join(parts)}</body></html>"  # fmt: skip
    with atomic_path(output) as temporary:
        Path(temporary).write_text(page)
    return Path(output)


def _settings_named(rows: pd.DataFrame) -> str:
    """Each setting of ``rows`` once (the line above a list whose rows ran in other settings)."""
    named = (part for cell in text_column(rows, "setting") for part in re.split(r"(?<=\)); ", cell) if part)
    return f"Run in: {'; '.join(dict.fromkeys(named)) or 'no setting recorded'}."


def _verdicts_html(comparison: pd.DataFrame, folder: Path) -> str:
    """The first screen's lead: the banner, the published rows by verdict (a row of counts), the run's setting
    once (the banner names it when nothing is comparable) and the headline's other lines."""
    warning = banner(comparison)
    parts = [f'<p class="banner" id="banner">{html.escape(warning)}</p>'] if warning else []
    counts = primary_summary(comparison)
    header = "".join(f"<th>{html.escape(k)}</th>" for k in counts)
    values = "".join(f"<td>{v}</td>" for v in counts.values())
    parts.append(f'<section id="verdicts"><h2>Published rows of the paper</h2><table class="counts"><tr>{header}</tr>'
                 f"<tr>{values}</tr></table>")  # fmt: skip
    if not warning:
        paper = comparison[~comparison.artifact.isin([ANCHOR, SHIFT]) & (comparison.role == PRIMARY)]
        parts.append(f'<p id="run-setting">{html.escape(setting_line(paper))}</p>')
    lines = headline(folder)[2 if warning else 1 : -1]  # the banner and the counts are above
    parts.append("".join(f"<p>{html.escape(line)}</p>" for line in lines) + "</section>")
    return "".join(parts)


def _other_cells_html(comparison: pd.DataFrame, laid_out: set[str]) -> str:
    """The compared cells outside the paper's tables (Table 4, the figures' stated values, the shared shift),
    your models' paired differences, and the stand-in's anchor apart."""
    chosen = (comparison.role == PRIMARY) & (comparison.status != STAND_IN_ALLOWED)  # the banner says the latter
    primary = comparison[chosen & ~comparison.artifact.isin([ANCHOR, *laid_out])]
    parts = (
        [_cells_section(primary, "primary-cells", "Other published values compared (primary cells)")]
        if len(primary)
        else []
    )
    yours = comparison[comparison.status == YOURS]
    if len(yours):
        columns = ["artifact", "row", "against", "reproduced", "test_ci_low", "test_ci_high", "delta", "diff_low",
                   "diff_high", "n_seeds"]  # fmt: skip
        shown = yours[[c for c in columns if c in yours]].rename(
            columns={"reproduced": "Avg", "delta": "yours - against", "n_seeds": "seeds (against)"}
        )
        parts.append("<h2>Your models (no published value, no verdict)</h2><p>Avg with its 95% interval over the test "
                     "pairs; against each ConSERT row of the same table, the difference on the same pairs with its "
                     "paired 95% interval (seeds not included)</p>"
                     f'<p class="setting">{html.escape(_settings_named(yours))}</p>'
                     + _table_html(shown, "yours"))  # fmt: skip
    anchor = comparison[comparison.artifact == ANCHOR]
    if len(anchor):
        parts.append(_cells_section(anchor, "stand-in-anchor",
                                    "The stand-in against its own published MTEB scores (not the paper)"))  # fmt: skip
    return "".join(parts)
