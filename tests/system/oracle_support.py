"""Differential testing of dshlog against dsh's own code (the shared oracle).

One place for everything the oracle tests and the agreement report share:

* :class:`Oracle` talks to ``oracle_driver.mjs``, which serves many requests from one
  Node process (the oracle itself is loaded from the shared directory at run time);
* :func:`corpus_inputs`, :func:`fixture_inputs`, :func:`generated_inputs` list what is
  compared: every corpus file, the project's fixtures, and damaged variants of a few
  good logs.  A container the oracle does not read (zstd, JSON arrays, wrapped
  streams, ``result.json``, ``behavior.json``) is decoded here, independently of
  dshlog, into one plain JSONL generation;
* :func:`run_dshlog` runs the dshlog CLI in process;
* one ``compare_<command>`` per oracle command returns a :class:`Verdict`: whether
  dshlog's answer is exactly dsh's, and both answers verbatim when it is not.

How answers are matched (the same rules for every input):

* a dsh refusal must be a dshlog failure whose one-line error carries dsh's message
  as its whole message (``dshlog: KIND: [PATH: ][LOCATION: ]MESSAGE``; a message
  wrapped in further text does not match), with the exit code of its class:
  3 (unsupported) for ``SessionFormatUnsupportedMigrationError`` and header status
  ``unsupported``, 4 (corrupt) for every other format error;
* the oracle's ``fork`` boundary refusal is the oracle's own wording (dsh has no CLI
  for it): dshlog must refuse the same boundary with a usage error (exit 2), text aside;
* rows dshlog writes (``migrate``, ``fork``) and rows it prints (``events --json``) are
  compared as exact text; JSON documents it prints (``surface --json``, ``repair --json``)
  are compared as JSON values with their key order;
* a test-snapshot projection (rows without ``seq``/``time``) comes back from the
  oracle with restored ``seq`` and ``time`` 0; dshlog writes a projection's successor
  and fork child in projection form, so those rows are compared after dropping the
  restored envelope again (the oracle README's rule);
* the oracle's ``header`` answer still holds its stand-in for a ``"cwd":"{{...}}"``
  placeholder (its other commands swap it back); it is swapped back here.
"""

from __future__ import annotations

import io
import json
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Iterator

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
if str(TESTS) not in sys.path:  # the report script imports this module outside pytest
    sys.path.insert(0, str(TESTS))

from conftest import CORPUS, FIXTURES, SHARED, corpus_files, run_env  # noqa: E402

ORACLE = SHARED / "oracle" / "oracle.mjs"
DRIVER = HERE / "oracle_driver.mjs"
NODE = shutil.which("node")

COMMANDS = ("migrate", "read", "header", "surface", "messages", "closers", "fork")

#: v4 logs forked at every cut point (plus the seeded child of a fork, and a log whose
#: rows put the envelope after ``data``); fixtures by path, corpus by their id.
CUT_LOGS = (
    "fixtures/v4/crash/session.v4.jsonl",
    "fixtures/v4/loop/session.v4.jsonl",
    "corpus/v4/ryanzhou416/snapshots__sdk__revision-in-place__session.v4.jsonl",
    "corpus/v4/zq0929/apps__cli__tests__profiles__headless__tests__expected__semantic-checkpoint__session.expected.jsonl",
    "corpus/v4/zq0929/snapshots__acp__cancel-tool-calls__session.v4.jsonl",
    "corpus/v4/zq0929/snapshots__session__compaction-recovery__session.v4.jsonl",
    "corpus/v4/zq0929/snapshots__sdk__subagent-fork-in-process__session.1.v4.jsonl",
    "corpus/v4/wangnaiyu/packages__experimental__webworker-runtime__tests__fixtures__vfs-example__home__sessions"
    "__--dsh-workspace--__preview-follow-up-builder__session.v4.jsonl",
)

#: Stored version of header-less event streams, by where they come from (the corpus
#: era says it; the golden fixtures are v4 in-memory events, fixtures/golden/EXPECTED.md).
HEADERLESS_VERSION = {"v0-wrapped": 0, "v4-wrapped": 4, "fixtures": 4}

#: Fixture files that are not session logs.
NOT_A_LOG = {"fixtures/golden/crash-closers.json": "the four closers alone (seq 10..13), not a log"}


def unavailable() -> str | None:
    """Why the oracle cannot run here, or None."""
    if NODE is None:
        return "node is not installed: the dsh oracle runs under Node.js"
    if not ORACLE.is_file():
        return f"dsh oracle not found at {ORACLE} (set DSHLOG_SHARED)"
    return None


# ----------------------------------------------------------------------------- the oracle


class OracleError(RuntimeError):
    """The driver or the oracle failed (a harness problem, never a verdict on dshlog)."""


