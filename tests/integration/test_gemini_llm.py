"""The Gemini LLM client, the LLM extractor and the LLM summariser, through the real google-genai
client against the local fake Gemini server (no broker, database or Redis needed)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
import pytest_asyncio
from google.genai import errors as genai_errors

from memstream.extraction.llm import LLMExtractor
from memstream.extraction.types import ExtractedFact, ExtractionContext, ExtractionTurn, Triple
from memstream.llm.base import LLMError
from memstream.llm.gemini import GeminiLLM, classify_status, retry_after_s
from memstream.summarization.base import SummaryTurn
from memstream.summarization.llm import LLMSummarizer
from tests.fixtures.gemini import FakeGemini, generate_body

MODEL = "gemini-test"
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
NOW = datetime(2026, 11, 30, 14, 5, tzinfo=UTC)

MakeLLM = Callable[..., GeminiLLM]


@pytest_asyncio.fixture(loop_scope="session")
async def make_llm(gemini: FakeGemini) -> AsyncIterator[MakeLLM]:
    """Builds clients against the fake server (tiny retry delays) and closes them after the test."""
    made: list[GeminiLLM] = []

    def make(**overrides: Any) -> GeminiLLM:
        options: dict[str, Any] = {
            "api_key": "test-key",
            "model": MODEL,
            "base_url": gemini.base_url,
            "timeout_s": 5.0,
            "max_concurrency": 4,
            "max_attempts": 3,
            "retry_initial_s": 0.01,
            "retry_max_s": 0.02,
        }
        options.update(overrides)
        llm = GeminiLLM(**options)
        made.append(llm)
        return llm

    yield make
    for llm in made:
        await llm.aclose()


def generate_requests(gemini: FakeGemini) -> list[dict[str, Any]]:
    return [body for path, body in gemini.requests if path.endswith(f"/models/{MODEL}:generateContent")]


def prompt_of(request: dict[str, Any]) -> str:
    return "".join(part["text"] for part in request["contents"][0]["parts"])


def system_of(request: dict[str, Any]) -> str:
    return "".join(part["text"] for part in request["systemInstruction"]["parts"])


# --- GeminiLLM ------------------------------------------------------------------------------


async def test_a_json_answer_is_parsed_and_its_tokens_counted(gemini: FakeGemini, make_llm: MakeLLM) -> None:
    gemini.then_json({"a": 1}, input_tokens=12, output_tokens=5)
    llm = make_llm()
    result = await llm.generate_json(system="be brief", prompt="say a", schema=SCHEMA)
    assert result.data == {"a": 1}
    assert (result.input_tokens, result.output_tokens, result.model) == (12, 5, MODEL)
    assert llm.name == f"gemini/{MODEL}"
    [request] = generate_requests(gemini)
    assert prompt_of(request) == "say a"
    assert system_of(request) == "be brief"
    config = request["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["temperature"] == 0
    assert config["responseSchema"]["properties"]["a"]["type"] == "INTEGER"

    # An answer without usageMetadata counts as zero tokens.
    result = await llm.generate_json(system="s", prompt="p", schema=SCHEMA)
    assert (result.data, result.input_tokens, result.output_tokens) == ({}, 0, 0)
    assert (llm.usage.calls, llm.usage.input_tokens, llm.usage.output_tokens) == (2, 12, 5)
    assert (llm.usage.retries, llm.usage.errors) == (0, {})


async def test_a_rate_limit_is_retried_and_the_retry_counted(gemini: FakeGemini, make_llm: MakeLLM) -> None:
    gemini.then(status=429).then_json({"a": 2})
    llm = make_llm()
    result = await llm.generate_json(system="s", prompt="p", schema=SCHEMA)
    assert result.data == {"a": 2}
    assert len(generate_requests(gemini)) == 2
    assert (llm.usage.calls, llm.usage.retries, llm.usage.errors) == (1, 1, {})


@pytest.mark.parametrize(("status", "kind"), [(429, "rate_limited"), (503, "unavailable")])
async def test_transient_failures_give_up_after_max_attempts(
    gemini: FakeGemini, make_llm: MakeLLM, status: int, kind: str
) -> None:
    for _ in range(3):
        gemini.then(status=status)
    gemini.then_json({"a": 3})  # would succeed, but max_attempts is spent before it
    llm = make_llm(max_attempts=3)
    with pytest.raises(LLMError) as caught:
        await llm.generate_json(system="s", prompt="p", schema=SCHEMA)
    assert (caught.value.kind, caught.value.retryable) == (kind, True)
    assert isinstance(caught.value.__cause__, genai_errors.APIError)
    assert len(generate_requests(gemini)) == 3
    assert (llm.usage.retries, llm.usage.errors) == (2, {kind: 1})


async def test_a_bad_request_is_refused_at_once(gemini: FakeGemini, make_llm: MakeLLM) -> None:
    gemini.then(status=400).then_json({"a": 4})
    llm = make_llm()
    with pytest.raises(LLMError) as caught:
        await llm.generate_json(system="s", prompt="p", schema=SCHEMA)
    assert (caught.value.kind, caught.value.retryable) == ("refused", False)
    assert len(generate_requests(gemini)) == 1
    assert (llm.usage.retries, llm.usage.errors) == (0, {"refused": 1})


@pytest.mark.parametrize(
    "body",
    [generate_body("not json{", input_tokens=7, output_tokens=3), generate_body(""), {"candidates": []}],
    ids=["not-json", "empty-text", "no-candidates"],
)
async def test_output_that_is_not_json_is_malformed_and_not_retried(
    gemini: FakeGemini, make_llm: MakeLLM, body: dict[str, Any]
) -> None:
    gemini.then(body=body).then_json({"a": 5})
    llm = make_llm()
    with pytest.raises(LLMError) as caught:
        await llm.generate_json(system="s", prompt="p", schema=SCHEMA)
    assert (caught.value.kind, caught.value.retryable) == ("malformed", True)
    assert len(generate_requests(gemini)) == 1
    assert llm.usage.errors == {"malformed": 1}
    # The tokens were spent even though the answer is useless.
    assert llm.usage.input_tokens == body.get("usageMetadata", {}).get("promptTokenCount", 0)


async def test_a_slow_answer_is_retried_then_a_timeout(gemini: FakeGemini, make_llm: MakeLLM) -> None:
    gemini.then(delay_s=1.0).then(delay_s=1.0)
    llm = make_llm(timeout_s=0.2, max_attempts=2)
    with pytest.raises(LLMError) as caught:
        await llm.generate_json(system="s", prompt="p", schema=SCHEMA)
    assert (caught.value.kind, caught.value.retryable) == ("timeout", True)
    assert len(generate_requests(gemini)) == 2
    assert (llm.usage.retries, llm.usage.errors) == (1, {"timeout": 1})


async def test_concurrent_calls_are_capped(gemini: FakeGemini, make_llm: MakeLLM) -> None:
    for i in range(10):
        gemini.then_json({"a": i}, delay_s=0.1)
    llm = make_llm(max_concurrency=2)
    results = await asyncio.gather(*(llm.generate_json(system="s", prompt=f"p{i}", schema=SCHEMA) for i in range(10)))
    assert sorted(r.data["a"] for r in results) == list(range(10))
    assert gemini.max_in_flight == 2


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (429, ("rate_limited", True)),
        (408, ("timeout", True)),
        (500, ("unavailable", True)),
        (503, ("unavailable", True)),
        (400, ("refused", False)),
        (403, ("refused", False)),
        (404, ("refused", False)),
    ],
)
def test_statuses_map_to_error_kinds(code: int, expected: tuple[str, bool]) -> None:
    assert classify_status(code) == expected


def test_the_wait_gemini_asks_for_is_read_from_retry_info() -> None:
    details = [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "13s"},
    ]
    error = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": details}}
    assert retry_after_s(genai_errors.APIError(429, error)) == 13.0
    assert retry_after_s(genai_errors.APIError(429, {"error": {"code": 429}})) is None


# --- LLMExtractor ---------------------------------------------------------------------------


def turn(content: str, *, role: str = "user", project_id: str | None = "cloudretail") -> ExtractionTurn:
    return ExtractionTurn(
        event_id=uuid.uuid4(),
        role=role,
        content=content,
        event_time=NOW,
        session_id="s-42",
        project_id=project_id,
    )


def context(*, project_id: str | None = "cloudretail", recent: tuple[ExtractionTurn, ...] = ()) -> ExtractionContext:
    return ExtractionContext(
        tenant_id="t-1",
        user_id="u-1",
        agent_id="a-1",
        session_id="s-42",
        project_id=project_id,
        now=NOW,
        previous_session_id="s-41",
        recent=recent,
    )


def fact(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "entity": "editor",
        "category": "preference",
        "scope": "global",
        "project_id": None,
        "summary": "The user prefers Neovim.",
        "importance": 0.7,
        "triples": [],
    }
    base.update(fields)
    return base


async def test_the_extractor_turns_the_answer_into_normalised_scoped_facts(
    gemini: FakeGemini, make_llm: MakeLLM
) -> None:
    gemini.then_json(
        {
            "facts": [
                fact(
                    entity="  Backend_Framework. ",
                    category="decision",
                    scope="project",
                    project_id="",
                    summary="In session s-42 the team chose FastAPI for CloudRetail.",
                    importance=1.7,
                    triples=[{"subject": "CloudRetail", "predicate": "Uses", "object": "FastAPI "}],
                ),
                fact(entity="Editor", scope="global", project_id="cloudretail", importance=-0.2),
                fact(
                    entity="tool timeout",
                    category="constraint",
                    scope="session",
                    project_id="x",
                    importance=0.9,
                ),
            ]
        }
    )
    extractor = LLMExtractor(make_llm())
    assert extractor.name == f"gemini/{MODEL}/extract-1"
    earlier = turn("Which framework should the backend use?", role="assistant")
    facts = await extractor.extract(
        turn("Now we use FastAPI, like we said last session. I deployed it yesterday."),
        context(recent=(earlier,)),
    )
    assert facts == [
        ExtractedFact(
            entity="backend framework",
            category="decision",
            scope="project",
            project_id="cloudretail",
            summary="In session s-42 the team chose FastAPI for CloudRetail.",
            importance=1.0,
            triples=(Triple("cloudretail", "uses", "fastapi"),),
        ),
        ExtractedFact(
            entity="editor",
            category="preference",
            scope="global",
            project_id=None,
            summary="The user prefers Neovim.",
            importance=0.0,
        ),
        ExtractedFact(
            entity="tool timeout",
            category="constraint",
            scope="session",
            project_id=None,
            summary="The user prefers Neovim.",
            importance=0.9,
        ),
    ]
    [request] = generate_requests(gemini)
    prompt = prompt_of(request)
    for needle in (
        "Current session id: s-42",
        "Previous session id: s-41",
        "Project id: cloudretail",
        "Today's date: 2026-11-30",
        "yesterday: 2026-11-29",
        "Which framework should the backend use?",
        "I deployed it yesterday.",
    ):
        assert needle in prompt
    assert prompt.index("Which framework") < prompt.index("<current_turn>") < prompt.index("Now we use FastAPI")
    system = system_of(request)
    for needle in ('"last session"', "YYYY-MM-DD", "deployment region", "project_id"):
        assert needle in system
    item = request["generationConfig"]["responseSchema"]["properties"]["facts"]["items"]
    assert item["properties"]["scope"]["enum"] == ["global", "project", "session"]
    assert item["properties"]["project_id"]["nullable"] is True


async def test_project_scope_without_a_project_becomes_global(gemini: FakeGemini, make_llm: MakeLLM) -> None:
    gemini.then_json({"facts": [fact(scope="project", project_id="made-up", category="rule")]})
    facts = await LLMExtractor(make_llm()).extract(turn("Always use tabs.", project_id=None), context(project_id=None))
    assert [(f.scope, f.project_id) for f in facts] == [("global", None)]
    assert "Project id: none" in prompt_of(generate_requests(gemini)[0])


async def test_a_project_fact_always_gets_the_turns_project(gemini: FakeGemini, make_llm: MakeLLM) -> None:
    gemini.then_json({"facts": [fact(scope="project", project_id="CloudRetial", category="rule")]})
    facts = await LLMExtractor(make_llm()).extract(turn("Never push to main."), context())
    assert [(f.scope, f.project_id) for f in facts] == [("project", "cloudretail")]


@pytest.mark.parametrize("role", ["tool", "system"])
async def test_tool_and_system_turns_are_not_sent(gemini: FakeGemini, make_llm: MakeLLM, role: str) -> None:
    assert await LLMExtractor(make_llm()).extract(turn("exit code 0", role=role), context()) == []
    assert gemini.requests == []


async def test_no_facts_is_an_empty_list(gemini: FakeGemini, make_llm: MakeLLM) -> None:
    gemini.then_json({"facts": []})
    assert await LLMExtractor(make_llm()).extract(turn("thanks!"), context()) == []


@pytest.mark.parametrize(
    "data",
    [
        {},
        [],
        {"facts": "none"},
        {"facts": [fact(category="opinion")]},
        {"facts": [fact(scope="team")]},
        {"facts": [fact(importance="high")]},
        {"facts": [fact(importance=True)]},
        {"facts": [fact(entity=" ... ")]},
        {"facts": [fact(summary="   ")]},
        {"facts": [fact(triples=[{"subject": "a", "predicate": "uses"}])]},
        {"facts": [{k: v for k, v in fact().items() if k != "summary"}]},
        {"facts": [fact(colour="blue")]},
    ],
    ids=lambda data: orjson.dumps(data).decode()[:60],
)
async def test_invalid_fact_shapes_are_malformed(gemini: FakeGemini, make_llm: MakeLLM, data: Any) -> None:
    gemini.then_json(data)
    with pytest.raises(LLMError) as caught:
        await LLMExtractor(make_llm()).extract(turn("I like dark mode."), context())
    assert (caught.value.kind, caught.value.retryable) == ("malformed", True)


# --- LLMSummarizer --------------------------------------------------------------------------


async def test_the_summarizer_returns_the_text_and_token_counts(gemini: FakeGemini, make_llm: MakeLLM) -> None:
    gemini.then_json(
        {"summary": " The user chose FastAPI; open question: which cache. "},
        input_tokens=321,
        output_tokens=17,
    )
    summarizer = LLMSummarizer(make_llm())
    assert summarizer.name == f"gemini/{MODEL}/summarize-1"
    turns = [
        SummaryTurn(role="user", content="Let's use FastAPI.", event_time=NOW),
        SummaryTurn(role="assistant", content="Done. Redis or Valkey for the cache?", event_time=NOW),
    ]
    summary = await summarizer.summarize("The user works on CloudRetail.", turns, max_tokens=256)
    assert summary.text == "The user chose FastAPI; open question: which cache."
    assert (summary.input_tokens, summary.output_tokens, summary.summarizer) == (321, 17, summarizer.name)
    [request] = generate_requests(gemini)
    prompt = prompt_of(request)
    assert prompt.index("The user works on CloudRetail.") < prompt.index("Let's use FastAPI.")
    assert prompt.index("Let's use FastAPI.") < prompt.index("Redis or Valkey")
    assert "about 256 tokens" in system_of(request)


async def test_the_summarizer_without_new_turns_makes_no_call(gemini: FakeGemini, make_llm: MakeLLM) -> None:
    summary = await LLMSummarizer(make_llm()).summarize("So far.", [], max_tokens=100)
    assert (summary.text, summary.input_tokens, summary.output_tokens) == ("So far.", 0, 0)
    assert gemini.requests == []


@pytest.mark.parametrize("data", [{}, {"summary": 3}, {"summary": "  "}, ["a summary"]])
async def test_a_malformed_summary_is_an_error(gemini: FakeGemini, make_llm: MakeLLM, data: Any) -> None:
    gemini.then_json(data)
    turns = [SummaryTurn(role="user", content="hi", event_time=NOW)]
    with pytest.raises(LLMError) as caught:
        await LLMSummarizer(make_llm()).summarize(None, turns, max_tokens=100)
    assert (caught.value.kind, caught.value.retryable) == ("malformed", True)
