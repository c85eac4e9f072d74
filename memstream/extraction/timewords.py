"""Relative time words rewritten to explicit session ids and dates.

A fact is read weeks after it was stated, in another session: "currently we deploy
with helm" or "last session we chose Litestar" mean nothing then. Before a fact or a
summary is stored, its relative time words are replaced by what they referred to when
they were said:

- "now", "right now", "currently", "at the moment", "this session" → "in session s-42"
  ("from now on" → "from session s-42 on", "for now" → "for session s-42");
- "last session", "the previous session" → "in session s-41" / "session s-41", or
  "an earlier session" when the previous session is unknown;
- "today", "yesterday", "tomorrow" → "on 2026-11-29" (UTC dates of ``now``), "this
  morning" → "on the morning of 2026-11-29", "last week" → "in the week before 2026-11-29".

Matching is case-insensitive and word-bounded ("nowhere", "snow", "knowledge",
``datetime.now()`` and "now-playing" are left alone), a preposition already in the text
is kept ("until tomorrow" → "until 2026-11-30"), and the output contains none of the
words it rewrites, so rewriting twice changes nothing. It is English only and knows no
grammar: "we currently deploy" becomes "we in session s-42 deploy" — explicit, if clumsy.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

_PREPOSITIONS = r"in|for|during|since|until|till|from|after|before|of|at|throughout|by|within"

_RELATIVE = re.compile(
    r"(?<![\w/.-])(?:"
    r"(?P<from_on>from\s+now\s+on)"
    r"|(?P<now_prep>for|until|till|by|as\s+of|up\s+to|up\s+until)\s+now"
    r"|(?P<now>right\s+now|just\s+now|currently|at\s+the\s+moment|at\s+present|now)"
    rf"|(?:(?P<this_prep>{_PREPOSITIONS})\s+)?(?P<this>this\s+session)(?P<this_poss>'s)?"
    rf"|(?:(?P<last_prep>{_PREPOSITIONS})\s+)?(?:(?P<last_det>the|our|my|your|that)\s+)?"
    r"(?:last|previous|prior)\s+session(?P<last_poss>'s)?"
    r"|(?P<part>this\s+(?:morning|afternoon|evening)|tonight|last\s+night)"
    r"|(?P<week>last\s+week|next\s+week)"
    rf"|(?:(?P<day_prep>{_PREPOSITIONS})\s+)?(?P<day>today|yesterday|tomorrow)(?P<day_poss>'s)?"
    r")(?![\w/-]|\.\w|\()",
    re.IGNORECASE,
)

_DAY_OFFSETS = {"today": 0, "yesterday": -1, "tomorrow": 1}


def _utc_date(now: datetime) -> date:
    """The UTC calendar date of ``now`` (a naive datetime is taken to be UTC already)."""
    return now.astimezone(UTC).date() if now.tzinfo is not None else now.date()


def _words(text: str) -> str:
    return " ".join(text.lower().split())


def _session_ref(prep: str | None, det: str | None, poss: str | None, session: str | None) -> str:
    """A reference to a session ("in session s-41", "session s-41's", "an earlier session")."""
    name = f"session {session}" if session else "an earlier session"
    if poss:
        return f"{name}'s"
    if prep:
        return f"{prep} {name}"
    return name if det else f"in {name}"


def _replacement(m: re.Match[str], session_id: str, previous_session_id: str | None, today: date) -> str:
    g = m.group
    if g("from_on"):
        return f"from session {session_id} on"
    if g("now_prep"):
        return f"{' '.join(g('now_prep').split())} session {session_id}"
    if g("now"):
        return f"in session {session_id}"
    if g("day"):
        when = today + timedelta(days=_DAY_OFFSETS[g("day").lower()])
        if g("day_poss"):
            return f"{when.isoformat()}'s"
        return f"{g('day_prep')} {when.isoformat()}" if g("day_prep") else f"on {when.isoformat()}"
    if g("part"):
        part = _words(g("part"))
        if part == "last night":
            return f"on the night of {(today - timedelta(days=1)).isoformat()}"
        word = "evening" if part == "tonight" else part.split()[1]
        return f"on the {word} of {today.isoformat()}"
    if g("week"):
        side = "before" if _words(g("week")).startswith("last") else "after"
        return f"in the week {side} {today.isoformat()}"
    if g("this"):
        return _session_ref(g("this_prep"), None, g("this_poss"), session_id)
    return _session_ref(g("last_prep"), g("last_det"), g("last_poss"), previous_session_id)


#: The groups of every reference but "the last session" (the one a rewrite needs a lookup for).
_NOT_PREVIOUS = ("from_on", "now_prep", "now", "day", "part", "week", "this")


def names_previous_session(text: str) -> bool:
    """Whether ``text`` says "last session", "the previous session's", ...: only then does
    ``rewrite_relative_time`` need ``previous_session_id`` (which costs its caller a query)."""
    return any(not any(m.group(g) for g in _NOT_PREVIOUS) for m in _RELATIVE.finditer(text))


def rewrite_relative_time(text: str, *, session_id: str, previous_session_id: str | None, now: datetime) -> str:
    """``text`` with its relative time words replaced by explicit session ids and dates."""
    today = _utc_date(now)

    def replace(m: re.Match[str]) -> str:
        out = _replacement(m, session_id, previous_session_id, today)
        # A replacement that starts where the match started keeps its capital ("Today" -> "On ...").
        if m.group(0)[0].isupper() and not out[0].isupper():
            out = out[0].upper() + out[1:]
        return out

    return _RELATIVE.sub(replace, text)
