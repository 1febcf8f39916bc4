"""``python -m dshlog.cli``: the command line."""

from .app import main

main()
