"""The summary page read as a structure: each table (by id) with its caption, header rows and body rows (each with
its ``<tbody>`` class and its cells' tag, class and text), and each section's setting lines. The tests of the page
read it through this, not through strings of its HTML."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Cell:
    tag: str  # th or td
    classes: str
    text: str = ""


@dataclass
class Table:
    caption: str = ""
    head: list[list[Cell]] = field(default_factory=list)
    body: list[tuple[str, list[Cell]]] = field(default_factory=list)  # (tbody class, cells)

    @property
    def header(self) -> list[str]:
        """The first header row's texts (a table without ``<thead>``: its first row's)."""
        rows = self.head or [cells for _, cells in self.body[:1]]
        return [cell.text for cell in rows[0]] if rows else []

    @property
    def rows(self) -> list[list[str]]:
        """The body's rows as texts (a table without ``<thead>``: after its first row)."""
        rows = [[cell.text for cell in cells] for _, cells in self.body]
        return rows if self.head else rows[1:]


class SummaryPage(HTMLParser):
    """Feed it a page; then ``tables[id]`` and ``settings[section id]`` (the texts of its ``p.setting``)."""

    def __init__(self, page: str):
        super().__init__()
        self.tables: dict[str, Table] = {}
        self.settings: dict[str, list[str]] = {}
        self._table: Table | None = None
        self._part, self._tbody, self._section = "body", "", ""
        self._cell: Cell | None = None
        self._row: list[Cell] | None = None
        self._caption = self._setting = False
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = attrs.get("class") or ""
        if tag == "section":
            self._section = attrs.get("id") or ""
        elif tag == "p" and "setting" in classes.split():
            self._setting = True
            self.settings.setdefault(self._section, []).append("")
        elif tag == "table":
            self._table = self.tables.setdefault(attrs.get("id") or classes, Table())
            self._part, self._tbody = "body", ""
        elif self._table is None:
            return
        elif tag == "caption":
            self._caption = True
        elif tag == "thead":
            self._part = "head"
        elif tag == "tbody":
            self._part, self._tbody = "body", classes
        elif tag == "tr":
            self._row = []
            if self._part == "head":
                self._table.head.append(self._row)
            else:
                self._table.body.append((self._tbody, self._row))
        elif tag in ("th", "td") and self._row is not None:
            self._cell = Cell(tag, classes)
            self._row.append(self._cell)
        elif tag == "br" and self._cell is not None:
            self._cell.text += " "

    def handle_endtag(self, tag):
        if tag == "section":
            self._section = ""
        elif tag == "p":
            self._setting = False
        elif tag == "table":
            self._table = None
        elif tag == "caption":
            self._caption = False
        elif tag == "thead":
            self._part = "body"
        elif tag in ("th", "td") and self._cell is not None:
            self._cell.text = " ".join(self._cell.text.split())
            self._cell = None

    def handle_data(self, data):
        if self._setting:
            self.settings[self._section][-1] += data
        if self._table is None:
            return
        if self._caption:
            self._table.caption += data
        elif self._cell is not None:
            self._cell.text += data + " "  # a block inside a cell (the SD, the mark) is a word of its own
