"""Open a session log: the one entry point every command uses (:func:`open_log`).

``open_log(target)`` accepts a generation file, a session directory, a JSON array or
wrapped event stream, or ``-`` for standard input.  A :class:`SessionLog` is the input
and the header decision: it opens the container, decides the header as dsh does
(:mod:`dshlog.read.header`) eagerly (cheap), and streams the body's rows lazily, so a
command that needs only the header never reads the rest, and a command that needs
everything reads it once.  Its body can be read once, through one of its views:

* :meth:`SessionLog.stored` - the events of the *stored* version, each with its
  original line bytes (when the line is exactly the event) and its location, for
  byte-faithful pass-through and precise error messages (:meth:`~SessionLog.stored_lines`,
  :meth:`~SessionLog.counted` and :meth:`~SessionLog.stored_runs` are the same rows for
  readers that need less of each: :mod:`dshlog.read.lazy`);
* :meth:`SessionLog.v4` - dsh's view (:class:`~dshlog.read.view.V4View`): v4 events,
  migrated in memory (read-only, nothing written) when the stored version is older,
  with dsh's restore over them.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from collections.abc import Callable, Iterator

from ..fastpaths import fast
from ..errors import BeyondLimit, CorruptLog, DshlogError, InternalError, Location, NotASessionLog, UnsupportedVersion, UsageError, guarded
from ..check.problems import Problem, Problems, Severity
from ..check.surface import SurfaceShare
from .lazy import LazyRecord, RowGate
from .place import place_refusal
from .rows import RowDecoder
from .source import Source, Target
from .view import V4View
from ..protocol.jsjson import JsonError, dumps, iter_array, js_string, loads, top_level_keys
from ..protocol.layout import parse_generation, persistence_root
from ..protocol.texts import EMPTY_LOG, EMPTY_ZSTD_LOG, FORMAT_VERSION_REFUSAL, TORN_RECORD_IN_FRAME, invalid_frame_magic, newer_version, older_version, unparsable_row
from ..protocol.values import is_count, is_placeholder, is_safe_integer, placeholder_bytes_search, safe_int
from ..protocol.vocabulary import CURRENT_VERSION, PACKED_TYPES, SUMMARY_DATA_TYPES
from ..model.summary import DATA_VIEWS
from .children import discover_child_facts
from .header import HeaderDecision, read_header
from .container import (
    LINE_LIMIT,
    PROGRESS_STEP,
    Container,
    Position,
    Record,
    SourceInfo,
    Torn,
    _make_loc,
    bounded_lines,
    iter_json_array,
    iter_lines,
    iter_zstd_lines,
    open_binary,
    torn_text,
    zstd_prefix,
    sniff,
)


_UNPARSABLE = object()  # _parse_row's answer for a row that was noted and skipped
_LAZY = object()  # _rows' "parsed row" of a row the gate admitted unparsed


@dataclass(slots=True)
class EventRecord:
    """A stored-version event with where it came from.

    ``raw`` is the exact line (no newline) when that line encodes exactly this one
    event as read (plain and zstd JSONL); ``None`` for expanded packed rows,
    restored projections and events parsed out of other containers.
    """

    event: dict[str, Any]
    raw: bytes | None
    loc: Location


def _refusal(exc: JsonError, what: str, loc: Location) -> str:
    """The one wording of a line the JSON reader refused (a body row that is not JSON: :func:`unparsable_row`)."""
    if exc.kind == "utf-8":
        return f"invalid UTF-8 in {what} at line {loc.line}"
    if exc.kind == "lossless":
        return f"{what} at line {loc.line} is not lossless JSON ({exc.detail})"
    if exc.kind == "depth":
        return f"{what} at line {loc.line} is {exc.detail}"
    return f"unparsable {what} at line {loc.line}"


def _too_deep(exc: JsonError, what: str, path: str, loc: Location | None) -> BeyondLimit:
    """A value nested beyond the reader's limit: a limit of dshlog's, never damage (no writer may drop it)."""
    line = f" at line {loc.line}" if loc is not None and loc.line is not None else ""
    return BeyondLimit(f"{what}{line} is {exc.detail}, beyond what dshlog reads", path=path, loc=loc)


def _parse(raw: bytes, path: str, loc: Location, what: str = "committed event") -> Any:
    try:
        return loads(raw)
    except JsonError as exc:
        if exc.kind == "depth":
            raise _too_deep(exc, what, path, loc) from None
        raise CorruptLog(_refusal(exc, what, loc), path=path, loc=loc) from None


def _detect_headerless_version(sample: bytes) -> int:
    """Stored version of a header-less event stream, judged from distinctive content."""
    if b'"assistant/chunk"' in sample or b'-chunks","seq0"' in sample:
        return 0
    if b'"role":"tool"' in sample or b'"role": "tool"' in sample:
        return 4
    if b'"system/message"' in sample:
        return 3 if b'"kind":"plugin"' in sample or b'"kind": "plugin"' in sample else 4
    if b'"tool-result"' in sample or b'"start":' in sample and b'"op":"replace"' in sample:
        return 0 if b'"stream"' not in sample else 2
    return CURRENT_VERSION


def _damaged_header(obj: dict[str, Any]) -> bool:
    """A first line that lacks ``type`` but has header members is a damaged header, not an event.

    dsh reads line 1 as the header whatever it holds; only an input whose first row
    is an event (it has ``seq``/``data``) is a header-less stream.
    """
    return "type" not in obj and "seq" not in obj and "data" not in obj and any(k in obj for k in ("version", "id", "createdAt"))


def _june_prerelease(sample: bytes) -> bool:
    """Header ``version:1`` written by the June 2026 pre-release writer (NOTES.md 2)."""
    if b'"sourceEventSeqs":[[' in sample or b'-chunks"' in sample:
        return False
    return b'"trigger"' in sample or b'"type":"usage"' in sample or b'"type":"error"' in sample or b'"assistant/chunk"' in sample


class SessionLog:
    """An opened session log (header read, body not yet)."""

    def __init__(self, source: Source, *, strict: bool = True, guard: bool = False,
                 progress: Position | None = None, cache: str | None = None) -> None:
        """``source``: the input and how to read it (:class:`~dshlog.read.source.Source`).

        ``strict``: decide as dsh does: the header is admitted (or refused) here, with
        dsh's texts, before any row is read; the v4 view reads rows as dsh's
        recovering read does and restores the v4 artifact as dsh does.  When false,
        the log is shown as far as it can be read, with notes.
        ``guard``: the views this log hands out translate what escapes their
        iteration into the error hierarchy (:func:`dshlog.errors.guarded`), as
        the library's entry points do for a log they return to a caller.
        ``progress``: told ``(bytes of the file read, its size)`` while the body is read
        (:data:`~dshlog.read.container.Position`), so that a caller can say how far a long
        read is; the reading loop calls it, about once per :data:`PROGRESS_STEP` bytes.
        ``cache``: the directory of the verified cache (:mod:`dshlog.read.cache`), or none;
        with one, the v4 view of an old generation file reads its published successor
        instead of migrating it where a read of this file proved it (:mod:`dshlog.read.successor`).
        """
        self.source = source
        target = source.name
        stream = source.stream
        self.cache = cache
        self.guard = guard
        self.progress = progress
        self.strict = strict
        self.notes = Problems()
        self._consumed = False
        self._snapshot: bool | None = None
        #: where a plain body's sample starts (just after the header), once the header is read
        self._sample_from: int | None = None
        #: dsh's decision on the header line (``None`` for an input without one)
        self.decision: HeaderDecision | None = None
        self._mig_header: dict[str, Any] | None = None
        fh, path, size = (stream, target, None) if stream is not None else open_binary(target)
        self.path = path
        self._fh: IO[bytes] = fh
        self._spool: IO[bytes] | None = None
        head = fh.peek(65536)[:65536] if hasattr(fh, "peek") else b""
        container = sniff(head)
        named = parse_generation(os.path.basename(path)) if stream is None else None
        text = head.lstrip(b" \t\r\n\xef\xbb\xbf")[:1] == b"{"
        if named is not None and named.compressed and len(head) >= 4 and container != Container.ZSTD and (strict or not text):
            # dsh's configured compression follows the generation's name: its frame scanner
            # refuses the first bytes, where dshlog's content sniff would read them as text
            # (a person's reader shows JSON text it finds there; its banner says what dsh decides)
            raise CorruptLog(invalid_frame_magic(0), path=path, loc=Location(frame=0))
        if container == "json-document" or (target == "-" and container in (Container.ARRAY,)):
            container = self._sniff_document(head) if container == "json-document" else container
        self.info = SourceInfo(path=path, container=container, size_on_disk=size)
        self.header: dict[str, Any] | None = None
        self.header_raw: bytes | None = None
        self.header_loc: Location | None = None
        self._body: Iterator[Record]
        # A plain JSONL body with a header is read straight from the file in _rows (no
        # Record per line; a fast path, see fastpaths); ``_plain`` is (the line generator it replaces, next line
        # number, next offset), ``_pushback`` a row already taken out by a peek.
        self._plain: tuple[Iterator[Record], int, int] | None = None
        self._pushback: list[Record] = []
        #: called when a plain JSONL body's last row has been taken, before the end-of-log notes
        #: (:mod:`dshlog.read.resume` keeps the state of the read there)
        self.at_end: Callable[[], None] | None = None
        #: (line number, byte offset) of the first line a plain body's read has not taken, once it ends
        self.unread: tuple[int, int] | None = None
        self._open_body(head, source.format_version)

    # ------------------------------------------------------------------ opening

    def _sniff_document(self, head: bytes) -> str:
        fh = self._rewindable()
        try:
            for key in top_level_keys(fh.read):
                if key == "events":
                    return Container.RESULT_JSON
                if key == "logs":
                    return Container.BEHAVIOR_JSON
        except JsonError as exc:
            if exc.kind == "depth":
                raise _too_deep(exc, "JSON document", self.path, None) from None
            raise CorruptLog(f"invalid JSON document: {exc.detail}", path=self.path) from None
        finally:
            fh.seek(0)
        raise UsageError("JSON document holds neither an event array nor a header line", path=self.path)

    def _rewindable(self) -> IO[bytes]:
        """A seekable stream over the input (standard input is spooled to a temp file)."""
        fh = self._fh
        if fh.seekable():
            return fh
        import tempfile  # an unseekable input only (standard input)

        spool = tempfile.TemporaryFile()
        shutil.copyfileobj(fh, spool, 1 << 20)
        spool.seek(0)
        self._spool = spool
        self._fh = io.BufferedReader(spool, 1 << 20)
        return self._fh

    def _open_body(self, head: bytes, format_version: int | None) -> None:
        c = self.info.container
        path = self.path
        if c in (Container.JSONL, Container.ZSTD):
            lines = iter_lines(self._fh, self.info) if c == Container.JSONL else iter_zstd_lines(self._fh, self.info, self.source.parallel)
            first = next(lines, None)
            if first is None:
                zstd = c == Container.ZSTD or path.endswith(".jsonl.zstd")
                raise CorruptLog(EMPTY_ZSTD_LOG if zstd else EMPTY_LOG, path=path, loc=Location(line=1, offset=0))
            obj = self._first_row(first.raw or b"", first.loc())
            if isinstance(obj, dict) and (obj.get("type") == "session" or _damaged_header(obj)):
                self.header, self.header_raw, self.header_loc = obj, first.raw, first.loc()
                self._body = lines
                if c == Container.JSONL and fast() and first.raw is not None and first.line is not None and first.offset is not None:
                    self._plain = (lines, first.line + 1, first.offset + len(first.raw) + 1)
            elif isinstance(obj, dict) and (obj.get("type") == "session_event" or ("method" in obj and "params" in obj)):
                # a wrapped stream inside a zstd container
                kind = Container.STREAM_JSON if obj.get("type") == "session_event" else Container.JSONRPC
                self._body = self._unwrap(_chain_first(first, lines), kind)
                self.version = format_version if format_version is not None else _detect_headerless_version(self._sample())
                self.notes.add(Problem("wrapped", f"events unwrapped from a compressed {kind} stream (no header)", Severity.INFO))
                return self._make_decoder()
            else:
                # header-less JSONL of events (seen in fixtures): keep the first row as a body row
                self._body = _chain_first(first, lines)
                self.notes.add(Problem("no-header", "the log has no session header line", Severity.WARNING, loc=first.loc()))
            self.version = self._header_version(head, format_version)
            if c == Container.JSONL and self._fh.seekable():
                # a later sample (the snapshot test) must see the same bytes as one taken now, not
                # whatever is left after the body was read: a zstd sample always starts at the top
                self._sample_from = self._fh.tell()
        elif c in (Container.STREAM_JSON, Container.JSONRPC):
            self._body = self._unwrap(iter_lines(self._fh, self.info), c)
            self.version = format_version if format_version is not None else _detect_headerless_version(self._sample())
            self.notes.add(Problem("wrapped", f"events unwrapped from a {c} stream (no header)", Severity.INFO))
        elif c == Container.ARRAY:
            if format_version is None:
                format_version = _detect_headerless_version(self._sample())
            self._body = iter_json_array(self._fh, self.info)
            self.version = format_version
            self.notes.add(Problem("no-header", "JSON array of events: no session header", Severity.INFO))
        elif c == Container.RESULT_JSON:
            v = format_version if format_version is not None else _detect_headerless_version(self._sample())
            self._body = iter_json_array(self._fh, self.info, ("events",))
            self.version = v
            self.notes.add(Problem("wrapped", "events read from a result.json document (no header)", Severity.INFO))
        elif c == Container.BEHAVIOR_JSON:
            self._open_behavior(format_version)
        else:  # pragma: no cover
            raise UsageError(f"unrecognised container {c}", path=path)
        self._make_decoder()

    def _first_row(self, raw: bytes, loc: Location) -> Any:
        """Line 1 of a JSONL body, parsed; an input that is plainly no session log is named as such.

        A file dsh would have written (a generation name) or whose first line opens
        a JSON object is judged as a log, however damaged (a torn header is
        corrupt); prose, or JSON lines of something else, is the wrong file.
        """
        named = parse_generation(os.path.basename(self.path)) is not None
        try:
            obj = _parse(raw, self.path, loc, "header")
        except CorruptLog:
            if named or raw.lstrip(b" \t\r\xef\xbb\xbf").startswith(b"{"):
                raise
            raise NotASessionLog("line 1 is not JSON", path=self.path) from None
        wrapped = isinstance(obj, dict) and "method" in obj and "params" in obj  # a JSON-RPC stream in a zstd container
        if not named and not wrapped and not (isinstance(obj, dict) and (_damaged_header(obj) or any(k in obj for k in ("type", "seq", "data")))):
            raise NotASessionLog("line 1 is JSON, but neither a session header nor an event", path=self.path)
        return obj

    def _make_decoder(self) -> None:
        self.decoder = RowDecoder(self.version, self.path, strict=self.strict, notes=self.notes)

    def _sample(self, n: int = 8 << 20) -> bytes:
        """Up to ``n`` leading bytes, for content-based version detection (input is rewound)."""
        fh = self._rewindable()
        if self.info.container == Container.ZSTD:
            # from the start, without moving the file position a forked decoder of the body shares
            return zstd_prefix(fh, self.path, n)
        pos = fh.tell()
        if self._sample_from is not None:
            fh.seek(self._sample_from)
        data = fh.read(n)
        fh.seek(pos)
        return data

    def _open_behavior(self, format_version: int | None) -> None:
        fh = self._rewindable()
        try:
            logs = list(iter_array(fh.read, ("logs",)))
        except JsonError as exc:
            if exc.kind == "depth":
                raise _too_deep(exc, "JSON document", self.path, None) from None
            raise CorruptLog(f"invalid JSON document: {exc.detail}", path=self.path) from None
        if not logs:
            raise UsageError("behavior document holds no logs", path=self.path)
        if not all(isinstance(lg, dict) for lg in logs):
            raise CorruptLog("behavior document: every entry of logs must be an object", path=self.path)
        names = [str(lg.get("file", i)) for i, lg in enumerate(logs)]
        self.info.wrapped_sessions = names
        idx = 0
        select = self.source.select
        if select is not None:
            if select.isdigit() and int(select) < len(logs):
                idx = int(select)
            elif select in names:
                idx = names.index(select)
            else:
                raise UsageError(f"no log {select!r} in this document (logs: {', '.join(names)})", path=self.path)
        elif len(logs) > 1:
            self.notes.add(Problem("multi", f"document holds {len(logs)} logs ({', '.join(names)}); reading the first (choose with --select)", Severity.INFO))
        lines = logs[idx].get("lines") or []
        recs = [Record(None, o, None, None, index=i) for i, o in enumerate(lines)]
        if recs and isinstance(recs[0].obj, dict) and recs[0].obj.get("type") == "session":
            self.header, self.header_loc = recs[0].obj, recs[0].loc()
            recs = recs[1:]
        self._body = iter(recs)
        sample = dumps(lines[:200])
        self.version = self._header_version(sample, format_version)

    def _unwrap(self, lines: Iterator[Record], container: str) -> Iterator[Record]:
        select = wanted = self.source.select
        seen: list[str] = []
        streams: dict[str, list[int]] = {}
        for rec in lines:
            obj = _parse(rec.raw or b"", self.path, rec.loc(), "wrapped line")
            if container == Container.STREAM_JSON:
                if not (isinstance(obj, dict) and obj.get("type") == "session_event"):
                    continue
                sid, ev = obj.get("sessionId"), obj.get("event")
            else:
                if not (isinstance(obj, dict) and obj.get("method") == "session.event"):
                    continue
                params = obj.get("params")
                if not isinstance(params, dict):  # damaged: as if there were none
                    params = {}
                sid, ev = params.get("sessionId"), params.get("event")
            sid = self._demux(str(sid), ev, streams)
            if sid not in seen:
                seen.append(sid)
                self.info.wrapped_sessions = list(seen)
                if wanted is None:
                    wanted = sid
                elif len(seen) > 1 and select is None:
                    self.notes.add(Problem("multi", f"stream interleaves another session {sid!r}; its events are skipped (choose with --select)", Severity.INFO, loc=rec.loc()))
            if sid != wanted:
                continue
            yield Record(None, ev, rec.line, rec.offset, rec.frame)
        if select is not None and select not in seen:
            raise UsageError(f"--select {select!r} names no session of this stream (sessions: {', '.join(seen) or 'none'})", path=self.path)

    @staticmethod
    def _demux(sid: str, ev: Any, streams: dict[str, list[int]]) -> str:
        """Split interleaved logs that share one session id (seq restarts at 0 for the child).

        Real JSON-RPC snapshots interleave a parent and its in-process child under the
        same (placeholder) id; each event joins the stream whose next seq it continues.
        Streams after the first are named ``<id>#2``, ``<id>#3``...
        """
        seq = ev.get("seq") if isinstance(ev, dict) else None
        nexts = streams.setdefault(sid, [])
        if type(seq) is not int:
            return sid
        for i, nxt in enumerate(nexts):
            if seq == nxt:
                nexts[i] = seq + 1
                return sid if i == 0 else f"{sid}#{i + 1}"
        if not nexts or seq == 0:
            nexts.append(seq + 1)
            i = len(nexts) - 1
            return sid if i == 0 else f"{sid}#{i + 1}"
        nexts[0] = seq + 1
        return sid

    def _header_version(self, sample: bytes, format_version: int | None) -> int:
        h = self.header
        if format_version is not None:
            return format_version
        if h is None:
            return _detect_headerless_version(sample if sample else self._sample())
        decision = self.decision = read_header(h)
        if self.strict:
            self._refuse_foreign_version(h)
            if not decision.admitted:
                raise decision.refusal(path=self.path, loc=self.header_loc)
            v = decision.stored_version
            assert v is not None
            self._check_name(v)
            refusal = place_refusal(self.path, h.get("id"), h.get("cwd"), compressed=self.info.container == Container.ZSTD)
            if refusal is not None:
                raise CorruptLog(refusal, path=self.path, loc=self.header_loc)
            return v
        if not decision.admitted and decision.stored_version is not None and decision.stored_version <= CURRENT_VERSION:
            self.notes.add(Problem("header", f"dsh refuses this header: {decision.reason}", Severity.WARNING, loc=self.header_loc))
        v = h.get("version")
        named = parse_generation(os.path.basename(self.path)) if self.info.container in (Container.JSONL, Container.ZSTD) else None
        name_v = named.version if named is not None else None
        if v is None:
            # v0/v1 headers never carry isSeeded (v2+ require it): use that before sniffing content
            guess = name_v if name_v is not None else (_detect_headerless_version(self._sample()) if "isSeeded" in h else 0)
            self.notes.add(Problem("header", f"header lacks version; reading as v{guess} (a test-support fixture: dsh itself refuses such a header)", Severity.WARNING, loc=self.header_loc))
            return guess
        if not is_count(v):
            raise CorruptLog(FORMAT_VERSION_REFUSAL, path=self.path, loc=self.header_loc)
        v = safe_int(v)
        if v > CURRENT_VERSION:
            # lenient readers (events, info, validate) still show the rows, read with the v4 row codec
            self.notes.add(Problem("unsupported-version", decision.reason or "", Severity.ERROR, loc=self.header_loc))
            return v
        if v == 1 and _june_prerelease(self._sample(1 << 20)):
            self.notes.add(
                Problem("prerelease", "header version 1 written by the June 2026 pre-release writer; read as v0 (its counter was reset)", Severity.WARNING, loc=self.header_loc)
            )
            return 0
        self._check_name(v)
        return v

    def _refuse_foreign_version(self, h: dict[str, Any]) -> None:
        """dsh's current-slot scanner: a header in ``session.v4.jsonl[.zstd]`` whose version is not
        the current one is refused as unsupported before anything else of the header is judged
        (only a historical slot is migrated, and only its reader compares name and header)."""
        named = parse_generation(os.path.basename(self.path)) if self.info.container in (Container.JSONL, Container.ZSTD) else None
        v = h.get("version")
        if named is None or named.version != CURRENT_VERSION or not is_safe_integer(v) or v == CURRENT_VERSION:
            return
        sid = h.get("id") if isinstance(h.get("id"), str) else js_string(h.get("id"))
        v = safe_int(v)
        text = newer_version(sid, v, CURRENT_VERSION) if v > CURRENT_VERSION else older_version(sid, v, CURRENT_VERSION)
        raise UnsupportedVersion(text, path=self.path, loc=self.header_loc)

    def _check_name(self, v: int) -> None:
        """The persistence layer's rule: a canonical file name names its header's version."""
        named = parse_generation(os.path.basename(self.path)) if self.info.container in (Container.JSONL, Container.ZSTD) else None
        name_v = named.version if named is not None else None
        if name_v is not None and name_v != v and not (name_v == 0 and self.path.endswith((".expected.jsonl", ".golden.jsonl"))):
            msg = f"resolved JSONL source filename identifies v{name_v}, but its header identifies v{v}"
            if self.strict:
                raise CorruptLog(msg, path=self.path, loc=self.header_loc)
            self.notes.add(Problem("header", msg, Severity.WARNING, loc=self.header_loc))

    # ------------------------------------------------------------------ reading

    def _take(self) -> Iterator[Record]:
        if self._consumed:
            raise InternalError("a SessionLog body can be read once; open it again")
        self._consumed = True
        return self._body

    def _rows(self, *, runs: bool, gate: RowGate | None = None) -> Iterator[tuple[list[Any], Any, bytes | None, Location]]:
        """(decoded events, parsed row, row bytes, location) per physical row, one pass.

        ``runs``: the decoder keeps each v0/v1 packed row as one :class:`PackedRun`.
        ``gate``: the lazy reader's decision first (:mod:`dshlog.read.lazy`); a row it
        admits comes as ``([its head], _LAZY, bytes, location)``, unparsed.
        """
        body = self._take()
        self.decoder.compact = runs and fast()  # exact: every packed row expanded (fastpaths)
        plain = self._plain if self._plain is not None and body is self._plain[0] else None
        told = self._teller()
        seen = 0
        for rec in (self._pushback if plain is not None else _chain_all(self._pushback, body)):
            if told is not None:
                seen += len(rec.raw) if rec.raw is not None else 1 << 10
                if seen >= PROGRESS_STEP:
                    seen = 0
                    told()
            loc = rec.loc()
            if gate is not None and rec.raw is not None:
                head = gate.head(rec.raw)
                if head is not None:
                    yield [head], _LAZY, rec.raw, loc
                    continue
            obj = rec.obj if rec.raw is None else self._parse_row(rec.raw, loc)
            if obj is not _UNPARSABLE:
                yield self.decoder.decode(obj, loc), obj, rec.raw, loc
        if plain is not None:
            yield from self._plain_rows(plain[1], plain[2], gate)
            if self.at_end is not None:
                self.at_end()
        if told is not None:
            told()
        t = self.info.torn
        if t is not None and (t.length or t.frame is not None):
            self.notes.add(Problem("torn-tail", torn_text(t, self.info.size_on_disk), Severity.INFO, loc=Location(offset=t.offset, frame=t.frame)))
        dec = self.decoder
        if dec.recoverable:
            if dec.issue is not None and self._in_complete_frame(dec.issue_loc):
                # dsh's zstd reader: the complete frames must be committed records, whole; its scanner
                # stops counting committed bytes at the first issue, so any issue there refuses the log
                raise CorruptLog(TORN_RECORD_IN_FRAME, path=self.path, loc=dec.issue_loc)
            if dec.issue is not None:
                self.notes.add(Problem(
                    "recovered-tail",
                    f"the log ends before this row: {dec.issue.message} (dsh's read drops it and the {dec.dropped} rows after it; "
                    "no later turn/end commits them)",
                    Severity.WARNING, loc=dec.issue_loc))
            h = self.header or {}
            seeded = h.get("isSeeded") if self.version >= 2 and isinstance(h.get("isSeeded"), bool) else None
            seed = h.get("seedLength") if self.version <= 1 and self.header is not None else None
            dec.finish(seeded=seeded, seed_length=safe_int(seed) if is_count(seed) else None)

    @property
    def resumable(self) -> bool:
        """Whether the body is a plain JSONL one read straight from the file, not read yet (:meth:`resume_at` applies)."""
        return self._plain is not None and not self._consumed and self.info.container == Container.JSONL

    def resume_at(self, line: int, offset: int, notes: Problems, decoder: RowDecoder) -> bool:
        """Read the body from ``offset`` (the start of line ``line``) on, with a kept read's notes and decoder.

        The caller (:mod:`dshlog.read.resume`) vouches that the bytes before ``offset`` are
        those the kept read took; ``False`` (nothing changed) where the body cannot be
        continued there: it was read or peeked at past the point, or the point is not in
        the body.
        """
        if not self.resumable or self._plain is None or self._sample_from is None:
            return False
        start = self._sample_from  # just after the header line
        size = self._size()
        if line < 2 or not start <= offset or size is None or offset > size or (offset == start) != (line == 2):
            return False
        try:
            self._fh.seek(offset)
        except (OSError, ValueError):
            return False
        self._pushback = []
        self._plain = (self._plain[0], line, offset)
        self.notes = notes
        self.decoder = decoder
        return True

    def _in_complete_frame(self, loc: Location | None) -> bool:
        """Whether a row of a current zstd generation sits in a complete frame (not in the torn last one)."""
        if self.info.container != Container.ZSTD or self.version != CURRENT_VERSION or loc is None or loc.frame is None:
            return False
        torn = self.info.torn
        return torn is None or torn.frame != loc.frame

    def _plain_rows(self, line_no: int, offset: int, gate: RowGate | None = None) -> Iterator[tuple[list[dict[str, Any]], Any, bytes | None, Location]]:
        """The rest of a plain JSONL body, read from the file directly.

        What :func:`~dshlog.read.container.iter_lines` and the loop above do, fused: every
        row of every command passes here, and the Record object and generator layer
        per line were a tenth of reading a log of short rows.
        """
        decode = self.decoder.decode
        make_loc = _make_loc
        told = self.progress
        total = self._size() if told is not None else None
        tell_at = offset + PROGRESS_STEP if told is not None else -1
        for line in bounded_lines(self._fh):
            n = len(line)
            if 0 <= tell_at <= offset and told is not None:
                told(offset, total)
                tell_at = offset + PROGRESS_STEP
            if line[-1:] != b"\n":
                if n > LINE_LIMIT.max_bytes:
                    raise LINE_LIMIT.refusal(self.path, line_no, offset, n)
                self.info.torn = Torn(offset=offset, length=n, data=line[: 1 << 20])
                self.unread = (line_no, offset)  # a torn line is read again once it is whole
                offset += n
                self.info.decoded_bytes = offset
                return
            raw = line[:-1]
            loc = make_loc(line_no, offset, None, None)
            line_no += 1
            offset += n
            if gate is not None:
                head = gate.head(raw)
                if head is not None:
                    yield [head], _LAZY, raw, loc
                    continue
            try:
                obj = loads(raw)
            except JsonError:
                obj = self._parse_row(raw, loc)  # the error path words the problem
                if obj is _UNPARSABLE:
                    continue
            yield decode(obj, loc), obj, raw, loc
        self.unread = (line_no, offset)
        self.info.decoded_bytes = offset

    def _size(self) -> int | None:
        """The size of the file read (a stream's, when it is a regular file such as a spool)."""
        if self.info.size_on_disk is not None:
            return self.info.size_on_disk
        try:
            st = os.fstat(self._fh.fileno())
        except (OSError, ValueError, io.UnsupportedOperation):
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def _teller(self) -> Callable[[], None] | None:
        """What tells :attr:`progress` where the read is: the position of the file itself, which a
        forked zstd decoder shares (its pieces arrive ahead of the rows), and the file's size."""
        told = self.progress
        if told is None:
            return None
        try:
            fd = self._fh.fileno()
        except (OSError, ValueError, io.UnsupportedOperation):
            return None
        total = self._size()

        def tell() -> None:
            try:
                where = os.lseek(fd, 0, os.SEEK_CUR)
            except OSError:
                return
            told(where if total is None else min(where, total), total)

        return tell

    def _parse_row(self, raw: bytes, loc: Location) -> Any:
        """Parse one row; an unparsable row raises (strict), is held (dsh's recovering read) or is noted and skipped."""
        try:
            return loads(raw)
        except JsonError as exc:
            if exc.kind == "depth":  # strict or not: a limit, not a damaged row to skip or truncate
                raise _too_deep(exc, "committed event", self.path, loc) from None
            syntax = exc.kind == "syntax"
            if syntax and self.header is not None and loc.line is not None:
                # dsh's sentence counts event rows (the header is line 1); the location says the line
                msg = unparsable_row(self.version, CURRENT_VERSION, loc.line - 1)
            else:
                msg = _refusal(exc, "committed event", loc)
                if exc.kind != "utf-8":
                    msg = "corrupt session log: " + msg
        if self.strict and syntax and self.decoder.recoverable:
            # dsh's scanner holds it: fatal only when a later turn/end commits it
            self.decoder.unparsable(CorruptLog(msg, path=self.path, loc=loc), loc)
            return _UNPARSABLE
        if self.strict:
            raise CorruptLog(msg, path=self.path, loc=loc) from None
        self.notes.add(Problem("unparsable", msg, Severity.ERROR, loc=loc))
        return _UNPARSABLE

    # ------------------------------------------------------------------ views

    def stored(self) -> Iterator[EventRecord]:
        """The stored view: events of the stored version, each with its bytes and location.

        ``raw`` is the exact line when it encodes exactly this event (plain and zstd
        JSONL); packed rows are expanded into their ``assistant/chunk`` events.
        """
        records = self._stored()
        return guarded(records) if self.guard else records

    def stored_lines(self) -> Iterator[EventRecord | LazyRecord]:
        """The stored view for a consumer of lines: what :meth:`stored` gives, but a row the
        lazy reader admits (:mod:`dshlog.read.lazy`) is a :class:`LazyRecord`, parsed only
        when its ``event`` is asked for (``events --json`` prints the bytes, ``tail``
        parses the last few).  Notes, errors and their order are the exact reader's.
        """
        records = self._stored(self._gate())
        return guarded(records) if self.guard else records

    def counted(self) -> Iterator[Any]:
        """The events the counters of ``info`` and ``stats`` read (``model.summary.summarize``).

        :meth:`stored_runs`, except that a row the lazy reader admits comes as a dict of its
        ``type``, ``seq`` and ``time``, with ``data`` only for the types the counters read
        (``SUMMARY_DATA_TYPES``): through their view (``model.summary.DATA_VIEWS``), or,
        for the types without one (``request/header``, ``assistant/attempt``), read whole
        by the exact reader.
        """
        gate = self._gate(exact=SUMMARY_DATA_TYPES - DATA_VIEWS.keys(), views=DATA_VIEWS)
        if gate is None:
            return self.stored_runs()
        events = self._stored_runs(gate)
        return guarded(events) if self.guard else events

    def _gate(self, **kw: Any) -> RowGate | None:
        """The lazy reader for this body, where it applies: a v4 JSONL body (plain or zstd)
        after a header, read leniently (dsh's recovering read stays the exact reader's), in the
        fast mode (:mod:`dshlog.fastpaths`)."""
        if not fast() or self.version != CURRENT_VERSION or self.header is None or self.strict \
                or self.info.container not in (Container.JSONL, Container.ZSTD):
            return None
        return RowGate(self.decoder, **kw)

    def _stored(self, gate: RowGate | None = None) -> Iterator[Any]:
        for events, obj, raw, loc in self._rows(runs=False, gate=gate):
            if obj is _LAZY:
                yield LazyRecord(raw or b"", loc)
            elif raw is not None and len(events) == 1 and events[0] is obj:
                # the line is exactly this event (range-expanded sourceEventSeqs keep the physical form)
                yield EventRecord(obj, raw, loc)
            else:
                for ev in events:
                    yield EventRecord(ev, None, loc)

    def stored_runs(self) -> Iterator[Any]:
        """The stored view with each v0/v1 packed row kept whole as one :class:`PackedRun`.

        For consumers that can take a run whole (the migration chain, the counters):
        a v0 log then costs one object per packed row, not three dicts per delta.
        """
        events = self._stored_runs()
        return guarded(events) if self.guard else events

    def _stored_runs(self, gate: RowGate | None = None) -> Iterator[Any]:
        """Every row's events (``gate``: a row the lazy reader admits is its head, as :meth:`counted` says)."""
        for events, _obj, _raw, _loc in self._rows(runs=self.version <= 1, gate=gate):
            yield from events

    def v4(self, *, child_facts: list[dict[str, Any]] | None = None, runs: bool = True, allow_unknown: bool = False,
           restore: bool = True, share: SurfaceShare | None = None,
           told: Callable[[Problem], None] | None = None) -> V4View:
        """The v4 view: what dsh holds after opening the log (older logs migrated in memory).

        Nothing is read until the view is iterated; its :attr:`V4View.header` needs
        only the header.  ``child_facts`` are the facts the v3->v4 catalog completion
        needs (default: discovered in the persistence root around the file).
        ``runs=False`` feeds the chain every packed row expanded, the straightforward
        path the compact one (each row one :class:`PackedRun`, as dsh passes it) must
        equal; it exists for the tests that prove that.  ``allow_unknown``: the
        restore lets unknown event types without ``ignorable`` pass (``--allow-unknown``;
        dsh refuses them).  ``restore=False`` reads a strict log's rows as dsh does but
        leaves out the restore: only for a second reading of a log whose whole view this
        process has already taken, where dsh's decision is known (``surface --messages``
        reading its messages again).  ``share``: what the restore's fold keeps for a
        caller that takes the whole log's surface afterwards (:attr:`V4View.surface`,
        :class:`~dshlog.check.surface.SurfaceShare`).
        ``told``: given every problem the restore finds (warnings too), in order, for a
        caller that lists them rather than reading the events through the rules again.
        """
        if self.version > CURRENT_VERSION:
            raise UnsupportedVersion(newer_version(self.session_id, self.version, CURRENT_VERSION), path=self.path, loc=self.header_loc)
        return V4View(self, child_facts, runs, allow_unknown=allow_unknown, restore=restore, share=share,
                      told=told)

    @property
    def projection(self) -> bool:
        """Whether the body is a test-snapshot projection (rows without seq/time).

        Known before the body is read (the first row is peeked at) and after it.
        """
        if self.decoder.projection is not None:
            return self.decoder.projection
        return self._peek_projection()

    @property
    def session_id(self) -> str | None:
        sid = self.header.get("id") if self.header is not None else None
        if isinstance(sid, str):
            return sid
        if self.info.wrapped_sessions:
            return self.info.wrapped_sessions[0]
        return None

    def _migration_header(self) -> dict[str, Any]:
        """The stored header as the migration chain receives it (completed for snapshot fixtures)."""
        if self._mig_header is None and self.strict and self.decision is not None:
            self._mig_header = self.header  # admitted as it is: dsh completes nothing
        if self._mig_header is None:
            snapshot = self.snapshot  # peeks at the first row: a wrapped stream then knows its session id
            header = self.header if self.header is not None else self._synthetic_header()
            self._mig_header = self._complete_snapshot_header(header) if snapshot else header
        return self._mig_header

    @property
    def snapshot(self) -> bool:
        """A dsh test snapshot: rows without seq/time, or ``{{...}}`` placeholders standing in for values.

        Such files are normalised copies of real logs; rules that only their
        normalisation breaks are reported as warnings, never as corruption.
        """
        if self._snapshot is None:
            sample = (self.header_raw or b"") + (self._sample(1 << 20) if self.info.container != Container.BEHAVIOR_JSON else b"")
            self._snapshot = self.projection or placeholder_bytes_search(sample) or (
                self.header is not None and any(is_placeholder(v) for v in self.header.values())
            )
        return self._snapshot

    def _complete_snapshot_header(self, header: dict[str, Any]) -> dict[str, Any]:
        """Fill header keys a snapshot fixture left out, so its body can still be migrated (with notes)."""
        missing: dict[str, Any] = {}
        if "version" not in header:
            missing["version"] = self.version
        if "delegationDepth" not in header:
            missing["delegationDepth"] = 0
        if self.version >= 2 and "isSeeded" not in header:
            missing["isSeeded"] = False
        if not missing:
            return header
        self.notes.add(
            Problem("snapshot-header", f"snapshot header lacks {', '.join(missing)}; assuming {', '.join(f'{k}={v}' for k, v in missing.items())}", Severity.WARNING, loc=self.header_loc)
        )
        out = {"type": header.get("type", "session")}
        if "version" in missing:
            out["version"] = missing.pop("version")
        out.update((k, v) for k, v in header.items() if k != "type")
        out.update(missing)
        return out

    def _peek_projection(self) -> bool:
        """Whether the body is a projection, before it is read (peeks at the first row)."""
        if self._consumed:
            return False
        first: Record | None
        if self._pushback:
            first = self._pushback[0]  # peeked before
        else:
            first = next(self._body, None)
            if first is None:
                self._plain = None  # the line generator has ended (and recorded any torn tail)
                return False
            if self._plain is not None and self._body is self._plain[0] and first.raw is not None \
                    and first.line is not None and first.offset is not None:
                self._pushback.append(first)
                self._plain = (self._plain[0], first.line + 1, first.offset + len(first.raw) + 1)
            else:
                self._body = _chain_first(first, self._body)
        obj = first.obj
        if first.raw is not None:
            try:
                obj = loads(first.raw)
            except JsonError:
                return False
        if not isinstance(obj, dict):
            return False
        if self.version <= 1 and isinstance(obj.get("type"), str) and obj["type"] in PACKED_TYPES:
            return "seq0" not in obj and "time0" not in obj
        return "seq" not in obj and "time" not in obj

    def _synthetic_header(self) -> dict[str, Any]:
        sid = self.session_id or "unknown"
        h: dict[str, Any] = {"type": "session", "version": self.version, "id": sid, "createdAt": 0}
        if self.version >= 2:
            h["isSeeded"] = False
        h["delegationDepth"] = 0
        return h

    def _discover_children(self) -> list[dict[str, Any]]:
        """Child facts for v3->v4 catalog completion (FORMAT.md 4.5.7), or [] with a note."""
        if self.version >= CURRENT_VERSION:
            return []
        root = persistence_root(self.path)
        if root is not None:
            return discover_child_facts(root, self.session_id or "", open_header=child_log_header, open_events=child_log_events)
        self.notes.add(Problem("children", "no persistence root around this file: assuming the session has no child sessions", Severity.INFO))
        return []

    def sibling(self, path: str) -> SessionLog:
        """Another file opened leniently by this reader, with this log's parallelism and progress (a proven successor)."""
        return SessionLog(self.source.at(path), strict=False, progress=self.progress)

    def close(self) -> None:
        try:
            if self._fh is not sys.stdin.buffer:
                self._fh.close()
        finally:
            if self._spool is not None:
                self._spool.close()

    def __enter__(self) -> SessionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _chain_all(first: list[Record], rest: Iterator[Record]) -> Iterator[Record]:
    yield from first
    yield from rest


def _chain_first(first: Record, rest: Iterator[Record]) -> Iterator[Record]:
    yield first
    yield from rest


def child_log_header(path: Path) -> dict[str, Any] | None:
    """A child session's header, or ``None`` when it cannot be read (what :func:`~dshlog.read.children.discover_child_facts` asks)."""
    try:
        with SessionLog(Source(str(path)), strict=False) as s:
            return s.header
    except DshlogError:
        return None


class _ChildView:
    """A child session's v4 events (read once, the file closed at the end).

    After iteration ``inherited_cut`` is what the migration chain reported for a
    historical child (``None`` for a v4 child): the events are migrated once, here.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.inherited_cut: int | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        with SessionLog(Source(str(self.path)), strict=False) as s:
            events = s.v4(child_facts=[])
            yield from events
            self.inherited_cut = getattr(events, "inherited_cut", None)


def child_log_events(path: Path) -> _ChildView:
    """A child session's v4 events, read when iterated (what :func:`~dshlog.read.children.discover_child_facts` asks)."""
    return _ChildView(path)


def open_log(source: Source | Target, *, strict: bool = True, guard: bool = False, progress: Position | None = None,
             cache: str | None = None) -> SessionLog:
    """Open a session log: a :class:`~dshlog.read.source.Source`, or a path read with the defaults
    (see :class:`SessionLog` for the keywords)."""
    return SessionLog(Source.of(source), strict=strict, guard=guard, progress=progress, cache=cache)


def is_dsh_refusal(exc: BaseException) -> bool:
    """Whether ``exc`` is dsh refusing a log (its header, a migration, the v4 restore, a damaged committed row).

    A limit of dshlog's own (:class:`~dshlog.errors.BeyondLimit`), I/O and usage
    errors are not: a reader for people shows a log dsh refuses, never one it
    could not read.
    """
    return isinstance(exc, (CorruptLog, UnsupportedVersion)) and not isinstance(exc, BeyondLimit)


def dsh_refusal(open_strict: Callable[[], SessionLog]) -> DshlogError | None:
    """dsh's decision on a whole log: ``None`` when dsh opens it, else its refusal.

    ``open_strict`` opens the log as dsh does (``strict=True``: its header is
    decided there).  One pass that keeps nothing (the rows read as dsh's
    recovering read reads them, the migration and the v4 restore of
    :class:`V4View`), so a reader for people knows dsh's decision before it shows
    its first line.  The refusal is dsh's text, located; any other error is raised.
    """
    try:
        with open_strict() as log:
            log.v4().finish()
    except DshlogError as exc:
        if is_dsh_refusal(exc):
            return exc
        raise
    return None
