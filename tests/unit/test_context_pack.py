from agents_gateway.retrieval.context import pack
from memstream.tokens import TokenCounter

TOKENS = TokenCounter()


def test_everything_fits_in_a_generous_budget_in_the_stable_layout() -> None:
    packed = pack(
        "# Memory for u",
        {"facts": ["- [global] theme: dark mode"], "summary": ["user decided rsync"],
         "recent": ["user: newest", "assistant: older"], "relevant": ["- [2026-11-01, episodic] deploy failed"]},
        budget=1000, tokens=TOKENS,
    )  # fmt: skip
    assert packed.prompt.splitlines() == [
        "# Memory for u",
        "## Long-term facts", "- [global] theme: dark mode",
        "## Summary of earlier turns", "user decided rsync",
        "## Recent turns", "assistant: older", "user: newest",
        "## Relevant memories", "- [2026-11-01, episodic] deploy failed",
    ]  # fmt: skip
    assert packed.tokens == TOKENS.count(packed.prompt) <= 1000


def test_the_count_of_a_packed_prompt_is_exact_whatever_its_lines() -> None:
    """A prompt's count is summed from its lines' (each counted once, as it follows another),
    never from encoding the whole: it must equal the whole's count, whatever the lines hold."""
    import random

    from tests.unit.test_tokens import PINNED_LINES

    rng = random.Random(20261205)

    def lines(prefix: str) -> list[str]:
        return [prefix + rng.choice(PINNED_LINES) for _ in range(rng.randint(0, 12))]

    for _ in range(60):
        budget = rng.choice([64, 200, 2000])
        packed = pack(
            rng.choice(["# Memory for u", "# Memory for alice (project blog, session s-1)"]),
            {"facts": lines("- [global] "), "summary": lines("- ")[:1], "recent": lines(rng.choice(["user: ", ""])),
             "relevant": lines("- [2026-11-01, episodic] ")},
            budget=budget, tokens=TOKENS,
        )  # fmt: skip
        assert packed.tokens == TOKENS.count(packed.prompt) <= budget, packed.prompt


def test_a_tight_budget_keeps_the_most_valuable_items_and_never_overflows() -> None:
    facts = [f"- [global] fact {i}: " + "word " * 20 for i in range(10)]
    recent = [f"user: turn {i} " + "word " * 30 for i in range(20)]  # newest first
    relevant = [f"- [2026-01-01, episodic] memory {i} " + "word " * 30 for i in range(10)]
    packed = pack("# Memory", {"facts": facts, "recent": recent, "relevant": relevant}, budget=400, tokens=TOKENS)
    assert packed.tokens <= 400
    sections = packed.sections
    assert sections["facts"].chosen == list(range(len(sections["facts"].chosen)))  # best first, no skipping
    assert sections["recent"].chosen[0] == 0, "the newest turn is kept first"
    assert all(s.dropped == len(s.candidates) - len(s.chosen) for s in sections.values())
    assert sum(s.dropped for s in sections.values()) > 0
    body = packed.prompt
    assert body.index("turn 0 ") > body.index("## Recent turns"), "recent turns read oldest first"


def test_one_heavy_turn_is_cut_to_head_and_tail_and_never_crowds_out_the_rest() -> None:
    log = (
        "tool: $ make deploy\n"
        + "".join(f"step {i}: copying shard {i} ok\n" for i in range(1500))
        + "DEPLOY FAILED: disk full"
    )
    recent = ["user: why did it fail?", log, "user: run the deploy"]  # newest first
    relevant = [f"- [2026-01-01, episodic] memory {i}" for i in range(5)]
    packed = pack("# Memory", {"recent": recent, "relevant": relevant}, budget=800, tokens=TOKENS)
    assert TOKENS.count(log) > 10_000
    assert packed.tokens <= 800
    assert packed.sections["recent"].chosen == [0, 1, 2], "all three turns fit once the log is cut"
    assert len(packed.sections["relevant"].chosen) == 5
    assert "$ make deploy" in packed.prompt and "DEPLOY FAILED: disk full" in packed.prompt
    assert "tokens omitted" in packed.prompt
    assert "step 700:" not in packed.prompt


def test_facts_may_skip_an_item_that_does_not_fit_for_a_later_one_that_does() -> None:
    facts = ["- [global] a: " + "word " * 60, "- [global] b: " + "word " * 60, "- [global] c: short"]
    packed = pack("# Memory", {"facts": facts}, budget=100, tokens=TOKENS)
    assert sorted(packed.sections["facts"].chosen) == [0, 2]
    assert packed.sections["facts"].dropped == 1
    assert packed.tokens <= 100


def test_truncate_keeps_short_text_and_cuts_long_text_within_the_limit() -> None:
    assert TOKENS.truncate("short text", 50) == "short text"
    long = " ".join(f"w{i}" for i in range(3000))
    cut = TOKENS.truncate(long, 100)
    assert TOKENS.count(cut) <= 100
    assert cut.startswith("w0 w1") and cut.endswith("w2998 w2999")


def test_one_statement_about_several_entities_is_one_fact_line() -> None:
    import uuid
    from datetime import UTC, datetime

    from agents_gateway.retrieval.service import _fact_lines
    from sinks.postgres.queries.facts import FactRow

    def fact(entity: str, summary: str, importance: float, scope: str = "global") -> FactRow:
        return FactRow(
            fact_id=uuid.uuid4(), user_id="u", agent_id="a", session_id="s", project_id=None, scope=scope,
            entity=entity, category="preference", summary=summary, importance=importance, version=1,
            valid_from=datetime.now(UTC), valid_to=None, superseded_by=None, change_reason="", source_event_id=uuid.uuid4(),
            sources=[], extractor="rules",
        )  # fmt: skip

    alice, bob = fact("alice", "uses Postgres", 0.5), fact("bob", "uses Postgres", 0.5)
    theme = fact("theme", "dark mode", 0.9)
    session_copy = fact("carol", "uses Postgres", 0.4, scope="session")
    lines = _fact_lines([alice, session_copy, bob, theme])
    assert lines == [
        ("- [global] theme: dark mode", [theme.fact_id]),
        ("- [global] alice, bob: uses Postgres", [alice.fact_id, bob.fact_id]),
        ("- [session] carol: uses Postgres", [session_copy.fact_id]),
    ]
