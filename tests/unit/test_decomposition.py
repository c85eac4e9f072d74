from datetime import UTC, datetime
from typing import Any

import pytest

from agents_gateway.retrieval.decomposition import decompose, split_rules
from memstream.llm.base import LLMClient, LLMError, LLMResult, LLMUsage

NOW = datetime(2026, 11, 30, 9, tzinfo=UTC)
SEED = "my coding preferences and the backend and timeout rules I chose for CloudRetail last session"


async def test_the_seeds_compound_question_gives_one_sub_query_per_topic() -> None:
    result = await decompose(SEED, method="rules", session_id="s-42", previous_session_id="s-41", now=NOW)
    assert result.method == "rules"
    assert result.queries == [
        "my coding preferences",
        "the backend rules I chose for CloudRetail in session s-41",
        "timeout rules I chose for CloudRetail in session s-41",
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Caroline and Melanie do?", ["What did Caroline and Melanie do?"]),
        ("rsync or scp", ["rsync or scp"]),
        ("dark mode; python version", ["dark mode", "python version"]),
        ("the database and the cache of CloudRetail", ["the database of CloudRetail", "the cache of CloudRetail"]),
        ("what went wrong with the last deployment", ["what went wrong with the last deployment"]),
        # A fronted modifier qualifies its clause: no sub-query of its own.
        (
            "Before the standup, write the migration for the orders table",
            ["Before the standup, write the migration for the orders table"],
        ),
        (
            "If the deploy fails, roll back the release and page the on-call engineer",
            ["If the deploy fails, roll back the release", "page the on-call engineer"],
        ),
        (
            "dark mode; after the outage, the cache eviction policy",
            ["dark mode", "after the outage, the cache eviction policy"],
        ),
        # A fragment that refers back stays with the one before it: a pronoun subject, or a
        # pronoun object with a preposition or nothing after it.
        (
            "I prefer type hints everywhere and pytest over unittest, remember that for the billing API",
            ["I prefer type hints everywhere", "pytest over unittest, remember that for the billing API"],
        ),
        (
            "Why did the deploy of the billing worker fail? It is PR #336; the dist folder was missing",
            ["Why did the deploy of the billing worker fail? It is PR #336", "the dist folder was missing"],
        ),
        (
            "the cache eviction policy; it's the one from the outage; dark mode settings",
            ["the cache eviction policy; it's the one from the outage", "dark mode settings"],
        ),
        (
            "the migration of the orders table, which broke the nightly build; rsync flags",
            ["the migration of the orders table, which broke the nightly build", "rsync flags"],
        ),
        (
            "the flaky integration tests; that was before the outage; keep it in mind for the release",
            ["the flaky integration tests; that was before the outage; keep it in mind for the release"],
        ),
        # Not referring back: a question of its own, a demonstrative before a noun, a clause.
        ("which editor do I like; which cache do we use", ["which editor do I like", "which cache do we use"]),
        (
            "the dark mode setting; those flaky integration tests",
            ["the dark mode setting", "those flaky integration tests"],
        ),
        (
            "deploy with rsync; remember that the dist folder must be committed",
            ["deploy with rsync", "remember that the dist folder must be committed"],
        ),
        # Not a modifier: a list item opening with another word, or one the comma ends with "and".
        ("dark mode, python version", ["dark mode", "python version"]),
        (
            "before the release notes and after the outage report",
            ["before the release notes", "after the outage report"],
        ),
    ],
)
def test_rules(query: str, expected: list[str]) -> None:
    assert split_rules(query) == expected


async def test_off_still_rewrites_relative_time() -> None:
    result = await decompose("what did we decide yesterday", method="off", session_id="s", previous_session_id=None,
                             now=NOW)  # fmt: skip
    assert result.queries == ["what did we decide on 2026-11-29"]


class ScriptedLLM(LLMClient):
    name = "test/llm"

    def __init__(self, answer: Any = None, error: LLMError | None = None) -> None:
        self.usage = LLMUsage()
        self.answer, self.error = answer, error

    async def generate_json(self, *, system: str, prompt: str, schema: dict[str, Any]) -> LLMResult:
        if self.error:
            raise self.error
        return LLMResult(self.answer, "", 10, 5, "test")


async def test_llm_decomposition_and_its_fallback() -> None:
    llm = ScriptedLLM({"queries": ["coding preferences", "CloudRetail backend rules", "CloudRetail timeout rules"]})
    result = await decompose(SEED, method="llm", session_id="s-42", previous_session_id="s-41", now=NOW, llm=llm)
    assert result.method == "llm:test/llm" and len(result.queries) == 3
    broken = ScriptedLLM(error=LLMError("no", kind="unavailable", retryable=True))
    fallback = await decompose(SEED, method="llm", session_id="s-42", previous_session_id="s-41", now=NOW, llm=broken)
    assert fallback.method == "rules" and len(fallback.queries) == 3
    nothing = await decompose(SEED, method="llm", session_id="s-42", previous_session_id="s-41", now=NOW, llm=None)
    assert nothing.method == "rules"
