"""The migration chain: adjacent edges composed from a stored version to v4.

FORMAT §4.1: a pipeline of streaming stages, each created fresh per artifact.
Events flow through one at a time (no intermediate list); ``finish`` of each
stage emits its trailing events into the next stage and reports the inherited
cut, which the next stage must agree with.  A plain stage error is re-raised with
dsh's text ``<edge> refuses this format vN Session: <detail>``; one dsh throws as
unsupported passes through with its own text (:func:`~dshlog.migrate._common.rewrap`).
"""

from __future__ import annotations

from typing import Any, cast
from collections.abc import Callable, Iterable, Iterator

from .. import fastpaths
from ..errors import CorruptLog, DshlogError, UnsupportedVersion
from ..protocol.packed import PackedRun
from ..check.header import validate_header
from ..protocol.texts import FORMAT_VERSION_REFUSAL, newer_version
from ..protocol.values import has_placeholder, is_count
from ..protocol.vocabulary import CURRENT_VERSION, header_key_order
from ._common import Edge, Stage, rewrap
from .v0_v1 import V0ToV1
from .v1_v2 import V1ToV2
from .v2_v3 import V2ToV3
from .v3_v4 import V3ToV4

#: Edge classes by source version; each declares ``source_version``/``target_version``.
EDGES: tuple[Edge, ...] = (V0ToV1, V1ToV2, V2ToV3, V3ToV4)


def _check_adjacent(edges: Iterable[Edge]) -> None:
    """dsh checks adjacency when an edge is declared; a broken table is a bug here."""
    for edge in edges:
        if edge.target_version != edge.source_version + 1:
            raise DshlogError(f"{edge.name} must declare adjacent v{edge.source_version}->v{edge.source_version + 1}")


_check_adjacent(EDGES)


def _validate(header: dict[str, Any], version: int, projection: bool) -> None:
    problems = validate_header(header, version)
    cwd = header.get("cwd")
    if projection and isinstance(cwd, str) and has_placeholder(cwd):  # e.g. "{{cwd}}/workspace"
        problems = [p for p in problems if not p.endswith("cwd must be absolute")]
    if problems:
        raise CorruptLog(problems[0])


def _stored_version(header: Any) -> int:
    if not isinstance(header, dict):
        raise CorruptLog("Session header must be a JSON object")
    version = header.get("version")
    if not is_count(version):
        raise CorruptLog(FORMAT_VERSION_REFUSAL)
    if version > CURRENT_VERSION:
        raise UnsupportedVersion(newer_version(header.get("id"), int(version), CURRENT_VERSION))
    return int(version)


def canonical_header(h: dict[str, Any], version: int) -> dict[str, Any]:
    """Header keys in the writer's order (unexpected keys would have been refused)."""
    order = [k.rstrip("?") for k in header_key_order(version)]
    out = {k: h[k] for k in order if k in h}
    out.update((k, v) for k, v in h.items() if k not in out)
    return out


def header_only(header: dict[str, Any], *, projection: bool = False) -> dict[str, Any]:
    """Migrate a physical header to v4 without reading the body (``list``/``stat``).

    Applies every edge's header function and validates the target after each step,
    so a header that cannot become a valid v4 header is reported as such.
    """
    version = _stored_version(header)
    _validate(header, version, projection)
    h = header
    for edge in EDGES[version:]:
        try:
            h = edge.header(h)
        except DshlogError as err:
            raise rewrap(err, edge.name, edge.source_version, subject="Session header") from err
        _validate(h, edge.target_version, projection)
    return canonical_header(h, CURRENT_VERSION)


class MigratedEvents(Iterator[dict[str, Any]]):
    """Lazy v4 event iterator; ``inherited_cut`` is set once it is exhausted."""

    def __init__(self, gen_factory: Callable[[MigratedEvents], Iterator[dict[str, Any]]]) -> None:
        self.inherited_cut: int | None = None
        self._it = gen_factory(self)

    def __iter__(self) -> MigratedEvents:
        return self

    def __next__(self) -> dict[str, Any]:
        return next(self._it)


def _through(stages: list[Stage], i: int, batch: Iterable[Any], out: list[dict[str, Any]]) -> None:
    """Feed ``batch`` to stage ``i`` and everything it produces on down the chain; v4 events land in ``out``.

    Plain calls and lists instead of one generator per stage and event: the chain
    sees every stored event of a log, and generator frames were its main cost.
    ``out`` receives events in exactly the order a lazy pipeline would yield them.
    """
    stage = stages[i]
    last = i + 1 == len(stages)
    for ev in batch:
        if type(ev) is PackedRun:
            # a compact run (FORMAT §4.1): a stage that cannot take it whole
            # (no feed_run, or feed_run answers None) gets its member events
            feed_run = getattr(stage, "feed_run", None)
            try:
                produced = feed_run(ev) if feed_run is not None else None
            except DshlogError as err:
                raise rewrap(err, stage.name, stage.source_version, ev.seq) from err
            if produced is None:
                _through(stages, i, ev.expand(), out)
                continue
        else:
            try:
                produced = stage.feed(ev)
            except DshlogError as err:
                raise rewrap(err, stage.name, stage.source_version, ev.get("seq")) from err
        if not produced:
            continue
        if last:
            out.extend(produced)
        else:
            _through(stages, i + 1, produced, out)


