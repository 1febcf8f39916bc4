"""In-process timing of the reader layers alone (no command logic): ``records()`` per input.

    python bench/reader_loop.py FILE...

Used to measure changes to ``dshlog/source.py`` and ``dshlog/formats.py`` without
CLI start-up or rendering noise.  Prints the best of three runs per file: wall
time, process CPU time (all threads) and the CPU time of the consuming thread
(what a second core can take off the critical path shows up as the difference).
"""

from __future__ import annotations

import sys
import time

from dshlog.read.session import open_log


def once(path: str) -> tuple[float, float, float, int]:
    w, c, m = time.perf_counter(), time.process_time(), time.thread_time()
    n = 0
    with open_log(path, strict=False) as log:
        for _ in log.stored():
            n += 1
    return time.perf_counter() - w, time.process_time() - c, time.thread_time() - m, n


if __name__ == "__main__":
    for f in sys.argv[1:]:
        runs = [once(f) for _ in range(3)]
        wall, cpu, main = (min(r[i] for r in runs) for i in range(3))
        print(f"wall {wall:6.3f} s  cpu {cpu:6.3f} s  main-thread {main:6.3f} s  {runs[0][3]:>9} events  {f}")
