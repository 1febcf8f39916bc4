"""Positioned reads of a session log: an index of its events, each event parsed when it is asked for.

An interactive browser must open a 120 MB log at once and never hold it.  Parsing
every event up front costs seconds and hundreds of megabytes; what a browser needs
before the first screen is only *where* each event is, and a few cheap facts per
event to filter on (type, seq, turn).  :class:`EventIndex` gets those from one scan
of the file through ``mmap``: the line breaks, and the envelope's leading
``{"type":"...","seq":N`` (the key order every v4 writer uses; a line in another
order is parsed whole instead).  Events are parsed from their byte range when shown,
and search runs over the mapped bytes in C (``re`` on the map) without parsing.

Only a plain v4 JSONL file can be indexed in place.  Any other log (older formats,
zstd, JSON documents, test snapshots) is first written as v4 JSONL to a temporary
file through the one reading path (``SessionLog.v4()``: migration in memory, one
event at a time), and that file is indexed; memory stays flat, the cost is one
conversion pass.

The index is lenient, as a reader for people should be: a line that does not parse
is kept, and shown as damaged when asked for; ``validate`` judges a log.
"""

from __future__ import annotations

import mmap
import os
import re
import tempfile
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import CorruptLog, DshlogError
from ..protocol.jsjson import JsonError, dumps, loads
from ..protocol.layout import parse_generation
from ..protocol.vocabulary import CURRENT_VERSION
from .container import open_regular
from .session import is_dsh_refusal, open_log
from .source import Source, Target

__all__ = ["DAMAGED", "EventIndex", "Match", "open_index"]

_ENVELOPE = re.compile(rb'\{"type":"([^"\\]{1,100})","seq":(\d{1,16})[,}]')
DAMAGED = "(damaged)"  # the type shown for a line that does not parse


class Match:
    """A search hit: the event it is in and where in the file."""

    __slots__ = ("index", "offset")

    def __init__(self, index: int, offset: int) -> None:
        self.index = index
        self.offset = offset


#: How many bytes a scan or a search passes over before it gives their pages back.
_WINDOW = 32 << 20
_DONTNEED: int | None = getattr(mmap, "MADV_DONTNEED", None)


