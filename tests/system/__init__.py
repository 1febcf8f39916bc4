"""System tests: dshlog against dsh's own code (the shared oracle).

A package, so that its modules import as ``system.*`` and the plain ``conftest``
module of ``tests/`` (``from conftest import ...``) stays the only one of that name.
"""
