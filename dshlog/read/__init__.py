"""The one reading path: container (framing) -> rows (per-version decoding) -> session (views)."""
