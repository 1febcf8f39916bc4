"""The HTML export in a real headless Chromium: rendering, filters and search clicked for real.

Chromium is Debian's ``chromium``.  When it is absent and this runs as root on a
Debian-like system, the setup installs it once (``apt-get install -y chromium``;
``DSHLOG_NO_BROWSER_INSTALL=1`` turns that off); otherwise the tests skip and say why.
The page is driven over the DevTools protocol (:mod:`cdp`): real mouse clicks and key
presses, and a record of console errors and of every request the page makes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from cdp import Browser, find_browser
from conftest import FIXTURES, run_env

LOOP_V4 = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _install() -> tuple[str | None, str]:
    found = find_browser()
    if found:
        return found, ""
    if os.environ.get("DSHLOG_NO_BROWSER_INSTALL") == "1":
        return None, "no Chromium, and DSHLOG_NO_BROWSER_INSTALL=1 forbids installing it"
    if not shutil.which("apt-get") or os.geteuid() != 0:
        return None, "no Chromium (chromium / chromium-browser on PATH), and no root apt-get to install it"
    try:
        done = subprocess.run(["apt-get", "install", "-y", "chromium"], capture_output=True, timeout=900, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"no Chromium, and `apt-get install -y chromium` failed: {exc}"
    if done.returncode != 0:
        return None, "no Chromium, and `apt-get install -y chromium` failed: " + done.stderr.decode(errors="replace")[-300:]
    return find_browser(), "installed by the test setup"


@pytest.fixture(scope="module")
def browser_binary() -> str:
    binary, why = _install()
    if binary is None:
        pytest.skip(why)
    return binary


@pytest.fixture
def browser(browser_binary, tmp_path):
    b = Browser(browser_binary, tmp_path / "profile")
    yield b
    b.close()


def _export(tmp_path: Path, source: Path = LOOP_V4) -> Path:
    page = tmp_path / "page.html"
    code, _, err = run_env("export", str(source), "--format", "html", "-o", str(page))
    assert code == 0, err
    return page


def _headless(binary: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile-cli'}", *args]
    return subprocess.run(cmd, capture_output=True, timeout=120, check=False)


def test_html_export_renders_in_chromium(browser_binary, tmp_path) -> None:
    url = _export(tmp_path).resolve().as_uri()
    dom = _headless(browser_binary, tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr.decode(errors="replace")[-2000:]
    html = dom.stdout.decode("utf-8")
    # the DOM the browser built holds the conversation
    for needle in ("loop-0001", "Turn 1", "go", "calling echo", "echo: one", "done", "again", "RATE_LIMIT", "第一点是", "aborted by user", "第二点是……"):
        assert needle in html, needle
    assert html.count("<details") >= 2  # system prompt and tool output fold
    assert '<div id="tools">' in html  # the script ran: the controls are shown
    png = tmp_path / "loop.png"
    shot = _headless(browser_binary, tmp_path, f"--screenshot={png}", "--window-size=1200,1600", url)
    assert shot.returncode == 0, shot.stderr.decode(errors="replace")[-2000:]
    data = png.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 10_000


def _shown(b: Browser, selector: str) -> list[bool]:
    return b.js(f"Array.from(document.querySelectorAll({selector!r})).map(function(e){{return getComputedStyle(e).display!=='none'}})")


def test_filters_and_search_work_with_real_clicks(browser, tmp_path) -> None:
    b = browser
    b.open(_export(tmp_path).resolve().as_uri())
    assert b.js("document.getElementById('tools').hidden") is False
    assert b.js("document.querySelectorAll('nav.toc li').length") == 4
    # filters: unticking "tool results" hides every result, ticking it shows them again
    assert _shown(b, "[data-f=result]") == [True]
    b.click("input[data-filter=result]")
    assert _shown(b, "[data-f=result]") == [False] and _shown(b, "[data-f=call]") == [True]
    b.click("input[data-filter=result]")
    assert _shown(b, "[data-f=result]") == [True]
    b.click("input[data-filter=retry]")
    assert _shown(b, "[data-f=retry]") == [False, False]
    b.click("input[data-filter=retry]")
    # search: click the box, type, Enter; the hit is marked, counted, and its fold opened
    b.click("#q")
    b.type_text("echo")
    b.press("Enter", 13)
    hits = b.js("document.getElementById('hits').textContent")
    assert hits.startswith("1 of "), hits
    total = int(hits.split(" of ")[1])
    assert total == b.js("document.querySelectorAll('main mark').length") >= 2
    b.press("Enter", 13)
    assert b.js("document.getElementById('hits').textContent") == f"2 of {total}"
    b.click("#prev")
    assert b.js("document.getElementById('hits').textContent") == f"1 of {total}"
    assert b.js("document.querySelector('mark.current').textContent.toLowerCase()") == "echo"
    # a hit inside a folded tool output opens its <details>
    b.click("#q")
    b.js("document.getElementById('q').select()")
    b.type_text("echo: one")
    b.press("Enter", 13)
    assert b.js("document.querySelector('mark.current').closest('details').open") is True
    # a TOC link jumps to its turn
    b.click("nav.toc li:nth-child(3) a")
    assert b.js("location.hash") == "#turn-3"
    assert b.problems() == []
    assert [u for u in b.requests() if not u.startswith("file:")] == []


def test_page_reads_with_scripts_off(browser, tmp_path) -> None:
    b = browser
    b.call("Emulation.setScriptExecutionDisabled", value=True)
    b.open(_export(tmp_path).resolve().as_uri())
    assert b.js("document.getElementById('tools').hidden") is True  # no dead controls
    text = b.js("document.querySelector('main').innerText")
    for needle in ("calling echo", "done", "aborted by user"):
        assert needle in text
    assert b.js("document.querySelectorAll('nav.toc a').length") == 4


def test_the_checks_see_console_errors_and_requests(browser, tmp_path) -> None:
    """The two detectors above can fail: a CSP-blocked script and an outside request are seen."""
    b = browser
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"script-src 'none'\"></head>"
        "<body><script>1</script><img src=\"http://127.0.0.1:9/x.png\"></body></html>"
    )
    b.open(page.resolve().as_uri())
    assert b.problems(), "a blocked inline script is a console error"
    assert "http://127.0.0.1:9/x.png" in b.requests()


def test_find_a_turns_tool_error_in_a_long_session(browser, long_session, tmp_path) -> None:
    """The issue's bar: the contents flag the failing turn; one click shows its error, unfolded."""
    path, turn, tool, first_line = long_session
    b = browser
    seconds = b.open(_export(tmp_path, path).resolve().as_uri())
    entry = b.js(
        "Array.from(document.querySelectorAll('nav.toc li')).findIndex(function(li){"
        f"return li.querySelector('a').textContent.indexOf({f'{turn} · '!r})===0}})"
    )
    assert entry >= 0
    flag = b.js(f"document.querySelectorAll('nav.toc li')[{entry}].querySelector('.flag').title")
    assert f"error: {tool}" in flag
    b.click(f"nav.toc li:nth-child({entry + 1}) a")
    anchor = b.js("location.hash").lstrip("#")
    shown = b.js(
        f"Array.from(document.getElementById({anchor!r}).querySelectorAll('.tool.result.is-error details'))"
        ".filter(function(d){return d.open&&d.getBoundingClientRect().height>0}).map(function(d){return d.textContent})"
    )
    assert any(first_line[:40] in t for t in shown), shown
    assert b.problems() == []
    print(f"{len(path.read_bytes().splitlines())} events: page loaded in {seconds:.2f} s")


