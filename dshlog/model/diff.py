"""What changed between two model requests, and where the cacheable prefix broke.

A provider's prompt cache only helps while each request starts with the
previous request's messages byte for byte.  When it does not (compaction, a
rewritten system prompt, a revised user message), the question is *what*
changed and *where*: this module compares two rebuilt requests
(:mod:`dshlog.model.requests`) field by field and message by message, comparing
messages in dsh's own compact JSON (:func:`dshlog.jsjson.dumps`) so "equal"
means exactly what the provider saw.

The result names each message that changed by its index, id and role and
carries the message itself; previews and wording are the renderers' part
(:func:`dshlog.output.diff.diff_lines`, :func:`dshlog.output.jsondoc.diff_document`).

Both requests of one log are built in a single pass (:func:`requests_at`);
requests from two files are built by two :func:`dshlog.model.requests.rebuild` calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from difflib import SequenceMatcher
from typing import Any

from ..errors import UsageError
from ..protocol.jsjson import dumps
from .requests import RequestBuilder, no_such_request

# Request keys that are not part of the header config.
_NON_CONFIG = ("messages", "toolHistory", "tools", "sessionId")


def requests_at(events: Iterable[dict[str, Any]], numbers: list[int], *, session_id: str | None = None) -> dict[int, dict[str, Any]]:
    """Requests ``numbers`` (1-based) of one log, built in one pass that stops after the last one."""
    wanted = sorted(set(numbers))
    for n in wanted:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise UsageError(f"request numbers start at 1, got {n!r}")
    builder = RequestBuilder(session_id=session_id)
    found: dict[int, dict[str, Any]] = {}
    for event in events:
        if builder.is_settlement(event) and builder.settlements + 1 in wanted:
            if event.get("seq") != builder.surface.next_seq:
                builder.apply(event)  # raises the contiguity error
            found[builder.settlements + 1] = builder.build()
            if len(found) == len(wanted):
                return found
        builder.apply(event)
    missing = [n for n in wanted if n not in found]
    raise UsageError(no_such_request(missing[0], builder.settlements))


def _describe(index: int, message: Any) -> dict[str, Any]:
    """One message of a request, by position, id and role, with the message itself."""
    m = message if isinstance(message, dict) else {}
    return {"index": index, "id": m.get("id"), "role": m.get("role"), "message": m}


def _changed_keys(a: dict[str, Any], b: dict[str, Any]) -> dict[str, list[str]]:
    added = [k for k in b if k not in a]
    removed = [k for k in a if k not in b]
    changed = [k for k in a if k in b and dumps(a[k]) != dumps(b[k])]
    return {"added": added, "removed": removed, "changed": changed}


def _tool_name(tool: Any) -> str:
    return str(tool.get("name")) if isinstance(tool, dict) else dumps(tool).decode("utf-8", "replace")


def _tools(a: Any, b: Any) -> dict[str, list[str]]:
    def index(tools: Any) -> dict[str, bytes]:
        if not isinstance(tools, list):
            return {} if tools is None else {"(tools)": dumps(tools)}
        return {_tool_name(t): dumps(t) for t in tools}

    ia, ib = index(a), index(b)
    return {
        "added": [n for n in ib if n not in ia],
        "removed": [n for n in ia if n not in ib],
        "changed": [n for n in ia if n in ib and ia[n] != ib[n]],
    }


def diff_requests(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Differences from request ``a`` to request ``b`` (both as :func:`dshlog.model.requests.rebuild` returns them).

    ``prefixBrokenAt`` is the first message index where ``b`` stops repeating
    ``a`` byte for byte (``None`` when every message of ``a`` starts ``b``).
    Messages past the common prefix are aligned by their bytes.  Within a changed
    run, a message whose id survives is *replaced* (``sameId``: content rewritten);
    so is the first old message when a new one of the same role takes its place
    (a compaction summary, a new system prompt); the rest are *removed* or *added*.
    """
    ma: list[Any] = a["messages"] if isinstance(a.get("messages"), list) else []
    mb: list[Any] = b["messages"] if isinstance(b.get("messages"), list) else []
    ta = [dumps(m) for m in ma]
    tb = [dumps(m) for m in mb]
    prefix = 0
    while prefix < len(ta) and prefix < len(tb) and ta[prefix] == tb[prefix]:
        prefix += 1
    intact = prefix == len(ta)
    added: list[dict[str, Any]] = []
    removed: list[dict[str, Any]] = []
    replaced: list[dict[str, Any]] = []
    matcher = SequenceMatcher(a=ta[prefix:], b=tb[prefix:], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        i1, i2, j1, j2 = i1 + prefix, i2 + prefix, j1 + prefix, j2 + prefix
        if op == "insert":
            added.extend(_describe(j, mb[j]) for j in range(j1, j2))
        elif op == "delete":
            removed.extend(_describe(i, ma[i]) for i in range(i1, i2))
        elif op == "replace":
            gone = [_describe(i, ma[i]) for i in range(i1, i2)]
            new = [_describe(j, mb[j]) for j in range(j1, j2)]
            # the same id on both sides: content rewritten in place
            by_id = {m["id"]: m for m in new if m["id"] is not None}
            for m in list(gone):
                twin = by_id.get(m["id"]) if m["id"] is not None else None
                if twin is not None and twin in new:
                    replaced.append({"before": m, "after": twin, "sameId": True})
                    gone.remove(m)
                    new.remove(twin)
            # a new message in the place of an old one of the same role (compaction summary, new prompt)
            if gone and new and gone[0]["role"] == new[0]["role"]:
                replaced.append({"before": gone.pop(0), "after": new.pop(0), "sameId": False})
            removed.extend(gone)
            added.extend(new)
    config_a = {k: v for k, v in a.items() if k not in _NON_CONFIG}
    config_b = {k: v for k, v in b.items() if k not in _NON_CONFIG}
    config: dict[str, Any] = _changed_keys(config_a, config_b)
    config["values"] = {k: {"before": config_a.get(k), "after": config_b.get(k)} for k in config["added"] + config["removed"] + config["changed"]}
    tools = _tools(a.get("tools"), b.get("tools"))
    history_changed = dumps(a.get("toolHistory")) != dumps(b.get("toolHistory"))
    identical = dumps(a) == dumps(b)
    return {
        "identical": identical,
        "messages": {"before": len(ma), "after": len(mb), "added": added, "removed": removed, "replaced": replaced},
        "prefixIntact": intact,
        "prefixBrokenAt": None if intact else prefix,
        "commonPrefix": prefix,
        "config": config,
        "tools": tools,
        "toolHistoryChanged": history_changed,
        "sessionIdChanged": a.get("sessionId") != b.get("sessionId"),
    }
