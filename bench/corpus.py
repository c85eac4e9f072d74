"""Deterministic, realistic-looking agent conversation text for benchmarks."""

from __future__ import annotations

import random

_SUBJECTS = [
    "the checkout service",
    "the payments API",
    "our FastAPI backend",
    "the Valkey cache",
    "the AlloyDB cluster",
    "the nightly ETL job",
    "the React dashboard",
    "the auth middleware",
    "the Kafka consumer",
    "the deploy pipeline",
    "the search index",
    "the billing worker",
]
_USER = [
    "Can you check why {s} is slow since yesterday's release?",
    "Please add retries with exponential backoff to {s}; keep tool timeouts at 30 seconds.",
    "I prefer type hints everywhere and pytest over unittest, remember that for {s}.",
    "We decided to move {s} to the europe-west1 region next sprint.",
    "Why did the last deployment of {s} fail? The dist folder was missing again.",
    "Write a migration for {s} that adds an index on created_at without locking writes.",
    "Summarise the error budget for {s} over the last seven days.",
    "Don't use scp for {s}; deploy with rsync and verify checksums afterwards.",
]
_ASSISTANT = [
    "I looked at {s}: p99 latency went from 120 ms to 480 ms after the release, mostly in the "
    "database calls. An N+1 query in the order listing is the likely cause; batching it should help.",
    "Done. {s} now retries up to five times with jittered exponential backoff starting at 200 ms, "
    "and every outbound tool call keeps its 30 second timeout.",
    "Noted: type hints everywhere and pytest for tests. I updated {s} and its test suite accordingly.",
    "The migration for {s} creates the index concurrently, so writes continue; it took 41 s on a copy "
    "of production data.",
    "The deployment of {s} failed because the dist folder was not committed; the build step "
    "assumed it existed. I added a check to the pipeline that fails early with a clear message.",
]
_TOOL = [
    "$ pytest -q tests/{t}\n........................ [100%]\n24 passed in 3.21s",
    "ERROR: connection to {s} timed out after 30000 ms (attempt 3/5); retrying",
    "git diff --stat: 4 files changed, 87 insertions(+), 12 deletions(-) in {s}",
    "SELECT count(*) FROM orders WHERE created_at > now() - interval '1 day'; -> 18234 rows",
]


def turn_text(rng: random.Random, role: str) -> str:
    subject = rng.choice(_SUBJECTS)
    if role == "user":
        return rng.choice(_USER).format(s=subject)
    if role == "tool":
        return rng.choice(_TOOL).format(s=subject, t=subject.split()[-1])
    return rng.choice(_ASSISTANT).format(s=subject)


def conversation_roles(i: int) -> str:
    return ("user", "assistant", "tool", "assistant")[i % 4]
