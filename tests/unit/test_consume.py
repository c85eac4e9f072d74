"""The one consume loop: acknowledge after the handler, stop loudly on a code defect."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any, NoReturn, cast

import faust
import orjson
import pytest

from sinks.redis.keys import defect_key
from streams.consume import Consumer, Events, consume
from streams.defects import CodeDefectError, Defects
from streams.metrics import WorkerMetrics


class FakeRedis:
    def __init__(self) -> None:
        self.values: dict[str, bytes] = {}

    async def get(self, key: str) -> bytes | None:
        return self.values.get(key)

    async def set(self, key: str, value: bytes, ex: int) -> None:
        self.values[key] = value

    async def delete(self, key: str) -> None:
        self.values.pop(key, None)


class FakeStream:
    def __init__(self, batches: Sequence[Sequence[str]]) -> None:
        self.batches = batches
        self.acked: list[str] = []

    async def take_events(self, max_events: int, within_s: float) -> AsyncIterator[list[str]]:
        for batch in self.batches:
            yield list(batch)

    async def ack(self, event: str) -> None:
        self.acked.append(event)


class Stopped(Exception):
    """Stands in for the process exit."""


class StoppingDefects(Defects):
    def __init__(self, client: FakeRedis) -> None:
        super().__init__(client, "memstream", WorkerMetrics())  # type: ignore[arg-type]
        self.stopped_by: tuple[CodeDefectError, str] | None = None

    async def stop_worker(self, exc: CodeDefectError, *, consumer: str) -> NoReturn:
        self.stopped_by = (exc, consumer)
        raise Stopped


def consumer(handled: list[list[str]], *, fail_on: str | None = None) -> Consumer[str]:
    async def decode(events: Events) -> list[str]:
        return [str(e) for e in events if e != "undecodable"]

    async def handle(records: list[str]) -> None:
        if fail_on in records:

            async def stage() -> None:
                raise CodeDefectError("episodes sink", "t[0]@1", 5, TypeError("boom"))

            async with asyncio.TaskGroup() as group:  # as the stages run: the defect comes in a group
                group.create_task(stage())
        handled.append(records)

    return Consumer("ingest", decode, handle, max_events=10, within_s=0.01)


def run(stream: FakeStream, c: Consumer[str], defects: Defects) -> Any:
    return consume(cast(faust.Stream[bytes], stream), c, defects)


async def test_batches_are_acknowledged_after_they_are_handled() -> None:
    handled: list[list[str]] = []
    stream = FakeStream([["a", "undecodable", "b"], ["undecodable"], ["c"]])
    await run(stream, consumer(handled), StoppingDefects(FakeRedis()))
    assert handled == [["a", "b"], ["c"]]  # an empty batch is not handed over
    assert stream.acked == ["a", "undecodable", "b", "undecodable", "c"]


async def test_a_code_defect_stops_the_worker_with_its_batch_unacknowledged() -> None:
    handled: list[list[str]] = []
    stream = FakeStream([["a"], ["b", "poison"], ["c"]])
    defects = StoppingDefects(FakeRedis())
    with pytest.raises(Stopped):
        await run(stream, consumer(handled, fail_on="poison"), defects)
    assert stream.acked == ["a"]
    assert defects.stopped_by is not None
    defect, where = defects.stopped_by
    assert (defect.what, where) == ("episodes sink", "ingest")


async def test_a_recorded_defect_is_shown_until_a_batch_of_its_agent_goes_through() -> None:
    redis = FakeRedis()
    record = {"consumer": "ingest", "what": "episodes sink", "error": "TypeError: boom",
              "at": "2026-12-01T00:00:00+00:00"}  # fmt: skip
    redis.values[defect_key("memstream")] = orjson.dumps(record)
    defects = StoppingDefects(redis)

    def shown() -> float | None:
        return defects.metrics.registry.get_sample_value(
            "memstream_code_defect", {"operation": "episodes sink", "error": "TypeError"}
        )

    await defects.look()
    assert shown() == datetime(2026, 12, 1, tzinfo=UTC).timestamp()
    await defects.batch_done("facts")  # another agent's batch says nothing of the ingest agent's defect
    assert shown() is not None and defect_key("memstream") in redis.values
    await defects.batch_done("ingest")
    assert shown() is None and defect_key("memstream") not in redis.values
