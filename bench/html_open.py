"""How long an exported HTML page takes to open in headless Chromium, and a search in it.

    python bench/html_open.py PAGE.html [--runs 3]

Prints the seconds from navigation to the load event (parsing, style, layout and the
page's script), the browser's own clock for the first paint with content (when a person
sees the page), the DOM ready for scripts and the load event, then the time of one
in-page search (typing a word and Enter, as a person does).  Chromium is driven over its DevTools protocol by the tests' client
(``tests/cdp.py``).  A 10,000-message session is made with
``bench/generate.py --size 55M`` and ``dshlog export ... --format html``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from cdp import Browser, find_browser


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("page", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--word", default="error")
    args = ap.parse_args()
    binary = find_browser()
    if binary is None:
        sys.exit("no Chromium on PATH")
    url = args.page.resolve().as_uri()
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:  # Chromium may still be writing to it as it exits
        b = Browser(binary, Path(profile))
        try:
            for run in range(args.runs):
                b.open("about:blank")  # the previous run's page is unloaded outside the timing
                load = b.open(url)
                n = b.js("document.querySelectorAll('main [data-seq]').length")
                marks = b.js(
                    "(function(){var n=performance.getEntriesByType('navigation')[0];"
                    "var p=performance.getEntriesByName('first-contentful-paint')[0];"
                    "return [p?p.startTime:-1,n.domInteractive,n.domContentLoadedEventEnd,n.loadEventEnd]})()"
                )
                fcp, interactive, ready, loaded = (m / 1000 for m in marks)
                start = time.monotonic()
                b.js(f"var q=document.getElementById('q');q.value={args.word!r};q.dispatchEvent(new KeyboardEvent('keydown',{{key:'Enter'}}))")
                search = time.monotonic() - start
                hits = b.js("(document.getElementById('hits')||{}).textContent")
                print(f"run {run + 1}: load {load:.2f} s ({n} items); in the browser: first contentful paint {fcp:.2f} s, "
                      f"DOM interactive {interactive:.2f} s, DOMContentLoaded {ready:.2f} s, load {loaded:.2f} s; "
                      f"search {args.word!r} {search:.2f} s ({hits})")
            problems = b.problems()
            print("console problems:", problems or "none")
        finally:
            b.close()


if __name__ == "__main__":
    main()
