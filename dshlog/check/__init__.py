"""Every rule of the format once, each family in its own module, written against a reporter.

problems (the one finding type and the reporters), header, envelope, data (dsh's
shared event-data rules), shapes (message shapes), admission (dsh's v4 row
admission), streams (stream records), surface (the fold), keys (identity digests),
ownership (cut, deliveries, catalog), lifecycle (turns, steps, tool calls,
commands), compaction, retries, titles, ptc; validate composes them all.  A
strict consumer (the fold, the strict reader) raises at the first problem,
``validate`` collects them all.
"""
