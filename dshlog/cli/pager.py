"""``show`` on a terminal: the transcript streamed into the pager as it is rendered.

The pager gets each item as soon as it is rendered, so the first screen appears
after the first items, not after the whole log (Rich's own pager collects the
whole output first).  ``PAGER`` names the program (``less`` when unset; empty
means none); ``LESS`` defaults to ``-FRX``: colours pass through, and a short
transcript is printed and the pager quits at once.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from .env import Env

__all__ = ["paged"]


@contextmanager
def paged(env: Env) -> Iterator[IO[bytes]]:
    """A byte stream that ends up on the terminal through the pager (or stdout itself, without one).

    Quitting the pager before the end is normal: the rest is not rendered, and
    the command ends quietly.
    """
    cmd = shlex.split(env.pager) if env.pager.strip() else []
    if not cmd:
        yield env.stdout
        return
    child_env = dict(env.environ)
    child_env.setdefault("LESS", "-FRX")
    env.stdout.flush()
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, env=child_env)
    except OSError:  # no such pager: print directly
        yield env.stdout
        return
    assert proc.stdin is not None
    try:
        yield proc.stdin
        proc.stdin.close()
    except (BrokenPipeError, KeyboardInterrupt):
        pass  # the person quit the pager (q, Ctrl-C): nothing more to show
    finally:
        try:
            proc.stdin.close()
        except OSError:
            pass
        while True:
            try:
                proc.wait()
                break
            except KeyboardInterrupt:  # the pager decides when it ends (less ignores Ctrl-C)
                continue
