"""Fault: poison records under load (undecodable Avro, an oversize turn, a schema id the worker does
not know) land in ``memstream.dlq.v1`` with their reason; ``memstream dlq list|replay`` re-drives
them after a fix, idempotently."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaProducer

from ops.stack.state import settings_env
from schemas import topics
from schemas.codec import turn_event_codec
from schemas.turns import turn_key
from tests.integration.faults import (
    KafkaSender,
    PrivateStack,
    TurnLoad,
    assert_exactly_once,
    landed,
    make_turn,
    observe,
    private_stack,
    stored_ids,
    until,
)

LIMIT = 2_000


async def memstream_dlq(stack: PrivateStack, *args: str, status: int = 0) -> list[dict[str, Any]]:
    """Run ``memstream dlq ARGS`` as a user would; its JSON lines (after checking its exit status)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ops", "dlq", *args,
        env={**settings_env(stack.settings), "MEMSTREAM_LOG_LEVEL": "WARNING"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode == status, err.decode()
    return [orjson.loads(line) for line in out.splitlines() if line.strip()]


async def test_poison_records_go_to_the_dlq_with_their_reason_and_are_replayed_after_a_fix(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    tenant = "t-poison"
    codec = turn_event_codec()
    oversize = make_turn(tenant, "s-poison", "x" * (LIMIT + 1))
    good_body = codec.encode(make_turn(tenant, "s-poison", "a body behind an unknown schema id"))
    poison = {
        "undecodable": good_body[:5] + b"\xff\xfe not an avro body",
        "oversize": codec.encode(oversize),
        "unknown_schema": b"\x00" + (424242).to_bytes(4, "big") + good_body[5:],
    }
    async with private_stack(tmp_path) as stack:
        worker = stack.worker(max_content_chars=LIMIT)
        await asyncio.to_thread(worker.start)
        load = TurnLoad(tenant, KafkaSender(stack.settings.require_kafka()), rate_per_s=300)
        load.start()
        producer = AIOKafkaProducer(bootstrap_servers=stack.settings.require_kafka(), enable_idempotence=False)
        await producer.start()
        try:
            await load.wait_accepted(300)
            for value in poison.values():
                await producer.send_and_wait(topics.TURNS, key=turn_key(tenant, "s-poison"), value=value)
            await load.wait_accepted(len(load.stats.accepted) + 300)
        finally:
            stats = await load.stop()
            await producer.stop()
        started = time.monotonic()
        await until(lambda: landed(stack, tenant, stats.accepted), timeout_s=60)
        assert_exactly_once(stack, tenant, stats.accepted)  # the worker went on past the poison

        letters = await memstream_dlq(stack, "list")
        assert len(letters) == 3, letters
        reasons = {letter["reason"]: letter for letter in letters}
        assert any("corrupt Avro body" in r for r in reasons), reasons
        assert any(f"the limit is {LIMIT}" in r for r in reasons), reasons
        assert any("unknown schema id 424242" in r for r in reasons), reasons
        for letter in letters:
            assert letter["source"]["topic"] == topics.TURNS and letter["stage"] == "decode"
        assert [d["offset"] for d in await memstream_dlq(stack, "list", "--reason", "LIMIT IS")] == [
            d["offset"] for d in letters if "limit is" in d["reason"]
        ]

        # The fix for the oversize turn: a worker with a larger limit. Replay it, twice.
        worker.stop()
        fixed = stack.worker("worker-fixed", max_content_chars=LIMIT * 10)
        await asyncio.to_thread(fixed.start)
        for _ in range(2):
            [summary] = await memstream_dlq(stack, "replay", "--reason", "the limit is")
            assert summary["replayed"] == 1
        await until(lambda: oversize["event_id"] in stored_ids(stack, tenant, "episodes"), timeout_s=30)
        assert_exactly_once(stack, tenant, [*stats.accepted, oversize["event_id"]])

        # No fix for the unknown schema: replaying it is safe, it comes back to the DLQ, reason and all.
        [summary] = await memstream_dlq(stack, "replay", "--reason", "unknown schema id")
        assert summary["replayed"] == 1

        async def back_in_the_dlq() -> bool:
            found = await memstream_dlq(stack, "list", "--reason", "unknown schema id")
            return len(found) == 2

        await until(back_in_the_dlq, timeout_s=30)
        assert await memstream_dlq(stack, "replay", status=2) == []  # nothing chosen: refused
        observe(
            record_property, "poison_events",
            turns_accepted=len(stats.accepted), dlq_events=3, dlq_reasons=sorted(reasons),
            replayed_after_fix=1, replayed_twice_stored_once=True, still_bad_back_in_dlq=1,
            recover_s=round(time.monotonic() - started, 2),
        )  # fmt: skip
