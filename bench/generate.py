"""Deterministic generator of large, realistic, *valid* dsh session logs for benchmarks.

    python bench/generate.py --size 120M [--format v4|v0|both] [--seed 7] [--out bench/data]
    python bench/generate.py --size 120M --no-compaction           # the surface grows for the whole log
    python bench/generate.py --size 120M --huge-tool-result [20M,35M,50M]
    python bench/generate.py --many-small [1000]                   # a root of many small sessions

Real session logs are test snapshots of a few KB; measuring a reader on them says
nothing about a 500 MB log of a week-long session.  This script builds such logs
from one seeded random model of a session (turns, steps, streamed reasoning and
answers, parallel tool calls, retries, cancellations, compactions, subagents,
titles) and writes it in two physical forms:

* v4: ``session.v4.jsonl`` with header, ``seq``/``time`` envelopes, embedded
  ``stream`` records on ``assistant/message`` / ``assistant/attempt``;
* v0: ``session.jsonl`` with top-level ``assistant/chunk`` rows packed into
  ``text-chunks`` / ``reasoning-chunks`` / ``tool-call-chunks`` where dsh packed them
  (runs of >= 3 inside one append batch), expanded ``sourceEventSeqs`` on assistant
  messages, the system prompt in ``request/header.data.header.system`` and tool
  results as user-role ``tool-result`` wrappers.

Both come with a ``.zstd`` copy framed as dsh writes it: a header frame, then one
checksummed frame per append batch.  Files are placed in dsh's directory layout
(``<root>/<projectKey(cwd)>/<id>/session...``) so directory-level commands work;
plain and compressed copies live in separate roots, as dsh requires.

Shapes beyond that default (see :class:`Shape`): ``--no-compaction`` never compacts, so
the surface, the model's view, keeps every message of the log, as a long session on a
large context window does; ``--huge-tool-result`` places a few tool outputs of the given
sizes (each exactly that many bytes of text) at even shares of the conversation.
``--many-small`` writes a persistence root of many small sessions instead
(:func:`generate_many`): v0 and v4 mixed, several projects and weeks, titles, a few
subagent children.

Everything derives from ``random.Random(seed)`` and a fixed clock, so the same
arguments always produce the same bytes; the default shape writes the bytes it wrote
before the other shapes existed.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import zstandard

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "data"
HUGE_DEFAULT = "20M,35M,50M"
CWD = "/home/ann/bench"
PROJECT = "--home-ann-bench--"  # projectKey(CWD), FORMAT.md 1.1
PROVIDER, MODEL = "deepseek-official", "deepseek-v4-flash"
T0 = 1790000000000
POLICY_KEY = '["normal",2,["EMPTY_RESPONSE","RATE_LIMIT","SERVER","TIMEOUT","TRANSPORT"],1,1,0]'
CHECKPOINT_TEXT = (
    "This is an automatically generated checkpoint condensing an earlier span of the conversation to free up "
    "context. Treat the captured context as established background and build on it without restating it. "
    "Continue the task directly from the messages that follow, without acknowledging this checkpoint.\n\n<compacted-summary>"
)
SYSTEM_PROMPT = (
    "You are a coding agent powered by DeepSeek Harness.\n\nYou are a coding assistant working in the user's repository. "
    "Verify your work by running the code or tests. Keep answers brief and factual.\n\n"
    "Use the read tool, not cat, to read files; prefer small, reviewable edits; never discard uncommitted work.\n"
) * 3

WORDS = (
    "the a of to and in is that for it on with as this be by are we file function test value module error "
    "return call result line code change config parser reader stream frame header event session log seq time "
    "turn step tool message surface request model token cache index buffer offset bytes json row record "
    "check update fix build run import class method type field list map set string number object array "
    "should would could will can may must first then next last before after because so but if when while "
    "read write open close parse decode encode compress validate migrate rebuild repair fork summary — é 日志"
).split()
CODE_LINES = [
    "def read_rows(path: str) -> Iterator[dict]:",
    "    with open(path, 'rb') as fh:",
    "        for line in fh:",
    "            yield orjson.loads(line)",
    "if seq != expected:",
    "    raise CorruptLog(f'seq gap at line {n}')",
    "for index, frame in enumerate(frames):",
    "    total += len(frame)",
    "return {\"type\": \"text\", \"text\": text}",
    "assert decoder.next_seq == 42",
    "export function foldSurface(events: SessionEvent[]): Surface {",
    "  const nodes: number[] = [];",
    "}",
]
TOOLS = [
    {"name": name, "description": desc, "parameters": {"type": "object", "properties": props, "required": list(props)[:1]}}
    for name, desc, props in (
        ("bash", "Run a shell command in the workspace and return its output. Long output is truncated; use it for builds, tests and git.", {"command": {"type": "string", "description": "The command line"}, "description": {"type": "string"}, "timeoutMs": {"type": "integer"}}),
        ("read", "Read a file from the workspace. Returns numbered lines; use offset and limit for large files.", {"path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}}),
        ("write", "Create or overwrite a file with the given content.", {"path": {"type": "string"}, "content": {"type": "string"}}),
        ("edit", "Replace an exact snippet of a file with new text. The old text must occur exactly once.", {"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}}),
        ("grep", "Search files with a regular expression and return matching lines with their paths.", {"pattern": {"type": "string"}, "path": {"type": "string"}, "glob": {"type": "string"}}),
        ("glob", "List files matching a glob pattern, newest first.", {"pattern": {"type": "string"}}),
        ("todo", "Replace the whole todo list of this session.", {"todos": {"type": "array", "items": {"type": "object"}}}),
        ("agent", "Start a subagent with its own context for a self-contained task and wait for its report.", {"task": {"type": "string"}, "label": {"type": "string"}}),
    )
]


def parse_size(text: str) -> int:
    """``30M`` -> 30 * 2**20 (K, M, G suffixes; plain digits are bytes)."""
    t = text.strip().upper().rstrip("B")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    return int(float(t[:-1] if mult > 1 else t) * mult)


def size_label(n: int) -> str:
    """20971520 -> "20M" (whole K/M/G where exact, else bytes)."""
    for suffix, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= mult and n % mult == 0:
            return f"{n // mult}{suffix}"
    return str(n)


def project_key(cwd: str) -> str:
    """dsh's project directory name for a header ``cwd`` (FORMAT.md 1.1), per UTF-16 code unit."""
    units = cwd.encode("utf-16-le", "surrogatepass")
    out: list[str] = []
    prev_sep = False
    for i in range(0, len(units), 2):
        u = units[i] | (units[i + 1] << 8)
        if chr(u) in "/\\:":
            if not prev_sep:
                out.append("-")
            prev_sep = True
            continue
        prev_sep = False
        c = chr(u)
        out.append(c if c.isascii() and (c.isalnum() or c in "._-") else f"~{u:04X}")
    slug = "".join(out).lstrip("-") or "root"
    return f"--{slug[:251]}--"


