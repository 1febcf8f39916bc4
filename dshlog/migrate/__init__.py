"""Migration of historical session logs (v0..v3) to the current format v4.

One streaming stage per adjacent edge (``v0_v1`` … ``v3_v4``), composed by
:func:`migrate_stream`; :func:`header_only` migrates just a header for listings.
Pure: the chain reads nothing and writes nothing (child facts are handed in).
"""

from .chain import MigratedEvents, header_only, migrate_stream

__all__ = ["MigratedEvents", "header_only", "migrate_stream"]
