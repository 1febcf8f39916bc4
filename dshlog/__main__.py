"""Process entry point (``dshlog`` and ``python -m dshlog``).

``dshlog --version`` answers before the CLI framework is imported, so scripts that
probe for the tool pay only for the interpreter start-up.
"""

from __future__ import annotations

import sys

from ._version import __version__


def main() -> None:
    """Run the command line of this process and exit with its code (``--version`` alone needs none of it)."""
    if sys.argv[1:] == ["--version"]:
        print(f"dshlog {__version__}")
        return
    from .cli import main as cli_main  # the whole CLI framework: only when a command runs

    sys.exit(int(cli_main()))


if __name__ == "__main__":  # pragma: no cover
    main()
