"""Mutation fuzzer for every dshlog command: hostile and broken logs end cleanly.

    python bench/fuzz.py [--seconds 300] [--seed N] [--huge-line-mb 8] [--bomb-mb 256]   (make fuzz)
    python bench/fuzz.py --inputs 10000 --max-line-mib 1 --huge-line-mb 1.5 --bomb-mb 4  (make fuzz-long)
    python bench/fuzz.py --replay FILE [--name NAME] [--max-line-mib N]                  (one input, verbose)

Starting from the shared corpus and the project's fixtures, each input is
mutated by one to four named mutators (see ``MUTATORS``; each failure names the
classes that built its input) and given to every reader and writer.  The classes:

* structure: bytes flipped, truncated, lines duplicated, dropped, reordered or
  spliced from another log, fields retyped (strings, nulls, floats...), garbage lines;
* ``deep_nesting``: 990-1024 levels at a value position (inside orjson's limit,
  beyond Python's recursion limit) and deeper, in ``seq``, ``data.turn``, message
  content, header fields and anywhere;
* ``lone_surrogate``, ``control_chars``, ``rich_markup``: ``\\ud800`` escapes,
  terminal escapes (ESC/OSC/CSI, C1, NUL, bidi overrides) and Rich markup in every
  string position (event type, header id, cwd, message text, tool names, titles);
* ``numbers``: ``-0``, ``-0.0``, ``1e400``, ``5.0`` for an integer, 2**53, 2**64+1,
  10**400 in seq/time/turn/step/counts;
* ``nul_bytes``, ``bom``, ``crlf``, ``no_final_newline``;
* ``huge_line``: a line of ``--huge-line-mb`` MB;
* zstd containers: ``zstd_bomb`` (a small frame decompressing to ``--bomb-mb`` MB),
  ``zstd_bad_checksum``, ``zstd_skippable``, ``zstd_reserved_bits``,
  ``zstd_truncated_frame``, ``zstd_trailing_garbage``, ``zstd_corrupt_middle``.

Every command (``COMMANDS``) runs in a forked child of a warm command server
(dshlog is imported once, so a run costs a fork, not an interpreter start) with
a CPU-time limit (``RLIMIT_CPU``, ``--timeout``: a hang is CPU dshlog spent, not
the load of a shared machine), a generous wall-clock backstop for a command that
blocks, an address-space limit (``RLIMIT_AS``) and the standard streams of a
fresh interpreter; the human renderers also run on a pseudo-terminal.  A run must end
with exit 0, 2-6 or 10.  Counted separately (``OUTCOMES``): exit 1, other
exits, tracebacks, death by a signal, hangs, an output file left after an error
exit, a modified input, files appearing beside the input, raw control
characters reaching a person (stdout of human output, stderr of every command),
Rich markup interpreted on a terminal, written outputs that do not read back,
and a reading command (``PATHS_COMPARED``) whose exit code, stdout or stderr
changes when it runs again in the other mode of the fast paths
(``DSHLOG_PATHS``, ``dshlog/fastpaths.py``: every fast body must give its exact
body's bytes; ``--no-compare-paths`` skips it).
The run prints counts; every failing input is kept in ``bench/out/fuzz`` with a
JSON line describing its failures (``failures.jsonl``), and the exit status is 1
when anything failed.

The long run (``make fuzz-long``, exactly ``--inputs`` inputs) scales down only
what costs in proportion to a size: every command runs with the global
``--max-line-size`` lowered (``--max-line-mib 1``), and ``huge_line`` and
``zstd_bomb`` are sized around that limit (lines of 0.75-1.5 MiB: some under the
limit, most over it; bombs of 4 MiB: four times over it, or about 20 000
13-byte rows).  The line-size policy is one size-independent check (refuse once
the limit is reached, before more is decoded), so each class still takes both of
its paths: a long line that is read, and one that is refused with exit 3.  What
only a big size shows (memory a small multiple of 256 MiB and 1 GiB lines, a
256 MiB bomb) is the targeted bomb tests' (``tests/test_hostile.py``,
``tests/test_reliability_bombs.py``).  Nothing else changes: every class, every
command, every check.  ``--shard K/N`` splits one seed's inputs between N
processes, which together check exactly the inputs of one run.

What a fork costs here is mostly the server's resident memory (page tables copied,
copy-on-write faults, teardown), so the server imports what the fuzzed commands
import and nothing more (not the interactive browser).

The cache mode (``--cache-mode``, ``make fuzz-cache``) gives each input to the reading
commands that use dshlog's cache (``CACHED``) instead: once with ``--no-cache``, once
with an empty cache, then again after one or two damages drawn per input
(``CACHE_DAMAGES``): the database's bytes overwritten, cut short, replaced by a foreign
SQLite file or another layout, its values replaced, rows' values, keys or stamps
swapped (``bench/cache_damage.py``, which the cache's tests use too), or the log changed
after its entries were made (a byte in place with its size and mtime kept, or a row
appended), or an old log's published successor changed after a view proved it (an old
plain generation gets its successor from ``migrate`` first).  Every answer (stdout,
stderr, exit code) must be exactly the ``--no-cache`` one (``cache-disagreement``).

``tests/test_fuzz.py`` drives the same mutators and checks through hypothesis.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import hashlib
import io
import json
import os
import random
import re
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterator

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import cache_damage  # noqa: E402 - found through the path set just above
SHARED = Path(os.environ.get("DSHLOG_SHARED", ROOT.parent / "shared"))
ALLOWED = {0, 2, 3, 4, 5, 6, 10}
MAX_SEED_BYTES = 256 << 10
MB = 1 << 20
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@dataclass
class Params:
    """Sizes and limits of one run (``make fuzz`` can go large, CI stays small)."""

    huge_line_bytes: int = 1 * MB  # the huge_line mutator's line
    bomb_bytes: int = 16 * MB  # what a zstd_bomb frame decompresses to
    timeout_s: float = 30.0  # CPU seconds per command (RLIMIT_CPU): what dshlog spends, not what the machine lets it have
    wall_s: float | None = None  # wall-clock backstop per command (default: max(120 s, 4 x timeout_s))
    max_line_mib: int | None = None  # the global --max-line-size every command runs with (None: dshlog's default)
    mem_bytes: int = 3 << 30  # RLIMIT_AS of every command
    tty: bool = True  # also run the human renderers on a pseudo-terminal
    stdio_errors: str = "strict"  # stdout's error handler: a UTF-8 desktop locale's (C.UTF-8 gives surrogateescape)
    debug_reruns: bool = True  # re-run an exit-1 command with --debug to learn where it failed (for grouping)
    compare_paths: bool = True  # run PATHS_COMPARED again in the other mode of the fast paths


PARAMS = Params()


def seed_files() -> list[Path]:
    """Corpus files and fixtures small enough to mutate quickly."""
    roots = [SHARED / "corpus", ROOT / "fixtures"]
    out = []
    for r in roots:
        if not r.is_dir():
            continue
        for p in sorted(r.rglob("*")):
            if p.is_file() and p.suffix in (".jsonl", ".json", ".zstd") and not p.name.startswith("MANIFEST") \
                    and p.stat().st_size <= MAX_SEED_BYTES:
                out.append(p)
    return out


# ----------------------------------------------------------------------------- helpers

HOSTILE: list[Callable[[random.Random], Any]] = [
    lambda r: "str",
    lambda r: "",
    lambda r: None,
    lambda r: True,
    lambda r: 2**70,
    lambda r: -(2**63),
    lambda r: 2**53 + 1,
    lambda r: -1,
    lambda r: 1.5,
    lambda r: 1e300,
    lambda r: -0.0,
    lambda r: [],
    lambda r: {},
    lambda r: [None] * r.randint(1, 50),
    lambda r: "x" * r.randint(1, 100_000),
    lambda r: "\ud800",
    lambda r: "../../x",
    lambda r: "/etc/passwd",
    lambda r: f"@@DEEP{r.choice([10, 500, 1100, 3000, 100_000])}@@",  # spliced in as text after encoding
    lambda r: {"type": "text", "text": None},
    lambda r: [{"type": "tool-call", "id": 7, "name": None}],
]


_DEEP = re.compile(rb'"@@DEEP([0-9]+)@@"')


def _deepen(enc: bytes) -> bytes:
    """Replace a deep-nesting marker by that many nested arrays (too deep for any encoder)."""
    return _DEEP.sub(lambda m: b"[" * int(m.group(1)) + b"0" + b"]" * int(m.group(1)), enc)


def _paths(obj: Any, prefix: tuple = (), limit: int = 400) -> Iterator[tuple]:
    """Every (container path) inside a parsed JSON value, breadth-limited."""
    stack = [(prefix, obj)]
    n = 0
    while stack and n < limit:
        p, v = stack.pop()
        n += 1
        if isinstance(v, dict):
            for k, x in v.items():
                yield p + (k,)
                stack.append((p + (k,), x))
        elif isinstance(v, list):
            for i, x in enumerate(v[:20]):
                yield p + (i,)
                stack.append((p + (i,), x))


def _walk(obj: Any, limit: int = 4000) -> Iterator[tuple[tuple, Any]]:
    """(path, value) of every node below a parsed JSON value (iterative: the value may be deep)."""
    stack: list[tuple[tuple, Any]] = [((), obj)]
    n = 0
    while stack and n < limit:
        p, v = stack.pop()
        n += 1
        if p:
            yield p, v
        if isinstance(v, dict):
            stack.extend((p + (k,), x) for k, x in reversed(list(v.items())))
        elif isinstance(v, list):
            stack.extend((p + (i,), x) for i, x in reversed(list(enumerate(v[:50]))))


def _get(obj: Any, path: tuple) -> Any:
    """The value at ``path`` (``None`` where a mutator is about to add the key)."""
    for k in path:
        try:
            obj = obj[k]
        except (KeyError, IndexError, TypeError):
            return None
    return obj


def _set(obj: Any, path: tuple, value: Any) -> None:
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _eol(line: bytes) -> bytes:
    """The line ending a line carries (``\\r\\n``, ``\\n``, ``\\r`` or nothing)."""
    if line.endswith(b"\r\n"):
        return b"\r\n"
    if line.endswith((b"\n", b"\r")):
        return line[-1:]
    return b""


def _dumps(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(obj, ensure_ascii=False, allow_nan=True).encode("utf-8", "surrogatepass")


_BAD = object()  # a line that does not parse


def _too_deep(line: bytes, limit: int = 200) -> bool:
    """Whether a line nests deeper than an encoder can write back (orjson stops at 255 levels)."""
    depth = 0
    for b in line.translate(None, b'"\\').replace(b"{", b"[").replace(b"}", b"]"):
        if b == 0x5B:
            depth += 1
            if depth > limit:
                return True
        elif b == 0x5D:
            depth -= 1
    return False


def _parsed(data: bytes) -> tuple[list[bytes], list[Any]]:
    """The lines of a plaintext log and each one parsed (``_BAD`` when it does not parse, or
    nests too deep to be written back: a later mutator then keeps it as the bytes it is)."""
    ls = _lines(data)
    objs: list[Any] = []
    for line in ls:
        try:
            objs.append(_BAD if line.count(b"[") + line.count(b"{") > 200 and _too_deep(line) else orjson.loads(line))
        except orjson.JSONDecodeError:
            objs.append(_BAD)
    return ls, objs


# Positions a mutator aims at, by the key that holds the value.  "type"/"id"/... are the
# string positions hostile text is put in; "seq"/"time"/... the numeric ones.
_TEXT_KEYS = ("text", "content", "reasoning", "output", "summary", "prompt", "instructions")
_TOOL_KEYS = ("name", "toolName", "tool")
_COUNT_SUFFIXES = ("Count", "count", "Tokens", "tokens")


def _is_kind(kind: str, line: int, path: tuple, v: Any) -> bool:
    key = path[-1] if path and isinstance(path[-1], str) else None
    is_num = isinstance(v, (int, float)) and not isinstance(v, bool)
    if kind == "type":
        return key == "type" and isinstance(v, str)
    if kind == "id":
        return key in ("id", "sessionId", "parentSession") and isinstance(v, str)
    if kind == "cwd":
        return key == "cwd"
    if kind == "text":
        return key in _TEXT_KEYS and isinstance(v, str)
    if kind == "tool":
        return key in _TOOL_KEYS and isinstance(v, str)
    if kind == "title":
        return key == "title"
    if kind == "string":
        return isinstance(v, str)
    if kind == "seq":
        return key in ("seq", "startSeq", "endSeq") or (len(path) >= 2 and path[-2] == "sourceEventSeqs")
    if kind == "time":
        return key in ("time", "createdAt", "time0", "startedAt", "endedAt")
    if kind == "turn":
        return key == "turn"
    if kind == "step":
        return key == "step"
    if kind == "count":
        return is_num and key is not None and (key.endswith(_COUNT_SUFFIXES) or key in ("attempt", "delegationDepth", "version", "index"))
    if kind == "number":
        return is_num
    if kind == "content":
        return key in ("content", "message")
    if kind == "header":
        return line == 0 and len(path) == 1
    if kind == "data":
        return key == "data"
    return True  # "value": anywhere


_FALLBACK = {"type": "string", "id": "string", "cwd": "string", "text": "string", "tool": "string", "title": "string",
             "string": "value", "seq": "number", "time": "number", "turn": "number", "step": "number", "count": "number",
             "number": "value", "content": "data", "header": "value", "data": "value"}
_CREATE = {"cwd": "cwd", "id": "id", "header": "cwd"}  # header keys a mutator may add when the log has none


def _positions(objs: list[Any], kind: str) -> list[tuple[int, tuple]]:
    out = []
    for i, obj in enumerate(objs):
        if obj is _BAD:
            continue
        for p, v in _walk(obj):
            if _is_kind(kind, i, p, v):
                out.append((i, p))
    return out


def _pick(objs: list[Any], kind: str, r: random.Random) -> tuple[int, tuple] | None:
    """A position of this kind (falling back to broader kinds); ``None`` when nothing parses."""
    k: str | None = kind
    while k is not None:
        found = _positions(objs, k)
        if found:
            return r.choice(found)
        if k in _CREATE and objs and isinstance(objs[0], dict):
            return 0, (_CREATE[k],)
        k = _FALLBACK.get(k)
    return None


def _splice(ls: list[bytes], objs: list[Any], i: int, path: tuple, raw: bytes, *, infix: tuple[str, str] | None = None) -> None:
    """Put ``raw`` (JSON text, or with ``infix`` string-content bytes between a prefix and suffix) at ``path`` of line ``i``."""
    marker = "@@FZSPLICE@@"
    obj = objs[i]
    value = marker if infix is None else infix[0] + marker + infix[1]
    if not path:
        obj = value
    else:
        _set(obj, path, value)
    enc = _dumps(obj)
    enc = enc.replace(b'"' + marker.encode() + b'"' if infix is None else marker.encode(), raw, 1)
    ls[i] = enc + _eol(ls[i])
    objs[i] = _BAD  # re-encoded: later edits in the same mutator re-parse nothing stale


def _string_placement(r: random.Random, old: Any) -> tuple[str, str]:
    """Where inside a string value a payload goes: (prefix, suffix) of the old text."""
    s = old if isinstance(old, str) else ""
    how = r.choice(["whole", "prefix", "suffix", "middle"])
    if how == "whole" or not s:
        return "", ""
    if how == "prefix":
        return "", s[:200]
    if how == "suffix":
        return s[:200], ""
    cut = r.randrange(len(s[:200]) + 1)
    return s[:cut], s[cut:200]


def _json_str_bytes(s: str) -> bytes:
    """A str as the *inside* of a JSON string literal (escapes as orjson writes them)."""
    return _dumps(s)[1:-1]


# ----------------------------------------------------------------------------- structural mutators


def m_flip(data: bytes, r: random.Random) -> bytes:
    if not data:
        return data
    b = bytearray(data)
    for _ in range(r.randint(1, 8)):
        i = r.randrange(len(b))
        b[i] = r.choice([b[i] ^ (1 << r.randrange(8)), r.randrange(256), 0x0A, 0x22, 0x7B, 0x5D])
    return bytes(b)


def m_truncate(data: bytes, r: random.Random) -> bytes:
    return data[: r.randrange(len(data) + 1)] if data else data


def m_duplicate(data: bytes, r: random.Random) -> bytes:
    ls = _lines(data)
    if not ls:
        return data
    i = r.randrange(len(ls))
    ls[i:i] = [ls[i]] * r.randint(1, 3)
    return b"".join(ls)


def m_drop(data: bytes, r: random.Random) -> bytes:
    ls = _lines(data)
    if len(ls) > 1:
        del ls[r.randrange(len(ls))]
    return b"".join(ls)


def m_reorder(data: bytes, r: random.Random) -> bytes:
    ls = _lines(data)
    if len(ls) > 2:
        i, j = r.randrange(len(ls)), r.randrange(len(ls))
        ls[i], ls[j] = ls[j], ls[i]
        if r.random() < 0.3:
            body = ls[1:]
            r.shuffle(body)
            ls[1:] = body
    return b"".join(ls)


def m_retype(data: bytes, r: random.Random) -> bytes:
    """Replace one field of one JSON line by a hostile value (a string where an object belongs...)."""
    ls = _lines(data)
    if not ls:
        return data
    for _ in range(10):
        i = r.randrange(len(ls))
        try:
            obj = orjson.loads(ls[i])
        except orjson.JSONDecodeError:
            continue
        paths = list(_paths(obj))
        value = r.choice(HOSTILE)(r)
        if not paths:
            obj = value
        else:
            _set(obj, r.choice(paths), value)
        ls[i] = _deepen(_dumps(obj)) + (b"\n" if ls[i].endswith(b"\n") else b"")
        return b"".join(ls)
    return data


def m_garbage(data: bytes, r: random.Random) -> bytes:
    ls = _lines(data)
    junk = r.choice([b"\x00" * 10, b"\xff\xfe", b"{", b"[]", b"null", b'{"type":"session"}', b"\x28\xb5\x2f\xfd", b"\r\n",
                     b'{"type":"turn/end","seq":999999,"time":1,"data":{}}', b"1e999", b'"\\ud800"'])
    ls.insert(r.randrange(len(ls) + 1), junk + (b"\n" if r.random() < 0.7 else b""))
    return b"".join(ls)


def m_splice(data: bytes, r: random.Random, others: list[bytes] | None = None) -> bytes:
    if not others:
        return data
    o = _lines(r.choice(others))
    ls = _lines(data)
    if not o:
        return data
    k = r.randint(1, min(5, len(o)))
    s = r.randrange(len(o) - k + 1)
    ls[r.randrange(len(ls) + 1):0] = o[s : s + k]
    return b"".join(ls)


# ----------------------------------------------------------------------------- hostile values, framing, huge lines


def _nest(shape: str, k: int) -> bytes:
    """``k`` levels of nesting around a scalar, as JSON text."""
    if shape == "array":
        return b"[" * k + b"0" + b"]" * k
    if shape == "object":
        return b'{"a":' * k + b"0" + b"}" * k
    if shape == "blocks":  # message content: tool results inside tool results, two levels each
        h = max(1, k // 2)
        return b'[{"type":"tool-result","toolCallId":"c","toolName":"t","content":' * h + b'"x"' + b"}]" * h
    h = max(1, k // 2)  # mixed
    return b'[{"a":' * h + b"0" + b"}]" * h


def m_deep_nesting(data: bytes, r: random.Random) -> bytes:
    """990-1024 levels in all (orjson parses them, Python's recursion limit does not) or deeper, at a value position."""
    ls, objs = _parsed(data)
    kind = r.choice(["seq", "turn", "content", "content", "header", "data", "value"])
    pos = _pick(objs, kind, r)
    total = r.randint(990, 1024) if r.random() < 0.65 else r.choice([1025, 1100, 2000, 10_000, 100_000])
    if pos is None:
        return data + b'{"type":"x","seq":0,"time":1,"data":' + _nest("array", total - 2) + b"}\n"
    i, path = pos
    shape = "blocks" if kind == "content" and r.random() < 0.6 else r.choice(["array", "object", "mixed"])
    _splice(ls, objs, i, path, _nest(shape, max(1, total - len(path))))
    return b"".join(ls)


_SURROGATES = [b"\\ud800", b"\\udfff", b"\\udc80", b"\\udcff", b"\\ud800\\ud800", b"\\udc00\\ud800", b"x\\ud83d"]
_STRING_KINDS = ["type", "id", "cwd", "text", "tool", "title", "string"]


def m_lone_surrogate(data: bytes, r: random.Random) -> bytes:
    """An unpaired UTF-16 surrogate as a JSON escape (or, rarely, as raw CESU-8 bytes) in a string position."""
    for _ in range(r.choice([1, 1, 1, 3])):
        ls, objs = _parsed(data)
        pos = _pick(objs, r.choice(_STRING_KINDS), r)
        if pos is None:
            return data + b'{"type":"\\ud800","seq":0,"time":1,"data":{}}\n'
        i, path = pos
        old = _get(objs[i], path) if path else objs[i]
        raw = b"\xed\xa0\x80" if r.random() < 0.15 else r.choice(_SURROGATES)
        _splice(ls, objs, i, path, raw, infix=_string_placement(r, old))
        data = b"".join(ls)
    return data


CONTROL_PAYLOADS = [
    "\x1b]0;x\x07",  # OSC: set the window title
    "\x1b[31m",  # SGR: red
    "\x1b[2J\x1b[H",  # clear the screen
    "\x1b]8;;https://example.invalid/\x1b\\link\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x1b]52;c;Zm9v\x07",  # OSC 52: write the clipboard
    "\x1b[6n",  # DSR: the terminal answers on stdin
    "\x1bP+q544e\x1b\\",  # DCS
    "\x00", "\x07", "\x08", "\r", "\x0b", "\x7f",
    "\x9b31m", "\x9d0;x\x9c", "\x85",  # C1: CSI, OSC...ST, NEL
    "\u202e", "\u2066", "\u200f",  # bidi overrides / isolates / marks
]


def m_control_chars(data: bytes, r: random.Random) -> bytes:
    """Terminal escapes, C0/C1 controls and bidi overrides in a string position (JSON-escaped; rarely raw)."""
    ls, objs = _parsed(data)
    pos = _pick(objs, r.choice(_STRING_KINDS), r)
    payload = "".join(r.choice(CONTROL_PAYLOADS) for _ in range(r.randint(1, 2)))
    if pos is None:
        return data + b'{"type":"' + _json_str_bytes(payload) + b'","seq":0,"time":1,"data":{}}\n'
    i, path = pos
    old = _get(objs[i], path) if path else objs[i]
    raw = payload.encode("utf-8") if r.random() < 0.1 else _json_str_bytes(payload)  # raw: invalid JSON for C0
    _splice(ls, objs, i, path, raw, infix=_string_placement(r, old))
    return b"".join(ls)


RICH_MARKUP = [
    "[/x]", "[red]", "[/]", "[red]FUZZMARK[/red]", "[link=https://example.invalid/]click[/link]", "[bold red]x",
    "[/bold]", "[[x]]", "\\[red]", "[", "]", ":warning:", "[@click=app.quit]q[/]", "[#ff0000 on blue]x", "[red", "[/red]",
]


def m_rich_markup(data: bytes, r: random.Random) -> bytes:
    """Text that Rich would read as markup (``[red]``, ``[/x]``, ``[link=...]``) in session strings."""
    ls, objs = _parsed(data)
    for _ in range(r.choice([1, 1, 2, 4])):
        pos = _pick(objs, r.choice(["text", "text", "title", "tool", "cwd", "id", "type", "string"]), r)
        if pos is None:
            return data + b'{"type":"session/title","seq":0,"time":1,"data":{"title":"[red]FUZZMARK[/red] [/x]"}}\n'
        i, path = pos
        old = _get(objs[i], path) if path else objs[i]
        payload = r.choice(RICH_MARKUP) + (r.choice(RICH_MARKUP) if r.random() < 0.3 else "")
        _splice(ls, objs, i, path, _json_str_bytes(payload), infix=_string_placement(r, old))
        ls, objs = _parsed(b"".join(ls))
    return b"".join(ls)


_NUMBERS = [b"-0", b"-0.0", b"0.0", b"1e400", b"-1e400", b"1e-400", b"1.0", b"1E0", b"0.5",
            str(2**53).encode(), str(2**53 + 1).encode(), str(2**63).encode(), str(2**64 + 1).encode(),
            str(-(2**63) - 1).encode(), b"1" + b"0" * 400, b"-1" + b"0" * 400]


def _number_like(v: Any, r: random.Random) -> bytes:
    """A spelling of the same integer that is not an integer literal (``5.0``, ``5e0``, ``-0``), or a hostile number."""
    if type(v) is int and r.random() < 0.6:
        if v == 0:
            return r.choice([b"-0", b"-0.0", b"0.0", b"0e0"])
        return r.choice([b"%d.0" % v, b"%de0" % v, b"%d.000000000000000001" % v, b"%dE+0" % v])
    return r.choice(_NUMBERS)


def m_numbers(data: bytes, r: random.Random) -> bytes:
    """``-0``, ``-0.0``, ``1e400``, ``N.0``, 2**53, 2**64+1, 10**400 in seq/time/turn/step/counts (one or all of a kind)."""
    ls, objs = _parsed(data)
    kind = r.choice(["seq", "seq", "time", "turn", "step", "count", "number"])
    if r.random() < 0.25:  # every position of the kind: an otherwise consistent log
        found = _positions(objs, kind)
        by_line: dict[int, list[tuple]] = {}
        for i, p in found:
            by_line.setdefault(i, []).append(p)
        for i, paths in by_line.items():
            obj = objs[i]
            marks = {}
            for n, p in enumerate(paths):
                v = _get(obj, p)
                marks[n] = _number_like(v, r)
                _set(obj, p, f"@@FZNUM{n}@@")
            enc = _dumps(obj)
            for n, raw in marks.items():
                enc = enc.replace(b'"@@FZNUM%d@@"' % n, raw, 1)
            ls[i] = enc + _eol(ls[i])
        return b"".join(ls)
    pos = _pick(objs, kind, r)
    if pos is None:
        return data
    i, path = pos
    v = _get(objs[i], path) if path else objs[i]
    _splice(ls, objs, i, path, _number_like(v, r))
    return b"".join(ls)


def m_nul_bytes(data: bytes, r: random.Random) -> bytes:
    """NUL bytes: inside a line, a line of NULs, a zero-filled tail (what a power loss can leave), instead of a newline."""
    how = r.choice(["inside", "line", "tail", "newline"])
    b = bytearray(data)
    if how == "inside" and b:
        for _ in range(r.randint(1, 3)):
            b.insert(r.randrange(len(b) + 1), 0)
        return bytes(b)
    if how == "newline" and b.count(b"\n"):
        idx = [i for i, c in enumerate(b) if c == 0x0A]
        b[r.choice(idx)] = 0
        return bytes(b)
    ls = _lines(data)
    if how == "line":
        ls.insert(r.randrange(len(ls) + 1), b"\x00" * r.choice([1, 16, 4096]) + b"\n")
        return b"".join(ls)
    return data + b"\x00" * r.choice([1, 512, 4096])


def m_bom(data: bytes, r: random.Random) -> bytes:
    """A UTF-8 byte order mark: at the start (once or twice), at the start of a later line; rarely a UTF-16 one."""
    bom = b"\xef\xbb\xbf"
    how = r.choice(["start", "start", "start", "twice", "line", "utf16"])
    if how == "start":
        return bom + data
    if how == "twice":
        return bom + bom + data
    if how == "utf16":
        return b"\xff\xfe" + data
    ls = _lines(data)
    if len(ls) > 1:
        i = r.randrange(1, len(ls))
        ls[i] = bom + ls[i]
    return b"".join(ls)


def m_crlf(data: bytes, r: random.Random) -> bytes:
    """CRLF line endings: every line, some lines, only the header; rarely bare CR."""
    how = r.choice(["all", "all", "some", "header", "cr"])
    ls = _lines(data)
    for i, line in enumerate(ls):
        if not line.endswith(b"\n") or line.endswith(b"\r\n"):
            continue
        if how == "all" or (how == "some" and r.random() < 0.5) or (how == "header" and i == 0):
            ls[i] = line[:-1] + b"\r\n"
        elif how == "cr":
            ls[i] = line[:-1] + b"\r"
    return b"".join(ls)


def m_no_final_newline(data: bytes, r: random.Random) -> bytes:
    """The last line (or, sometimes, a lone header) without its newline."""
    if r.random() < 0.15:
        ls = _lines(data)
        return ls[0].rstrip(b"\r\n") if ls else data
    return data.rstrip(b"\r\n")


def m_huge_line(data: bytes, r: random.Random) -> bytes:
    """One line of about ``PARAMS.huge_line_bytes``: a huge message text, header field, array, number, or garbage."""
    n = max(16, int(PARAMS.huge_line_bytes * r.uniform(0.5, 1.0)))
    ls, objs = _parsed(data)
    how = r.choice(["text", "text", "torn", "garbage", "array", "header", "digits", "keys"])
    if how == "torn":
        return data + b'{"type":"user/message","seq":99,"time":1,"data":{"text":"' + b"a" * n
    if how == "garbage":
        ls.insert(r.randrange(len(ls) + 1), (b"z{[" * (n // 3)) + b"\n")
        return b"".join(ls)
    kind = {"text": "text", "array": "data", "header": "header", "digits": "seq", "keys": "data"}[how]
    pos = _pick(objs, kind, r)
    if pos is None:
        return data + b'{"type":"user/message","seq":0,"time":1,"data":{"x":"' + b"a" * n + b'"}}\n'
    i, path = pos
    if how == "array":
        raw = b"[" + b"0," * (n // 2 - 1) + b"0]"
    elif how == "digits":
        raw = b"1" * min(n, 1 << 20)
    elif how == "keys":
        raw = b"{" + b",".join(b'"k%d":0' % j for j in range(n // 10)) + b"}"
    else:
        unit = r.choice([b"a", b"\xc3\xa9", b"\\n", b"\\ud83d\\ude00", b"\\u001b"])
        raw = b'"' + unit * (n // len(unit)) + b'"'
    _splice(ls, objs, i, path, raw)
    return b"".join(ls)


# ----------------------------------------------------------------------------- zstd containers

def _header_len(fr: bytes) -> int:
    """Bytes of a zstd frame's header (magic included), from its descriptor."""
    if len(fr) < 5:
        return len(fr)
    desc = fr[4]
    single = (desc >> 5) & 1
    flag = desc >> 6
    fcs = (1 if single else 0) if flag == 0 else (1, 2, 4, 8)[flag]
    return 5 + (0 if single else 1) + (0, 1, 2, 4)[desc & 3] + fcs


def frames_of(plain: bytes, r: random.Random) -> list[bytes]:
    """zstd frames as dsh writes them: the header line alone, then frames of 1-3 lines (checksummed)."""
    import zstandard

    c = zstandard.ZstdCompressor(write_checksum=True)
    ls = _lines(plain)
    out = [c.compress(ls[0])] if ls else []
    i = 1
    while i < len(ls):
        k = r.randint(1, 3)
        out.append(c.compress(b"".join(ls[i : i + k])))
        i += k
    return out


def reframe(plain: bytes, r: random.Random) -> bytes:
    """zstd container of a plaintext; sometimes a torn last frame or flipped bytes."""
    return _tear(b"".join(frames_of(plain, r)), r)


def _tear(data: bytes, r: random.Random) -> bytes:
    if r.random() < 0.2 and data:
        data = data[: r.randrange(len(data))]
    if r.random() < 0.1 and data:
        data = m_flip(data, r)
    return data


_BOMBS: dict[tuple, bytes] = {}


def _compress_stream(pieces: list[tuple[bytes, int]], *, size: int | None) -> bytes:
    """One zstd frame of ``piece * count`` runs, compressed without ever holding the plaintext."""
    import zstandard

    cobj = zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=size is not None).compressobj(size=size or -1)
    out = []
    for piece, count in pieces:
        block = piece * max(1, (4 * MB) // max(1, len(piece)))
        left = count * len(piece)
        while left > 0:
            chunk = block[: min(left, len(block))]
            left -= len(chunk)
            out.append(cobj.compress(chunk))
    out.append(cobj.flush())
    return b"".join(out)


def _bomb(n: int, variant: str, seq: int) -> bytes:
    """A small frame that decompresses to about ``n`` bytes (cached per shape)."""
    key = (n, variant, seq)
    if key in _BOMBS:
        return _BOMBS[key]
    head = (b'{"type":"user/message","seq":%d,"time":1,"data":{"id":"m-bomb","role":"user",'
            b'"content":[{"type":"text","text":"' % seq)
    tail = b'"}]},"surfaceOp":"append"}\n'
    if variant == "line":
        fr = _compress_stream([(head, 1), (b"a", n), (tail, 1)], size=len(head) + n + len(tail))
    elif variant == "streamed":  # no content size in the frame header
        fr = _compress_stream([(head, 1), (b"a", n), (tail, 1)], size=None)
    elif variant == "torn":  # the line never ends
        fr = _compress_stream([(head, 1), (b"a", n)], size=None)
    elif variant == "newlines":  # millions of lines instead of one
        fr = _compress_stream([(b'{"type":"x"}\n', max(1, n // 13 // 16))], size=None)
    else:  # "declared": a tiny frame whose header claims 2**34 bytes, single segment (window = content size)
        import zstandard

        small = zstandard.ZstdCompressor(write_checksum=True, write_content_size=False).compress(head + b"a" + tail)
        hl = _header_len(small)
        body = small[hl:]
        desc = (3 << 6) | (1 << 5) | (small[4] & 0x04)
        fr = ZSTD_MAGIC + bytes([desc]) + (1 << 34).to_bytes(8, "little") + body
    if len(_BOMBS) > 16:
        _BOMBS.clear()
    _BOMBS[key] = fr
    return fr


def _next_seq(plain_lines: list[bytes]) -> int:
    for line in reversed(plain_lines):
        m = re.search(rb'"seq"\s*:\s*([0-9]+)', line)
        if m:
            return int(m.group(1)) + 1
    return 0


def z_bomb(frames: list[bytes], plain: list[bytes], r: random.Random) -> list[bytes]:
    """A decompression bomb: a small frame that decodes to ``PARAMS.bomb_bytes`` (one line, torn, many lines, lying size)."""
    variant = r.choice(["line", "line", "streamed", "torn", "newlines", "declared"])
    fr = _bomb(PARAMS.bomb_bytes, variant, _next_seq(plain))
    if variant == "torn":
        return frames + [fr]
    pos = r.choice([len(frames), len(frames), min(1, len(frames)), r.randint(min(1, len(frames)), len(frames))])
    return frames[:pos] + [fr] + frames[pos:]


def _pick_frame(frames: list[bytes], r: random.Random, *, not_last: bool = False) -> int:
    n = len(frames) - (1 if not_last and len(frames) > 1 else 0)
    return r.choice([0, n - 1, r.randrange(n)]) if n > 0 else 0


def z_bad_checksum(frames: list[bytes], plain: list[bytes], r: random.Random) -> list[bytes]:
    """A wrong content checksum (the last 4 bytes of a frame): the header frame, a middle one or the last."""
    if not frames:
        return frames
    i = _pick_frame(frames, r)
    fr = bytearray(frames[i])
    if len(fr) > 4:
        fr[-1 - r.randrange(4)] ^= 1 << r.randrange(8)
    frames[i] = bytes(fr)
    return frames


def z_skippable(frames: list[bytes], plain: list[bytes], r: random.Random) -> list[bytes]:
    """Skippable frames (magic 0x184D2A50..5F): empty, with payload, truncated or with a huge size; anywhere."""
    magic = (0x184D2A50 + r.randrange(16)).to_bytes(4, "little")
    how = r.choice(["empty", "payload", "json", "payload", "truncated", "huge"])
    payload = {"empty": b"", "json": b'{"type":"turn/end","seq":1,"time":1,"data":{}}\n'}.get(how, r.randbytes(r.choice([1, 8, 300])))
    size = len(payload) + (r.randint(1, 1000) if how == "truncated" else 0)
    if how == "huge":
        size = 0xFFFFFFFF
    fr = magic + size.to_bytes(4, "little") + payload
    if how in ("truncated", "huge"):
        return frames + [fr]
    pos = r.choice([0, min(1, len(frames)), len(frames), r.randint(0, len(frames))])
    return frames[:pos] + [fr] * r.choice([1, 1, 2]) + frames[pos:]


def z_reserved_bits(frames: list[bytes], plain: list[bytes], r: random.Random) -> list[bytes]:
    """Frame header descriptor bits: the reserved bit, the unused bit, a dictionary id; a reserved block type."""
    if not frames:
        return frames
    i = _pick_frame(frames, r)
    fr = bytearray(frames[i])
    if len(fr) < 8:
        return frames
    how = r.choice(["reserved", "unused", "dict-id", "block-type"])
    if how == "reserved":
        fr[4] |= 0x08
    elif how == "unused":
        fr[4] |= 0x10
    elif how == "dict-id" and fr[4] & 3 == 0:
        single = (fr[4] >> 5) & 1
        fr[4] |= 1
        fr.insert(5 + (0 if single else 1), r.randrange(1, 256))
    else:
        h = _header_len(bytes(fr))
        if h < len(fr):
            fr[h] |= 0x06  # block type 3: reserved
    frames[i] = bytes(fr)
    return frames


def z_truncated_frame(frames: list[bytes], plain: list[bytes], r: random.Random) -> list[bytes]:
    """A frame cut short (no checksum, mid-block, mid-header) with valid frames after it, or at the end."""
    if not frames:
        return frames
    i = _pick_frame(frames, r, not_last=r.random() < 0.8)
    fr = frames[i]
    cut = r.choice([len(fr) - 4, len(fr) - 1, r.randrange(len(fr)), _header_len(fr) - 1, 4])
    frames[i] = fr[: max(0, cut)]
    return frames


def z_trailing_garbage(frames: list[bytes], plain: list[bytes], r: random.Random) -> list[bytes]:
    """Bytes after the last frame: random, zeros, part of a magic number, a plain JSON line, a half frame."""
    junk = r.choice([r.randbytes(r.randint(1, 64)), b"\x00" * r.choice([1, 4, 4096]), ZSTD_MAGIC[: r.randint(1, 3)],
                     ZSTD_MAGIC + b"\x00", b'{"type":"turn/end","seq":1,"time":1,"data":{}}\n', b"\n",
                     frames[-1][: len(frames[-1]) // 2] if frames else b"?"])
    return frames + [junk]


def z_corrupt_middle(frames: list[bytes], plain: list[bytes], r: random.Random) -> list[bytes]:
    """A damaged frame followed by valid ones: flipped payload bytes, random bytes, frames swapped or repeated."""
    if len(frames) < 2:
        frames = frames + frames[-1:] if frames else frames
    if len(frames) < 2:
        return frames
    i = r.randrange(len(frames) - 1)
    how = r.choice(["flip", "flip", "random", "swap", "repeat"])
    fr = bytearray(frames[i])
    h = _header_len(bytes(fr))
    if how == "flip" and len(fr) > h + 4:
        for _ in range(r.randint(1, 4)):
            j = r.randrange(h, len(fr) - 4)
            fr[j] ^= 1 << r.randrange(8)
        frames[i] = bytes(fr)
    elif how == "random" and len(fr) > h:
        frames[i] = bytes(fr[:h]) + r.randbytes(len(fr) - h)
    elif how == "swap":
        frames[i], frames[i + 1] = frames[i + 1], frames[i]
    else:
        frames.insert(i, frames[i])
    return frames


MUTATORS: dict[str, Callable[..., Any]] = {
    "flip": m_flip,
    "truncate": m_truncate,
    "duplicate": m_duplicate,
    "drop": m_drop,
    "reorder": m_reorder,
    "retype": m_retype,
    "garbage": m_garbage,
    "splice": m_splice,
    "deep_nesting": m_deep_nesting,
    "lone_surrogate": m_lone_surrogate,
    "control_chars": m_control_chars,
    "rich_markup": m_rich_markup,
    "numbers": m_numbers,
    "nul_bytes": m_nul_bytes,
    "bom": m_bom,
    "crlf": m_crlf,
    "no_final_newline": m_no_final_newline,
    "huge_line": m_huge_line,
    "zstd_bomb": z_bomb,
    "zstd_bad_checksum": z_bad_checksum,
    "zstd_skippable": z_skippable,
    "zstd_reserved_bits": z_reserved_bits,
    "zstd_truncated_frame": z_truncated_frame,
    "zstd_trailing_garbage": z_trailing_garbage,
    "zstd_corrupt_middle": z_corrupt_middle,
}
# Mutators of the zstd container: they work on the frames (a plain seed is framed first), after the plaintext ones.
CONTAINER = frozenset(k for k in MUTATORS if k.startswith("zstd_"))
# The classes beyond the structural ones.
HOSTILE_CLASSES = [k for k in MUTATORS if k not in ("flip", "truncate", "duplicate", "drop", "reorder", "retype", "garbage", "splice")]


def decoded(path: Path) -> tuple[bytes, bool]:
    """Plaintext of a seed and whether it was zstd (mutations apply to plaintext, then re-framed)."""
    raw = path.read_bytes()
    if raw.startswith(ZSTD_MAGIC):
        import zstandard

        try:
            with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw), read_across_frames=True) as rd:
                return rd.read(), True
        except zstandard.ZstdError:
            return raw, False
    return raw, False


def mutate(seed: bytes, zstd: bool, ops: list[tuple[str, int]], others: list[bytes]) -> bytes:
    """Apply ``ops`` (name, seed) in order: plaintext mutators first, then (re)framing and container mutators."""
    data = seed
    for name, s in ops:
        if name in CONTAINER:
            continue
        r = random.Random(s)
        fn = MUTATORS[name]
        data = fn(data, r, others) if name == "splice" else fn(data, r)
    container = [(n, s) for n, s in ops if n in CONTAINER]
    if zstd or container:
        rf = random.Random(len(ops) * 7919 + len(data))
        frames = frames_of(data, rf)
        plain = _lines(data)
        for name, s in container:
            frames = MUTATORS[name](list(frames), plain, random.Random(s))
        data = b"".join(frames)
        if zstd:
            data = _tear(data, rf)
    return data


def input_name(seed_name: str, ops: list[tuple[str, int]]) -> str:
    """The file name a mutated input is stored under (``.zstd`` added when a container mutator framed a plain seed)."""
    if any(n in CONTAINER for n, _ in ops) and not seed_name.endswith(".zstd"):
        return seed_name + ".zstd"
    return seed_name


# ----------------------------------------------------------------------------- running commands


@dataclass
class Run:
    """How one isolated command ended."""

    code: int | None  # exit status (None when killed by a signal)
    signal: int | None  # the signal that ended it (not our timeout kill)
    hung: bool
    seconds: float  # wall clock
    maxrss: int  # bytes (the child's high-water mark, inherited pages included)
    out: Path
    err: Path
    cpu: float = 0.0  # user + system seconds of the command


def _child(argv: list[str], out_fd: int, err_fd: int, tty: bool, env: dict[str, str], cwd: str) -> None:
    """The forked child: become a fresh ``dshlog`` process and run ``argv``; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        for s in (signal.SIGALRM, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(s, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        resource.setrlimit(resource.RLIMIT_AS, (PARAMS.mem_bytes, PARAMS.mem_bytes))
        # SIGXCPU at the CPU limit, SIGKILL a second later: a hang is CPU the command spent, whatever the machine's load
        cpu = max(1, int(-(-PARAMS.timeout_s // 1)))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGXCPU would dump core
        signal.signal(signal.SIGXCPU, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        os.chdir(cwd)
        for k in ("NO_COLOR", "FORCE_COLOR", "PAGER", "LESS", "COLUMNS", "LINES", "DSH_HOME"):
            os.environ.pop(k, None)
        os.environ.update(env)
        # the streams a fresh interpreter would have (stdout strict in a UTF-8 locale; stderr backslashreplace)
        sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8")
        sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8",
                                                       errors=PARAMS.stdio_errors, line_buffering=tty)
        sys.stderr = sys.__stderr__ = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)), encoding="utf-8",
                                                       errors="backslashreplace", line_buffering=True)
        from dshlog.cli import main

        _use_prebuilt_cli()
        try:
            # what ``dshlog`` does with it (``sys.exit(int(cli_main()))``): main returns the exit code
            rv = main(argv)
            code = int(rv) if isinstance(rv, int) else 0
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:  # noqa: BLE001 - what the interpreter does with an uncaught exception
            import traceback

            traceback.print_exc()
            code = 1
        try:
            sys.stdout.flush()
        except BaseException:  # noqa: BLE001 - a failing flush at exit is the interpreter's status 120
            import traceback

            traceback.print_exc()
            code = 120  # the interpreter's status when flushing stdout at exit fails
        with contextlib.suppress(BaseException):
            sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - the child must reach os._exit whatever failed
        with contextlib.suppress(BaseException):
            os.write(2, b"fuzz child setup failed\n")
    finally:
        os._exit(code & 0xFF)


_PREBUILT: Any = None
# The interactive browser (Textual, a tenth of the warm heap): no fuzzed command runs it.  A fork costs
# in proportion to the parent's resident memory (page tables copied, then torn down), about 0.15 ms a MiB here.
_NOT_WARMED = frozenset({"dshlog.browse.app", "dshlog.cli.browse"})


def warm() -> None:
    """Make every fork start warm: import what the commands import lazily, and build the CLI once.

    A forked child then costs a fork and the command's own work, not module imports
    (compiled from source when bytecode caching is off) and Typer's per-call
    construction of the click command, which dominate on small inputs.
    """
    global _PREBUILT
    if _PREBUILT is not None:
        return
    import importlib
    import pkgutil

    import typer.main

    import dshlog
    import dshlog.cli

    for m in pkgutil.walk_packages(dshlog.__path__, "dshlog."):
        if m.name.endswith(".__main__"):  # runs the CLI when imported
            continue
        if m.name in _NOT_WARMED:
            continue
        with contextlib.suppress(Exception):
            importlib.import_module(m.name)
    for name in ("rich.console", "rich.table", "rich.text", "rich.markup", "rich.padding", "rich.panel", "rich.rule",
                 "rich.progress", "rich.pager", "rich.style", "rich.segment", "rich.box", "rich.cells", "rich._wrap",
                 "rich.containers", "rich.measure", "rich.jupyter", "rich.live", "rich.terminal_theme", "rich.emoji",
                 "rich._emoji_replace", "rich._emoji_codes", "rich.color", "rich.highlighter", "rich.scope", "rich.theme",
                 "rich.themes", "rich.default_styles", "rich.control", "rich._loop", "rich._pick", "rich.align",
                 "rich.constrain", "rich.styled", "rich.region", "rich._ratio", "rich.file_proxy", "rich.screen",
                 "rich.abc", "rich.filesize", "rich.protocol", "rich.repr", "rich.pretty", "rich.errors", "rich._log_render",
                 "rich._windows", "rich._null_file", "rich._fileno", "rich._export_format", "pydoc", "zstandard", "ijson",
                 "hashlib", "uuid", "datetime", "html", "fnmatch", "shlex", "locale",
                 # what export html imports on first use (two dozen modules: most of its time in a fresh process)
                 "markdown_it", "markdown_it.main", "mdurl", "linkify_it", "pygments.lexers", "pygments.formatters.html",
                 "pygments.styles.default", "pygments.styles.monokai", "pygments.lexers.data", "logging", "string",
                 "typer._click.decorators", "encodings.utf_16_le"):
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    _PREBUILT = typer.main.get_command(dshlog.cli.app)
    # the commands are loaded lazily, each built by Typer on first use: build them all here, once
    for name in getattr(dshlog.cli, "COMMANDS", ()):
        if f"dshlog.cli.{name}" in _NOT_WARMED:
            continue
        with contextlib.suppress(Exception):
            _PREBUILT.get_command(None, name)  # the lazy group caches what it built


def _use_prebuilt_cli() -> None:
    """In a child: Typer's ``app()`` gets the click command built once in the parent (same object, same behaviour)."""
    if _PREBUILT is None:
        return
    import typer.main

    import dshlog.cli

    original = typer.main.get_command
    app = dshlog.cli.app
    typer.main.get_command = lambda t: _PREBUILT if t is app else original(t)


def _set_winsize(fd: int, rows: int = 50, cols: int = 120) -> None:
    import fcntl
    import struct
    import termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class _Server:
    """A small warm process that forks the commands (``bench/fuzz.py --serve``), one request at a time.

    Forking the fuzzer itself (or pytest, with everything it holds) costs several
    times more per command than forking a process that holds only dshlog, and its
    high-water mark would be every child's too.
    """

    def __init__(self) -> None:
        import subprocess

        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=str(ROOT))

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the fuzz command server died (status {self.proc.wait()})")
        return json.loads(line)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except Exception:  # noqa: BLE001 - a server that does not leave is killed
            self.proc.kill()
            self.proc.wait()


_SERVER: _Server | None = None
_IN_SERVER = False


def stop_server() -> None:
    """End the command server (it is started again on demand); a caller that checks for child processes needs it gone."""
    global _SERVER
    if _SERVER is not None:
        _SERVER.close()
        _SERVER = None


def serve() -> None:
    """The command server's loop: a JSON request per line in, a JSON result per line out."""
    global _IN_SERVER
    import gc

    _IN_SERVER = True
    warm()
    gc.freeze()  # the children never make the collector touch (and copy) the warm heap
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        req = json.loads(line)
        PARAMS.mem_bytes = req["mem"]
        PARAMS.stdio_errors = req["errors"]
        PARAMS.timeout_s = req["timeout"]
        r = _run_forked(req["argv"], work=Path(req["work"]), cwd=Path(req["cwd"]), tty=req["tty"], env=req["env"],
                        timeout=req["timeout"], wall=req["wall"])
        out.write(json.dumps({"code": r.code, "signal": r.signal, "hung": r.hung, "seconds": r.seconds,
                              "maxrss": r.maxrss, "cpu": r.cpu}).encode() + b"\n")
        out.flush()


def run_isolated(argv: list[str], *, work: Path, cwd: Path, tty: bool = False, env: dict[str, str] | None = None,
                 timeout: float | None = None) -> Run:
    """Run ``dshlog argv`` in a fresh forked process with a timeout and ``RLIMIT_AS``; stdout and stderr go to ``work``.

    ``timeout`` is CPU seconds (``RLIMIT_CPU``), with a wall-clock backstop of
    :func:`wall_backstop` for a command that blocks without spending CPU.  With
    ``PARAMS.max_line_mib`` every command gets that global ``--max-line-size``.
    With ``tty`` the child's stdout is a pseudo-terminal (120 columns), read as it writes.
    """
    global _SERVER
    timeout = PARAMS.timeout_s if timeout is None else timeout
    wall = wall_backstop(timeout)
    if PARAMS.max_line_mib is not None:
        argv = ["--max-line-size", str(PARAMS.max_line_mib), *argv]
    if _IN_SERVER:
        return _run_forked(argv, work=work, cwd=cwd, tty=tty, env=env, timeout=timeout, wall=wall)
    if _SERVER is None or _SERVER.proc.poll() is not None:
        import atexit

        _SERVER = _Server()
        atexit.register(_SERVER.close)
    r = _SERVER.run({"argv": argv, "work": str(work), "cwd": str(cwd), "tty": tty, "env": env or {}, "timeout": timeout,
                     "wall": wall, "mem": PARAMS.mem_bytes, "errors": PARAMS.stdio_errors})
    return Run(r["code"], r["signal"], r["hung"], r["seconds"], r["maxrss"], work / "stdout", work / "stderr", r["cpu"])


def wall_backstop(cpu_timeout: float) -> float:
    """Wall seconds after which a command is killed whatever CPU it spent (it may block without spending any)."""
    return PARAMS.wall_s if PARAMS.wall_s is not None else max(120.0, 4 * cpu_timeout)


def _run_forked(argv: list[str], *, work: Path, cwd: Path, tty: bool, env: dict[str, str] | None, timeout: float,
                wall: float | None = None) -> Run:
    """:func:`run_isolated`'s work, in this process: fork, limit, wait (reading the terminal), classify.

    A hang is the CPU limit reached (the child dies by SIGXCPU, or SIGKILL at the hard
    limit) or, for a child that blocks, the wall-clock backstop.
    """
    wall = wall_backstop(timeout) if wall is None else wall
    warm()
    out_p, err_p = work / "stdout", work / "stderr"
    out_fd = os.open(out_p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    err_fd = os.open(err_p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    master = slave = -1
    child_env = {"DSH_HOME": str(work / "no-dsh-home"), "PAGER": "cat", "TERM": "xterm-256color", **(env or {})}
    if tty:
        master, slave = os.openpty()
        _set_winsize(slave)
        child_env.update({"COLUMNS": "120", "LINES": "50"})
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        if master >= 0:
            os.close(master)
        _child(argv, slave if tty else out_fd, err_fd, tty, child_env, str(cwd))
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)
    os.close(err_fd)
    if tty:
        os.close(slave)
    pidfd = os.pidfd_open(pid)
    hung = False
    try:
        while True:
            left = start + wall - time.monotonic()
            if left <= 0:
                hung = True
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
                break
            ready, _, _ = select.select([pidfd] + ([master] if tty else []), [], [], left)
            if tty and master in ready:
                _pump(master, out_fd)
            if pidfd in ready:
                break
        _, status, ru = os.wait4(pid, 0)
        if tty:
            os.set_blocking(master, False)
            while _pump(master, out_fd):
                pass
    finally:
        os.close(pidfd)
        os.close(out_fd)
        if tty:
            os.close(master)
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)  # a helper process the command left behind
    seconds = time.monotonic() - start
    cpu = ru.ru_utime + ru.ru_stime
    if os.WIFSIGNALED(status) and (os.WTERMSIG(status) == signal.SIGXCPU
                                   or (os.WTERMSIG(status) == signal.SIGKILL and cpu >= timeout)):
        hung = True  # the CPU limit (RLIMIT_CPU's soft signal, or its hard kill)
    if hung:
        return Run(None, None, True, seconds, ru.ru_maxrss * 1024, out_p, err_p, cpu)
    if os.WIFSIGNALED(status):
        return Run(None, os.WTERMSIG(status), False, seconds, ru.ru_maxrss * 1024, out_p, err_p, cpu)
    return Run(os.WEXITSTATUS(status), None, False, seconds, ru.ru_maxrss * 1024, out_p, err_p, cpu)


def _pump(master: int, out_fd: int) -> bool:
    """Copy what the pseudo-terminal holds to the output file; False at its end."""
    try:
        chunk = os.read(master, 1 << 16)
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:  # EIO: the child side closed
        return False
    if not chunk:
        return False
    os.write(out_fd, chunk)
    return True


# ----------------------------------------------------------------------------- checks

OUTCOMES = ["exit-1", "bad-exit", "traceback", "signal", "hang", "output-despite-error", "input-modified",
            "files-beside-input", "control-chars", "markup-interpreted", "unreadable-output", "invalid-output",
            "accepted-corrupt", "container-disagreement", "cache-disagreement", "paths-disagreement"]
NOTES = ["bidi-in-output", "surrogate-in-output", "control-chars-in-export", "bidi-in-output-in-export",
         "surrogate-in-output-in-export"]  # counted and reported, not failures


@dataclass
class Failure:
    """One broken promise of one command on one input."""

    outcome: str
    label: str
    detail: str
    signature: str = ""  # for grouping: exception and deepest dshlog frame, or the outcome's own key

    def __str__(self) -> str:
        return f"[{self.outcome}] {self.label}: {self.detail}"


@dataclass
class Stats:
    """Counters over a whole run."""

    inputs: int = 0
    runs: int = 0
    extra_runs: int = 0  # read-backs of written outputs and --debug re-runs
    outcomes: Counter = field(default_factory=Counter)
    notes: Counter = field(default_factory=Counter)
    by_label: Counter = field(default_factory=Counter)
    signatures: dict = field(default_factory=dict)
    peak_rss: dict = field(default_factory=dict)
    slowest: dict = field(default_factory=dict)  # wall seconds
    slowest_cpu: dict = field(default_factory=dict)  # CPU seconds
    cpu: float = 0.0  # CPU seconds of the command runs (not the read-backs or re-runs)
    exit_codes: Counter = field(default_factory=Counter)  # how the command runs ended

    def as_dict(self) -> dict[str, Any]:
        return {"inputs": self.inputs, "commandRuns": self.runs, "extraRuns": self.extra_runs,
                "exitCodes": dict(sorted(self.exit_codes.items())),
                "outcomes": {k: self.outcomes.get(k, 0) for k in OUTCOMES}, "notes": dict(self.notes),
                "failuresByCommand": dict(sorted(self.by_label.items())),
                "peakRssMiB": {k: v // MB for k, v in sorted(self.peak_rss.items())},
                "slowestSeconds": {k: round(v, 2) for k, v in sorted(self.slowest.items())},
                "slowestCpuSeconds": {k: round(v, 2) for k, v in sorted(self.slowest_cpu.items())},
                "commandCpuSeconds": round(self.cpu, 1)}


# bidi embeddings, overrides and isolates count as controls: they reorder what follows them on screen
_CTL_PLAIN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\udc80-\udc9f]")
_CTL_TTY = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\udc80-\udc9f]")  # \r: the terminal's own line discipline
_SGR = re.compile("\x1b\\[[0-9;:]*m")
_BIDI = re.compile("[\u200e\u200f\u061c]")  # the marks right-to-left text needs: noted, not failures
_BOX = re.compile("[\\s\u2500-\u257f]+")
# A lone surrogate written with surrogatepass: three bytes that are not UTF-8 (decoded here as escaped bytes).
_ENCODED_SURROGATE = re.compile("\udced[\udca0-\udcbf][\udc80-\udcbf]")


def _decode_chunks(path: Path, limit: int = 256 * MB) -> Iterator[str]:
    dec = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
    with open(path, "rb") as fh:
        left = limit
        while left > 0:
            b = fh.read(min(8 * MB, left))
            if not b:
                break
            left -= len(b)
            yield dec.decode(b)
    yield dec.decode(b"", final=True)


def _show(s: str) -> str:
    return s.encode("unicode_escape", "backslashreplace").decode("ascii")


def scan_output(path: Path, *, tty: bool, markup: bool) -> dict[str, str]:
    """Raw control characters (and bidi controls, Rich markup eaten) in what a person would see."""
    found: dict[str, str] = {}
    prev = ""
    for text in _decode_chunks(path):
        if tty:
            text = _SGR.sub("", text)
        if "surrogate-in-output" not in found:
            m = _ENCODED_SURROGATE.search(text)
            if m:
                found["surrogate-in-output"] = f"encoded lone surrogate in {_show(text[max(0, m.start() - 30): m.end() + 30])!r}"
        text = _ENCODED_SURROGATE.sub("?", text)
        if "control-chars" not in found:
            m = (_CTL_TTY if tty else _CTL_PLAIN).search(text)
            if m:
                found["control-chars"] = f"U+{ord(m.group()):04X} in {_show(text[max(0, m.start() - 30): m.end() + 30])!r}"
        if "bidi-in-output" not in found:
            m = _BIDI.search(text)
            if m:
                found["bidi-in-output"] = f"U+{ord(m.group()):04X} in {_show(text[max(0, m.start() - 30): m.end() + 30])!r}"
        if markup and tty and "markup-interpreted" not in found:
            joined = prev + text
            for m in re.finditer("FUZZMARK", joined):
                before = _BOX.sub("", joined[max(0, m.start() - 400): m.start()])
                if not before.endswith("[red]"):
                    found["markup-interpreted"] = f"'[red]FUZZMARK' shown as {_show(joined[max(0, m.start() - 40): m.end() + 20])!r}"
                    break
            prev = text[-400:]
    return found


def _tail(path: Path, n: int = 4000) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - n))
        return fh.read()


_FRAME = re.compile(r'File "[^"]*?(dshlog/[^"]+)", line (\d+), in (\S+)')


def traceback_signature(err: bytes) -> str:
    """``ExcType at dshlog/x.py:func`` from a traceback: the exception and the deepest dshlog frame."""
    text = err.decode("utf-8", "replace")
    frames = _FRAME.findall(text)
    lines = [ln for ln in text.strip().splitlines() if ln and not ln.startswith(" ")]
    exc = ""
    for ln in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Warning)\b", ln) or ln.startswith(("RecursionError", "MemoryError")):
            exc = ln.split(":")[0]
            break
    where = f"{frames[-1][0]}:{frames[-1][2]}" if frames else "?"
    return f"{exc or '?'} at {where}"


def _error_kind(err: bytes) -> str:
    """The reason of a one-line error with the file, positions and numbers taken out (for grouping)."""
    lines = [ln for ln in err.decode("utf-8", "replace").splitlines() if ln.startswith("dshlog: ")]
    if not lines:
        return "?"
    text = lines[-1]
    text = re.sub(r"^dshlog: (\w+): .*?: ((?:line|element|byte|frame|seq) [^:]*: )?", r"\1: ", text)
    return re.sub(r"[0-9]+", "N", text)[:120]


def _internal_line(err: bytes) -> str:
    m = re.search(rb"internal error: ([A-Za-z_][\w.]*)", err)
    return m.group(1).decode() if m else ""


# The commands every input goes through.  Placeholders: {f} the input, {o} a fresh output path, {w} a copy for
# repair --write, {m} a session directory holding a copy (migrate), {root} a persistence root holding a copy,
# {last} the last request (as counted in the plaintext), {at} a seq in the middle.
#   human: stdout is for people (scanned for control characters); tty: stdout is a terminal;
#   out: the command writes {o} (nothing may be left after an error exit, but an export of a log dsh refuses, which
#   opens with the refusal and exits with its code); copy: it changes {w} or {m} only on success.
@dataclass(frozen=True)
class Command:
    label: str
    argv: tuple[str, ...]
    human: bool = True
    tty: bool = False
    out: str | None = None  # suffix of {o}
    copy: str | None = None  # "w" or "m"


COMMANDS: list[Command] = [
    Command("events", ("events", "{f}")),
    Command("events --json", ("events", "--json", "{f}"), human=False),
    Command("events --v4 --json", ("events", "--v4", "--json", "{f}"), human=False),
    Command("info", ("info", "{f}")),
    Command("validate", ("validate", "{f}")),
    Command("surface", ("surface", "{f}")),
    Command("requests", ("requests", "{f}")),
    Command("rebuild -r 1", ("rebuild", "--request", "1", "{f}"), human=False),
    Command("rebuild -r last", ("rebuild", "--request", "{last}", "{f}"), human=False),
    Command("repair", ("repair", "{f}")),
    Command("repair -o", ("repair", "{f}", "-o", "{o}"), out=".jsonl"),
    Command("repair --write", ("repair", "--write", "{w}"), copy="w"),
    Command("fork --at", ("fork", "{f}", "--at", "{at}", "-o", "{o}"), out=".jsonl"),
    Command("migrate --dry-run", ("migrate", "--dry-run", "--no-children", "{f}")),
    Command("migrate", ("migrate", "--no-children", "{m}"), copy="m"),
    Command("show", ("show", "{f}")),
    Command("export md", ("export", "{f}", "--format", "md", "-o", "{o}"), out=".md"),
    Command("export html", ("export", "{f}", "--format", "html", "-o", "{o}"), out=".html"),
    Command("export json", ("export", "{f}", "--format", "json", "-o", "{o}"), out=".json"),
    Command("export md --redact", ("export", "{f}", "--format", "md", "--redact", "-o", "{o}"), out=".md"),
    Command("stats", ("stats", "{f}")),
    Command("tail -n 5", ("tail", "-n", "5", "{f}")),
    Command("diff", ("diff", "{f}", "-r", "1", "-r", "{last}")),
    Command("ls", ("ls", "{root}")),
    Command("rescue", ("rescue", "{f}")),
    Command("rescue --all -o", ("rescue", "{f}", "--all", "-o", "{o}"), out=".jsonl"),
    # the human renderers as on a terminal (Rich tables, the styled transcript)
    Command("tty info", ("info", "{f}"), tty=True),
    Command("tty surface", ("surface", "{f}"), tty=True),
    Command("tty requests", ("requests", "{f}"), tty=True),
    Command("tty stats", ("stats", "{f}"), tty=True),
    Command("tty show", ("show", "{f}"), tty=True),
    Command("tty ls", ("ls", "{root}"), tty=True),
]

# The reading commands run again in the other mode of the fast paths: between them every fast body is
# taken (the C scan and the fused reader by all; the lazy gate by events --json, info, stats and tail; the
# typed shapes by validate; the lean fold by validate, surface, requests and rebuild; whole packed runs by
# info, stats and migrate --dry-run of an old log) and must give the exact body's bytes.
PATHS_COMPARED = ("events --json", "info", "stats", "tail -n 5", "validate", "surface", "requests", "rebuild -r last",
                  "migrate --dry-run")

# Strict commands that stop reading once they have what they need.
STOPS_EARLY = ("rebuild -r 1", "rebuild -r last", "diff")

_STAGED = re.compile(r"^\..+\.dshlog-[0-9a-f]{16}\.tmp$|^session\.migration\.[0-9a-f]{16}\.jsonl(\.zstd)?\.tmp$")
_HEADER_LINE = re.compile(rb'^(?:\xef\xbb\xbf)?\{"type"\s*:\s*"session"')
_SETTLED = re.compile(rb'"type"\s*:\s*"assistant/(?:message|attempt)"')
_SEQ = re.compile(rb'"seq"\s*:')
_VERSION = re.compile(rb'"version"\s*:\s*([0-9])')


def _plaintext_head(data: bytes, limit: int = 64 * MB) -> bytes:
    """The plaintext of an input as far as it decodes (bounded: the input may be a bomb)."""
    if not data.startswith(ZSTD_MAGIC):
        return data[:limit]
    import zstandard

    out = []
    got = 0
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as rd:
            while got < limit:
                b = rd.read(min(4 * MB, limit - got))
                if not b:
                    break
                out.append(b)
                got += len(b)
    except zstandard.ZstdError:
        pass
    return b"".join(out)


def _generation_name(name: str, data: bytes, plain: bytes) -> str:
    """A canonical generation file name for a copy of the input (ls and migrate look for those)."""
    from dshlog.protocol.layout import generation_name, parse_generation

    if parse_generation(name) is not None:
        return name
    m = _VERSION.search(plain[:4096].split(b"\n", 1)[0])
    return generation_name(int(m.group(1)) if m else 0, data.startswith(ZSTD_MAGIC))


def _listing(d: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for p in d.iterdir():
        with contextlib.suppress(OSError):
            st = p.stat()
            out[p.name] = (st.st_size, st.st_mtime_ns)
    return out


def _shown_refused(run: Run, cmd: Command, o: Path, left: list[str]) -> bool:
    """An export of a log dsh refuses: a reader for people writes it, opening with dsh's refusal, and exits
    with the refusal's code (4 or 3; README "Exit codes").  Anything else left after an error is a failure."""
    if not cmd.label.startswith("export") or run.code not in (3, 4) or left != [o.name]:
        return False
    if b"; to bring it back: dshlog rescue " not in run.err.read_bytes():
        return False
    head = o.read_bytes()[: 1 << 18]
    return b"dsh refuses to open this session" in head or head.startswith(b'{"shape":1,"refusal":')


def check_input(data: bytes, name: str, workdir: Path, stats: Stats | None = None, *, tty: bool | None = None,
                commands: list[Command] | None = None) -> list[Failure]:
    """Give ``data`` (stored as ``name``) to every command; return the failures (empty when all is well)."""
    tty = PARAMS.tty if tty is None else tty
    stats = stats if stats is not None else Stats()
    failures: list[Failure] = []
    d = Path(tempfile.mkdtemp(dir=workdir))
    try:
        _check_in(d, data, name, stats, failures, tty, commands or COMMANDS)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    stats.inputs += 1
    for f in failures:
        stats.outcomes[f.outcome] += 1
        stats.by_label[f"{f.outcome} / {f.label}"] += 1
    return failures


def _check_in(d: Path, data: bytes, name: str, stats: Stats, failures: list[Failure], tty: bool, commands: list[Command]) -> None:
    plain = _plaintext_head(data)
    settled = len(_SETTLED.findall(plain))
    events = max(0, len(_SEQ.findall(plain)))
    gen = _generation_name(name, data, plain)
    indir, outdir, work = d / "in", d / "out", d / "work"
    for p in (indir, outdir, work):
        p.mkdir()
    f = indir / name
    f.write_bytes(data)
    subs = {"{f}": str(f), "{last}": str(max(2, settled)), "{at}": str(max(0, events // 2))}
    in_listing = _listing(indir)
    markup = b"FUZZMARK" in plain or b"FUZZMARK" in data
    validate_code: int | None = None
    codes: dict[str, int | None] = {}
    errs: dict[str, bytes] = {}

    def add(outcome: str, label: str, detail: str, signature: str = "") -> None:
        failures.append(Failure(outcome, label, detail, signature or outcome))

    for n, cmd in enumerate(commands):
        o = outdir / f"o{n}{cmd.out or ''}"
        local = dict(subs)
        local["{o}"] = str(o)
        copy_dir: Path | None = None
        copy_file: Path | None = None
        if cmd.copy == "w":
            copy_dir = d / f"w{n}"
            copy_dir.mkdir()
            copy_file = copy_dir / name
            copy_file.write_bytes(data)
            local["{w}"] = str(copy_file)
        elif cmd.copy == "m":
            copy_dir = d / f"m{n}" / "sess"
            copy_dir.mkdir(parents=True)
            copy_file = copy_dir / gen
            copy_file.write_bytes(data)
            local["{m}"] = str(copy_dir)
        if "{root}" in cmd.argv:
            root = d / "root"
            if not root.exists():
                sdir = root / "--p--" / "sess"
                sdir.mkdir(parents=True)
                (sdir / gen).write_bytes(data)
            local["{root}"] = str(root)
        argv = [local.get(a, a) for a in cmd.argv]
        copy_before = _listing(copy_dir) if copy_dir is not None else None
        pending_debug: Failure | None = None
        run = run_isolated(argv, work=work, cwd=d, tty=cmd.tty)
        stats.runs += 1
        stats.peak_rss[cmd.label] = max(stats.peak_rss.get(cmd.label, 0), run.maxrss)
        stats.slowest[cmd.label] = max(stats.slowest.get(cmd.label, 0.0), run.seconds)
        stats.slowest_cpu[cmd.label] = max(stats.slowest_cpu.get(cmd.label, 0.0), run.cpu)
        stats.cpu += run.cpu
        stats.exit_codes["hang" if run.hung else f"signal {run.signal}" if run.signal is not None else str(run.code)] += 1
        err = _tail(run.err)
        codes[cmd.label] = run.code
        errs[cmd.label] = err
        if cmd.label == "validate":
            validate_code = run.code
        if run.hung:
            add("hang", cmd.label, f"no answer within {PARAMS.timeout_s:.0f}s of CPU time or {wall_backstop(PARAMS.timeout_s):.0f}s "
                f"of wall time ({run.cpu:.1f}s CPU, {run.seconds:.1f}s wall); stderr: {err[-300:]!r}")
        elif run.signal is not None:
            add("signal", cmd.label, f"killed by {signal.Signals(run.signal).name} after {run.seconds:.1f}s, "
                f"peak RSS {run.maxrss // MB} MiB; stderr: {err[-300:]!r}", f"{signal.Signals(run.signal).name}")
        elif run.code == 1:
            if b"Traceback" in err:
                sig = traceback_signature(err)
            else:
                sig = f"{_internal_line(err) or '?'} (no --debug re-run)"
            add("exit-1", cmd.label, f"{err.decode('utf-8', 'replace').strip()[-400:]}", sig)
            if PARAMS.debug_reruns and b"Traceback" not in err:
                pending_debug = failures[-1]
        elif run.code not in ALLOWED:
            add("bad-exit", cmd.label, f"exit {run.code}: {err.decode('utf-8', 'replace').strip()[-400:]}",
                f"exit {run.code}: {traceback_signature(err) if b'Traceback' in err else ''}")
        if b"Traceback (most recent call last)" in err:
            add("traceback", cmd.label, err.decode("utf-8", "replace").strip().splitlines()[-1][:300], traceback_signature(err))
        # what reached a person
        seen = [("stderr", scan_output(run.err, tty=False, markup=False))]
        if cmd.human:
            seen.append(("stdout", scan_output(run.out, tty=cmd.tty, markup=markup)))
        if run.code == 0 and cmd.out == ".md" and o.exists():  # a Markdown file is read in a terminal too
            seen.append(("md file", {f"{k}-in-export": v for k, v in scan_output(o, tty=False, markup=False).items()}))
        for stream, found in seen:
            for k, v in found.items():
                if k in NOTES:
                    stats.notes[f"{k} / {cmd.label}"] += 1
                else:
                    add(k, cmd.label, f"{stream}: {v}", f"{k}: {stream}: {v.split(' in ')[0]}")
        # the input, and what appeared beside it
        now = _listing(indir)
        if now.get(name) != in_listing.get(name) or (now.get(name) and f.read_bytes() != data):
            add("input-modified", cmd.label, "the input file changed")
            f.write_bytes(data)
            now = in_listing = _listing(indir)
        if set(now) != set(in_listing):
            add("files-beside-input", cmd.label, f"{sorted(set(now) ^ set(in_listing))}")
            for extra in set(now) - set(in_listing):
                with contextlib.suppress(OSError):
                    os.unlink(indir / extra)
        produced = sorted(os.listdir(outdir))
        ok = run.code == 0
        # a command that was killed (our timeout, or the signal counted above) may leave its staging file, as any
        # kill -9 may; a later run cleans it up
        killed = run.hung or run.signal is not None
        left = [p for p in produced if not (killed and _STAGED.match(p))]
        if not ok and left and not _shown_refused(run, cmd, o, left):
            add("output-despite-error", cmd.label, f"exit {run.code} but left {left}")
        written: list[Path] = []
        if ok and cmd.out and o.exists() and cmd.label in ("fork --at", "repair -o", "rescue --all -o"):
            written.append(o)
        if copy_dir is not None and copy_before is not None:
            after = _listing(copy_dir)
            new = sorted(set(after) - set(copy_before) - {"session.lock"})
            changed = after.get(copy_file.name) != copy_before.get(copy_file.name)
            if cmd.copy == "m" and (changed or copy_file.read_bytes() != data):
                add("input-modified", cmd.label, "migrate changed the old generation")
            if not ok and (new or changed):
                add("output-despite-error", cmd.label, f"exit {run.code} but the session directory now has {new}"
                    + (" and a changed log" if changed else ""))
            if ok and cmd.copy == "w" and changed:
                written.append(copy_file)
            if ok and cmd.copy == "m":
                written += [copy_dir / x for x in new if x.startswith("session.") and not x.endswith((".tmp", ".lock"))]
        for w in written:  # a written log must read back (and validate when its source did)
            rb = run_isolated(["validate", str(w)], work=work, cwd=d)
            stats.extra_runs += 1
            rerr = _tail(rb.err)
            if rb.hung or rb.signal is not None or rb.code == 1 or b"Traceback" in rerr:
                add("unreadable-output", cmd.label, f"validate of {w.name}: exit {rb.code} signal {rb.signal} hung {rb.hung}: "
                    f"{rerr.decode('utf-8', 'replace').strip()[-300:]}")
            elif rb.code != 0 and validate_code == 0:
                add("invalid-output", cmd.label, f"the input validates but {w.name} does not (exit {rb.code}): "
                    f"{rerr.decode('utf-8', 'replace').strip()[-300:]}")
        for p in produced:
            with contextlib.suppress(OSError):
                if (outdir / p).is_dir():
                    shutil.rmtree(outdir / p)
                else:
                    os.unlink(outdir / p)
        if PARAMS.compare_paths and cmd.label in PATHS_COMPARED and not run.hung and run.signal is None:
            _compare_paths(argv, run, cmd, work, d, stats, add)
        if pending_debug is not None:  # the same command again, from the same state, with --debug
            if copy_dir is not None and copy_file is not None:
                for x in os.listdir(copy_dir):
                    with contextlib.suppress(OSError):
                        os.unlink(copy_dir / x)
                copy_file.write_bytes(data)
            pending_debug.signature = _debug_signature(argv, work, d, cmd.tty, stats)
            for x in os.listdir(outdir):
                with contextlib.suppress(OSError):
                    os.unlink(outdir / x)
        if copy_dir is not None:
            shutil.rmtree(copy_dir.parent if cmd.copy == "m" else copy_dir, ignore_errors=True)
    if f.read_bytes() != data:
        add("input-modified", "(end)", "the input file changed")
    # A strict command that stops reading early must not accept a log the full strict read refuses.
    if codes.get("surface") == 4:
        for label in STOPS_EARLY:
            if codes.get(label) == 0:
                why = _error_kind(errs.get("surface", b""))
                add("accepted-corrupt", label, f"exit 0 although surface (the same strict reader, to the end) exits 4: {why}",
                    f"surface says: {why}")
    # The same plaintext must get the same verdict in either container.
    if not data.startswith(ZSTD_MAGIC) and data.endswith(b"\n") and _HEADER_LINE.search(data[:65536].split(b"\n", 1)[0]) \
            and validate_code is not None and "validate" in codes:
        zdir = d / "z"
        zdir.mkdir()
        z = zdir / (name + ".zstd")
        z.write_bytes(b"".join(frames_of(data, random.Random(0))))
        run = run_isolated(["validate", str(z)], work=work, cwd=d)
        stats.extra_runs += 1
        if run.code != validate_code:
            add("container-disagreement", "validate", f"plain file: exit {validate_code}, the same lines as zstd frames: exit "
                f"{run.code}: {_tail(run.err).decode('utf-8', 'replace').strip()[-300:]}", f"plain {validate_code} / zstd {run.code}")


def _file_digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with contextlib.suppress(OSError), open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _compare_paths(argv: list[str], run: Run, cmd: Command, work: Path, cwd: Path, stats: Stats,
                   add: Callable[[str, str, str, str], None]) -> None:
    """``argv`` again in the other mode of the fast paths: the same exit code, stdout and stderr, or a failure."""
    mine = os.environ.get("DSHLOG_PATHS") or "fast"  # what the command server's children inherit
    other = "fast" if mine == "exact" else "exact"
    first = (run.code, _file_digest(run.out), _file_digest(run.err))
    err = _tail(run.err)
    # computed again, not read from the cache the first run may have filled (its answers are the fast bodies')
    twin = run_isolated(argv, work=work, cwd=cwd, tty=cmd.tty, env={"DSHLOG_PATHS": other, "DSHLOG_NO_CACHE": "1"})
    stats.extra_runs += 1
    second = (twin.code, _file_digest(twin.out), _file_digest(twin.err))
    if twin.hung or twin.signal is not None or second != first:
        differs = ", ".join(what for what, a, b in zip(("exit code", "stdout", "stderr"), first, second) if a != b)
        add("paths-disagreement", cmd.label,
            f"{differs or 'the run'} differ: {mine} exit {run.code} {err[-200:]!r} / {other} exit {twin.code}"
            f"{' (hung)' if twin.hung else ''} {_tail(twin.err)[-200:]!r}", f"{mine} / {other}: {differs}")


def _debug_signature(argv: list[str], work: Path, cwd: Path, tty: bool, stats: Stats) -> str:
    """Re-run with --debug (which re-raises) to learn where an internal error came from."""
    run = run_isolated(["--debug", *argv], work=work, cwd=cwd, tty=tty)
    stats.extra_runs += 1
    with open(run.err, "rb") as fh:
        head = fh.read(4096)
    err = _tail(run.err, 20000)
    if b"Traceback" in head or b"Traceback" in err:
        return traceback_signature(err)
    return "? (--debug printed no traceback)"


# ----------------------------------------------------------------------------- cache mode

# The reading commands the cache answers (info, stats, validate, surface) or whose old log's v4 successor it
# proves (surface --json --messages, requests, rebuild): with a damaged cache each must answer exactly as
# with --no-cache.
CACHED: list[Command] = [
    Command("info --json", ("info", "--json", "{f}"), human=False),
    Command("stats", ("stats", "{f}")),
    Command("validate", ("validate", "{f}")),
    Command("surface", ("surface", "{f}")),
    Command("surface --at", ("surface", "--at", "{at}", "{f}")),
    Command("surface --json --messages", ("surface", "--json", "--messages", "{f}"), human=False),
    Command("requests", ("requests", "{f}")),
    Command("rebuild -r last", ("rebuild", "--request", "{last}", "{f}"), human=False),
    Command("show", ("show", "{f}")),
    Command("export --format json", ("export", "--format", "json", "{f}"), human=False),
    # a copy elsewhere: entries of another key, so that rows swapped between keys can show a wrong answer
    Command("info --json of a copy", ("info", "--json", "{g}"), human=False),
    Command("validate of a copy", ("validate", "{g}")),
]
#: What the cache mode does to a warm cache: a damage of its database (``bench/cache_damage.py``), or a change
#: of a file after its entries were made (the log; an old log's successor after it was proven).
CACHE_DAMAGES = (*cache_damage.RANDOM, "stale-log", "stale-successor")


def _stale(path: Path, rng: random.Random) -> None:
    """``path`` changed after the cache was filled: a byte in place (size and mtime kept), or a row appended."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    if data and rng.random() < 0.5:
        i = rng.randrange(len(data))
        data[i] = (data[i] + 1 + rng.randrange(255)) % 256
        path.write_bytes(bytes(data))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    else:
        path.write_bytes(bytes(data) + b'{"type":"turn/start","seq":999999,"time":0,"data":{"turn":99}}\n')


def check_cache_input(data: bytes, name: str, workdir: Path, stats: Stats | None = None, *, seed: int = 0,
                      damages: list[str] | None = None) -> list[Failure]:
    """Give ``data`` to the reading commands with a cache, cold and then damaged (``damages``, or one or two drawn
    with ``seed``), and return every answer that is not exactly the ``--no-cache`` one."""
    stats = stats if stats is not None else Stats()
    failures: list[Failure] = []
    d = Path(tempfile.mkdtemp(dir=workdir))
    rng = random.Random(seed)
    try:
        _check_cache_in(d, data, name, stats, failures, damages or rng.sample(CACHE_DAMAGES, rng.randint(1, 2)), rng)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    stats.inputs += 1
    for f in failures:
        stats.outcomes[f.outcome] += 1
        stats.by_label[f"{f.outcome} / {f.label}"] += 1
    return failures


Answer = tuple[int | None, bytes, bytes]


def _check_cache_in(d: Path, data: bytes, name: str, stats: Stats, failures: list[Failure], damages: list[str],
                    rng: random.Random) -> None:
    from dshlog.protocol.layout import parse_generation, successor_name
    from dshlog.protocol.vocabulary import CURRENT_VERSION
    from dshlog.read.cache import CACHE_FILE

    plain = _plaintext_head(data)
    gen = _generation_name(name, data, plain)
    sess, work = d / "sess", d / "work"
    sess.mkdir()
    work.mkdir()
    f = sess / gen
    f.write_bytes(data)
    (d / "copy").mkdir()
    (d / "copy" / gen).write_bytes(data)
    subs = {"{f}": str(f), "{g}": str(d / "copy" / gen), "{last}": str(max(2, len(_SETTLED.findall(plain)))),
            "{at}": str(max(0, len(_SEQ.findall(plain)) // 2))}
    g = parse_generation(gen)
    successor = sess / successor_name(gen)
    if g is not None and g.version < CURRENT_VERSION and not g.compressed:
        # an old log with its migration published beside it: the views prove it, then read it
        run_isolated(["--no-cache", "migrate", "--no-children", str(f)], work=work, cwd=d)
        stats.extra_runs += 1
    db = d / "xdg" / "dshlog" / CACHE_FILE

    def answers(cache: bool) -> dict[str, Answer]:
        env = {"XDG_CACHE_HOME": str(d / "xdg"), "DSHLOG_NO_CACHE": "0" if cache else "1"}
        got: dict[str, Answer] = {}
        for cmd in CACHED:
            run = run_isolated([subs.get(a, a) for a in cmd.argv], work=work, cwd=d, env=env)
            stats.runs += 1
            stats.cpu += run.cpu
            got[cmd.label] = (None if run.hung or run.signal is not None else run.code, run.out.read_bytes(),
                              run.err.read_bytes())
        return got

    def compare(stage: str, off: dict[str, Answer]) -> None:
        for label, (code, out, err) in answers(True).items():
            want = off[label]
            if (code, out, err) != want:
                what = [w for w, a, b in (("exit", code, want[0]), ("stdout", out, want[1]), ("stderr", err, want[2]))
                        if a != b]
                failures.append(Failure("cache-disagreement", label,
                                        f"after {stage}: {' and '.join(what)} differ from --no-cache (exit {code} vs "
                                        f"{want[0]}); stderr {err[-300:]!r} vs {want[2][-300:]!r}",
                                        f"{stage}: {', '.join(what)}"))

    off = answers(False)
    compare("a cold cache", off)
    for kind in damages:
        if kind == "stale-log":
            _stale(f, rng)
            off = answers(False)
        elif kind == "stale-successor":
            if not successor.is_file():
                continue
            _stale(successor, rng)
        else:
            cache_damage.damage(kind, db, rng)
        compare(f"damage {kind}", off)


# ----------------------------------------------------------------------------- the run


def _apply_sizes(a: argparse.Namespace) -> None:
    PARAMS.huge_line_bytes = int(a.huge_line_mb * MB)
    PARAMS.bomb_bytes = int(a.bomb_mb * MB)
    PARAMS.timeout_s = a.timeout
    PARAMS.wall_s = a.wall_timeout
    PARAMS.max_line_mib = a.max_line_mib
    PARAMS.mem_bytes = int(a.mem_gb * (1 << 30))
    PARAMS.tty = not a.no_tty
    PARAMS.compare_paths = not a.no_compare_paths
    PARAMS.stdio_errors = a.stdio_errors


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=None, help="stop after this long (default: 300, or no limit with --inputs)")
    ap.add_argument("--inputs", type=int, default=None, help="stop after exactly this many inputs")
    ap.add_argument("--shard", default="0/1", help="K/N: of the seed's inputs, check those whose index is K modulo N "
                    "(N processes with the same seed and --inputs check exactly the inputs of one run)")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--report", type=Path, default=None, help="append a JSON line of counts to this file")
    ap.add_argument("--huge-line-mb", type=float, default=float(os.environ.get("FUZZ_HUGE_MB", 8)))
    ap.add_argument("--bomb-mb", type=float, default=float(os.environ.get("FUZZ_BOMB_MB", 256)))
    ap.add_argument("--timeout", type=float, default=60.0, help="CPU seconds per command (a hang)")
    ap.add_argument("--wall-timeout", type=float, default=None, help="wall seconds per command (default: max(120, 4 x --timeout))")
    ap.add_argument("--max-line-mib", type=int, default=None,
                    help="run every command with this global --max-line-size (default: dshlog's own, 256)")
    ap.add_argument("--mem-gb", type=float, default=3.0, help="RLIMIT_AS of every command")
    ap.add_argument("--no-tty", action="store_true", help="skip the pseudo-terminal runs")
    ap.add_argument("--no-compare-paths", action="store_true", help="skip the reading commands' second run in the other "
                    "mode of the fast paths (DSHLOG_PATHS)")
    ap.add_argument("--stdio-errors", default="strict", help="stdout error handler of the commands (strict: a UTF-8 desktop locale)")
    ap.add_argument("--classes", default="", help="comma-separated mutators to draw from (default: all)")
    ap.add_argument("--progress", type=int, default=0, help="a progress line on stderr every N inputs")
    ap.add_argument("--merge", type=Path, nargs="+", default=None, help="print the counts of one run from its shards' JSON")
    ap.add_argument("--replay", type=Path, default=None, help="check one stored input and print its failures")
    ap.add_argument("--name", default=None, help="with --replay: the file name to store it under")
    ap.add_argument("--cache-mode", action="store_true",
                    help="instead of every command, run the reading commands with a cache damaged in one or two "
                    f"ways ({', '.join(CACHE_DAMAGES)}) and compare each answer with --no-cache's")
    a = ap.parse_args(argv)
    if a.merge:
        print(json.dumps(merge_reports([json.loads(x.read_text()) for x in a.merge]), indent=2))
        return 0
    _apply_sizes(a)

    work = Path(tempfile.mkdtemp(prefix="dshlog-fuzz-"))
    if a.replay is not None:
        stats = Stats()
        replayed, replay_name = a.replay.read_bytes(), a.name or _replay_name(a.replay)
        found = (check_cache_input(replayed, replay_name, work, stats, seed=_replay_seed(a.replay, a.seed)) if a.cache_mode
                 else check_input(replayed, replay_name, work, stats))
        for x in found:
            print(f"{x}\n    signature: {x.signature}")
        print(json.dumps(stats.as_dict(), indent=2))
        shutil.rmtree(work, ignore_errors=True)
        return 1 if found else 0
    rng = random.Random(a.seed)
    seeds = seed_files()
    plain = [decoded(p) for p in seeds]
    others = [p for p, _ in plain]
    names = [c for c in a.classes.split(",") if c] or list(MUTATORS)
    fail_dir = ROOT / "bench" / "out" / "fuzz"
    stats = Stats()
    failing = mutator_errors = 0
    by_mut: Counter = Counter()
    fail_by_mut: Counter = Counter()
    started = time.monotonic()
    cpu0 = os.times()
    seconds = a.seconds if a.seconds is not None else (None if a.inputs is not None else 300.0)
    end = started + seconds if seconds is not None else float("inf")
    shard, shards = (int(x) for x in a.shard.split("/"))
    drawn = 0  # inputs drawn from the seed, every shard's included
    while time.monotonic() < end and (a.inputs is None or drawn < a.inputs):
        i = rng.randrange(len(seeds))
        ops = [(rng.choice(names), rng.randrange(2**32)) for _ in range(rng.randint(1, 3))]
        index = drawn
        drawn += 1
        if index % shards != shard:
            continue
        for op, _ in ops:
            by_mut[op] += 1
        try:
            data = mutate(plain[i][0], plain[i][1], ops, others)
        except Exception as exc:  # noqa: BLE001 - a bug of the fuzzer itself: say so, and go on with the run
            mutator_errors += 1
            print(f"MUTATOR ERROR {seeds[i].name} {ops}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        name = input_name(seeds[i].name, ops)
        if a.cache_mode:  # the damage drawn from the input's index: the inputs are those of a run without it
            found = check_cache_input(data, name, work, stats, seed=damage_seed(a.seed, index))
        else:
            found = check_input(data, name, work, stats)
        if a.progress and stats.inputs % a.progress == 0:
            print(f"progress: {stats.inputs} inputs ({drawn} drawn), {stats.runs} command runs, {failing + bool(found)} failing, "
                  f"{time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
        if found:
            failing += 1
            for op in {op for op, _ in ops}:
                fail_by_mut[op] += 1
            fail_dir.mkdir(parents=True, exist_ok=True)
            stored = fail_dir / f"fail-{a.seed}-{index}-{name}"
            stored.write_bytes(data)
            with open(fail_dir / "failures.jsonl", "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"file": stored.name, "name": name, "seed": seeds[i].name, "ops": ops, "bytes": len(data),
                                     "failures": [{"outcome": x.outcome, "label": x.label, "signature": x.signature,
                                                   "detail": x.detail[:600]} for x in found]}) + "\n")
            for x in found:
                key = f"{x.outcome} | {x.signature}"
                s = stats.signatures.setdefault(key, {"count": 0, "commands": set(), "classes": Counter(), "example": stored.name})
                s["count"] += 1
                s["commands"].add(x.label)
                s["classes"].update({op for op, _ in ops})
            print(f"FAIL {name} {ops}: {len(found)} checks, first: {str(found[0])[:600]}", file=sys.stderr)
    cpu1 = os.times()
    counts = {"test": "fuzz (bench/fuzz.py" + (" --cache-mode)" if a.cache_mode else ")"), "seed": a.seed, "seconds": round(time.monotonic() - started), "seeds": len(seeds),
              "cpuSeconds": {"fuzzer": round(cpu1.user + cpu1.system - cpu0.user - cpu0.system, 1),
                             "commands": round(stats.cpu, 1)},
              "requestedInputs": a.inputs, "shard": a.shard, "drawn": drawn, "maxLineMiB": a.max_line_mib, "cpuTimeoutS": a.timeout,
              "wallBackstopS": wall_backstop(a.timeout),
              "hugeLineMiB": a.huge_line_mb, "bombMiB": a.bomb_mb, "memLimitGiB": a.mem_gb, "failingInputs": failing,
              "mutatorErrors": mutator_errors,
              **stats.as_dict(), "mutations": dict(by_mut), "failingInputsByMutator": dict(fail_by_mut),
              "signatures": {k: {**v, "commands": sorted(v["commands"]), "classes": dict(v["classes"])}
                             for k, v in sorted(stats.signatures.items(), key=lambda kv: -kv[1]["count"])}}
    print(json.dumps(counts, indent=2))
    if a.report:
        a.report.parent.mkdir(parents=True, exist_ok=True)
        with open(a.report, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(counts) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failing else 0


def merge_reports(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts of one run from those of its shards (``--shard K/N``, same seed and ``--inputs``): sums, and the
    worst of the per-command peaks."""
    out: dict[str, Any] = {"test": "fuzz (bench/fuzz.py), merged shards", "shards": sorted(d.get("shard", "0/1") for d in docs)}
    for key in ("seed", "requestedInputs", "maxLineMiB", "cpuTimeoutS", "wallBackstopS", "hugeLineMiB", "bombMiB", "memLimitGiB",
                "seeds"):
        out[key] = docs[0].get(key)
    out["seconds"] = max(d["seconds"] for d in docs)
    out["drawn"] = max(d.get("drawn", 0) for d in docs)
    for key in ("inputs", "commandRuns", "extraRuns", "failingInputs", "mutatorErrors"):
        out[key] = sum(d.get(key, 0) for d in docs)
    out["cpuSeconds"] = {k: round(sum(d["cpuSeconds"][k] for d in docs), 1) for k in docs[0]["cpuSeconds"]}
    for key in ("exitCodes", "outcomes", "notes", "failuresByCommand", "mutations", "failingInputsByMutator"):
        total: Counter = Counter()
        for d in docs:
            total.update(d.get(key, {}))
        out[key] = dict(sorted(total.items())) if key != "outcomes" else {k: total.get(k, 0) for k in OUTCOMES}
    for key in ("peakRssMiB", "slowestSeconds", "slowestCpuSeconds"):
        worst: dict[str, float] = {}
        for d in docs:
            for k, v in d.get(key, {}).items():
                worst[k] = max(worst.get(k, v), v)
        out[key] = dict(sorted(worst.items()))
    out["signatures"] = {k: v for d in docs for k, v in d.get("signatures", {}).items()}
    return out


def damage_seed(seed: int, index: int) -> int:
    """The seed of the cache mode's damage to input ``index`` of a run with ``seed`` (a replay draws it again)."""
    return seed * 1_000_003 + index


def _replay_seed(path: Path, default: int) -> int:
    """The damage seed of a stored failing input (``fail-SEED-N-NAME``), else ``default``."""
    m = re.match(r"fail-(\d+)-(\d+)-", path.name)
    return damage_seed(int(m.group(1)), int(m.group(2))) if m else default


def _replay_name(path: Path) -> str:
    """The name a stored failing input had (``fail-SEED-N-NAME``)."""
    m = re.match(r"fail-\d+-\d+-(.+)$", path.name)
    return m.group(1) if m else path.name


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
        sys.exit(0)
    sys.exit(main())
