"""Where dsh keeps sessions, and what its files are called (FORMAT §1.1-1.3, §6.3-6.4).

Layout of a persistence root::

    <root>/<projectKey(cwd)> or _no-cwd/<encodeSegment(sessionId)>/session[.vN].jsonl[.zstd]

Every file-name and path rule of the format lives here, once: the generation-name
grammar (parsed and built), which generation of a directory dsh reads, the project
key of a ``cwd``, the session-id segment codec, the persistence root around a file,
the lock file, and the names under which files are staged before they are published
(so that any writer recognises what an interrupted run of any other writer left).
Pure functions over names: listing a directory is the caller's business.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path, PurePath
from typing import Final, NamedTuple

from ..errors import UnsupportedVersion, UsageError
from .texts import encoding_mismatch, flat_file_layout, identity_mismatch, requested_id_mismatch, session_not_found
from .values import MAX_SAFE_INTEGER
from .vocabulary import CURRENT_VERSION

__all__ = [
    "Generation",
    "LOCK_FILENAME",
    "NO_CWD",
    "NO_GENERATION",
    "STAGING_MARK",
    "choose_generation",
    "companion_names",
    "decode_segment",
    "default_root",
    "encode_segment",
    "generation_name",
    "identity_refusal",
    "look_at_root",
    "root_refusal",
    "RootLook",
    "is_project_dir",
    "is_migration_staging_name",
    "is_staging_name",
    "parse_generation",
    "persistence_root",
    "project_key",
    "rescue_record_name",
    "session_dir",
    "staging_affixes",
]

#: dsh's per-session write lock, a 0-byte file that is never removed (FORMAT §6.4).
LOCK_FILENAME: Final[str] = "session.lock"

#: The project directory of a session whose header has no ``cwd``.
NO_CWD: Final[str] = "_no-cwd"

ZSTD_SUFFIX: Final[str] = ".zstd"

#: What a directory without a session generation is refused with (a session directory is one that holds one).
NO_GENERATION: Final[str] = "no session generation (session[.vN].jsonl[.zstd]) in this directory"

# ----------------------------------------------------------------------------- generations

_CANONICAL = re.compile(r"session(?:\.v([1-9][0-9]*))?\.jsonl(\.zstd)?\Z")


class Generation(NamedTuple):
    """A canonical generation file name, parsed: its format version and encoding."""

    version: int
    compressed: bool


def parse_generation(name: str) -> Generation | None:
    """The generation a basename names, or ``None`` for anything that is not one.

    ``session.jsonl`` is v0, ``session.vN.jsonl`` is vN (N >= 1, no leading zeros,
    a safe integer), each optionally ``.zstd``.  Temporary names, ``session.v0.jsonl``,
    ``session.v01.jsonl`` and other spellings are not generations and are ignored.
    """
    m = _CANONICAL.match(name)
    if m is None:
        return None
    version = int(m.group(1)) if m.group(1) else 0
    if version > MAX_SAFE_INTEGER:
        return None
    return Generation(version, m.group(2) is not None)


def generation_name(version: int, compressed: bool) -> str:
    """The canonical basename of generation ``version`` (the inverse of :func:`parse_generation`)."""
    base = "session.jsonl" if version == 0 else f"session.v{version}.jsonl"
    return base + ZSTD_SUFFIX if compressed else base


def successor_name(name: str) -> str:
    """The name of the current generation a migration publishes beside ``name``, in its encoding.

    The source's own encoding when ``name`` is a generation; otherwise a ``.zstd`` ending says it.
    """
    g = parse_generation(name)
    return generation_name(CURRENT_VERSION, g.compressed if g is not None else name.endswith(ZSTD_SUFFIX))


def choose_generation(names: Iterable[str], *, where: str = "") -> str:
    """The generation dsh reads among a session directory's entry names (FORMAT §1.3).

    The numerically highest canonical version wins.  A directory holding both
    compressed and plain generations is refused, as dsh refuses a root that uses
    both encodings; a directory with none is a usage error.  ``where`` names the
    directory in the error.
    """
    plain: list[tuple[int, str]] = []
    packed: list[tuple[int, str]] = []
    for name in sorted(names):
        g = parse_generation(name)
        if g is not None:
            (packed if g.compressed else plain).append((g.version, name))
    if plain and packed:
        raise UnsupportedVersion(
            f'session directory mixes plain ({", ".join(n for _, n in plain)}) and compressed '
            f'({", ".join(n for _, n in packed)}) generations; dsh refuses a root that uses both encodings',
            path=where or None,
        )
    found = plain or packed
    if not found:
        try:
            # dsh's words only for a directory where dsh looks a session up: in a project directory
            inside = where and is_project_dir(PurePath(where).parent.name)
            missing = session_not_found(decode_segment(PurePath(where).name)) + ": " if inside else ""
        except UsageError:
            missing = ""  # not a directory dsh would look a session up in
        raise UsageError(f"{missing}{NO_GENERATION}", path=where or None)
    return max(found)[1]


# ----------------------------------------------------------------------------- names from ids

_SAFE: Final[frozenset[int]] = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_SEPARATORS: Final[frozenset[int]] = frozenset((0x2F, 0x5C, 0x3A))  # / \ :
_SLUG_MAX: Final[int] = 251
_SEGMENT = re.compile(r"~([0-9A-F]{4})|([A-Za-z0-9._-])")
_SEPARATOR_RUN = re.compile(r"[/\\:]+")  # the characters of _SEPARATORS


def _code_units(text: str) -> list[int]:
    """UTF-16 code units, as JavaScript strings see them (lone surrogates kept)."""
    b = text.encode("utf-16-le", "surrogatepass")
    return [b[i] | (b[i + 1] << 8) for i in range(0, len(b), 2)]


def encode_segment(session_id: str) -> str:
    """The session directory name of an id (``encodeSegment``): injective and decodable.

    Never ``.``, ``..``, empty or containing a separator, so an id read from a log
    can only become a path through this function.
    """
    if not isinstance(session_id, str) or session_id == "":
        raise UsageError("a session id must be a non-empty string to name a directory")
    if session_id == ".":
        return "~002E"
    if session_id == "..":
        return "~002E~002E"
    return "".join(chr(u) if u in _SAFE else f"~{u:04X}" for u in _code_units(session_id))


def decode_segment(segment: str) -> str:
    """The session id a directory name encodes (the inverse of :func:`encode_segment`).

    Raises :class:`UsageError` for a name that :func:`encode_segment` never produces
    (``~0041`` for a plain ``A``, lower-case hex, stray characters), so a stray
    directory is never mistaken for a session.
    """
    if segment in (".", "..", ""):
        raise UsageError(f"{segment!r} is not an encoded session id")
    units: list[int] = []
    pos = 0
    for m in _SEGMENT.finditer(segment):
        if m.start() != pos:
            break
        units.append(int(m.group(1), 16) if m.group(1) else ord(m.group(2)))
        pos = m.end()
    if pos != len(segment):
        raise UsageError(f"{segment!r} is not an encoded session id")
    text = b"".join(u.to_bytes(2, "little") for u in units).decode("utf-16-le", "surrogatepass")
    if encode_segment(text) != segment:
        raise UsageError(f"{segment!r} is not an encoded session id")
    return text


def project_key(cwd: str | None) -> str:
    """The project directory name of a header ``cwd`` (``_no-cwd`` without one); lossy by design."""
    if cwd is None:
        return NO_CWD
    if cwd == "":
        raise UsageError("an empty cwd has no project directory")
    # A run of separators is one "-", and the leading dashes go (literal "-" included: the slug's
    # dashes are exactly these).  Every other code unit is at least one character of the slug, so
    # only the first _SLUG_MAX characters of what is left can reach it: a cwd of megabytes costs
    # what a short one does.
    rest = _SEPARATOR_RUN.sub("-", cwd).lstrip("-")
    slug = "".join(chr(u) if u in _SAFE else f"~{u:04X}" for u in _code_units(rest[:_SLUG_MAX])) or "root"
    return f"--{slug[:_SLUG_MAX]}--"


def is_project_dir(name: str) -> bool:
    """Whether a directory name can be a project directory of a root.

    :func:`project_key` always yields ``--<slug>--`` with a non-empty slug (at least
    five characters), or ``_no-cwd``.
    """
    return name == NO_CWD or (len(name) >= 5 and name.startswith("--") and name.endswith("--"))


def session_dir(root: Path, cwd: str | None, session_id: str) -> Path:
    """Where dsh keeps a session: the only way an id from a log becomes a path."""
    return Path(root) / project_key(cwd) / encode_segment(session_id)


def persistence_root(path: str | PurePath) -> Path | None:
    """``<root>`` of ``<root>/<project>/<session>/<generation>``, when the path has that shape."""
    p = Path(path)
    if parse_generation(p.name) is None:
        return None
    project = p.parent.parent
    if not is_project_dir(project.name):
        return None
    return project.parent


def identity_refusal(path: str | PurePath, header_id: object, cwd: object) -> str | None:
    """dsh's refusal of a generation whose place in a store is not its header's, or ``None``.

    dsh opens a session by id in its root: the session directory must decode to the
    header's id, and the header's id and cwd must derive the file's own path (dsh's
    "bound storage identity").  A path outside the store layout is not judged.
    """
    p = Path(path)
    root = persistence_root(p)
    if root is None or not isinstance(header_id, str) or not (cwd is None or isinstance(cwd, str)):
        return None
    try:
        requested = decode_segment(p.parent.name)
    except UsageError:
        return None  # not a name dsh gives a session directory
    if requested != header_id:
        return requested_id_mismatch(p, requested, header_id)
    try:
        expected = session_dir(root, cwd, header_id) / p.name
    except UsageError:
        return None
    if expected != p:
        return identity_mismatch(p, header_id, expected)
    return None


#: How many directory entries :func:`look_at_root` reads before it gives up: a root of a
#: few thousand sessions is judged whole, a larger one is not judged (a look per session
#: must stay cheap, and the store commands judge a root once).
ROOT_LOOK_BUDGET: Final[int] = 50_000

#: A directory entry as :func:`look_at_root` needs it: its name, whether it is a directory,
#: whether it is a regular file (symbolic links are neither, as dsh's directory listing says).
Entry = tuple[str, bool, bool]


class RootLook(NamedTuple):
    """What dsh's check of a root meets first, in its walk order (``(position, path)`` each).

    dsh refuses to open any session of a root holding a flat ``<project>/<name>.jsonl[.zstd]``
    file, or a generation of the encoding it is not configured for ("a root belongs to one
    encoding"); it walks every project directory, the flat files of each before its session
    directories.
    """

    flat: tuple[int, Path] | None
    plain: tuple[int, Path] | None
    packed: tuple[int, Path] | None


def look_at_root(root: Path, listdir: Callable[[Path], list[Entry]], *, budget: int = ROOT_LOOK_BUDGET) -> RootLook | None:
    """The first flat file and the first generation of each encoding of a root, or ``None``
    when the root has more than ``budget`` entries to look at (then nothing is judged).

    Pure over what ``listdir`` answers (the caller's I/O; an unreadable directory answers
    ``[]``); names are taken in sorted order, where dsh takes its directory's order.
    """
    found: dict[str, tuple[int, Path]] = {}
    seen = 0
    position = 0
    for name, is_dir, _ in sorted(listdir(root)):
        if not is_dir:
            continue
        project = root / name
        entries = sorted(listdir(project))
        seen += len(entries)
        for entry, _, is_file in entries:
            if is_file and (entry.endswith(".jsonl") or entry.endswith(ZSTD_SUFFIX) and entry[: -len(ZSTD_SUFFIX)].endswith(".jsonl")):
                found.setdefault("flat", (position, project / entry))
                position += 1
                break
        for entry, is_dir, _ in entries:
            if not is_dir:
                continue
            names = [n for n, _, _ in listdir(project / entry)]
            seen += len(names)
            if seen > budget:
                return None
            for compressed in (False, True):
                versions = [(g.version, n) for n in names if (g := parse_generation(n)) is not None and g.compressed == compressed]
                if versions:
                    found.setdefault("packed" if compressed else "plain", (position, project / entry / max(versions)[1]))
            position += 1
        if len(found) == 3:
            break
    return RootLook(found.get("flat"), found.get("plain"), found.get("packed"))


def root_refusal(look: RootLook | None, compressed: bool) -> str | None:
    """dsh's refusal of a session of the root ``look`` describes, in encoding ``compressed``, or ``None``."""
    if look is None:
        return None
    opposite = look.plain if compressed else look.packed
    first = min((f for f in (look.flat, opposite) if f is not None), default=None, key=lambda f: f[0])
    if first is None:
        return None
    return flat_file_layout(first[1]) if first is look.flat else encoding_mismatch(first[1], not compressed)


def default_root(dsh_home: str | None, home: Path) -> Path:
    """``$DSH_HOME/sessions``; ``DSH_HOME`` unset or empty means ``~/.dsh`` (values passed in)."""
    return (Path(dsh_home) if dsh_home else home / ".dsh") / "sessions"


# ----------------------------------------------------------------------------- staging names

#: The mark of every name a writer stages a file under before publishing it.
STAGING_MARK: Final[str] = ".dshlog-"
_STAGING = (
    # dshlog's own: ``.<final name>.dshlog-<16 hex>.tmp``
    re.compile(r"\..+\.dshlog-[0-9a-f]{16}\.tmp\Z"),
    # dsh's migration successor: ``session.migration.<16 hex>.jsonl[.zstd].tmp`` (FORMAT §6.3)
    re.compile(r"session\.migration\.[0-9a-f]{16}\.jsonl(?:\.zstd)?\.tmp\Z"),
)


def staging_affixes(final_name: str, *, migration: bool = False) -> tuple[str, str]:
    """Prefix and suffix of the staging name of a file to be published as ``final_name``.

    A migration successor is staged under dsh's own name, so dsh and dshlog each
    recognise the other's leftovers; everything else under ``.<final>.dshlog-``.
    The caller puts 16 random lowercase hex digits between the two.
    """
    if migration:
        return "session.migration.", ".jsonl.zstd.tmp" if final_name.endswith(ZSTD_SUFFIX) else ".jsonl.tmp"
    return f".{final_name}{STAGING_MARK}", ".tmp"


#: What follows a rescued successor's name in the name of its rescue record (docs/rescue.md).
RESCUE_RECORD_SUFFIX: Final[str] = ".rescue.json"


def rescue_record_name(final_name: str) -> str:
    """The rescue record beside a rescued successor: ``session.v4.jsonl.rescue.json``.

    Not a generation name (dsh ignores it), and tied to the successor by its name.
    """
    return final_name + RESCUE_RECORD_SUFFIX


def companion_names(final_name: str) -> tuple[str, ...]:
    """The files a writer publishes just before ``final_name``, which say what it is (its rescue record).

    ``final_name``'s own link is the commit point of such a publication: a
    companion without ``final_name`` beside it is the trace of a run killed
    between the two links, describes nothing, and goes with the next
    publication of ``final_name`` (:class:`dshlog.write.transaction.Publication`).
    """
    return (rescue_record_name(final_name),)


def is_staging_name(name: str) -> bool:
    """Whether a name is one a writer (this project's or dsh's migration) stages files under."""
    return any(p.match(name) for p in _STAGING)


def is_migration_staging_name(name: str) -> bool:
    """Whether a name is dsh's migration staging name, which dsh writes holding ``session.lock``
    but without marking the file itself: only a holder of that lock may take it for a leftover."""
    return _STAGING[1].match(name) is not None
