"""The session summariser: folds the turns beyond a session's window into its rolling
summary, then trims them (summarize-before-trim), off the append path.

Requests come from ``memstream.compaction.v1`` (raised by the buffer updater when a session
passes its window), keyed by session, so one session is summarised by one consumer at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime

import orjson

from memstream.llm.base import LLMError
from memstream.summarization.base import Summary, SummaryTurn
from sinks.redis.buffer import BufferEntry, SessionRef
from streams.resources import MemoryResources

log = logging.getLogger(__name__)


async def _summarize(resources: MemoryResources, previous: str | None, turns: Sequence[SummaryTurn]) -> Summary:
    models = resources.models
    max_tokens = resources.settings.summary_max_tokens
    try:
        return await models.summarizer.summarize(previous, turns, max_tokens=max_tokens)
    except LLMError as exc:
        if exc.kind not in ("malformed", "refused"):
            raise
        log.warning("summary by %s failed (%s); using %s", models.summarizer.name, exc.kind,
                    models.fallback_summarizer.name)  # fmt: skip
        return await models.fallback_summarizer.summarize(previous, turns, max_tokens=max_tokens)


def _turn(entry: BufferEntry) -> tuple[SummaryTurn, dict[str, object]]:
    raw = orjson.loads(entry.member)
    when = datetime.fromtimestamp(entry.score / 1e6, UTC)
    return SummaryTurn(role=raw["role"], content=raw["content"], event_time=when), raw


async def fold_session(resources: MemoryResources, ref: SessionRef) -> int:
    """Fold everything beyond the window into the summary; returns the turns folded."""
    buffers = resources.buffers
    total = 0
    while True:
        due = await buffers.due(ref, limit=resources.settings.summary_fold_max_turns)
        if not due:
            await buffers.release_request(ref)
            return total
        previous = await buffers.summary(ref)
        parsed = [_turn(e) for e in due]
        summary = await _summarize(resources, previous.text if previous else None, [t for t, _ in parsed])
        agents = set(previous.agents if previous else ()) | {
            str(raw["agent_id"]) for _, raw in parsed if not raw.get("shared")
        }
        folded = await buffers.fold(
            ref, due, text=summary.text, summarizer=summary.summarizer,
            input_tokens=summary.input_tokens, output_tokens=summary.output_tokens, agents=sorted(agents),
        )  # fmt: skip
        if folded < 0:
            continue  # another fold won the race: read again
        total += folded
        resources.metrics.summaries.labels(summarizer=summary.summarizer).inc()
        resources.metrics.summary_tokens.labels(direction="input").inc(summary.input_tokens)
        resources.metrics.summary_tokens.labels(direction="output").inc(summary.output_tokens)
