"""`dshlog rescue`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..errors import UsageError
from ..model.rescue import TRANSFORMATIONS
from ..ops.rescue import CHECK_WRITES_NOTHING, RescueOutcome, StoreSummary, rescue_session, rescue_store
from ..output.table import table
from .app import command_app
from .common import (
    batch_source, done, emit_json, err, FileArg, js, JSON_SHAPE, JsonOpt, out, read_progress, resolve, screen,
    source_for,
)

app = command_app()

_KNOWN = ", ".join(t.name for t in TRANSFORMATIONS)


@app.command("rescue")
def rescue(
    file: FileArg = None,
    allow: Annotated[list[str], typer.Option("--allow", metavar="NAME", help=f"Allow one transformation; repeatable ({_KNOWN}).")] = [],
    all_: Annotated[bool, typer.Option("--all", help="Allow every transformation.")] = False,
    publish: Annotated[bool, typer.Option("--publish", help="Write the v4 successor beside the source (never over an existing file).")] = False,
    output: Annotated[Optional[str], typer.Option("-o", "--output", metavar="OUT", help="Write the v4 successor to OUT instead.")] = None,
    recursive: Annotated[Optional[str], typer.Option("-R", "--recursive", metavar="ROOT", help="Every session below ROOT (a dry run unless --publish).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Write nothing (the default without --publish or -o).")] = False,
    check: Annotated[bool, typer.Option("--check", help="Exit 10 when a session needs rescue (rescue can bring it back), 0 when dsh opens it; write nothing (not with --publish or -o).")] = False,
    json_: JsonOpt = False,
) -> None:
    """Bring back a session dsh refuses to open: each refusal, the change that resolves it, event by event.

    By default a dry run. With --publish (or -o OUT) and the transformations allowed (--allow NAME or --all),
    a v4 successor that dsh's reader accepts is published beside the source with a rescue record
    (<successor>.rescue.json: source path, size, sha256, transformations); the source is never touched.
    With -R ROOT, every session below ROOT: one line per session dsh refuses, then the refusals by reason.

    Example: dshlog rescue ~/.dsh/sessions/-home-ann-p-/<id>/ --all --publish
    """
    if check and (publish or output is not None):
        raise UsageError(CHECK_WRITES_NOTHING)
    if dry_run and (publish or output is not None):
        raise UsageError("--dry-run writes nothing: drop --publish / -o, or --dry-run")
    if recursive is not None:
        if file is not None or output is not None:
            raise UsageError("-R ROOT rescues each session beside its source: give no FILE or -o")
        summary = rescue_store(Path(recursive), allow=allow, all_=all_, publish=publish, check=check,
                               progress=None if json_ else _line, source=batch_source())
        if json_:
            emit_json({"shape": JSON_SHAPE, **summary.as_dict()})
        else:
            _summary(summary)
        raise typer.Exit(int(summary.exit_code))
    if publish and output is not None:
        raise UsageError("choose either --publish (beside the source) or -o OUT")
    outcome = rescue_session(source_for(resolve(file)), allow=allow, all_=all_, publish=publish,
                             output=Path(output) if output is not None else None, check=check, progress=read_progress())
    done()
    if json_:
        emit_json({"shape": JSON_SHAPE, **outcome.as_dict()})
    else:
        _human(outcome)
    if outcome.exit_code:
        raise typer.Exit(int(outcome.exit_code))


def _steps(o: RescueOutcome) -> str:
    return ", ".join(st.transformation for st in o.plan.steps) if o.plan is not None else ""


def _line(o: RescueOutcome) -> None:
    """One line for each session of a store dsh refuses (or dshlog cannot read), as soon as it is known."""
    if o.status == "failed":
        out(f"failed {o.source}")  # a result like the others, on stdout, naming its session
        err(f"dshlog: {o.error}")  # and why, on stderr
    elif o.status == "rescued":
        out(f"rescued {o.source} -> {o.target} ({o.events} events; {_steps(o)})")
    elif o.status == "rescuable":
        out(f"would rescue {o.source} ({_steps(o)})")
    elif o.status == "needs-allow":
        out(f"not allowed {o.source}: {o.why_not}")
    elif o.status == "cannot":
        out(f"cannot rescue {o.source}: {o.why_not}")
    for note in o.notes if o.status != "accepted" else ():
        err(f"dshlog: {o.source}: {note}")


def _summary(summary: StoreSummary) -> None:
    """The refusals by reason under headed columns, then the counts: the store's answer, on stdout."""
    doc = summary.as_dict()
    reasons = summary.reasons()
    if reasons:
        # sessions group by the reason with its numbers as N; the column shows a real refusal of each group
        table(screen(), "dsh's refusals, by reason", ["refused", "rescuable", "reason (first example)"],
              ([n, k, example] for _, example, n, k in reasons), justify={0: "right", 1: "right"})
    out(f"{doc['sessions']} sessions, dsh refuses {doc['refused']}, rescue brings back {doc['rescuable']}"
        + (f", {doc['rescued']} rescued" if doc["rescued"] else "")
        + (f", {doc['failed']} unreadable" if doc["failed"] else ""))


def _value(v: Any) -> str:
    return "(none)" if v is None else js(v)


def _human(o: RescueOutcome) -> None:
    """The plan as a person reads it: the refusal, each step's changes (seq, before, after, why), the verdict."""
    p = o.plan
    if o.status == "failed":
        err(f"dshlog: {o.error}")
        return
    if p is None or p.first is None:
        out(f"{o.source}: dsh opens this session as it is: nothing to rescue")
        return
    out(f"{o.source}: dsh refuses it: {p.first.describe()}")
    for n, st in enumerate(p.steps, 1):
        out(f"  {n}. {st.transformation}{'' if st.allowed else ' (not allowed)'}: resolves {st.refusal.describe()}")
        for c in st.changes:
            where = f"seq {c.seq}" if c.seq is not None else "header"
            out(f"     {where}: {_value(c.before)} -> {_value(c.after)}: {c.why}")
    if o.status == "rescued":
        err(f"rescued: {o.target} ({o.events} events); record {o.record}")
    elif o.status == "rescuable":
        err("dsh accepts the result; nothing written: --publish (beside the source) or -o OUT")
    elif o.why_not:
        err(f"dshlog: {o.why_not}")
    for note in o.notes:
        err(f"dshlog: {note}")
