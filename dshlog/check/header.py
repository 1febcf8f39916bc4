"""dsh's rules for a physical session header, with dsh's texts (FORMAT §2.1).

Key sets and orders are vocabulary (:mod:`dshlog.protocol.vocabulary`); what makes a
header acceptable, and how dsh words each refusal, is decided here once for the
reader, the migration chain and ``validate``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from ..protocol.values import is_count
from ..protocol.vocabulary import RETIRED_HEADER_KEYS, header_key_order, header_optional_keys, header_required_keys
from ..protocol.jsjson import stringify
from ..protocol.texts import HEADER_NOT_AN_OBJECT

__all__ = ["CwdPlatform", "is_absolute_cwd", "validate_header"]

_WINDOWS_DRIVE_ABS = re.compile(r"^[A-Za-z]:[\\/]")
_WINDOWS_UNC = re.compile(r"^[\\/]{2}[^\\/]+[\\/]+[^\\/]+")

CwdPlatform = Literal["any", "posix", "windows"]


def is_absolute_cwd(value: str, platform: CwdPlatform = "any") -> bool:
    """Absolute in the POSIX or Windows sense.

    dsh asks Node's ``path.isAbsolute`` of the platform it runs on, so a log
    written on Windows looks relative on Linux and the other way round.  By
    default both forms are accepted (FORMAT §8 item 5); ``platform`` narrows it.
    """
    posix = value.startswith("/")
    windows = bool(_WINDOWS_DRIVE_ABS.match(value) or _WINDOWS_UNC.match(value)) or value.startswith("\\")
    if platform == "posix":
        return posix
    if platform == "windows":
        return windows or posix  # Node's win32 isAbsolute also accepts a leading '/'
    return posix or windows


def validate_header(
    header: Any,
    version: int | None = None,
    *,
    cwd_platform: CwdPlatform = "any",
    check_order: bool = False,
) -> list[str]:
    """Problem texts for a physical header of ``version`` (default: its own ``version``).

    Reports every deviation instead of stopping at the first, using dsh's texts
    (``format vN header lacks required field X`` etc.).  Key order is not a
    validity rule for dsh; ``check_order`` adds a note when it differs from the
    writer's order (useful for byte-exact tooling).
    """
    if not isinstance(header, dict):
        return [HEADER_NOT_AN_OBJECT]
    problems: list[str] = []
    stored = header.get("version")
    if version is None:
        if not is_count(stored):
            return ["Session header version must be a non-negative safe integer"]
        version = int(stored)
    tag = f"format v{version} header"
    if header.get("type") != "session":
        problems.append(f'{tag} type must be "session"')
    if stored != version:
        problems.append(f"expected format v{version} header (found version {stringify(stored)})")

    if RETIRED_HEADER_KEYS & header.keys():
        problems.append("session header uses retired policy baseline fields")
    required = header_required_keys(version)
    allowed = required | header_optional_keys(version)
    for key in header_key_order(version):
        name = key.rstrip("?")
        if name != "type" and name in required and name not in header:
            problems.append(f"{tag} lacks required field {name}")
    for key in header:
        if key not in allowed and key not in RETIRED_HEADER_KEYS:
            problems.append(f"{tag} has unexpected field {key}")

    if "id" in header and not isinstance(header["id"], str):
        problems.append(f"{tag} id must be a string")
    for key in ("createdAt", "delegationDepth", "seedLength"):
        if key in header and key in allowed and not is_count(header[key]):
            problems.append(f"{tag} {key} must be a non-negative safe integer")
    if "isSeeded" in header and "isSeeded" in allowed and not isinstance(header["isSeeded"], bool):
        problems.append(f"{tag} isSeeded must be boolean")
    if "cwd" in header:
        cwd = header["cwd"]
        if not isinstance(cwd, str) or not is_absolute_cwd(cwd, cwd_platform):
            problems.append(f"{tag} cwd must be absolute")
    for key in ("parentSession", "agentPreset"):
        if key in header and not isinstance(header[key], str):
            problems.append(f"{tag} {key} must be a string")
    if "origin" in header and header["origin"] != "subagent":
        problems.append(f'{tag} origin must be "subagent"')

    if check_order:
        canonical = [k.rstrip("?") for k in header_key_order(version)]
        present = [k for k in header if k in canonical]
        if present != [k for k in canonical if k in header]:
            problems.append(f"{tag} keys are not in writer order ({', '.join(canonical)})")
    return problems
