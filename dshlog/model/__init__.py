"""The model of a session: derived messages and their text, requests, diffs, summaries, transcripts, repair and fork plans."""
