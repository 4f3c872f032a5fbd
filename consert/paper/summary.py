"""What a reviewer reads first: the verdict counts, the claims that did not hold, the tables rendered,
the curves, the diagnostics and each artifact's cost, as one HTML page (``results/summary.html``) and
as the few lines the workflow prints when it ends.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import io
from pathlib import Path

import pandas as pd

from consert import registry
from consert.data.senteval import DATASETS
from consert.io import text_column
from consert.verdict.claims import FAILS, HOLDS, NOT_CONTRADICTED, NOT_RUN, UNDECIDED
from consert.verdict.decision import PRIMARY, SHIFT, YOURS
from consert.verdict.gate import comparable_cells, verdict_counts
from consert.verdict.gate_rates import sweep_power_line

SHOWN = ("method", "size", "mode", "batch_size", "view1", "view2", "n_texts", "temperature", "k", "dataset",
         "n_pairs", *DATASETS, "Avg", "spearman", "best_step",
         "published_Avg", "published_steps", "n_seeds")  # fmt: skip
#: Table 1 and Figure 1 are long (a row per set or per pair): the summary shows their first rows.
ROWS_SHOWN = 40
#: The figures shown after the paper's artifacts (each artifact with its title: :func:`consert.registry.in_summary`,
#: rendered as the columns of :data:`SHOWN`, every figure drawn beside its table).
FIGURES = (
    ("comparison_forest", "Ours minus published, every compared cell (reproduced only where its verdict says so)"),
    *((artifact.stem, artifact.title) for artifact in registry.ARTIFACTS if artifact.kind == "diagnostic"),
)
DIAGNOSTICS_SHOWN = ("method", "pooling", "anisotropy", "bert_anisotropy", "anisotropy_minus_bert", "alignment",
                     "uniformity", "n_seeds")  # fmt: skip


def _read(path: Path) -> pd.DataFrame | None:
    return pd.read_csv(path, keep_default_na=False, na_values=[""]) if path.is_file() else None


#: The stand-in's own anchor: the stand-in's scores against mteb's published ones (not cells of the paper).
ANCHOR = "stand_in_mteb"


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
    :class:`~consert.paper.comparison_config.ComparisonConfig`), labelled provisional where rows of the others did
    not run."""
    from consert.verdict.compare import ARTIFACT_FILES, compare
    from consert.verdict.gate import rows_at_hand

    table = compare(Path(results), Path(published), settings.not_run, settings.margins, settings.seed_noise,
                    settings.seeds)  # fmt: skip
    lines, provisional = [], ""
    for artifact in artifacts:
        names = ARTIFACT_FILES.get(artifact.csv, [])
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


#: The setting label of a row run as the paper ran it (:attr:`consert.encode.models.ResolvedModel.setting`).
PAPER_SETTING = "paper setting"
#: The column that says, in each shown row, where its numbers were run.
RUN_IN = "run in"


def _short_setting(setting: object) -> str:
    """A setting label without its parenthesis: ``offline stand-in``, ``rehearsal``, ``paper setting``."""
    return str(setting).split(" (")[0].strip()


def _where(table: pd.DataFrame) -> pd.Series:
    """Each row's setting in full when it is not the paper's (else its NLI stand-in, else "")."""
    setting, nli = text_column(table, "setting"), text_column(table, "nli")
    other = (setting != "") & ~setting.str.startswith(PAPER_SETTING)
    return setting.where(other, nli.where(nli.str.contains("stand-in"), ""))


def another_setting(table: pd.DataFrame) -> pd.Series:
    """Which rows of a result table were run in another setting than the paper's (the stand-in, a rehearsal,
    the SICK-E stand-in for NLI data): their numbers test nothing of the paper."""
    return _where(table) != ""


def setting_caption(table: pd.DataFrame) -> str | None:
    """The caption of a table with rows of another setting (which settings, how many rows), else ``None``."""
    where = _where(table)
    if not (where != "").any():
        return None
    settings = "; ".join(dict.fromkeys(w for w in where if w))
    return (
        f"{int((where != '').sum())} of {len(table)} rows were run in another setting than the paper's: {settings}. "
        f"Their numbers exercise the pipeline; they are not the paper's and reproduce nothing of it "
        f"(column '{RUN_IN}')."
    )


