"""Types of the optional C extension built from ``_scan.c`` (see there, and ``jsjson.py``)."""

DEEP: int
NEG_ZERO: int
BIG_NUMBER: int
WIDE_INT: int

def scan(data: bytes | bytearray | memoryview, max_depth: int, /) -> int: ...
def valid_utf8(data: bytes | bytearray | memoryview, /) -> bool: ...
