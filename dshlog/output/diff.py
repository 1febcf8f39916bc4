"""A request diff for people: one fact per line (``diff``, and the browser's diff pane).

The JSON form is :func:`dshlog.output.jsondoc.diff_document`; both are made from
:func:`dshlog.model.diff.diff_requests`' result.
"""

from __future__ import annotations

from typing import Any

from ..protocol.jsjson import dumps
from .text import preview

__all__ = ["diff_lines"]


def _ref(m: dict[str, Any]) -> str:
    return f"[{m['index']}] {m['role']} {m['id']}"


def _short(v: Any, width: int = 60) -> str:
    if v is None:
        return "(absent)"
    s = dumps(v).decode("utf-8", "replace")
    return s if len(s) <= width else s[: width - 1] + "…"


def diff_lines(d: dict[str, Any], label_a: str, label_b: str) -> list[str]:
    """A request diff (:func:`dshlog.model.diff.diff_requests`) for people, one fact per line (unsanitised)."""
    msgs = d["messages"]
    out = [f"{label_a}: {msgs['before']} messages", f"{label_b}: {msgs['after']} messages"]
    if d["identical"]:
        out.append("identical: the two requests are byte for byte the same")
        return out
    if d["prefixIntact"]:
        out.append(f"prefix intact: {label_b} starts with all {msgs['before']} messages of {label_a}, byte for byte")
    else:
        out.append(f"prefix broken at message {d['prefixBrokenAt']} ({d['commonPrefix']} leading messages identical)")
    cfg = d["config"]
    for key in cfg["added"] + cfg["removed"] + cfg["changed"]:
        v = cfg["values"][key]
        out.append(f"config {key}: {_short(v['before'])} -> {_short(v['after'])}")
    for what in ("added", "removed", "changed"):
        if d["tools"][what]:
            out.append(f"tools {what}: {', '.join(d['tools'][what])}")
    if d["toolHistoryChanged"]:
        out.append("toolHistory changed")
    if d["sessionIdChanged"]:
        out.append("sessionId changed")
    for r in msgs["replaced"]:
        b, a = r["before"], r["after"]
        same = " (same id, content changed)" if r["sameId"] else ""
        out.append(f"~ replaced {_ref(b)} -> {_ref(a)}{same}: {preview(a['message'])}")
    for m in msgs["removed"]:
        out.append(f"- removed  {_ref(m)}: {preview(m['message'])}")
    for m in msgs["added"]:
        out.append(f"+ added    {_ref(m)}: {preview(m['message'])}")
    return out