def shown_table(table: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """An artifact's table as the summary shows it: the columns of :data:`SHOWN`, its first rows, a
    ``run in`` column where any row was run in another setting, and the caption that says so."""
    head = table.head(ROWS_SHOWN)
    where = _where(head)
    shown = head[[c for c in SHOWN if c in head]]
    if (where != "").any():
        setting = text_column(head, "setting")
        labels = [_short_setting(w or s) for w, s in zip(where, setting, strict=True)]  # "" where none is known
        shown = shown.assign(**{RUN_IN: labels})
    return shown, setting_caption(head)


#: The comparison's columns as the summary shows them: our number is ``ours`` (``reproduced`` is a verdict).
CELL_COLUMNS = {"artifact": "artifact", "row": "row", RUN_IN: f"ours {RUN_IN}", "column": "column",
                "published": "published", "reproduced": "ours", "delta": "delta", "diff_low": "diff_low",
                "diff_high": "diff_high", "margin": "margin", "verdict": "verdict", "status": "status",
                "reason": "reason"}  # fmt: skip


def cells_table(
    cells: pd.DataFrame, setting: str = "the paper's setting", label: str = PAPER_SETTING
) -> tuple[pd.DataFrame, str]:
    """Compared cells as the summary shows them, and their caption: our number under ``ours``, beside it where
    it was run (``label`` for a comparable row, else the stand-in, a rehearsal, ...: then its status says
    ``compared in another setting``), and a caption saying how many rows were run elsewhere than ``setting``."""
    compared = cells.status == "compared"
    other = compared & ~cells.comparable.astype(bool)
    settings = text_column(cells, "setting")
    labels = settings.map(_short_setting)
    run_in = labels.where(labels != "", text_column(cells, "reason").str.split(":").str[0])
    frame = cells.assign(**{
        RUN_IN: run_in.where(other, label).where(compared, ""),
        "status": cells.status.where(~other, "compared in another setting"),
    })[list(CELL_COLUMNS)].rename(columns=CELL_COLUMNS)  # fmt: skip
    if not other.any():
        return frame, f"'ours': this run's numbers, run in {setting}; 'reproduced' only where the verdict says so."
    named = "; ".join(dict.fromkeys(s for s in settings[other] if s))
    return frame, (
        f"{int(other.sum())} of {int(compared.sum())} compared rows were run in another setting than {setting} "
        f"({named or 'see reason'}): their 'ours' numbers are not the paper's, and their verdict is "
        "'not comparable', never 'reproduced'."
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
    claims = _read(folder / "claims.csv")
    if claims is not None:
        shown = [c for c in ("id", "size", "quote", "verdict", "low", "high", "detail", "reason") if c in claims]
        comparable = claims.comparable.astype(bool)
        parts.append("<h2>Claims on comparable rows</h2>" + _table_html(claims[comparable][shown], "claims"))
        parts.append("<h2>Claims checked on rows of another setting (they say nothing of the paper)</h2>"
                     + _table_html(claims[~comparable][shown], "claims-not-comparable"))  # fmt: skip
    for artifact in registry.in_summary():
        name, title = artifact.stem, artifact.title
        if artifact.drawn:  # a figure: drawn, captioned, its numbers linked (no excerpt of its CSV in the page)
            parts.append(f"<h2>{html.escape(title)}</h2>" + _image(drawn / f"{name}.png", title, artifact.csv))
            continue
        table = _read(folder / artifact.csv)
        if table is not None:
            shown, caption = shown_table(table)
            more = f"<p>First {ROWS_SHOWN} of {len(table)} rows: {name}.csv</p>" if len(table) > ROWS_SHOWN else ""
            parts.append(f"<h2>{html.escape(title)}</h2>" + _table_html(shown, name, caption) + more)
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
        parts.append("<h2>Cost per artifact</h2>" + _table_html(cost, "cost"))
    page = f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>ConSERT reproduction: summary</title>" \
           f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>"  # fmt: skip
    with atomic_path(output) as temporary:
        Path(temporary).write_text(page)
    return Path(output)


def _verdicts_html(comparison: pd.DataFrame, folder: Path) -> str:
    """The banner, the published rows by verdict, the headline's lines, the primary cells of the paper and the
    stand-in's anchor cells apart."""
    warning = banner(comparison)
    parts = [f'<p class="banner" id="banner">{html.escape(warning)}</p>'] if warning else []
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{v}</td></tr>" for k, v in primary_summary(comparison).items())
    parts.append(f'<section id="verdicts"><h2>Published rows of the paper</h2><table class="counts">{cells}</table>')
    lines = headline(folder)[1 if warning else 0 : -1]
    parts.append("".join(f"<p>{html.escape(line)}</p>" for line in lines) + "</section>")
    primary = comparison[(comparison.role == PRIMARY) & ~comparison.artifact.isin([ANCHOR])]
    frame, caption = cells_table(primary)
    parts.append("<h2>Primary cells of the paper</h2>" + _table_html(frame, "primary-cells", caption))
    yours = comparison[comparison.status == YOURS]
    if len(yours):
        columns = ["artifact", "row", "against", "reproduced", "test_ci_low", "test_ci_high", "delta", "diff_low",
                   "diff_high", "n_seeds", "setting"]  # fmt: skip
        shown = yours[[c for c in columns if c in yours]].rename(
            columns={"reproduced": "Avg", "delta": "yours - against", "n_seeds": "seeds (against)"}
        )
        parts.append("<h2>Your models (no published value, no verdict)</h2><p>Avg with its 95% interval over the test "
                     "pairs; against each ConSERT row of the same table, the difference on the same pairs with its "
                     "paired 95% interval (seeds not included)</p>" + _table_html(shown, "yours"))  # fmt: skip
    anchor = comparison[comparison.artifact == ANCHOR]
    if len(anchor):
        frame, caption = cells_table(anchor, setting="the stand-in's own setting", label="its own setting")
        parts.append("<h2>The stand-in against its own published MTEB scores (not the paper)</h2>"
                     + _table_html(frame, "stand-in-anchor", caption))  # fmt: skip
    return "".join(parts)
