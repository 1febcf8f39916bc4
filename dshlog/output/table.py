"""Tables for people: fitted to a terminal's width (Rich), tab-separated lines when piped.

``info``, ``stats``, ``ls``, ``surface`` and ``requests`` print one; this module
holds no transcript type, so those commands start without loading the transcript
model.  Cells are data: each is sanitised and made a Rich ``Text``, never markup.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import msgspec

from . import labels
from .screen import Screen, Write, text
from .text import cut, cut_left, sanitize

if TYPE_CHECKING:  # pragma: no cover - typing only
    from rich.console import JustifyMethod

__all__ = ["GAP", "Column", "FittedTable", "fit_table", "plain_table", "table"]


def plain_table(write: Write, title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A table as tab-separated lines, streamed row by row (``None`` is an empty cell)."""

    def line(text: str) -> None:
        write(sanitize(text).encode("utf-8") + b"\n")

    if title:
        line(f"# {title}")
    line("\t".join(columns))
    for r in rows:
        line("\t".join("" if v is None else str(v) for v in r))


class Column(msgspec.Struct, frozen=True):
    """A table column: its header, alignment, what its cells are, and how it gives way when the screen is narrow.

    Giving way goes from what a reader loses least to what they lose most: ``flex``
    columns (a title, a preview) are cut with ``…`` first, down to a few words;
    then ``number`` columns are abbreviated (``34.6M``,
    :func:`~dshlog.output.labels.short_count`), the one that saves most first; then
    ``drop`` columns are left out, lowest ``drop`` first; last, the cut columns are cut
    down to a few characters.  Every other cell (an id, a type, a date) keeps
    its width and is never cut: an id or a count cut in two reads wrong.  When even
    that does not fit, the table is wider than the screen rather than wrong.

    ``path`` columns are flexible too but cut on the left (``…/api-server``): the
    last directories tell projects apart.  ``number`` cells that are integers show
    exactly (``34,574,299``) wherever they fit, and always when piped.
    """

    header: str
    justify: str = "left"
    flex: bool = False
    drop: int = 0
    number: bool = False
    path: bool = False

    @property
    def cuts(self) -> bool:
        """Whether this column's cells may be cut (free text and paths; never an id or a number)."""
        return self.flex or self.path


def _columns(columns: Sequence[str | Column], justify: dict[int, str] | None) -> list[Column]:
    out = []
    for i, c in enumerate(columns):
        if isinstance(c, str):
            c = Column(c, (justify or {}).get(i, "left"))
        if c.number and c.justify == "left":
            c = msgspec.structs.replace(c, justify="right")
        out.append(c)
    return out


def _exact(col: Column, v: Any) -> str:
    """A cell as piped output and a wide enough screen show it: whole (an integer of a number column thousands-separated)."""
    if v is None:
        return ""
    return labels.count(v) if col.number and type(v) is int else str(v)


#: What a cut column keeps while anything else can give way, in characters (its header permitting):
#: a few words of free text, a path's last directories ...
_FLEX_SOFT = 16
_PATH_SOFT = 20
#: ... and what it keeps when nothing else can.
_CUT_FLOOR = 8
#: Spaces between two columns (a screen that pads each cell pads it by half of this on each side).
GAP = 2