@dataclass(frozen=True)
class Shape:
    """What kind of long session a generated log models (beyond its size and format).

    * the default (round one): compactions every few dozen steps, so the surface stays small;
    * ``compaction=False``: never compacted, so the surface (the model's view) grows for the
      whole log, as in a long session on a model with a large context window;
    * ``huge``: a few tool outputs of these sizes (a `cat` of a generated file, a build log).
    """

    compaction: bool = True
    huge: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        """Directory and id infix; empty for the default shape, whose paths predate shapes."""
        parts = ([] if self.compaction else ["nocompact"]) + (["huge" + "-".join(size_label(n) for n in self.huge)] if self.huge else [])
        return "-".join(parts)

    @property
    def name(self) -> str:
        return self.label or "default"


DEFAULT_SHAPE = Shape()


def session_paths(out: Path, size_label: str, version: int, seed: int, shape: Shape = DEFAULT_SHAPE) -> dict[str, Path]:
    """Where the plain and zstd generations of one (size, version, shape) live."""
    infix = f"-{shape.label}" if shape.label else ""
    sid = f"bench-{size_label.lower()}{infix.lower()}-v{version}-s{seed}"
    name = "session.v4.jsonl" if version == 4 else "session.jsonl"
    base = out / (size_label.upper() + infix)
    return {
        "plain": base / f"v{version}" / "plain" / PROJECT / sid / name,
        "zstd": base / f"v{version}" / "zstd" / PROJECT / sid / (name + ".zstd"),
        "id": Path(sid),
    }


# ----------------------------------------------------------------------------------------- writers


class _Out:
    """Plain file plus its zstd copy: one frame for the header, one per append batch."""

    def __init__(self, plain: Path | None, zstd: Path | None) -> None:
        self.fh = open(plain, "wb", buffering=1 << 20) if plain else None
        self.zfh = open(zstd, "wb", buffering=1 << 20) if zstd else None
        self.cctx = zstandard.ZstdCompressor(level=3, write_checksum=True)
        self.batch: list[bytes] = []
        self.bytes = 0

    def line(self, obj: Any) -> None:
        b = orjson.dumps(obj) + b"\n"
        self.bytes += len(b)
        if self.fh:
            self.fh.write(b)
        self.batch.append(b)

    def flush(self) -> None:
        """End of one dsh append batch: the zstd copy gets one frame for it."""
        if self.batch and self.zfh:
            self.zfh.write(self.cctx.compress(b"".join(self.batch)))
        self.batch = []

    def close(self) -> None:
        self.flush()
        for f in (self.fh, self.zfh):
            if f:
                f.close()


class Writer:
    """Serialises builder calls into one format.  Handles (builder ids) map to seqs here."""

    version = 4

    def __init__(self, out: _Out, rng: random.Random, cwd: str = CWD, created: int = T0 - 1000, parent: str | None = None) -> None:
        self.out = out
        self.rng = rng
        self.cwd = cwd
        self.created = created
        self.parent = parent  # a subagent child names its parent session (origin "subagent", depth 1)
        self.seq = 0
        self.seqs: dict[int, int] = {}  # handle -> seq, for referable events only

    def _header(self, sid: str) -> dict[str, Any]:
        """Header keys in dsh's order (FORMAT.md 2): type, version, id, createdAt, cwd, parentSession?, isSeeded (v2+), origin?, delegationDepth."""
        h: dict[str, Any] = {"type": "session", "version": self.version, "id": sid, "createdAt": self.created, "cwd": self.cwd}
        if self.parent is not None:
            h["parentSession"] = self.parent
        if self.version >= 2:
            h["isSeeded"] = False
        if self.parent is not None:
            h["origin"] = "subagent"
        h["delegationDepth"] = 0 if self.parent is None else 1
        return h

    def _row(self, type_: str, time: int, data: Any, handle: int | None = None, extra: dict | None = None) -> int:
        seq = self.seq
        row: dict[str, Any] = {"type": type_, "seq": seq, "time": time, "data": data}
        if extra:
            row.update(extra)
        self.out.line(row)
        if handle is not None:
            self.seqs[handle] = seq
        self.seq += 1
        return seq

    def header(self, sid: str) -> None:
        self.out.line(self._header(sid))
        self.out.flush()

    def event(self, type_: str, time: int, data: Any, handle: int | None = None) -> None:
        self._row(type_, time, data, handle)

    def surface(self, op: str | tuple[int, int], refs: list[int] | None) -> dict:
        extra: dict[str, Any] = {}
        if refs:
            extra["sourceEventSeqs"] = [self.seqs[h] for h in refs]
        if op == "append":
            extra["surfaceOp"] = "append"
        else:
            extra["surfaceOp"] = {"op": "replace", "startSeq": self.seqs[op[0]], "endSeq": self.seqs[op[1]]}
        return extra

    def shadow(self, handles: list[int]) -> tuple[dict, list[int]]:
        seqs = [self.seqs[h] for h in handles]
        return {"start": seqs[0], "end": seqs[-1]}, seqs

    def source(self, src: dict) -> dict:
        return src

    def system_message(self, time: int, turn: int, step: int, msg_id: str, handle: int) -> None:
        msg = {"role": "system", "content": [{"type": "text", "text": SYSTEM_PROMPT}], "source": {"kind": "system-prompt"}, "id": msg_id}
        self._row("system/message", time, {"turn": turn, "step": step, "message": msg}, handle, {"surfaceOp": "append"})

    def user_message(self, time: int, msg: dict, handle: int, op: Any = "append", refs: list[int] | None = None) -> None:
        msg = dict(msg, source=self.source(msg["source"]))
        self._row("user/message", time, msg, handle, self.surface(op, refs))

    def request_header(self, time: int, reason: str) -> None:
        self._row("request/header", time, {"header": {"config": {"provider": PROVIDER, "model": MODEL}, "tools": TOOLS}, "reason": reason})

    def settle(self, time: int, turn: int, step: int, chunks: list[tuple[int, dict]], message: dict | None, usage: dict | None, interrupted: bool, handle: int | None) -> None:
        stream = pack_stream(chunks)
        if message is None:
            self._row("assistant/attempt", time, {"turn": turn, "step": step, "stream": stream})
            return
        data: dict[str, Any] = {"turn": turn, "step": step, "message": message}
        if usage is not None:
            data["usage"] = usage
        if interrupted:
            data["interrupted"] = True
        data["stream"] = stream
        self._row("assistant/message", time, data, handle, {"surfaceOp": "append"})

    def tool_result(self, time: int, turn: int, step: int, call_id: str, content: list, is_error: bool, msg_id: str, handle: int, call_handle: int) -> None:
        msg = {"role": "tool", "source": {"kind": "tool", "callId": call_id}, "toolCallId": call_id, "content": content, "isError": is_error, "id": msg_id}
        data = {"turn": turn, "step": step, "message": msg, "meta": {"cwd": self.cwd}}
        self._row("tool/result", time, data, handle, self.surface("append", [call_handle]))

    def catalog(self, time: int, data: dict) -> None:
        self._row("subagent/catalog", time, data)


