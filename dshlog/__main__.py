"""Process entry point (``dshlog`` and ``python -m dshlog``).

``dshlog --version`` answers before the CLI framework is imported, so scripts that
probe for the tool pay only for the interpreter start-up.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Run the command line of this process and exit with its code."""
    if sys.argv[1:] == ["--version"]:
        from ._version import __version__

        print(f"dshlog {__version__}")
        return
    from .cli import main as cli_main

    sys.exit(int(cli_main()))


if __name__ == "__main__":  # pragma: no cover
    main()
