"""The input of a session log: its container opened, its header line taken, its rows read.

:class:`LogInput` is the first of a log's three concerns (:mod:`dshlog.read.session`
holds the views, :mod:`dshlog.read.header` the header decision): it opens a
generation file, a JSON array or document, a wrapped event stream or standard input
(:mod:`dshlog.read.container` frames the bytes), takes line 1 as the header where
there is one, has the format version decided (:func:`~dshlog.read.header.decide_version`),
and hands out the body's rows once, decoded for that version
(:class:`~dshlog.read.rows.RowDecoder`): each as ``(events, parsed row, row bytes,
location)``.  A plain JSONL body is read straight from the file (a fast path); where
dsh's recovering read holds an unparsable row, the decoder keeps it until the end of
the rows decides.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import sys
from typing import IO, Any, Self
from collections.abc import Callable, Iterator

from ..fastpaths import fast
from ..errors import BeyondLimit, CorruptLog, InternalError, Location, NotASessionLog, UsageError
from ..check.problems import Problem, Problems, Severity
from .lazy import RowGate
from .rows import RowDecoder
from .source import Source
from ..protocol.jsjson import JsonError, dumps, iter_array, loads, top_level_keys
from ..protocol.layout import parse_generation
from ..protocol.texts import EMPTY_LOG, EMPTY_ZSTD_LOG, TORN_RECORD_IN_FRAME, invalid_frame_magic, unparsable_row
from ..protocol.values import is_count, safe_int
from ..protocol.vocabulary import CURRENT_VERSION, PACKED_TYPES
from .header import HeaderDecision, decide_version, detect_headerless_version, is_damaged_header
from .container import (
    LINE_LIMIT,
    PROGRESS_STEP,
    Container,
    Position,
    Record,
    SourceInfo,
    Torn,
    _make_loc,
    beyond_limit,
    bounded_lines,
    chain_first,
    iter_json_array,
    iter_lines,
    iter_zstd_lines,
    open_binary,
    torn_text,
    zstd_prefix,
    sniff,
)


UNPARSABLE = object()  # _parse_row's answer for a row that was noted and skipped
LAZY_ROW = object()  # the "parsed row" of a row the lazy gate admitted unparsed (read.lazy)


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
    return BeyondLimit(beyond_limit(f"{what}{line}", exc.detail), path=path, loc=loc)


def _parse(raw: bytes, path: str, loc: Location, what: str = "committed event") -> Any:
    try:
        return loads(raw)
    except JsonError as exc:
        if exc.kind == "depth":
            raise _too_deep(exc, what, path, loc) from None
        raise CorruptLog(_refusal(exc, what, loc), path=path, loc=loc) from None


class LogInput:
    """An opened input: the container sniffed, the header line read and decided, the body not yet read."""

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
            if isinstance(obj, dict) and (obj.get("type") == "session" or is_damaged_header(obj)):
                self.header, self.header_raw, self.header_loc = obj, first.raw, first.loc()
                self._body = lines
                if c == Container.JSONL and fast() and first.raw is not None and first.line is not None and first.offset is not None:
                    self._plain = (lines, first.line + 1, first.offset + len(first.raw) + 1)
            elif isinstance(obj, dict) and (obj.get("type") == "session_event" or ("method" in obj and "params" in obj)):
                # a wrapped stream inside a zstd container
                kind = Container.STREAM_JSON if obj.get("type") == "session_event" else Container.JSONRPC
                self._body = self._unwrap(chain_first(first, lines), kind)
                self.version = format_version if format_version is not None else detect_headerless_version(self._sample())
                self.notes.add(Problem("wrapped", f"events unwrapped from a compressed {kind} stream (no header)", Severity.INFO))
                return self._make_decoder()
            else:
                # header-less JSONL of events (seen in fixtures): keep the first row as a body row
                self._body = chain_first(first, lines)
                self.notes.add(Problem("no-header", "the log has no session header line", Severity.WARNING, loc=first.loc()))
            self.version = self._decide_version(head, format_version)
            if c == Container.JSONL and self._fh.seekable():
                # a later sample (the snapshot test) must see the same bytes as one taken now, not
                # whatever is left after the body was read: a zstd sample always starts at the top
                self._sample_from = self._fh.tell()
        elif c in (Container.STREAM_JSON, Container.JSONRPC):
            self._body = self._unwrap(iter_lines(self._fh, self.info), c)
            self.version = format_version if format_version is not None else detect_headerless_version(self._sample())
            self.notes.add(Problem("wrapped", f"events unwrapped from a {c} stream (no header)", Severity.INFO))
        elif c == Container.ARRAY:
            if format_version is None:
                format_version = detect_headerless_version(self._sample())
            self._body = iter_json_array(self._fh, self.info)
            self.version = format_version
            self.notes.add(Problem("no-header", "JSON array of events: no session header", Severity.INFO))
        elif c == Container.RESULT_JSON:
            v = format_version if format_version is not None else detect_headerless_version(self._sample())
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
        if not named and not wrapped and not (isinstance(obj, dict) and (is_damaged_header(obj) or any(k in obj for k in ("type", "seq", "data")))):
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
        self.version = self._decide_version(sample, format_version)

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

    def _decide_version(self, sample: bytes, format_version: int | None) -> int:
        """The rows' format version, with dsh's decision on the header (:func:`~dshlog.read.header.decide_version`)."""
        version, self.decision = decide_version(self.header, path=self.path, loc=self.header_loc,
                                                container=self.info.container, strict=self.strict, notes=self.notes,
                                                sample=self._sample, head=sample, format_version=format_version)
        return version

    # ------------------------------------------------------------------ reading

    def _take(self) -> Iterator[Record]:
        if self._consumed:
            raise InternalError("a log's body can be read once; open it again")
        self._consumed = True
        return self._body

    def _rows(self, *, runs: bool, gate: RowGate | None = None) -> Iterator[tuple[list[Any], Any, bytes | None, Location]]:
        """(decoded events, parsed row, row bytes, location) per physical row, one pass.

        ``runs``: the decoder keeps each v0/v1 packed row as one :class:`PackedRun`.
        ``gate``: the lazy reader's decision first (:mod:`dshlog.read.lazy`); a row it
        admits comes as ``([its head], LAZY_ROW, bytes, location)``, unparsed.
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
                    yield [head], LAZY_ROW, rec.raw, loc
                    continue
            obj = rec.obj if rec.raw is None else self._parse_row(rec.raw, loc)
            if obj is not UNPARSABLE:
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
                    yield [head], LAZY_ROW, raw, loc
                    continue
            try:
                obj = loads(raw)
            except JsonError:
                obj = self._parse_row(raw, loc)  # the error path words the problem
                if obj is UNPARSABLE:
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
            return UNPARSABLE
        if self.strict:
            raise CorruptLog(msg, path=self.path, loc=loc) from None
        self.notes.add(Problem("unparsable", msg, Severity.ERROR, loc=loc))
        return UNPARSABLE

    @property
    def projection(self) -> bool:
        """Whether the body is a test-snapshot projection (rows without seq/time).

        Known before the body is read (the first row is peeked at) and after it.
        """
        if self.decoder.projection is not None:
            return self.decoder.projection
        return self._peek_projection()

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
                self._body = chain_first(first, self._body)
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

    def close(self) -> None:
        try:
            if self._fh is not sys.stdin.buffer:
                self._fh.close()
        finally:
            if self._spool is not None:
                self._spool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _chain_all(first: list[Record], rest: Iterator[Record]) -> Iterator[Record]:
    yield from first
    yield from rest

