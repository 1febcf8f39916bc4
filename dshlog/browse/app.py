"""The Textual application behind ``dshlog browse``.

Screens: the session list of a root (filter, sort, Enter opens), a session (tabs:
conversation, events, surface, requests), and small modal screens (event JSON,
request diff, help, the prompt for search and jump).  Every text from a log is
given to Textual as a :class:`rich.text.Text` or a renderable built from one, never
as markup, so ``[b]`` in a message is shown as written.

The session screen holds an :class:`~dshlog.read.pages.EventIndex`, never the
events: the conversation shows one turn at a time, the events table one page of
rows, and the surface and requests tabs run their single pass in a worker thread
the first time they are shown, a progress bar in the tab saying how far the pass is
(the reader's ``progress`` hook, drawn through ``call_from_thread``) until the tab is filled.

Textual is a dependency of this module only (``dshlog browse`` imports it lazily).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from rich.console import Group, JustifyMethod
from rich.text import Text
from textual import on, work
from textual.worker import get_current_worker
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Input, ProgressBar, Static, TabbedContent, TabPane

from ..errors import DshlogError, UsageError
from ..model.transcript import Item
from ..output import labels as L
from ..protocol.vocabulary import CURRENT_VERSION
from ..output.html import page_title
from ..output.renderer import problem_text
from ..output.terminal import renderable
from ..output.table import GAP, Column, fit_table
from ..output.text import human_bytes, local_minutes, sanitize
from ..ops.transcript import rescue_target
from ..read.container import Position
from ..read.pages import EventIndex, open_index
from ..read.session import dsh_refusal, open_log
from ..read.source import Source
from ..read.store import place_refused
from ..model.selection import Selection
from ..ops.sessions import select_entries, unique_prefixes
from ..read.store import SessionEntry, list_sessions
from .model import (
    PREVIEW,
    BrowseFilter,
    describe_request,
    event_json,
    event_row,
    first_prompt,
    item_preview,
    listed_sessions,
    parse_filter,
    parse_jump,
    diff_screen,
    request_rows,
    session_title,
    surface_view,
    turn_items,
)

__all__ = ["PAGE", "BrowseApp"]

PAGE = 100  # rows of the events table shown at once (each row parses its event)
SORTS = ("time", "size", "turns", "id")

HELP = """\
Keys
  q            quit                      ?        this help
  Tab / 1-4    conversation, events, surface, requests
  ] / [        next / previous turn (conversation), page (events)
  g            jump to a turn (37) or a seq (#120)
  /            search the session; n / N next / previous match
  Enter        open: a session, an event's JSON, a request's diff
  m            more of the long messages of a turn (conversation)
  c            copy the selected event's seq
  y            copy the selected event as JSON
  r            show / fold reasoning (conversation)
  f            filter: sessions by text; events by type:GLOB turn:N seq:A-B
  s            sort sessions by time, size, turns, id
  Escape       back (close a dialog, leave a session)
"""


#: The session list's columns, as the command line's tables give way (``dshlog ls``): the id (a unique
#: prefix) and the date whole, the title cut first, the project cut on the left, the size left out first.
LIST_COLUMNS = (Column("last activity"), Column("title", flex=True), Column("project", path=True),
                Column("turns", number=True), Column("size", "right", drop=1), Column("id"))

#: How the conversation's note on a cut message says what shows more.
MORE_HINT = " (m: more)"

_FOCUS = {"conversation": "#turn", "events": "#event-table", "surface": "#surface-table", "requests": "#request-table"}


def _t(value: Any) -> Text:
    """Log text for a widget: sanitised, never markup."""
    return Text(sanitize(str(value)))


class Prompt(ModalScreen[str | None]):
    """One line of input (search, jump); Enter gives it, Escape cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]

    def __init__(self, label: str, value: str = "") -> None:
        super().__init__()
        self.label = label
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt"):
            yield Static(self.label)
            yield Input(value=self.value, id="prompt-input")

    @on(Input.Submitted)
    def submit(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class TextScreen(ModalScreen[None]):
    """A scrollable text (an event's JSON, a request diff, the help)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "close", "close")]

    def __init__(self, title: str, body: Any, *, screen_id: str) -> None:
        super().__init__(id=screen_id)
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical(id="text-box"):
            yield Static(_t(self.title_text), id="text-title")
            with VerticalScroll():
                yield Static(self.body, id="text-body")

    def action_close(self) -> None:
        self.dismiss(None)


class SessionList(Screen[None]):
    """Every session of a root: id, title or first prompt, project, last activity, size, turns."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "filter", "filter"),
        Binding("s", "sort", "sort"),
        Binding("escape", "clear", "clear filter", show=False),
    ]

    def __init__(self, root: Path, selection: Selection | None = None) -> None:
        super().__init__(id="sessions")
        self.root = root
        #: the command line's ``--since/--until/--project/--cwd``: which sessions are listed at all
        self.selection = selection
        #: what a person is told about the selection (``--cwd`` matched nothing)
        self.note: str | None = None
        self.entries: list[SessionEntry] = []
        self.sort = "time"
        self.needle = ""
        #: each session id's shortest unique prefix; None until the list is loaded
        self.short: dict[str, str] | None = None

    def compose(self) -> ComposeResult:
        yield Static(_t(f"sessions in {self.root}"), id="list-title")
        yield Input(placeholder="filter by id, title, project (f)", id="list-filter")
        # cells padded by half a gap on each side: the gap the fitted widths leave between two columns
        table: DataTable[Text] = DataTable(id="list", cursor_type="row", zebra_stripes=True, cell_padding=GAP // 2)
        yield table
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#list", DataTable)
        table.add_columns(*(c.header for c in LIST_COLUMNS))
        table.loading = True
        self.load()

    @work(thread=True, exclusive=True, group="list")
    def load(self) -> None:
        entries = list_sessions(self.root)
        if self.selection is not None:
            try:
                entries, self.note = select_entries(entries, self.selection)
            except UsageError as exc:  # an ambiguous --cwd: said where the list would be
                entries, self.note = [], exc.message
        self.app.call_from_thread(self.loaded, entries)

    def loaded(self, entries: list[SessionEntry]) -> None:
        self.entries = entries
        # prefixes unique among every listed session, not only those a filter leaves: one stays what it is
        self.short = unique_prefixes([e.id for e in entries if e.id])
        table = self.query_one("#list", DataTable)
        table.loading = False
        self.refill()
        table.focus()

    def on_resize(self) -> None:
        """Widths follow the screen: a narrower one cuts titles and projects anew."""
        if self.short is not None:
            self.refill()

    def _width(self, table: DataTable[Text], rows: int) -> int:
        """Columns of screen the fitted cells may take: the table's width less the outer half gaps,
        and less its scroll bar when the rows (and the header) overflow its height."""
        width = table.size.width or self.size.width or self.app.size.width
        scrolls = not table.size.height or rows + 1 > table.size.height
        return max(1, width - (table.styles.scrollbar_size_vertical if scrolls else 0) - GAP)

    def refill(self) -> None:
        table: DataTable[Text] = self.query_one("#list", DataTable)
        cursor = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value if table.row_count else None
        listed = listed_sessions(self.entries, self.needle, self.sort)
        short = self.short or {}
        fitted = fit_table(LIST_COLUMNS, (
            [local_minutes(e.last_activity), " ".join((e.display_title or "").split()) or (e.error or ""),
             e.cwd or e.project, e.turns, human_bytes(e.size), short.get(e.id, e.id) if e.id else e.dir.name]
            for e in listed), self._width(table, len(listed)))
        table.clear(columns=True)
        for c, w in zip(fitted.columns, fitted.widths):
            table.add_column(c.header, width=w)
        justify: list[JustifyMethod] = ["right" if c.justify == "right" else "left" for c in fitted.columns]
        for e, cells in zip(listed, fitted.rows):
            table.add_row(*(Text(cell, justify=j) for cell, j in zip(cells, justify)), key=str(e.path or e.dir))
        if cursor is not None and cursor in table.rows:
            table.move_cursor(row=table.get_row_index(cursor), animate=False)
        note = f" · {self.note}" if self.note else ""
        self.query_one("#list-title", Static).update(_t(f"sessions in {self.root} · {table.row_count} shown · sorted by {self.sort}{note}"))

    @on(Input.Changed, "#list-filter")
    def filter_changed(self, event: Input.Changed) -> None:
        self.needle = event.value
        self.refill()

    @on(Input.Submitted, "#list-filter")
    def filter_done(self) -> None:
        self.query_one("#list", DataTable).focus()

    def action_filter(self) -> None:
        self.query_one("#list-filter", Input).focus()

    def action_clear(self) -> None:
        self.query_one("#list-filter", Input).value = ""
        self.query_one("#list", DataTable).focus()

    def action_sort(self) -> None:
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self.refill()

    @on(DataTable.RowSelected, "#list")
    def open_session(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key is not None:
            app = self.app
            assert isinstance(app, BrowseApp)
            app.open_session(key)


class SessionView(Screen[None]):
    """One session: conversation, events, surface, requests."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right_square_bracket", "next", "next turn/page"),
        Binding("left_square_bracket", "previous", "previous"),
        Binding("g", "jump", "jump"),
        Binding("slash", "search", "search"),
        Binding("n", "search_next", "next match", show=False),
        Binding("N", "search_previous", "previous match", show=False),
        Binding("c", "copy_seq", "copy seq"),
        Binding("y", "copy_json", "copy JSON"),
        Binding("r", "reasoning", "reasoning", show=False),
        Binding("m", "more", "more", show=False),
        Binding("f", "filter", "filter", show=False),
        Binding("1", "tab('conversation')", show=False),
        Binding("2", "tab('events')", show=False),
        Binding("3", "tab('surface')", show=False),
        Binding("4", "tab('requests')", show=False),
        Binding("escape", "back", "back"),
    ]

    def __init__(self, ix: EventIndex, *, source: Source = Source()) -> None:
        super().__init__(id="session")
        self.ix = ix
        #: how the session is read again for dsh's decision (the indexed file, read as the browser was asked to)
        self.how = source
        self.ordinal = 1 if ix.turns else 0
        self.reasoning = False
        #: characters of one item's text shown in the conversation (``m`` shows more)
        self.limit = PREVIEW
        self.rows: list[int] = list(range(len(ix)))
        self.page = 0
        self.needle = ""
        self.position = -1  # the event the last search or jump landed on
        self.item_seqs: list[int | None] = []
        self.loaded: set[str] = set()

    # -- layout
    def compose(self) -> ComposeResult:
        banner = Static(self._banner(), id="refusal")
        banner.display = self.ix.refusal is not None
        yield banner
        yield Static(self._heading(), id="session-title")
        with TabbedContent(initial="conversation", id="tabs"):
            with TabPane("Conversation", id="conversation"):
                yield Static(id="turn-title")
                yield VerticalScroll(id="turn")
            with TabPane("Events", id="events"):
                yield Input(placeholder="filter: type:tool/* turn:37 seq:100-200 (f, Enter)", id="event-filter")
                yield Static(id="events-title")
                events: DataTable[Text] = DataTable(id="event-table", cursor_type="row", zebra_stripes=True)
                yield events
            with TabPane("Surface", id="surface"):
                yield ProgressBar(id="surface-progress", show_eta=False)
                nodes: DataTable[Text] = DataTable(id="surface-table", cursor_type="row", zebra_stripes=True)
                yield nodes
                yield Static(id="surface-notes")
            with TabPane("Requests", id="requests"):
                yield Static("Enter on a request: its diff against the one before", id="requests-title")
                yield ProgressBar(id="requests-progress", show_eta=False)
                reqs: DataTable[Text] = DataTable(id="request-table", cursor_type="row", zebra_stripes=True)
                yield reqs
        yield Footer()

    def _session_id(self) -> str | None:
        sid = self.ix.header.get("id") if isinstance(self.ix.header, dict) else None
        return sid if isinstance(sid, str) else None

    def _banner(self) -> Text:
        """dsh's refusal, first on the screen: what the tabs show is the stored rows, not a session dsh opens."""
        refused = self.ix.refusal
        if refused is None:
            return Text()
        placed = place_refused(self.ix.source) is not None  # rescue's successor would sit in the same place
        lines = L.refusal_lines(refused.message, None if placed else rescue_target(self._session_id(), self.ix.source))
        return Text(sanitize("\n".join(lines)), style="bold")

    def _heading(self) -> Text:
        ix = self.ix
        name = page_title(session_title(ix), first_prompt(ix), self._session_id())
        fmt = f"v{ix.stored_version}" + (" as stored" if ix.refusal is not None else f" shown as v{CURRENT_VERSION}" if ix.converted else "")
        t = Text(sanitize(name), style="bold")
        t.append(sanitize(f"  ·  {len(ix)} events, {len(ix.turns)} turns, {human_bytes(ix.size)}, {fmt}  ·  {ix.source}"), style="dim")
        return t

    def on_mount(self) -> None:
        self.query_one("#event-table", DataTable).add_columns("seq", "turn", "type", "what")
        self.query_one("#surface-table", DataTable).add_columns("seq", "type", "role", "shadows", "preview")
        self.query_one("#request-table", DataTable).add_columns("#", "seq", "settled as", "turn.step", "msgs", "extends", "why not", "in", "out", "cache read")
        self.show_turn(self.ordinal)
        if not self.ix.decided:  # a log indexed in place: dsh's decision needs a pass of its own
            self.load_decision()

    @work(thread=True, exclusive=True, group="decision")
    def load_decision(self) -> None:
        """dsh's decision on the log, in the background: a refusal shows the banner when it comes."""
        source = self.how.at(self.ix.source)
        try:
            refused = dsh_refusal(lambda: open_log(source))
        except DshlogError:  # the log cannot be read again (gone, changed): what is shown stays as it is
            return
        if refused is not None:
            self.app.call_from_thread(self.refused, refused)

    def refused(self, refusal: DshlogError) -> None:
        self.ix.refusal = refusal
        app = self.app
        assert isinstance(app, BrowseApp)
        app.shown_refused(self.ix)
        banner = self.query_one("#refusal", Static)
        banner.update(self._banner())
        banner.display = True
        self.query_one("#session-title", Static).update(self._heading())

    # -- tabs
    def active(self) -> str:
        return str(self.query_one("#tabs", TabbedContent).active)

    def action_tab(self, name: str) -> None:
        self.query_one("#tabs", TabbedContent).active = name
        self.query_one(_FOCUS[name]).focus()  # now: focus left in the old pane would switch back to it

    @on(TabbedContent.TabActivated)
    def tab_shown(self, event: TabbedContent.TabActivated) -> None:
        name = event.pane.id or ""
        if name == "events" and name not in self.loaded:  # filled when first shown: opening stays fast
            self.loaded.add(name)
            self.fill_events()
        elif name == "surface" and name not in self.loaded:
            self.loaded.add(name)
            self.query_one("#surface-table", DataTable).loading = True
            self.load_surface(self._reading("#surface-progress"))
        elif name == "requests" and name not in self.loaded:
            self.loaded.add(name)
            self.query_one("#request-table", DataTable).loading = True
            self.load_requests(self._reading("#requests-progress"))

    def _reading(self, bar_id: str) -> Position:
        """The progress hook of a tab's pass: it runs in the worker, and draws on the tab's bar in the app's thread.

        The bar is shown now (the pass may take seconds on a large log) and removed
        when the tab is filled (:meth:`_read`).
        """
        bar = self.query_one(bar_id, ProgressBar)
        bar.display = True
        app = self.app

        def told(done: int, total: int | None) -> None:
            if not get_current_worker().is_cancelled:  # the screen was left: nothing to draw on
                app.call_from_thread(bar.update, total=total, progress=done)

        return told

    def _read(self, bar_id: str) -> None:
        """A tab's pass is over (filled or failed): its progress bar goes."""
        for bar in self.query(bar_id):
            bar.remove()

    # -- conversation
    def show_turn(self, ordinal: int, seq: int | None = None) -> None:
        """Render one turn; with ``seq``, scroll to the item that event produced (or the nearest before it).

        Another turn opens with its long messages cut to the preview again (``m`` shows more).
        """
        ordinal = max(0, min(ordinal, len(self.ix.turns)))
        if ordinal != self.ordinal:
            self.limit = PREVIEW
        self.ordinal = ordinal
        items = turn_items(self.ix, self.ordinal)
        box = self.query_one("#turn", VerticalScroll)
        box.remove_children()
        widgets = [Static(self._item_view(item), classes="item") for item in items]
        self.item_seqs = [item.seq for item in items]
        box.mount_all(widgets)
        number = self.ix.turns[self.ordinal - 1][1] if self.ordinal else None
        where = f"turn {number}" if number is not None else "before the first turn"
        title = Text(sanitize(f"{where}  ({self.ordinal} of {len(self.ix.turns)}; ] next, [ previous, g jump)"))
        problems = [p for p in map(problem_text, items) if p is not None]
        if problems:
            title.append(sanitize(f"  {L.FAILURE.symbol} {'; '.join(problems)}"), style="bold red")
        self.query_one("#turn-title", Static).update(title)
        target = None
        if seq is not None:
            for k, s in enumerate(self.item_seqs):
                if s is not None and s <= seq:
                    target = k
        if target is not None:
            widget = widgets[target]
            widget.add_class("hit")
            self.call_after_refresh(box.scroll_to_widget, widget, animate=False, top=True)
        else:
            box.scroll_home(animate=False)

    def _item_view(self, item: Item) -> Any:
        """An item as ``show`` renders it, its long texts cut to the preview and the rest counted."""
        shown, hidden = item_preview(item, self.limit)
        view = renderable(shown, reasoning=self.reasoning, hints=L.BROWSE_HINTS)
        if not hidden:
            return view
        return Group(view, Text(L.cut_note(0, hidden, MORE_HINT), style="italic dim"))

    def action_more(self) -> None:
        """More of each long text of the turn: each press shows eight times as much, where the reader is."""
        self.limit *= 8
        box = self.query_one("#turn", VerticalScroll)
        y = box.scroll_y
        self.show_turn(self.ordinal)
        self.call_after_refresh(box.scroll_to, y=y, animate=False)

    def action_reasoning(self) -> None:
        self.reasoning = not self.reasoning
        self.show_turn(self.ordinal)

    # -- events
    def fill_events(self, select: int | None = None) -> None:
        """Show the page of filtered rows holding row ``select`` (an event index), or the current page."""
        table = self.query_one("#event-table", DataTable)
        self.loaded.add("events")
        if select is not None:
            try:
                pos = self.rows.index(select)
            except ValueError:  # filtered out: drop the filter to show it
                self.rows = list(range(len(self.ix)))
                self.query_one("#event-filter", Input).value = ""
                pos = select
            self.page = pos // PAGE
        pages = max(1, -(-len(self.rows) // PAGE))
        self.page = max(0, min(self.page, pages - 1))
        table.clear()
        first = self.page * PAGE
        for i in self.rows[first : first + PAGE]:
            table.add_row(*(_t(c) for c in event_row(self.ix, i)), key=str(i))
        self.query_one("#events-title", Static).update(
            _t(f"{len(self.rows)} of {len(self.ix)} events · page {self.page + 1} of {pages} (] next, [ previous) · Enter: JSON")
        )
        if select is not None and table.row_count:
            table.move_cursor(row=self.rows.index(select) - first)

    @on(Input.Submitted, "#event-filter")
    def filter_events(self, event: Input.Submitted) -> None:
        try:
            flt = parse_filter(event.value) if event.value.strip() else BrowseFilter()
        except DshlogError as exc:
            self.notify(exc.message, severity="error")
            return
        self.rows = flt.rows(self.ix)
        self.page = 0
        self.fill_events()
        self.query_one("#event-table", DataTable).focus()

    def action_filter(self) -> None:
        self.action_tab("events")
        self.query_one("#event-filter", Input).focus()

    def selected_event(self) -> int | None:
        """The event under the cursor of the events table, else where the last search or jump landed."""
        if self.active() == "events":
            table = self.query_one("#event-table", DataTable)
            if table.row_count:
                key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
                return int(key) if key is not None else None
        if self.position >= 0:
            return self.position
        if self.active() == "conversation" and len(self.ix):
            return self.ix.turn_range(self.ordinal)[0]
        return None

    @on(DataTable.RowSelected, "#event-table")
    def show_event(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key is not None:
            i = int(key)
            self.app.push_screen(TextScreen(f"event {self.ix.seqs[i]} ({self.ix.type_of(i)})  ·  Escape closes", _t(event_json(self.ix, i)), screen_id="event-json"))

    # -- surface and requests: one pass each, in a worker
    @work(thread=True, exclusive=True, group="surface")
    def load_surface(self, progress: Position) -> None:
        try:
            view = surface_view(self.ix, progress)
        except DshlogError as exc:
            self.app.call_from_thread(self.surface_failed, exc.one_line())
            return
        self.app.call_from_thread(self.surface_loaded, view)

    def surface_loaded(self, view: Any) -> None:
        self._read("#surface-progress")
        table = self.query_one("#surface-table", DataTable)
        table.loading = False
        for row in view.nodes:
            table.add_row(*(_t(c) for c in row), key=row[0])
        notes = [f"{len(view.nodes)} nodes"] + [f"replacement: {r}" for r in view.replacements]
        self.query_one("#surface-notes", Static).update(_t("\n".join(notes)))

    def surface_failed(self, message: str) -> None:
        self._read("#surface-progress")
        self.query_one("#surface-table", DataTable).loading = False
        self.query_one("#surface-notes", Static).update(_t(f"the surface cannot be folded: {message}"))

    @work(thread=True, exclusive=True, group="requests")
    def load_requests(self, progress: Position) -> None:
        try:
            rows = [describe_request(r) for r in request_rows(self.ix, progress)]
        except DshlogError as exc:
            self.app.call_from_thread(self.requests_failed, exc.one_line())
            return
        self.app.call_from_thread(self.requests_loaded, rows)

    def requests_loaded(self, rows: list[tuple[str, ...]]) -> None:
        self._read("#requests-progress")
        table = self.query_one("#request-table", DataTable)
        table.loading = False
        for row in rows:
            table.add_row(*(Text(sanitize(c), style="bold red") if k == 5 and c == "NO" else _t(c) for k, c in enumerate(row)), key=row[0])
        broken = sum(1 for r in rows if r[5] == "NO")
        self.query_one("#requests-title", Static).update(_t(f"{len(rows)} requests, prefix reuse broke {broken} times · Enter: diff against the previous request"))

    def requests_failed(self, message: str) -> None:
        self._read("#requests-progress")
        self.query_one("#request-table", DataTable).loading = False
        self.query_one("#requests-title", Static).update(_t(f"the requests cannot be rebuilt: {message}"))

    @on(DataTable.RowSelected, "#request-table")
    def show_diff(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.load_diff(int(event.row_key.value))

    @work(thread=True, exclusive=True, group="diff")
    def load_diff(self, number: int) -> None:
        try:
            lines = diff_screen(self.ix, number)
        except DshlogError as exc:
            lines = [exc.one_line()]
        self.app.call_from_thread(self.app.push_screen, TextScreen(f"request {number} against request {number - 1}  ·  Escape closes", _t("\n".join(lines)), screen_id="diff"))

    # -- moving
    def action_next(self) -> None:
        if self.active() == "events":
            self.page += 1
            self.fill_events()
        else:
            self.show_turn(self.ordinal + 1)

    def action_previous(self) -> None:
        if self.active() == "events":
            self.page -= 1
            self.fill_events()
        else:
            self.show_turn(self.ordinal - 1)

    def go_to(self, index: int, ordinal: int | None = None) -> None:
        """Show event ``index``: its turn in the conversation, its row in the events table."""
        self.position = index
        if self.active() == "events":
            self.fill_events(select=index)
            return
        if self.active() != "conversation":
            self.action_tab("conversation")
        seq = None if ordinal is not None else self.ix.seqs[index]
        self.show_turn(self.ix.turn_of[index] if ordinal is None else ordinal, seq=seq)

    def action_jump(self) -> None:
        def done(text: str | None) -> None:
            if not text:
                return
            try:
                j = parse_jump(self.ix, text)
            except DshlogError as exc:
                self.notify(exc.message, severity="error")
                return
            self.go_to(j.index, j.turn)

        self.app.push_screen(Prompt("jump to a turn (37) or a seq (#120):"), done)

    def action_search(self) -> None:
        def done(text: str | None) -> None:
            if text:
                self.needle = text
                self._search(backward=False)

        self.app.push_screen(Prompt("search this session (smart case):", self.needle), done)

    def action_search_next(self) -> None:
        self._search(backward=False)

    def action_search_previous(self) -> None:
        self._search(backward=True)

    def _search(self, *, backward: bool) -> None:
        if not self.needle:
            self.notify("/ to search first")
            return
        here = self.selected_event()
        hit = self.ix.find(self.needle, -1 if here is None else here, backward=backward)
        if hit is None:
            self.notify(f"no match for {self.needle!r}", severity="warning")
            return
        self.go_to(hit)
        self.notify(f"{self.needle!r}: seq {self.ix.seqs[hit]} ({self.ix.type_of(hit)})", timeout=2)

    # -- copying
    def action_copy_seq(self) -> None:
        i = self.selected_event()
        if i is not None:
            self.app.copy_to_clipboard(str(self.ix.seqs[i]))
            self.notify(f"copied seq {self.ix.seqs[i]}", timeout=2)

    def action_copy_json(self) -> None:
        i = self.selected_event()
        if i is not None:
            self.app.copy_to_clipboard(self.ix.raw(i).decode("utf-8", "replace"))
            self.notify(f"copied event {self.ix.seqs[i]} as JSON", timeout=2)

    def action_back(self) -> None:
        app = self.app
        assert isinstance(app, BrowseApp)
        app.close_session()


class BrowseApp(App[None]):
    """``dshlog browse``: a root's sessions, or one session."""

    TITLE = "dshlog browse"
    CSS = """
    #session-title, #list-title { height: auto; padding: 0 1; background: $boost; }
    #refusal { height: auto; padding: 0 1; background: $error; color: $text; }
    #turn-title, #events-title, #requests-title { height: auto; color: $text-muted; padding: 0 1; }
    #tabs { height: 1fr; }
    #tabs ContentSwitcher { height: 1fr; }
    TabPane { height: 1fr; }
    #turn { height: 1fr; }
    .item { margin: 0 1 1 1; }
    .hit { background: $warning 20%; }
    #event-table, #surface-table, #request-table, #list { height: 1fr; }
    #surface-notes { height: auto; max-height: 8; color: $text-muted; }
    #surface-progress, #requests-progress { display: none; height: 1; padding: 0 1; }
    #event-filter, #list-filter { margin: 0 1; }
    Prompt { align: center middle; }
    #prompt { width: 70; height: auto; border: round $accent; padding: 0 1; background: $surface; }
    TextScreen { align: center middle; }
    #text-box { width: 90%; height: 85%; border: round $accent; background: $surface; }
    #text-title { background: $boost; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "quit"),
        Binding("question_mark", "help", "help"),
    ]

    def __init__(
        self, *, root: Path | None = None, target: str | None = None, tmpdir: str | None = None, source: Source = Source(),
        selection: Selection | None = None,
    ) -> None:
        super().__init__()
        self.root = root
        self.selection = selection
        self.target = target
        self.tmpdir = tmpdir
        #: how each session is read (a :class:`~dshlog.read.source.Source` without a path)
        self.how = source
        self.index: EventIndex | None = None
        #: the sessions shown that dsh refuses to open: (dsh's refusal, what ``dshlog rescue`` takes), each once
        self.refused: dict[str, tuple[DshlogError, str]] = {}

    def shown_refused(self, ix: EventIndex) -> None:
        """Remember a session shown although dsh refuses it: the command says so, and exits with its code, at the end."""
        if ix.refusal is not None:
            sid = ix.header.get("id") if isinstance(ix.header, dict) else None
            self.refused[ix.source] = (ix.refusal, rescue_target(sid if isinstance(sid, str) else None, ix.source))

    def on_mount(self) -> None:
        if self.root is not None:
            self.push_screen(SessionList(self.root, self.selection))
        if self.target is not None:
            self.open_session(self.target)

    def open_session(self, target: str) -> None:
        try:
            ix = open_index(self.how.at(target), tmpdir=self.tmpdir)
        except DshlogError as exc:
            self.notify(exc.one_line(), severity="error", timeout=8)
            return
        self.close_index()
        self.index = ix
        self.shown_refused(ix)
        self.push_screen(SessionView(ix, source=self.how))

    def close_session(self) -> None:
        if self.root is None:  # one file: there is nothing to go back to (q quits)
            return
        self.pop_screen()
        self.close_index()

    def close_index(self) -> None:
        if self.index is not None:
            self.index.close()
            self.index = None

    def action_help(self) -> None:
        if not isinstance(self.screen, TextScreen):
            self.push_screen(TextScreen("dshlog browse  ·  Escape closes", Text(HELP), screen_id="help"))

    def on_unmount(self) -> None:
        self.close_index()
