"""`dshlog rescue`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..errors import UsageError
from ..model.rescue import TRANSFORMATIONS
from ..ops.rescue import RescueOutcome, rescue_session, rescue_store
from .app import command_app
from ..ops.outcome import worst
from .common import JSON_SHAPE, FileArg, JsonOpt, current, emit_json, err, js, may_fork, out, resolve

app = command_app()

_KNOWN = ", ".join(t.name for t in TRANSFORMATIONS)


@app.command("rescue")
def rescue(
    file: FileArg = None,
    allow: Annotated[list[str], typer.Option("--allow", metavar="NAME", help=f"Allow one transformation; repeatable ({_KNOWN}).")] = [],
    all_: Annotated[bool, typer.Option("--all", help="Allow every transformation.")] = False,
    publish: Annotated[bool, typer.Option("--publish", help="Write the v4 successor beside the source (never over an existing file).")] = False,
    output: Annotated[Optional[str], typer.Option("-o", "--output", metavar="OUT", help="Write the v4 successor to OUT instead.")] = None,
    recursive: Annotated[Optional[str], typer.Option("-R", "--recursive", metavar="ROOT", help="Summarise every session below ROOT (a dry run).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Write nothing (the default without --publish or -o).")] = False,
    json_: JsonOpt = False,
) -> None:
    """Bring back a session dsh refuses to open: each refusal, the change that resolves it, event by event.

    By default a dry run. With --publish (or -o OUT) and the transformations allowed (--allow NAME or --all),
    a v4 successor that dsh's reader accepts is published beside the source with a rescue record
    (<successor>.rescue.json: source path, size, sha256, transformations); the source is never touched.

    Example: dshlog rescue ~/.dsh/sessions/-home-ann-p-/<id>/ --all --publish
    """
    if recursive is not None:
        if file is not None or publish or output is not None:
            raise UsageError("-R ROOT summarises a store as a dry run: give no FILE, --publish or -o")
        summary = rescue_store(Path(recursive), allow=allow, all_=all_, parallel=may_fork())
        failed = [o for o in summary.outcomes if o.status == "failed"]
        current().note_outcome(worst(o.exit_code for o in failed))  # a session it could not read: the batch's exit code
        if json_:
            emit_json({"shape": JSON_SHAPE, **summary.as_dict()})
            return
        for o in failed:
            err(f"dshlog: {o.error}")
        doc = summary.as_dict()
        out(f"{doc['sessions']} sessions, dsh refuses {doc['refused']}, rescue brings back {doc['rescuable']}"
             + (f", {doc['failed']} unreadable" if doc["failed"] else ""))
        for r in doc["reasons"]:
            out(f"  {r['sessions']:>5}  {r['rescuable']:>5} rescuable  {r['reason']}")
        return
    if dry_run and (publish or output is not None):
        raise UsageError("--dry-run writes nothing: drop --publish / -o, or --dry-run")
    if publish and output is not None:
        raise UsageError("choose either --publish (beside the source) or -o OUT")
    outcome = rescue_session(Path(resolve(file)), allow=allow, all_=all_, publish=publish,
                             output=Path(output) if output is not None else None, parallel=may_fork())
    if json_:
        emit_json({"shape": JSON_SHAPE, **outcome.as_dict()})
    else:
        _human(outcome)
    if outcome.exit_code:
        raise typer.Exit(int(outcome.exit_code))


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
