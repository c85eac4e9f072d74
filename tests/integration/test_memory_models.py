"""The memory worker's use of the LLM, through the real google-genai client and the fake
server: answers are used, rate limits are waited out, malformed answers fall back to the
offline extractor/summariser (and say so), outages are raised for the stage to retry."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
import pytest_asyncio

from memstream.extraction.factory import MemoryModels
from memstream.extraction.llm import LLMExtractor
from memstream.extraction.offline import RuleExtractor
from memstream.llm.base import LLMError
from memstream.llm.gemini import GeminiLLM
from memstream.summarization.base import SummaryTurn
from memstream.summarization.llm import LLMSummarizer
from memstream.summarization.offline import ExtractiveSummarizer
from schemas.turns import Turn
from streams.stages.extract import ExtractionStage
from streams.stages.summaries import _summarize
from tests.fixtures.gemini import FakeGemini
from tests.integration.test_gemini_llm import context, fact

NOW = datetime(2026, 11, 30, 14, 5, tzinfo=UTC)


@pytest_asyncio.fixture(loop_scope="session")
async def resources(gemini: FakeGemini) -> AsyncIterator[Any]:
    llm = GeminiLLM(api_key="k", model="gemini-test", base_url=gemini.base_url, timeout_s=1.0, max_concurrency=2,
                    max_attempts=3, retry_initial_s=0.01, retry_max_s=0.02)  # fmt: skip
    models = MemoryModels(LLMExtractor(llm), LLMSummarizer(llm), RuleExtractor(), ExtractiveSummarizer(), llm)
    yield SimpleNamespace(models=models, settings=SimpleNamespace(summary_max_tokens=200))
    await llm.aclose()


def a_turn(content: str) -> Turn:
    return Turn(event_id=uuid.uuid4(), tenant_id="t", agent_id="a", user_id="u", project_id="cloudretail",
                session_id="s-42", role="user", content=content, event_time=NOW)  # fmt: skip


async def extract(resources: Any, content: str) -> tuple[list[Any], str]:
    stage = ExtractionStage(resources, None)  # type: ignore[arg-type]  # _extract needs the models only
    result: tuple[list[Any], str] = await stage._extract(a_turn(content), context())
    return result


async def test_the_models_answer_is_used(gemini: FakeGemini, resources: Any) -> None:
    gemini.then_json({"facts": [fact(entity="Editor", summary="The user prefers Neovim.")]})
    facts, extractor = await extract(resources, "I switched to Neovim.")
    assert extractor == "gemini/gemini-test/extract-1"
    assert [(f.entity, f.summary) for f in facts] == [("editor", "The user prefers Neovim.")]


async def test_a_rate_limit_is_waited_out(gemini: FakeGemini, resources: Any) -> None:
    gemini.then(status=429).then_json({"facts": [fact()]})
    facts, extractor = await extract(resources, "I switched to Neovim.")
    assert extractor.startswith("gemini/") and len(facts) == 1
    assert resources.models.llm.usage.retries >= 1


async def test_malformed_twice_falls_back_to_the_offline_extractor(gemini: FakeGemini, resources: Any) -> None:
    gemini.then(body={"candidates": [{"content": {"role": "model", "parts": [{"text": "not json{"}]}}]})
    gemini.then_json({"facts": [{"entity": 3}]})  # valid JSON, wrong shape
    facts, extractor = await extract(resources, "I prefer dark mode in every editor.")
    assert extractor == "offline-rules/1"
    assert [f.entity for f in facts] == ["theme"]
    assert len(gemini.requests) == 2


async def test_malformed_once_is_asked_again(gemini: FakeGemini, resources: Any) -> None:
    gemini.then_json({"nothing": True}).then_json({"facts": [fact()]})
    facts, extractor = await extract(resources, "I switched to Neovim.")
    assert extractor.startswith("gemini/") and len(facts) == 1


async def test_an_outage_is_raised_for_the_stage_to_retry(gemini: FakeGemini, resources: Any) -> None:
    for _ in range(3):
        gemini.then(status=503)
    with pytest.raises(LLMError) as caught:
        await extract(resources, "I switched to Neovim.")
    assert caught.value.retryable and caught.value.kind == "unavailable"


async def test_a_timeout_is_raised_for_the_stage_to_retry(gemini: FakeGemini, resources: Any) -> None:
    for _ in range(3):
        gemini.then(delay_s=1.5)
    with pytest.raises(LLMError) as caught:
        await extract(resources, "I switched to Neovim.")
    assert caught.value.kind == "timeout" and caught.value.retryable


async def test_a_malformed_summary_falls_back_to_the_offline_summariser(gemini: FakeGemini, resources: Any) -> None:
    turns = [SummaryTurn("user", "We decided to deploy with rsync, not scp.", NOW)]
    gemini.then_json({"summary": "Deploys use rsync."}, input_tokens=40, output_tokens=5)
    good = await _summarize(resources, None, turns)
    assert (good.text, good.input_tokens, good.summarizer) == (
        "Deploys use rsync.",
        40,
        "gemini/gemini-test/summarize-1",
    )
    gemini.then_json({"text": "wrong key"})
    fallback = await _summarize(resources, "previous", turns)
    assert fallback.summarizer == "offline-extractive/1" and "rsync" in fallback.text
