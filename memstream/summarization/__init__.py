"""Summarisation: rolling session summaries and the compaction of old episodes."""