class WriterV0(Writer):
    """v0 physical form: chunk rows (packed per append batch), v0 message shapes."""

    version = 0

    def surface(self, op: str | tuple[int, int], refs: list[int] | None) -> dict:
        extra = super().surface(op, refs)
        if op != "append":
            extra["surfaceOp"] = {"op": "replace", "start": self.seqs[op[0]], "end": self.seqs[op[1]]}
        return extra

    def source(self, src: dict) -> dict:
        kind = src["kind"]
        if kind == "runtime-context":
            return {"kind": "plugin", "plugin": "@deepseek-ai/dsh-system-prompt", **{k: v for k, v in src.items() if k != "kind"}}
        if kind == "compact-checkpoint":
            return {"kind": "plugin", "plugin": "compact", **{k: v for k, v in src.items() if k != "kind"}}
        return src

    def system_message(self, time: int, turn: int, step: int, msg_id: str, handle: int) -> None:
        pass  # v0 keeps the prompt in request/header

    def request_header(self, time: int, reason: str) -> None:
        self._row("request/header", time, {"header": {"config": {"provider": PROVIDER, "model": MODEL}, "system": SYSTEM_PROMPT, "tools": TOOLS}, "reason": reason})

    def settle(self, time: int, turn: int, step: int, chunks: list[tuple[int, dict]], message: dict | None, usage: dict | None, interrupted: bool, handle: int | None) -> None:
        first = self.seq
        self._chunk_rows(turn, step, chunks)
        if message is None:
            return  # a failed attempt is only its chunks in v0; v1->v2 folds it into assistant/attempt
        data: dict[str, Any] = {"turn": turn, "step": step, "message": message}
        if usage is not None:
            data["usage"] = usage
        if interrupted:
            data["interrupted"] = True
        self._row("assistant/message", time, data, handle, {"sourceEventSeqs": list(range(first, self.seq)), "surfaceOp": "append"})

    def _chunk_rows(self, turn: int, step: int, chunks: list[tuple[int, dict]]) -> None:
        """Top-level chunk rows; dsh packed runs of >= 3 like deltas within one append batch."""
        rng = self.rng
        i, n = 0, len(chunks)
        while i < n:
            batch_end = min(n, i + rng.randint(4, 48))
            j = i
            while j < batch_end:
                t, ch = chunks[j]
                key = _run_key(ch)
                k = j + 1
                if key is not None:
                    while k < batch_end and _run_key(chunks[k][1]) == key:
                        k += 1
                if key is not None and k - j >= 3:
                    times = [chunks[m][0] for m in range(j, k)]
                    dt = [b - a for a, b in zip(times, times[1:])]
                    kind = ch["type"]
                    d: dict[str, Any] = {"turn": turn, "step": step, "index": ch["index"]}
                    if kind == "tool-call-delta":
                        d["id"] = ch["id"]
                        if "name" in ch:
                            d["name"] = ch["name"]
                        d["dt"] = dt
                        d["args"] = [chunks[m][1]["argumentsDelta"] for m in range(j, k)]
                        typ = "tool-call-chunks"
                    else:
                        d["dt"] = dt
                        d["texts"] = [chunks[m][1]["text"] for m in range(j, k)]
                        typ = "text-chunks" if kind == "text-delta" else "reasoning-chunks"
                    self.out.line({"type": typ, "seq0": self.seq, "time0": t, "data": d})
                    self.seq += k - j
                    j = k
                else:
                    self._row("assistant/chunk", t, {"turn": turn, "step": step, "chunk": ch})
                    j += 1
            self.out.flush()
            i = batch_end

    def tool_result(self, time: int, turn: int, step: int, call_id: str, content: list, is_error: bool, msg_id: str, handle: int, call_handle: int) -> None:
        block = {"type": "tool-result", "toolCallId": call_id, "content": content, "isError": is_error}
        msg = {"source": {"kind": "tool", "callId": call_id}, "content": [block], "role": "user", "id": msg_id}
        self._row("tool/result", time, {"turn": turn, "step": step, "message": msg}, handle, self.surface("append", [call_handle]))

    def catalog(self, time: int, data: dict) -> None:
        pass  # subagent/catalog exists from v3 on


