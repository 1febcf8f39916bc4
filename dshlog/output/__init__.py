"""Renderers: plain text, terminal, Markdown, HTML and JSON, with every label defined once."""
