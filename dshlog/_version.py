"""The version of dshlog: one owner, read by the package, the CLI and the packaging."""

__version__ = "0.1.0"
