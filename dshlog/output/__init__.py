"""Renderers: typed results in, text for people or JSON for programs out.

* :mod:`.renderer`: the ``Renderer`` interface (``begin``/``item``/``end``) behind
  ``show`` and ``export``, and the one pass that drives it.
* :mod:`.plain` (piped text), :mod:`.terminal` (Rich), :mod:`.markdown`,
  :mod:`.html`, :mod:`.jsonexport`: the five targets; :mod:`.export` picks one by
  format and masks secrets (:mod:`.redact`) on request.
* :mod:`.events`: the one-line form of an event (``events``, ``tail``).
* :mod:`.jsondoc`: the shape number of every JSON document, and the diff document;
  :mod:`.diff`: the diff for people; :mod:`.table`: the tables.
* :mod:`.labels`: every word and mark a target prints; :mod:`.text`: the
  terminal sanitiser, previews, sizes and times.

Nothing here reads a log or decides what it means; the model (:mod:`dshlog.model`)
never imports this package.
"""