def test_the_page_of_a_session_dsh_refuses_opens_with_the_refusal(browser, tmp_path) -> None:
    """The banner is the first thing a reader sees: visible at the top of the first screen, scripts on or off."""
    from conftest import NO_DEPTH_REASON, no_depth_session

    refused = no_depth_session(tmp_path / "no-depth")
    page = tmp_path / "refused.html"
    code, _, err = run_env("export", str(refused), "--format", "html", "-o", str(page))
    assert code == 4, err
    b = browser
    for scripts in (True, False):
        b.call("Emulation.setScriptExecutionDisabled", value=not scripts)
        b.open(page.resolve().as_uri())
        box = b.js("(function(){var e=document.getElementById('refusal'),r=e.getBoundingClientRect(),s=getComputedStyle(e);"
                   "return {top:r.top,height:r.height,width:r.width,shown:s.display!=='none'&&s.visibility!=='hidden',"
                   "first:document.querySelector('header').firstElementChild===e,text:e.innerText,view:innerHeight}})()")
        assert box["shown"] and box["first"] and box["height"] > 20 and box["width"] > 200, box
        assert 0 <= box["top"] < 100 < box["view"], box  # at the top of the first screen
        assert f"dsh refuses to open this session: {NO_DEPTH_REASON}" in box["text"]
        assert f"to bring it back: dshlog rescue {refused}" in box["text"]
        # a turn is laid out when it is relevant to the screen (content-visibility: auto): on a busy
        # machine that frame may come after the load event, so the text is awaited, not sampled once
        deadline = time.monotonic() + 10
        while "READY" not in (text := b.js("document.querySelector('main').innerText")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "READY" in text
    assert b.problems() == []


LONG_PROMPT = "please look again at every failing test in the parser and the exporter, then explain each failure in detail"

# For the TOC entry of turn 2: the flag's box, the visible box of every ancestor that clips
# (overflow other than visible, up to the TOC and the viewport), the link's widths and the row's height.
_FLAG_BOX = """(function(){
var li=document.querySelectorAll('nav.toc li')[1],f=li.querySelector('.flag'),a=li.querySelector('a');
li.scrollIntoView({block:'center'});var r=f.getBoundingClientRect(),clips=[];
for(var e=f.parentElement;e&&e!==document.documentElement;e=e.parentElement){var s=getComputedStyle(e);
if(s.overflowX!=='visible'||s.overflowY!=='visible'||e.matches('nav.toc')){var c=e.getBoundingClientRect();
clips.push({tag:e.tagName,left:c.left+e.clientLeft,top:c.top+e.clientTop,right:c.left+e.clientLeft+e.clientWidth,bottom:c.top+e.clientTop+e.clientHeight})}}
clips.push({tag:'viewport',left:0,top:0,right:document.documentElement.clientWidth,bottom:innerHeight});
return {flag:{left:r.left,top:r.top,right:r.right,bottom:r.bottom,width:r.width,text:f.textContent},clips:clips,
cut:a.scrollWidth>a.clientWidth,ellipsis:getComputedStyle(a).textOverflow,row:li.getBoundingClientRect().height,line:a.getBoundingClientRect().height}})()"""


def test_contents_flags_stay_visible_after_a_long_prompt(browser, tmp_path) -> None:
    """A turn's ✗ is never clipped by its prompt: the prompt is ellipsised, the flag stays whole, narrow or wide."""
    source = tmp_path / "long-prompt.jsonl"
    raw = LOOP_V4.read_bytes()
    assert raw.count(b'"text":"again"') == 2  # the queued prompt and the user message of turn 2, whose model call fails
    source.write_bytes(raw.replace(b'"text":"again"', b'"text":"' + LONG_PROMPT.encode() + b'"'))
    url = _export(tmp_path, source).resolve().as_uri()
    b = browser
    for width in (420, 1280):  # the TOC on top of the page, and in its own 250px column
        b.call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=False)
        b.open(url)
        box = b.js(_FLAG_BOX)
        flag = box["flag"]
        assert flag["text"] == "✗ 1" and flag["width"] > 5, box
        assert any(c["tag"] == "NAV" for c in box["clips"]), box  # the TOC's own visible box is among them
        for c in box["clips"]:
            inside = c["left"] <= flag["left"] and flag["right"] <= c["right"] and c["top"] <= flag["top"] and flag["bottom"] <= c["bottom"]
            assert inside, (width, c, flag)
        assert box["cut"] and box["ellipsis"] == "ellipsis", box  # the prompt is shortened, not wrapped
        assert box["row"] < 2 * box["line"], box  # one line per turn
    assert b.problems() == []


