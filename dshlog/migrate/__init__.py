"""Migration of historical session logs (v0..v3) to the current format v4.

One streaming stage per adjacent edge (``v0_v1`` … ``v3_v4``), composed by
:func:`migrate_stream`; :func:`header_only` migrates just a header for listings;
:func:`discover_child_facts` gathers the child facts the v3→v4 edge needs.
"""

from .chain import MigratedEvents, header_only, migrate_stream
from .children import discover_child_facts

__all__ = ["MigratedEvents", "discover_child_facts", "header_only", "migrate_stream"]
