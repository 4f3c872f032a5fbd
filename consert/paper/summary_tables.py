"""The paper's tables as the summary prints them: a row per published row and a column per set and Avg, each cell
ours ± our seed SD beside the published value, the verdict marked (colour and word) on the row's primary cell; the
setting said once above the table; the rows of another setting, those not run and yours apart beneath; the reasons
for "not comparable" and "not run" grouped, each once. Read from ``results/paper_tables.csv``
(:func:`consert.verdict.layout.paper_layout`) and, for rows of yours, the table's own CSV.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

import pandas as pd

from consert.paper.catalogue import declaration
from consert.registry import FAMILY, TABLE2, TABLE3
from consert.row_labels import YOURS
from consert.verdict.decision import SCORE_COLUMNS
from consert.verdict.yardstick import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

#: The setting label of a row run as the paper ran it (:attr:`consert.encode.models.ResolvedModel.setting`).
PAPER_SETTING = "paper setting"
#: Each compared table's heading, in the summary's order (the baselines' own tables beside Table 2).
TITLES = {
    TABLE2.key: TABLE2.title,
    "whitening_table1": "BERT-whitening (Su et al. 2021, its Table 1): our whitening rows of Table 2",
    "sgopt_table1": "SG-OPT (Kim et al. 2021, its Table 1, BERT-base): our rows of Table 2",
    TABLE3.key: TABLE3.title,
    FAMILY.key: FAMILY.title,
}
#: A verdict's mark: the word shown and the CSS class that colours it.
MARKS = {
    REPRODUCED: "v-reproduced",
    NOT_REPRODUCED: "v-not-reproduced",
    INCONCLUSIVE: "v-inconclusive",
    "not comparable": "v-not-comparable",
}
#: The groups of a table's rows, in the order they are shown, with the line that heads each (``None``: no line).
GROUPS = {
    "paper": None,
    "other": "Run in another setting than the paper's: not comparable, whatever the numbers",
    "not run": "Not run (declared in the config): the paper's numbers only",
    "missing": "Missing (not run and not declared)",
    "no published value": "No published value",
    YOURS: "Your models (no published value, no verdict)",
}
STYLE = (
    "table.paper{border-collapse:collapse;font-size:12px;margin-bottom:.4em}"
    "table.paper td,table.paper th{padding:2px 4px;text-align:right;white-space:nowrap;vertical-align:top}"
    "table.paper thead th{background:#f3f3f3;border-bottom:1px solid #bbb}"
    "table.paper th.row{text-align:left;font-weight:normal}"
    "table.paper td.published{color:#555;border-right:1px solid #ddd}"
    "table.paper tr.group th{text-align:left;background:#fafafa;font-style:italic;border-top:2px solid #999}"
    "table.paper tbody.other td.ours,table.paper tbody.yours td.ours{color:#666}"
    "table.paper small{display:block;color:#777;font-size:10px}"
    ".mark{display:block;font-size:10px;font-weight:600}"
    ".v-reproduced{background:#d4edda}.v-not-reproduced{background:#f8d7da}"
    ".v-inconclusive{background:#fff3cd}.v-not-comparable{background:#e9e9ee}"
    "p.setting{margin:.3em 0;font-size:13px}ul.reasons{font-size:12px;margin-top:.2em}"
)


def number_text(value: object) -> str:
    """A number as the summary prints it (2 decimals), "" where there is none."""
    number = pd.to_numeric(value, errors="coerce")
    return "" if pd.isna(number) else f"{float(number):.2f}"


def row_group(row: pd.Series) -> str:
    """Which group of :data:`GROUPS` a row of ``paper_tables.csv`` is shown in."""
    if row.status == "compared":
        return "paper" if str(row.comparable).lower() == "true" else "other"
    return str(row.status)  # not run, missing, no published value, yours (another status: a group of its own)


def _setting_of(row: pd.Series) -> str:
    setting = row.get("setting")
    return "" if pd.isna(setting) else str(setting)


def setting_line(rows: pd.DataFrame) -> str:
    """The one line above a table that names where its compared rows ran, each setting once with its row count."""
    compared = rows[rows.status == "compared"]
    if compared.empty:
        return "Nothing of this table was compared in this run."
    counts = compared.apply(_setting_of, axis=1).replace("", "an unnamed setting").value_counts(sort=False)
    parts = [f"{setting} ({n} row{'s' if n != 1 else ''})" for setting, n in counts.items()]
    comparable = int(compared.comparable.astype(str).str.lower().eq("true").sum())  # the gate's word, not the label
    return f"Run in: {'; '.join(parts)}. {comparable} of {len(compared)} compared rows are comparable with the paper."


def reason_groups(rows: pd.DataFrame) -> dict[str, list[str]]:
    """``{reason: rows}`` for the rows not compared in the paper's setting, each reason once: the setting itself
    is said by :func:`setting_line`, so only what a reason adds to it is kept."""
    groups: dict[str, list[str]] = {}
    for row in rows.itertuples():
        group = row_group(pd.Series(row._asdict()))
        if group == "paper":
            continue
        reason = "" if pd.isna(row.reason) else str(row.reason)
        if group == "other":
            setting = _setting_of(pd.Series(row._asdict()))
            rest = reason.replace(f"offline stand-in: {setting}", "").replace(setting, "").strip(" ;")
            key = f"not comparable: {rest}" if rest else "not comparable: run in another setting (named above)"
        elif group == "not run":
            key = "not run: the config declares it (its not_run patterns)"
        else:
            key = f"{group}: {reason}" if reason else group
        groups.setdefault(key, []).append(str(row.row))
    return groups


def reasons_html(rows: pd.DataFrame) -> str:
    """The list under a table of :func:`reason_groups`, each reason once with its rows ("" when there is none)."""
    listed = "".join(f"<li>{html.escape(r)}: {html.escape(', '.join(names))}</li>" for r, names in
                     reason_groups(rows).items())  # fmt: skip
    return f'<ul class="reasons">{listed}</ul>' if listed else ""


def _cell(row: pd.Series, column: str, marked: bool) -> str:
    """One set's two cells: ours ± SD (with the verdict's mark when ``marked``) and the published value."""
    ours, sd = number_text(row.get(f"{column} ours")), number_text(row.get(f"{column} sd"))
    shown = f"{ours}<small>±{sd}</small>" if ours and sd else ours
    verdict = row.get(f"{column} verdict")
    classes = "ours"
    if marked and isinstance(verdict, str) and verdict in MARKS:
        classes += f" {MARKS[verdict]}"
        shown += f'<span class="mark">{html.escape(verdict)}</span>'
    return f'<td class="{classes}">{shown}</td><td class="published">{number_text(row.get(f"{column} published"))}</td>'


def _row_html(row: pd.Series, columns: Iterable[str]) -> str:
    primary = row.get("primary")
    primary = primary if isinstance(primary, str) and primary else None
    cells = "".join(_cell(row, column, primary is None or column == primary) for column in columns)
    return f'<tr><th class="row">{html.escape(str(row.row))}</th>{cells}</tr>'


def yours_rows(table: pd.DataFrame | None) -> pd.DataFrame:
    """A result table's rows of yours in ``paper_tables.csv``'s columns (ours and SD; no published value)."""
    if table is None or "size" not in table:
        return pd.DataFrame(columns=["row", "status"])
    mine = table[table["size"].astype(str) == YOURS]
    frame = pd.DataFrame({"row": mine.method, "status": YOURS, "primary": "", "setting": mine.get("setting")})
    for column in SCORE_COLUMNS:
        frame[f"{column} ours"], frame[f"{column} sd"] = mine.get(column), mine.get(f"{column}_std")
    return frame


def paper_table_html(artifact: str, rows: pd.DataFrame, yours: pd.DataFrame | None = None) -> str:
    """One compared table of the paper as a section: its heading, its setting line, the table (a column pair per
    set shown: ours ± SD, published; rows grouped as :data:`GROUPS`) and its grouped reasons."""
    own = declaration(artifact)
    title = TITLES.get(artifact) or (own.title if own is not None else artifact)
    table_id = own.stem if own is not None else artifact
    mine = yours if yours is not None else pd.DataFrame(columns=["row", "status"])
    shown = [c for c in SCORE_COLUMNS if any(f"{c} {p}" in f and f[f"{c} {p}"].notna().any()
                                             for f in (rows, mine) for p in ("ours", "published"))]  # fmt: skip
    head = "".join(f'<th colspan="2">{html.escape(c)}</th>' for c in shown)
    sub = "".join('<th class="ours">ours<small>± SD</small></th><th class="published">paper</th>' for _ in shown)
    body = []
    everything = pd.concat([rows, mine], ignore_index=True) if len(mine) else rows
    grouped = everything.assign(group=[row_group(row) for _, row in everything.iterrows()])
    for group in dict.fromkeys([*GROUPS, *grouped.group]):  # every row shown: a status not foreseen too
        members, line = grouped[grouped.group == group], GROUPS.get(group, group)
        if members.empty:
            continue
        heading = f'<tr class="group"><th colspan="{1 + 2 * len(shown)}">{html.escape(line)}</th></tr>' if line else ""
        body.append(f'<tbody class="{group.replace(" ", "-")}">{heading}'
                    + "".join(_row_html(row, shown) for _, row in members.iterrows()) + "</tbody>")  # fmt: skip
    return (
        f'<section class="paper-table" id="paper-{html.escape(table_id)}"><h2>{html.escape(title)}</h2>'
        f'<p class="setting">{html.escape(setting_line(rows))}</p>'
        f'<table class="paper" id="{html.escape(table_id)}"><thead><tr><th class="row" rowspan="2">row</th>{head}</tr>'
        f"<tr>{sub}</tr></thead>{''.join(body)}</table>" + reasons_html(rows) + "</section>"
    )
