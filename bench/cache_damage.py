"""Ways to damage dshlog's cache database: the cache's tests and the fuzzer's cache mode share them.

A reading command must answer exactly as it does without a cache, however its cache
was damaged (``tests/test_cache.py``; ``bench/fuzz.py --cache-mode``).  Each damage
(:data:`DAMAGES`) takes the database file of a cache no process holds open, and a
``random.Random`` for the kinds that draw.  :func:`settle` first writes the
write-ahead log into the file (a command that ended without closing its connection
leaves its last writes there), so that the damage hits what the next run reads.

What a damaged *log* does to the entries made from it (a stale entry) is the
caller's: it changes the log, not the database.
"""

from __future__ import annotations

import os
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path

__all__ = ["DAMAGES", "RANDOM", "damage", "settle"]


def settle(db: Path) -> None:
    """Write the write-ahead log into ``db`` and remove the journals: the file alone is the cache."""
    if db.is_file():
        try:
            c = sqlite3.connect(db)
            try:
                c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                c.close()
        except sqlite3.Error:  # not a database any more: the file is what is left
            pass
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def _sql(db: Path, *statements: str) -> None:
    c = sqlite3.connect(db)
    try:
        for s in statements:
            c.execute(s)
        c.commit()
    finally:
        c.close()


def overwrite_bytes(db: Path, rng: random.Random) -> None:
    """1, 4 or 32 bytes anywhere in the file overwritten with random values."""
    data = bytearray(db.read_bytes())
    for _ in range(rng.choice([1, 4, 32])):
        i = rng.randrange(len(data))
        data[i] = rng.randrange(256)
    db.write_bytes(bytes(data))


def truncate_at_random(db: Path, rng: random.Random) -> None:
    """The file cut anywhere (a page, a header, nothing left)."""
    data = db.read_bytes()
    db.write_bytes(data[: rng.randrange(len(data) + 1)])


def truncated(db: Path, _rng: random.Random) -> None:
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])


def garbage(db: Path, _rng: random.Random) -> None:
    db.write_bytes(os.urandom(8192))


def empty(db: Path, _rng: random.Random) -> None:
    db.write_bytes(b"")


def schema(db: Path, _rng: random.Random) -> None:
    """Another layout's number."""
    _sql(db, "PRAGMA user_version = 999")


def foreign(db: Path, _rng: random.Random) -> None:
    """Replaced by an SQLite database of something else."""
    db.unlink()
    _sql(db, "CREATE TABLE notes (x TEXT)", "INSERT INTO notes VALUES ('not a cache')")


def values(db: Path, _rng: random.Random) -> None:
    """Every stored value replaced by a well-formed one that is not its own."""
    _sql(db, "UPDATE entries SET value = X'93010203'")


def swap_rows(db: Path, rng: random.Random) -> None:
    """Two entries' values (with their checksums), or their keys, or their stamps, exchanged.

    Two entries of one kind where there are (a value of another kind does not even decode).
    """
    c = sqlite3.connect(db)
    try:
        by_kind: dict[str, list[int]] = {}
        for rowid, kind in c.execute("SELECT rowid, kind FROM entries ORDER BY rowid"):
            by_kind.setdefault(kind, []).append(rowid)
        pairs = [rows for rows in by_kind.values() if len(rows) >= 2] or [[r for rows in by_kind.values() for r in rows]]
        rows = rng.choice(pairs)
        if len(rows) < 2:
            return
        a, b = rng.sample(rows, 2)
        cols = rng.choice([("value", "checksum"), ("value",), ("key",), ("dev", "ino", "size", "mtime_ns", "ctime_ns", "digest")])
        got = {r: c.execute(f"SELECT {', '.join(cols)} FROM entries WHERE rowid = ?", (r,)).fetchone() for r in (a, b)}
        if cols == ("key",):  # a key is unique within its kind: both move to a free name first
            c.execute("UPDATE entries SET key = key || ? WHERE rowid IN (?, ?)", ("\0swap", a, b))
        sets = ", ".join(f"{col} = ?" for col in cols)
        for row, other in ((a, b), (b, a)):
            c.execute(f"UPDATE OR REPLACE entries SET {sets} WHERE rowid = ?", (*got[other], row))
        c.commit()
    finally:
        c.close()


#: Every damage by name.
DAMAGES: dict[str, Callable[[Path, random.Random], None]] = {
    "bytes": overwrite_bytes, "cut": truncate_at_random, "truncated": truncated, "garbage": garbage, "empty": empty,
    "schema": schema, "foreign": foreign, "values": values, "swap": swap_rows,
}
#: The damages a random draw picks from (the fixed ones are their special cases, tested by name).
RANDOM = ("bytes", "cut", "foreign", "schema", "values", "swap")


def damage(kind: str, db: Path, rng: random.Random | None = None) -> None:
    """Settle ``db``, then damage it as ``kind`` says."""
    settle(db)
    if not db.is_file():
        return
    try:
        DAMAGES[kind](db, rng if rng is not None else random.Random(0))
    except sqlite3.DatabaseError:  # not a database any more (an earlier damage): damaged enough
        pass
