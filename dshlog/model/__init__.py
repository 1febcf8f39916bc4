"""The model of a session: derived messages, requests, diffs, summaries, transcripts, repair and fork plans."""
