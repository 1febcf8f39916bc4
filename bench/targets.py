"""The targets the benchmarks are measured against (issue 34), each stated once, and the rule that applies them.

A benchmark that marks a figure met or missed imports its target from here, so the number a
report prints and the number it is judged by cannot drift apart: ``bench/run.py`` marks each
row of its table with :func:`checks` and :func:`startup_check`, ``bench/startup.py`` judges
start-up by :data:`STARTUP_RATIO`, ``bench/cache.py`` its warm and resumed runs by
:data:`CACHE_WARM` and :data:`CACHE_RESUMED`, and the "Targets" section of BENCHMARKS.md is :func:`markdown` (``tests/test_bench_run.py``
holds the file to it).  A target changes here and nowhere else, so the table, the prose and
the scripts cannot disagree about what "met" means.

Every ratio is taken in one interleaved run, and all but one are of CPU times (the child's
user + system, helpers included): the machine is shared, and CPU time is what a burst of
other load disturbs least.  ``.zstd`` against plain is of wall times: the forked decoder runs
on the second core beside the parse, and the target is about what a person waits for.

    python bench/targets.py        # the Targets section, as BENCHMARKS.md must hold it
"""

from __future__ import annotations

from dataclasses import dataclass

#: The sizes of a generated log the command targets hold at.
SIZES = ("30M", "120M")
#: Every command's CPU time at most this times dsh's own code doing the same work.
DSH_RATIO = 0.8
#: Start-up: the CPU time (user + system) of `dshlog --version` and of a command on a tiny log
#: is at most this many times that of `python -c 'import orjson'` on the same interpreter,
#: the least any Python tool that reads JSON pays before it does anything (bench/startup.py).
STARTUP_RATIO = 2.0
#: The floor targets hold at this size, on this format version's logs (every shape of it).
FLOOR_SIZE = "120M"
FLOOR_VERSION = "v4"
#: The read-only commands, and their ceiling over the orjson floor.
READERS = ("info", "events", "events --json", "stats", "tail")
READER_FLOOR = 1.0
#: dsh's views, and their ceiling over the orjson floor.
VIEWS = ("surface", "requests", "rebuild --request N", "events --v4")
VIEW_FLOOR = 2.0
#: Peak RSS of every command, ``rebuild`` included.
RSS_MB = 64.0
#: A ``.zstd`` log against the same command on the plain file (wall time).
ZSTD_RATIO = 1.2

# Measured by the other scripts of bench/ (the table of bench/run.py does not judge them).
#: ``-j 2`` against ``-j 1`` over 1,000 small sessions (``bench/batch.py``).
BATCH_SPEEDUP = 1.8
#: A warm ``report`` over a 355-session store against the cold one (``bench/cache.py``).
CACHE_WARM = 0.3
#: ``surface`` of a log that grew by 1%, resumed from the cache, against a cold one, CPU (``bench/cache.py --append``).
CACHE_RESUMED = 0.4
#: With a 50 MB tool result, peak RSS about this many times the longest line (``bench/run.py --shapes huge``).
HUGE_LINE_RSS = 2
#: Seconds to the first screen of a 120 MB log (``show``, ``browse``) and to the load event of a
#: 10,000-message HTML page in Chromium (``bench/browse_open.py``, ``bench/html_open.py``).
SHOW_S, BROWSE_S, HTML_S = 1.0, 2.0, 2.0


@dataclass(frozen=True)
class Check:
    """One target applied to one row: its short name (the verdict column's word) and whether it is met."""

    name: str
    met: bool


def checks(command: str, size: str, version: str, *, x_dsh: float | None, x_floor: float | None,
           x_plain: float | None, rss_mb: float | None) -> list[Check]:
    """The targets that apply to a measured command, each met or missed.

    ``version`` is ``v4`` or ``v0`` (the shape does not matter); a ratio that was not
    measured (no dsh, no ``.zstd`` run) is ``None`` and its target is not applied.
    """
    out: list[Check] = []
    if x_dsh is not None and size in SIZES:
        out.append(Check(f"× dsh ≤ {DSH_RATIO:g}", x_dsh <= DSH_RATIO))
    if x_floor is not None and size == FLOOR_SIZE and version == FLOOR_VERSION:
        ceiling = READER_FLOOR if command in READERS else VIEW_FLOOR if command in VIEWS else None
        if ceiling is not None:
            out.append(Check(f"× floor ≤ {ceiling:g}", x_floor <= ceiling))
    if x_plain is not None:
        out.append(Check(f"× plain ≤ {ZSTD_RATIO:g}", x_plain <= ZSTD_RATIO))
    if rss_mb is not None:
        out.append(Check(f"RSS ≤ {RSS_MB:g}", rss_mb <= RSS_MB))
    return out


def startup_check(x_import: float | None) -> list[Check]:
    """Start-up against ``python -c 'import orjson'`` (CPU), when both were measured."""
    return [] if x_import is None else [Check(f"× import ≤ {STARTUP_RATIO:g}", x_import <= STARTUP_RATIO)]


def _names(commands: tuple[str, ...]) -> str:
    return ", ".join(f"`{c}`" for c in commands)


def markdown() -> str:
    """The Targets table of BENCHMARKS.md: each target in words, and what measures it."""
    sizes = " and ".join(SIZES)
    rows = [
        (f"every command at most **{DSH_RATIO:g}x dsh's own code** doing the same work, at {sizes}, v4 and v0",
         "`make bench`, `× dsh` column"),
        (f"start-up at most **{STARTUP_RATIO:g}x `python -c 'import orjson'`**",
         "`bench/startup.py`; `make bench`, the start-up rows (`× floor` is against that import)"),
        (f"read-only commands ({_names(READERS)}) at most **{READER_FLOOR:g}x the orjson floor** at {FLOOR_SIZE} ({FLOOR_VERSION})",
         "`make bench`, `× floor` column"),
        (f"dsh's views ({_names(VIEWS)}) at most **{VIEW_FLOOR:g}x the orjson floor** at {FLOOR_SIZE} ({FLOOR_VERSION})",
         "`make bench`, `× floor` column"),
        (f"peak RSS at most **{RSS_MB:g} MB** for every command, `rebuild` included", "`make bench`, `peak RSS MB` column"),
        (f"a `.zstd` log at most **{ZSTD_RATIO:g}x** the same command on the plain file (wall time)", "`make bench`, `× plain` column"),
        (f"over 1,000 small sessions, `-j 2` at least **{BATCH_SPEEDUP:g}x** faster than `-j 1`", "`bench/batch.py`"),
        (f"a second `report` over a 355-session store (the cache warm) at most **{CACHE_WARM:g}x** the first (the cache cold)",
         "`bench/cache.py` (`warm / cold` column)"),
        (f"`surface` of a log that grew by 1%, resumed from the cache, at most **{CACHE_RESUMED:g}x** a cold one (CPU)",
         "`bench/cache.py --log 30M --append 1` (`resumed / cold (CPU)` column)"),
        (f"with a 50 MB tool result, peak RSS about **{HUGE_LINE_RSS:g}x** the longest line", "`bench/run.py --shapes huge`"),
        (f"`show` shows its first screen of a 120 MB log in under **{SHOW_S:g} s**, `browse` in under **{BROWSE_S:g} s**; "
         f"an exported HTML page of 10,000 messages loads in Chromium in under **{HTML_S:g} s**",
         "`bench/browse_open.py`, `bench/html_open.py`"),
    ]
    return "\n".join(["| target | measured by |", "|---|---|", *(f"| {t} | {m} |" for t, m in rows)])


if __name__ == "__main__":
    print(markdown())
