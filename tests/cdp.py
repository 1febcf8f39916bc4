"""A headless Chromium driven over its DevTools protocol, with the standard library only.

The HTML export's filters and search are a script; checking them needs a real browser,
a real click and a real key press, and a record of console errors and network
requests.  That takes a few protocol commands over one WebSocket, so this module is a
minimal client (RFC 6455 text frames, client-masked) rather than a test dependency.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any


def find_browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


class _Socket:
    """One WebSocket connection (text frames; pings answered)."""

    def __init__(self, url: str) -> None:
        m = re.match(r"ws://([^:/]+):(\d+)(/.*)", url)
        assert m, url
        self.sock = socket.create_connection((m.group(1), int(m.group(2))), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            f"GET {m.group(3)} HTTP/1.1\r\nHost: {m.group(1)}:{m.group(2)}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            assert chunk, "the browser closed the connection during the handshake"
            head += chunk
        assert head.split(b"\r\n", 1)[0].split()[1] == b"101", head
        self.buf = head.split(b"\r\n\r\n", 1)[1]

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            assert chunk, "the browser closed the connection"
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text: str, opcode: int = 1) -> None:
        data = text.encode()
        n = len(data)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self) -> str:
        message = b""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            payload = self._exact(n)
            opcode = b0 & 0x0F
            if opcode == 9:  # ping
                self.send(payload.decode("latin-1"), opcode=10)
                continue
            if opcode == 8:
                raise ConnectionError("the browser closed the WebSocket")
            message += payload
            if b0 & 0x80:
                return message.decode("utf-8")


class Browser:
    """A headless Chromium with one page; records console errors, exceptions and every request."""

    def __init__(self, binary: str, profile: Path, *, width: int = 1280, height: int = 900) -> None:
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--remote-debugging-port=0",
             "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
             "--disable-default-apps", f"--window-size={width},{height}", f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        assert self.proc.stderr is not None
        port = None
        deadline = time.monotonic() + 60
        while port is None and time.monotonic() < deadline:
            line = self.proc.stderr.readline().decode(errors="replace")
            if not line and self.proc.poll() is not None:
                raise RuntimeError("chromium exited before it listened")
            m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if m:
                port = int(m.group(1))
        assert port is not None, "chromium did not open its DevTools port"
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30).read())
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = _Socket(page["webSocketDebuggerUrl"])
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_for(self, method: str, timeout: float = 60) -> dict[str, Any]:
        for i, e in enumerate(self.events):
            if e["method"] == method:
                return self.events.pop(i)
        self.ws.sock.settimeout(timeout)
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("method") == method:
                return msg
            if "method" in msg:
                self.events.append(msg)

    def open(self, url: str) -> float:
        """Load ``url``; returns the seconds until its load event."""
        self.events = [e for e in self.events if e["method"] != "Page.loadEventFired"]
        start = time.monotonic()
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")
        # the first page's (about:blank) load event can arrive late: wait for this document's own
        deadline = time.monotonic() + 60
        while self.js("document.readyState + ' ' + location.href") != f"complete {url}":
            assert time.monotonic() < deadline, f"{url} did not finish loading"
            time.sleep(0.05)
        return time.monotonic() - start

    def js(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(r["exceptionDetails"])
        return r["result"].get("value")

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the element (scrolled into view first)."""
        box = self.js(
            f"(function(){{var e=document.querySelector({json.dumps(selector)});e.scrollIntoView({{block:'center'}});"
            "var r=e.getBoundingClientRect();return [r.left+r.width/2,r.top+r.height/2]})()"
        )
        x, y = box
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left" if kind != "mouseMoved" else "none", clickCount=1)

    def type_text(self, text: str) -> None:
        self.call("Input.insertText", text=text)

    def press(self, key: str, code: int, *, shift: bool = False) -> None:
        mods = 8 if shift else 0
        self.call("Input.dispatchKeyEvent", type="rawKeyDown", key=key, code=key, windowsVirtualKeyCode=code, modifiers=mods)
        self.call("Input.dispatchKeyEvent", type="keyUp", key=key, code=key, windowsVirtualKeyCode=code, modifiers=mods)

    def screenshot(self, path: Path, *, full_height: int | None = None) -> None:
        params: dict[str, Any] = {"format": "png"}
        if full_height:
            params["clip"] = {"x": 0, "y": 0, "width": 1280, "height": full_height, "scale": 1}
            params["captureBeyondViewport"] = True
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", **params)["data"]))

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and log errors (CSP violations among them) so far."""
        self.js("0")  # flush pending events
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:300])
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                out.append("console: " + json.dumps(p.get("args"))[:300])
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                out.append("log: " + p["entry"].get("text", "")[:300])
        return out

    def requests(self) -> list[str]:
        self.js("0")
        return [e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"]

    def close(self) -> None:
        try:
            self.ws.sock.close()
        finally:
            self.proc.kill()
            self.proc.wait(timeout=30)