def _run(stages: list[Stage], events: Iterable[Any], owner: MigratedEvents) -> Iterator[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    first = stages[0]
    feed0 = first.feed
    single = len(stages) == 1
    try:
        for event in events:
            if type(event) is PackedRun or single:
                _through(stages, 0, (event,), out)
            else:  # _through's plain-event branch for stage 0, inlined (one call per stored event saved)
                try:
                    produced = feed0(event)
                except DshlogError as err:
                    raise rewrap(err, first.name, first.source_version, event.get("seq")) from err
                if produced:
                    _through(stages, 1, produced, out)
            if out:
                yield from out
                out.clear()
        for i, stage in enumerate(stages):
            if i:
                stage.source_cut = stages[i - 1].cut
            try:
                trailing = stage.finish()
            except DshlogError as err:
                raise rewrap(err, stage.name, stage.source_version) from err
            if trailing and i + 1 < len(stages):
                _through(stages, i + 1, trailing, out)
            else:
                out.extend(trailing)
            yield from out
            out.clear()
    except DshlogError:
        # what a lazy pipeline would have yielded before the refusal is still delivered first
        yield from out
        out.clear()
        raise
    owner.inherited_cut = stages[-1].cut


def migrate_stream(
    header: dict[str, Any],
    events: Iterable[dict[str, Any]],
    *,
    child_facts: list[dict[str, Any]] | None,
    projection: bool = False,
    system_prompt_plugins: Iterable[str] = (),
) -> tuple[dict[str, Any], MigratedEvents]:
    """Migrate a stored generation of any version 0..4 to v4, lazily.

    ``header`` is the stored physical header; ``events`` its logical events in
    order (range-encoded ``sourceEventSeqs`` already expanded by the reader); a
    v0/v1 packed row may be either its expanded ``assistant/chunk`` events or one
    :class:`~dshlog.read.rows.PackedRun` (a compact run: much cheaper, same output).  Returns the v4 physical header and a lazy iterator
    of v4 events (``.inherited_cut`` is known after exhaustion).  ``child_facts``
    is the explicit list for the v3→v4 catalog completion (FORMAT §4.5.7); ``None``
    refuses with dsh's text because the edge cannot run without it.
    ``projection=True`` accepts committed test-fixture projections: ``{{...}}``
    placeholders stand in for values whose real type is not a string (e.g.
    ``"tools":"{{tools}}"``, ``"cwd":"{{cwd}}"``) and are kept as opaque values.
    ``system_prompt_plugins`` names more packages the v3→v4 edge takes for dsh's
    system-prompt producer (a fork build's own spelling; upstream's is always one).
    A v4 input passes through unchanged (its validation is the reader's job).
    """
    version = _stored_version(header)
    _validate(header, version, projection)
    if version == CURRENT_VERSION:
        def passthrough(owner: MigratedEvents) -> Iterator[dict[str, Any]]:
            yield from events
        return canonical_header(header, CURRENT_VERSION), MigratedEvents(passthrough)

    stages: list[Stage] = []
    h = header
    for edge in EDGES[version:]:
        try:  # dsh advances the header before it creates the stage
            target = edge.header(h)
        except DshlogError as err:
            raise rewrap(err, edge.name, edge.source_version, subject="Session header") from err
        _validate(target, edge.target_version, projection)
        try:
            stage: Stage = (V3ToV4(h, child_facts=child_facts, projection=projection, system_prompt_plugins=system_prompt_plugins)
                            if edge is V3ToV4 else cast(Callable[..., Stage], edge)(h, projection=projection))
        except DshlogError as err:
            raise rewrap(err, edge.name, edge.source_version) from err
        h = target
        if stages and stages[-1].target_version != stage.source_version:  # pragma: no cover - table is checked
            raise DshlogError("migration stages are not adjacent")
        stages.append(stage)
    if version == 0:
        # v1->v2 repeats v0->v1's frozen-inventory check in its looser v1 form; every
        # event v0->v1 passes on has passed the v0 form already, so skip the repeat
        stages[1].inputs_checked = True  # type: ignore[attr-defined]  # stages[1] is the V1ToV2 made just above
        if fastpaths.fast():
            # and v2->v3 repeats v0->v1's payload check: of a version-blind type, once is enough
            stages[2].v0_checked = True  # type: ignore[attr-defined]  # stages[2] is the V2ToV3 made just above
    out_header = canonical_header(h, CURRENT_VERSION)
    return out_header, MigratedEvents(lambda owner: _run(stages, events, owner))
