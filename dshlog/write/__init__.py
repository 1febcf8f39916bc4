"""The publication transaction every writer goes through: lock, stage, verify, publish."""
