from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.extraction.timewords import names_previous_session, rewrite_relative_time

NOW = datetime(2026, 11, 29, 10, 30, tzinfo=UTC)


def rewrite(text: str, previous: str | None = "s-41", now: datetime = NOW) -> str:
    return rewrite_relative_time(text, session_id="s-42", previous_session_id=previous, now=now)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I use Vim now.", "I use Vim in session s-42."),
        ("Right now the backend is Flask.", "In session s-42 the backend is Flask."),
        ("We are currently on helm", "We are in session s-42 on helm"),
        ("In this session, prefer tabs.", "In session s-42, prefer tabs."),
        ("This session we debug the cache.", "In session s-42 we debug the cache."),
        ("Use light mode for this session only.", "Use light mode for session s-42 only."),
        ("From now on use Litestar.", "From session s-42 on use Litestar."),
        ("Use SQLite for now.", "Use SQLite for session s-42."),
        ("Last session we chose Litestar.", "In session s-41 we chose Litestar."),
        ("In the last session we chose Litestar.", "In session s-41 we chose Litestar."),
        ("As agreed in the previous session.", "As agreed in session s-41."),
        ("The previous session's decision stands.", "Session s-41's decision stands."),
        ("Today the deploy failed.", "On 2026-11-29 the deploy failed."),
        ("The deploy failed yesterday.", "The deploy failed on 2026-11-28."),
        ("Ship it tomorrow.", "Ship it on 2026-11-30."),
        ("Freeze until tomorrow.", "Freeze until 2026-11-30."),
        ("Dark mode today only.", "Dark mode on 2026-11-29 only."),
        ("It broke this morning.", "It broke on the morning of 2026-11-29."),
        ("We moved to rsync last week.", "We moved to rsync in the week before 2026-11-29."),
    ],
)
def test_relative_words_become_explicit(text: str, expected: str) -> None:
    assert rewrite(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "nowhere to be found",
        "snow in the mountains",
        "knowledge and acknowledgement",
        "call datetime.now() in UTC",
        "the now-playing widget",
        "todays and yesterdays are not words here",
        "sessions last long",
    ],
)
def test_words_that_only_contain_a_time_word_are_left_alone(text: str) -> None:
    assert rewrite(text) == text


def test_matching_is_case_insensitive() -> None:
    assert rewrite("NOW we deploy, TODAY, in THIS SESSION") == (
        "In session s-42 we deploy, On 2026-11-29, in session s-42"
    )


def test_an_unknown_previous_session_is_said_plainly() -> None:
    assert rewrite("Last session we chose Redis.", previous=None) == "In an earlier session we chose Redis."
    assert rewrite("as in the previous session", previous=None) == "as in an earlier session"


def test_dates_are_utc_dates_of_now() -> None:
    bangkok = timezone(timedelta(hours=7))
    early_in_bangkok = datetime(2026, 11, 30, 3, 0, tzinfo=bangkok)  # still the 29th in UTC
    assert rewrite("today", now=early_in_bangkok) == "on 2026-11-29"
    assert rewrite("today", now=datetime(2026, 1, 1, 0, 0)) == "on 2026-01-01"  # naive = UTC
    assert rewrite("yesterday", now=datetime(2026, 3, 1, tzinfo=UTC)) == "on 2026-02-28"


def test_text_without_time_words_is_unchanged() -> None:
    text = "I like VS Code, not Vim; deploy with rsync, not scp."
    assert rewrite(text) == text


@given(
    st.lists(
        st.sampled_from(
            ["now", "right now", "today", "yesterday", "last session", "this session", "for now", "from now on",
             "currently", "tomorrow", "the previous session", "in", "we", "deploy", "snow", ",", "."]
        ),
        max_size=12,
    )
)  # fmt: skip
def test_rewriting_twice_changes_nothing(words: list[str]) -> None:
    once = rewrite(" ".join(words))
    assert rewrite(once) == once
    assert rewrite(" ".join(words)) == once  # deterministic


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("What did we decide last session?", True),
        ("in the previous session's notes", True),
        ("Back in our prior session you said so", True),
        ("Today, this session, right now", False),
        ("last week and yesterday", False),
        ("sessions of last night", False),
        ("no time words at all", False),
    ],
)
def test_a_lookup_of_the_previous_session_is_needed_only_when_the_text_names_it(text: str, names: bool) -> None:
    now = datetime(2026, 12, 1, 9, tzinfo=UTC)
    with_id = rewrite_relative_time(text, session_id="s-2", previous_session_id="s-1", now=now)
    without = rewrite_relative_time(text, session_id="s-2", previous_session_id=None, now=now)
    assert names_previous_session(text) is names
    assert (with_id != without) is names, "the id changes the rewrite exactly when the text names that session"


@given(
    st.lists(
        st.sampled_from(
            ["now", "last", "previous", "prior", "session", "session's", "sessions", "the", "our", "in", "before",
             "this", "week", "night", "today", "we", "deploy", ",", ".", "'s"]
        ),
        max_size=12,
    )
)  # fmt: skip
def test_no_text_needs_the_previous_session_without_naming_it(words: list[str]) -> None:
    text = " ".join(words)
    if not names_previous_session(text):
        assert rewrite(text, previous="s-41") == rewrite(text, previous=None)
