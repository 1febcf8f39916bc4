"""``dshlog browse``: an interactive reader of session logs (Textual).

:mod:`.model` holds what the screens show, computed from an
:class:`~dshlog.read.pages.EventIndex` without Textual (so it is tested and typed on its
own); :mod:`.app` is the Textual application.  Textual is imported by :mod:`.app` only,
and only ``browse`` imports that: every other command keeps its start-up time.
"""
