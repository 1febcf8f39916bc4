"""Typed results of the library's operations, each with the versioned JSON shape the CLI prints.

A result is a frozen dataclass: what a script reads as attributes, and
``as_dict()``, the very document ``dshlog <command> --json`` prints for the
same input (``{"shape": 1, ...}``; the number is :data:`~dshlog.output.jsondoc.SHAPE`).
Results are built from what the operations in :mod:`dshlog.ops` and the model
return; where an operation already has a shape (a validation report, a
migration outcome, a session of a listing), the result keeps that object and
its ``as_dict`` is the one owner of the shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..check.problems import Problem
from ..errors import DshlogError
from ..output.jsondoc import SHAPE
from .outcome import ReadNotes

__all__ = [
    "SHAPE",
    "ExportResult",
]

# ----------------------------------------------------------------------------- info and stats


# ----------------------------------------------------------------------------- validate


# ----------------------------------------------------------------------------- model view


# ----------------------------------------------------------------------------- writers


@dataclass(frozen=True, slots=True)
class ExportResult:
    """``dshlog export -o OUT``: the file published, and what publishing could not keep.

    The command prints no JSON for it (only ``written: OUT``); ``as_dict()`` is the
    library's own document, in the same versioned form.
    """

    path: str
    format: str
    warnings: tuple[str, ...] = ()
    source: str = ""  # the log it was made of
    notes: tuple[Problem, ...] = ()
    suppressed: Mapping[str, int] = field(default_factory=dict)
    #: dsh's refusal of the source, whose transcript was exported anyway (it opens with it), and what
    #: ``dshlog rescue`` takes to bring it back
    refused: DshlogError | None = None
    rescue: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"shape": SHAPE, "path": self.path, "format": self.format, "warnings": list(self.warnings)}

    @property
    def noted(self) -> ReadNotes:
        """The reader's notes on the source (the file written has its own ``path``), and dsh's refusal of it."""
        return ReadNotes(self.source, self.notes, self.suppressed, self.refused, self.rescue)