class EventIndex:
    """Where each event of a v4 JSONL file is, its type, seq and turn; events parsed on demand.

    ``turn_of[i]`` is the ordinal of the turn event ``i`` belongs to (0 before the
    first ``turn/start``); :attr:`turns` holds, per ordinal, the index of its
    ``turn/start`` and the turn number the log gives it.
    """

    def __init__(self, path: Path, *, source: str | None = None, converted: bool = False, stored_version: int | None = None,
                 refusal: DshlogError | None = None, decided: bool = True) -> None:
        self.path = Path(path)
        self.source = source or str(path)  # what the user opened
        self.converted = converted
        self.stored_version = stored_version if stored_version is not None else CURRENT_VERSION
        #: dsh's refusal of the log (its stored rows are what is indexed then); ``decided`` is false for a v4
        #: file indexed in place, whose decision needs a pass of its own (the browser takes it in the background)
        self.refusal = refusal
        self.decided = decided
        self._fh: BinaryIO = open(self.path, "rb")  # noqa: SIM115 - held for the index's life, closed by close()
        size = os.fstat(self._fh.fileno()).st_size
        if size == 0:
            self._fh.close()
            raise CorruptLog("empty session log", path=self.source)
        self._map = mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ)
        self.size = size
        self.offsets = array("q")
        self.ends = array("q")
        self.seqs = array("q")
        self.types = array("H")
        self.turn_of = array("I")
        self.type_names: list[str] = []
        self.turns: list[tuple[int, Any]] = []  # (event index of turn/start, turn number)
        self.header: dict[str, Any] | None = None
        self._scan()

    def _release(self, lo: int, hi: int) -> None:
        """Give back the mapped pages of bytes ``lo..hi`` that a scan has passed over.

        They are the page cache's, and a shown event faults in its own pages again;
        without this every page a scan or a search touched stays resident in the
        process, so a 120 MB log showed as 150 MB resident although nothing holds it.
        """
        start = lo - lo % mmap.PAGESIZE
        if hi > start and _DONTNEED is not None:
            self._map.madvise(_DONTNEED, start, hi - start)

    # ------------------------------------------------------------------ building
    def _type_code(self, name: str, codes: dict[str, int]) -> int:
        code = codes.get(name)
        if code is None:
            code = codes[name] = len(self.type_names)
            self.type_names.append(name)
        return code

    def _scan(self) -> None:
        m = self._map
        find = m.find
        match = _ENVELOPE.match
        codes: dict[str, int] = {}
        offsets, ends, seqs, types, turn_of = self.offsets, self.ends, self.seqs, self.types, self.turn_of
        first_nl = find(b"\n")
        first = m[: first_nl if first_nl >= 0 else self.size]
        try:
            head = loads(first)
        except JsonError:
            head = None
        pos = 0
        if isinstance(head, dict) and head.get("type") == "session":
            self.header = head
            pos = first_nl + 1 if first_nl >= 0 else self.size
        turn = 0
        turn_start = self._type_code("turn/start", codes)
        size = self.size
        released = 0
        while pos < size:
            if pos - released >= _WINDOW:
                self._release(released, pos - pos % mmap.PAGESIZE)
                released = pos - pos % mmap.PAGESIZE
            nl = find(b"\n", pos)
            end = nl if nl >= 0 else size
            if end > pos:
                hit = match(m, pos, min(end, pos + 160))
                if hit is not None:
                    code = codes.get(hit.group(1).decode("utf-8", "replace"))
                    if code is None:
                        code = self._type_code(hit.group(1).decode("utf-8", "replace"), codes)
                    seq = int(hit.group(2))
                else:
                    code, seq = self._slow(m[pos:end], codes, len(offsets))
                if code == turn_start:
                    turn += 1
                    self.turns.append((len(offsets), self._turn_number(m[pos:end], turn)))
                offsets.append(pos)
                ends.append(end)
                seqs.append(seq)
                types.append(code)
                turn_of.append(turn)
            pos = end + 1
        self._release(released, size)

    def _slow(self, raw: bytes, codes: dict[str, int], position: int) -> tuple[int, int]:
        try:
            obj = loads(raw)
        except JsonError:
            return self._type_code(DAMAGED, codes), -1
        t = obj.get("type") if isinstance(obj, dict) else None
        seq = obj.get("seq") if isinstance(obj, dict) else None
        return self._type_code(t if isinstance(t, str) else DAMAGED, codes), seq if type(seq) is int else position

    @staticmethod
    def _turn_number(raw: bytes, ordinal: int) -> Any:
        try:
            obj = loads(raw)
        except JsonError:
            return ordinal
        data = obj.get("data") if isinstance(obj, dict) else None
        return data.get("turn", ordinal) if isinstance(data, dict) else ordinal

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        return len(self.offsets)

    def raw(self, i: int) -> bytes:
        """The exact line of event ``i`` (no newline)."""
        return self._map[self.offsets[i] : self.ends[i]]

    def event(self, i: int) -> dict[str, Any]:
        """Event ``i`` parsed; a damaged line is ``{"type": "(damaged)", "raw": ...}``."""
        raw = self.raw(i)
        try:
            obj = loads(raw)
        except JsonError as exc:
            return {"type": DAMAGED, "seq": None, "error": str(exc), "raw": raw[:2000].decode("utf-8", "replace")}
        return obj if isinstance(obj, dict) else {"type": DAMAGED, "seq": None, "raw": raw[:2000].decode("utf-8", "replace")}

    def events(self, start: int = 0, stop: int | None = None) -> Iterator[dict[str, Any]]:
        """Events ``start`` up to ``stop`` (exclusive), parsed one at a time."""
        for i in range(start, len(self) if stop is None else min(stop, len(self))):
            yield self.event(i)

    def type_of(self, i: int) -> str:
        return self.type_names[self.types[i]]

    def index_of_seq(self, seq: int) -> int | None:
        """The event with this seq (seqs are ascending in a v4 log; a damaged line is skipped over)."""
        lo, hi = 0, len(self) - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            s = self.seqs[mid]
            if s == seq:
                return mid
            if s < seq:
                lo = mid + 1
            else:
                hi = mid - 1
        for i, s in enumerate(self.seqs):  # not ascending (a damaged or odd log): look everywhere
            if s == seq:
                return i
        return None

    def turn_range(self, ordinal: int) -> tuple[int, int]:
        """Event indexes ``[start, stop)`` of turn ``ordinal`` (0: what comes before the first turn)."""
        if ordinal <= 0:
            return 0, self.turns[0][0] if self.turns else len(self)
        start = self.turns[ordinal - 1][0]
        stop = self.turns[ordinal][0] if ordinal < len(self.turns) else len(self)
        return start, stop

    def turn_ordinal(self, number: Any) -> int | None:
        """The ordinal of the turn the log numbers ``number`` (the first one when a number repeats)."""
        for k, (_, n) in enumerate(self.turns, start=1):
            if n == number:
                return k
        return None

    def at_offset(self, offset: int) -> int:
        """The event whose line holds byte ``offset``."""
        return max(0, bisect_right(self.offsets, offset) - 1)

    def find(self, needle: str, start: int, *, backward: bool = False) -> int | None:
        """The next event after (or before) event ``start`` whose line holds ``needle``, wrapping around.

        Smart case: a needle with a capital letter matches exactly; an all-lowercase
        one also matches its capitalised and upper-case forms (``error``, ``Error``,
        ``ERROR``).  Each form is one ``memmem`` over the mapped file, so a search
        of 120 MB takes tens of milliseconds; a regex would take seconds.  The line
        is searched as stored: a quote or a newline in a text is escaped there.
        """
        if not needle or not len(self):
            return None
        forms = {needle} if needle != needle.lower() else {needle, needle.capitalize(), needle.upper()}
        keys = [f.encode("utf-8") for f in forms]
        here = start if 0 <= start < len(self) else None
        body = self.offsets[0]  # the header line is not an event
        if not backward:
            begin = self.ends[here] if here is not None else body
            hit = self._first(keys, begin, self.size)
            if hit is None:
                hit = self._first(keys, body, begin)
        else:
            stop = self.offsets[here] if here is not None else self.size
            hit = self._last(keys, body, stop)
            if hit is None:
                hit = self._last(keys, stop, self.size)
        return self.at_offset(hit) if hit is not None else None

    def _windows(self, lo: int, hi: int, *, backward: bool = False) -> Iterator[tuple[int, int]]:
        """``lo..hi`` as windows of :data:`_WINDOW` bytes (start, end), first to last or last to first."""
        starts = list(range(lo, hi, _WINDOW)) or [lo]
        for a in (reversed(starts) if backward else starts):
            yield a, min(hi, a + _WINDOW)

    def _first(self, keys: list[bytes], lo: int, hi: int) -> int | None:
        """The first offset in ``lo..hi`` where one of ``keys`` starts (and ends by ``hi``)."""
        reach = max(len(k) for k in keys) - 1  # a match starting in a window may end in the next
        for a, b in self._windows(lo, hi):
            hits = [h for h in (self._map.find(k, a, min(hi, b + reach)) for k in keys) if 0 <= h < b]
            self._release(a, b)
            if hits:
                return min(hits)
        return None

    def _last(self, keys: list[bytes], lo: int, hi: int) -> int | None:
        """The last offset in ``lo..hi`` where one of ``keys`` starts (and ends by ``hi``)."""
        reach = max(len(k) for k in keys) - 1
        for a, b in self._windows(lo, hi, backward=True):
            hits = [h for h in (self._map.rfind(k, a, min(hi, b + reach)) for k in keys) if 0 <= h < b]
            self._release(a, b)
            if hits:
                return max(hits)
        return None

    def close(self) -> None:
        self._map.close()
        self._fh.close()
        if self.converted:
            try:
                os.unlink(self.path)
            except OSError:
                pass

    def __enter__(self) -> EventIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _plain_v4(path: Path) -> bool:
    """Whether ``path`` is a v4 JSONL file that can be indexed in place."""
    gen = parse_generation(path.name)
    if gen is not None:
        return gen.version == CURRENT_VERSION and not gen.compressed
    try:
        with open_regular(path) as fh:
            first = fh.readline(1 << 20)
    except (OSError, DshlogError):
        return False
    try:
        head = loads(first)
    except JsonError:
        return False
    return isinstance(head, dict) and head.get("type") == "session" and head.get("version") == CURRENT_VERSION


