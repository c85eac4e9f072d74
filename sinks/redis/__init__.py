"""Redis: session buffers, rate limits, event-id claims and heartbeats, under keys from ``keys.py``."""
