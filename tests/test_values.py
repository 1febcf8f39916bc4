"""The one rule for numbers and placeholders (dshlog.protocol.values).

Before the rules had one owner, ``jsjson.is_safe_integer`` refused ``1.0`` while the
reader's and the fold's copies accepted it; JavaScript cannot tell ``1.0`` from ``1``,
so the one rule accepts it, and refuses ``-0`` as dsh's format counts do.
"""

from __future__ import annotations

import pytest

from dshlog.protocol.values import (
    MAX_SAFE_INTEGER,
    has_placeholder,
    is_count,
    is_placeholder,
    is_safe_integer,
    placeholder_bytes_search,
    safe_int,
)


def test_is_safe_integer() -> None:
    assert is_safe_integer(0)
    assert is_safe_integer(2**53 - 1)
    assert is_safe_integer(-(2**53 - 1))
    assert not is_safe_integer(2**53)
    assert not is_safe_integer(-(2**53))
    assert not is_safe_integer(True)
    assert not is_safe_integer("1")
    assert not is_safe_integer(None)
    # JavaScript's view of doubles
    assert is_safe_integer(1.0) and is_safe_integer(-3.0)
    assert not is_safe_integer(1.5)
    assert not is_safe_integer(float("inf")) and not is_safe_integer(float("nan"))
    assert not is_safe_integer(float(2**53))
    # dsh refuses -0 (not losslessly serialisable); +0.0 is the integer 0
    assert not is_safe_integer(-0.0)
    assert is_safe_integer(0.0)


def test_is_count() -> None:
    assert is_count(0) and is_count(MAX_SAFE_INTEGER) and is_count(7.0)
    for bad in (-1, -0.0, 0.5, MAX_SAFE_INTEGER + 1, True, False, None, "3", [3]):
        assert not is_count(bad), bad


def test_safe_int() -> None:
    assert safe_int(3) == 3 and type(safe_int(3.0)) is int and safe_int(3.0) == 3


@pytest.mark.parametrize(
    ("value", "whole", "inside"),
    [
        ("{{cwd}}", True, True),
        ("{{session:12}}", True, True),
        ("{{child-1}}", True, True),
        ("{{cwd}}/workspace", False, True),
        ("x{{a}}", False, True),
        ("{{1}}", False, False),
        ("{{}}", False, False),
        ("{cwd}", False, False),
        ("plain", False, False),
        (3, False, False),
        (None, False, False),
    ],
)
def test_placeholder_rule(value: object, whole: bool, inside: bool) -> None:
    assert is_placeholder(value) is whole
    assert has_placeholder(value) is inside
    if isinstance(value, str):
        assert placeholder_bytes_search(value.encode()) is inside
