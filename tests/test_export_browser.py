"""The HTML export rendered by a real headless browser (skipped where no Chromium is installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli

LOOP_V4 = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def find_browser() -> str | None:
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


BROWSER = find_browser()
requires_browser = pytest.mark.skipif(
    BROWSER is None, reason="no headless browser: install Chromium (/usr/bin/chromium, or chromium/google-chrome on PATH) to render the HTML export"
)


def _browser(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    cmd = [
        str(BROWSER),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, timeout=120, check=False)


@requires_browser
def test_html_export_renders_in_chromium(tmp_path, capsysbinary) -> None:
    page = tmp_path / "loop.html"
    code, _, err = run_cli(capsysbinary, "export", str(LOOP_V4), "--format", "html", "-o", str(page))
    assert code == 0, err
    url = page.resolve().as_uri()

    dom = _browser(tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr.decode(errors="replace")[-2000:]
    html = dom.stdout.decode("utf-8")
    # the DOM the browser built holds the conversation
    for needle in ("loop-0001", "Turn 1", "go", "calling echo", "echo: one", "done", "again", "RATE_LIMIT", "第一点是", "aborted by user", "第二点是……"):
        assert needle in html, needle
    assert html.count("<details") >= 2  # system prompt and tool output fold
    assert "<section" in html and "</main>" in html

    png = tmp_path / "loop.png"
    shot = _browser(tmp_path, f"--screenshot={png}", "--window-size=1200,1600", url)
    assert shot.returncode == 0, shot.stderr.decode(errors="replace")[-2000:]
    data = png.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 10_000
