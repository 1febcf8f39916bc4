"""One operation per command: open the target, run the core, return a typed result."""