class Oracle:
    """Requests to one ``oracle_driver.mjs`` process, answered in order.

    ``submit`` queues a request and returns at once (a thread feeds the driver), so a
    caller can queue everything it will ask and let Node work on the second CPU while
    Python runs dshlog; ``response``/``answer`` wait for one result.  Identical
    requests are asked once.
    """

    def __init__(self, oracle: Path = ORACLE) -> None:
        if NODE is None:
            raise OracleError("node is not installed")
        self._proc = subprocess.Popen(
            [NODE, str(DRIVER), str(oracle)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert self._proc.stdout is not None and self._proc.stdin is not None
        ready = self._proc.stdout.readline()
        try:
            hello = json.loads(ready)
        except ValueError:
            err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
            raise OracleError(f"oracle driver did not start: {ready[:200]!r} {err[-2000:]}") from None
        self.path: str = hello["oracle"]
        self.sha256: str = hello["sha256"]
        self._tickets: dict[tuple[str, ...], int] = {}
        self._results: dict[int, dict] = {}
        self._done = threading.Condition()
        self._failed: str | None = None
        self._outbox: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._write, daemon=True).start()
        threading.Thread(target=self._read, daemon=True).start()

    def _write(self) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        while (line := self._outbox.get()) is not None:
            try:
                stdin.write(line)
                stdin.flush()
            except OSError:
                return
        stdin.close()

    def _read(self) -> None:
        stdout = self._proc.stdout
        assert stdout is not None
        for line in stdout:
            response = json.loads(line)
            with self._done:
                self._results[response["id"]] = response
                self._done.notify_all()
        with self._done:
            err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
            self._failed = f"oracle driver exited: {err[-2000:]}"
            self._done.notify_all()

    def submit(self, argv: list[str]) -> int:
        key = tuple(argv)
        ticket = self._tickets.get(key)
        if ticket is None:
            ticket = self._tickets[key] = len(self._tickets)
            self._outbox.put(json.dumps({"id": ticket, "argv": list(argv)}).encode() + b"\n")
        return ticket

    def response(self, argv: list[str]) -> dict:
        """The driver's response: what the oracle's ``main`` returned and wrote."""
        ticket = self.submit(argv)
        with self._done:
            while ticket not in self._results:
                if self._failed is not None:
                    raise OracleError(self._failed)
                self._done.wait()
            r = self._results[ticket]
        if "crash" in r:
            raise OracleError(f"oracle crashed on {argv}: {r['crash']}")
        return r

    def answer(self, argv: list[str]) -> dict:
        """The oracle's JSON answer to ``node oracle.mjs ARGV``."""
        r = self.response(argv)
        if r["exit"] != 0:
            raise OracleError(f"oracle exit {r['exit']} on {argv}: {r['stderr']}")
        return json.loads(r["stdout"])

    def close(self) -> None:
        """Stop the driver; requests nobody waited for are dropped."""
        self._outbox.put(None)
        with self._done:
            pending = len(self._results) < len(self._tickets)
        if pending:
            self._proc.terminate()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


def oracle_cli(argv: list[str]) -> tuple[int, str, str]:
    """``node oracle.mjs ARGV`` as a plain process: (exit code, stdout, stderr)."""
    assert NODE is not None
    p = subprocess.run([NODE, str(ORACLE), *argv], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


# ----------------------------------------------------------------------------- inputs


@dataclass
class Input:
    """One session log both tools read.

    ``path`` is a plain JSONL generation (the oracle's only input form): the stored
    file itself, or its decoded form written by :func:`materialize`.  ``original`` and
    ``select`` say how dshlog reads the stored file when its container differs.
    """

    id: str
    era: str
    original: Path | None
    decoded: bytes | None = None
    select: str | None = None
    path: Path | None = None

    @property
    def wrapped(self) -> bool:
        return self.original is not None and self.decoded is not None

    def header_version(self) -> Any:
        first = self.plain_bytes().split(b"\n", 1)[0]
        try:
            header = json.loads(first)
        except ValueError:
            return None
        return header.get("version") if isinstance(header, dict) else None

    def plain_bytes(self) -> bytes:
        if self.decoded is not None:
            return self.decoded
        assert self.original is not None
        return self.original.read_bytes()


def _jsonl(rows: list[Any]) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in rows)


def synthetic_header(version: int, session_id: Any) -> dict:
    """The smallest header a released writer puts before such events (a stream has none)."""
    h: dict[str, Any] = {"type": "session", "version": version, "id": str(session_id) if session_id is not None else "unknown", "createdAt": 0}
    if version >= 2:
        h["isSeeded"] = False
    h["delegationDepth"] = 0
    return h


def _first_stream(pairs: list[tuple[Any, Any]]) -> tuple[Any, list[Any]]:
    """The first session of a wrapped stream: its id and events.

    Wrapped streams may interleave sessions, even under one id (an in-process child
    restarts at seq 0): an event continues the stream whose next seq it is, a seq 0
    starts a new stream.
    """
    first_sid = pairs[0][0] if pairs else None
    nexts: list[int] = []
    events: list[Any] = []
    for sid, ev in pairs:
        if sid != first_sid:
            continue
        seq = ev.get("seq") if isinstance(ev, dict) else None
        if type(seq) is int:
            if seq in nexts:
                i = nexts.index(seq)
            elif not nexts or seq == 0:
                nexts.append(seq)
                i = len(nexts) - 1
            else:
                i = 0
            nexts[i] = seq + 1
            if i:
                continue
        events.append(ev)
    return first_sid, events


def decode(path: Path, era: str) -> list[tuple[str, str | None, bytes | None]]:
    """(id suffix, dshlog --select, plain generation or None when the file is one) per log in ``path``."""
    data = path.read_bytes()
    if path.name.endswith(".zstd"):
        import zstandard

        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as r:
            data = r.read()
        return [("", None, data)]
    text = data.decode("utf-8")
    doc: Any = None
    if text.lstrip()[:1] in ("[", "{") and "\n" in text.strip():
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None  # JSONL
    version = HEADERLESS_VERSION.get(era, 0)
    if isinstance(doc, list):
        return [("", None, _jsonl([synthetic_header(version, None), *doc]))]
    if isinstance(doc, dict) and isinstance(doc.get("events"), list):
        return [("", None, _jsonl([synthetic_header(version, doc.get("session_id")), *doc["events"]]))]
    if isinstance(doc, dict) and isinstance(doc.get("logs"), list):
        out = []
        for i, log in enumerate(doc["logs"]):
            lines = log.get("lines") or []
            if not (lines and isinstance(lines[0], dict) and lines[0].get("type") == "session"):
                lines = [synthetic_header(version, None), *lines]
            out.append((f"#{i}", str(i), _jsonl(lines)))
        return out
    first = json.loads(text.split("\n", 1)[0])
    if isinstance(first, dict) and first.get("type") == "session_event":
        pairs = [(o.get("sessionId"), o.get("event")) for o in map(json.loads, filter(None, text.split("\n")))
                 if isinstance(o, dict) and o.get("type") == "session_event"]
    elif isinstance(first, dict) and "method" in first:
        pairs = [((o.get("params") or {}).get("sessionId"), (o.get("params") or {}).get("event"))
                 for o in map(json.loads, filter(None, text.split("\n"))) if isinstance(o, dict) and o.get("method") == "session.event"]
    else:
        return [("", None, None)]  # a plain generation already
    sid, events = _first_stream(pairs)
    return [("", None, _jsonl([synthetic_header(version, sid), *events]))]


def corpus_inputs() -> list[Input]:
    """Every file of the shared corpus (one input per log a document holds)."""
    out = []
    for p in corpus_files():
        rel = p.relative_to(CORPUS)
        era = rel.parts[0]
        for suffix, select, plain in decode(p, era):
            out.append(Input(f"corpus/{rel}{suffix}", era, p, plain, select))
    return out


def fixture_inputs() -> list[Input]:
    """The project's own example logs (fixtures/), every container decoded."""
    out = []
    for p in sorted(FIXTURES.rglob("*")):
        rel = f"fixtures/{p.relative_to(FIXTURES)}"
        if not p.is_file() or not p.name.endswith((".jsonl", ".json", ".zstd")) or rel in NOT_A_LOG:
            continue
        for suffix, select, plain in decode(p, "fixtures"):
            out.append(Input(rel + suffix, "fixtures", p, plain, select))
    return out


# ----------------------------------------------------------------------------- generated damage

#: Logs the oracle reads cleanly, one per stored version, that the damage is done to.
GENERATED_BASES = {
    "v0": "corpus/v0-enveloped/knyazev741/examples__acp-agent__tests__snapshots__text-turn__session.jsonl",
    "v0-projection": "corpus/v0/upstream/examples__acp-agent__tests__snapshots__text-turn__session.jsonl",
    "v1": "corpus/v1/knyazev741/snapshots__session__text-turn__session.v1.jsonl",
    "v3": "fixtures/v3/text-turn/session.v3.jsonl",
    "v4": "fixtures/v4/loop/session.v4.jsonl",
    "v4-projection": "corpus/v4/zq0929/snapshots__acp__cancel-tool-calls__session.v4.jsonl",
}
#: Bases that also get every header damage (the others get the body damage only).
HEADER_DAMAGE_BASES = ("v0", "v3", "v4")


def _header_damage(header: dict) -> Iterator[tuple[str, dict]]:
    for key in [k for k in header if k != "type"] + ["type"]:
        yield f"header-without-{key}", {k: v for k, v in header.items() if k != key}
    for value, name in ((-1, "-1"), (1.5, "1.5"), (2**53, "2**53"), (2**53 - 1, "2**53-1"), ("0", "string"), (None, "null"), (5, "5")):
        yield f"version={name}", {**header, "version": value}
    yield "header-extra-key", {**header, "extra": True}
    yield "id-number", {**header, "id": 7}
    yield "createdAt=-1", {**header, "createdAt": -1}
    yield "delegationDepth=1.5", {**header, "delegationDepth": 1.5}
    if "cwd" in header:
        yield "cwd-relative", {**header, "cwd": "relative/dir"}
        # dsh's test snapshots write a placeholder inside a path (a documented deviation)
        yield "cwd-placeholder-path", {**header, "cwd": "{{cwd}}/workspace"}


def _next_seq(rows: list[dict]) -> int:
    """The seq after the last row (packed v0/v1 rows cover one seq per member)."""
    position = 0
    for row in rows:
        if "seq0" in row:
            data = row.get("data") or {}
            position = row["seq0"] + len(data.get("texts") or data.get("args") or [0])
        elif "seq" in row:
            position = row["seq"] + 1
        else:
            position += 1
    return position


def _body_damage(header: dict, rows: list[dict]) -> Iterator[tuple[str, list[dict]]]:
    n = len(rows)
    yield "body-without-first-row", rows[1:]
    yield "body-without-middle-row", rows[: n // 2] + rows[n // 2 + 1 :]
    yield "body-without-last-row", rows[:-1]
    yield "body-row-duplicated", rows[: n // 2 + 1] + rows[n // 2 :]
    projected = not any("seq" in r or "seq0" in r for r in rows)
    envelope = {} if projected else {"seq": _next_seq(rows), "time": max((r.get("time", 0) for r in rows if isinstance(r.get("time"), int)), default=0)}
    unknown = {"type": "x-oracle-test/unknown", **envelope, "data": {}}
    yield "unknown-type", rows + [unknown]
    yield "unknown-type-ignorable", rows + [{**unknown, "ignorable": True}]
    yield "body-row-not-an-object", rows[: n // 2] + [[]] + rows[n // 2 :]  # type: ignore[list-item]  # a row that is not an object is the point
    # damage after the last turn/end: a recovering reader may drop such a tail
    yield "tail-row-not-an-object", rows + [[]]  # type: ignore[list-item]  # a row that is not an object is the point
    if not projected:
        yield "tail-seq-gap", rows + [{**unknown, "type": "turn/start", "seq": envelope["seq"] + 1, "data": {"turn": 99}}]


def generated_inputs(known: dict[str, Input]) -> list[Input]:
    """Damaged variants of the bases: header keys removed or retyped, rows dropped, unknown types."""
    out = []
    for name, base_id in GENERATED_BASES.items():
        base = known.get(base_id)
        if base is None:
            continue
        lines = base.plain_bytes().decode("utf-8").split("\n")[:-1]
        header = json.loads(lines[0])
        rows = [json.loads(line) for line in lines[1:]]
        body = "".join(line + "\n" for line in lines[1:]).encode()
        if name in HEADER_DAMAGE_BASES:
            for variant, h in _header_damage(header):
                out.append(Input(f"generated/{name}/{variant}", "generated", None, _jsonl([h]) + body))
        for variant, damaged in _body_damage(header, rows):
            out.append(Input(f"generated/{name}/{variant}", "generated", None, lines[0].encode() + b"\n" + _jsonl(damaged)))
    return out


def all_inputs() -> list[Input]:
    """Corpus, fixtures and generated damage, in that order (not yet written to disk)."""
    inputs = fixture_inputs() + (corpus_inputs() if CORPUS.is_dir() else [])
    known = {i.id: i for i in inputs}
    return inputs + generated_inputs(known)


def cases(inputs: list[Input]) -> list[tuple[str, str, int | None]]:
    """(command, input id, cut point) of every comparison: each command on each input, then
    ``prefix`` and ``fork`` at every seq of each :data:`CUT_LOGS` log."""
    by_id = {inp.id: inp for inp in inputs}
    out: list[tuple[str, str, int | None]] = [(command, inp.id, None) for command in COMMANDS for inp in inputs]
    for cut in CUT_LOGS:
        if cut in by_id:
            events = by_id[cut].plain_bytes().count(b"\n") - 1  # v4: one row per event
            out += [(command, cut, at) for at in range(events) for command in ("prefix", "fork")]
    return out


def materialize(inputs: list[Input], workdir: Path) -> None:
    """Give every input a plain generation file (decoded ones are written under ``workdir``).

    Decoded files get non-canonical names so that no name-vs-header rule of the
    persistence layer (which the oracle does not model) is involved.
    """
    d = workdir / "inputs"
    d.mkdir(parents=True, exist_ok=True)
    for n, inp in enumerate(inputs):
        if inp.decoded is None:
            assert inp.original is not None
            inp.path = inp.original
        else:
            stem = re.sub(r"[^A-Za-z0-9_.=+-]+", "_", inp.id.rsplit("/", 1)[-1])[-80:]
            inp.path = d / f"{n:04d}-{stem}.plain.jsonl"
            inp.path.write_bytes(inp.decoded)


def canonical_name(version: Any) -> str:
    """The generation file name dsh gives a log of this header version.

    A version that is not a safe integer names no generation (``session.v9007199254740992.jsonl``
    is not one); such a log is copied as ``session.jsonl``, and its header decides.
    """
    if type(version) is int and 0 < version <= 2**53 - 1:
        return f"session.v{version}.jsonl"
    return "session.jsonl"


# ----------------------------------------------------------------------------- running dshlog


@dataclass
class Run:
    """One dshlog run: exit code, stdout bytes, stderr text."""

    code: int
    out: bytes
    err: str

    @property
    def error_line(self) -> str:
        lines = [line for line in self.err.splitlines() if line.strip()]
        return lines[-1] if lines else ""

    def summary(self, limit: int = 400) -> str:
        if self.code == 0:
            text = self.out.decode("utf-8", "replace")
            return f"exit 0: {text[:limit]}" + ("…" if len(text) > limit else "")
        return f"exit {self.code}: {self.error_line}"


_BUILT: dict[int, Any] = {}


@contextmanager
def _app_built_once() -> Iterator[None]:
    """Run the command line with its Typer app's Click command built once.

    Typer rebuilds the Click command tree on every call (about 50 ms, ten times what
    dshlog itself takes on a small log); ``Typer.__call__`` is nothing more than that
    build followed by calling the command, so calling the command built once is the
    same run.
    """
    import typer.main

    import dshlog.cli as cli

    app = cli.app
    cmd = _BUILT.get(id(app))
    if cmd is None:
        cmd = _BUILT[id(app)] = typer.main.get_command(app)
    cli.app = cmd  # type: ignore[assignment]  # the built command stands in for the app while the run lasts
    try:
        yield
    finally:
        cli.app = app


def run_dshlog(argv: list[str]) -> Run:
    """``dshlog ARGV`` in process (``conftest.run_env``), stdout and stderr captured."""
    with _app_built_once():
        code, out, err = run_env(*argv)
    return Run(code, out, err.decode("utf-8", "replace"))


# ----------------------------------------------------------------------------- verdicts


@dataclass
class Verdict:
    """dshlog's answer against dsh's for one command on one input."""

    agree: bool
    oracle: str
    dshlog: str
    difference: str = ""

    def explain(self) -> str:
        return f"{self.difference}\n  dsh (oracle): {self.oracle}\n  dshlog:       {self.dshlog}"


_LOCATION = re.compile(r"(?:(?:line|element|byte|frame|seq) \d+)(?:, (?:line|element|byte|frame|seq) \d+)*: ")
_KIND = re.compile(r"([a-z][a-z-]*): ")
_PATH = re.compile(r"/[^:]*: ")


def dshlog_message(line: str) -> tuple[str | None, str]:
    """(kind, message) of dshlog's one-line error ``dshlog: KIND: [PATH: ][LOCATION: ]MESSAGE``."""
    s = line[len("dshlog: ") :] if line.startswith("dshlog: ") else line
    m = _KIND.match(s)
    if m is None:
        return None, s
    kind, s = m.group(1), s[m.end() :]
    if (p := _PATH.match(s)) is not None:
        s = s[p.end() :]
    if (loc := _LOCATION.match(s)) is not None:
        s = s[loc.end() :]
    return kind, s


def refusal_exit(ans: dict) -> int:
    """The exit code of the class of a dsh refusal (README: 3 unsupported, 4 corrupt, 2 usage)."""
    if ans["status"] == "unreadable":
        return 4
    if ans["phase"] == "fork":
        return 2
    if ans["phase"] == "header":
        return 3 if ans.get("headerStatus", ans["error"]["name"]) == "unsupported" else 4
    return 3 if ans["error"]["name"] == "SessionFormatUnsupportedMigrationError" else 4


def oracle_refusal(ans: dict) -> str:
    if ans["status"] == "unreadable":
        return f"unreadable: {ans['error']['message']}"
    return f"refused ({ans['phase']}, {ans.get('headerStatus') or ans['error']['name']}): {ans['error']['message']}"


_SCANNER_WRAP = re.compile(r"corrupt session log: invalid committed event at line (\d+): (.*)\Z", re.S)


def _scanner_wrapped(message: str, codec: str) -> bool:
    """Whether ``message`` is the codec's refusal ``codec`` of body row K as dsh's current-slot scanner words it
    (``invalid committed event at line K+1: …``): this oracle asks the format catalog, which does not wrap it;
    dsh's persistence code, which opens the file, does (tests/test_persistence_cases.py)."""
    m = _SCANNER_WRAP.match(message)
    if m is None or m.group(2) != codec:
        return False
    row = re.search(r"\brow (\d+) ", codec)
    return row is None or int(row.group(1)) + 1 == int(m.group(1))


def _refusal_verdict(ans: dict, code: int, error_line: str, accepted: str) -> Verdict:
    """dsh refused: dshlog must fail with dsh's message and the exit code of its class."""
    expected = refusal_exit(ans)
    want = oracle_refusal(ans)
    if code == 0:
        return Verdict(False, want, accepted, "dsh refuses the log, dshlog accepts it")
    got = f"exit {code}: {error_line}"
    _kind, message = dshlog_message(error_line)
    if ans["status"] == "unreadable" or ans["phase"] == "fork":
        # V8's JSON.parse text / the oracle's own boundary wording: only the class counts
        ok = code == expected
        return Verdict(ok, want, got, "" if ok else f"exit {code}, dsh's refusal is exit {expected}")
    if message != ans["error"]["message"] and not _scanner_wrapped(message, ans["error"]["message"]):
        return Verdict(False, want, got, "both refuse, with different messages")
    if code != expected:
        return Verdict(False, want, got, f"same message, but exit {code} where the class of dsh's refusal is exit {expected}")
    return Verdict(True, want, got)


def _short(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _around(text: str, k: int, before: int = 100, after: int = 300) -> str:
    """The part of ``text`` around character ``k`` (where two rows first differ)."""
    start = max(0, k - before)
    return ("…" if start else "") + text[start : k + after] + ("…" if k + after < len(text) else "")


def _lines_verdict(want: list[str], got: list[str], what: str) -> Verdict:
    """Exact row text, first difference reported."""
    if want == got:
        return Verdict(True, f"{len(want)} {what}", f"{len(got)} {what}")
    for i, (w, g) in enumerate(zip(want, got)):
        if w != g:
            k = next((k for k, (a, b) in enumerate(zip(w, g)) if a != b), min(len(w), len(g)))
            return Verdict(False, f"{what} {i}: {_around(w, k)}", f"{what} {i}: {_around(g, k)}",
                           f"{what} {i} differs from character {k} ({len(want)} vs {len(got)} {what}s)")
    i = min(len(want), len(got))
    return Verdict(
        False,
        f"{len(want)} {what}" + (f"; {what} {i}: {_short(want[i])}" if i < len(want) else ""),
        f"{len(got)} {what}" + (f"; {what} {i}: {_short(got[i])}" if i < len(got) else ""),
        f"{len(want)} {what} from dsh, {len(got)} from dshlog",
    )


def canon(value: Any) -> str:
    """JSON text of a value with its key order, to compare documents from both tools."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _value_verdict(want: Any, got: Any, what: str) -> Verdict:
    w, g = canon(want), canon(got)
    if w == g:
        return Verdict(True, _short(w), _short(g))
    if isinstance(want, list) and isinstance(got, list):
        return _lines_verdict([canon(x) for x in want], [canon(x) for x in got], what)
    return Verdict(False, _short(w), _short(g), f"{what} differ")


_ENVELOPE = re.compile(r'^(\{"type":"(?:[^"\\]|\\.)*"),"seq":\d+,"time":\d+(?=[,}])')


def projection_form(row: str) -> str:
    """An oracle row with the envelope it restored for a projection dropped again."""
    return _ENVELOPE.sub(r"\1", row, count=1)


def _body(text: str) -> list[str]:
    return text.split("\n")[:-1] if text else []


# ----------------------------------------------------------------------------- one comparison per command


class Comparer:
    """Runs dshlog for each command and holds it against the oracle's answer."""

    def __init__(self, oracle: Oracle, workdir: Path) -> None:
        self.oracle = oracle
        self.workdir = workdir
        self._surface: dict[str, Run] = {}
        self._n = 0

    def _fresh_dir(self, what: str) -> Path:
        self._n += 1
        d = self.workdir / f"{what}-{self._n:05d}"
        d.mkdir(parents=True)
        return d

    # the oracle requests each comparison makes, so that they can be queued up front
    @staticmethod
    def requests(command: str, inp: Input, at: int | None = None) -> list[list[str]]:
        p = str(inp.path)
        if command in ("fork", "prefix"):
            tail = [] if at is None else [str(at)]
            return [["header", p], ["fork", p, *tail]] + ([["prefix", p, str(at)]] if command == "prefix" else [])
        return [[command, p]]

    def projection(self, inp: Input) -> bool:
        ans = self.oracle.answer(["header", str(inp.path)])
        return bool(ans.get("projection"))

    def compare(self, command: str, inp: Input, at: int | None = None) -> Verdict:
        if command == "prefix":
            return self.prefix(inp, at)
        method = getattr(self, command)
        return method(inp, at) if command == "fork" else method(inp)

    # ------------------------------------------------------------------ migrate
    def migrate(self, inp: Input) -> Verdict:
        """``dshlog migrate`` of a copy under its canonical name publishes dsh's bytes."""
        assert inp.path is not None
        ans = self.oracle.answer(["migrate", str(inp.path)])
        d = self._fresh_dir("migrate")
        (d / canonical_name(inp.header_version())).write_bytes(inp.path.read_bytes())
        run = run_dshlog(["migrate", "--no-children", "--json", str(d)])
        try:
            session = json.loads(run.out)["sessions"][0]
        except (ValueError, KeyError, IndexError):
            return Verdict(False, ans["status"], run.summary(), "dshlog migrate gave no report")
        status = session.get("status")
        got_text = f"{status}" + (f": {session['error']}" if session.get("error") else "")
        if ans["status"] == "current":
            return Verdict(status == "current", "current (dsh publishes nothing)", got_text, "" if status == "current" else "dsh sees a current log")
        if ans["status"] == "ok":
            if status != "migrated":
                return Verdict(False, f"migrated ({ans['events']} events)", f"exit {run.code}: {got_text}", "dsh migrates the log, dshlog does not")
            want = ans["bytes"].split("\n")[:-1]
            if ans.get("projection"):
                want = want[:1] + [projection_form(r) for r in want[1:]]
            got = _body((d / "session.v4.jsonl").read_text("utf-8"))
            return _lines_verdict(want, got, "line")
        if status == "failed":
            return _refusal_verdict(ans, run.code, "dshlog: " + session.get("error", ""), got_text)
        return _refusal_verdict(ans, 0, "", got_text)

    # ------------------------------------------------------------------ read
    def read(self, inp: Input) -> Verdict:
        """``dshlog events --json --v4`` of the stored file prints dsh's held events."""
        assert inp.path is not None
        ans = self.oracle.answer(["read", str(inp.path)])
        target = inp.original if inp.wrapped else inp.path
        argv = ["events", "--json", "--v4", str(target)] + (["--select", inp.select] if inp.select is not None else [])
        run = run_dshlog(argv)
        if ans["status"] != "ok":
            return _refusal_verdict(ans, run.code, run.error_line, run.summary())
        if run.code != 0:
            return Verdict(False, f"{ans['events']} events", run.summary(), "dsh reads the log, dshlog refuses it")
        return _lines_verdict(ans["lines"], _body(run.out.decode("utf-8")), "event")

    # ------------------------------------------------------------------ header
    def header(self, inp: Input) -> Verdict:
        """dshlog's header decision (the strict open, then the header-only migration) against ``readHeader``."""
        assert inp.path is not None
        ans = self.oracle.answer(["header", str(inp.path)])
        got, code, line = dshlog_header(inp.path)
        if ans["status"] != "ok":
            return _refusal_verdict(ans, code, line, canon(got))
        result = ans["result"]
        status = result["status"]
        if status in ("unsupported", "malformed"):
            pseudo = {"status": "refused", "phase": "header", "headerStatus": status, "error": {"name": status, "message": result["reason"]}}
            return _refusal_verdict(pseudo, code, line, canon(got))
        want_header = dict(result["header"])
        try:
            placeholder = json.loads(inp.path.read_bytes().split(b"\n", 1)[0]).get("cwd")
        except ValueError:
            placeholder = None
        if want_header.get("cwd") == "/__dsh_oracle_cwd_placeholder__":
            want_header["cwd"] = placeholder
        want = {"status": status, "storedVersion": result["storedVersion"], "header": {"type": "session", **want_header}}
        if code != 0:
            return Verdict(False, canon(want), f"exit {code}: {line}", f"dsh: {status}, dshlog refuses the header")
        if got == want:  # dict equality: the header's key order is migrate's business
            return Verdict(True, canon(want), canon(got))
        return Verdict(False, canon(want), canon(got), "header decisions differ")

    # ------------------------------------------------------------------ surface and messages
    def _surface_run(self, inp: Input) -> Run:
        key = str(inp.path)
        if key not in self._surface:
            self._surface[key] = run_dshlog(["surface", "--json", "--messages", key])
        return self._surface[key]

    def surface(self, inp: Input) -> Verdict:
        """``dshlog surface --json``: nodes and replacements of dsh's ``foldSurface``."""
        ans = self.oracle.answer(["surface", str(inp.path)])
        run = self._surface_run(inp)
        if ans["status"] != "ok":
            return _refusal_verdict(ans, run.code, run.error_line, run.summary())
        if run.code != 0:
            return Verdict(False, canon({"nodes": ans["nodes"], "replacements": ans["replacements"]}), run.summary(), "dsh folds the log, dshlog refuses it")
        doc = json.loads(run.out)
        got = {"nodes": [n["seq"] for n in doc["nodes"]], "replacements": doc["replacements"]}
        return _value_verdict({"nodes": ans["nodes"], "replacements": ans["replacements"]}, got, "surface")

    def messages(self, inp: Input) -> Verdict:
        """``dshlog surface --json --messages``: the messages dsh derives at the end of the log."""
        ans = self.oracle.answer(["messages", str(inp.path)])
        run = self._surface_run(inp)
        if ans["status"] != "ok":
            return _refusal_verdict(ans, run.code, run.error_line, run.summary())
        if run.code != 0:
            return Verdict(False, f"{len(ans['messages'])} messages", run.summary(), "dsh derives messages, dshlog refuses the log")
        return _value_verdict(ans["messages"], json.loads(run.out)["messages"], "message")

    # ------------------------------------------------------------------ closers
    def closers(self, inp: Input) -> Verdict:
        """``dshlog repair --json``: the closers of dsh's ``interruptedTurnClosers``."""
        ans = self.oracle.answer(["closers", str(inp.path)])
        run = run_dshlog(["repair", "--json", str(inp.path)])
        if ans["status"] != "ok":
            return _refusal_verdict(ans, run.code, run.error_line, run.summary())
        want = [json.loads(c) for c in ans["closers"]]
        if run.code != 0:
            return Verdict(False, f"{len(want)} closers", run.summary(), "dsh closes the tail, dshlog refuses the log")
        return _value_verdict(want, json.loads(run.out)["closers"], "closer")

    # ------------------------------------------------------------------ fork and prefix
    def _fork_run(self, inp: Input, at: int | None) -> tuple[Run, list[str]]:
        d = self._fresh_dir("fork")
        out = d / "child.jsonl"
        argv = ["fork", str(inp.path), "-o", str(out), "--id", "oracle-fork-child", "--json"] + ([] if at is None else ["--at", str(at)])
        run = run_dshlog(argv)
        return run, (_body(out.read_text("utf-8")) if run.code == 0 and out.is_file() else [])

    def _seed_rows(self, inp: Input, rows: list[str]) -> list[str]:
        return [projection_form(r) for r in rows] if self.projection(inp) else rows

    def fork(self, inp: Input, at: int | None = None) -> Verdict:
        """``dshlog fork [--at SEQ]``: the child's rows after its header are dsh's ``buildForkSeed``.

        With a cut point only the rows after the copied prefix are compared (the
        prefix is :meth:`prefix`'s), so a difference names the part that differs.
        """
        ans = self.oracle.answer(["fork", str(inp.path)] + ([] if at is None else [str(at)]))
        run, child = self._fork_run(inp, at)
        if ans["status"] != "ok":
            return _refusal_verdict(ans, run.code, run.error_line, run.summary())
        if run.code != 0:
            return Verdict(False, f"{len(ans['events'])} seed events", run.summary(), "dsh forks the log, dshlog refuses")
        want = self._seed_rows(inp, ans["events"])
        got = child[1:]
        if at is not None:
            want, got = want[at + 1 :], got[at + 1 :]
        return _lines_verdict(want, got, "seed row" if at is None else "row after the prefix")

    def prefix(self, inp: Input, at: int | None) -> Verdict:
        """The fork child's copied prefix is the oracle's ``prefix`` (the held events up to SEQ)."""
        assert at is not None
        ans = self.oracle.answer(["prefix", str(inp.path), str(at)])
        run, child = self._fork_run(inp, at)
        if ans["status"] != "ok":
            return _refusal_verdict(ans, run.code, run.error_line, run.summary())
        if run.code != 0:
            return Verdict(False, f"prefix of {at + 1} events", run.summary(), "dsh cuts the log, dshlog refuses to fork it")
        want = self._seed_rows(inp, ans["bytes"].split("\n")[1:-1])
        return _lines_verdict(want, child[1 : at + 2], "prefix row")


def dshlog_header(path: Path) -> tuple[dict, int, str]:
    """dshlog's header decision: (decision, exit code, one-line error).

    What every command does before it reads a row: the strict open (version and the
    file's own header checks), then the header-only migration to v4 that listings and
    forks use.  ``status`` is ``current`` for a v4 log, ``migration-required`` for an
    older one, as in dsh's ``readHeader``.
    """
    from dshlog.errors import DshlogError
    from dshlog.read.session import open_log

    try:
        with open_log(str(path)) as log:
            version = log.version
            header = log.v4().header
    except DshlogError as exc:
        return {"error": exc.one_line()}, int(exc.exit_code), "dshlog: " + exc.one_line()
    status = "current" if version == 4 else "migration-required"
    return {"status": status, "storedVersion": version, "header": header}, 0, ""


def new_workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="dshlog-oracle-"))
