"""Points and spans of time as people write them: ``--since``, ``--until``, day/week/month buckets.

One grammar for every command that filters by time (``ls --since``, ``report``,
``search``): a duration back from now (``7d``, ``12h``, ``30m``, ``2w``), an ISO
date or date and time (``2026-11-01``, ``2026-11-01T09:30``, with or without an
offset), and the words ``today`` and ``yesterday``.  A date names a whole day: as
a start it means its first instant, as an end (``--until``) its last, so
``--since 2026-11-01 --until 2026-11-01`` is that one day.

Nothing here reads the clock or the environment: "now" and the zone are
arguments.  A zone of ``None`` is the system's local zone (Python's naive local
time, which follows the system's daylight-saving rules); a caller that hands work
to other machines passes a concrete zone instead, or, as ``report`` does, keeps
the conversion to local time on its own side.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

from ..errors import UsageError

__all__ = ["DURATION", "LOCAL", "QUANTUM_MS", "bucket_label", "day_start", "parse_when", "zone_named"]

#: A duration back from now: a number and a unit.
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}

#: Every zone offset in use is a whole multiple of 15 minutes, so activity counted per
#: 15-minute span of UTC can be put into the days of any zone afterwards, exactly.
QUANTUM_MS = 15 * 60_000

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_OFFSET = re.compile(r"^(?:UTC)?([+-])(\d{1,2})(?::?(\d{2}))?$")

#: The name of the system's local time, when no zone is named (``tzinfo`` ``None``).
LOCAL = "local time"


def zone_named(name: str | None, option: str = "--timezone") -> tuple[tzinfo | None, str]:
    """A zone as people name it, and how a report names it back.

    An IANA name (``Europe/Berlin``, ``UTC``), a fixed offset (``+05:30``, ``UTC-3``),
    or ``local`` / ``None``: the system's local time (``tzinfo`` ``None``).
    """
    if name is None or name.strip() in ("", "local"):
        return None, LOCAL
    t = name.strip()
    m = _OFFSET.match(t)
    if m:
        hours, minutes = int(m.group(2)), int(m.group(3) or 0)
        if hours < 24 and minutes % 15 == 0 and minutes < 60:  # every real offset is whole quarter hours
            delta = timedelta(hours=hours, minutes=minutes)
            return timezone(-delta if m.group(1) == "-" else delta), f"UTC{m.group(1)}{hours:02d}:{minutes:02d}"
    else:
        try:
            return ZoneInfo(t), t
        except (KeyError, ValueError, OSError):  # not in the zone database (or not a key at all)
            pass
    raise UsageError(f"{option} {name!r}: not a time zone (an IANA name such as Europe/Berlin, UTC, "
                     f"an offset such as +05:30, or local)")


def _local(ms: int, tz: tzinfo | None) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz)


def _midnight(d: date, tz: tzinfo | None) -> int:
    """Epoch ms of the first instant of day ``d`` in ``tz`` (local time when ``None``)."""
    return int(datetime(d.year, d.month, d.day, tzinfo=tz).timestamp() * 1000)


def day_start(ms: int, tz: tzinfo | None) -> int:
    """Epoch ms of the first instant of the day that holds ``ms``."""
    return _midnight(_local(ms, tz).date(), tz)


def parse_when(text: str, *, now_ms: int, tz: tzinfo | None, end: bool = False, words: bool = True,
               option: str = "--since") -> int:
    """A point in time as epoch ms (see the module docstring); ``end``: a date means its end.

    ``words=False`` keeps to durations and ISO dates (``ls --since``'s documented grammar).
    """
    t = text.strip()
    m = DURATION.match(t)
    if m:
        return int(now_ms - float(m.group(1)) * _UNIT_S[m.group(2)] * 1000)
    today = _local(now_ms, tz).date()
    day: date | None = None
    if words and t in ("today", "yesterday"):
        day = today if t == "today" else today - timedelta(days=1)
    elif _DATE.match(t):
        try:
            day = date.fromisoformat(t)
        except ValueError:
            day = None
    if day is not None:
        return _midnight(day + timedelta(days=1) if end else day, tz)
    try:
        dt = datetime.fromisoformat(t)
    except ValueError:
        extra = ", today, yesterday" if words else ""
        raise UsageError(f"{option} {text!r}: expected a date (2026-11-01), a date and time, "
                         f"or a duration (3d, 12h, 30m){extra}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=tz) if tz is not None else dt.astimezone()  # naive = the zone's wall time
    return int(dt.timestamp() * 1000)


def bucket_label(ms: int, by: str, tz: tzinfo | None) -> str:
    """The day (``2026-11-01``), ISO week (``2026-W44``) or month (``2026-11``) that holds ``ms``."""
    d = _local(ms, tz).date()
    if by == "day":
        return d.isoformat()
    if by == "week":
        year, week, _ = d.isocalendar()
        return f"{year}-W{week:02d}"
    if by == "month":
        return f"{d.year}-{d.month:02d}"
    raise ValueError(f"not a time bucket: {by}")
