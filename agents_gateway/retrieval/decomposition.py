"""Query decomposition: a compound question becomes single-topic sub-queries, with relative
time ("last session", "yesterday") rewritten to session ids and dates first.

By rules (deterministic, instant): split on ``;``, ``?`` and top-level "and"/","; a fragment
with at most one content word ("the backend" in "the backend and timeout rules I chose") takes
the next fragment's head and tail ("the backend rules I chose"), a fronted modifier ("Before
the standup," "If it fails,") stays with the clause it modifies, and a fragment that refers back
("It is PR #336", "remember that for the cluster") stays with the clause before it. By an LLM when asked for
(``decompose=llm``, with a Gemini key): the model returns the sub-queries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from memstream.extraction.timewords import rewrite_relative_time
from memstream.llm.base import LLMClient, LLMError

Method = Literal["off", "rules", "llm"]
MAX_SUBQUERIES = 5
_STOP = frozenset(
    "a an the my our your their his her its this that these those what which who whom whose when where why how"
    " do does did is are was were be been i we you he she they it me us them of for to in on at by with about"
    " from as and or".split()
)
_TOP_LEVEL = re.compile(r"\s*(?:;|\?|,\s*and\s+|\s+and\s+|,\s+as well as\s+|\s+as well as\s+|,\s+also\s+|,)\s*",
                        re.IGNORECASE)  # fmt: skip
_WORD = re.compile(r"[\w.+#-]+", re.UNICODE)
#: The separators above, kept (``split_rules`` needs to know which one ended a fragment).
_TOP_LEVEL_KEPT = re.compile(f"({_TOP_LEVEL.pattern})", re.IGNORECASE)
#: Prepositions and subordinators: a fragment opening with one and ended by a bare comma is a
#: fronted modifier ("Before the standup, write the migration"; "If the deploy fails, roll
#: back"), which qualifies the clause after it and names no topic of its own. As a sub-query
#: it cost a whole search and fetched memories about the standup.
_OPENERS = frozenset(
    "after although as at because before by despite during following for given if in once on per regarding since"
    " though unless until upon when whenever while with within without".split()
)


#: A fragment whose subject is a pronoun refers back to the clause before it ("Why is the deploy
#: slow? It is commit 5bfe6fb."; "..., which broke the build"; "That was in build 4216"), and so
#: does one whose verb takes a pronoun with a preposition or nothing after it ("..., remember that
#: for the AlloyDB cluster"; "keep it in mind"). Neither names a topic: as a sub-query it cost a
#: whole search, and fetched memories of whatever its other words named (the cluster) as an
#: equal topic. "which" refers back after a comma only (after "?" or ";" it asks a question of
#: its own), and a demonstrative only as a subject ("that was ...", not "that dashboard").
_SUBJECTS = frozenset({"it", "they"})
_DEMONSTRATIVES = frozenset({"this", "that", "these", "those"})
_AUXILIARIES = frozenset(
    "is was are were be has have had will would can could should must may might do does did".split()
)
_OBJECTS = frozenset({"it", "this", "that", "these", "those", "them"})


def _refers_back(fragment: str, separator: str) -> bool:
    """Whether ``fragment``, after ``separator``, refers back to the fragment before it."""
    words = [w.lower().strip(",.;:!?") for w in fragment.split()[:3]]
    if not words:
        return False
    first, _, contracted = words[0].partition("'")  # "it's", "that's"
    if first in _SUBJECTS or (first == "which" and separator.strip() == ","):
        return True
    if first in _DEMONSTRATIVES and (contracted or (len(words) > 1 and words[1] in _AUXILIARIES)):
        return True
    return len(words) >= 2 and words[1] in _OBJECTS and (len(words) == 2 or words[2] in _OPENERS)


@dataclass(frozen=True)
class Decomposition:
    method: str
    queries: list[str]


def _content_words(fragment: str) -> list[str]:
    return [w for w in _WORD.findall(fragment.lower()) if w not in _STOP]


def _tail_after_head(fragment: str) -> str:
    """What follows a fragment's first content word: "the cache of X" -> "of X"."""
    words = fragment.split()
    for i, word in enumerate(words):
        if word.lower().strip(",.") not in _STOP:
            return " ".join(words[i + 1 :])
    return ""


