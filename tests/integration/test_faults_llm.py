"""Fault: the LLM answers 429, then times out. Extraction retries with backoff, then parks the turns
on ``memstream.retry.v1`` and re-extracts them later; no turn is dropped and reads are unaffected."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from tests.fixtures.gemini import FakeGemini
from tests.integration.faults import (
    KafkaSender,
    PrivateStack,
    TurnLoad,
    assert_exactly_once,
    gateway_for,
    landed,
    log_count,
    log_lines,
    observe,
    private_stack,
    until,
)

RATE_LIMITED = 24
TIMED_OUT = 12


def extracted(stack: PrivateStack, tenant: str) -> set[str]:
    """Event ids whose extraction result was recorded (each LLM-extracted turn gets one)."""
    with stack.db(tenant) as conn:
        rows = conn.execute("SELECT event_id::text FROM extractions WHERE tenant_id = %s", (tenant,)).fetchall()
    return {str(row[0]) for row in rows}


async def test_an_llm_answering_429_then_timing_out_parks_extraction_and_drops_nothing(
    tmp_path: Path, gemini: FakeGemini, record_property: Callable[[str, object], None]
) -> None:
    tenant = "t-llm-outage"
    settings = {
        "llm_provider": "gemini", "gemini_api_key": "test-key", "gemini_base_url": gemini.base_url,
        "gemini_model": "gemini-fault-test", "embedding_provider": "local", "llm_timeout_s": 0.5,
        "llm_max_attempts": 2, "llm_retry_initial_s": 0.05, "llm_retry_max_s": 0.2, "llm_max_concurrency": 4,
        "buffer_max_turns": 100,  # no summaries: every LLM call here is an extraction
    }  # fmt: skip
    async with private_stack(tmp_path, **settings) as stack:
        worker, memory_worker = stack.worker(), stack.worker("memory-worker", memory=True)
        await asyncio.gather(asyncio.to_thread(worker.start), asyncio.to_thread(memory_worker.start))
        for _ in range(RATE_LIMITED):
            gemini.then(status=429)
        for _ in range(TIMED_OUT):
            gemini.then(delay_s=1.0)  # past llm_timeout_s
        load = TurnLoad(tenant, KafkaSender(stack.settings.require_kafka()), rate_per_s=100)
        async with gateway_for(stack.settings, stack.key(tenant)) as client:
            load.start()
            try:
                await load.wait_accepted(300)
                # The read path while the LLM fails: answered, from what ingestion stored.
                read_ok = 0
                for _ in range(5):
                    response = await client.get("/v1/search", params={"user_id": "user-0", "q": "topic 3"})
                    assert response.status_code == 200, response.text
                    read_ok += 1
            finally:
                stats = await load.stop()
            started = time.monotonic()
            await until(lambda: landed(stack, tenant, stats.accepted), timeout_s=60)
            assert_exactly_once(stack, tenant, stats.accepted)  # ingestion never waited on the LLM
            response = await client.get("/v1/search", params={"user_id": "user-0", "q": "topic 3"})
            assert response.status_code == 200 and response.json()["hits"], response.text
        # Every turn is extracted in the end: the parked ones from the retry topic.
        everything_extracted_s = await until(
            lambda: extracted(stack, tenant) >= set(stats.accepted), timeout_s=90, interval_s=0.5
        )
        assert not gemini.script, "the scripted failures were never all met"
        parked = log_count(memory_worker, " turn(s) on ")
        retried_calls = log_count(memory_worker, "call failed (rate_limited)") + log_count(
            memory_worker, "call failed (timeout)"
        )
        assert parked > 0, "nothing was parked on the retry topic"
        assert log_count(memory_worker, "re-extracting") > 0
        parked_turns = sum(
            int(line.split("parked ", 1)[1].split(" ", 1)[0]) for line in log_lines(memory_worker, " turn(s) on ")
        )
        observe(
            record_property, "llm_429_then_timeout",
            turns_accepted=len(stats.accepted), scripted_429=RATE_LIMITED, scripted_timeouts=TIMED_OUT,
            llm_calls_retried_in_place=retried_calls, parkings=parked, turns_parked=parked_turns,
            reads_during_outage_ok=read_ok, all_extracted_after_load_s=round(everything_extracted_s, 2),
            ingest_caught_up_s=round(time.monotonic() - started - everything_extracted_s, 2), dropped=0,
        )  # fmt: skip
