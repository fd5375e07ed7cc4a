"""Digests: scheduled summaries of the last window."""
