"""Which commands decide as dsh does, and which show a person what the log holds: the rule, once.

dsh opens a session or refuses it whole (a header it does not admit, a migration
it refuses, a v4 restore it refuses).  A command that claims dsh's view must
decide the same way, or it would show, rebuild or write something dsh never
holds: it refuses the log with dsh's reason and shows nothing.  A command that
shows a person what a log holds has no such claim: it reads the stored rows as
far as they can be read, names each row it had to skip, and exits with the code
of what it met (4 corrupt, 3 unsupported), whatever the form of its output.  A
transcript (``show``, ``export``, ``browse``) also opens with dsh's decision on
the whole log: a banner with dsh's refusal that names ``dshlog rescue``.

:data:`STANCES` is that rule.  The operations take their strictness from it, the
command line its exit-code policy, and the README's paragraph in "How dshlog
relates to dsh" and its "Exit codes" are tested against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType

__all__ = ["STANCES", "Stance", "commands", "stance"]


class Stance(Enum):
    """How a command treats a log dsh refuses."""

    #: decides as dsh does: a log dsh refuses is refused with dsh's reason, nothing is shown
    DSH = "decides as dsh does"
    #: shows the stored rows as far as they can be read, and says what dsh refuses
    READER = "shows what the log holds"

    @property
    def strict(self) -> bool:
        """Whether the log is opened as dsh opens it (its header decided before any row is read)."""
        return self is Stance.DSH


#: Every command (or command form) that reads a session log, and its stance.
STANCES: Mapping[str, Stance] = MappingProxyType({
    "migrate": Stance.DSH,
    "events --v4": Stance.DSH,
    "surface": Stance.DSH,
    "rebuild": Stance.DSH,
    "requests": Stance.DSH,
    "diff": Stance.DSH,
    "repair": Stance.DSH,
    "fork": Stance.DSH,
    "info": Stance.READER,
    "stats": Stance.READER,
    "events": Stance.READER,
    "tail": Stance.READER,
    "show": Stance.READER,
    "export": Stance.READER,
    "browse": Stance.READER,
})


def stance(command: str) -> Stance:
    """The stance of ``command`` (a key of :data:`STANCES`, e.g. ``"events --v4"``)."""
    return STANCES[command]


def commands(kind: Stance) -> tuple[str, ...]:
    """The commands of one stance, in the table's order."""
    return tuple(c for c, s in STANCES.items() if s is kind)
