"""The targets the benchmarks are measured against, each stated once (issue 34).

A benchmark that marks a figure met or missed imports its target from here, so the
number a report prints and the number it is judged by cannot drift apart.
"""

from __future__ import annotations

#: Start-up: the CPU time (user + system) of `dshlog --version` and of a command on a tiny log
#: is at most this many times that of `python -c 'import orjson'` on the same interpreter,
#: the least any Python tool that reads JSON pays before it does anything (bench/startup.py).
STARTUP_RATIO = 2.0
