"""One agent per file: each is a fan-out branch of ``memstream.turns.v1``."""
