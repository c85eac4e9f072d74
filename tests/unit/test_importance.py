import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.importance import (
    BASE,
    DECISION_WEIGHT,
    ERROR_WEIGHT,
    RULE_WEIGHT,
    TAG_CAP,
    TAG_WEIGHT,
    detect_signals,
    importance,
)


@pytest.mark.parametrize(
    "text",
    [
        "Unrelated, but the weather was lovely this morning, I went for a run.",
        "Sounds nice! Let me know when you want to get to work.",
        "Random thought: should I get a standing desk? Never mind.",
        "Don't worry about it, I know the snow was heavy.",
        "The test run finished with no errors.",
    ],
)
def test_small_talk_stays_at_the_base(text: str) -> None:
    assert importance(text, role="user") == BASE


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The deploy failed: dist folder not committed.", BASE + ERROR_WEIGHT),
        ("Traceback (most recent call last): KeyError", BASE + ERROR_WEIGHT),
        ("We decided to use Litestar.", BASE + DECISION_WEIGHT),
        ("Let's go with Valkey.", BASE + DECISION_WEIGHT),
        ("We switched to rsync.", BASE + DECISION_WEIGHT),
        ("We moved CloudRetail from FastAPI to Litestar.", BASE + DECISION_WEIGHT),
        ("I prefer dark mode.", BASE + RULE_WEIGHT),
        ("Never use scp.", BASE + RULE_WEIGHT),
        ("Don\u2019t introduce another cache.", BASE + RULE_WEIGHT),
        ("Project rule: every tool call gets a timeout.", BASE + RULE_WEIGHT),
    ],
)
def test_each_signal_adds_its_weight(text: str, expected: float) -> None:
    assert importance(text, role="user") == round(expected, 2)


def test_a_failed_tool_call_counts_as_an_error_once() -> None:
    assert importance("exit status 2", role="tool", tool_status="failure") == round(BASE + ERROR_WEIGHT, 2)
    assert importance("ERROR: boom", role="tool", tool_status="failure") == round(BASE + ERROR_WEIGHT, 2)
    assert importance("exit status 0", role="tool", tool_status="success") == BASE


def test_tool_output_only_counts_for_its_errors() -> None:
    assert detect_signals("always retry; we decided nothing", role="tool") == frozenset()
    assert detect_signals("always retry; we decided nothing", role="user") == {"rule", "decision"}


def test_tags_add_per_kind_up_to_a_cap() -> None:
    small_talk = "hello there"
    assert importance(small_talk, role="user", tags=["important"]) == round(BASE + TAG_WEIGHT, 2)
    assert importance(small_talk, role="user", tags=["rule", "rules", "RULE"]) == round(BASE + TAG_WEIGHT, 2)
    assert importance(small_talk, role="user", tags=["important", "decision", "error", "rule"]) == round(
        BASE + TAG_CAP, 2
    )
    assert importance(small_talk, role="user", tags=["misc", "todo"]) == BASE


def test_everything_at_once_is_capped_at_one() -> None:
    text = "We decided: never deploy after the error again."
    assert importance(text, role="user", tags=["important", "error"], tool_status="failure") == 1.0


@given(
    st.text(max_size=200),
    st.sampled_from(["user", "assistant", "tool", "system"]),
    st.lists(st.sampled_from(["important", "decision", "error", "preference", "rule", "x"]), max_size=5),
    st.sampled_from([None, "success", "failure", "pending"]),
)
def test_always_in_range_and_rounded(text: str, role: str, tags: list[str], status: str | None) -> None:
    value = importance(text, role=role, tags=tags, tool_status=status)
    assert 0.0 <= value <= 1.0
    assert value == round(value, 2)
    assert value == importance(text, role=role, tags=tags, tool_status=status)
