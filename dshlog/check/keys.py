"""Identity keys of JSON values, for the whole-log facts ``validate`` remembers.

PTC starts and retry chains must be remembered for the whole log, so they are
kept as 16-byte digests instead of the values.  Any JSON value a reader can
produce must have a key: a lone surrogate (``"\\ud800"`` is valid JSON) or an
integer beyond 64 bits is not plain JSON to orjson, so those values take a
slower exact encoding instead of crashing the run.  The rules (``ptc``,
``retries``) and the surface fold (message digests) import it, so every command
that runs dsh's restore or folds the surface loads hashlib, and with it OpenSSL.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from typing import Any

from ..protocol.jsjson import dumps, key_bytes

__all__ = ["attempt_key", "equality_digest", "fact_key", "message_digest", "value_digest", "value_key"]


def _canonical(value: Any) -> Any:
    """``value`` with object keys sorted, as nested tuples tagged by JSON kind (for :func:`_exact_bytes`)."""
    if isinstance(value, dict):
        return ("o", tuple(sorted((str(k), _canonical(v)) for k, v in value.items())))
    if isinstance(value, list):
        return ("a", tuple(_canonical(v) for v in value))
    return (type(value).__name__, value)


def _exact_bytes(value: Any) -> bytes:
    """Exact, key-order-free bytes of a value orjson refuses (lone surrogates, huge integers)."""
    return b"\x00exact:" + repr(_canonical(value)).encode("utf-8", "surrogatepass")


def _identity_bytes(value: Any) -> bytes:
    """Key-order-free bytes that are equal exactly when the JSON values are (orjson when it can)."""
    try:
        return key_bytes(value, sort_keys=True)
    except TypeError:
        # Every value orjson refuses takes this path, so equal values still meet on equal bytes.
        return _exact_bytes(value)


def value_digest(*values: Any) -> bytes:
    """Order-insensitive 16-byte digest of JSON values: keeps PTC starts comparable without keeping them."""
    return hashlib.blake2b(_identity_bytes(list(values)), digest_size=16).digest()


def value_key(value: Any) -> Any:
    """Hashable stand-in for a JSON value (for chain keys of arbitrary payload values)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return (type(value).__name__, value)
    return ("json", _identity_bytes(value))


def _equality_form(value: Any) -> Any:
    """``value`` as nested tuples that are equal exactly when :func:`json_equal` says the values are.

    Object keys are sorted (their order is irrelevant), ``true`` is not ``1``, and a
    number that is an integral float is written as the integer it equals (``1.0 == 1``
    and ``-0.0 == 0`` hold for ``json_equal``, which compares numbers as Python does).
    """
    if isinstance(value, dict):
        return ("o", tuple(sorted((str(k), _equality_form(v)) for k, v in value.items())))
    if isinstance(value, list):
        return ("a", tuple(_equality_form(v) for v in value))
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, float) and value.is_integer():
        return ("n", int(value))
    if isinstance(value, (int, float)):
        return ("n", value)
    return (type(value).__name__, value)


def _integral_floats_as_ints(value: Any) -> Any:
    """``value`` with every integral float replaced by the integer it equals (``-0.0`` by ``0``)."""
    if isinstance(value, dict):
        return {k: _integral_floats_as_ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral_floats_as_ints(v) for v in value]
    if type(value) is float and value.is_integer():
        return int(value)
    return value


# orjson writes a value first or right after ':', ',' or '[' (compact), and every float with a '.' or
# an exponent after its leading digits; integers never.  (A string may match too: it only
# costs the rewrite.)
_FLOAT_TOKEN = re.compile(rb"(?:\A|[:,\[])-?[0-9]+[.eE]")


def equality_digest(value: Any) -> bytes:
    """16-byte digest equal exactly when :func:`~dshlog.protocol.jsjson.json_equal` holds.

    Lets a fold remember what a later rule compares (a tool result's non-content
    fields) without keeping the value.  The digest is of orjson's sorted-key bytes
    (C speed), which equal values share once integral floats are written as the
    integers they equal; only bytes that may hold a float pay for rewriting the
    value, and a value orjson refuses (a lone surrogate, a huge integer) takes the
    exact tuple form, as any value equal to it must too.
    """
    try:
        raw = key_bytes(value, sort_keys=True)
        if _FLOAT_TOKEN.search(raw) is not None:
            raw = key_bytes(_integral_floats_as_ints(value), sort_keys=True)
    except TypeError:
        raw = b"\x00exact:" + repr(_equality_form(value)).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(raw, digest_size=16).digest()


def message_digest(message: Any) -> bytes:
    """16-byte digest of a message's ``JSON.stringify`` text: equal exactly when the texts are.

    What a request's prefix is compared by (byte for byte, key order significant),
    kept instead of the message.
    """
    return hashlib.blake2b(dumps(message), digest_size=16).digest()


_UNIQUE = itertools.count()


def fact_key(*values: Any) -> bytes:
    """16-byte digest standing for ``tuple(value_key(v) for v in values)``, with the same equality.

    Retry facts must be remembered for the whole log; a digest costs one small
    bytes object where the tuples cost several objects per value.  ``-0.0`` is
    folded into ``0.0`` and a NaN never equals anything, as with the tuples.
    """
    parts = []
    for value in values:
        if type(value) is float:
            if value != value:
                return b"nan" + next(_UNIQUE).to_bytes(13, "big")  # unequal to every other key
            if value == 0:
                value = 0.0
        parts.append(value_key(value))
    return hashlib.blake2b(repr(tuple(parts)).encode("utf-8", "surrogatepass"), digest_size=16).digest()


def attempt_key(rid: str, attempt: Any) -> bytes:
    """Digest of a scheduled ``(retryId, retry)`` pair, equal exactly when the pair is (``1.0 == 1``)."""
    raw = rid.encode("utf-8", "surrogatepass") + b"\x00" + str(int(attempt)).encode()
    return hashlib.blake2b(raw, digest_size=16).digest()
