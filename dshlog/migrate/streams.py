"""Canonical packing of timed model-stream chunks into v2+ stream records.

FORMAT §3.4 / SEMANTICS §1.5: deltas of one kind and block extend the *last*
record when the time gap is a safe integer; every other chunk is a raw record
and interrupts runs.  Building incrementally keeps an attempt's memory at the
size of its packed stream instead of its raw chunk events.
"""

from __future__ import annotations

from typing import Any

from ..protocol.values import MAX_SAFE_INTEGER

_RUN_OF = {"text-delta": "text-chunks", "reasoning-delta": "reasoning-chunks"}


def _safe_gap(a: Any, b: Any) -> bool:
    if not isinstance(a, int) or not isinstance(b, int) or isinstance(a, bool) or isinstance(b, bool):
        return False
    return abs(b - a) <= MAX_SAFE_INTEGER


class StreamBuilder:
    """Appends ``(time, chunk)`` pairs and yields the canonical record list."""

    __slots__ = ("records", "_last_time")

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self._last_time: Any = None  # time of the last member of the last record

    def push(self, time: Any, chunk: Any) -> None:
        last = self.records[-1] if self.records else None
        ctype = chunk.get("type") if isinstance(chunk, dict) else None
        run = _RUN_OF.get(ctype) if isinstance(ctype, str) else None
        if run is not None and isinstance(chunk.get("text"), str) and "index" in chunk:
            if (last is not None and last["type"] == run and last["index"] == chunk["index"]
                    and _safe_gap(self._last_time, time)):
                last["dt"].append(time - self._last_time)
                last["texts"].append(chunk["text"])
            else:
                self.records.append({"type": run, "time0": time, "index": chunk["index"], "dt": [],
                                     "texts": [chunk["text"]]})
            self._last_time = time
            return
        if (ctype == "tool-call-delta" and isinstance(chunk.get("id"), str) and chunk["id"]
                and isinstance(chunk.get("argumentsDelta"), str) and "index" in chunk
                and chunk.get("name") != ""):
            has_name = "name" in chunk
            if (last is not None and last["type"] == "tool-call-chunks" and last["index"] == chunk["index"]
                    and last["id"] == chunk["id"] and ("name" in last) == has_name
                    and (not has_name or last["name"] == chunk["name"]) and _safe_gap(self._last_time, time)):
                last["dt"].append(time - self._last_time)
                last["args"].append(chunk["argumentsDelta"])
            else:
                rec: dict[str, Any] = {"type": "tool-call-chunks", "time0": time, "index": chunk["index"], "dt": [],
                                       "id": chunk["id"]}
                if has_name:
                    rec["name"] = chunk["name"]
                rec["args"] = [chunk["argumentsDelta"]]
                self.records.append(rec)
            self._last_time = time
            return
        self.records.append({"type": "chunk", "time": time, "chunk": chunk})
        self._last_time = time


    def push_run(self, run: Any) -> None:
        """Append a compact run (:class:`~dshlog.read.rows.PackedRun`) as if its members were pushed one by one.

        FORMAT §4.3 item 4: the run becomes one record, merged into the last record
        when that has the same kind/index (and id/name) and the gap is representable.
        Inside a run every gap is a safe ``dt`` entry, so the members always stay
        together; the result equals packing the expanded chunk sequence.  A tool run
        whose id or name canonical packing would not pack goes member by member.
        """
        kind = run.kind
        last = self.records[-1] if self.records else None
        time0 = run.time
        if kind == "tool-call-chunks":
            data = run.data
            cid = data.get("id")
            has_name = "name" in data
            name = data.get("name")
            if not (isinstance(cid, str) and cid) or name == "":
                for ev in run.expand():
                    self.push(ev["time"], ev["data"]["chunk"])
                return
            if (last is not None and last["type"] == kind and last["index"] == run.index and last["id"] == cid
                    and ("name" in last) == has_name and (not has_name or last["name"] == name)
                    and _safe_gap(self._last_time, time0)):
                dts = last["dt"]
                dts.append(time0 - self._last_time)
                dts.extend(run.dt)
                last["args"].extend(run.members)
            else:
                rec: dict[str, Any] = {"type": kind, "time0": time0, "index": run.index, "dt": list(run.dt), "id": cid}
                if has_name:
                    rec["name"] = name
                rec["args"] = list(run.members)
                self.records.append(rec)
        elif (last is not None and last["type"] == kind and last["index"] == run.index
              and _safe_gap(self._last_time, time0)):
            dts = last["dt"]
            dts.append(time0 - self._last_time)
            dts.extend(run.dt)
            last["texts"].extend(run.members)
        else:
            self.records.append({"type": kind, "time0": time0, "index": run.index, "dt": list(run.dt),
                                 "texts": list(run.members)})
        self._last_time = run.last_time


def pack(timed_chunks: list[tuple[Any, Any]]) -> list[dict[str, Any]]:
    """Pack a whole list at once (tests and small callers)."""
    b = StreamBuilder()
    for t, c in timed_chunks:
        b.push(t, c)
    return b.records


def expand(stream: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    """Inverse of :func:`pack`: the timed raw chunks of a stream."""
    out: list[tuple[Any, Any]] = []  # (time, chunk): a chunk record holds whatever was logged
    for rec in stream:
        kind = rec.get("type")
        if kind == "chunk":
            out.append((rec.get("time"), rec.get("chunk")))
            continue
        t = rec.get("time0")
        members = rec.get("args") if kind == "tool-call-chunks" else rec.get("texts")
        dts = rec.get("dt") or []
        for k, member in enumerate(members or []):
            if k:
                t = t + dts[k - 1]
            if kind == "tool-call-chunks":
                chunk: dict[str, Any] = {"type": "tool-call-delta", "index": rec["index"], "id": rec["id"]}
                if "name" in rec:
                    chunk["name"] = rec["name"]
                chunk["argumentsDelta"] = member
            else:
                chunk = {"type": "text-delta" if kind == "text-chunks" else "reasoning-delta",
                         "index": rec["index"], "text": member}
            out.append((t, chunk))
    return out