def _run_key(ch: dict) -> tuple | None:
    t = ch["type"]
    if t in ("text-delta", "reasoning-delta"):
        return (t, ch["index"])
    if t == "tool-call-delta":
        return (t, ch["index"], ch["id"], ch.get("name", None), "name" in ch)
    return None


def pack_stream(chunks: list[tuple[int, dict]]) -> list[dict]:
    """Canonical embedded-stream packing (FORMAT.md 3.4): runs of any length, raw chunks otherwise."""
    out: list[dict] = []
    last_key = None
    last_time = 0
    for t, ch in chunks:
        key = _run_key(ch)
        if key is not None and key == last_key:
            rec = out[-1]
            rec["dt"].append(t - last_time)
            (rec["args"] if ch["type"] == "tool-call-delta" else rec["texts"]).append(ch["argumentsDelta"] if ch["type"] == "tool-call-delta" else ch["text"])
        elif key is None:
            out.append({"type": "chunk", "time": t, "chunk": ch})
        elif ch["type"] == "tool-call-delta":
            rec = {"type": "tool-call-chunks", "time0": t, "index": ch["index"], "dt": [], "id": ch["id"]}
            if "name" in ch:
                rec["name"] = ch["name"]
            rec["args"] = [ch["argumentsDelta"]]
            out.append(rec)
        else:
            out.append({"type": "text-chunks" if ch["type"] == "text-delta" else "reasoning-chunks", "time0": t, "index": ch["index"], "dt": [], "texts": [ch["text"]]})
        last_key = key
        last_time = t
    return out


# ----------------------------------------------------------------------------------------- builder


