"""dshlog: inspect, validate, repair, fork and migrate DeepSeek Harness session logs.

The package is a small core library (no printing, no exiting) with a Typer CLI on
top (:mod:`dshlog.cli`).  Data flows one way: bytes -> rows -> events ->
(fold | migrate | repair | fork) -> output.
"""

from ._version import __version__

__all__ = ["__version__"]