def open_index(target: Source | Target, *, tmpdir: str | None = None) -> EventIndex:
    """An index over the log at ``target`` (file or session directory); older or packed logs are converted first.

    A browser shows what a log holds, a log dsh refuses too: its stored rows, read
    as far as they can be read, are what is indexed then (converted as they are,
    whatever their version), and :attr:`EventIndex.refusal` is dsh's refusal.  A
    plain v4 file is indexed in place before dsh's decision on it is known
    (:attr:`EventIndex.decided` is false; :func:`~dshlog.read.session.dsh_refusal`
    takes it), so a large log opens at once.
    ``target``: a path, or a :class:`~dshlog.read.source.Source` (its plugins name dsh's
    system-prompt producers for the migration of an older log).
    """
    try:
        with open_log(target) as log:
            path = Path(log.path)
            if path.is_file() and _plain_v4(path) and not log.projection:
                return EventIndex(path, source=log.path, stored_version=log.version, decided=False)
            view = log.v4()
            return _converted(log.path, log.version, view.header, iter(view), tmpdir)
    except DshlogError as exc:
        if not is_dsh_refusal(exc):
            raise
        refusal = exc
    with open_log(target, strict=False) as log:
        return _converted(log.path, log.version, log.header, (r.event for r in log.stored()), tmpdir, refusal)


def _converted(source: str, version: int, header: dict[str, Any] | None, events: Iterator[dict[str, Any]],
               tmpdir: str | None, refusal: DshlogError | None = None) -> EventIndex:
    """An index over ``events`` written as JSONL to a temporary file (removed when the index closes)."""
    fd, name = tempfile.mkstemp(prefix="dshlog-browse-", suffix=".v4.jsonl", dir=tmpdir)
    try:
        with os.fdopen(fd, "wb") as out:
            if header is not None:
                out.write(dumps(header) + b"\n")
            for ev in events:
                out.write(dumps(ev) + b"\n")
        return EventIndex(Path(name), source=source, converted=True, stored_version=version, refusal=refusal)
    except BaseException:
        os.unlink(name)
        raise
