from datetime import UTC, datetime, timedelta

import pytest

from memstream.summarization.base import SummaryTurn
from memstream.summarization.offline import ExtractiveSummarizer
from memstream.tokens import TokenCounter
from ops.demo import SESSION_1

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
tokens = TokenCounter()
summarizer = ExtractiveSummarizer(token_counter=tokens)


def turns(*pairs: tuple[str, str]) -> list[SummaryTurn]:
    return [SummaryTurn(role, content, T0 + timedelta(seconds=i)) for i, (role, content) in enumerate(pairs)]


SEED = turns(*((role, content) for role, content, _ in SESSION_1))


def test_it_names_itself_a_fallback() -> None:
    assert summarizer.name == "offline-extractive/1"
    assert summarizer.fallback is True


async def test_the_seed_session_keeps_preferences_and_rules_and_drops_small_talk() -> None:
    summary = await summarizer.summarize(None, SEED, max_tokens=1000)
    assert summary.text.splitlines() == [
        "user: Before we start: I prefer dark mode in every editor and terminal I use.",
        "user: I always write Python 3.11 and my default database is PostgreSQL.",
        "assistant: Noted: Python 3.11 and PostgreSQL by default.",
        "user: Project rule for CloudRetail: the backend is FastAPI running on AlloyDB.",
        "user: CloudRetail caches everything in Valkey; do not introduce another cache.",
        "user: In CloudRetail every tool call gets a 30 second timeout.",
        "user: CloudRetail is deployed only to the asia-southeast1 region.",
    ]
    assert (summary.input_tokens, summary.output_tokens, summary.summarizer) == (0, 0, "offline-extractive/1")
    for noise in ("weather", "standing desk", "Sounds nice", "kubectl"):
        assert noise not in summary.text


async def test_decisions_errors_and_open_questions_are_kept_with_their_role() -> None:
    summary = await summarizer.summarize(
        None,
        turns(
            ("user", "Hello! We decided to use Litestar."),
            ("assistant", "Let's go with Valkey for the cache. Great weather today."),
            ("tool", "building dist\nERROR: dist folder not committed\nexit 1"),
            ("user", "Which region should the staging cluster use?"),
            ("user", "How are you?"),
        ),
        max_tokens=500,
    )
    assert summary.text.splitlines() == [
        "user: We decided to use Litestar.",
        "assistant: Let's go with Valkey for the cache.",
        "tool error: ERROR: dist folder not committed",
        "user: Which region should the staging cluster use?",
    ]


async def test_tool_output_without_errors_is_dropped() -> None:
    summary = await summarizer.summarize(None, turns(("tool", "api-7d9f 1/1 Running\nalways restart")), max_tokens=500)
    assert summary.text == ""


async def test_the_previous_summary_is_folded_in_and_repeats_are_dropped() -> None:
    previous = "user: We decided to use Litestar.\nuser: Which region should staging use?"
    summary = await summarizer.summarize(
        previous,
        turns(("user", "We decided to use Litestar."), ("user", "Never deploy on Fridays.")),
        max_tokens=500,
    )
    assert summary.text.splitlines() == [
        "user: We decided to use Litestar.",
        "user: Which region should staging use?",
        "user: Never deploy on Fridays.",
    ]


async def test_over_budget_it_drops_questions_then_errors_oldest_first_but_never_rules() -> None:
    previous = "\n".join(
        [
            "user: Which region should staging use?",
            "tool error: ERROR: the first deploy failed",
            "user: Never deploy on Fridays.",
            "user: We decided to use Litestar.",
        ]
    )
    new = turns(("user", "Should we use Redis for the cache?"), ("tool", "ERROR: the second deploy failed"))
    full = await summarizer.summarize(previous, new, max_tokens=1000)
    assert len(full.text.splitlines()) == 6
    protected = "user: Never deploy on Fridays.\nuser: We decided to use Litestar."
    budget = tokens.count(protected + "\ntool error: ERROR: the second deploy failed")
    summary = await summarizer.summarize(previous, new, max_tokens=budget)
    assert summary.text.splitlines() == [
        "user: Never deploy on Fridays.",
        "user: We decided to use Litestar.",
        "tool error: ERROR: the second deploy failed",
    ]
    assert tokens.count(summary.text) <= budget


@pytest.mark.parametrize("max_tokens", [0, 10, 40, 80, 160])
async def test_budget_is_respected_unless_the_rules_alone_exceed_it(max_tokens: int) -> None:
    noisy = turns(*[("tool", f"ERROR: attempt {i} failed with exit code {i}") for i in range(30)])
    summary = await summarizer.summarize(None, [*SEED, *noisy], max_tokens=max_tokens)
    rules_only = await summarizer.summarize(None, SEED, max_tokens=10_000)
    assert tokens.count(summary.text) <= max(max_tokens, tokens.count(rules_only.text))
    for line in rules_only.text.splitlines():
        assert line in summary.text.splitlines()


async def test_deterministic() -> None:
    first = await summarizer.summarize("user: Always use rsync.", SEED, max_tokens=120)
    assert first == await summarizer.summarize("user: Always use rsync.", SEED, max_tokens=120)
    assert first == await ExtractiveSummarizer().summarize("user: Always use rsync.", SEED, max_tokens=120)