def _layout(cols: list[Column], exact: list[list[str]], short: dict[int, list[str]], width: int) -> tuple[dict[int, int], set[int]]:
    """Column index -> width at ``width`` columns of screen, and the number columns shown abbreviated.

    Widths follow the cells (header included); see :class:`Column` for the order in which
    columns give way.  The result may be wider than ``width`` when nothing else can give.
    """
    from rich.cells import cell_len  # lazy: heavy, only for terminal output

    def widest(i: int, cells: Iterable[str]) -> int:
        return max([cell_len(cols[i].header), *(cell_len(c) for c in cells)])

    natural = {i: widest(i, (r[i] for r in exact)) for i in range(len(cols))}
    abbreviated = {i: widest(i, s) for i, s in short.items()}
    keep = [i for i, c in enumerate(cols) if not (c.drop and all(not r[i] for r in exact))]
    shortened: set[int] = set()
    soft = True

    def floor(i: int) -> int:
        if cols[i].cuts:
            least = (_PATH_SOFT if cols[i].path else _FLEX_SOFT) if soft else _CUT_FLOOR
            return min(natural[i], max(cell_len(cols[i].header), least))
        return abbreviated[i] if i in shortened else natural[i]

    def total() -> int:
        return sum(floor(k) for k in keep) + GAP * (len(keep) - 1)

    for i in sorted((i for i in keep if i in abbreviated), key=lambda i: abbreviated[i] - natural[i]):
        if total() <= width:
            break
        shortened.add(i)
    for i in sorted((i for i in keep if cols[i].drop), key=lambda i: cols[i].drop):
        if total() <= width:
            break
        keep.remove(i)
    soft = total() <= width
    out = {i: floor(i) for i in keep}
    spare = width - total()
    flex = [i for i in keep if cols[i].cuts]
    while spare > 0 and flex:
        grow = [i for i in flex if out[i] < natural[i]]
        if not grow:
            break
        share = max(1, spare // len(grow))
        for i in grow:
            add = min(share, natural[i] - out[i], spare)
            out[i] += add
            spare -= add
    return out, shortened


class FittedTable(msgspec.Struct, frozen=True):
    """A table laid out for a width: the columns shown (a ``drop`` column may be left out), each one's
    width, and every row's cells as text already fitted to those widths (cut or abbreviated as
    :class:`Column` says).

    The command line's tables and the browser's session list are both drawn from one, so the two
    give way in the same order and a narrow screen cannot cut an id in one and not in the other.
    """

    columns: tuple[Column, ...]
    widths: tuple[int, ...]
    rows: list[list[str]]

    @property
    def needed(self) -> int:
        """Columns of screen the table takes, :data:`GAP` between two columns (more than asked when nothing else could give)."""
        return sum(self.widths) + GAP * (len(self.widths) - 1)


def fit_table(columns: Sequence[str | Column], rows: Iterable[Sequence[Any]], width: int, *,
              justify: dict[int, str] | None = None) -> FittedTable:
    """Lay ``rows`` out in ``width`` columns of screen (outer edges not counted, :data:`GAP` between two columns).

    Widths follow the cells (headers included); ``None`` is an empty cell.
    """
    cols = _columns(columns, justify)
    values = [list(r) for r in rows]
    # a cell is never wider than the screen: a longer one is cut to it first (in O(width)), so measuring
    # does not walk every character of a cell of many megabytes; only columns that may be cut have such cells
    exact = [[_bounded(c, sanitize(_exact(c, v)), width) for c, v in zip(cols, r)] for r in values]
    short = {i: [labels.short_count(r[i]) if type(r[i]) is int else exact_r[i] for r, exact_r in zip(values, exact)]
             for i, c in enumerate(cols) if c.number and any(type(r[i]) is int and r[i] >= 1000 for r in values)}
    widths, shortened = _layout(cols, exact, short, width)
    shown = list(widths)
    fitted = [[_fit(cols[i], short[i][row] if i in shortened else r[i], widths[i]) for i in shown] for row, r in enumerate(exact)]
    return FittedTable(tuple(cols[i] for i in shown), tuple(widths[i] for i in shown), fitted)


def table(
    screen: Screen,
    title: str | None,
    columns: Sequence[str | Column],
    rows: Iterable[Sequence[Any]],
    *,
    justify: dict[int, str] | None = None,
) -> None:
    """Print a table: fitted to the screen's width on a terminal (Rich), tab-separated whole values otherwise (streamed)."""
    if not screen.terminal:
        cols = _columns(columns, justify)
        plain_table(screen.stream.write, title, [c.header for c in cols], ([_exact(c, v) for c, v in zip(cols, r)] for r in rows))
        return
    from rich.table import Table  # lazy: heavy, only for terminal output

    width = screen.width or 80
    fitted = fit_table(columns, rows, width, justify=justify)
    # nothing left to give: wider than the screen (the terminal folds the line) rather than a cut figure
    con = (msgspec.structs.replace(screen, width=fitted.needed) if fitted.needed > width else screen).console()
    t = Table(title=text(title, "table.title") if title else None, title_justify="left", show_edge=False,
              header_style="bold", pad_edge=False, box=None, padding=(0, GAP // 2), collapse_padding=False)
    for c, w in zip(fitted.columns, fitted.widths):
        # columns name rich's justify methods ("left", "right", "center")
        t.add_column(text(c.header), justify=cast("JustifyMethod", c.justify), no_wrap=True, overflow="ellipsis", width=w)
    for r in fitted.rows:
        t.add_row(*(text(cell) for cell in r))
    con.print(t)


def _bounded(col: Column, cell: str, width: int) -> str:
    return (cut_left(cell[-4 * width:], width) if col.path else cut(cell, width)) if col.cuts else cell


def _fit(col: Column, cell: str, width: int) -> str:
    """A cell in its column's width: free text cut on the right, a path on the left, anything else whole."""
    if not col.cuts:
        return cell
    return cut_left(cell, width) if col.path else cut(cell, width)
