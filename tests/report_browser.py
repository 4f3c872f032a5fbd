"""Read a Snakemake HTML report the way a reader does: in headless Chromium, through its DOM.

The report is a single-page React app with no URL routing (every link is ``href="#"`` with a click
handler), so its entries and captions exist in the DOM only after clicks: the left navigation lists
the categories; a category opens a table of entries (``nav table tbody tr``: the path, then an eye
and an info button); the info button shows the entry's caption (``nav li.prose``). Playwright drives
Debian's Chromium (no browser download); every request that is not ``file:``/``data:``/``blob:``/
``about:`` is aborted and recorded, and no host name resolves (``--host-resolver-rules``).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

#: Debian's chromium package.
CHROMIUM = Path("/usr/bin/chromium")
#: Flags for a closed network: no background services, no DNS, no network-time probe.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--disable-features=NetworkTimeServiceQuerying",
]
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")
BUILT_IN_PAGES = ("Workflow", "Statistics", "About")


@dataclass
class ReportView:
    """What a reader finds in the report: the landing text, each entry's category and caption, and
    every request the page made (``blocked``: the non-local ones, aborted)."""

    description: str = ""
    entries: dict[str, dict[str, str]] = field(default_factory=dict)
    #: the summary page (``results/summary.html``) as shown: its verdict section's text, and the header cells
    #: and body rows of its Table 2 in the paper's layout (``table#table2_unsup``)
    summary_verdicts: str = ""
    summary_table_header: list[str] = field(default_factory=list)
    summary_table_rows: list[list[str]] = field(default_factory=list)
    #: every table row of the summary's first screen (what shows in its frame before any scrolling), each as its
    #: table's id (or class) and its cells' text
    summary_first_screen: list[list[str]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _text(value: str) -> str:
    return " ".join(value.split())


#: The table rows inside the first screen of a page (its own viewport, before scrolling): table id or class, cells.
FIRST_SCREEN_ROWS = """body => {
    const rows = [];
    for (const table of body.querySelectorAll("table")) {
        for (const row of table.querySelectorAll("tr")) {
            const box = row.getBoundingClientRect();
            if (box.height > 0 && box.top < window.innerHeight && box.bottom > 0) {
                rows.push([table.id || table.className, ...Array.from(row.children, cell => cell.innerText)]);
            }
        }
    }
    return rows;
}"""


#: Every row of the bodies given, as its cells' text (a cell's lines joined by a space).
ROWS = """bodies => bodies.flatMap(body => Array.from(body.rows, row => Array.from(row.cells,
    cell => cell.innerText.split(/\\s+/).filter(Boolean).join(" "))))"""


@dataclass
class SummaryView:
    """The summary page opened on its own at a viewport's size: the rows of its first screen (as
    :data:`FIRST_SCREEN_ROWS`), where its Table 2 lies (``top``, ``bottom``, ``right`` of its header and of each body
    row, in pixels), the page's text, every table cell's text, and the viewport."""

    first_screen: list[list[str]] = field(default_factory=list)
    table2_header: dict[str, float] = field(default_factory=dict)
    table2_rows: list[dict[str, float]] = field(default_factory=list)
    text: str = ""
    cells: list[str] = field(default_factory=list)
    viewport: tuple[int, int] = (1280, 800)
    errors: list[str] = field(default_factory=list)


#: A box's edges, in the viewport's pixels.
BOX = (
    "element => { const box = element.getBoundingClientRect(); return {top: box.top, bottom: box.bottom, "
    "right: box.right}; }"
)


def read_summary(summary: Path, screenshot: Path, viewport: tuple[int, int] = (1280, 800)) -> SummaryView:
    """Open ``summary`` in headless Chromium at ``viewport``, save its first screen to ``screenshot`` and return
    what that screen holds. Every request that is not local is aborted (it is a self-contained page)."""
    from playwright.sync_api import sync_playwright

    view = SummaryView(viewport=viewport)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(LOCAL_SCHEMES) else r.abort())
        page.on("pageerror", lambda error: view.errors.append(str(error)))
        page.goto(summary.resolve().as_uri(), wait_until="load")
        page.screenshot(path=str(screenshot))
        view.first_screen = [[_text(cell) for cell in row] for row in page.locator("body").evaluate(FIRST_SCREEN_ROWS)]
        table = page.locator("table#table2_unsup")
        view.table2_header = table.locator("thead").evaluate(BOX)
        view.table2_rows = [row.evaluate(BOX) for row in table.locator("tbody tr").all()]
        view.text = page.locator("body").inner_text()
        view.cells = [_text(t) for t in page.locator("td, tbody th").all_inner_texts()]
        browser.close()
    return view


def read_report(report: Path, screenshot_dir: Path | None = None) -> ReportView:
    """Open ``report`` in headless Chromium, click through every category and entry, and return what it shows."""
    from playwright.sync_api import sync_playwright

    view = ReportView()
    profile = tempfile.mkdtemp(prefix="report-profile-")
    try:
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                profile,
                executable_path=str(CHROMIUM),
                headless=True,
                args=CHROMIUM_FLAGS,
                viewport={"width": 1600, "height": 1000},
                service_workers="block",
            )

            def route(request_route) -> None:
                url = request_route.request.url
                if url.startswith(LOCAL_SCHEMES):
                    request_route.continue_()
                else:
                    view.blocked.append(url)
                    request_route.abort()

            context.route("**/*", route)
            context.on("request", lambda request: view.requests.append(request.url))
            page = context.pages[0] if context.pages else context.new_page()
            page.on("pageerror", lambda error: view.errors.append(str(error)))
            page.goto(report.resolve().as_uri(), wait_until="load")
            page.wait_for_selector("nav ul li a span")
            nav = page.locator("nav").first
            view.description = _text(page.locator("div.prose").first.inner_text())
            if screenshot_dir:
                page.screenshot(path=str(screenshot_dir / "report_landing.png"))
            menu = [_text(t) for t in nav.locator("ul > li > a > span").all_inner_texts()]
            categories = [m for m in menu if m not in BUILT_IN_PAGES]

            def open_category(name: str) -> None:
                page.locator("nav ol li a").first.click()  # the home crumb
                nav.locator("ul > li > a", has=page.locator(f"span:text-is('{name}')")).click()
                page.wait_for_selector("nav table tbody tr")

            for category in categories:
                open_category(category)
                rows = nav.locator("table tbody tr")
                paths = [_text(rows.nth(i).locator("td").first.inner_text()) for i in range(rows.count())]
                for path in paths:
                    open_category(category)
                    row = nav.locator("table tbody tr", has=page.locator(f"td:text-is('{path}')"))
                    row.locator("td").last.locator("a[type=button]").nth(1).click()  # the info button
                    page.wait_for_selector("nav li.prose")
                    caption = _text(nav.locator("li.prose").first.inner_text())
                    view.entries[path] = {"category": category, "caption": caption}
                    if screenshot_dir and path == "results/table2_unsup.csv":
                        page.screenshot(path=str(screenshot_dir / "report_table2.png"))
            if "results/summary.html" in view.entries:
                open_category(view.entries["results/summary.html"]["category"])
                row = nav.locator("table tbody tr", has=page.locator("td:text-is('results/summary.html')"))
                row.locator("td").last.locator("a[type=button]").nth(0).click()  # the eye button: show it
                frame = page.frame_locator("iframe").first
                frame.locator("#verdicts").wait_for()
                view.summary_verdicts = _text(frame.locator("#verdicts").inner_text())
                table = frame.locator("table#table2_unsup")
                view.summary_table_header = [_text(t) for t in table.locator("thead th").all_inner_texts()]
                view.summary_table_rows = table.locator("tbody").evaluate_all(ROWS)
                screen = frame.locator("body").evaluate(FIRST_SCREEN_ROWS)
                view.summary_first_screen = [[_text(cell) for cell in row] for row in screen]
                if screenshot_dir:
                    page.screenshot(path=str(screenshot_dir / "report_summary.png"))
            context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return view