class Builder:
    """The seeded session model.  Drives a :class:`Writer`; tracks the surface by handle.

    The defaults are the round-one shape, and must keep writing the same bytes for the
    same seed: every option below only draws from the random stream when it is set.
    """

    def __init__(
        self,
        seed: int,
        writer: Writer,
        target: int,
        sid: str,
        rare: float = 1.0,
        *,
        compaction: bool = True,
        huge: tuple[int, ...] = (),
        children: int | None = None,
        descriptor: dict | None = None,
        title: str = "fallback",
        marker: str | None = None,
        max_steps: int = 12,
    ) -> None:
        self.rng = random.Random(seed)
        self.rare = rare  # multiplier for rare shapes (retries, cancels, compactions); tests raise it
        self.w = writer
        self.target = target
        self.sid = sid
        self.now = writer.created + 1000
        self.compaction = compaction  # False: the surface only ever grows (a long session never compacted)
        # Huge tool outputs: each is placed once the conversation (the bytes that are not huge
        # outputs) has reached its share of the budget, so the file ends near the target size.
        self.huge = list(huge)
        self.huge_bytes = 0
        budget = max(target - sum(huge), target // 8)
        self.huge_at = [budget * (i + 1) // (len(huge) + 1) for i in range(len(huge))]
        self.budget = budget if huge else target
        self.huge_results: list[int] = []  # the sizes placed, in order (tests read them)
        # children=None: the round-one catalog entries naming children that do not exist.
        # children=N: up to N real subagent children; an `agent` call spawns one and is
        # recorded (v4: subagent/catalog), the caller writes the child sessions.
        self.want_children = children
        self.spawned: list[dict] = []  # {"id", "createdAt", "label"} of each spawned child
        self.descriptor = descriptor  # a child's own subagent/descriptor data
        self.title = title  # fallback | provider | user | none
        self.marker = marker  # a word planted in the first user message (for `ls --grep`)
        self.max_steps = max_steps  # caps the 2-12 steps of a turn (short sessions), draws nothing
        self.handles = 0
        self.surface: list[int] = []  # surface nodes after the system head, by handle
        self.children = 0
        self.series = False  # a replacement happened: the next request starts a series
        self.first_user = 0

    # -- small building blocks
    def tick(self, lo: int = 1, hi: int = 40) -> int:
        self.now += self.rng.randint(lo, hi)
        return self.now

    def handle(self) -> int:
        self.handles += 1
        return self.handles

    def uid(self) -> str:
        r = self.rng.getrandbits(128)
        h = f"{r:032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"

    def words(self, n: int) -> str:
        rng = self.rng
        return " ".join(rng.choice(WORDS) for _ in range(n))

    def prose(self, n_words: int) -> str:
        """Markdown-ish answer text with the odd code block."""
        rng = self.rng
        parts = []
        left = n_words
        while left > 0:
            k = min(left, rng.randint(8, 40))
            parts.append(self.words(k).capitalize() + ".")
            left -= k
            if rng.random() < 0.15:
                parts.append("\n\n```python\n" + "\n".join(rng.choice(CODE_LINES) for _ in range(rng.randint(2, 8))) + "\n```\n\n")
            elif rng.random() < 0.2:
                parts.append("\n\n- ")
        return " ".join(parts)

    def split_deltas(self, text: str, lo: int = 1, hi: int = 14) -> list[str]:
        rng = self.rng
        out = []
        i = 0
        while i < len(text):
            k = rng.randint(lo, hi)
            out.append(text[i : i + k])
            i += k
        return out

    def event(self, type_: str, data: Any, handle: int | None = None) -> None:
        self.w.event(type_, self.tick(0, 3), data, handle)

    def write_title(self, ask: dict) -> None:
        """The session title after the first request: dsh's fallback, a model's, a user's, or none."""
        w = self.w
        if self.title == "none":
            return
        source: dict[str, Any]
        if self.title == "fallback":
            title = " ".join(ask["content"][0]["text"].split()[:5])
            seqs, source = [w.seqs[self.first_user]], {"kind": "fallback"}
        elif self.title == "provider":
            title = self.words(self.rng.randint(2, 6)).capitalize()
            seqs, source = [w.seqs[self.first_user]], {"kind": "provider", "provider": PROVIDER, "model": {"provider": PROVIDER, "model": MODEL}}
        else:  # a title the user typed cites no message
            title = self.words(self.rng.randint(1, 4)).title()
            seqs, source = [], {"kind": "user"}
        w.event("session/title", self.tick(0, 2), {"title": title, "messageSeqs": seqs, "source": source})

    def huge_text(self, size: int) -> str:
        """A tool output of exactly ``size`` bytes (ASCII): numbered code lines, as a huge `cat` prints."""
        lines = self.rng.choices(CODE_LINES, k=size // 32 + 1)
        text = "\n".join(f"{i:>7}  {line}" for i, line in enumerate(lines, 1))
        while len(text) < size:
            text += "\n" + "\n".join(lines)
        return text[:size]

    # -- session
    def run(self) -> None:
        w = self.w
        w.header(self.sid)
        self.event("permission/preset", {"preset": "workspace-write"})
        self.event("sandbox/mode", {"mode": "workspace-write"})
        self.event("approval/policy", {"policy": "ask"})  # a released policy (dsh refuses others)
        self.event("subagent/model-selection-policy", {"allowedModels": [{"provider": PROVIDER, "model": MODEL}, {"provider": PROVIDER, "model": "deepseek-v4-pro"}]})
        if self.descriptor is not None:
            self.event("subagent/descriptor", self.descriptor)
        w.out.flush()
        turn = 0
        while w.out.bytes - self.huge_bytes < self.budget or turn == 0 or self.huge or len(self.spawned) < (self.want_children or 0):
            turn += 1
            self.turn(turn)
        w.out.close()

    def turn(self, turn: int) -> None:
        rng, w = self.rng, self.w
        text = self.prose(rng.randint(10, 120))
        if self.marker and turn == 1:
            text += f" Keep an eye on the {self.marker} module."
        ask = {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}, "role": "user", "id": self.uid()}
        self.event("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [ask]})
        self.event("turn/start", {"turn": turn})
        self.event("agent/inbox/spliced", {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []})
        w.out.flush()
        turn_mark = len(self.surface)
        cancel = turn > 1 and rng.random() < 0.04 * self.rare
        n_steps = min(rng.randint(2, 12), self.max_steps)
        for step in range(1, n_steps + 1):
            if self.compaction and step > 1 and turn_mark > 6 and rng.random() < 0.02 * self.rare:
                self.compact(turn, turn_mark)
                turn_mark = len(self.surface)
                self.series = True
            last = step == n_steps
            self.event("step/start", {"turn": turn, "step": step})
            w.out.flush()
            if turn == 1 and step == 1:
                self.w.system_message(self.tick(0, 2), turn, step, self.uid(), self.handle())
            if step == 1:
                h = self.handle()
                w.user_message(self.tick(0, 2), ask, h)
                self.surface.append(h)
                if turn == 1:
                    self.first_user = h
                ctx = {
                    "content": [{"type": "text", "text": f"Current runtime context.\n\nCurrent working directory: \"{w.cwd}\".\n\nTurn {turn}: " + self.words(30)}],
                    # snapshot sections as dsh's released payload rules have them: {name, text}
                    "source": {"kind": "runtime-context", "form": "snapshot",
                               "sections": [{"name": "working-directory", "text": f"Current working directory: \"{w.cwd}\"."}]},
                    "role": "user",
                    "id": self.uid(),
                }
                h = self.handle()
                w.user_message(self.tick(0, 2), ctx, h)
                self.surface.append(h)
            if turn == 1 and step == 1:
                w.request_header(self.tick(0, 2), "initial")
                self.event("request/context", {"provider": PROVIDER, "model": MODEL, "contextWindow": 128000})
                self.write_title(ask)
            elif self.series:
                w.request_header(self.tick(0, 2), "series")
                self.series = False
            if rng.random() < 0.05 * self.rare:
                self.retry(turn, step)
            if cancel and last:
                self.cancelled(turn, step)
                self.event("step/end", {"turn": turn, "step": step})
                self.event("turn/end", {"turn": turn, "reason": {"kind": "aborted", "reason": {"kind": "user"}}})
                w.out.flush()
                return
            self.step(turn, step, tools=not last)
            self.event("step/end", {"turn": turn, "step": step})
            w.out.flush()
        self.event("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
        w.out.flush()

    def stream_blocks(self, blocks: list[tuple[str, Any]], finish: dict | None, usage: dict | None, stop_after: int | None = None) -> list[tuple[int, dict]]:
        """Raw chunks of one model call, timestamped (a delta every 0-30 ms)."""
        rng = self.rng
        chunks: list[tuple[int, dict]] = []
        t = self.now
        for index, (kind, payload) in enumerate(blocks):
            t += rng.randint(0, 60)
            chunks.append((t, {"type": "block-start", "index": index, "blockType": kind}))
            if kind == "tool-call":
                call_id, name, args = payload
                for k, piece in enumerate(self.split_deltas(args, 4, 30)):
                    t += rng.randint(0, 12)
                    ch: dict[str, Any] = {"type": "tool-call-delta", "index": index, "id": call_id}
                    if k == 0:
                        ch["name"] = name
                    ch["argumentsDelta"] = piece
                    chunks.append((t, ch))
                block = {"type": "tool-call", "id": call_id, "name": name, "arguments": args}
            else:
                for piece in self.split_deltas(payload):
                    t += rng.randint(0, 30)
                    chunks.append((t, {"type": kind + "-delta", "index": index, "text": piece}))
                    if stop_after is not None and index == len(blocks) - 1 and len(chunks) >= stop_after:
                        self.now = t
                        return chunks  # cancelled mid-block: no block-end, usage or finish
                block = {"type": kind, "text": payload}
            t += rng.randint(0, 5)
            chunks.append((t, {"type": "block-end", "index": index, "block": block}))
        if usage is not None:
            chunks.append((t, {"type": "usage", "usage": usage}))
        if finish is not None:
            chunks.append((t, {"type": "finish", "reason": finish}))
        self.now = t + 1
        return chunks

    def usage(self, out_tokens: int) -> dict:
        rng = self.rng
        inp = rng.randint(2000, 120000)
        return {"inputTokens": inp, "outputTokens": out_tokens, "cacheReadTokens": inp - rng.randint(0, 2000), "reasoningTokens": out_tokens // 2}

    def model_source(self) -> dict:
        return {"kind": "model", "provider": PROVIDER, "model": MODEL}

    def step(self, turn: int, step: int, tools: bool) -> None:
        rng, w = self.rng, self.w
        blocks: list[tuple[str, Any]] = []
        if rng.random() < 0.8:
            blocks.append(("reasoning", self.prose(rng.randint(20, 400))))
        if not tools or rng.random() < 0.5:
            blocks.append(("text", self.prose(rng.randint(10, 60) if tools else rng.randint(60, 900))))
        calls = []
        if tools:
            for _ in range(rng.choices((1, 2, 3, 4), (60, 20, 12, 8))[0]):
                name = rng.choices(("bash", "read", "grep", "edit", "write", "glob", "todo", "agent"), (30, 30, 12, 12, 6, 5, 3, 2))[0]
                if not calls and self.want_children and len(self.spawned) < self.want_children and rng.random() < 0.35:
                    name = "agent"  # a session meant to have children delegates more often
                call_id = "call_" + f"{rng.getrandbits(96):024x}"
                if name == "bash":
                    args = {"command": rng.choice(("pytest -q tests", "git status --short", "make build", "ls -la src")) + " " + self.words(2), "description": self.words(5)}
                elif name in ("write", "edit"):
                    args = {"path": f"src/{rng.choice(WORDS)}.py", "old" if name == "edit" else "content": "\n".join(rng.choice(CODE_LINES) for _ in range(rng.randint(2, 40)))}
                elif name == "agent":
                    args = {"task": self.prose(rng.randint(20, 60)), "label": self.words(3)}
                else:
                    args = {"path": f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py", "pattern": rng.choice(WORDS)}
                arg_text = orjson.dumps(args).decode()
                blocks.append(("tool-call", (call_id, name, arg_text)))
                calls.append((call_id, name, arg_text))
        out_tokens = rng.randint(50, 3000)
        usage = self.usage(out_tokens)
        chunks = self.stream_blocks(blocks, {"kind": "tool-calls" if calls else "stop"}, usage)
        content = []
        for kind, payload in blocks:
            if kind == "tool-call":
                content.append({"type": "tool-call", "id": payload[0], "name": payload[1], "arguments": payload[2]})
            else:
                content.append({"type": kind, "text": payload})
        msg = {"role": "assistant", "content": content, "source": self.model_source(), "id": self.uid()}
        h = self.handle()
        w.settle(self.tick(0, 2), turn, step, chunks, msg, usage, False, h)
        self.surface.append(h)
        w.out.flush()
        call_handles = []
        for call_id, name, arg_text in calls:
            ch = self.handle()
            w.event("tool/call", self.tick(0, 3), {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": arg_text}, ch)
            call_handles.append(ch)
        for (call_id, name, arg_text), ch in zip(calls, call_handles):
            self.tick(5, 4000)
            is_error = rng.random() < 0.07
            huge = name in ("read", "grep", "bash") and bool(self.huge) and w.out.bytes - self.huge_bytes >= self.huge_at[0]
            if huge:
                size = self.huge.pop(0)
                self.huge_at.pop(0)
                text, is_error = self.huge_text(size), False
                self.huge_results.append(size)
            elif name in ("read", "grep", "bash"):
                n = rng.choice((3, 10, 40, 120, 400))
                text = "\n".join(f"{i + 1:>5}  " + rng.choice(CODE_LINES) for i in range(n))
            else:
                text = "ok: " + self.words(rng.randint(3, 30))
            if is_error:
                text = "Error: command exited with code 1\n" + text[:2000]
            h = self.handle()
            before = w.out.bytes
            w.tool_result(self.tick(0, 3), turn, step, call_id, [{"type": "text", "text": text}], is_error, self.uid(), h, ch)
            if huge:
                self.huge_bytes += w.out.bytes - before
            self.surface.append(h)
            if name == "agent":
                self.agent_result(arg_text)
            w.out.flush()
        if rng.random() < 0.03:
            self.event("todo/write", {"todos": [{"content": self.words(6), "status": rng.choice(("pending", "in_progress", "completed"))} for _ in range(rng.randint(1, 6))]})

    def agent_result(self, arg_text: str) -> None:
        """After an `agent` call's result: the parent's catalog entry for the child (v4 only)."""
        w = self.w
        if self.want_children is None:  # round-one shape: entries for children that are not written
            self.children += 1
            w.catalog(self.tick(0, 2), {"version": 0, "childId": f"{self.sid}-child-{self.children}", "childCreatedAt": self.now - 1000, "mode": "one-shot", "label": "subtask " + str(self.children)})
            return
        if len(self.spawned) >= self.want_children:
            return  # a subagent whose session is not kept: no catalog entry, no dangling child id
        child = {"id": self.uid(), "createdAt": self.now - 1000, "label": orjson.loads(arg_text)["label"]}
        self.spawned.append(child)
        w.catalog(self.tick(0, 2), {"version": 0, "childId": child["id"], "childCreatedAt": child["createdAt"], "mode": "one-shot", "label": child["label"]})

    def retry(self, turn: int, step: int) -> None:
        """A failed model call settled as an attempt, then a scheduled and started retry."""
        rng, w = self.rng, self.w
        failure = {"message": "upstream server error", "code": "SERVER", "status": 503}
        blocks = [("text", self.words(rng.randint(3, 20)))] if rng.random() < 0.5 else []
        chunks = self.stream_blocks(blocks, {"kind": "error", "failure": failure}, {"inputTokens": 0, "outputTokens": 0})
        w.settle(self.tick(0, 2), turn, step, chunks, None, None, False, None)
        rid = self.uid()
        self.event("llm/retry", {"retryId": rid, "turn": turn, "step": step, "provider": PROVIDER, "mode": "normal", "policyKey": POLICY_KEY, "retry": 1, "maxRetries": 2, "delayMs": 1000, "failure": failure})
        self.tick(1000, 1100)
        self.event("llm/retry-started", {"retryId": rid, "turn": turn, "step": step, "retry": 1})
        w.out.flush()

    def cancelled(self, turn: int, step: int) -> None:
        """The user interrupts a streaming answer: the visible prefix becomes an interrupted message."""
        rng, w = self.rng, self.w
        reasoning = self.prose(rng.randint(20, 200))
        text = self.prose(rng.randint(40, 300))
        chunks = self.stream_blocks([("reasoning", reasoning), ("text", text)], None, None, stop_after=10**9)
        # cut the text block after a few deltas
        cut = next(i for i, (_, c) in enumerate(chunks) if c["type"] == "block-start" and c["index"] == 1) + 1 + rng.randint(2, 20)
        chunks = chunks[:cut]
        partial = "".join(c["text"] for _, c in chunks if c["type"] == "text-delta")
        content = [{"type": "reasoning", "text": reasoning}]
        if partial.strip():
            content.append({"type": "text", "text": partial})
        msg = {"role": "assistant", "content": content, "source": self.model_source(), "id": self.uid()}
        h = self.handle()
        w.settle(self.tick(0, 2), turn, step, chunks, msg, None, True, h)
        self.surface.append(h)

    def compact(self, turn: int, mark: int) -> None:
        """A compaction between steps: shadows every node of the earlier turns (never the system head)."""
        rng, w = self.rng, self.w
        span = self.surface[:mark]
        cid = self.uid()
        hs, hm = self.handle(), self.handle()
        w.event("compaction/start", self.tick(0, 2), {"compactionId": cid, "turn": turn}, hs)
        rng_text = self.prose(rng.randint(80, 300))
        summary = [{"type": "text", "text": rng_text}]
        shadowed_range, shadowed = w.shadow(span)
        w.event(
            "compaction/summary",
            self.tick(200, 3000),
            {
                "compactionId": cid,
                "summary": summary,
                "rawOutput": summary,
                "llmStreamCall": True,
                "shadowedRange": shadowed_range,
                "shadowedSeqs": shadowed,
                "shadowedTokenCount": rng.randint(5000, 90000),
                "provider": PROVIDER,
                "model": MODEL,
                "maxTokens": 4096,
                "usage": {"inputTokens": rng.randint(5000, 90000), "outputTokens": rng.randint(100, 2000)},
            },
            hm,
        )
        msg = {
            "content": [{"type": "text", "text": CHECKPOINT_TEXT}, {"type": "text", "text": rng_text}, {"type": "text", "text": "</compacted-summary>"}],
            "source": {"kind": "compact-checkpoint", "compactionId": cid},
            "role": "user",
            "id": self.uid(),
        }
        h = self.handle()
        w.user_message(self.tick(0, 2), msg, h, (span[0], span[-1]), [hs, hm] + span)
        self.surface[:mark] = [h]
        w.event("compaction/end", self.tick(0, 2), {"compactionId": cid, "turn": turn})
        w.out.flush()


# ----------------------------------------------------------------------------------------- driver


def generate(out: Path, size: str, version: int, seed: int = 7, zstd: bool = True, force: bool = False, rare: float = 1.0, shape: Shape = DEFAULT_SHAPE) -> dict[str, Path]:
    """Write one (size, version, shape) log and its zstd copy; skip if both already exist."""
    paths = session_paths(out, size, version, seed, shape)
    if not force and paths["plain"].exists() and (not zstd or paths["zstd"].exists()):
        return paths
    for key in ("plain", "zstd"):
        paths[key].parent.mkdir(parents=True, exist_ok=True)
    tmp_plain = paths["plain"].with_name(paths["plain"].name + ".part")
    tmp_zstd = paths["zstd"].with_name(paths["zstd"].name + ".part")
    o = _Out(tmp_plain, tmp_zstd if zstd else None)
    wrng = random.Random(seed * 1000 + version)
    writer: Writer = (Writer if version == 4 else WriterV0)(o, wrng)
    Builder(seed, writer, parse_size(size), str(paths["id"]), rare, compaction=shape.compaction, huge=shape.huge).run()
    os.replace(tmp_plain, paths["plain"])
    if zstd:
        os.replace(tmp_zstd, paths["zstd"])
    return paths


# Many small sessions: the projects they belong to (one with a space, one non-ASCII, so the
# project keys escape), weighted as one person's work over a few weeks.
MANY_PROJECTS = (
    ("/home/ann/bench", 30),
    ("/home/ann/web-shop", 25),
    ("/home/ann/my proj", 15),
    ("/srv/build/dsh-tools", 12),
    ("/home/bo/notes", 10),
    ("/home/ann/日志", 8),
)
MANY_DAYS = 21
MARKER = "pelican"  # planted in a few first user messages; no generated word contains it
DAY_MS = 86_400_000


def many_paths(out: Path, count: int, seed: int, scale: float = 1.0) -> dict[str, Path]:
    """The many-small roots: one per encoding (dsh keeps plain and zstd roots apart), and the manifest."""
    base = out / (f"MANY-{count}-s{seed}" + (f"-x{scale:g}" if scale != 1 else ""))
    return {"base": base, "plain": base / "plain", "zstd": base / "zstd", "manifest": base / "manifest.json"}


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def _write_session(base: Path, spec: dict, zstd: bool) -> Builder:
    """One small session in both roots, at ``<root>/<projectKey(cwd)>/<id>/session...``."""
    name = "session.v4.jsonl" if spec["version"] == 4 else "session.jsonl"
    rel = Path(project_key(spec["cwd"])) / spec["id"] / name  # uuids are their own encodeSegment
    plain = base / "plain" / rel
    packed = base / "zstd" / (str(rel) + ".zstd")
    plain.parent.mkdir(parents=True)
    if zstd:
        packed.parent.mkdir(parents=True)
    o = _Out(plain, packed if zstd else None)
    wrng = random.Random(spec["seed"] * 1000 + spec["version"])
    writer: Writer = (Writer if spec["version"] == 4 else WriterV0)(o, wrng, cwd=spec["cwd"], created=spec["createdAt"], parent=spec["parent"])
    descriptor = None
    if spec["parent"] is not None:
        descriptor = {"version": 3, "mode": "one-shot", "provider": "spawn", "label": spec["label"]}
    b = Builder(spec["seed"], writer, spec["target"], spec["id"], children=spec["want_children"], descriptor=descriptor, title=spec["title"], marker=spec["marker"], max_steps=spec["max_steps"])
    b.run()
    spec["path"] = str(rel)
    spec["bytes"] = o.bytes
    return b


def generate_many(out: Path, count: int = 1000, seed: int = 7, zstd: bool = True, force: bool = False, scale: float = 1.0) -> dict:
    """A persistence root of ``count`` small sessions (children included); returns the manifest.

    v0 and v4 sessions are mixed in one root (about a third v0), plain and zstd copies live in
    two roots of the same layout.  Sessions are spread over several projects and over
    ``MANY_DAYS`` days; titles vary (dsh's fallback, a model's, a user's, none); a few
    sessions delegate to subagent children, whose headers name them (``parentSession``,
    ``origin: subagent``) and whose ``subagent/descriptor`` matches the parent's v4 catalog
    entry (a v0 parent has none: migrating it discovers the children in the root).  Sizes are
    log-uniform from a few KB to about 100 KB, times ``scale`` (``--many-scale 36`` makes the
    1,000-session root about 1 GB; the draws are the same, so scale 1 writes the bytes it
    always wrote).  The manifest (``manifest.json`` beside the roots) lists every session,
    so tests and the runner need not rediscover them.
    """
    paths = many_paths(out, count, seed, scale)
    if not force and paths["manifest"].exists():
        return orjson.loads(paths["manifest"].read_bytes())
    tmp = paths["base"].with_name(paths["base"].name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    rng = random.Random(seed)
    start = T0 // DAY_MS * DAY_MS - MANY_DAYS * DAY_MS  # a UTC midnight
    cwds, weights = zip(*MANY_PROJECTS)
    sessions: list[dict] = []
    while len(sessions) < count:
        room = count - len(sessions) - 1  # children must fit in the count
        # the second session always delegates and the first is always marked, so that
        # even a tiny root has a parent, a child and a `--grep` hit
        wanted = min(room, rng.choice((1, 1, 2, 3))) if rng.random() < 0.05 or len(sessions) == 1 else 0
        spec = {
            "id": _uuid(rng),
            "version": 4 if rng.random() < 0.65 else 0,
            "cwd": rng.choices(cwds, weights)[0],
            # working hours, on any day of the span
            "createdAt": start + rng.randrange(MANY_DAYS) * DAY_MS + rng.randrange(7 * 3_600_000, 20 * 3_600_000),
            "target": int(scale * math.exp(rng.uniform(math.log(2 << 10), math.log(100 << 10)))),
            "seed": rng.getrandbits(32),
            "parent": None,
            "want_children": wanted,
            "title": rng.choices(("fallback", "provider", "user", "none"), (70, 15, 5, 10))[0],
            "marker": MARKER if rng.random() < 0.03 or not sessions else None,
            "max_steps": rng.choice((2, 3, 4, 6, 12)),
        }
        b = _write_session(tmp, spec, zstd)
        spec["children"] = [c["id"] for c in b.spawned]
        sessions.append(spec)
        for child in b.spawned:
            cspec = {
                "id": child["id"],
                "version": spec["version"],  # written by the same dsh as its parent
                "cwd": spec["cwd"],
                "createdAt": child["createdAt"],
                "target": int(scale * math.exp(rng.uniform(math.log(2 << 10), math.log(40 << 10)))),
                "seed": rng.getrandbits(32),
                "parent": spec["id"],
                "label": child["label"],
                "want_children": 0,
                "title": "fallback",
                "marker": None,
                "max_steps": rng.choice((2, 3, 4)),
                "children": [],
            }
            _write_session(tmp, cspec, zstd)
            sessions.append(cspec)
    for s in sessions:
        for k in ("target", "seed", "want_children", "max_steps"):
            del s[k]
    manifest = {"count": count, "seed": seed, "marker": MARKER, "zstd": zstd, "sessions": sessions}
    (tmp / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    if paths["base"].exists():
        shutil.rmtree(paths["base"])
    os.replace(tmp, paths["base"])
    return manifest


def _sizes(text: str) -> tuple[int, ...]:
    return tuple(parse_size(t) for t in text.split(",") if t.strip())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", action="append", default=None, help="target plaintext size, e.g. 30M, 120M, 480M (repeatable)")
    ap.add_argument("--format", choices=("v4", "v0", "both"), default="both")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--no-zstd", action="store_true")
    ap.add_argument("--force", action="store_true", help="regenerate even if the files exist")
    ap.add_argument("--no-compaction", action="store_true", help="never compact: the surface grows for the whole log")
    ap.add_argument("--huge-tool-result", nargs="?", const=HUGE_DEFAULT, default=None, metavar="SIZES", help=f"a few huge tool outputs, comma-separated sizes (default {HUGE_DEFAULT})")
    ap.add_argument("--many-small", nargs="?", type=int, const=1000, default=None, metavar="COUNT", help="a root of COUNT small sessions (default 1000) instead of one large log, unless --size is given too")
    ap.add_argument("--many-scale", type=float, default=1.0, metavar="K", help="with --many-small: sessions K times as large (36: a root of about 1 GB)")
    a = ap.parse_args(argv)
    if a.many_small is not None:
        m = generate_many(a.out, a.many_small, a.seed, zstd=not a.no_zstd, force=a.force, scale=a.many_scale)
        mp = many_paths(a.out, a.many_small, a.seed, a.many_scale)
        total = sum(s["bytes"] for s in m["sessions"])
        print(f"{mp['base']}: {len(m['sessions'])} sessions, {total:,} B plain", file=sys.stderr)
        if not a.size:
            return 0
    shape = Shape(compaction=not a.no_compaction, huge=_sizes(a.huge_tool_result) if a.huge_tool_result else ())
    versions = {"v4": [4], "v0": [0], "both": [4, 0]}[a.format]
    for size in a.size or ["30M"]:
        for v in versions:
            p = generate(a.out, size, v, a.seed, zstd=not a.no_zstd, force=a.force, shape=shape)
            extra = f", {p['zstd'].stat().st_size:,} B zstd" if not a.no_zstd else ""
            print(f"{p['plain']}: {p['plain'].stat().st_size:,} B{extra}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
