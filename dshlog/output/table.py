"""Tables for people: fitted to a terminal's width (Rich), tab-separated lines when piped.

``info``, ``stats``, ``ls``, ``surface`` and ``requests`` print one; this module
holds no transcript type, so those commands start without loading the transcript
model.  Cells are data: each is sanitised and made a Rich ``Text``, never markup.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from .screen import Screen, Write, text
from .text import cut, sanitize

if TYPE_CHECKING:  # pragma: no cover - typing only
    from rich.console import JustifyMethod

__all__ = ["Column", "plain_table", "table"]


def plain_table(write: Write, title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A table as tab-separated lines, streamed row by row (``None`` is an empty cell)."""

    def line(text: str) -> None:
        write(sanitize(text).encode("utf-8") + b"\n")

    if title:
        line(f"# {title}")
    line("\t".join(columns))
    for r in rows:
        line("\t".join("" if v is None else str(v) for v in r))


@dataclass(frozen=True)
class Column:
    """A table column: its header, alignment, and how it gives way when the screen is narrow.

    ``flex`` columns (a title, a preview) are cut with ``…`` first; ``drop`` columns are
    left out, lowest ``drop`` first, when even that does not fit; every other cell
    keeps its width and never folds (an id or a count cut in two reads wrong).
    """

    header: str
    justify: str = "left"
    flex: bool = False
    drop: int = 0


def _columns(columns: Sequence[str | Column], justify: dict[int, str] | None) -> list[Column]:
    out = []
    for i, c in enumerate(columns):
        if isinstance(c, str):
            c = Column(c, (justify or {}).get(i, "left"))
        out.append(c)
    return out


def _widths(cols: list[Column], rows: list[list[str]], width: int) -> dict[int, int]:
    """Column index -> width at ``width`` columns of screen.

    Fixed columns get their widest cell (header included); droppable columns that are
    empty everywhere, then droppable columns lowest ``drop`` first, are left out until
    the fixed widths and a few characters per flex column fit; the flex columns share
    what is left, none wider than its widest cell.
    """
    from rich.cells import cell_len  # lazy: heavy, only for terminal output

    gap = 2
    natural = {i: max([len(c.header)] + [cell_len(r[i]) for r in rows]) for i, c in enumerate(cols)}
    keep = [i for i, c in enumerate(cols) if not (c.drop and all(not r[i] for r in rows))]

    def floor(i: int) -> int:
        return min(natural[i], max(len(cols[i].header), 8)) if cols[i].flex else natural[i]

    for i in sorted((i for i in keep if cols[i].drop), key=lambda i: cols[i].drop):
        if sum(floor(k) for k in keep) + gap * (len(keep) - 1) <= width:
            break
        keep.remove(i)
    out = {i: floor(i) for i in keep}
    spare = width - sum(out.values()) - gap * (len(keep) - 1)
    flex = [i for i in keep if cols[i].flex]
    while spare > 0 and flex:
        grow = [i for i in flex if out[i] < natural[i]]
        if not grow:
            break
        share = max(1, spare // len(grow))
        for i in grow:
            add = min(share, natural[i] - out[i], spare)
            out[i] += add
            spare -= add
    return out


def table(
    screen: Screen,
    title: str | None,
    columns: Sequence[str | Column],
    rows: Iterable[Sequence[Any]],
    *,
    justify: dict[int, str] | None = None,
) -> None:
    """Print a table: Rich fitted to the screen's width on a terminal, tab-separated plain text otherwise (streamed)."""
    cols = _columns(columns, justify)
    if not screen.terminal:
        plain_table(screen.stream.write, title, [c.header for c in cols], rows)
        return
    from rich.table import Table  # lazy: heavy, only for terminal output

    con = screen.console()
    # no column is wider than the screen: a longer cell is cut to it first (in O(width)), so neither the
    # measuring nor Rich's own ellipsis walks every character of a cell of many megabytes
    cells = [[cut(sanitize("" if v is None else str(v)), con.width) for v in r] for r in rows]
    widths = _widths(cols, cells, con.width)
    t = Table(title=text(title, "table.title") if title else None, title_justify="left", show_edge=False,
              header_style="bold", pad_edge=False, box=None)
    for i, w in widths.items():
        c = cols[i]
        # columns name rich's justify methods ("left", "right", "center")
        t.add_column(text(c.header), justify=cast("JustifyMethod", c.justify), no_wrap=True, overflow="ellipsis", width=w)
    for r in cells:
        t.add_row(*(text(r[i]) for i in widths))
    con.print(t)
