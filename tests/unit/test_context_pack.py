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