def _fragments(query: str) -> list[str]:
    """``query`` split at its top-level separators, a fronted modifier kept with the clause
    after it (``_OPENERS``), and a fragment that refers back (``_refers_back``) with the one
    before it, joined by the separator between them."""
    pieces = _TOP_LEVEL_KEPT.split(query)  # fragment, separator, fragment, ...
    fragments: list[str] = []
    pending = ""
    for i in range(0, len(pieces), 2):
        fragment = pending + pieces[i]
        separator = pieces[i + 1] if i + 1 < len(pieces) else ""
        words = fragment.split()
        if separator.strip() == "," and words and words[0].lower() in _OPENERS and i + 2 < len(pieces):
            pending = fragment + ", "
            continue
        pending = ""
        if fragments and fragments[-1].strip(" ,.") and _refers_back(fragment, pieces[i - 1]):
            fragments[-1] += pieces[i - 1] + fragment
        else:
            fragments.append(fragment)
    return fragments


def split_rules(query: str) -> list[str]:
    # One space between words first: the separator pattern's whitespace is then at most one
    # character, so splitting is linear (a run of 2,000 spaces took 14 s before).
    query = " ".join(query.split())
    fragments = [f.strip(" ,.") for f in _fragments(query) if f and f.strip(" ,.")]
    merged: list[str] = []
    for i, fragment in enumerate(fragments):
        following = fragments[i + 1] if i + 1 < len(fragments) else ""
        tail = _tail_after_head(following)
        if len(_content_words(fragment)) <= 1 and tail:
            fragment = f"{fragment} {tail}"  # "the backend" + "(timeout) rules I chose ..."
        merged.append(fragment)
    unique = list(dict.fromkeys(merged))
    # Every sub-query must stand on its own; "what did Caroline and Melanie do" stays whole.
    if len(unique) <= 1 or any(len(_content_words(f)) < 2 for f in unique):
        return [query.strip()]
    return unique[:MAX_SUBQUERIES]


_SYSTEM = (
    "You split a question put to a memory store into single-topic search queries. Each query names "
    "one thing to look up, keeps the words the user used, and repeats shared qualifiers (project names, "
    "sessions, dates) in each query that needs them. A question about one topic stays one query. "
    "Return at most 5 queries."
)
_SCHEMA = {
    "type": "object",
    "properties": {"queries": {"type": "array", "items": {"type": "string"}}},
    "required": ["queries"],
}


async def decompose(
    query: str,
    *,
    method: Method,
    session_id: str | None,
    previous_session_id: str | None,
    now: datetime,
    llm: LLMClient | None = None,
) -> Decomposition:
    """Sub-queries of ``query`` (itself alone with ``off``); relative time is always rewritten."""
    rewritten = rewrite_relative_time(
        query, session_id=session_id or "the current session", previous_session_id=previous_session_id, now=now
    )
    if method == "off":
        return Decomposition("off", [rewritten])
    if method == "llm" and llm is not None:
        try:
            result = await llm.generate_json(system=_SYSTEM, prompt=f"Question: {rewritten}", schema=_SCHEMA)
        except LLMError:
            pass  # the rules below answer instead, and the method says so
        else:
            queries = result.data.get("queries") if isinstance(result.data, dict) else None
            if isinstance(queries, list) and queries and all(isinstance(q, str) and q.strip() for q in queries):
                return Decomposition(f"llm:{llm.name}", [q.strip() for q in queries][:MAX_SUBQUERIES])
    return Decomposition("rules", split_rules(rewritten))
