"""A historical log's published v4 successor, read instead of migrating the log again where it is proven.

Every read of a v0..v3 log migrates it in memory (:class:`~dshlog.read.view.V4View`),
and the chain costs more than the read itself.  dsh (and ``dshlog migrate``) publishes
that migration beside the old file (``session.v4.jsonl`` next to ``session.jsonl``:
:func:`~dshlog.protocol.layout.successor_name`), but a name proves nothing: a successor
may come from another build's rules, from child sessions that have changed since, or
have been edited or replaced.  So a view reads the successor instead only when the
verified cache (:mod:`dshlog.read.cache`, the kind :data:`SUCCESSOR`) holds a proof that
a read of this very file made:

* a view that migrates an old file while a plain successor lies beside it digests the
  migration as dsh's writer lays it out (the header, then each event, as
  :func:`~dshlog.protocol.jsjson.dumps` and a newline: what ``migrate`` publishes) while
  it yields it (:class:`Witness`).  When the whole log has gone by, nothing having been
  noted about its body, and the successor holds exactly those bytes (its size, then a
  digest of it), the proof is kept: the old file's stamp (the entry's own), the
  successor's stamp, and what the chain reported besides the events (``inherited_cut``);
* the entry's key holds what the migration depends on besides the file: the read's
  strictness, the stored version, the system-prompt plugins and the child sessions'
  facts (digested; the view discovers them anyway);
* a later view of the same old file (the same stamp and key) whose successor still has
  the kept stamp reads the successor's rows (:func:`proven`); anything else migrates as
  before, and may prove again.

What a read of the old file says about its own lines (a torn tail, a skipped or recovered
row: notes naming its lines and offsets) cannot come from the successor, so a read that
noted anything about the body proves nothing, and such a file is always migrated; nor does a
migration with a line the reader's limit refuses (one v4 line may hold many old rows).  Only a
plain successor of a named generation file is proven: not a compressed one, not a snapshot,
not standard input or a wrapped stream.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import msgspec

from ..protocol.jsjson import dumps
from ..protocol.layout import parse_generation, successor_name
from ..protocol.vocabulary import CURRENT_VERSION
from .cache import Kind, ResultCache, Stamp, open_cache, stamp_of
from .container import LINE_LIMIT

__all__ = ["SUCCESSOR", "Claim", "Proof", "Witness", "claim", "proven", "same_file"]

_CHUNK = 1 << 20


class Proof(msgspec.Struct, frozen=True):
    """A successor proven to be the migration of an old file: where it is, its stamp then, the chain's cut."""

    path: str
    stamp: Stamp
    inherited_cut: int | None


def _record(p: Proof) -> list[Any]:
    return [p.path, list(p.stamp.row()), p.inherited_cut]


def _proof_of(rec: list[Any]) -> Proof:
    """:func:`_record` back; raises on anything it did not write."""
    path, row, cut = rec
    if not isinstance(path, str) or not isinstance(row, list) or not (cut is None or type(cut) is int):
        raise TypeError("not a successor's proof")
    dev, ino, size, mtime_ns, ctime_ns, digest = row
    if not all(type(v) is int for v in (dev, ino, size, mtime_ns, ctime_ns)) or not isinstance(digest, bytes):
        raise TypeError("not a stamp")
    return Proof(path, Stamp(dev, ino, size, mtime_ns, ctime_ns, digest), cut)


#: Proven successors in the cache (bump ``version`` when :class:`Proof` or the digested layout changes).
SUCCESSOR = Kind("successor", 1, _record, _proof_of)


def same_file(stamp: Stamp, fd: int) -> bool:
    """Whether the open file ``fd`` is the one ``stamp`` was taken of (and unchanged since, as dsh judges a file)."""
    try:
        st = os.fstat(fd)
    except OSError:
        return False
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) == stamp.row()[:5]


class Claim(msgspec.Struct, frozen=True):
    """A view's question: the old file (as given) and its stamp, the entry's key, the successor beside it."""

    cache: ResultCache
    path: str
    key: str
    stamp: Stamp
    successor: str


def claim(cache_dir: str | None, path: str, fd: int, *, strict: bool, version: int, plugins: tuple[str, ...],
          facts: list[dict[str, Any]]) -> Claim | None:
    """What a view of the old generation file ``path`` (open as ``fd``) may prove or use, or ``None``.

    ``None`` (one ``stat``, no cache opened) when no plain successor lies beside it,
    and when the cache cannot be used or the file at ``path`` is not the open one.
    """
    name = os.path.basename(path)
    g = parse_generation(name)
    if cache_dir is None or g is None or g.compressed or g.version >= CURRENT_VERSION:
        return None
    successor = os.path.join(os.path.dirname(path), successor_name(name))
    if not os.path.isfile(successor):
        return None
    try:
        facts_digest = hashlib.blake2b(dumps(facts), digest_size=16).hexdigest()
    except (TypeError, ValueError):
        return None
    cache = open_cache(cache_dir)
    stamp = stamp_of(path)
    if cache is None or stamp is None or not same_file(stamp, fd):
        return None
    key = f"{path}\0{strict!r},{version},{plugins!r}\0{facts_digest}"
    return Claim(cache, path, key, stamp, successor)


def proven(c: Claim) -> Proof | None:
    """The proof kept for this claim whose successor is still the file proven, or ``None``."""
    proof = c.cache.get(SUCCESSOR, c.key, c.stamp)
    if not isinstance(proof, Proof) or proof.path != c.successor or stamp_of(proof.path) != proof.stamp:
        return None
    return proof


class Witness:
    """The digest of a migration as it is yielded; :meth:`close` keeps the proof when the successor is those bytes."""

    def __init__(self, c: Claim) -> None:
        self._claim: Claim | None = c
        self._hash = hashlib.blake2b(digest_size=16)
        self._size = 0

    def line(self, value: Any) -> None:
        """The header or the next event, as the writer lays it out."""
        if self._claim is None:
            return
        try:
            text = dumps(value)
        except (TypeError, ValueError):  # nothing a writer could publish: nothing to prove
            self._claim = None
            return
        if len(text) + 1 > LINE_LIMIT.max_bytes:
            # the migration holds it, but the successor's reader would refuse the line: never read it instead
            self._claim = None
            return
        self._hash.update(text)
        self._hash.update(b"\n")
        self._size += len(text) + 1

    def close(self, inherited_cut: int | None) -> None:
        """After the whole migration went by, nothing noted about the body: compare, and keep the proof if equal.

        The old file must still have its stamp, and the successor the same stamp before
        and after its bytes are digested, so that a file changed meanwhile proves nothing.
        """
        c = self._claim
        self._claim = None
        if c is None or stamp_of(c.path) != c.stamp:
            return
        before = stamp_of(c.successor)
        if before is None or before.size != self._size or _digest(c.successor, before) != self._hash.digest():
            return
        if stamp_of(c.successor) != before:
            return
        c.cache.put(SUCCESSOR, c.key, c.stamp, Proof(c.successor, before, inherited_cut))
        c.cache.flush()


def _digest(path: str, stamp: Stamp) -> bytes | None:
    """The digest :class:`Witness` makes, of the file at ``path`` when it is the one ``stamp`` was taken of."""
    h = hashlib.blake2b(digest_size=16)
    try:
        with open(path, "rb", buffering=0) as fh:
            if not same_file(stamp, fh.fileno()):
                return None
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
    except OSError:
        return None
    return h.digest()
