"""The ``dshlog`` command line: options in, one core call, a renderer out.

No log logic lives here.  Every command calls its operation of the library
(:mod:`dshlog.ops`, which opens the log with :func:`dshlog.read.session.open_log`), and renders.  Errors from the
core (:class:`dshlog.errors.DshlogError`) become one line on stderr and the exit code
the error class carries, in exactly one place (:func:`dshlog.cli.app.main`).  Each
command is a module of this package, loaded only when it runs (:data:`app.COMMANDS`).
"""

from .app import COMMANDS, app, main

__all__ = ["COMMANDS", "app", "main"]