def _search(b: Browser, query: str) -> str:
    b.click("#q")
    b.js("document.getElementById('q').select()")
    b.type_text(query)
    b.press("Enter", 13)
    return b.js("document.getElementById('hits').textContent")


def _enter(b: Browser, *, shift: bool = False) -> str:
    """Enter in the search box (a click on a filter took the focus)."""
    b.click("#q")
    b.press("Enter", 13, shift=shift)
    return b.js("document.getElementById('hits').textContent")


_CURRENT_SHOWN = "(function(){var m=document.querySelector('mark.current');return !!m&&m.getClientRects().length>0})()"


def test_search_counts_and_visits_only_what_the_filters_show(browser, tmp_path) -> None:
    """Hidden matches are neither counted nor visited; the counter follows each filter change at once."""
    b = browser
    b.open(_export(tmp_path).resolve().as_uri())
    # "echo: one" is only in the tool output (its summary line and its text)
    assert _search(b, "echo: one") == "1 of 2"
    b.click("input[data-filter=result]")
    assert b.js("document.getElementById('hits').textContent") == "0 matches"  # no Enter needed
    assert _enter(b) == "0 matches"
    assert _enter(b, shift=True) == "0 matches"
    b.click("input[data-filter=result]")
    assert b.js("document.getElementById('hits').textContent") == "1 of 2"  # back where it was
    # "echo" is also in the assistant's text and the tool call
    total = int(_search(b, "echo").split(" of ")[1])
    assert total == b.js("document.querySelectorAll('main mark').length") >= 4
    b.click("input[data-filter=result]")
    hidden = b.js("Array.from(document.querySelectorAll('main mark')).filter(function(m){return !m.getClientRects().length}).length")
    assert hidden >= 2
    shown = total - hidden
    assert b.js("document.getElementById('hits').textContent") == f"1 of {shown}"  # the first, in the assistant's text
    seen = []
    for _ in range(shown + 2):  # round and round: every stop is a shown match, counted among the shown
        seen.append(_enter(b))
        assert b.js(_CURRENT_SHOWN), seen
    assert seen == [f"{i % shown + 1} of {shown}" for i in range(1, shown + 3)]
    at = int(seen[-1].split(" of ")[0])
    for _ in range(shown + 1):  # and back, one further round
        b.click("#prev")
        assert b.js(_CURRENT_SHOWN)
    assert b.js("document.getElementById('hits').textContent") == f"{(at - 1 - (shown + 1)) % shown + 1} of {shown}"
    # every filter unticked: only the text no filter hides is counted
    for key in ("reasoning", "call", "system", "retry"):
        b.click(f"input[data-filter={key}]")
    assert _search(b, "echo: one") == "0 matches"
    assert b.js("document.querySelector('mark.current')") is None
    # the toolbar's own words are not the transcript
    for key in ("reasoning", "call", "result", "system", "retry"):
        b.click(f"input[data-filter={key}]")
    assert _search(b, "tool results") == "0 matches"
    assert b.js("document.querySelectorAll('#tools mark').length") == 0
    assert b.problems() == []
