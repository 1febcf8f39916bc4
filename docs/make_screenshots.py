"""Remake the README's screenshots: the HTML export in headless Chromium, ``dshlog browse`` in Textual.

    .venv/bin/python docs/make_screenshots.py

Writes ``docs/export-html.png`` (the bundled loop session's page with a search for
"echo" under way), ``docs/browse-conversation.png`` and ``docs/browse-requests.png``
(the browser's SVG screenshots, rasterised by the same Chromium).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from cdp import Browser, find_browser  # noqa: E402

from dshlog.browse.app import BrowseApp  # noqa: E402
from dshlog.model.transcript import SessionHead, session_facts  # noqa: E402
from dshlog.output.html import HtmlRenderer  # noqa: E402
from dshlog.output.renderer import render  # noqa: E402
from dshlog.read.session import open_session  # noqa: E402

LOOP = ROOT / "fixtures" / "v4" / "loop" / "session.v4.jsonl"
DOCS = ROOT / "docs"


def export_page(out: Path) -> None:
    with open_session(str(LOOP)) as log, out.open("wb") as fh:
        facts = session_facts(log.v4().header, path=LOOP.name, version=log.version)
        render(log.v4(), SessionHead(log.session_id, log.version, log.path, False, facts), HtmlRenderer(fh.write))


async def browse_svgs(tmp: Path) -> list[Path]:
    app = BrowseApp(target=str(LOOP.relative_to(ROOT)))  # the path shown in the heading, relative to the checkout
    out = []
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.pause()
        await pilot.press("g", *"2", "enter")
        await pilot.pause()
        out.append(Path(app.save_screenshot("conversation.svg", path=str(tmp))))
        await pilot.press("4")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        out.append(Path(app.save_screenshot("requests.svg", path=str(tmp))))
    return out


def main() -> None:
    os.chdir(ROOT)
    binary = find_browser()
    if binary is None:
        sys.exit("no Chromium on PATH")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        page = tmp / "loop.html"
        export_page(page)
        svgs = asyncio.run(browse_svgs(tmp))
        b = Browser(binary, tmp / "profile", width=1280, height=860)
        try:
            b.open(page.as_uri())
            b.click("#q")
            b.type_text("echo")
            b.press("Enter", 13)
            b.js("window.scrollTo(0,0)")
            b.screenshot(DOCS / "export-html.png")
            for svg, name in zip(svgs, ("browse-conversation.png", "browse-requests.png")):
                b.call("Emulation.setDeviceMetricsOverride", width=1280, height=800, deviceScaleFactor=1, mobile=False)
                b.open(svg.as_uri())
                b.screenshot(DOCS / name)
        finally:
            b.close()
    for name in ("export-html.png", "browse-conversation.png", "browse-requests.png"):
        print("written:", DOCS / name)


if __name__ == "__main__":
    main()
