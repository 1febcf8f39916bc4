"""`dshlog search`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..errors import ExitCode, UsageError
from ..model.search import ROLES, Hit, Query
from ..ops.sessions import store_sessions
from ..ops.search import SessionHits, pin
from ..ops.sessions import session_ids, unique_prefixes
from ..ops.search import search as search_sessions
from ..output.usage import hit_document, hit_line
from .app import command_app
from .common import (
    JSON_SHAPE,
    JobsOpt,
    SchedulerOpt,
    batch_executor,
    current,
    emit,
    emit_json,
    err,
    flush,
    out,
    print_problems,
    screen,
    store_targets,
)
from .select import CwdOpt, ProjectOpt, SinceOpt, UntilOpt, say, selection

app = command_app()


def roles(given: list[str] | None) -> frozenset[str]:
    """``--role`` as given (repeated, or ``user,assistant``); empty: every role."""
    wanted = {r.strip() for part in given or [] for r in part.split(",")}
    unknown = sorted(wanted - set(ROLES))
    if unknown:
        raise UsageError(f"--role {unknown[0]!r}: expected one of {', '.join(ROLES)}")
    return frozenset(wanted)


@app.command("search", epilog="""More examples:

\b
  dshlog search deploy
  dshlog search -i 'rate limit' --role assistant --since 7d
  dshlog search -e 'err(or)?\\b' --type 'tool/*' -C 20
  dshlog search -l migration --project demo
  dshlog search --json --reasoning because
""")
def search(
    pattern: Annotated[str, typer.Argument(metavar="PATTERN", help="The text to find (a fixed string; a regular expression with -e).")],
    targets: Annotated[Optional[list[str]], typer.Argument(metavar="[ROOT|FILE]...", help="Persistence roots, project or session directories, session files or ids (default: $DSH_HOME/sessions).")] = None,
    regex: Annotated[bool, typer.Option("--regex", "-e", help="PATTERN is a Python regular expression.")] = False,
    ignore_case: Annotated[bool, typer.Option("--ignore-case", "-i", help="Ignore case always. Without it, smart case: a PATTERN all in lower case ignores case, one with a capital letter matches exactly.")] = False,
    role: Annotated[Optional[list[str]], typer.Option("--role", metavar="ROLE", help=f"Only text of these roles ({', '.join(ROLES)}); repeatable.", autocompletion=lambda: list(ROLES))] = None,
    type_: Annotated[Optional[list[str]], typer.Option("--type", metavar="GLOB", help="Only events of these types (user/message, tool/*); repeatable.")] = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    project: ProjectOpt = None,
    cwd: CwdOpt = None,
    reasoning: Annotated[bool, typer.Option("--reasoning", help="Search the model's reasoning too.")] = False,
    context: Annotated[int, typer.Option("--context", "-C", metavar="N", min=0, help="Characters of text shown on each side of a match.")] = 40,
    files_only: Annotated[bool, typer.Option("--files-with-matches", "-l", help="Only the path of each session with a hit, once.")] = False,
    json_: Annotated[bool, typer.Option("--json", help="NDJSON: one object per hit (with -l: per session).")] = False,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
) -> None:
    """Hits of PATTERN in what people read in sessions: messages, tool arguments and output, and with --reasoning the reasoning.

    One line per hit: session, seq, turn, role, where in the message (text, arguments, output,
    reasoning) and the text around the match (highlighted on a terminal). JSON keys, envelope
    fields and attachments are never searched; .zstd sessions are searched as plain ones.

    Exit 0 whether or not anything was found (as `ls --grep`; 1 is dshlog's own failure): test
    the output, e.g. with -l. A session that cannot be read is named on stderr and the others are
    searched (exit 4 for damage, 6 for a missing file).

    Case: smart, as in less and ripgrep: a PATTERN all in lower case ignores case, one with a capital
    letter matches exactly; -i ignores case always.

    Example: dshlog search deploy --role user
    """
    chosen = selection(since, until, project, cwd)
    paths = store_sessions(store_targets(targets))
    pinned = pin(paths, chosen)
    say(pinned)
    sel = pinned.selection
    query = Query(pattern, regex=regex, ignore_case=True if ignore_case else None, roles=roles(role), types=tuple(type_ or ()),
                  since=sel.since, until=sel.until, reasoning=reasoning, context=context, project=sel.project, cwd=sel.cwd,
                  first_only=files_only)
    scr = screen()
    colour = scr.colour
    # a terminal shows ids people can type and a hit per screen line; piped, every id and text is whole
    short = unique_prefixes(session_ids(p for p in paths if isinstance(p, str))) if scr.tty else {}
    width = (scr.width or 80) if scr.tty else None
    seen: set[str] = set()  # -l: the sessions already named

    def shown(r: SessionHits, hit: Hit) -> None:
        """One hit, written and flushed as it is found: the first of a large log shows long before its read ends."""
        if files_only:
            if r.path in seen:
                return
            seen.add(r.path)
            if json_:
                emit_json({"shape": JSON_SHAPE, "session": r.id, "path": r.path}, pretty=False)
            else:
                out(r.path)
        elif json_:
            emit_json(hit_document(r.id, r.path, hit, JSON_SHAPE), pretty=False)
        else:
            label = short.get(r.id, r.id) if r.id else r.path
            emit((hit_line(label, hit, color=colour, width=width) + "\n").encode("utf-8"))  # hit_line sanitises each piece
        flush()

    # the paths are sessions: one of them is searched here, where its hits can be shown as they are found
    with batch_executor(jobs, scheduler, paths, one_each=True) as ex:
        for r in search_sessions(paths, query, executor=ex, on_hit=shown):
            if r.error is not None:  # after the hits found before it
                err(f"dshlog: {r.error}")
                current().note_outcome(ExitCode(r.exit_code))
                continue
            print_problems(r.path, r.notes, r.suppressed)
