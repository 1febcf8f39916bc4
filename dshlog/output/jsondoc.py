"""JSON for programs: the versioned shape of every JSON document, and documents built from typed results.

The versioned JSON documents (the ``as_dict()`` of each typed result that a
command's ``--json`` prints, and the JSON export of :mod:`.jsonexport`) start
``{"shape":1,…}``.  Bump :data:`SHAPE` on any incompatible change.  This module holds no transcript type, so a command that
prints JSON does not load the transcript model.

JSON is written by :func:`dshlog.protocol.jsjson.dumps` and is exact: it is never
passed through the terminal sanitiser (JSON escapes control characters itself).
"""

from __future__ import annotations

from typing import Any

from .text import preview

__all__ = ["SHAPE", "diff_document"]

SHAPE = 1


def _previewed(m: dict[str, Any]) -> dict[str, Any]:
    return {"index": m["index"], "id": m["id"], "role": m["role"], "preview": preview(m["message"])}


def diff_document(d: dict[str, Any], label_a: str, label_b: str) -> dict[str, Any]:
    """The body of ``diff --json``: the two labels, then the request diff with a preview in place of each message."""
    msgs = d["messages"]
    messages = {
        **msgs,
        "added": [_previewed(m) for m in msgs["added"]],
        "removed": [_previewed(m) for m in msgs["removed"]],
        "replaced": [{**r, "before": _previewed(r["before"]), "after": _previewed(r["after"])} for r in msgs["replaced"]],
    }
    return {"a": label_a, "b": label_b, **d, "messages": messages}

