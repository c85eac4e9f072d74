"""The ingest loop's isolation: a store refusing one event's data dead-letters that event only."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg

from memstream.tokens import TokenCounter
from schemas.codec import turn_event_codec
from schemas.turns import Turn
from streams.decoding import Decoded
from streams.metrics import WorkerMetrics
from streams.retry import Backoff
from streams.stages.base import SinkStage, StageContext, write_isolating


class FakeDeadLetters:
    def __init__(self) -> None:
        self.sent: list[tuple[Any, str, str]] = []

    async def send(self, event: Any, *, reason: str, error: str, stage: str) -> None:
        self.sent.append((event, reason, stage))


class PickyStage(SinkStage):
    """Refuses any batch containing 'poison' (as Postgres refuses bad data), flakes once."""

    name = "picky"

    def __init__(self) -> None:
        self.written: list[str] = []
        self.calls = 0

    async def write(self, batch: Sequence[Decoded]) -> None:
        self.calls += 1
        if self.calls == 1:
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        if any(d.turn.content == "poison" for d in batch):
            raise psycopg.errors.CharacterNotInRepertoire("invalid byte sequence")
        self.written.extend(d.turn.content for d in batch)


def decoded(content: str) -> Decoded:
    turn = Turn(
        event_id=uuid.uuid4(),
        tenant_id="t",
        agent_id="a",
        user_id="u",
        project_id=None,
        session_id="s",
        role="user",
        content=content,
        event_time=datetime.now(UTC),
    )
    return Decoded(turn=turn, event=f"event:{content}")  # type: ignore[arg-type]


async def test_one_poison_event_is_dead_lettered_and_the_rest_written() -> None:
    dead = FakeDeadLetters()
    ctx = StageContext(
        codec=turn_event_codec(),
        tokens=TokenCounter(),
        policies=None,  # type: ignore[arg-type]  # write_isolating does not redact
        metrics=WorkerMetrics(),
        dead_letters=dead,  # type: ignore[arg-type]
        backoff=Backoff(initial_s=0.001, max_s=0.001),
        max_events=10,
        within_s=0.01,
        max_content_chars=100,
    )
    stage = PickyStage()
    await write_isolating(stage, [decoded("a"), decoded("poison"), decoded("b")], ctx)
    assert stage.written == ["a", "b"]
    assert [(e, s) for e, _, s in dead.sent] == [("event:poison", "picky")]
    assert "CharacterNotInRepertoire" in dead.sent[0][1]
